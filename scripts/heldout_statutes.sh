#!/usr/bin/env bash
# The held-out check of `legalir convert statutes` (issue 31, "Done when"; docs/statutes.md, "A code we were
# never given"): a state code the project was never given, two releases OLD and NEW of the publisher's
# repository (DATA_DIR/cic-code-ST/transforms/ST/<code>/rNN/*.html).
#
#   scripts/heldout_statutes.sh DATA_DIR STATE OLD NEW WORK        e.g. /data tn 75 76 /tmp/ho
#
# 1. convert: `legalir convert statutes` of OLD and NEW finishes (exit 0), its report's skips listed;
# 2. sections: the converter's documents within 1% of what scripts/count_sections.py (a reader of our
#    own, html.parser, no legalir) finds, each release;
# 3. case notes: no case-note text in `contents` (scripts/check_case_notes.py), each release;
#    3b. no history, note or case-note heading in `contents` (scripts/check_annotations.py, which also counts
#    decisions filed as notes), each release;
# 4. hit@1: NEW's cross-reference questions (test topics) with BM25 and citations on: success.1 >= 0.9;
#    4b. the same questions as plain text, as a user passes them (`legalir search INDEX q.tsv`: a TSV of
#    qid<TAB>text written here from the topics, no state, the search's defaults but -k), against the index
#    of that one code: success.1 >= 0.9 (a bare `§ N` is read in the index's own code);
# 5. update = fresh: `legalir index update INDEX_OLD --to C_NEW` searches NEW's test topics byte for byte
#    as a fresh index of NEW (`cmp` of the two runs);
# 6. as-of = fresh: the updated index searched `--as-of OLD` (the release) and `--as-of DATE` (the first
#    day of OLD's date as the collection records it from the publisher's README) gives OLD's test topics
#    byte for byte as the index of OLD did before the update.
# OLD = NEW (a code with one release, Idaho's r70) converts once and skips 5 and 6 (SKIP).
# Prints one line per check, PASS or FAIL with its figure; exit status 1 on any FAIL (2: bad arguments).
# WORK/<st><rel>/ (collections) and WORK/<st><rel>.convert.log are kept; collections already there are
# converted again (remove nothing by hand).
set -uo pipefail
if [ $# -ne 5 ]; then
  echo "usage: scripts/heldout_statutes.sh DATA_DIR STATE OLD NEW WORK" >&2
  exit 2
fi
DATA=$1 ST=$2 OLD=$3 NEW=$4 WORK=$5
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python}
L="$PY -m legalir.cli"
mkdir -p "$WORK"
FAIL=0
say() {  # say PASS|FAIL|SKIP "check" "figure"
  [ "$1" = FAIL ] && FAIL=1
  printf '%s  %-34s %s\n' "$1" "$2" "$3"
}
report() {  # the reader's report of a collection: documents, sections read, skips with reasons
  $PY - "$1/manifest.json" <<'EOF'
import json, re, sys
r = json.load(open(sys.argv[1]))["reader"]
print(f"files={r['files']} sections_read={r['sections_read']} documents={r['documents_written']} "
      f"skipped={sum(r['skipped'].values())}")
for reason, n in sorted(r["skipped"].items()):
    first = re.sub(r"/\S*/", "", r["skipped_first"][reason][0])  # file names without their folders
    print(f"    skipped {n}: {reason} (first: {first[:160]})")
EOF
}
docs_of() { $PY -c "import json,sys; print(json.load(open(sys.argv[1]))['reader']['documents_written'])" "$1/manifest.json"; }

