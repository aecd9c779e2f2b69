#!/usr/bin/env bash
# The statutes' cross-reference benchmark, the GPU part (docs/statutes.md): fine-tune a cross-encoder on a
# code's train topics (as written and masked, hard negatives from BM25) validated on valid.masked, rerank
# the BM25 runs of the test topics with it, and encode the corpus with MiniLM for the dense and hybrid rows.
#
#   scripts/bench_statutes_ce.sh COLLECTION RUNS WORK BASE_MODEL
#
# RUNS holds bm25-citoff.{train,train.masked,valid.masked,test,test.masked}.trec and
# bm25-citon.{test,test.masked}.trec (scripts/bench_statutes.sh writes them). Writes WORK/ce (the model),
# WORK/ce-<first stage>.<set>.trec (reranked top 100) and WORK/emb (MiniLM vectors; build the FAISS index
# and search where FAISS is: legalir index-dense, legalir search-dense --encoder minilm). Resumes: what is
# there is kept. Knobs: CE_CHECKPOINTS (250,500,1000), CE_LR (5e-4,1e-3: the grid that learned on ACORD; 2e-5,5e-5
# did not learn here, docs/statutes.md), CE_NEGATIVES (20), CE_VALID_DEPTH (50),
# BATCH (256).
set -euo pipefail
C=$1 R=$2 W=$3 BASE=$4
L="${PYTHON:-python3} -m legalir.cli"
mkdir -p "$W"
t() { local s=$SECONDS; "$@"; echo "  ($(( SECONDS - s )) s: ${*:1:5})" >&2; }
[ -f "$W/ce/legalir-train.json" ] || t $L train-ce "$C" "$W/ce" --base-model "$BASE" \
  --train-topics train --train-topics train.masked --negatives-run "$R/bm25-citoff.train.trec" \
  --negatives-run "$R/bm25-citoff.train.masked.trec" --negatives-depth "${CE_NEGATIVES:-20}" \
  --valid-topics valid.masked --valid-run "$R/bm25-citoff.valid.masked.trec" --valid-depth "${CE_VALID_DEPTH:-50}" --every-candidate \
  --measure recip_rank --checkpoints "${CE_CHECKPOINTS:-250,500,1000}" --lr "${CE_LR:-5e-4,1e-3}" \
  --save-every 100000
for set in test test.masked; do
  for first in bm25-citoff bm25-citon; do
    [ -f "$W/ce-$first.$set.trec" ] || t $L rerank "$W/ce-$first.$set.trec" --run "$R/$first.$set.trec" \
      --topics "$C/topics/$set.jsonl" --collection "$C" -k 100 --method cross-encoder --model "$W/ce" \
      --batch-size "${BATCH:-256}"
  done
done
[ -e "$W/emb" ] || t $L encode "$C" "$W/emb" --encoder "$BASE" --batch-size "${BATCH:-256}" --quiet
