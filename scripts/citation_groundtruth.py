"""Citation extraction measured against the official codes' own links (issue 29, item 2).

Every link of a state code to one of its sections (``<cite class="ocga"><a href="#…s8-2-3">8-2-3</a>``)
is a labelled example written by the code's editors: the citation around the link, read in its
sentence, must give the key of the linked section. For each example the sentence holding the link is
read by each system, and the citations it finds over the link's text are compared with the gold:

* ``legalir``: :func:`legalir.legal.citations.extract` as legalir reads a section's text at conversion
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

Re-runnable after any change to legalir/legal/citations.py::

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

from legalir.datasets import get
from legalir.datasets.statutes import STATES
from legalir.legal import citations
from legalir.legal.guarded import GuardedCitations

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
                # recall: a link is found when a citation over it is its section. legalir.legal.citations gives
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


# ------------------------------------------------------------------ every code, read from its HTML alone (issue 35)
# ``citation_groundtruth.py codes``: a reader of the publisher's pages of its own (no code shared with
# legalir/datasets/statutes.py), so that the measure does not move with the converter. Each paragraph
# (``<p>``, ``<li>``, ``<td>``, ``<h4>``, without the blocks nested in it) is read with its links: a
# ``<cite>`` holding an ``<a href>`` to an anchor of this code (``#t16c03s16-3-106``,
# ``gov.wy.code.title.16.html#…``; North Dakota's links carry the class ``ocak``) is a citation the
# code's editors labelled with its section. Links to a section absent from the release are left out
# (counted), and so are links that cut their section's number ("N.D.C.C. § <a>5-01-06</a>.1" linked to
# 5-01-06, the publisher's error). For each paragraph holding a link:
#
# * recall: a link is found when a citation over its text has the linked section as its base;
# * precision: each citation of the home code (its key starts with the code's prefix) is right when it
#   lies over a link of that section, or inside a range whose linked ends it lies over; ``resolves``:
#   the share of home-code citations whose section exists in the release.
#
# legalir's rule table is read (``use_eyecite=False``: eyecite adds case citations and reporters' law
# citations, never a key of these codes, and costs most of the time). Systems: ``document`` (the citing section's code as the context of a bare ``§``/``Section``, the
# state as the hint: how ``legalir convert`` reads a section), ``query`` (the state as the hint, its
# code as the context: how ``citations.query_clauses`` reads a question asked of one code), ``plain``
# (nothing given: a question in a TSV with no state).
#
# Vermont's pages (and North Carolina's before r81) have no links: their ``<cite>`` elements are checked
# instead. One that is the title-first
# form the code prescribes (1 V.S.A. § 51: ``—— V.S.A. § ——``; ``17 V.S.A. § 2531``) labels that
# title's section, as a link does; any other (a session law: ``1955, No. 282``) is not the code, and a
# home-code citation over it is wrong (``over an act``).
_TAG_BLOCKS = frozenset(("p", "li", "td", "th", "h4", "dd", "dt", "blockquote"))
_NESTED = frozenset(("p", "li", "ol", "ul", "table", "div", "h3", "h4", "section", "blockquote", "dl"))
_WS_ = re.compile(r"\s+")
_H3_NUM = re.compile(r"§*\s*(\d[0-9A-Za-z]*(?:[-.:][0-9A-Za-z]+)*)")
_ANCHOR_SEC = re.compile(r"s(\d[0-9A-Za-z]*(?:[-.][0-9A-Za-z]+)*?)(?=ol\d|-[a-z]{3}|$)")
_TITLE_OF_FILE = re.compile(r"title\.0*([0-9A-Za-z.]+?)\.html$")
_VSA = re.compile(r"(\d{1,2}[A-Z]?) V\.S\.A\. §§? ?(\d+[a-z]*)(?:\s?\([0-9A-Za-z]{1,4}\))*")
_VSA_RANGE = re.compile(r"(\d{1,2}[A-Z]?) V\.S\.A\. §§ ?(\d+[a-z]*) ?[-–—] ?(\d+[a-z]*)")
CODES_STATES = ("ak", "ar", "co", "ga", "id", "ky", "ms", "nc", "nd", "ri", "tn", "va", "vt", "wy")
CODE_SYSTEMS = ("document", "query", "plain")


def _release_dirs(data_dir: str, state: str) -> list[Path]:
    root = Path(data_dir) / f"cic-code-{state}" / "transforms" / state / f"oc{state}"
    return sorted((p for p in root.glob("r*") if p.is_dir() and p.name[1:].isdigit()), key=lambda p: int(p.name[1:]))


def _title_files(rel: Path) -> list[Path]:
    return sorted(p for p in rel.glob("*.html") if ".title." in p.name)


def _inline_text(el, pieces: list, links: list, cite_cls: str | None) -> None:
    """``el``'s text and tail excluded, nested blocks excluded, a link in a ``<cite>`` marked."""
    if not isinstance(el.tag, str):
        return
    if el.tag == "a" and cite_cls is not None and el.get("href"):
        pieces.append(f"\x01{len(links)}\x02{el.text_content()}\x03")
        links.append((el.get("href"), cite_cls))
        return
    cls = el.get("class") or "" if el.tag == "cite" else cite_cls
    pieces.append(el.text or "")
    for k in el:
        if isinstance(k.tag, str) and k.tag not in _NESTED:
            _inline_text(k, pieces, links, cls)
        if isinstance(k.tag, str) or k.tail:
            pieces.append(k.tail or "")