RELS="$OLD $NEW"; [ "$OLD" = "$NEW" ] && RELS=$NEW
for REL in $RELS; do
  C=$WORK/$ST$REL
  rm -rf "$C"
  s=$SECONDS
  if $L convert statutes --data-dir "$DATA" --option state="$ST" --option release="$REL" --out "$C" --quiet \
      >"$WORK/$ST$REL.convert.log" 2>&1; then
    rep=$(report "$C")
    say PASS "1 convert $ST r$REL" "$(( SECONDS - s )) s; $(head -1 <<<"$rep")"
    tail -n +2 <<<"$rep"
  else
    say FAIL "1 convert $ST r$REL" "exit $?; see $WORK/$ST$REL.convert.log: $(grep -m1 -i error "$WORK/$ST$REL.convert.log")"
    continue
  fi
  own=$($PY "$HERE/count_sections.py" "$DATA" "$ST" "$REL") || own="sections=?"
  n_own=$(sed -n 's/^sections=\([0-9]*\).*/\1/p' <<<"$own")
  n_conv=$(docs_of "$C")
  if [ -n "$n_own" ] && $PY -c "import sys; a,b=int(sys.argv[1]),int(sys.argv[2]); sys.exit(0 if b and abs(a-b)/b <= 0.01 else 1)" "$n_conv" "$n_own"; then
    v=PASS; else v=FAIL; fi
  say $v "2 sections $ST r$REL" "converter $n_conv vs own reader $n_own ($($PY -c "import sys; a,b=int(sys.argv[1]),int(sys.argv[2] or 0); print(f'{(a-b)/b*100:+.2f}%' if b else '?')" "$n_conv" "${n_own:-0}")); $own"
  leaks=$($PY "$HERE/check_case_notes.py" "$C")
  if [ $? -eq 0 ]; then v=PASS; else v=FAIL; fi
  say $v "3 no case notes in contents r$REL" "$(head -1 <<<"$leaks")"
  [ "$v" = PASS ] || tail -n +2 <<<"$leaks"
  ann=$($PY "$HERE/check_annotations.py" "$C" -v)
  if [ $? -eq 0 ]; then v=PASS; else v=FAIL; fi
  say $v "3b annotations by field r$REL" "$(head -1 <<<"$ann")"
  [ "$v" = PASS ] || tail -n +2 <<<"$ann" | grep -E "in contents" | head -9
done

CN=$WORK/$ST$NEW CO=$WORK/$ST$OLD
[ -f "$CN/manifest.json" ] && [ -f "$CO/manifest.json" ] || { echo "conversion failed: checks 4-5 not run" >&2; exit 1; }
R=$WORK/runs-$ST$NEW
rm -rf "$WORK/idx-$ST$NEW" "$WORK/idx-$ST$OLD-to-$NEW" "$WORK/idx-$ST$OLD-to-$NEW".v* "$R"
mkdir -p "$R"
$L index "$CN" "$WORK/idx-$ST$NEW" --threads 1 >/dev/null 2>"$WORK/index.log" || { say FAIL "4 index" "$(tail -1 "$WORK/index.log")"; exit 1; }
$L search "$WORK/idx-$ST$NEW" "$CN/topics/test.jsonl" "$R/fresh.test.trec" -k 100 --citations on --threads 1 \
  >/dev/null 2>>"$WORK/index.log"
ev=$($L eval -m success.1 -m recip_rank "$CN/qrels/test.txt" "$R/fresh.test.trec" 2>/dev/null)
h1=$(awk '$1 == "success_1" && $2 == "all" {print $3}' <<<"$ev")
rr=$(awk '$1 == "recip_rank" && $2 == "all" {print $3}' <<<"$ev")
nq=$(cut -d' ' -f1 "$CN/qrels/test.txt" | sort -u | wc -l)
if [ -n "$h1" ] && $PY -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.9 else 1)" "$h1"; then v=PASS; else v=FAIL; fi
say $v "4 xref hit@1 $ST r$NEW test" "hit@1 ${h1:-?} (>= 0.9), MRR ${rr:-?}, $nq topics, BM25 --citations on"

# 4b: the questions as plain text, a TSV without the state, the search's own defaults (citations auto)
$PY - "$CN/topics/test.jsonl" "$R/plain.test.tsv" <<'EOF'
import json, sys
with open(sys.argv[1], encoding="utf-8") as f, open(sys.argv[2], "w", encoding="utf-8") as out:
    for line in f:
        if line.strip():
            t = json.loads(line)
            out.write(f"{t['qid']}\t{' '.join(str(t['text']).split())}\n")
