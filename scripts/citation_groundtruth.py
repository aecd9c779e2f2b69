"""Citation extraction measured against the official codes' own links (issue 29, item 2).

Every link of a state code to one of its sections (``<cite class="ocga"><a href="#…s8-2-3">8-2-3</a>``)
is a labelled example written by the code's editors: the citation around the link, read in its
sentence, must give the key of the linked section. For each example the sentence holding the link is
read by each system, and the citations it finds over the link's text are compared with the gold:

* ``legalir``: :func:`legalir.citations.extract` as legalir reads a section's text at conversion
  (``context`` = the code's own prefix, so a bare ``§ 8-2-3`` is this code's) and as it reads a query
  (``query``: the state as the jurisdiction hint, no context). Right when a key's section (its ``base``)
  is the linked section's key.
* ``eyecite``: its law citations (reporters-db), ``citeurl``: its templates. They give no legalir key:
  right when the section they read (title-chapter-section joined as printed) is the linked section and
  the citation is of this state's code.

Precision = right citations / citations found over a link (a section inside a range whose two linked
ends it covers is right: the editors link a range's ends only); recall = links whose section is found.
Per state and per *form* (what precedes the link: ``§``, ``§§``, ``Code Section``, ``G.S.``, a list
item, a range end, bare; ``+sub`` when the link prints a subsection).

Re-runnable after any change to legalir/citations.py::

    PYTHONPATH=. python scripts/citation_groundtruth.py --data-dir ../shared/data/statutes \\
        --state ga --release 86 --systems legalir,eyecite,citeurl --json gt-ga86.json

legalir runs in a child process with a time limit per sentence (``--timeout``): a sentence that runs
past it counts as found nothing, and is counted (``timeouts``).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from legalir import citations
from legalir.datasets import get
from legalir.datasets.statutes import STATES, GuardedCitations

_BOUNDARY = re.compile(r"(?<=[a-z]{3}[.;])\s+(?=[A-Z“\"(])")
#: (form, regex on the text just before the link) in order; the link's own text is checked first for "G.S."
FORMS = (
    ("O.C.G.A. §", re.compile(r"O\.C\.G\.A\.\s*§§?\s*$")),
    ("Code Section", re.compile(r"Code\s+[Ss]ections?\s*$")),
    ("§§", re.compile(r"§§\s*$")),
    ("§", re.compile(r"§\s*$")),
    ("section", re.compile(r"\b[Ss]ec(?:tion)?s?\.?\s*$")),
    ("range end", re.compile(r"(?:\bthrough|\bto|\bthru|[-–—])\s*$")),
    ("list item", re.compile(r"(?:,|\band|\bor|&)\s*$")),
)
SYSTEMS = ("legalir", "legalir.query", "eyecite", "citeurl")


def form_of(text: str, start: int, link_text: str) -> str:
    before = text[max(0, start - 30):start]
    if re.match(r"(?:N\.C\.\s*)?G\.\s?S\.", link_text):
        form = "G.S."
    else:
        form = next((name for name, rx in FORMS if rx.search(before)), "bare")
    if re.search(r"\(\w{1,4}\)", link_text):
        form += " +sub"
    return form


def sentence(text: str, start: int, end: int, limit: int = 600) -> tuple[str, int]:
    """The sentence of ``text`` holding ``[start, end)`` (at most ``limit`` characters), and its offset."""
    a = 0
    for m in _BOUNDARY.finditer(text, 0, start):
        a = m.end()
    m = _BOUNDARY.search(text, end)
    b = m.start() if m else len(text)
    a, b = max(a, start - limit // 2), min(b, end + limit // 2)
    return text[a:b], a


def section_of(key: str, prefix: str) -> str | None:
    return key[len(prefix) + 1:] if key.startswith(prefix + "_") else None


def examples(data_dir: str, state: str, release: str, limit: int | None = None) -> list[dict]:
    """The labelled links of a release: sentence, link span in it, gold key, form, part."""
    ds = get("statutes", data_dir, state=state, release=release)
    ds.citations_wanted = False  # the links are what is read here, not the text's own citations
    out = []
    for conv in ds.converted():
        for part, block, resolved in conv.paragraphs:
            for link, key in resolved:
                sent, off = sentence(block.text, link.start, link.end)
                out.append({"sentence": sent, "start": link.start - off, "end": link.end - off, "gold": key,
                            "form": form_of(block.text, link.start, link.text), "part": part,
                            "source": conv.key, "link": link.text})
                if limit and len(out) >= limit:
                    return out
    return out


def _eyecite(text: str) -> list[tuple[int, int, str, str]]:
    from eyecite import get_citations
    from eyecite.models import FullLawCitation

    out = []
    for c in get_citations(text):
        if isinstance(c, FullLawCitation) and c.groups.get("section"):
            out.append((*c.span(), c.groups.get("reporter", ""), c.groups["section"]))
    return out


_CITATOR = None


def _citeurl(text: str) -> list[tuple[int, int, str, str]]:
    global _CITATOR
    from citeurl import Citator

    if _CITATOR is None:
        _CITATOR = Citator()
    out = []
    for c in _CITATOR.list_cites(text):
        toks = [v for k, v in c.tokens.items() if v and k not in ("subsection", "subsections")]
        out.append((*c.span, c.template.name, "-".join(toks)))
    return out


def measure(exs: list[dict], state: str, systems: tuple[str, ...], timeout: float = 10.0) -> dict:
    """Precision and recall per system and form (and ``all``)."""
    home = citations.jurisdiction(state)
    name = STATES[state].name
    tally: dict = defaultdict(lambda: defaultdict(Counter))
    timeouts: Counter = Counter()
    seconds: Counter = Counter()
    by_sentence: dict[str, list[dict]] = defaultdict(list)
    for e in exs:
        by_sentence[e["sentence"]].append(e)
    with GuardedCitations(timeout) as guard:
        for sent, group in by_sentence.items():
            for system in systems:
                t0 = time.perf_counter()
                if system.startswith("legalir"):
                    kwargs = {"jurisdiction_hint": state}
                    if system == "legalir":
                        # the code prefix of the home code's keys (ga_code), as a section of it is read
                        kwargs["context"] = _code_prefix(group[0]["gold"])
                    got = guard.extract(sent, **kwargs)
                    if got is None:
                        timeouts[system] += 1
                        got = []
                    found = [(s, e, base) for _, base, s, e, _ in got]
                else:
                    raw = _eyecite(sent) if system == "eyecite" else _citeurl(sent)
                    found = []
                    for s, e, code, sec in raw:
                        ours = name.lower() in code.lower() or citations.jurisdiction(code.split(".")[0]) == home \
                            or bool(re.match(re.escape(_abbr(state)), code))
                        found.append((s, e, ("home:" if ours else "other:") + sec))
                seconds[system] += time.perf_counter() - t0
                if system.startswith("legalir"):
                    def ok(f, ex):
                        return f[2] == ex["gold"]
                else:
                    def ok(f, ex):
                        return f[2].startswith("home:") and citations.section_key(
                            re.sub(r"\(.*$", "", f[2].split(":", 1)[1])) == _section_from_key(ex["gold"])
                # recall: a link is found when a citation over it is its section. legalir.citations gives
                # each key once per text: a repeated link counts as found where its first copy was read.
                for ex in group:
                    over = [f for f in found if f[0] < ex["end"] and f[1] > ex["start"]]
                    if not over:
                        first = sent.find(ex["link"])
                        if 0 <= first < ex["start"]:
                            over = [f for f in found if f[0] < first + len(ex["link"]) and f[1] > first]
                    for form in (ex["form"], "all", f"part:{ex['part']}"):
                        t = tally[system][form]
                        t["links"] += 1
                        t["right"] += any(ok(f, ex) for f in over)
                # precision: each citation found over a link is right when it is the section of a link it
                # covers, or a section inside a range whose two ends it covers (the editors link the ends only)
                for f in found:
                    covered = [ex for ex in group if f[0] < ex["end"] and f[1] > ex["start"]]
                    if not covered:
                        continue
                    right = any(ok(f, ex) for ex in covered) or _inside(f[2], [ex["gold"] for ex in covered])
                    for form in (covered[0]["form"], "all", f"part:{covered[0]['part']}"):
                        t = tally[system][form]
                        t["found"] += 1
                        t["right_found"] += right
    out = {}
    for system, forms in tally.items():
        out[system] = {}
        for form, t in sorted(forms.items()):
            out[system][form] = {"links": t["links"],
                                 "precision": round(t["right_found"] / t["found"], 4) if t["found"] else None,
                                 "recall": round(t["right"] / t["links"], 4)}
    return {"state": state, "systems": out, "timeouts": dict(timeouts),
            "seconds": {k: round(v, 1) for k, v in seconds.items()}}


def _inside(found: str, golds: list[str]) -> bool:
    """Whether ``found`` (a key, or ``home:<section>``) lies inside a range two of ``golds`` end."""
    sec = found.split(":", 1)[1] if ":" in found else None
    head, _, last = (citations.section_key(re.sub(r"\(.*$", "", sec)) if sec else found).rpartition("_")
    if not last.isdigit():
        return False
    ends = []
    for g in golds:
        g = g if sec is None else _section_from_key(g)
        h, _, n = g.rpartition("_")
        if n.isdigit() and (h == head):
            ends.append(int(n))
    return len(ends) >= 2 and min(ends) < int(last) < max(ends)


def _code_prefix(key: str) -> str:
    parts = key.split("_")
    return "_".join(parts[:2])


def _abbr(state: str) -> str:
    return STATES[state].form.split(" §")[0]


def _section_from_key(key: str) -> str:
    return "_".join(key.split("_")[2:])


def table(result: dict, systems: tuple[str, ...]) -> str:
    forms = sorted({f for s in result["systems"].values() for f in s}, key=lambda f: (f != "all", f))
    head = "| form | links | " + " | ".join(f"{s} P / R" for s in systems) + " |"
    lines = [head, "|" + "---|" * (2 + len(systems))]
    for f in forms:
        row = result["systems"][systems[0]].get(f)
        cells = []
        for s in systems:
            v = result["systems"].get(s, {}).get(f)
            if v is None:
                cells.append("")
            else:
                p = "–" if v["precision"] is None else f"{v['precision']:.3f}"
                cells.append(f"{p} / {v['recall']:.3f}")
        lines.append(f"| {f} | {row['links'] if row else ''} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--state", required=True, choices=sorted(STATES))
    ap.add_argument("--release", required=True)
    ap.add_argument("--systems", default="legalir,legalir.query")
    ap.add_argument("--limit", type=int, default=None, help="at most this many links (first in file order)")
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--json", help="write the result here")
    args = ap.parse_args(argv)
    systems = tuple(s.strip() for s in args.systems.split(",") if s.strip())
    bad = [s for s in systems if s not in SYSTEMS]
    if bad:
        ap.error(f"unknown system(s) {bad}; known: {', '.join(SYSTEMS)}")
    t0 = time.perf_counter()
    exs = examples(args.data_dir, args.state, args.release, args.limit)
    result = measure(exs, args.state, systems, args.timeout)
    result.update({"release": args.release, "examples": len(exs), "wall_s": round(time.perf_counter() - t0, 1)})
    print(f"{args.state} r{args.release}: {len(exs)} links, {result['wall_s']} s; timeouts {result['timeouts']}; "
          f"seconds per system {result['seconds']}", file=sys.stderr)
    print(table(result, systems))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
