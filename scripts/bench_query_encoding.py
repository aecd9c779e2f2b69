"""What encoding each query alone costs: ``Encoder.encode_queries`` (one query at a time, one torch thread; the
one query path of every face since issue 37) against batches of 32 sorted by length with torch's own thread
count (the path before), on the same generated queries, side by side in one run.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench_query_encoding.py [--queries 300] [--rounds 2]

Queries are drawn (seeded) from the bundled ACORD clauses' words at the lengths of real legal questions (5 to
200 words). Prints queries/s of each path, the ratio, and peak RSS.
"""
from __future__ import annotations

import argparse
import json
import lzma
import random
import resource
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    import torch

    from legalir.base import models
    from legalir.indexing import encoders

    enc = encoders.Encoder.load(str(models.bundled_minilm()), device="cpu")
    corpus = Path(__file__).resolve().parent.parent / "legalir" / "resources" / "acord" / "corpus.jsonl.xz"
    words = [w for w in lzma.open(corpus, "rt", encoding="utf-8").read().split() if w.isalpha()]
    rng = random.Random(0)
    queries = [" ".join(rng.choice(words) for _ in range(rng.choice([5, 10, 20, 40, 80, 200])))
               for _ in range(args.queries)]
    formatted = enc.format_queries(queries)
    best = {"alone (encode_queries)": float("inf"), "batches of 32": float("inf")}
    for _ in range(args.rounds):
        t = time.perf_counter()
        enc.encode_queries(queries)
        best["alone (encode_queries)"] = min(best["alone (encode_queries)"], time.perf_counter() - t)
        t = time.perf_counter()
        enc.encode(formatted, batch_size=32)
        best["batches of 32"] = min(best["batches of 32"], time.perf_counter() - t)
    rate = {k: args.queries / v for k, v in best.items()}
    out = {"queries": args.queries, "torch_threads": torch.get_num_threads(),
           "queries_per_s": {k: round(v, 1) for k, v in rate.items()},
           "ratio_alone_to_batched": round(rate["alone (encode_queries)"] / rate["batches of 32"], 3),
           "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
