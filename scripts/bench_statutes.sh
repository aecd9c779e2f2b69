#!/usr/bin/env bash
# The cross-reference benchmark of an official state code (docs/statutes.md): BM25 with and without the
# citation boost, MiniLM dense, and their fusion tuned on train+valid, on the test topics as written
# (xref) and with the citations masked (xref.masked).
#
#   scripts/bench_statutes.sh DATA_DIR STATE RELEASE WORK      e.g. ../shared/data/statutes ga 86 /tmp/st
#   DENSE=0 scripts/bench_statutes.sh ...                       BM25 only (MiniLM on CPU is slow), test topics only
#   FIGURES=docs/figures/statutes-nc81.json scripts/bench_statutes.sh ...   also save the results there: the
#                                                               docs' generated tables (scripts/figures.py)
#
# Writes WORK/<state><release>/ (collection), WORK/idx-*/ (indexes), WORK/runs-*/ (runs, and each one's
# scores as eval.<system>.<set>.json) and prints one table row per system and variant (runs already there are
# kept: remove WORK/runs-* to search again) (hit@1 = success_1, MRR = recip_rank, R@10, R@100, nDCG@10; every
# test topic).
set -euo pipefail
DATA=$1 ST=$2 REL=$3 WORK=$4
L="python -m legalir.cli"
C=$WORK/$ST$REL I=$WORK/idx-$ST$REL R=$WORK/runs-$ST$REL
mkdir -p "$R"
t() { local s=$SECONDS; "$@"; echo "  ($(( SECONDS - s )) s: ${*:1:4})" >&2; }

[ -f "$C/manifest.json" ] || t $L convert statutes --data-dir "$DATA" --option state="$ST" --option release="$REL" --out "$C" --quiet
[ -e "$I/bm25" ] || t $L index "$C" "$I/bm25" --threads 1
SETS="test test.masked"
[ "${DENSE:-1}" = 0 ] || SETS="train valid $SETS"   # train+valid tune the fusion
for set in $SETS; do
  for cit in on off; do
    [ -f "$R/bm25-cit$cit.$set.trec" ] || \
      t $L search "$I/bm25" "$C/topics/$set.jsonl" "$R/bm25-cit$cit.$set.trec" -k 100 --citations $cit --threads 1
  done
done
SYSTEMS="bm25-citoff bm25-citon"
if [ "${DENSE:-1}" != 0 ]; then
SYSTEMS="$SYSTEMS minilm hybrid"
[ -e "$I/emb" ] || t $L encode "$C" "$I/emb" --encoder minilm --quiet
[ -e "$I/dense" ] || t $L index-dense "$I/emb" "$I/dense"
for set in train valid test test.masked; do
  [ -f "$R/minilm.$set.trec" ] || t $L search-dense "$I/dense" "$C/topics/$set.jsonl" "$R/minilm.$set.trec" -k 100 --threads 1
done
t $L tune-fusion statutes --collection "$C" --topics train --topics valid \
  --run "$R/bm25-citoff.{set}.trec" --run "$R/minilm.{set}.trec" --measure recip_rank -o "$R/hybrid.tuning.json" --force
for set in test test.masked; do
  $L fuse "$R/bm25-citoff.$set.trec" "$R/minilm.$set.trec" -o "$R/hybrid.$set.trec" --params "$R/hybrid.tuning.json" --force
done
fi
NQ=$(cut -d' ' -f1 "$C/qrels/test.txt" | sort -u | wc -l)
for set in test test.masked; do
  for sys in $SYSTEMS; do
    $L eval -c --json --quiet -m success.1 -m recip_rank -m recall.10,100 -m ndcg_cut.10 "$C/qrels/test.txt" \
      "$R/$sys.$set.trec" > "$R/eval.$sys.$set.json"
  done
done
python "$(dirname "$0")/figures.py" statutes "$R" --state "$ST" --release "$REL" --topics "$NQ" --systems "$SYSTEMS" \
  ${FIGURES:+--out "$FIGURES" --command "${DENSE:+DENSE=$DENSE }scripts/bench_statutes.sh $*"}
