#!/usr/bin/env python3
"""BM25 search benchmark: `legalir search` against Anserini's own SearchCollection, side by side.

    python scripts/bench_search.py --scale 0.1 --repeat 3 [--heap 2g] [--work /tmp/legalir-bench-search]

Builds the synthetic Bar Exam release (scripts/synth_barexam.py; 85,700
passages and 954 long train questions at --scale 0.1), its collection and
one Lucene index with `legalir` (not timed), then runs, interleaved
(A B, B A, A B, ...: both sides see the same drift of a shared machine):

* `legalir search INDEX train.tsv RUN -k DEPTH --threads T`;
* `java -cp <Anserini fat jar that legalir uses> io.anserini.search.SearchCollection
  -index INDEX -topics train.tsv -topicReader TsvString -bm25 -hits DEPTH
  -threads T` (the same jar, index and topics; BM25 k1=0.9, b=0.4 on both).

Each run is timed as a whole process (JVM start-up included on both sides);
peak memory is the resident set of the process tree, sampled every 50 ms
(scripts/bench_scale.py's `measure`). Both JVMs get the same maximum heap:
Java's default (1/4 of RAM) unless --heap caps both (`-Xmx` for
SearchCollection, LEGALIR_JVM_HEAP for legalir).

Prints the best-of-N wall time, CPU time (user + system: what a loaded
machine disturbs least) and peak RSS of each side and the ratios
legalir / SearchCollection, and checks that both runs hold the same
(topic, document, score) triples (the order of tied documents differs by
design: legalir ranks ties as trec_eval reads them, docid descending).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_scale import measure  # noqa: E402


def triples(path: Path) -> set[tuple[str, str, str]]:
    out = set()
    with open(path) as f:
        for line in f:
            q, _, d, _, s, _ = line.split()
            out.add((q, d, s))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=0.1, help="fraction of the real Bar Exam size [0.1]")
    ap.add_argument("--work", type=Path, default=Path("/tmp/legalir-bench-search"), help="scratch folder")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each side (interleaved) [3]")
    ap.add_argument("--threads", type=int, default=2, help="search threads on both sides [2]")
    ap.add_argument("--depth", type=int, default=1000, help="hits per topic [1000]")
    ap.add_argument("--topics", default="train", help="Bar Exam topic set [train: 954 long questions at 0.1]")
    ap.add_argument("--heap", help="cap both JVMs' heap (e.g. 2g) [Java's default: 1/4 of RAM]")
    ap.add_argument("--keep", action="store_true", help="keep the data, collection and index for the next run")
    ap.add_argument("--out", type=Path, default=REPO / "results" / "bench_search.json")
    args = ap.parse_args(argv)

    from legalir.base import jvm

    py = sys.executable
    d = args.work / f"s{args.scale:g}"
    index, coll = d / "i_barexam", d / "c_barexam"
    if not (index / "legalir-index.json").exists():
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        print("building data, collection and index (not timed) ...", file=sys.stderr, flush=True)
        subprocess.run([py, str(REPO / "scripts/synth_barexam.py"), str(d / "data"), "--scale", str(args.scale)],
                       check=True)
        subprocess.run([py, "-m", "legalir.cli", "convert", "barexam_qa", "--data-dir", str(d / "data"), "--out",
                        str(coll), "--quiet"], check=True)
        subprocess.run([py, "-m", "legalir.cli", "index", str(coll), str(index), "--threads", str(args.threads)],
                       check=True)
    topics = coll / "topics" / f"{args.topics}.tsv"
    n_topics = sum(1 for _ in open(topics))
    n_docs = json.loads((coll / "manifest.json").read_text())["documents"]["written"]

    env = {k: v for k, v in os.environ.items() if k != "LEGALIR_JVM_HEAP"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    if args.heap:
        env["LEGALIR_JVM_HEAP"] = args.heap
    java = str(Path(jvm.java_home()) / "bin" / "java")
    sides = {
        "legalir": [py, "-m", "legalir.cli", "search", str(index), str(topics), str(d / "legalir.trec"),
                    "-k", str(args.depth), "--threads", str(args.threads)],
        "SearchCollection": [java] + ([f"-Xmx{args.heap}"] if args.heap else [])
        + ["-cp", jvm.anserini_jar(), "--sun-misc-unsafe-memory-access=allow", "io.anserini.search.SearchCollection",
           "-index", str(index), "-topics", str(topics), "-topicReader", "TsvString",
           "-output", str(d / "anserini.trec"), "-bm25", "-hits", str(args.depth), "-threads", str(args.threads)],
    }
    log = d / "bench_search.log"
    runs: dict[str, list[dict]] = {k: [] for k in sides}
    for i in range(args.repeat):
        order = list(sides) if i % 2 == 0 else list(sides)[::-1]
        for name in order:
            runs[name].append(measure(sides[name], log, env=env))
            print(f"round {i + 1}: {name}: {runs[name][-1]}", file=sys.stderr, flush=True)

    same = triples(d / "legalir.trec") == triples(d / "anserini.trec")
    best = {k: min(v, key=lambda r: r["seconds"]) for k, v in runs.items()}
    peak = {k: min(r["peak_rss_mb"] for r in v) for k, v in runs.items()}
    a, b = "legalir", "SearchCollection"
    doc = {
        "machine": {"cpus": os.cpu_count(), "loadavg_end": os.getloadavg()},
        "scale": args.scale, "documents": n_docs, "topics": n_topics, "depth": args.depth, "threads": args.threads,
        "heap": args.heap or "java default (1/4 of RAM)", "runs": runs,
        "best_seconds": {k: v["seconds"] for k, v in best.items()},
        "median_seconds": {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()},
        "min_peak_rss_mb": peak,
        "time_ratio": round(best[a]["seconds"] / best[b]["seconds"], 3),
        "median_time_ratio": round(statistics.median(r["seconds"] for r in runs[a])
                                   / statistics.median(r["seconds"] for r in runs[b]), 3),
        "memory_ratio": round(peak[a] / peak[b], 3),
        "min_cpu_seconds": {k: min(r["cpu_seconds"] for r in v) for k, v in runs.items()},
        "cpu_ratio": round(min(r["cpu_seconds"] for r in runs[a]) / min(r["cpu_seconds"] for r in runs[b]), 3),
        "same_results": same,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"Bar Exam (synthetic, scale {args.scale:g}): {n_docs:,} passages, {n_topics} {args.topics} topics, "
          f"depth {args.depth}, {args.threads} threads, heap {doc['heap']}, best of {args.repeat} interleaved")
    for k in sides:
        print(f"  {k:17s} {best[k]['seconds']:7.2f} s (median {doc['median_seconds'][k]:.2f}), "
              f"CPU {doc['min_cpu_seconds'][k]:7.2f} s, peak {peak[k]:8.1f} MB")
    print(f"  legalir / SearchCollection: time {doc['time_ratio']:.2f}x (medians {doc['median_time_ratio']:.2f}x), "
          f"CPU {doc['cpu_ratio']:.2f}x, peak memory {doc['memory_ratio']:.2f}x; same (topic, docid, score) triples: {same}")
    print(f"(load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores; "
          f"JSON: {args.out})")
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    if not same:
        raise SystemExit("legalir and SearchCollection runs differ")


if __name__ == "__main__":
    main()
