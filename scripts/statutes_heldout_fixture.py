"""Cut tests/fixtures/statutes_heldout from the publisher's files: a few sections of each code the project was
not built on (Alaska, Arkansas, Idaho, Mississippi, North Dakota, Rhode Island, Virginia, Vermont, Wyoming), one
small page per state in the publisher's markup, each section chosen for a class of input the reader once got
wrong (docs/statutes.md, "Every code the publisher publishes").

The publisher's files (Public.Resource.Org / UniCourt ``cic-code-XX``) are public domain. A cut keeps the
file's title heading (``<h1>``), the table-of-contents entries (``<nav>``) of the kept sections, and each kept
section: its ``<h3>``'s ``<div>``, or, where the publisher printed the section without one (Mississippi's title
79), the heading and what follows it up to the next section; the ``<div>``s after it that begin with an
``<h3>`` under its anchor (Idaho's compact articles) too. Within an annotation block (a ``<div>`` with an
``<h4>``) at most ``KEEP_PARAGRAPHS`` paragraphs after each heading are kept, and as many items of a list, so that
a page stays a few KB.

    python scripts/statutes_heldout_fixture.py /work/data/statutes tests/fixtures/statutes_heldout
"""
from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import lxml.html

#: state -> (release, file, [anchors of the sections kept])
KEEP = {
    "ak": ("82", "gov.ak.code.title.09.html", ["t09c10s09.10.010", "t09c10s09.10.020"]),
    "ar": ("78", "gov.ar.code.title.02.html", ["t02c01sc01", "t02c19s2-19-205", "t02c19s2-19-206"]),
    "id": ("70", "idaho.title.01.html", ["t01c20s1-2001a", "t01c20s1-2001b"]),
    "ms": ("78", "gov.ms.code.title.79.html", ["t79c11s79-11-123", "t79c11s79-11-125"]),
    "nd": ("81", "gov.nd.code.title.14.html", ["t14c14-02s14-02-06", "t14c14-02s14-02-07"]),
    "ri": ("74", "gov.ri.code.title.01.html", ["t01c01s1-1-2", "t01c02s1-2-7"]),
    "va": ("88", "gov.va.code.title.21.html", ["t21c04a01s21-224"]),
    "vt": ("85", "gov.vt.vsa.title.17.html", ["t17c59s01s2809-2810a", "t17c43s02s2144a"]),
    "wy": ("84", "gov.wy.code.title.01.html", ["t01c26a05s1-26-504", "t01c26a05s1-26-505"]),
}
#: more pages of a state: (release, file, anchors)
MORE = {
    "ms": [("78", "gov.ms.code.title.09.html", ["t09c13s9-13-5"])],
    "ak": [("82", "gov.ak.code.title.14.html", ["t14c03a01s14.03.020"])],
    "va": [("88", "gov.va.code.title.13.1.html", ["t13.1c09a09s13.1-683"])],
    "vt": [("85", "gov.vt.vsa.title.12.html", ["t12p01c03s63"]), ("85", "gov.vt.vsa.title.23.html", ["t23c13s03s1041"]),
           ("85", "gov.vt.vsa.title.04.html", ["t04c23s903-905"]), ("85", "gov.vt.vsa.title.01.html", ["t01c03s02s134a"]),
           ("85", "gov.vt.vsa.title.16.html", ["t16p05c101s01s2955"])],
    "id": [("70", "idaho.title.16.html", ["t16c19s16-1901", "t16c19s16-1902"]),
           ("70", "idaho.title.28.html", ["t28c01p01s28-1-103"])],
}
KEEP_PARAGRAPHS = 3


