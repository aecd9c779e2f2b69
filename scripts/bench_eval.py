"""Speed and peak memory of `legalir eval` against the trec_eval 10.0 binary, side by side.

Both score the same synthetic qrels and run (topics x depth lines, graded
judgements, ties), as separate processes, with the same measures; the script
checks that their outputs are identical, then prints wall-clock time and peak
resident memory of each and the ratios, for 10K, 50K (a typical run: 50
topics x 1,000), 100K and 1M run lines (1,000 topics x 1,000 documents and
200 judgements a topic at 1M), plus the start-up time on a tiny file.
trec_eval is built with -O2, as distributions package it.

    .venv/bin/python scripts/bench_eval.py            # 10K, 50K, 100K, 1M lines
    .venv/bin/python scripts/bench_eval.py --sizes 1000000 --repeat 5

trec_eval 10.0 is built from ../shared/tools/trec_eval-10.0 (or --trec-eval BINARY).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def synth(root: Path, topics: int, depth: int, judged: int, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    docs = [f"doc{i:07d}" for i in range(max(depth * 5, 10000))]
    q, r = root / "qrels.txt", root / "run.trec"
    with open(q, "w") as fq, open(r, "w") as fr:
        for t in range(topics):
            qid = f"q{t}"
            pool = rng.sample(docs, depth + judged // 2)
            for d in rng.sample(pool, judged):
                fq.write(f"{qid} 0 {d} {rng.choice((0, 0, 0, 1, 1, 2, 3))}\n")
            for rank, d in enumerate(pool[:depth], 1):
                score = round(100 - rank * 0.05 + rng.random() * 0.5, 2)  # frequent ties
                fr.write(f"{qid} Q0 {d} {rank} {score} bench\n")
    return q, r


def trec_eval_binary(root: Path) -> str:
    """trec_eval 10.0, built from the nearest ../shared/tools/trec_eval-10.0 in a temporary copy."""
    import shutil

    src = next((p / "shared/tools/trec_eval-10.0" for p in REPO.parents if (p / "shared/tools/trec_eval-10.0").is_dir()),
               None)
    if src is None:
        raise SystemExit("trec_eval 10.0 source not found (../shared/tools/trec_eval-10.0); give --trec-eval BINARY")
    work = root / "te10"
    shutil.copytree(src, work)
    # -O2, as packagers build it: the Makefile's own CFLAGS are -g without optimisation (slower, flattering us)
    subprocess.run(["make", "-s", "-C", str(work), 'CFLAGS=-O2 -I. -Wall -DVERSIONID=\\"10.0\\"'], check=True,
                   capture_output=True)
    return str(work / "trec_eval")


def measure(cmd: list[str]) -> tuple[float, float, str, float]:
    """(seconds, peak RSS in MiB, stdout, CPU seconds: user + system) of one child process."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    # as installed (pip writes .pyc files): an environment with PYTHONDONTWRITEBYTECODE would recompile
    # every module on every start (~20 ms here), which no installed legalir does
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"{cmd[0]} failed (status {status})")
    return dt, usage.ru_maxrss / 1024, out.decode(), usage.ru_utime + usage.ru_stime


SIZES = {10_000: (100, 100, 20), 50_000: (50, 1000, 100), 100_000: (100, 1000, 200),
         1_000_000: (1000, 1000, 200)}
MEASURES = ["-m", "ndcg_cut.5,10", "-m", "map", "-m", "recip_rank", "-m", "P.5,10", "-m", "recall.100,1000"]
CASES = {
    "5 measures -q": ["-q", *MEASURES],
    "official": [],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=sorted(SIZES), choices=sorted(SIZES),
                    help="run lines (10000: 100 topics x 100; 50000: 50 x 1000; 100000: 100 x 1000; "
                         "1000000: 1000 x 1000)")
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each tool (best time, max memory kept)")
    ap.add_argument("--trec-eval", help="trec_eval 10.0 binary [default: build ../shared/tools/trec_eval-10.0]")
    ap.add_argument("--json", help="also write the figures to this JSON file")
    args = ap.parse_args()

    legalir = [sys.executable, "-m", "legalir.cli", "eval", "--quiet"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        te = args.trec_eval or trec_eval_binary(root)
        results = []
        from legalir import trec

        reader = "C (legalir._plain)" if trec.model._fast is not None else "Python (legalir._plain not built)"
        print(f"{args.repeat} runs each, side by side; best wall time, best CPU time (user + system: steadier on a "
              f"busy machine), peak RSS; legalir's reader: {reader}")
        print(f"{'lines':>9} {'case':<16} {'trec_eval':>10} {'legalir':>10} {'ratio':>6} {'te CPU':>7} {'li CPU':>7} "
              f"{'ratio':>6} {'te MiB':>7} {'li MiB':>7} {'MiB ratio':>9}")
        tiny = root / "tiny"
        tiny.mkdir()
        tq, tr = synth(tiny, 2, 3, 2, args.seed)
        for size in args.sizes:
            topics, depth, judged = SIZES[size]
            d = root / str(size)
            d.mkdir()
            q, r = synth(d, topics, depth, judged, args.seed)
            for name in args.cases:
                flags = CASES[name]
                te_t, te_m, li_t, li_m, te_c, li_c = [], [], [], [], [], []
                for _ in range(args.repeat):
                    t, m, ref, c = measure([te, *flags, str(q), str(r)])
                    te_t.append(t), te_m.append(m), te_c.append(c)
                    t, m, ours, c = measure([*legalir, *flags, str(q), str(r)])
                    li_t.append(t), li_m.append(m), li_c.append(c)
                    if ours != ref:
                        raise SystemExit(f"{size} {name}: legalir and trec_eval outputs differ")
                row = {"lines": size, "case": name, "trec_eval_s": min(te_t), "legalir_s": min(li_t),
                       "ratio": min(li_t) / min(te_t), "trec_eval_cpu_s": min(te_c), "legalir_cpu_s": min(li_c),
                       "cpu_ratio": min(li_c) / max(min(te_c), 1e-3), "trec_eval_mib": max(te_m),
                       "legalir_mib": max(li_m), "mib_ratio": max(li_m) / max(te_m), "reader": reader}
                results.append(row)
                print(f"{size:>9,} {name:<16} {row['trec_eval_s']:>9.3f}s {row['legalir_s']:>9.3f}s "
                      f"{row['ratio']:>5.2f}x {row['trec_eval_cpu_s']:>6.3f}s {row['legalir_cpu_s']:>6.3f}s "
                      f"{row['cpu_ratio']:>5.2f}x {row['trec_eval_mib']:>7.0f} {row['legalir_mib']:>7.0f} "
                      f"{row['mib_ratio']:>8.2f}x")
        te_t = min(measure([te, str(tq), str(tr)])[0] for _ in range(args.repeat))
        li_t = min(measure([*legalir, str(tq), str(tr)])[0] for _ in range(args.repeat))
        results.append({"lines": "tiny", "case": "start-up", "trec_eval_s": te_t, "legalir_s": li_t})
        print(f"{'tiny':>9} {'start-up':<16} {te_t:>9.3f}s {li_t:>9.3f}s {li_t / te_t:>5.1f}x")
        print("outputs identical in every case")
        if args.json:
            Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