_MARKED = re.compile(r"\x01(\d+)\x02([^\x03]*)\x03")


def _paragraph(el) -> tuple[str, list[tuple[int, int, str]]]:
    """A paragraph's text as a browser shows it (white space one space; the pages' pretty-printing puts a space
    before ``, . ; : ) ]`` and after ``( [``, which is dropped: "8-2-135</a> .1(a)" reads "8-2-135.1(a)"), and its
    links' spans. A link's own spaces move outside it ("Former<cite>§ 1-802 </cite>was": "Former§ 1-802 was")."""
    pieces, links = [], []
    _inline_text(el, pieces, links, None)
    raw = _WS_.sub(" ", "".join(pieces))
    raw = re.sub(r"(\x01\d+\x02) ", r" \1", raw)
    raw = re.sub(r" \x03", "\x03 ", raw)
    raw = _WS_.sub(" ", raw).strip()
    raw = re.sub(r" (?=\x03?[,.;:)\]])|(?<=[(\[]) ", "", raw)
    out, spans, pos, n = [], [], 0, 0
    for m in _MARKED.finditer(raw):
        out.append(raw[pos:m.start()])
        n += m.start() - pos
        t = m.group(2)
        spans.append((n, n + len(t), links[int(m.group(1))][0]))
        out.append(t)
        n += len(t)
        pos = m.end()
    out.append(raw[pos:])
    return "".join(out), spans


def read_code(rel: Path, state: str) -> tuple[dict, list[dict], set]:
    """(anchor -> (title, section) of every ``<h3>``, the paragraphs with their links and session-law cites,
    the (title, section) pairs of the release)."""
    import lxml.html

    anchors: dict[str, tuple[str, str]] = {}
    paras: list[dict] = []
    for f in _title_files(rel):
        m = _TITLE_OF_FILE.search(f.name)
        if not m:
            continue
        title = m.group(1).lstrip("0") or "0"
        root = lxml.html.parse(str(f), parser=lxml.html.HTMLParser(encoding="utf-8")).getroot()
        section = None
        for el in root.iter():
            if not isinstance(el.tag, str):
                continue
            if el.tag == "h3":
                num = _H3_NUM.match(_WS_.sub(" ", el.text_content()).strip())
                aid = el.get("id") or ""
                sec = num.group(1) if num else None
                if sec is None:
                    a = _ANCHOR_SEC.findall(aid)
                    sec = a[-1] if a else None
                section = (title, sec) if sec else None
                if sec and aid:
                    anchors[aid] = (title, sec)
                continue
            if el.tag not in _TAG_BLOCKS or section is None:
                continue
            text, spans = _paragraph(el)
            if not text:
                continue
            acts = [_WS_.sub(" ", c.text_content()).strip() for c in el.iter("cite") if c.find("a") is None]
            if spans or acts:
                paras.append({"text": text, "links": spans, "acts": acts, "section": section,
                              "file": f.name, "line": el.sourceline})
    return anchors, paras, set(anchors.values())