def _unit(h3) -> list:
    """The elements a section's heading stands for: its ``<div>``, else it and its siblings up to the next
    ``<h3>``; and the ``<div>``s after it that begin with an ``<h3>`` under its anchor."""
    parent = h3.getparent()
    heads = [x for x in parent.iter("h3")] if parent is not None else []
    if parent is not None and parent.tag == "div" and heads and heads[0] is h3 and \
            all(x is h3 or not x.get("id") or x.get("id", "").startswith(h3.get("id")) for x in heads):
        out = [parent]
        for sib in parent.itersiblings():
            first = next(iter(sib.iter("h3")), None) if isinstance(sib.tag, str) else None
            if sib.tag == "div" and first is not None and \
                    re.fullmatch(re.escape(h3.get("id")) + r"a[IVXL]+", first.get("id") or ""):
                out.append(sib)
            else:
                break
        return out
    out = [h3]
    for sib in h3.itersiblings():
        if isinstance(sib.tag, str) and (sib.tag in ("h1", "h2") or (sib.tag == "h3" and sib.get("id"))
                                         or (sib.tag == "p" and (sib.text or "").strip().startswith("§")
                                             and sib.find("cite") is not None)):
            break
        out.append(sib)
    return out


def _trim(el) -> None:
    """At most KEEP_PARAGRAPHS paragraphs after each heading of an annotation block, and items of a list."""
    for ol in list(el.iter("ol", "ul")):
        for li in [x for x in ol if isinstance(x.tag, str)][KEEP_PARAGRAPHS:]:
            ol.remove(li)
    for div in el.iter("div"):
        if div.find("h4") is None:
            continue
        run = 0
        for child in list(div):
            if not isinstance(child.tag, str):
                continue
            if child.tag == "p" and not (len(child) == 1 and child[0].tag == "b" and not (child.text or "").strip()):
                run += 1
                if run > KEEP_PARAGRAPHS:
                    div.remove(child)
            else:
                run = 0


def cut(data: bytes, keep: list[str]) -> bytes:
    root = lxml.html.document_fromstring(data, parser=lxml.html.HTMLParser(encoding="utf-8"))
    h1 = next(root.iter("h1"))
    by_id = {e.get("id"): e for e in root.iter() if isinstance(e.tag, str) and e.get("id")}
    toc = [li for nav in root.iter("nav") for li in nav.iter("li")
           if any((a.get("href") or "")[1:] in keep for a in li.iter("a"))]
    units = []
    for anchor in keep:
        el = by_id.get(anchor)
        if el is not None:
            units += [copy.deepcopy(x) for x in _unit(el)]
        else:  # a heading printed as a paragraph that links to its own anchor (Mississippi's title 79)
            p = next((p for p in root.iter("p") if any(a.get("href") == "#" + anchor for a in p.iter("a"))
                      and (p.text or "").strip().startswith("§")), None)
            if p is None:
                raise SystemExit(f"no section {anchor}")
            units += [copy.deepcopy(x) for x in _unit(p)]
    page = lxml.html.fromstring('<html><head><meta charset="utf-8"></head><body><main></main></body></html>')
    main_ = page.find(".//main")
    main_.append(copy.deepcopy(h1))
    if toc:
        nav = lxml.html.fromstring("<nav><ul class='leaders'></ul></nav>")
        for li in toc:
            nav[0].append(copy.deepcopy(li))
        main_.append(nav)
    for u in units:
        u.tail = None
        _trim(u)
        main_.append(u)
    return lxml.html.tostring(page, encoding="utf-8", doctype="<!DOCTYPE html>")


def main(src: str, out: str) -> None:
    for st, first in KEEP.items():
        for release, name, anchors in [first] + MORE.get(st, []):
            if not anchors:
                continue
            folder = Path(src) / f"cic-code-{st}" / "transforms" / st / f"oc{st}" / f"r{release}"
            data = (folder / name).read_bytes()
            target = Path(out) / f"cic-code-{st}" / "transforms" / st / f"oc{st}" / f"r{release}" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(cut(data, anchors))
            print(f"{target}: {target.stat().st_size:,} bytes, {len(anchors)} sections")


if __name__ == "__main__":
    main(*sys.argv[1:3])
