#!/usr/bin/env bash
# What ran on the lent GPU machine for docs/statutes.md (the cross-encoder rows): the carried folder .gpu/ held
# data.tar.xz (the ga86 and nc81 collections, contents only, and their BM25 runs), minilm16/ (the bundled MiniLM
# as float16: 45 MB, under the 64 MiB a call carries), whl/ (pytrec_eval-terrier for Python 3.12) and this script.
#   run(command="LIMIT_S=240 bash scripts/device/statutes_ce_run.sh", carry=[".gpu"])   (2026-11-26, as .gpu/run.sh)
# Georgia's reranking and encoding, cut off by LIMIT_S, were finished by a second call on the warm machine that ran
# scripts/bench_statutes_ce.sh ga86 runs-ga86 out-ga86 /tmp/minilm32 again in /tmp/w/data (it resumes: the model kept).
set -uo pipefail
REPO=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$REPO HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; python3 -c "import torch, transformers, sentence_transformers as st; print(torch.__version__, transformers.__version__, st.__version__)"; } | tee $OUT/device.txt
mkdir -p /tmp/w && tar -xJf .gpu/data.tar.xz -C /tmp/w && python3 scripts/device/minilm_fp32.py .gpu/minilm16 /tmp/minilm32 || exit 4
cd /tmp/w/data
pack() { cd /tmp/w/data && tar -cJf $OUT/ce.tar.xz $(ls -d out-*/ce-*.trec out-*/ce/legalir-train.json 2>/dev/null) 2>/dev/null
         ls -d out-*/emb >/dev/null 2>&1 && tar -cf - out-*/emb | split -b 15M - $OUT/emb.tar.part-; }
for st in nc81 ga86; do
  s=$SECONDS
  timeout ${LIMIT_S:-250} bash $REPO/scripts/bench_statutes_ce.sh $st runs-$st out-$st /tmp/minilm32 2>&1 \
    | tr '\r' '\n' | grep -v "it/s\]\|updates/s\|pairs/s\]\|s/it\]\|Writing model\|^$" | tee -a $OUT/log.txt
  echo "== $st: $(( SECONDS - s )) s" | tee -a $OUT/log.txt
  pack
done
ls -la $OUT
