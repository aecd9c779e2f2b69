"""Cut tests/fixtures/statutes from the publisher's files: a few sections per state and release, in its layout.

The publisher's files (Public.Resource.Org / UniCourt ``cic-code-XX``) are public domain. The cut keeps
each file's head, its title heading and the ``<div>`` of each kept section with the chapter, article
and part headings above it; everything else (other sections, navigation lists) is removed. The repository's
README (its release lines date each release) is kept whole.

    python scripts/statutes_fixture.py ../shared/data/statutes tests/fixtures/statutes
"""
from __future__ import annotations

import sys
import tarfile
from pathlib import Path

import lxml.html

#: (archive, member under transforms/, anchors of the sections kept)
KEEP = {
    "cic-code-ga-r85-r86.tar.xz": {
        "ga/ocga/r{r}/gov.ga.ocga.title.08.html": [
            "t08c02a01p01s8-2-1", "t08c02a01p01s8-2-2", "t08c02a01p01s8-2-3", "t08c02a01p02s8-2-20",
            "t08c02a01p02s8-2-22", "t08c02a01p2As8-2-36", "t08c02a01p2As8-2-37", "t08c02a01p2As8-2-38",
            "t08c02a02p02s8-2-135", "t08c02a02p02s8-2-135.1", "t08c02a02p02s8-2-136", "t08c02a02p02s8-2-141",
            "t08c02a02p02s8-2-143"],
        "ga/ocga/r{r}/gov.ga.ocga.title.03.html": ["t03c02a02s3-2-35", "t03c02a02s3-2-35.01"],
        "ga/ocga/r{r}/gov.ga.ocga.title.02.html": ["t02c10a04s2-10-130"],
    },
    "cic-code-nc-r80-r81-ch39-47.tar.xz": {
        "nc/ocnc/r{r}/gov.nc.stat.title.042.html": [
            "t42a01s42-3", "t42a2As42-25.6", "t42a2As42-25.9", "t42a03s42-26", "t42a03s42-30", "t42a03s42-32",
            "t42a03s42-35", "t42a03s42-36", "t42a03s42-36.2", "t42a05s42-38", "t42a05s42-41", "t42a05s42-42",
            "t42a05s42-42.1"],
        # r81 prints G.S. 41-1 as "§ 1." in its <h3>; r80 prints it as a bold paragraph, not an <h3>
        "nc/ocnc/r{r}/gov.nc.stat.title.041.html": ["t41a01s01", "t41a01s41-2"],
    },
}
RELEASES = {"cic-code-ga-r85-r86.tar.xz": ("85", "86"), "cic-code-nc-r80-r81-ch39-47.tar.xz": ("80", "81")}


def cut(data: bytes, keep: list[str]) -> bytes:
    root = lxml.html.document_fromstring(data, parser=lxml.html.HTMLParser(encoding="utf-8"))
    for nav in list(root.iter("nav")):
        if nav.getparent().tag != "body":
            nav.getparent().remove(nav)
    kept = set(keep)
    for h3 in list(root.iter("h3")):
        if h3.get("id") not in kept:
            div = h3.getparent()
            div.getparent().remove(div)
    # headings (chapter, article, part divs) that no kept section is under go too
    for div in list(root.iter("div")):
        h2 = div.find("h2")
        if h2 is not None and div.find(".//h3") is None and div.getparent() is not None \
                and not any(k.startswith(h2.get("id") or "-") for k in kept):
            div.getparent().remove(div)
    return lxml.html.tostring(root, encoding="utf-8", doctype="<!DOCTYPE html>", pretty_print=False)


def main(src: str, out: str) -> None:
    for archive, files in KEEP.items():
        wanted = {f"{archive.split('-r')[0]}/transforms/{m.format(r=r)}": keep
                  for m, keep in files.items() for r in RELEASES[archive]}
        with tarfile.open(Path(src) / archive) as tf:
            for member in tf:
                if member.name == f"{archive.split('-r')[0]}/README.md":  # the releases' dates, kept whole
                    path = Path(out) / member.name
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(tf.extractfile(member).read())
                    print(path, path.stat().st_size)
                elif member.name in wanted:
                    path = Path(out) / member.name
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(cut(tf.extractfile(member).read(), wanted[member.name]))
                    print(path, path.stat().st_size)


if __name__ == "__main__":
    main(*sys.argv[1:3])