EOF
$L search "$WORK/idx-$ST$NEW" "$R/plain.test.tsv" "$R/plain.test.trec" -k 100 --threads 1 >/dev/null 2>>"$WORK/index.log"
ev=$($L eval -m success.1 -m recip_rank "$CN/qrels/test.txt" "$R/plain.test.trec" 2>/dev/null)
p1=$(awk '$1 == "success_1" && $2 == "all" {print $3}' <<<"$ev")
prr=$(awk '$1 == "recip_rank" && $2 == "all" {print $3}' <<<"$ev")
if [ -n "$p1" ] && $PY -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.9 else 1)" "$p1"; then v=PASS; else v=FAIL; fi
say $v "4b plain hit@1 $ST r$NEW test" "hit@1 ${p1:-?} (>= 0.9), MRR ${prr:-?}, $nq topics as a TSV (no state), index of $ST only"

if [ "$OLD" = "$NEW" ]; then
  say SKIP "5 update r$OLD -> r$NEW = fresh" "one release: nothing to update"
  say SKIP "6 as-of r$OLD = fresh" "one release"
  exit $FAIL
fi
U=$WORK/idx-$ST$OLD-to-$NEW
# check 6's questions: OLD's test topics, or NEW's where OLD has none (North Carolina r80 links no section of its own)
TQ=$CO/topics/test.jsonl; [ -s "$TQ" ] || TQ=$CN/topics/test.jsonl
$L index "$CO" "$U" --threads 1 >/dev/null 2>>"$WORK/index.log"
$L search "$U" "$TQ" "$R/old.fresh.test.trec" -k 100 --citations on --threads 1 >/dev/null 2>>"$WORK/index.log"
up=$($L index update "$U" --to "$CN" --threads 1 2>&1 >/dev/null | tail -3 | tr '\n' ' ')
$L search "$U" "$CN/topics/test.jsonl" "$R/updated.test.trec" -k 100 --citations on --threads 1 >/dev/null 2>>"$WORK/index.log"
if [ -s "$R/fresh.test.trec" ] && cmp -s "$R/fresh.test.trec" "$R/updated.test.trec"; then v=PASS; else v=FAIL; fi
say $v "5 update r$OLD -> r$NEW = fresh" "runs of $nq test topics $( [ $v = PASS ] && echo identical || echo differ ) ($(wc -l <"$R/fresh.test.trec") lines); update: $up"

# 6: as of OLD, by its release and by its date, on the updated index = the index of OLD before the update
day=$($PY -c "import json,sys; d=(json.load(open(sys.argv[1])).get('options') or {}).get('date') or ''; print(d + '-01' * (2 - d.count('-')) if d else '')" "$CO/manifest.json")
$L search "$U" "$TQ" "$R/old.asof.test.trec" -k 100 --citations on --as-of "$OLD" --threads 1 >/dev/null 2>>"$WORK/index.log"
if [ -n "$day" ]; then
  $L search "$U" "$TQ" "$R/old.asofdate.test.trec" -k 100 --citations on --as-of "$day" --threads 1 >/dev/null 2>>"$WORK/index.log"
fi
same() { [ -s "$R/old.fresh.test.trec" ] && cmp -s "$R/old.fresh.test.trec" "$1" && echo identical || echo differ; }
a=$(same "$R/old.asof.test.trec"); d=$( [ -n "$day" ] && same "$R/old.asofdate.test.trec" || echo "no date recorded")
if [ "$a" = identical ] && [ "$d" = identical ]; then v=PASS; else v=FAIL; fi
say $v "6 as-of r$OLD = fresh r$OLD" "$(grep -c . "$TQ") test topics of $(basename "$(dirname "$(dirname "$TQ")")"): --as-of $OLD $a, --as-of ${day:-?} $d"
exit $FAIL
