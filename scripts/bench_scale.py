#!/usr/bin/env python3
"""Scale benchmark: conversion, per-jurisdiction indexing and search at growing fractions of the real size.

    python scripts/bench_scale.py --scales 0.025,0.05,0.1 --work /tmp/legalir-bench [--reference]

For each scale it generates the synthetic releases (scripts/synth_housing.py,
scripts/synth_barexam.py; generation is not timed), then times, each as its
own `legalir` process as the Makefile runs them:

* Housing: `legalir convert housing_qa` (stream statutes.tsv out of the zip
  into 51 corpus folders), `legalir index` (51 Lucene indexes, what
  `make index-housing` runs), `legalir search` (each question in its own
  jurisdiction, depth 1000);
* Bar Exam: `legalir convert barexam_qa` (union of three TSVs), `legalir index`.

Peak memory is the resident set of the whole process tree (the JVM runs
inside the Python process), sampled every 50 ms from /proc, and never less
than the kernel's own peak (ru_maxrss of the waited process).

`--reference` adds, at the largest scale, the reference tools run side by
side on the same inputs: Anserini's IndexCollection (`java -cp <fat jar>`,
the same flags legalir passes, one JVM per jurisdiction as a user would run
it by hand) against `legalir index`, and a pandas script
(`read_csv(zip, sep="\\t")` then `to_json(lines=True)` per jurisdiction, the
usual hand-written conversion) against `legalir convert`.

Results: a table on stdout and JSON in --out. The machine is shared: note the
load average printed with the results.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
FULL = {"housing": 1_837_403, "barexam": 857_000}


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _tree_rss_kb(pid: int) -> int:
    kids, total, todo = _children(), 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(kids.get(p, []))
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


def measure(cmd: list[str], log: Path, env: dict | None = None) -> dict:
    """Run ``cmd``; wall seconds, peak RSS (MB) of its process tree, CPU seconds (user + system) of the process."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    with open(log, "a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        peak = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, _tree_rss_kb(proc.pid))
            time.sleep(0.05)
        seconds = time.monotonic() - t0
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        raise SystemExit(f"failed ({rc}): {' '.join(cmd)}; see {log}")
    return {"seconds": round(seconds, 2), "peak_rss_mb": round(max(peak, usage.ru_maxrss) / 1024, 1),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2)}


def du_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6, 1)


PANDAS_CONVERT = textwrap.dedent("""
    import sys, zipfile, pandas as pd, pathlib
    src, out = sys.argv[1], pathlib.Path(sys.argv[2])
    with zipfile.ZipFile(src) as zf, zf.open("statutes.tsv") as f:
        df = pd.read_csv(f, sep="\\t", dtype=str, keep_default_na=False)
    df["id"] = df["idx"]
    df["contents"] = df["citation"] + "\\n" + df["path"] + "\\n" + df["text"]
    for state, part in df.groupby("state"):
        d = out / state.replace(" ", "_")
        d.mkdir(parents=True, exist_ok=True)
        part[["id", "contents", "state", "citation"]].to_json(d / "docs.jsonl", orient="records", lines=True,
                                                              force_ascii=False)
""")


def reference_index(collection: Path, out: Path, log: Path, threads: int) -> dict:
    """Anserini's IndexCollection from its fat jar, one JVM per jurisdiction, the flags legalir uses."""
    sys.path.insert(0, str(REPO))
    from legalir.base import jvm

    java = Path(jvm.java_home()) / "bin" / "java"
    script = out.parent / "reference_index.sh"
    lines = ["set -e"]
    for part in sorted(p for p in (collection / "corpus").iterdir() if p.is_dir()):
        lines.append(f"{java} -cp {jvm.anserini_jar()} --sun-misc-unsafe-memory-access=allow "
                     f"io.anserini.index.IndexCollection -collection JsonCollection "
                     f"-generator DefaultLuceneDocumentGenerator -input {part} -index {out / part.name} "
                     f"-threads {threads} -storePositions -storeDocvectors -storeRaw -quiet")
    script.write_text("\n".join(lines) + "\n")
    return measure(["bash", str(script)], log)


