#!/usr/bin/env python3
"""Citation extraction time: every section of the shared official codes, and convert with vs without.

    python scripts/bench_citations.py codes [--archives ../shared/data/statutes] [--release r81]
        -> per archive: sections, characters, CPU seconds, the slowest section's CPU time per character,
           and whether every section is within tests/test_citations.py's bound (FLOOR_S + PER_CHAR_S x chars)
    python scripts/bench_citations.py convert DATA_DIR [--repeat 3]
        -> `legalir convert housing_qa --data-dir DATA_DIR` with --citations on and off, alternating, each a
           process of its own timed by its CPU (user + sys) and wall time; DATA_DIR from
           scripts/synth_housing.py

A section is the text from one ``<h3`` to the next, tags stripped and entities unescaped.
"""
from __future__ import annotations

import argparse
import html
import os
import re
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAG = re.compile(r"<[^>]*+>")
FLOOR_S, PER_CHAR_S = 0.25, 200e-6  # tests/test_citations.py


def sections(archive: Path, release: str | None):
    with tarfile.open(archive, "r:xz") as tar:
        for member in tar:
            if not member.isfile() or not member.name.endswith(".html"):
                continue
            if release and f"/{release}/" not in member.name:
                continue
            page = tar.extractfile(member).read().decode("utf-8", "replace")
            parts = page.split("<h3")
            for part in parts[1:]:
                yield member.name, html.unescape(TAG.sub(" ", "<h3" + part))


def codes(args) -> None:
    import logging

    from legalir.legal import citations

    logging.getLogger("eyecite").setLevel(logging.ERROR)  # "Unknown overlap case" on the codes' LEXIS cites

    citations.keys("warm up: Cal. Civ. Code § 1942 and 347 U.S. 483")
    for archive in sorted(Path(args.archives).glob("*.tar.xz")):
        n = chars = keys = 0
        total = worst = 0.0
        worst_at = ""
        over = 0
        for name, text in sections(archive, args.release):
            t = time.process_time()
            keys += len(citations.extract(text))
            s = time.process_time() - t
            n += 1
            chars += len(text)
            total += s
            if s / max(1, len(text)) > worst:
                worst, worst_at = s / max(1, len(text)), f"{Path(name).name} ({len(text)} chars, {s * 1e3:.1f} ms)"
            over += s >= FLOOR_S + PER_CHAR_S * len(text)
        print(f"{archive.name} release {args.release or 'all'}: {n} sections, {chars:,} characters, {keys:,} keys, "
              f"{total:.2f} CPU s ({total / max(1, chars) * 1e6:.2f} us/char); slowest per character "
              f"{worst * 1e6:.1f} us/char: {worst_at}; over the bound: {over}")


def convert(args) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for mode in ("on", "off"):
                out = Path(tmp) / f"{mode}{i}"
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t = time.perf_counter()
                subprocess.run([sys.executable, "-m", "legalir.cli", "--quiet", "convert", "housing_qa", "--data-dir",
                                str(args.data_dir), "--out", str(out), "--citations", mode], env=env, check=True)
                wall = time.perf_counter() - t
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                print(f"citations {mode:3s} run {i + 1}: wall {wall:6.1f} s, CPU {cpu:6.1f} s", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("codes")
    c.add_argument("--archives", default=str(ROOT.parent / "shared" / "data" / "statutes"))
    c.add_argument("--release", default=None, help="one release only, e.g. r86 (Georgia) or r81 (North Carolina)")
    v = sub.add_parser("convert")
    v.add_argument("data_dir", type=Path)
    v.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    (codes if args.cmd == "codes" else convert)(args)


if __name__ == "__main__":
    main()
