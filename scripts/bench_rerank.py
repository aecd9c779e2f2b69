"""Cross-encoder reranking speed: legalir's scorer against sentence-transformers' CrossEncoder.predict.

Both score the same (query, clause) pairs, the top ``--k`` of a run, with the
same model and maximum length, in this process, one after the other (best of
``--repeat``). legalir sorts pairs by length before batching (little padding)
and uses bf16 autocast where the CPU has AMX (``--precision auto``);
sentence-transformers' ``predict`` batches in input order, in fp32. The script
checks that both rank each topic's documents the same way (Kendall tau per
topic; bf16 can swap near-ties), then prints pairs per second and the ratio,
and peak resident memory of the process.

    .venv/bin/python scripts/bench_rerank.py --model models/acord-ce --run runs/acord/bm25.test.trec \\
        --topics collections/acord/topics/test.jsonl --collection collections/acord --k 100 --topics-limit 10
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def kendall(a: list[float], b: list[float]) -> float:
    n, s = len(a), 0
    for i in range(n):
        for j in range(i + 1, n):
            s += 1 if (a[i] - a[j]) * (b[i] - b[j]) > 0 else -1 if (a[i] - a[j]) * (b[i] - b[j]) < 0 else 0
    return s / max(1, n * (n - 1) // 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--topics", required=True)
    ap.add_argument("--collection", required=True)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--topics-limit", type=int, default=10, help="First N topics of the run (sorted ids).")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--precision", default="auto")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()

    import torch
    from sentence_transformers import CrossEncoder

    from legalir import trec
    from legalir.base import models
    from legalir.search import rerank as rr

    if args.threads:
        torch.set_num_threads(args.threads)
    run = trec.read_run(args.run)
    qids = sorted(run)[:args.topics_limit]
    run = {q: run[q] for q in qids}
    topics = trec.read_topics(args.topics)
    cands = rr.candidates(run, args.k)
    texts = rr.collection_texts(args.collection, run, k=args.k)
    keys = [(q, d) for q in qids for d in cands[q]]
    queries = [topics[q].text for q, _ in keys]
    docs = [texts[d] for _, d in keys]

    ours = rr.CrossEncoderScorer(args.model, batch_size=args.batch_size, precision=args.precision)
    ref = CrossEncoder(str(models.resolve(args.model)), device="cpu", max_length=ours.max_length)
    results = {}
    for name, fn in (
        ("legalir", lambda: ours.score(queries, docs, progress=False)),
        ("sentence-transformers", lambda: [float(x) for x in ref.predict(
            list(zip(queries, docs)), batch_size=args.batch_size, activation_fn=torch.nn.Identity(),
            show_progress_bar=False)]),
    ):
        best = None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            scores = fn()
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        results[name] = (best, scores)

    taus = []
    for q in qids:
        idx = [i for i, (qq, _) in enumerate(keys) if qq == q]
        taus.append(kendall([results["legalir"][1][i] for i in idx],
                            [results["sentence-transformers"][1][i] for i in idx]))
    n = len(keys)
    t_ours, t_ref = results["legalir"][0], results["sentence-transformers"][0]
    print(f"pairs: {n} ({len(qids)} topics x top {args.k}), max length {ours.max_length}, "
          f"batch {args.batch_size}, torch threads {torch.get_num_threads()}, legalir precision {ours.precision}")
    print(f"legalir               {t_ours:8.1f} s  {n / t_ours:7.1f} pairs/s")
    print(f"sentence-transformers {t_ref:8.1f} s  {n / t_ref:7.1f} pairs/s (fp32, input order)")
    print(f"speed-up {t_ref / t_ours:.2f}x; per-topic Kendall tau between the two: "
          f"min {min(taus):.3f}, mean {sum(taus) / len(taus):.3f}")
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
