#!/usr/bin/env python3
"""Count the sections a release of a published state code holds, by a rule of its own.

An independent reader for the held-out check of ``legalir convert statutes`` (docs/statutes.md, "A code
we were never given"): it shares no code with ``legalir.datasets.statutes``. Its rule:

* every ``<h3>`` that has an ``id`` of every title file (``*.title.*.html``, Idaho's ``idaho.title.NN.html`` and
  Virginia's compilation of compacts, ``gov.va.compact.title.NN.html``, too) of
  ``DATA_DIR/cic-code-ST/transforms/ST/*/rRELEASE/`` is a heading (an ``<h3>`` without an ``id`` is not:
  Mississippi prints note paragraphs in them); so is a paragraph that reads ``§ NUMBER. Heading`` and links
  ``NUMBER`` to an anchor that no element of the page holds and a table of contents (``<nav>``) lists
  (Mississippi's title 79 prints its section headings so), and an ``<h3>`` without an ``id`` that reads ``§
  NUMBER. Heading`` (Mississippi's title 51; its note paragraphs in ``<h3>`` never open with ``§``). The publisher's other files, its copies of the state's and the U.S. constitutions, are not the code:
  their ``<h3>``s are counted apart, ``other_files_h3``;
* a heading's text (whitespace collapsed) that begins with a section number (``§``, ``§§`` or ``Sec.`` allowed:
  ``21-1-101.``, ``§ 42-25.6.``, ``421.010.``, ``Sec. 09.10.070.``, ``§ 2144a.``) is a section heading; any other
  (``A. Receipts From Entities``, ``ARTICLE I``, a sub-part's heading) is not a section;
* a heading for a range (``2-10-130 through 2-10-140.``, ``2-1-1 — 2-1-5.``, ``6-1-101 to 6-1-105.``, and after
  ``§§`` a hyphen, ``§§ 61-69.``, ``§§ 114-114a.``) counts each number of the range when the two ends differ
  only in their last number, or in the letter after one number (``40-1305R — 40-1305Y``: R to Y) (an end with a
  letter counts itself: ``114-114a`` is 114 and 114a; in a number of
  dots only, three digits after the last dot ending both ends in 0 (5) count by tens (fives), as Alaska and Kentucky number:
  ``Secs. 02.10.060 — 02.10.090`` is 060, 070, 080, 090); a list
  (``§§ 47-1, 47-2.``) counts each;
* a number counts once per release however often it is printed (two versions of a section with a
  delayed effective date, a number printed twice); in Vermont, where numbers repeat from title to title
  (``17 V.S.A. § 2531``), once per title (the file's).

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
# mark, number, optional range end or list, then "." or ":" or end or space
HEAD = re.compile(rf"(§§|§|Secs?\.)?\s*({NUM})((?:\s*(?:through|to|—|–|-)\s*§?§?\s*{NUM})?)"
                  rf"((?:\s*(?:,|and|&)\s*§?§?\s*{NUM})*)\s*[.:]?(?:\s|$)")
PER_TITLE = {"vt"}  # codes whose section numbers are unique only within a title


class H3(HTMLParser):
    """The headings of a page: ``<h3 id=...>`` texts, and paragraphs ``§ N. ...`` whose link names an anchor."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.buf: list[str] = []
        self.heads: list[str] = []
        self.ids: set[str] = set()
        self.p: list | None = None  # [text parts, hrefs] of the open <p>
        self.paras: list[tuple[str, list[str]]] = []
        self.nav = 0
        self.noid: list[str] | None = None
        self.noid_heads: list[str] = []  # texts of the <h3>s without an id
        self.toc: set[str] = set()  # the anchors the tables of contents (<nav>) list

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "h3":
            self.depth += 1
            if self.depth == 1:
                self.buf = [] if a.get("id") else None
                self.noid = [] if not a.get("id") else None
        elif tag == "p":
            self.p = [[], []]
        elif tag == "nav":
            self.nav += 1
        if tag == "a" and (a.get("href") or "").startswith("#"):
            if self.p is not None:
                self.p[1].append(a["href"][1:])
            if self.nav:
                self.toc.add(a["href"][1:])

    def handle_endtag(self, tag):
        if tag == "h3" and self.depth:
            self.depth -= 1
            if self.depth == 0 and self.buf is not None:
                self.heads.append(" ".join("".join(self.buf).split()))
            elif self.depth == 0 and self.noid is not None:
                self.noid_heads.append(" ".join("".join(self.noid).split()))
        elif tag == "nav" and self.nav:
            self.nav -= 1
        elif tag == "p" and self.p is not None:
            self.paras.append((" ".join("".join(self.p[0]).split()), self.p[1]))
            self.p = None

    def handle_data(self, data):
        if self.depth and self.buf is not None:
            self.buf.append(data)
        if self.depth and self.noid is not None:
            self.noid.append(data)
        if self.p is not None:
            self.p[0].append(data)

    def paragraph_heads(self) -> list[str]:
        out = []
        for text in self.noid_heads:  # "§ 51-11-101. Dissolution ..." in an <h3> without an id
            if re.match(rf"§\s*{NUM}\s*\.\s", text):
                out.append(text)
        for text, hrefs in self.paras:
            m = re.match(rf"§\s*({NUM})\s*\.\s", text)
            if m and len(hrefs) == 1 and hrefs[0] not in self.ids and hrefs[0] in self.toc \
                    and hrefs[0].endswith("s" + m.group(1)):
                out.append(text)
        return out


