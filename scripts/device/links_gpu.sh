#!/usr/bin/env bash
# Issue 40 on one GPU: train the dense retriever and the cross-encoder on the five training codes' links, then
# encode, search, fuse and rerank the unseen codes; the table is made on the CPU afterwards (`make links-eval`).
#
# A GPU machine with legalir installed (`make setup`) and Java: the whole protocol is `make links LINKS_DEVICE=cuda`;
# this script is for a machine lent without Java or the bundled MiniLM, that carries 64 MiB a call and keeps /tmp
# while it stays warm. On the CPU first (once):
#   make links-collections links-bm25 LINKS_OUT=OUT LINKS_DATA=DATA
#   python scripts/device/links_pack.py OUT .links-gpu/model --part model
#   python scripts/device/links_pack.py OUT .links-gpu/train --part train --codes "ga86 nc81 tn76 ky87 co80"
#   python scripts/device/links_pack.py OUT .links-gpu/eval1 --part eval --codes "ar78 nd81 wy84"   # <= 60 MiB a part
#   pip download --only-binary :all: --python-version 3.12 --no-deps pytrec_eval-terrier -d .links-gpu/whl
# then one call per part (the first carries the wheel), each well under the 10-minute limit of a call:
#   run(command="PHASE=model bash scripts/device/links_gpu.sh", carry=[".links-gpu/model", ".links-gpu/whl"])
#   run(command="PHASE=train bash scripts/device/links_gpu.sh", carry=[".links-gpu/train"], timeout_s=420)
#   run(command="PHASE=eval PACK=.links-gpu/eval1 bash scripts/device/links_gpu.sh", carry=[".links-gpu/eval1"])
# Each call returns under $OUT: its log, the model cards, the runs (runs.tar.xz) and device.txt; unpack the runs
# into OUT/runs and run `make links-eval LINKS_OUT=OUT LINKS_UNSEEN="ar78 ..."` here for the table.
#
# Budget (LINKS_* as in the Makefile; each step under `timeout`, so a call returns what it has): dense training
# DENSE_S (200 s), cross-encoder CE_S (150 s), the hybrid's fusion FUSION_S (90 s: encode the five, tune), each unseen code EVAL_S (90 s: encode twice, search,
# fuse, rerank the top LINKS_RERANK_K=20). These settings and times are
# planned, not measured: no GPU was lent when this was written (docs/statutes.md says what was measured).
set -uo pipefail
REPO=$PWD
PHASE=${PHASE:?PHASE=model, train or eval}
W=${LINKS_WORK:-/tmp/links}
OUT=${OUT:-$W/out}
mkdir -p "$W" "$OUT"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log.txt"; }
if [ ! -d "$W/site" ] && ls .links-gpu/whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$W/site" .links-gpu/whl/*.whl || exit 3
fi
export PYTHONPATH=$W/site:$REPO HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import torch, transformers, sentence_transformers as st; print('torch', torch.__version__, 'transformers', transformers.__version__, 'sentence-transformers', st.__version__)"
} | tee "$OUT/device.txt"
python3 -c "import pytrec_eval" || { log "pytrec_eval missing: carry .links-gpu/whl"; exit 3; }
if [ "$PHASE" = eval ]; then python3 -c "import faiss" || { log "faiss missing: dense search cannot run here"; exit 5; }; fi
# the repository's legalir, run by this machine's python (no .venv here)
mkdir -p "$W/venv/bin" && printf '#!/bin/sh\nexec python3 -m legalir.cli "$@"\n' > "$W/venv/bin/legalir" && chmod +x "$W/venv/bin/legalir"
PACK=${PACK:-.links-gpu/$PHASE}
tar -xJf "$PACK/pack.tar.xz" -C "$W" || exit 4
CODES=$(python3 -c "import json,sys; print(' '.join(json.load(open(sys.argv[1]))['codes']))" "$PACK/pack.json")
if [ "$PHASE" = model ]; then python3 "$REPO/scripts/device/minilm_fp32.py" "$W/minilm16" "$W/minilm32" || exit 4; fi
[ -f "$W/minilm32/model.safetensors" ] || { log "no $W/minilm32: run PHASE=model first (on this warm machine)"; exit 4; }
M="make --no-print-directory -C $REPO VENV=$W/venv LINKS_OUT=$W LINKS_RUNS_GIVEN=1 LINKS_DEVICE=cuda THREADS=8 \
   LINKS_BASE=$W/minilm32 LINKS_MINILM=$W/minilm32"
step() { local s=$SECONDS lim=$1; shift; log "start (limit ${lim}s): $*"
         timeout "$lim" "$@" 2>&1 | tr '\r' '\n' | grep -v "it/s\]\|s/it\]\|Writing model\|^$" >> "$OUT/log.txt"
         log "end ($(( SECONDS - s )) s, exit ${PIPESTATUS[0]}): $*"; }
DENSE_ARGS=${LINKS_DENSE_ARGS:---steps 1500 --batch-size 64 --lr 2e-5 --eval-every 250 --valid-topics 200 --valid-depth 20 --hard-negatives 1 --negatives-depth 20 --save-every 250}
CE_ARGS=${LINKS_CE_ARGS:---lr 5e-4 --checkpoints 250,500 --negatives-depth 20 --valid-depth 50 --batch-size 64 --save-every 250}
if [ "$PHASE" = model ]; then
  log "model ready: $W/minilm32"
elif [ "$PHASE" = train ]; then
  # killed by its limit, a step keeps its state (models/*.work): the same call again, while warm, resumes it
  step "${DENSE_S:-200}" $M LINKS_TRAIN="$CODES" LINKS_UNSEEN= LINKS_DENSE_ARGS="$DENSE_ARGS" links-dense
  step "${CE_S:-150}" $M LINKS_TRAIN="$CODES" LINKS_UNSEEN= LINKS_CE_ARGS="$CE_ARGS" links-ce
  step "${FUSION_S:-90}" $M LINKS_TRAIN="$CODES" LINKS_UNSEEN= links-fusion
  cp "$W"/models/dense/model_card.* "$W/models/ce/legalir-train.json" "$W/models/fusion.json" "$OUT/" 2>/dev/null
else
  for code in $CODES; do
    step "${EVAL_S:-90}" $M links-search LINKS_TRAIN= LINKS_UNSEEN="$code" LINKS_RERANK_K="${LINKS_RERANK_K:-20}"
  done
  (cd "$W" && tar -cJf "$OUT/runs.tar.xz" $(for c in $CODES; do echo "runs/$c"; done))
fi
ls -la "$OUT"