def _gold(href: str, rel: Path, anchors: dict) -> tuple[str, str] | None:
    """The (title, section) a link names: its anchor's ``<h3>``, else the anchor's last ``s<number>``."""
    target, _, anchor = href.partition("#")
    if not anchor or "/" in target or target.startswith("http"):
        return None
    if anchor in anchors:
        return anchors[anchor]
    base = re.sub(r"ol\d\w*$", "", anchor)
    if base in anchors:
        return anchors[base]
    m = _ANCHOR_SEC.findall(anchor)
    t = re.match(r"t0*([0-9A-Za-z.]+?)(?=[a-z])", anchor)
    return (t.group(1) if t else "", m[-1]) if m else None


def _home_prefix(state: str, title: str) -> str:
    return citations.code_context(state, title)


def measure_code(rel: Path, state: str, systems=CODE_SYSTEMS) -> dict:
    anchors, paras, existing = read_code(rel, state)
    # a release without links (Vermont; North Carolina before r81): its other <cite>s are checked instead
    linked = any(p["links"] for p in paras)
    if linked:
        for p in paras:
            p["acts"] = []
    exists = {citations.code_key(state, s, t) for t, s in existing}
    home = citations.code_context(state, "0")
    home = home[: -len("_0")] if home.endswith("_0") else home
    tally = {s: Counter() for s in systems}
    misses = {s: Counter() for s in systems}
    wrong = {s: Counter() for s in systems}
    links_n = dangling = cut = 0
    examples: dict = {s: {} for s in systems}
    dangling_ex: list = []

    def example(system, kind, text, a, b, note=""):
        ex = examples[system].setdefault(kind, [])
        if len(ex) < 3:
            ex.append(text[max(0, a - 60):b + 30] + note)
    for p in paras:
        golds = []
        for a, b, href in p["links"]:
            g = _gold(href, rel, anchors)
            if g is None:
                continue
            key = citations.code_key(state, g[1], g[0])
            if re.match(r"\.[0-9]", p["text"][b:b + 2]) and not g[1].endswith(p["text"][a:b].strip()[-1:] + p["text"][b:b + 2]):
                cut += 1  # the link cuts its section's number: "5-01-06</a>.1" linked to 5-01-06 (ND r80, GA)
                continue
            if key not in exists:
                dangling += 1
                if len(dangling_ex) < 10:
                    dangling_ex.append(f"{href} {g} {p['text'][max(0, a - 30):b + 10]}")
                continue
            golds.append((a, b, key))
        acts, at = [], 0
        for act in p["acts"]:  # Vermont's <cite>s: "17 V.S.A. § 2531" (a citation of the code), else an act
            i = p["text"].find(act, at)
            if i < 0 or not act:
                continue
            at = i + len(act)
            m = _VSA.fullmatch(act) or _VSA_RANGE.fullmatch(act)
            if m:  # a section, or a range's two ends (as the other codes link a range's ends)
                for sec in m.groups()[1:]:
                    key = citations.code_key(state, sec, m.group(1))
                    if key in exists:
                        golds.append((i, i + len(act), key))
                    else:
                        dangling += 1
            else:
                acts.append((i, i + len(act)))
        if not golds and not acts:
            continue
        links_n += len(golds)
        for system in systems:
            kwargs = {"plain": {}, "query": {"jurisdiction_hint": state, "context": citations.general_code(state)},
                      "document": {"jurisdiction_hint": state,
                                   "context": _home_prefix(state, p["section"][0])}}[system]
            found = citations.extract(p["text"], unique=False, use_eyecite=False, **kwargs)
            t = tally[system]
            for a, b, key in golds:
                ok = any(c.start < b and c.end > a and (c.base == key or c.key == key) for c in found)
                t["links"] += 1
                t["found"] += ok
                if not ok:
                    misses[system][_form(p["text"], a)] += 1
                    example(system, "missed: " + _form(p["text"], a), p["text"], a, b, f" [{key}]")
            for c in found:
                if not c.key.startswith(home + "_"):
                    t["other codes"] += 1
                    continue
                t["home"] += 1
                t["resolves"] += c.base in exists
                if any(c.start < b and c.end > a for a, b in acts):
                    t["over an act"] += 1
                    wrong[system][f"over an act: {p['text'][max(0, c.start - 20):c.end]}"] += 1
                    continue
                if not golds:
                    continue
                t["home, linked paragraph"] += 1
                over = [(a, b, key) for a, b, key in golds if c.start < b and c.end > a]
                right = any(key == c.base for _, _, key in over) or _between(c.base, [k for _, _, k in over])
                t["right"] += right
                if not right:
                    why = "over a link of another section" if over else "not over a link"
                    wrong[system][f"{why}: {_form(p['text'], c.start)}"] += 1
                    example(system, f"{why}: {_form(p['text'], c.start)}", p["text"], c.start, c.end)
    out = {"state": state, "release": rel.name[1:], "links": links_n, "dangling links": dangling,
           "links cutting their section's number": cut,
           "paragraphs": len(paras), "linked": linked, "systems": {}}
    for system in systems:
        t = tally[system]
        out["systems"][system] = {
            "links": t["links"], "recall": round(t["found"] / t["links"], 4) if t["links"] else None,
            "precision": round(t["right"] / t["home, linked paragraph"], 4) if t["home, linked paragraph"] else None,
            "resolves": round(t["resolves"] / t["home"], 4) if t["home"] else None,
            "home citations": t["home"], "over an act": t["over an act"], "other codes": t["other codes"],
            "missed, by what precedes": dict(misses[system].most_common(25)),
            "wrong, by what precedes": dict(wrong[system].most_common(25)),
            "examples": {k: examples[system][k] for k in list(dict(misses[system].most_common(8)))
                         for k in ("missed: " + k,) if k in examples[system]}
            | {k: examples[system][k] for k in list(dict(wrong[system].most_common(8))) if k in examples[system]}}
    out["dangling examples"] = dangling_ex
    return out