def _range(first: str, last: str) -> list[str]:
    a, b = re.split(r"([-.:])", first), re.split(r"([-.:])", last)
    ma = re.fullmatch(r"(\d+)([A-Za-z]*)", a[-1]) if len(a) == len(b) and a[:-1] == b[:-1] else None
    mb = re.fullmatch(r"(\d+)([A-Za-z]*)", b[-1]) if ma else None
    if ma and mb and ma.group(1) == mb.group(1) and len(ma.group(2)) == len(mb.group(2)) == 1 \
            and ma.group(2) <= mb.group(2) and ma.group(2).isupper() == mb.group(2).isupper():
        # letters of one number: "40-1305R — 40-1305Y" is R, S, ..., Y
        return [f"{first[:-1]}{chr(c)}" for c in range(ord(ma.group(2)), ord(mb.group(2)) + 1)]
    if not (ma and mb) or not 0 <= int(mb.group(1)) - int(ma.group(1)) <= 500:
        return [first, last]
    lo, hi = int(ma.group(1)), int(mb.group(1))
    width = len(ma.group(1)) if ma.group(1).startswith("0") else 0
    pre = "".join(a[:-1])
    out = [first] if ma.group(2) else []
    # Alaska and Kentucky number by tens or fives: "Secs. 02.10.060 — 02.10.090" is four sections
    step = next((k for k in (10, 5) if "-" not in first and len(a) > 1 and a[-2] == "." and len(ma.group(1)) == 3
                 and not ma.group(2)
                 and not mb.group(2) and lo % k == 0 and hi % k == 0), 1)
    out += [f"{pre}{n:0{width}d}" for n in range(lo + (1 if ma.group(2) else 0), hi + 1, step)]
    return list(dict.fromkeys(out + ([last] if mb.group(2) else [])))


def numbers(head: str) -> list[str] | None:
    m = HEAD.match(head)
    if not m:
        return None
    first = m.group(2)
    out = [first]
    rng = m.group(3).strip()
    if rng:
        last = re.sub(r"^(?:through|to|—|–|-)\s*§?§?\s*", "", rng)
        out = _range(first, last)
    elif m.group(1) == "§§" and not m.group(4) and first.count("-") % 2 == 1:
        parts = first.split("-")
        out = _range("-".join(parts[:len(parts) // 2]), "-".join(parts[len(parts) // 2:]))
    if m.group(4):
        out += re.findall(NUM, m.group(4))
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
        title = re.sub(r"^.*\.title\.0*([\w.]+?)\.html$", r"\1", name) if st in PER_TITLE else ""
        for h in p.heads + p.paragraph_heads():
            heads += 1
            nums = numbers(h)
            if nums is None:
                not_sections += 1
                if verbose:
                    print(f"not a section: {name}: {h[:100]!r}", file=sys.stderr)
                continue
            seen.update(f"{title} {n.upper()}" for n in nums)
    print(f"sections={len(seen)} headings={heads} not_sections={not_sections} files={len(files)} "
          f"other_files_h3={other}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