def run_scale(scale: float, work: Path, threads: int, log: Path, reference: bool) -> dict:
    d = work / f"s{scale:g}"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    legalir = str(BIN / "legalir")
    py = sys.executable
    res: dict = {"scale": scale}
    t0 = time.monotonic()
    subprocess.run([py, str(REPO / "scripts/synth_housing.py"), str(d / "data"), "--scale", str(scale)], check=True)
    subprocess.run([py, str(REPO / "scripts/synth_barexam.py"), str(d / "data"), "--scale", str(scale)], check=True)
    res["generate_seconds"] = round(time.monotonic() - t0, 1)

    h = {"statutes": int(round(FULL["housing"] * scale))}
    h["convert"] = measure([legalir, "convert", "housing_qa", "--data-dir", str(d / "data"), "--out",
                            str(d / "c_housing"), "--quiet"], log)
    manifest = json.loads((d / "c_housing/manifest.json").read_text())
    h["statutes"] = manifest["documents"]["written"]
    h["jurisdictions"] = len(manifest["partitions"])
    h["zip_mb"] = round((d / "data/housing_qa/data/statutes.tsv.zip").stat().st_size / 1e6, 1)
    h["collection_mb"] = du_mb(d / "c_housing")
    h["index"] = measure([legalir, "index", str(d / "c_housing"), str(d / "i_housing"), "--threads", str(threads)], log)
    h["index_mb"] = du_mb(d / "i_housing")
    h["search"] = measure([legalir, "search", str(d / "i_housing"), str(d / "c_housing/topics/test.jsonl"),
                           str(d / "housing.trec"), "-k", "1000", "--threads", str(threads)], log)
    h["questions"] = manifest["topics"]["test"]
    res["housing"] = h

    b = {}
    b["convert"] = measure([legalir, "convert", "barexam_qa", "--data-dir", str(d / "data"), "--out",
                            str(d / "c_barexam"), "--quiet"], log)
    b["passages"] = json.loads((d / "c_barexam/manifest.json").read_text())["documents"]["written"]
    b["index"] = measure([legalir, "index", str(d / "c_barexam"), str(d / "i_barexam"), "--threads", str(threads)], log)
    b["index_mb"] = du_mb(d / "i_barexam")
    res["barexam"] = b

    if reference:
        res["reference"] = {
            "housing_index_anserini": reference_index(d / "c_housing", d / "ref_index", log, threads),
            "housing_convert_pandas": measure([py, "-c", PANDAS_CONVERT,
                                               str(d / "data/housing_qa/data/statutes.tsv.zip"), str(d / "ref_c")], log),
        }
    return res


def table(results: list[dict]) -> str:
    rows = ["| scale | statutes | convert s | convert MB | index-housing s | index MB (peak RSS) | search s "
            "(questions) | Bar Exam passages | convert s (MB) | index s (MB) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        h, b = r["housing"], r["barexam"]
        rows.append(f"| {r['scale']:g} | {h['statutes']:,} | {h['convert']['seconds']} | {h['convert']['peak_rss_mb']} "
                    f"| {h['index']['seconds']} | {h['index']['peak_rss_mb']} | {h['search']['seconds']} "
                    f"({h['questions']}) | {b['passages']:,} | {b['convert']['seconds']} "
                    f"({b['convert']['peak_rss_mb']}) | {b['index']['seconds']} ({b['index']['peak_rss_mb']}) |")
    last = results[-1]
    if "reference" in last:
        ref, h = last["reference"], last["housing"]
        ai, pc = ref["housing_index_anserini"], ref["housing_convert_pandas"]
        rows.append("")
        rows.append(f"Reference tools at scale {last['scale']:g}: Anserini IndexCollection (one JVM per jurisdiction) "
                    f"{ai['seconds']} s, {ai['peak_rss_mb']} MB -> legalir index / Anserini = "
                    f"{h['index']['seconds'] / ai['seconds']:.2f}x time, "
                    f"{h['index']['peak_rss_mb'] / ai['peak_rss_mb']:.2f}x memory; "
                    f"pandas read_csv + to_json {pc['seconds']} s, {pc['peak_rss_mb']} MB -> legalir convert / pandas "
                    f"= {h['convert']['seconds'] / pc['seconds']:.2f}x time, "
                    f"{h['convert']['peak_rss_mb'] / pc['peak_rss_mb']:.2f}x memory")
    return "\n".join(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scales", default="0.025,0.05,0.1", help="fractions of the real size [0.025,0.05,0.1]")
    ap.add_argument("--work", type=Path, default=Path("/tmp/legalir-bench"), help="scratch folder (deleted at the end)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reference", action="store_true", help="also time the reference tools at the largest scale")
    ap.add_argument("--keep", action="store_true", help="keep the generated data, collections and indexes")
    ap.add_argument("--out", type=Path, default=REPO / "results" / "bench_scale.json")
    args = ap.parse_args(argv)
    scales = [float(s) for s in args.scales.split(",")]
    args.work.mkdir(parents=True, exist_ok=True)
    log = args.work / "bench.log"
    results = []
    for i, s in enumerate(scales):
        print(f"scale {s:g} ...", file=sys.stderr, flush=True)
        results.append(run_scale(s, args.work, args.threads, log, args.reference and i == len(scales) - 1))
        results[-1]["loadavg"] = os.getloadavg()
        print(json.dumps(results[-1]), file=sys.stderr, flush=True)
        if not args.keep:
            shutil.rmtree(args.work / f"s{s:g}", ignore_errors=True)
    doc = {"machine": {"cpus": os.cpu_count(), "loadavg_end": os.getloadavg()}, "threads": args.threads,
           "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(table(results))
    print(f"\n(load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores; "
          f"JSON: {args.out})")


if __name__ == "__main__":
    main()
