"""Build the JVM's class-data archive for this Java and these jars (`make setup` runs it; legalir.base.jvm).

    python scripts/jvm_archive.py [--force] [--quiet]

A child process runs what legalir's JVMs usually run, on the embedded sample dataset in a temporary folder
(convert, index, BM25 search with and without RM3, an index update, a search of the update), with the JVM
writing the names of the classes it loads (-XX:DumpLoadedClassList); `java -Xshare:dump` then writes those
classes, parsed and verified, into `legalir.base.jvm.class_archive()`. Every later JVM legalir starts maps them
from there. Nothing is built when the archive of this Java and these jars exists already (--force: build anew).
Either way, the archives that no JVM can use again (those legalir recorded as made from a Java or jars that are
gone or changed since: legalir.base.jvm.prune_class_archives) are removed.
The archive changes nothing a JVM computes, only how fast it starts (docs/figures.md).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def workload(work: Path) -> None:
    """What the class list is recorded from: legalir's commands, in this process (one JVM)."""
    from legalir.cli import main

    def cli(*args: str) -> None:
        main.main(["-q", *args], standalone_mode=False)

    coll, idx = work / "coll", work / "idx"
    cli("convert", "sample", "--data-dir", str(work / "none"), "--out", str(coll))
    cli("index", str(coll), str(idx), "--threads", "1")
    topics = coll / "topics" / "test.jsonl"
    cli("search", str(idx), str(topics), str(work / "bm25.trec"), "-k", "100")
    cli("search", str(idx), str(topics), str(work / "rm3.trec"), "-k", "100", "--rm3")
    first = json.loads((coll / "corpus" / "docs.jsonl").read_text().splitlines()[0])
    changed = work / "changed.jsonl"
    changed.write_text(json.dumps({**first, "contents": first["contents"] + " amended"}) + "\n")
    cli("index", "update", str(idx), "--replace", str(changed))
    cli("search", str(idx), str(topics), str(work / "updated.trec"), "-k", "10")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--force", action="store_true", help="build anew even when the archive exists")
    ap.add_argument("--quiet", action="store_true", help="print nothing when all goes well")
    ap.add_argument("--workload", type=Path, help=argparse.SUPPRESS)  # the child process
    a = ap.parse_args()
    if a.workload:
        workload(a.workload)
        return 0
    from legalir.base import jvm

    target = jvm.class_archive()
    if target.is_file() and not a.force:
        removed = jvm.prune_class_archives(keep=target)
        if not a.quiet:
            print(f"{target}: the class archive of this Java and these jars is there already")
            for old in removed:
                print(f"{old}: removed (its Java or jars are gone or changed)")
        return 0
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="legalir-jvm-archive-") as tmp:
        work = Path(tmp)
        listed = work / "classes.lst"
        user = os.environ.get("LEGALIR_JVM_OPTIONS", "")
        env = {**os.environ, "LEGALIR_JVM_OPTIONS": f"{user} -Xshare:off -XX:DumpLoadedClassList={listed}".strip()}
        done = subprocess.run([sys.executable, __file__, "--workload", str(work)], env=env, capture_output=True,
                              text=True, timeout=900)
        if done.returncode != 0:
            sys.stderr.write(done.stdout + done.stderr)
            print(f"error: recording the classes legalir loads failed (exit {done.returncode}); legalir works "
                  f"without the archive, only its JVMs start slower", file=sys.stderr)
            return 2
        path = jvm.build_class_archive(listed)
        n = sum(1 for line in listed.read_text().splitlines() if line and not line.startswith(("#", "@")))
    if not a.quiet:
        print(f"{path}: {n} classes, {path.stat().st_size / 2**20:.0f} MB, in {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
