"""Speed and peak memory of `legalir eval` against the trec_eval 9.0.4 binary, side by side.

Both score the same synthetic qrels and run (``--topics`` x ``--depth``
lines, graded judgements, ties), as separate processes, with the same
measures; the script checks that their outputs are identical, then prints
wall-clock time and peak resident memory of each and the ratios.

    .venv/bin/python scripts/bench_eval.py --topics 2000 --depth 1000

The trec_eval binary is extracted from the Anserini jar that pyserini ships.
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
import zipfile
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
    from legalir.jvm import anserini_jar

    out = root / "trec_eval"
    with zipfile.ZipFile(anserini_jar()) as z:
        out.write_bytes(z.read("trec_eval/trec_eval-linux-amd64"))
    out.chmod(0o755)
    return str(out)


def measure(cmd: list[str]) -> tuple[float, float, str]:
    """(seconds, peak RSS in MiB, stdout) of one child process."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"{cmd[0]} failed (status {status})")
    return dt, usage.ru_maxrss / 1024, out.decode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topics", type=int, default=2000)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--judged", type=int, default=100, help="judgements per topic")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each tool (best time, max memory kept)")
    ap.add_argument("--json", help="also write the figures to this JSON file")
    args = ap.parse_args()

    legalir = str(REPO / ".venv" / "bin" / "legalir")
    cases = {
        "official": [],
        "ndcg_cut.5,10 map recip_rank P.5,10 recall.100,1000 -q": ["-q", "-m", "ndcg_cut.5,10", "-m", "map",
                                                                 "-m", "recip_rank", "-m", "P.5,10",
                                                                 "-m", "recall.100,1000"],
        "all_trec -J -c": ["-J", "-c", "-m", "all_trec"],
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        q, r = synth(root, args.topics, args.depth, args.judged, args.seed)
        te = trec_eval_binary(root)
        lines = sum(1 for _ in open(r))
        print(f"run: {lines:,} lines ({args.topics} topics x {args.depth}), qrels: {args.topics * args.judged:,} "
              f"lines; {args.repeat} runs each, best time, peak RSS")
        print(f"{'measures':<56} {'trec_eval':>10} {'legalir':>10} {'ratio':>6} {'te MiB':>8} {'li MiB':>8}")
        results = []
        for name, flags in cases.items():
            te_t, te_m, li_t, li_m = [], [], [], []
            for _ in range(args.repeat):
                t, m, ref = measure([te, *flags, str(q), str(r)])
                te_t.append(t), te_m.append(m)
                t, m, ours = measure([legalir, "eval", "--quiet", *flags, str(q), str(r)])
                li_t.append(t), li_m.append(m)
                if ours != ref:
                    raise SystemExit(f"{name}: legalir and trec_eval outputs differ")
            row = {"measures": name, "trec_eval_s": min(te_t), "legalir_s": min(li_t),
                   "ratio": min(li_t) / min(te_t), "trec_eval_mib": max(te_m), "legalir_mib": max(li_m)}
            results.append(row)
            print(f"{name:<56} {row['trec_eval_s']:>9.2f}s {row['legalir_s']:>9.2f}s {row['ratio']:>5.1f}x "
                  f"{row['trec_eval_mib']:>8.0f} {row['legalir_mib']:>8.0f}")
        print("outputs identical in every case")
        if args.json:
            Path(args.json).write_text(json.dumps({"args": vars(args), "lines": lines, "results": results},
                                                  indent=1) + "\n")


if __name__ == "__main__":
    main()
