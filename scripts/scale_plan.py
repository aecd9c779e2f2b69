#!/usr/bin/env python
"""A measured plan for the full corpora: encoding time, memory and cost; index sizes and their recall cost.

Three steps, each writing JSON; the README's "Scale" section is ``table``'s output.

1. ``encoders``: forward-pass throughput (sequences/s and tokens/s) of three
   encoder architectures on this machine (``--device cpu``, float32) or a GPU
   (``--device cuda``, float16), at 128 tokens and at the length the plan uses
   (the encoder's window: 256 for MiniLM, 512 for the others), batch of fixed-
   length sequences under ``torch.inference_mode``:

   * all-MiniLM-L6-v2, its real weights (the bundled copy);
   * E5-large-v2's architecture (BERT-large: 24 layers, 1024 wide, all built),
     weights drawn at random (speed does not depend on their values; the real
     weights are not reachable from this machine);
   * E5-mistral-7b-instruct's architecture (Mistral-7B: 32 layers, 4096 wide,
     grouped-query attention), built with ``--mistral-layers`` of its 32
     layers (random weights: the whole model is 28 GB in float32); the full
     model's time is the measured one times 32 / layers (embedding and pooling
     are negligible beside 32 transformer layers).

   Each also gives its parameter count (exact, from the architecture) and its
   achieved FLOP/s (2 x non-embedding parameters + 4 x layers x length x width
   per token).

2. ``indexes``: over an embeddings folder written by ``legalir encode`` and a
   topics file (encoded here with the encoder recorded in the folder), builds
   Flat, HNSW and IVF-PQ indexes with ``legalir.indexing.dense`` (what
   ``legalir index-dense`` writes) and measures their file size, build time,
   queries/s and recall@10 / @100 against the Flat index's results (and, with
   ``--qrels``, nDCG@10 and recall@100 on the qrels, for each index).

3. ``table``: the plan in Markdown from those JSON files: per corpus, model and
   number of GPUs, time, GPU memory, cost and index sizes; every figure is
   labelled *measured* or *extrapolated*, and the assumptions (GPU peak FLOP/s,
   utilisation, price per GPU-hour, corpus sizes and their sources) are printed
   with it.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/scale_plan.py encoders --json results/scale/encoders-cpu.json
    HF_HUB_OFFLINE=1 .venv/bin/python scripts/scale_plan.py indexes --embeddings indexes/acord/embeddings/minilm \\
        --topics collections/acord/topics/test.jsonl --qrels collections/acord/qrels/test.txt \\
        --json results/scale/indexes-acord.json
    .venv/bin/python scripts/scale_plan.py table --encoders results/scale/encoders-cpu.json \\
        --indexes results/scale/indexes-acord.json
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: corpus sizes (passages to encode) and where each number comes from
CORPORA = {
    "Housing statutes": (1_837_403, "statutes.tsv rows, Housing Statute QA release (DATASETS.md: ~1.84M)"),
    "Bar Exam passages": (900_000, "Bar Exam QA passage pool (DATASETS.md: ~900K)"),
    "CRUMB, largest task": (1_100_000, "issue 13: CRUMB's corpora reach 1.1M passages per task"),
    "CRUMB, 8 tasks (bound)": (8_800_000, "8 tasks x 1.1M: an upper bound"),
}

#: architecture, plan length (tokens per passage), embedding width
MODELS = {
    "all-MiniLM-L6-v2": {"kind": "bert", "hidden": 384, "layers": 6, "heads": 12, "intermediate": 1536,
                         "vocab": 30522, "window": 256, "real_weights": True},
    "E5-large-v2": {"kind": "bert", "hidden": 1024, "layers": 24, "heads": 16, "intermediate": 4096,
                    "vocab": 30522, "window": 512},
    "E5-mistral-7b-instruct": {"kind": "mistral", "hidden": 4096, "layers": 32, "heads": 32, "kv_heads": 8,
                               "intermediate": 14336, "vocab": 32000, "window": 512},
}

GPU_PEAK = 989e12  # H100 SXM, dense BF16/FP16 tensor-core FLOP/s (NVIDIA's data sheet; 1,979 T is with sparsity)


# ------------------------------------------------------------------ 1. encoders
def _model(name: str, spec: dict, layers: int):
    import torch
    from transformers import BertConfig, BertModel, MistralConfig, MistralModel

    torch.manual_seed(0)
    if spec.get("real_weights"):
        from transformers import AutoModel

        from legalir.base.models import bundled_minilm

        return AutoModel.from_pretrained(str(bundled_minilm()))
    if spec["kind"] == "bert":
        cfg = BertConfig(hidden_size=spec["hidden"], num_hidden_layers=layers, num_attention_heads=spec["heads"],
                         intermediate_size=spec["intermediate"], vocab_size=spec["vocab"],
                         max_position_embeddings=512)
        return BertModel(cfg, add_pooling_layer=False)
    cfg = MistralConfig(hidden_size=spec["hidden"], num_hidden_layers=layers, num_attention_heads=spec["heads"],
                        num_key_value_heads=spec["kv_heads"], intermediate_size=spec["intermediate"],
                        vocab_size=spec["vocab"], max_position_embeddings=32768, sliding_window=4096)
    return MistralModel(cfg)


def _params(model, spec: dict, layers_built: int) -> tuple[int, int]:
    """(all parameters, non-embedding parameters) of the full architecture, from the model built."""
    total = sum(p.numel() for p in model.parameters())
    emb = sum(p.numel() for n, p in model.named_parameters() if "embed" in n)
    per_layer = (total - emb - _extra_params(model, layers_built)) // layers_built
    extra = _extra_params(model, layers_built)
    full_body = per_layer * spec["layers"] + extra
    return full_body + emb, full_body


def _extra_params(model, layers_built: int) -> int:
    """Parameters outside the embeddings and the repeated layers (final norm)."""
    import re

    return sum(p.numel() for n, p in model.named_parameters()
               if "embed" not in n and not re.search(r"(^|\.)layers?\.\d+\.", n))


def flops_per_token(spec: dict, body_params: int, length: int) -> float:
    return 2.0 * body_params + 4.0 * spec["layers"] * length * spec["hidden"]


def measure_encoder(name: str, spec: dict, length: int, batch: int, device: str, layers: int,
                    min_seconds: float, dtype_name: str | None = None) -> dict:
    import torch

    dtype = getattr(torch, dtype_name or ("float16" if device.startswith("cuda") else "float32"))
    built = min(layers, spec["layers"]) if spec["kind"] == "mistral" else spec["layers"]
    model = _model(name, spec, built).to(device=device, dtype=dtype).eval()
    params, body = _params(model, spec, built)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 29000, (batch, length), generator=gen).to(device)
    mask = torch.ones_like(ids)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    with torch.inference_mode():
        model(input_ids=ids, attention_mask=mask)  # warm-up
        sync()
        done, t0 = 0, time.perf_counter()
        while True:
            model(input_ids=ids, attention_mask=mask)
            sync()
            done += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= min_seconds and done >= 2:
                break
    seq_s = done * batch / elapsed * built / spec["layers"]  # the full model: time scales with its layers
    out = {"model": name, "device": device, "dtype": str(dtype).replace("torch.", ""), "length": length,
           "batch": batch, "layers_built": built, "layers": spec["layers"], "batches_timed": done,
           "seconds": elapsed, "sequences_per_s": seq_s, "tokens_per_s": seq_s * length,
           "params": params, "body_params": body, "flops_per_token": flops_per_token(spec, body, length),
           "label": "measured" if built == spec["layers"] else f"extrapolated from {built} of {spec['layers']} layers",
           "weights": "real weights" if spec.get("real_weights") else "random weights, same architecture"}
    out["achieved_flop_s"] = out["tokens_per_s"] * out["flops_per_token"]
    if device.startswith("cuda"):
        out["gpu_peak_mem_gib"] = torch.cuda.max_memory_allocated() / 2 ** 30
        out["gpu"] = torch.cuda.get_device_name(0)
    del model
    return out


def measure_tokenizer(length: int, min_seconds: float) -> dict:
    """Texts/s of the BERT WordPiece tokenizer (MiniLM's and E5's) on one CPU thread, texts cut at ``length``."""
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    from transformers import AutoTokenizer

    from legalir.base.models import bundled_minilm

    tok = AutoTokenizer.from_pretrained(str(bundled_minilm()))
    words = ("the landlord shall return the security deposit within thirty days after the tenant vacates the "
             "premises unless damages exceed normal wear and tear as provided in this section").split()
    texts = [" ".join(words[(i + j) % len(words)] for j in range(length)) for i in range(256)]
    tok(texts[:8], truncation=True, max_length=length, padding=True)
    done, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < min_seconds:
        tok(texts, truncation=True, max_length=length, padding=True)
        done += len(texts)
    secs = time.perf_counter() - t0
    return {"what": "tokenizer", "length": length, "texts_per_s_one_thread": done / secs, "label": "measured"}


def cmd_encoders(args) -> None:
    import torch

    if args.device == "cpu":
        torch.set_num_threads(args.threads)
    results = []
    for name, spec in MODELS.items():
        if args.tokenizer_only or (args.models and name not in args.models.split(",")):
            continue
        for length in sorted({128, spec["window"]}):
            batch = {"bert": args.batch, "mistral": args.batch_7b}[spec["kind"]]
            r = measure_encoder(name, spec, length, batch, args.device, args.mistral_layers, args.min_seconds,
                                args.dtype)
            r["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            results.append(r)
            print(f"{name:24s} {r['dtype']:8s} L={length:3d} {r['sequences_per_s']:9.2f} seq/s {r['tokens_per_s']:10.0f} tok/s "
                  f"{r['achieved_flop_s'] / 1e9:7.1f} GFLOP/s  params {r['params'] / 1e6:7.1f}M  ({r['label']})",
                  flush=True)
    tokenizer = [measure_tokenizer(length, min(args.min_seconds, 5.0)) for length in (256, 512)]
    for t in tokenizer:
        print(f"tokenizer L={t['length']}: {t['texts_per_s_one_thread']:,.0f} texts/s on one thread", flush=True)
    env = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(), "threads": args.threads,
           "torch": torch.__version__, "python": platform.python_version()}
    try:
        import transformers

        env["transformers"] = transformers.__version__
    except ImportError:  # pragma: no cover - a dependency of legalir: a broken install only
        pass
    _save(args.json, {"encoders": results, "tokenizer": tokenizer, "env": env, "command": " ".join(sys.argv)})


# ------------------------------------------------------------------ 2. indexes
def _recall(got, truth, k: int) -> float:
    return float(sum(len((set(g[:k]) & set(t[:k])) - {-1}) for g, t in zip(got, truth)) /
                 sum(len(set(t[:k]) - {-1}) for t in truth))


def cmd_indexes(args) -> None:
    import numpy as np

    from legalir import trec
    from legalir.indexing import dense, encoders

    emb = Path(args.embeddings)
    manifest = json.loads((emb / encoders.MANIFEST).read_text())
    encoder = encoders.Encoder.from_settings(manifest["encoder"], device="cpu")
    topics = trec.read_topics(args.topics)
    qids = sorted(topics)
    queries = encoder.encode_queries([topics[q].text for q in qids], [None] * len(qids))
    n, dim = int(manifest["documents"]), int(manifest["dim"])
    qrels = trec.read_qrels(args.qrels) if args.qrels else None
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    nlist = args.nlist or max(1, min(int(4 * math.sqrt(n)), n // 39 or 1))
    configs = [("flat", dense.IndexSpec(type="flat"), {}),
               ("hnsw M=32", dense.IndexSpec(type="hnsw", hnsw_m=32, ef_construction=200), {"ef_search": 128})]
    for m in args.pq_m:
        for nprobe in args.nprobe:
            configs.append((f"ivfpq nlist={nlist} m={m} nprobe={nprobe}",
                            dense.IndexSpec(type="ivfpq", nlist=nlist, pq_m=m), {"nprobe": nprobe}))
    built: dict[str, tuple[Path, float]] = {}
    results, truth = [], None
    for label, spec, search in configs:
        key = json.dumps([spec.type, spec.hnsw_m, spec.pq_m, spec.nlist])
        if key not in built:
            out = work / f"index-{len(built)}"
            t0 = time.perf_counter()
            dense.build_one(emb, out, spec, threads=args.threads, overwrite=True)
            built[key] = (out, time.perf_counter() - t0)
        path, build_s = built[key]
        index = dense.open_index(path, gpu=False, threads=args.threads, **search)
        index.search(queries[:10], args.k)
        t0 = time.perf_counter()
        scores, rows = index.search_arrays(queries, args.k)
        secs = time.perf_counter() - t0
        rows = rows.tolist()
        if truth is None:
            truth = rows
        size = sum(f.stat().st_size for f in Path(os.path.realpath(path)).iterdir() if f.name == dense.INDEX_FILE)
        r = {"index": label, "documents": n, "dim": dim, "queries": len(qids), "build_s": build_s,
             "index_bytes": size, "bytes_per_vector": size / n, "qps": len(qids) / secs,
             "recall@10_vs_flat": _recall(rows, truth, 10), "recall@100_vs_flat": _recall(rows, truth, 100)}
        if qrels is not None:
            from legalir.scoring import evaluator

            run = dict(zip(qids, index.hits(scores, np.asarray(rows))))
            scored = evaluator.evaluate({q: qrels[q] for q in qids if q in qrels}, run,
                                        ["ndcg_cut_10", "recall_100"], judged_only=args.judged_only)
            r.update({m: v for m, v in scored["all"].items()})
        results.append(r)
        print(f"{label:36s} {size / 2 ** 20:8.1f} MiB {r['bytes_per_vector']:7.1f} B/vec  build {build_s:6.1f}s "
              f"{r['qps']:8.0f} q/s  recall@10 {r['recall@10_vs_flat']:.3f} @100 {r['recall@100_vs_flat']:.3f}"
              + (f"  nDCG@10 {r.get('ndcg_cut_10', 0):.4f}" if qrels is not None else ""), flush=True)
    _save(args.json, {"indexes": results, "embeddings": str(emb), "encoder": manifest["encoder"].get("model"),
                      "topics": args.topics, "qrels": args.qrels, "command": " ".join(sys.argv)})


# ------------------------------------------------------------------ 3. the plan
def _hours(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _size(nbytes: float) -> str:
    for unit, f in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if nbytes >= f:
            return f"{nbytes / f:.1f} {unit}"
    return f"{nbytes / 1e3:.0f} kB"


def cmd_table(args) -> None:
    encs = [json.loads(Path(f).read_text()) for f in args.encoders]
    enc = encs[0]
    every = [r for e in encs for r in e["encoders"]]
    rows = {(r["model"], r["length"]): r for r in every if r["dtype"] == "float32"}
    fast = {(r["model"], r["length"]): r for r in every if r["dtype"] == "bfloat16"}
    tok = {t["length"]: t["texts_per_s_one_thread"] for e in encs for t in e.get("tokenizer", [])}
    gpu_measured = {(r["model"], r["length"]): r for f in (args.gpu_encoders or [])
                    for r in json.loads(Path(f).read_text())["encoders"]}
    p = print
    p(f"Assumptions (not measured): one GPU = an H100 SXM, {GPU_PEAK / 1e12:.0f} TFLOP/s dense FP16 peak, of which "
      f"{args.utilisation:.0%} is used, and no faster than its host can tokenise ({args.host_cores} CPU threads per "
      f"GPU at the one-thread rate measured here); ${args.usd_per_gpu_hour:.2f} per GPU-hour; "
      f"{args.load_s:.0f} s per worker to load the model; GPUs scale linearly (`legalir encode --ray`: shards are "
      f"independent); every passage as long as the encoder's window (an upper bound: shorter passages cost "
      f"less, about in proportion); embeddings stored as float32.")
    p("")
    p("Encoder throughput (" + ", ".join(f"{k} {v}" for k, v in enc["env"].items()) + "):")
    p("")
    p("| model | params | tokens | CPU float32 seq/s (GFLOP/s) | CPU bfloat16 seq/s | CPU label | 1 GPU seq/s "
      "| GPU label |")
    p("|---|---:|---:|---:|---:|---|---:|---|")
    for (model, length), r in rows.items():
        g, glabel = _gpu_rate(r, gpu_measured, tok, args)
        b = fast.get((model, length))
        bcell = f"{b['sequences_per_s']:,.2f}" if b else "–"
        p(f"| {model} | {r['params'] / 1e6:,.0f}M | {length} | {r['sequences_per_s']:,.2f} "
          f"({r['achieved_flop_s'] / 1e9:,.0f}) | {bcell} | {r['label']}, {r['weights']} | {g:,.0f} | {glabel} |")
    if tok:
        p("")
        p("Tokenizer (BERT WordPiece, fast), one CPU thread, measured: " +
          ", ".join(f"{v:,.0f} texts/s at {k} tokens" for k, v in sorted(tok.items())) + ".")
    p("")
    p("Encoding a whole corpus. CPU: extrapolated from the measured rate; GPU: extrapolated as above. GPU memory "
      "is the float16 weights (from the parameter count; activations at batch 32 add well under 2 GB):")
    p("")
    p("| corpus | passages | model | 2 CPU cores, float32 | bfloat16 | 1 GPU | 8 GPUs | 64 GPUs | GPU-hours | "
      "cost, 1 GPU | cost, 64 GPUs | GPU memory | embeddings |")
    p("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for corpus, (n, _) in CORPORA.items():
        for model, spec in MODELS.items():
            r = rows.get((model, spec["window"]))
            if r is None:
                continue
            g, _ = _gpu_rate(r, gpu_measured, tok, args)
            times = [n / g / k + args.load_s for k in (1, 8, 64)]
            hours = [t * k / 3600 for t, k in zip(times, (1, 8, 64))]
            b = fast.get((model, spec["window"]))
            p(f"| {corpus} | {n:,} | {model} | {_hours(n / r['sequences_per_s'])} | "
              f"{_hours(n / b['sequences_per_s']) if b else '–'} | {_hours(times[0])} | "
              f"{_hours(times[1])} | {_hours(times[2])} | {hours[0]:,.2g} | ${hours[0] * args.usd_per_gpu_hour:,.2g} | "
              f"${hours[2] * args.usd_per_gpu_hour:,.2g} | {_size(2 * r['params'])} | {_size(4 * n * spec['hidden'])} |")
    p("")
    p("Corpus sizes: " + "; ".join(f"{c}: {src}" for c, (_, src) in CORPORA.items()) + ".")
    if args.indexes:
        p("")
        p("Index bytes per vector (FAISS's layouts: flat 4d; HNSW 4d + 4(2M+1) links + ~12; IVF-PQ m code bytes "
          "+ 8 id bytes; checked against the measured files below) and the full corpora's index sizes "
          "(extrapolated: bytes per vector x passages):")
        p("")
        p("| model (width) | flat | HNSW M=32 | IVF-PQ m=64 | Housing flat | Housing IVF-PQ | CRUMB 8 tasks flat "
          "| CRUMB 8 tasks IVF-PQ |")
        p("|---|---:|---:|---:|---:|---:|---:|---:|")
        housing, crumb = CORPORA["Housing statutes"][0], CORPORA["CRUMB, 8 tasks (bound)"][0]
        for model, spec in MODELS.items():
            d = spec["hidden"]
            flat, hnsw, pq = 4 * d, 4 * d + 4 * (2 * 32 + 1) + 12, 64 + 8
            p(f"| {model} ({d}) | {flat:,} B | {hnsw:,} B | {pq} B | {_size(flat * housing)} | "
              f"{_size(pq * housing)} | {_size(flat * crumb)} | {_size(pq * crumb)} |")
        for f in args.indexes:
            _index_table(json.loads(Path(f).read_text()))


def _index_table(data: dict) -> None:
    p = print
    r0 = data["indexes"][0]
    p("")
    p(f"Measured: {data['encoder']} embeddings of {data['embeddings']} ({r0['documents']:,} documents x "
      f"{r0['dim']}), {r0['queries']} topics of {data['topics']}"
      + (f", qrels {data['qrels']}" if data.get("qrels") else "") + ":")
    p("")
    extra = data.get("qrels") is not None
    p("| index | size | bytes/vector | build | q/s (2 threads) | recall@10 vs flat | recall@100 vs flat |"
      + (" nDCG@10 | R@100 |" if extra else ""))
    p("|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if extra else ""))
    for r in data["indexes"]:
        p(f"| {r['index']} | {_size(r['index_bytes'])} | {r['bytes_per_vector']:,.0f} | {r['build_s']:.1f} s | "
          f"{r['qps']:,.0f} | {r['recall@10_vs_flat']:.3f} | {r['recall@100_vs_flat']:.3f} |"
          + (f" {100 * r['ndcg_cut_10']:.1f} | {100 * r['recall_100']:.1f} |" if extra else ""))
    p("")
    p(f"Command: `{data['command']}`")


def _gpu_rate(r: dict, measured: dict, tok: dict, args) -> tuple[float, str]:
    """Sequences/s of one GPU: measured when a GPU run was given, else extrapolated from FLOPs."""
    m = measured.get((r["model"], r["length"]))
    if m is not None:
        return m["sequences_per_s"], f"measured on {m.get('gpu', 'GPU')}"
    rate = GPU_PEAK * args.utilisation / r["flops_per_token"] / r["length"]
    cap = tok.get(r["length"], math.inf) * args.host_cores
    if cap < rate:
        return cap, "extrapolated: bound by tokenisation"
    return rate, "extrapolated: FLOPs at the assumed utilisation"


def _save(path: str | None, data: dict) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(data, indent=1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("encoders", help="measure encoder throughput")
    e.add_argument("--device", default="cpu")
    e.add_argument("--threads", type=int, default=2)
    e.add_argument("--dtype", default=None, choices=["float32", "float16", "bfloat16"],
                   help="weights and activations [float32 on CPU, float16 on CUDA]")
    e.add_argument("--batch", type=int, default=16, help="sequences per batch (BERT-sized models)")
    e.add_argument("--batch-7b", type=int, default=4, help="sequences per batch (the 7B architecture)")
    e.add_argument("--mistral-layers", type=int, default=2, help="layers of the 7B architecture actually built")
    e.add_argument("--min-seconds", type=float, default=20.0, help="time each measurement at least this long")
    e.add_argument("--models", default=None, help="comma-separated subset of: " + ", ".join(MODELS))
    e.add_argument("--tokenizer-only", action="store_true", help="measure the tokenizer only")
    e.add_argument("--json", default=None)
    i = sub.add_parser("indexes", help="index sizes and recall cost on an embeddings folder")
    i.add_argument("--embeddings", required=True)
    i.add_argument("--topics", required=True)
    i.add_argument("--qrels", default=None)
    i.add_argument("--judged-only", action="store_true")
    i.add_argument("--work", default="/tmp/legalir-scale-plan")
    i.add_argument("--threads", type=int, default=2)
    i.add_argument("-k", type=int, default=100)
    i.add_argument("--nlist", type=int, default=None, help="IVF lists (default: legalir's, about 4 x sqrt(n))")
    i.add_argument("--pq-m", type=int, nargs="+", default=[48, 96], help="PQ sub-vectors (bytes per vector)")
    i.add_argument("--nprobe", type=int, nargs="+", default=[8, 32])
    i.add_argument("--json", default=None)
    t = sub.add_parser("table", help="the plan in Markdown")
    t.add_argument("--encoders", required=True, nargs="+", help="JSON files of `encoders` (CPU; later ones win)")
    t.add_argument("--gpu-encoders", nargs="*", help="JSON of `encoders --device cuda`, when a GPU was measured")
    t.add_argument("--indexes", nargs="*", help="JSON files of `indexes`")
    t.add_argument("--utilisation", type=float, default=0.35, help="assumed share of the GPU's peak FLOP/s")
    t.add_argument("--usd-per-gpu-hour", type=float, default=3.0)
    t.add_argument("--load-s", type=float, default=60.0, help="assumed seconds for a worker to load the model")
    t.add_argument("--host-cores", type=int, default=8, help="assumed CPU threads tokenising for each GPU")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    {"encoders": cmd_encoders, "indexes": cmd_indexes, "table": cmd_table}[args.cmd](args)


if __name__ == "__main__":
    main()