def _form(text: str, at: int) -> str:
    """What precedes ``at``: its last two words, digits as 9 (the shape of the citation's lead)."""
    before = text[max(0, at - 24):at].split()
    return re.sub(r"\d", "9", " ".join(before[-2:])) + " _"


def _between(base: str, golds: list[str]) -> bool:
    head, _, last = base.rpartition("_")
    ends = [int(g.rpartition("_")[2]) for g in golds if g.rpartition("_")[0] == head and g.rpartition("_")[2].isdigit()]
    return last.isdigit() and len(ends) >= 2 and min(ends) < int(last) < max(ends)


def codes_table(results: list[dict]) -> str:
    lines = ["| code | release | links | document P / R | query P / R | plain P / R | resolves (document) |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        cells = []
        for s in CODE_SYSTEMS:
            v = r["systems"].get(s)
            if v is None:
                cells.append("")
                continue
            p = "–" if v["precision"] is None else f"{v['precision']:.3f}"
            rc = "–" if v["recall"] is None else f"{v['recall']:.3f}"
            cells.append(f"{p} / {rc}")
        res = r["systems"].get("document", {}).get("resolves")
        lines.append(f"| {r['state']} | r{r['release']} | {r['links']} | " + " | ".join(cells)
                     + f" | {'–' if res is None else f'{res:.3f}'} |")
    return "\n".join(lines)


def codes_main(argv) -> int:
    ap = argparse.ArgumentParser(prog="citation_groundtruth.py codes",
                                 description="citation extraction against every code's own links (issue 35)")
    ap.add_argument("--data-dir", required=True, help="holding cic-code-XX/transforms/XX/ocXX/rNN")
    ap.add_argument("--states", default=",".join(CODES_STATES))
    ap.add_argument("--releases", type=int, default=2, help="the newest N releases of each code")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    import logging
    logging.getLogger("eyecite").setLevel(logging.ERROR)
    work = [(rel, s) for s in args.states.split(",") for rel in _release_dirs(args.data_dir, s)[-args.releases:]]
    t0 = time.perf_counter()
    if args.jobs > 1:
        import multiprocessing
        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            results = pool.starmap(_measure_one, work)
    else:
        results = [_measure_one(rel, s) for rel, s in work]
    print(codes_table(results))
    print(f"{len(results)} releases, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


def _measure_one(rel: Path, state: str) -> dict:
    t = time.perf_counter()
    r = measure_code(rel, state)
    print(f"{state} {rel.name}: {r['links']} links, {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    return r


if __name__ == "__main__":
    sys.exit(codes_main(sys.argv[2:]) if sys.argv[1:2] == ["codes"] else main())
