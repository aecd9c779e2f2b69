#!/usr/bin/env python3
"""Count the sections a release of a published state code holds, by a rule of its own.

An independent reader for the held-out check of ``legalir convert statutes`` (docs/statutes.md, "A code
we were never given"): it shares no code with ``legalir.datasets.statutes``. Its rule:

* every ``<h3>`` of every title file (``*.title.*.html``) of ``DATA_DIR/cic-code-ST/transforms/ST/*/rRELEASE/``
  is a heading (the publisher's other files, its copies of the state's and the U.S. constitutions, are
  not the code: their ``<h3>``s are counted apart, ``other_files_h3``); its text (whitespace collapsed) that begins with a section number (``§`` allowed:
  ``21-1-101.``, ``§ 42-25.6.``, ``421.010.``) is a section heading; any other (``A. Receipts From
  Entities``, a sub-part's heading) is not a section;
* a heading for a range (``2-10-130 through 2-10-140.``, ``2-1-1 — 2-1-5.``, ``6-1-101 to 6-1-105.``)
  counts each number of the range when the two ends differ only in their last number; a list
  (``§§ 47-1, 47-2.``) counts each;
* a number counts once per release however often it is printed (two versions of a section with a
  delayed effective date, a number printed twice).

Prints ``sections=N headings=H not_sections=K`` and, with ``-v``, the headings that are not sections.
Reads the folders, or the same tree in ``DATA_DIR/cic-code-ST*.tar.xz``. Standard library only (html.parser).
"""
from __future__ import annotations

import re
import sys
import tarfile
from html.parser import HTMLParser
from pathlib import Path

NUM = r"\d+[A-Za-z]{0,3}(?:[-.:]\d+[A-Za-z]{0,3})*"
# number, optional range end or list, then "." or ":" or end or space
HEAD = re.compile(rf"§?§?\s*({NUM})((?:\s*(?:through|to|—|–)\s*{NUM})?)((?:\s*(?:,|and)\s*{NUM})*)\s*[.:]?(?:\s|$)")


class H3(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.buf: list[str] = []
        self.heads: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "h3":
            self.depth += 1
            if self.depth == 1:
                self.buf = []

    def handle_endtag(self, tag):
        if tag == "h3" and self.depth:
            self.depth -= 1
            if self.depth == 0:
                self.heads.append(" ".join("".join(self.buf).split()))

    def handle_data(self, data):
        if self.depth:
            self.buf.append(data)


def numbers(head: str) -> list[str] | None:
    m = HEAD.match(head)
    if not m:
        return None
    first = m.group(1)
    out = [first]
    rng = m.group(2).strip()
    if rng:
        last = re.sub(r"^(?:through|to|—|–)\s*", "", rng)
        a, b = re.split(r"([-.:])", first), re.split(r"([-.:])", last)
        if len(a) == len(b) and a[:-1] == b[:-1] and a[-1].isdigit() and b[-1].isdigit() and 0 <= int(b[-1]) - int(a[-1]) <= 500:
            out = ["".join(a[:-1]) + str(n) for n in range(int(a[-1]), int(b[-1]) + 1)]
        else:
            out = [first, last]
    if m.group(3):
        out += re.findall(NUM, m.group(3))
    return out


def main(argv: list[str]) -> int:
    verbose = "-v" in argv
    args = [a for a in argv if a != "-v"]
    if len(args) != 3:
        print(__doc__.strip().splitlines()[0] + "\nusage: count_sections.py DATA_DIR STATE RELEASE [-v]", file=sys.stderr)
        return 2
    data, st, rel = Path(args[0]), args[1].lower(), args[2].lstrip("r")
    files = [(f.name, f.read_bytes) for f in sorted(data.glob(f"cic-code-{st}/transforms/{st}/*/r{rel}/*.html"))]
    if not files:  # the publisher's tree in an archive (../shared/data/statutes/cic-code-ga-r85-r86.tar.xz)
        want = re.compile(rf"(?:.*/)?cic-code-{st}/transforms/{st}/[^/]+/r{rel}/[^/]+\.html")
        for arc in sorted(data.glob(f"cic-code-{st}*.tar*")):
            with tarfile.open(arc) as tf:
                got = {m.name: tf.extractfile(m).read() for m in tf if m.isfile() and want.fullmatch(m.name)}
            files += [(Path(n).name, (lambda b=b: b)) for n, b in sorted(got.items())]
    if not files:
        print(f"no files cic-code-{st}/transforms/{st}/*/r{rel}/*.html (or such an archive) under {data}",
              file=sys.stderr)
        return 2
    seen: set[str] = set()
    heads = not_sections = other = 0
    for name, read in files:
        p = H3()
        p.feed(read().decode("utf-8", errors="replace"))
        p.close()
        if ".title." not in name:
            other += len(p.heads)
            continue
        for h in p.heads:
            heads += 1
            nums = numbers(h)
            if nums is None:
                not_sections += 1
                if verbose:
                    print(f"not a section: {name}: {h[:100]!r}", file=sys.stderr)
                continue
            seen.update(n.upper() for n in nums)
    print(f"sections={len(seen)} headings={heads} not_sections={not_sections} files={len(files)} "
          f"other_files_h3={other}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
