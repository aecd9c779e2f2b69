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

Releases of a code (``--releases``): the collections of a code's releases, oldest first (``legalir convert
statutes --option release=NN``), are indexed once (the oldest) and brought forward with ``legalir index
update --to`` one release at a time; each release is also indexed afresh. Per release it reports the
update's and the fresh index's wall time and peak RSS and their ratios, the disk the index of every release
takes (``du``, hard links counted once) and the fresh index's, and checks that searching the updated index
``--as-of`` each release gives the fresh index's run, byte for byte (``legalir search ... -k 100 --citations
on``). Then, in one process, the topics/s of the current version and as of a past release (the same topics,
alternated, ``--speed-rounds`` each)::

    python scripts/bench_update.py --releases /work/data/releases/coll2/ga{70..86} --work /work/data/releases/bench
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


def du(path: Path) -> int:
    """Bytes under ``path`` (links followed at the top, hard links counted once): what ``du -sbD`` says."""
    out = subprocess.run(["du", "-sbD", str(path)], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def release_of(coll: Path) -> str:
    """The release a collection holds (its manifest's)."""
    from legalir import collections

    release = collections.release_of(collections.read_manifest(coll))
    if release is None:
        raise SystemExit(f"{coll}: records no release (legalir convert statutes --option release=N)")
    return release


def releases(args) -> int:
    """The ``--releases`` benchmark (module doc)."""
    work, colls = args.work, [Path(c) for c in args.releases]
    work.mkdir(parents=True, exist_ok=True)
    log = work / "log.txt"
    idx = work / "idx" / "bm25"
    shutil.rmtree(work / "idx", ignore_errors=True)
    name = [c.name for c in colls]
    rows = []
    t, m = legalir(["index", colls[0], idx, "--threads", "2"], log)
    print(f"$ legalir index {colls[0]} {idx} --threads 2\n  {t:.1f} s, {m} MB, index {du(idx.parent) / 1e6:.1f} MB",
          flush=True)
    fresh: dict[str, Path] = {}
    for i, c in enumerate(colls):
        if i:
            t, m = legalir(["index", "update", idx, "--to", c, "--threads", "2"], log)
            said = [line for line in log.read_text().splitlines() if "now " in line and str(idx) in line][-1:]
        f = fresh[c.name] = work / f"fresh-{c.name}"
        shutil.rmtree(f, ignore_errors=True)
        ft, fm = legalir(["index", c, f, "--threads", "2"], log)
        size = du(f)
        if i:
            total = du(idx.parent)
            rows.append((name[i - 1], c.name, t, m, ft, fm, size, total, said[0].strip() if said else ""))
            print(f"{name[i - 1]} -> {c.name}: update {t:.1f} s {m} MB, fresh {ft:.1f} s {fm} MB: "
                  f"{t / ft:.2f}x time, {m / fm:.2f}x memory; every release {total / 1e6:.1f} MB, fresh "
                  f"{size / 1e6:.1f} MB; {rows[-1][-1]}", flush=True)
    last = colls[-1].name
    total, one = du(idx.parent), du(fresh[last])
    print("\n| step | update s | fresh s | time ratio | update MB | fresh MB | memory ratio | index of every "
          "release MB |\n|---|---:|---:|---:|---:|---:|---:|---:|")
    for a, b_, t, m, ft, fm, size, tot, _ in rows:
        print(f"| {a} -> {b_} | {t:.1f} | {ft:.1f} | {t / ft:.2f} | {m} | {fm} | {m / fm:.2f} | {tot / 1e6:.1f} |")
    print(f"\nevery release ({len(colls)}) in one index: {total / 1e6:.1f} MB; a fresh index of {last}: "
          f"{one / 1e6:.1f} MB; ratio {total / one:.2f}x")
    print(f"worst update: {max(r[2] / r[4] for r in rows):.2f}x a fresh index's time, "
          f"{max(r[3] / r[5] for r in rows):.2f}x its peak memory")
    # as of each release: the run of a fresh index of it, byte for byte
    same = 0
    for c in colls:
        topics = c / "topics" / "test.jsonl"
        runs = [work / f"asof-{c.name}.trec", work / f"fresh-{c.name}.trec"]
        legalir(["search", idx, topics, runs[0], "-k", "100", "--citations", "on", "--force", "--as-of",
                 release_of(c)], log)
        legalir(["search", fresh[c.name], topics, runs[1], "-k", "100", "--citations", "on", "--force"], log)
        ok = runs[0].read_bytes() == runs[1].read_bytes()
        same += ok
        print(f"as of {c.name}: {'byte-identical' if ok else 'DIFFERS'} to a fresh index of it "
              f"({len(runs[1].read_bytes().splitlines())} lines)", flush=True)
    print(f"as-of runs byte-identical to a fresh index's: {same} of {len(colls)}")
    speed(idx, colls, args.speed_rounds)
    print(f"  load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0 if same == len(colls) else 1


def speed(idx: Path, colls: list[Path], rounds: int) -> None:
    """topics/s of the current version and as of the oldest release, in this process, the same topics."""
    import legalir

    bench = legalir.load(colls[-1], "test")  # its topics with their fields (state), as legalir search reads them
    past = release_of(colls[0])
    n = len(bench.topics)
    with legalir.Searcher(idx) as s:
        for as_of in (None, past):  # warm: both versions opened, their first queries run
            s.batch_search(bench, 100, as_of=as_of, citations=True)
        took = {None: [], past: []}
        for _ in range(rounds):
            for as_of in (None, past):
                t0 = time.perf_counter()
                s.batch_search(bench, 100, as_of=as_of, citations=True)
                took[as_of].append(time.perf_counter() - t0)
    now, then = n / statistics.median(took[None]), n / statistics.median(took[past])
    print(f"\nsearch in one process ({n} topics of {colls[-1].name}, k=100, median of {rounds}): current "
          f"version {now:.1f} topics/s, as of release {past} {then:.1f} topics/s: ratio {then / now:.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--releases", nargs="+", default=None,
                    help="Collections of a code's releases, oldest first: the release benchmark (module doc).")
    ap.add_argument("--speed-rounds", type=int, default=5, help="Rounds of the as-of speed comparison [5].")
    ap.add_argument("--scale", type=float, default=0.01, help="Fraction of the real Housing size [0.01: ~18,400].")
    ap.add_argument("--changes", type=int, default=300, help="Documents changed per update (thirds: add/replace/delete).")
    ap.add_argument("--states", type=int, default=None,
                    help="Confine the changes to this many jurisdictions (drawn per repeat) [default: all 51].")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pooled", action="store_true", help="One pooled index instead of one per jurisdiction.")
    ap.add_argument("--work", type=Path, default=Path("/tmp/legalir-bench-update"))
    args = ap.parse_args()
    if args.releases:
        return releases(args)
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
