#!/usr/bin/env python3
"""`legalir index update` against a full rebuild, on the synthetic Housing data: time, peak memory, same runs.

    python scripts/bench_update.py --scale 0.01 --changes 300 --repeat 3
    python scripts/bench_update.py --scale 0.01 --changes 300 --states 3   # the changes in 3 jurisdictions
    python scripts/bench_update.py --scale 0.01 --pooled          # the one pooled index instead of 51

Set-up (not timed; skipped when --work already holds it): ``scripts/synth_housing.py`` writes a
synthetic Housing release at ``--scale`` (51 jurisdictions, pools skewed like the real ones),
``legalir convert`` makes the collection, ``legalir index`` the per-jurisdiction (or ``--pooled``)
Lucene index.

Each repeat draws a change set of ``--changes`` documents over the jurisdictions (a third added, a
third replaced by new text, a third deleted; seeded), then times, each in its own process:

* **update**: ``legalir index update INDEX --add --replace --delete`` on a copy of the index;
* **rebuild**: ``legalir index COLLECTION'`` of the updated collection (written untimed beforehand
  by legalir's own converter), what one would run without updates.

It reports the median wall time of each, their ratio and each process's peak RSS (JVM included),
and checks that BM25 runs of the questions over both indexes are the same bytes. The machine may be
shared: the load average is printed with the results.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

#: runs one legalir command in this process and prints its peak RSS (the JVM lives in-process)
RUN = ("import resource, sys; from legalir.cli import main\n"
       "try: main(sys.argv[1:], prog_name='legalir')\n"
       "except SystemExit as e: code = e.code\n"
       "print('maxrss_kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
       "sys.exit(code)")


def legalir(args: list, log: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (MB) of ``legalir ARGS`` in a fresh process."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", RUN, *map(str, args)], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    with open(log, "a") as f:
        f.write(f"$ legalir {' '.join(map(str, args))}\n{p.stdout}{p.stderr}")
    if p.returncode != 0:
        raise SystemExit(f"legalir {' '.join(map(str, args))} failed:\n{p.stderr[-2000:]}")
    rss = next(int(line.split()[1]) for line in p.stderr.splitlines() if line.startswith("maxrss_kb"))
    return wall, rss // 1024


def setup(work: Path, scale: float, pooled: bool, log: Path) -> tuple[Path, Path]:
    data, coll, index = work / "data", work / "collection", work / ("pooled" if pooled else "bm25")
    if not (data / "housing_qa").exists():
        subprocess.run([sys.executable, str(REPO / "scripts" / "synth_housing.py"), str(data), "--scale", str(scale)],
                       check=True, stdout=subprocess.DEVNULL)
    if not (coll / "manifest.json").exists():
        legalir(["convert", "housing_qa", "--data-dir", data, "--out", coll, "--quiet"], log)
    if not index.exists():
        legalir(["index", coll, index, "--threads", "2", *(["--pooled"] if pooled else [])], log)
    return coll, index


def change_set(coll: Path, n: int, seed: int, folder: Path, states: int | None):
    """(adds, replaces, deletes) over ``states`` jurisdictions (all: None), and the updated documents."""
    from _synth import TextSource

    from legalir import collections

    docs = {r["id"]: {k: v for k, v in r.items() if k not in ("citations", "filters")}
            for r in collections.iter_documents(coll)}
    rng = random.Random(seed)
    pool = sorted({d["state"] for d in docs.values()})
    chosen = set(rng.sample(pool, states)) if states else set(pool)
    ids = rng.sample(sorted(d for d, r in docs.items() if r["state"] in chosen), 2 * (n // 3))
    replaced, deleted = ids[: n // 3], ids[n // 3:]
    text = TextSource(seed, 160).texts(n)
    adds = [{"id": f"new-{seed}-{i}", "contents": text[i], "state": rng.choice(sorted(chosen)),
             "citation": f"New Stat. § {seed}.{i}"} for i in range(n - 2 * (n // 3))]
    reps = [{**docs[d], "contents": text[len(adds) + i]} for i, d in enumerate(replaced)]
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("add", adds), ("replace", reps)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "delete.txt").write_text("".join(d + "\n" for d in deleted))
    for d in deleted:
        del docs[d]
    for r in [*reps, *adds]:
        docs[r["id"]] = r
    return folder, docs


def write_collection(docs: dict, data: Path, out: Path) -> None:
    from legalir import collections
    from legalir.datasets.dataset import Document
    from legalir.datasets.housing import HousingQA

    class Updated(HousingQA):
        def documents(self):
            for d in docs.values():
                yield Document(d["id"], d["contents"], {k: v for k, v in d.items() if k not in ("id", "contents")})

    collections.write(Updated(data / "housing_qa"), out, quiet=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=0.01, help="Fraction of the real Housing size [0.01: ~18,400].")
    ap.add_argument("--changes", type=int, default=300, help="Documents changed per update (thirds: add/replace/delete).")
    ap.add_argument("--states", type=int, default=None,
                    help="Confine the changes to this many jurisdictions (drawn per repeat) [default: all 51].")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pooled", action="store_true", help="One pooled index instead of one per jurisdiction.")
    ap.add_argument("--work", type=Path, default=Path("/tmp/legalir-bench-update"))
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    log = args.work / "log.txt"
    coll, index = setup(args.work, args.scale, args.pooled, log)
    from legalir.indexing import sparse

    n_docs = sum(sparse.num_docs(index / k) for k in sparse.partitions(index)) if not args.pooled else \
        sparse.num_docs(index)
    upd_t, upd_m, reb_t, reb_m = [], [], [], []
    extra = ["--pooled"] if args.pooled else []
    for r in range(args.repeat):
        rdir = args.work / f"round{r}"
        shutil.rmtree(rdir, ignore_errors=True)
        changes, docs = change_set(coll, args.changes, r, rdir / "changes", args.states)
        write_collection(docs, args.work / "data", rdir / "collection")
        copy = rdir / "index"
        shutil.copytree(index.resolve(), copy.with_name("index.v1"))
        os.symlink("index.v1", copy)
        t, m = legalir(["index", "update", copy, "--add", changes / "add.jsonl", "--replace", changes / "replace.jsonl",
                        "--delete", changes / "delete.txt", "--threads", "2", "--quiet"], log)
        upd_t.append(t), upd_m.append(m)
        t, m = legalir(["index", rdir / "collection", rdir / "rebuilt", "--threads", "2", *extra], log)
        reb_t.append(t), reb_m.append(m)
        topics = coll / "topics" / "test.jsonl"
        for name in ("index", "rebuilt"):
            legalir(["search", rdir / name, topics, rdir / f"{name}.trec", "-k", "100", "--threads", "2"], log)
        same = (rdir / "index.trec").read_bytes() == (rdir / "rebuilt.trec").read_bytes()
        print(f"round {r}: update {upd_t[-1]:.1f} s ({upd_m[-1]} MB), rebuild {reb_t[-1]:.1f} s ({reb_m[-1]} MB), "
              f"runs identical: {same}", flush=True)
        if not same:
            raise SystemExit(f"the runs differ: {rdir / 'index.trec'} vs {rdir / 'rebuilt.trec'}")
    u, b = statistics.median(upd_t), statistics.median(reb_t)
    layout = "pooled index" if args.pooled else "one index per jurisdiction"
    where = f"in {args.states} jurisdiction(s)" if args.states else "over all jurisdictions"
    print(f"\n{n_docs:,} statutes ({layout}), {args.changes} changed documents {where}, median of {args.repeat}:")
    print(f"  update  {u:6.1f} s  peak {max(upd_m):5d} MB")
    print(f"  rebuild {b:6.1f} s  peak {max(reb_m):5d} MB")
    print(f"  update / rebuild: {u / b:.2f}x time, {max(upd_m) / max(reb_m):.2f}x peak memory; runs identical")
    print(f"  load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
