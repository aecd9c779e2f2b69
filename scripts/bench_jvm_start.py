"""What the JVM's class archive (scripts/jvm_archive.py, `make setup`) and log4j's simple logger (``jvm.SEARCH_ONLY``,
which `legalir search` asks for) save a short command: `legalir search` of the embedded sample's test topics, run as
it is, without the archive (`-Xshare:off`) and with log4j-core instead of the simple logger, alternated, ROUNDS
times each.

    python scripts/bench_jvm_start.py [--rounds 5] [--tiered-stop 1]

Prints wall and CPU seconds (user + system, the command and its children) per run, the median of each and their
ratio, and the peak resident memory. Needs the archive built (`python scripts/jvm_archive.py`).
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(cmd: list[str], env: dict) -> tuple[float, float, int]:
    """Run ``cmd`` (its output dropped; its stderr shown if it fails, then exit): wall seconds, CPU seconds (user +
    system), and the peak resident memory (KiB) of this process's children so far. (scripts/bench_exit.py too.)"""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)}: exit status {done.returncode}\n{done.stderr}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tiered-stop", type=int, default=0,
                    help="also pass -XX:TieredStopAtLevel=N (1: the test suite's JVMs); 0: the JVM's default JIT")
    a = ap.parse_args()
    from legalir.base import jvm

    archive = jvm.class_archive()
    if not archive.is_file():
        print(f"error: {archive}: no class archive; build it: python scripts/jvm_archive.py", file=sys.stderr)
        return 2
    cli = [sys.executable, "-m", "legalir.cli", "-q"]
    user = os.environ.get("LEGALIR_JVM_OPTIONS", "")
    extra = f" -XX:TieredStopAtLevel={a.tiered_stop}" if a.tiered_stop else ""
    with tempfile.TemporaryDirectory(prefix="legalir-bench-jvm-") as tmp:
        t = Path(tmp)
        subprocess.run([*cli, "convert", "sample", "--data-dir", str(t / "none"), "--out", str(t / "c")], check=True)
        subprocess.run([*cli, "index", str(t / "c"), str(t / "i"), "--threads", "1"], check=True)
        search = [*cli, "search", str(t / "i"), str(t / "c" / "topics" / "test.jsonl"), str(t / "run.trec"), "-k", "100",
                  "--force"]
        core = " -Dlog4j2.loggerContextFactory=org.apache.logging.log4j.core.impl.Log4jContextFactory"
        variants = (("archive", ""), ("no archive", " -Xshare:off"), ("archive, log4j-core", core))
        got: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in variants}
        peak = {}
        for _ in range(a.rounds):
            for name, opt in variants:
                env = {**os.environ, "LEGALIR_JVM_OPTIONS": f"{user}{extra}{opt}".strip()}
                wall, cpu, rss = run(search, env)
                got[name].append((wall, cpu))
                peak[name] = rss
    print(f"legalir search, embedded sample (4 topics, 30 documents), {a.rounds} runs each, alternated; "
          f"JIT: {'C1 only' if a.tiered_stop == 1 else 'default'}; load {os.getloadavg()[0]:.1f}")
    print("| JVM | wall s (median) | CPU s (median) |")
    print("|---|---|---|")
    med = {}
    for name, runs in got.items():
        med[name] = (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
        print(f"| {name} | {med[name][0]:.2f} | {med[name][1]:.2f} |")
    for other in ("no archive", "archive, log4j-core"):
        print(f"| archive / {other} | {med['archive'][0] / med[other][0]:.2f}x | "
              f"{med['archive'][1] / med[other][1]:.2f}x |")
    print(f"peak resident memory of a child (max over runs): {max(peak.values()) / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
