"""One file of the publisher's HTML -> the sections it holds (:func:`read_sections`), with a located account of
what was read and skipped (:class:`Report`)."""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from legalir.datasets.statutes.blocks import WS, Block, Link, blocks_of, bold_only, finish_block
from legalir.datasets.statutes.codes import LIST_ITEM, NUM, PLACE, STATES, anchor_section, expand_range, plural_range
from legalir.datasets.statutes.headings import (
    HISTORY_CUT,
    HISTORY_LINE,
    SOURCE_WORD,
    decisions_follow,
    heading_of,
    is_history_line,
    lead_of,
    norm_heading,
    opens_annotations,
)

_TRAILING_STATUS = re.compile(r"\[\s*(?P<what>repealed|reserved|transferred|renumbered|expired|recodified)\b[^\]]{0,200}\]\s*$",
                              re.I)
#: a section heading: ``§ 8-2-1. Heading``, ``Sec. 09.10.070. Heading`` (Alaska), ``§§ 1-2-1 through 1-2-5. Repealed.``,
#: ``§§ 47-1, 47-2.``, ``§§ 61-69. Repealed.`` (a range joined by a hyphen: :func:`plural_range`)
_HEAD = re.compile(rf"(?P<mark>§§?|Secs?\.)?\s*(?P<first>{NUM})(?:\s*(?P<sep>through|to|–|—|-)\s*(?:§§?\s*)?(?P<last>{NUM})"
                   rf"|(?P<list>(?:\s*(?:,|and|&)\s*(?:§§?\s*)?{NUM})+))?\s*[.:]?(?=\s|$)\s*(?P<rest>.*)", re.S)
_BOLD_SECTION = re.compile(rf"§§?\s*{NUM}[.:]\s+\S")
_REPEALED = re.compile(r"\[?\s*(?:repealed|transferred|redesignated|recodified|renumbered|expired)\b(?!\s+effective)",
                       re.I)
_RESERVED = re.compile(r"\[?\s*reserved\b", re.I)
_FUTURE = re.compile(r"\[\s*(?:effective|for effective date)\b(?!\s+until)", re.I)
#: the file of a title of the code (``gov.ga.ocga.title.08.html``); the publisher's other files (the state's
#: and the U.S. constitutions, ``gov.ky.krs.constitution.us.html``) are not the code's sections
#: (Idaho names its files ``idaho.title.01.html``; Virginia's compilation of interstate compacts,
#: ``gov.va.compact.title.01.html``, reprints sections of the code: read, the code's own print kept)
TITLE_FILE = re.compile(r"(?:gov\.[a-z]{2}\.\w+|[a-z]+)\.title\.[\w.]+\.html")


# ------------------------------------------------------------------ a section
@dataclass
class Section:
    """A section as read from one ``<h3>`` and what follows it, before keys are given."""

    anchor: str
    file: str
    line: int | None
    number: str
    numbers: list[str]
    heading: str
    heading_path: list[str]
    status: str
    future: bool
    text: list[Block]
    history: list[Block]
    notes: list[Block]
    case_notes: list[Block]
    unknown_h4: list[str] = field(default_factory=list)


def _status(heading: str, text: list[Block], history: list[Block]) -> str:
    trailing = _TRAILING_STATUS.search(heading)  # Kentucky: "Special courts-martial. [Repealed.]"
    trailing = trailing.group("what").lower() if trailing else None
    if _RESERVED.match(heading) or trailing == "reserved" or (not text and re.search(r"\breserved\b", heading, re.I)) \
            or (text and re.match(r"\[?\s*reserved\s*[.\]]", text[0].text, re.I)):
        return "reserved"  # (Georgia before release 85 prints "Reserved. Repealed by Ga. L. 2021 ..." as the text)
    if _REPEALED.match(heading) or trailing is not None or re.match(r"\[?\s*repealed\b(?!\s+effective)", text[0].text if text else "", re.I):
        return "repealed"
    if not text and any(re.search(r"\brepealed\b", b.text, re.I) for b in history):
        return "repealed"  # "2-10-130 through 2-10-140." whose history says "repealed by Ga. L. 2013 ..."
    return "in force"


#: a history the publisher ran into the text's last list item (Georgia before release 83: ``... products.
#: (Code 1981, § 8-2-2, enacted by Ga. L. 1990, p. 1212, § 1.)``): parentheses balanced one deep, to the end
_TRAILING_HISTORY = re.compile(r"(?<=\s)\((?:Orig\. |Civil |Penal )?Code \d{4}, [^()]*(?:\([^()]*\)[^()]*)*\)\s*$")


def _split_trailing_history(text: list[Block], history: list[Block]) -> None:
    """Move a history run into the end of the last text block (:data:`_TRAILING_HISTORY`) to ``history``."""
    last = text[-1]
    start = last.text.find("(")
    m = None
    while start >= 0 and m is None:  # each "(" tried once; only "(Code 1981, " goes past its first words
        m = _TRAILING_HISTORY.match(last.text, start)
        start = last.text.find("(", start + 1)
    if m is None:
        return
    cut = m.start()
    history.append(Block(last.text[cut:].strip(), [Link(k.href, k.cls, k.text, k.start - cut, k.end - cut)
                                                   for k in last.links if k.start >= cut], last.line))
    head = last.text[:cut].rstrip()
    if head:
        text[-1] = Block(head, [k for k in last.links if k.end <= cut], last.line)
    else:
        text.pop()



def _lift_annotations(el) -> list:
    """``[el]``, or, where the publisher left a section's annotations inside its last list item (an unclosed
    ``<li>``: Tennessee's ``<ol>... <li>(5) Evidence ... <p>Code, 1858, § 4352</p><p>Textbooks. ...</p>``),
    ``[el, *the annotations]``, taken out of the list so that they are read as annotations, not text."""
    if el.tag not in ("ol", "ul"):
        return [el]
    start = next((x for x in el.iter("p", "div", "h4") if x is not el and opens_annotations(x)), None)
    if start is None:
        return [el]
    lifted, node = [], start
    while node is not el:  # the start, what follows it in its parent, then what follows each ancestor
        parent = node.getparent()
        following = ([node] if node is start else []) + list(node.itersiblings())
        for x in following:
            parent.remove(x)  # (with its tail: text between annotations, read as a block of its own below)
            if isinstance(x.tag, str):
                lifted.append(x)
        node = parent
    return [el, *lifted]


#: what an ``<h3>`` is: the heading of a section; a heading inside a section (no id, as Mississippi prints its
#: notes' paragraphs in title 79, or an id under the section's own, as Idaho prints a compact's ``ARTICLE I``),
#: read as a paragraph of that section; or the heading of a part of the code (Arkansas's ``Subchapter 1 —
#: General Provisions``) or of what is not a section (Vermont's executive orders), which ends a section
H3_SECTION, H3_INSIDE, H3_OTHER = "section", "inside", "other"


def _h3_kinds(h3s: list) -> dict:
    """Each ``<h3>`` of a file -> (kind, the heading's match or None)."""
    kinds: dict = {}
    last_anchor = None
    for h3 in h3s:
        anchor = (h3.get("id") or "").strip()
        head = WS.sub(" ", h3.text_content()).strip()
        m = _HEAD.fullmatch(head[:400]) if anchor else None
        if not anchor or (m is None and last_anchor and anchor.startswith(last_anchor)
                          and (anchor[len(last_anchor):len(last_anchor) + 1].isalpha()
                               or anchor[len(last_anchor):len(last_anchor) + 1] == "-")):
            kinds[h3] = (H3_INSIDE, None)
        elif m is None:
            kinds[h3] = (H3_OTHER, None)
        else:
            kinds[h3] = (H3_SECTION, m)
            last_anchor = anchor
    return kinds


def _section_body(h3, kinds: dict | None = None) -> Iterator:
    """The elements after ``h3`` up to the next heading of a section or part (in its parent); annotations the
    publisher left inside a list are taken out of it (:func:`_lift_annotations`). An ``<h3>`` inside the
    section (:func:`_h3_kinds`) is part of it, and so are the ``<div>``s after the section's own that begin with
    one (Idaho's compacts: ``<div><h3 id="…s16-1901aI">ARTICLE I</h3>…</div>`` after ``§ 16-1901``'s)."""
    kinds = kinds or {}

    def inside(el) -> bool:
        return kinds.get(el, (None,))[0] == H3_INSIDE

    for sib in h3.itersiblings():
        if not isinstance(sib.tag, str):
            continue
        if sib.tag in ("h1", "h2") or (sib.tag == "h3" and not inside(sib)):
            return
        if sib.tag in ("div", "section") and any(not inside(x) for x in sib.iter("h3")):
            return
        yield from _lift_annotations(sib)
    parent = h3.getparent()
    if parent is None or parent.tag not in ("div", "section"):
        return
    for sib in parent.itersiblings():
        if not isinstance(sib.tag, str):
            continue
        heads = list(sib.iter("h3")) if sib.tag in ("div", "section") else []
        if not heads or not all(inside(x) for x in heads) or not (heads[0].get("id") or "").startswith(h3.get("id") or "\0"):
            return
        yield sib


def _leaves(el) -> Iterator:
    """The paragraphs, lists and headings of an element in document order (a ``<div>``'s children, and the text
    between them as ``(text, line)``)."""
    tag = el.tag if isinstance(el.tag, str) else None
    if tag is None:
        return
    if tag in ("div", "section", "main"):
        if el.text and el.text.strip():
            yield (el.text, el.sourceline)
        for child in el:
            yield from _leaves(child)
            if child.tail and child.tail.strip():
                yield (child.tail, el.sourceline)
        return
    yield el



_PARA_SECTION = re.compile(rf"§§?\s*(?P<num>{NUM})\s*\.\s+\S")
#: a note of research references (which leaves a block of case notes it is printed in)
_REFERENCE_NOTE = re.compile(r".{0,40}(?:references?|law reviews?|periodicals|textbooks|c\.j\.s|cjs|a\.?l\.?r)|am\. ?jur.{0,60}")
#: the history of a repealed section printed as its paragraph (Mississippi: ``§65-3-72. [Laws, 1972, ch. 380, § 1]``)
_FORMER_HISTORY = re.compile(rf"§\s*{NUM}\s*\.\s*\[(?:Codes|Laws|Code|Acts|En)\b")
#: a paragraph that opens with a list label, ``(4) There shall be ...``
_LIST_LABEL = re.compile(r"\((?:\d{1,3}|[a-z]{1,3}|[A-Z])\) [A-Z“\"]")


def _paragraph_headings(root, label: str, report: Report) -> None:
    """Section headings the publisher printed as paragraphs, turned into the ``<h3>`` they stand for:
    Mississippi's title 79, ``<p>§<cite><a href="#t79c11s79-11-123">79-11-123</a></cite>. Signing false
    document ...</p>``, where the link names the section's own anchor, which no element holds and the chapter's
    table of contents lists."""
    ids = None
    listed = None
    chapter = ""
    for el in root.iter("h2", "h3"):
        # an <h3> without an id that reads "§ 51-11-101. Dissolution; ..." (Mississippi's title 51, whose table of
        # contents names it by a garbled anchor): its chapter's anchor and its number (t51c11s51-11-101)
        if el.tag == "h2":
            chapter = el.get("id") or chapter
            continue
        txt = WS.sub(" ", el.text_content()).strip()
        m = _PARA_SECTION.match(txt)
        if el.get("id") or m is None or not chapter:
            continue
        anchor = f"{chapter}s{m.group('num')}"
        report.note("a section heading in an <h3> without an id: its chapter's anchor and its number",
                    f"{located(label, el.sourceline, anchor)}: {txt[:80]!r}")
        el.set("id", anchor)
    for p in root.iter("p"):
        if not (p.text or "").strip().startswith("§"):
            continue
        kids = [k for k in p if isinstance(k.tag, str)]
        if not kids or kids[0].tag != "cite" or len(kids) != 1:
            continue
        links = [a for a in kids[0].iter("a") if (a.get("href") or "").startswith("#")]
        txt = WS.sub(" ", p.text_content()).strip()
        m = _PARA_SECTION.match(txt)
        if len(links) != 1 or m is None or len(txt) > 400:
            continue
        anchor = links[0].get("href")[1:]
        if ids is None:
            ids = {e.get("id") for e in root.iter() if isinstance(e.tag, str) and e.get("id")}
            listed = {a.get("href")[1:] for nav in root.iter("nav") for a in nav.iter("a")
                      if (a.get("href") or "").startswith("#")}
        if anchor in ids or anchor not in listed or anchor_section(anchor) != m.group("num"):
            continue
        report.note("a section heading printed as a paragraph that links to its own anchor: read as its <h3>",
                    f"{located(label, p.sourceline, anchor)}: {txt[:80]!r}")
        for child in list(p):
            p.remove(child)
        p.text = txt
        p.tag = "h3"
        p.set("id", anchor)
        ids.add(anchor)


def read_sections(label: str, data: bytes, report: Report, state: str) -> list[Section]:
    """Every section of one published file."""
    root = _parse(label, data, report)
    if root is None:
        return []
    places = _places(root)
    _paragraph_headings(root, label, report)
    out: list[Section] = []
    h3s = list(root.iter("h3"))
    if not h3s:
        report.skip("file without any section (<h3>)", label)
    kinds = _h3_kinds(h3s)
    used: set = set()  # the <h3>s inside a section read as its paragraphs
    for h3 in h3s:
        report.read += 1
        section = _read_section(h3, kinds, places, used, label, report)
        if section is not None:
            out.append(section)
    _report_h3s_inside(h3s, kinds, used, label, report)
    _report_bold_section_headings(root, label, report)
    if STATES[state].hyphenated:
        _add_chapters(out, report)
    return out


def _parse(label: str, data: bytes, report: Report):
    """The file's HTML tree, or None (a skip in ``report``) where it cannot be parsed."""
    import lxml.html
    from lxml import etree

    try:
        return lxml.html.document_fromstring(data, parser=lxml.html.HTMLParser(encoding="utf-8"))
    except (etree.ParserError, ValueError) as e:
        report.skip("file that cannot be parsed as HTML", f"{label}: {e}")
        return None


def _places(root) -> dict[str, str]:
    """``{anchor: heading}`` of the parts of the code a file holds (its ``<h1>`` and ``<h2>``)."""
    places: dict[str, str] = {}
    for h in root.iter("h1", "h2"):
        if h.get("id"):
            places[h.get("id")] = WS.sub(" ", h.text_content()).strip()
    return places


def _read_section(h3, kinds: dict, places: dict[str, str], used: set, label: str, report: Report) -> Section | None:
    """The section an ``<h3>`` heads, or None where it heads none (a skip in ``report``, or an ``<h3>`` inside a
    section, read with it)."""
    where = located(label, h3.sourceline, h3.get("id"))
    anchor = (h3.get("id") or "").strip()
    head = WS.sub(" ", h3.text_content()).strip()
    kind, m = kinds[h3]
    if kind == H3_INSIDE:
        return None  # read with its section (or reported below, when it is in none)
    if kind == H3_OTHER:
        # the heading of a part of the code (Arkansas's "Subchapter 1 — General Provisions"), or of what is not a
        # section (Vermont's executive orders): not a section
        report.skip("<h3> without a section number", f"{where}: {head[:80]!r}")
        return None
    first, numbers = _numbers(m, where, report)
    rest = m.group("rest").strip()
    path = [places[anchor[:i]] for i in range(1, len(anchor)) if anchor[i].islower() and anchor[:i] in places]
    body = _Body([x for el in _section_body(h3, kinds) for x in _leaves(el)], used, report, where)
    body.read()
    parts = body.parts
    text, history, notes, case = parts["text"], parts["history"], parts["notes"], parts["case"]
    if text and not history:
        _split_trailing_history(text, history)
    status = _status(rest, text, history)
    return Section(anchor, label, h3.sourceline, first, numbers, rest, path, status,
                   bool(_FUTURE.match(rest) or _FUTURE.search(rest[-200:])), text, history, notes, case, body.unknown)


def _numbers(m: re.Match, where: str, report: Report) -> tuple[str, list[str]]:
    """(the first number, every number) a section heading (:data:`_HEAD`'s match) prints: one, a list, a range."""
    first = m.group("first")
    numbers = [first]
    if m.group("last"):
        numbers = expand_range(first, m.group("last"))
        if numbers is None:
            report.note("range that cannot be expanded: its two ends kept", where)
            numbers = [first, m.group("last")]
    elif m.group("list"):
        numbers += LIST_ITEM.findall(m.group("list"))
    elif m.group("mark") == "§§" and plural_range(first):
        a, b = plural_range(first)
        first = a
        numbers = expand_range(a, b)
        if numbers is None:
            report.note("range that cannot be expanded: its two ends kept", where)
            numbers = [a, b]
        report.note("a range printed with a hyphen after §§ (§§ 61-69): one document per section", where)
    return first, list(dict.fromkeys(numbers))


class _Body:
    """The leaves of one section (:func:`_leaves`) read in order into its parts: ``text``, ``history``, ``notes``,
    ``case``; the part a leaf goes to is decided by the headings before it (:func:`heading_of`)."""

    def __init__(self, leaves: list, used: set, report: Report, where: str):
        self.leaves, self.used, self.report, self.where = leaves, used, report, where
        self.parts: dict[str, list[Block]] = {"text": [], "history": [], "notes": [], "case": []}
        self.unknown: list[str] = []
        self.part = "text"
        #: the kind of the <h4> whose block this is (case, notes, history), None before any; text between the
        #: elements (a ``(text, line)`` leaf) resets it to None (the reader before its split, kept as it was)
        self.block: str | None = None

    def read(self) -> None:
        for i, el in enumerate(self.leaves):
            if isinstance(el, tuple):
                self.block = None
                found = finish_block(el[0], [], el[1])
                if found.text:
                    self.parts[self.part].append(found)
                continue
            if el.tag == "h3":  # a heading inside the section: a paragraph of the part it is in
                self.used.add(el)
                self.parts[self.part].extend(blocks_of(el))
                continue
            if self.part == "history" and el.tag in ("p", "ol", "ul") and not isinstance(el, tuple) and \
                    _LIST_LABEL.match(WS.sub(" ", el.text_content()).strip()) or (self.part == "history" and el.tag in ("ol", "ul")):
                # statutory text the publisher printed under the history heading (Idaho's "<h5>History.</h5><p>(4) There
                # shall be ...</p><p>I.C., § 33-514, ...</p>"): text
                self.report.note("statutory text printed under the history heading: read as text", self.where)
                self.parts["text"].extend(blocks_of(el))
                continue
            if el.tag == "p" and self._history_paragraph(el):
                continue
            if self._heading(el, i):
                continue
            self.parts[self.part].extend(blocks_of(el))

    def _history_paragraph(self, el) -> bool:
        """Read a paragraph that is history (a former section's, a history line); whether it was one."""
        parts = self.parts
        txt = WS.sub(" ", el.text_content()).strip()
        lead = lead_of(el)
        if _FORMER_HISTORY.match(txt):
            parts["history"].extend(blocks_of(el))  # (Mississippi's "§65-3-72. [Laws, 1972, ch. 380, ...]")
            return True
        if not ((self.part != "case" and is_history_line(txt, lead)) or (self.part == "text" and not parts["history"]
                                                 and (HISTORY_LINE.match(txt) or SOURCE_WORD.match(txt)))):
            return False
        blocks = list(blocks_of(el))
        if blocks:
            b = blocks[0]
            cut = len(HISTORY_CUT.match(b.text).group(0))
            b = Block(b.text[cut:], [Link(k.href, k.cls, k.text, k.start - cut, k.end - cut)
                                     for k in b.links], b.line)
            if b.text:
                parts["history"].append(b)
            for extra in blocks[1:]:  # (a list run into the history line: kept with it)
                parts["history"].append(extra)
            if not b.text and len(blocks) == 1:
                self.part = "history"  # a bold "History." alone: the history follows it
                return True
        if self.part == "text" and parts["text"]:
            self.part = "notes"  # (a History line before any text, as in Kentucky's compacts: text follows)
        elif self.part == "history":
            self.part = "notes"
        return True

    def _heading(self, el, i: int) -> bool:
        """Follow a heading (the part what follows it goes to); whether the leaf is read no further (a history
        heading whose history follows it)."""
        hkind, heading, bold = heading_of(el)
        if heading is not None and el.tag == "h4" and hkind is not None:
            self.block = hkind
        if heading is None:
            return False
        name = norm_heading(heading)
        if self.part == "text":
            self._heading_in_text(el, i, hkind, heading, bold, name)
        else:
            self._heading_in_annotations(el, i, hkind, bold, name)
        # (Vermont's <h4>History</h4>, North Dakota's <h4>Source:</h4>: the history follows)
        return hkind == "history" and self.part == "history"

    def _heading_in_text(self, el, i: int, hkind: str | None, heading: str, bold: bool, name: str) -> None:
        """A heading in the statutory text: where the annotations begin, or a heading of the text."""
        if hkind == "case" and (bold or name != "cited"):  # (Tennessee's run-in "Cited:" only after)
            self.part = "case"
        elif hkind in ("notes", "weak"):
            self.part = "notes"
        elif hkind == "history" and (el.tag != "p" or bold_only(el) is not None):
            self.part = "history"
        elif el.tag == "p" and bold and bold_only(el) is not None and heading.rstrip().endswith("—"):
            # a heading in the annotations' form, "Revision of chapter. —" (Wyoming, Alaska, Virginia): a
            # note, or a decision's topic when decisions follow
            self.part = "case" if decisions_follow(self.leaves, i) else "notes"
        elif el.tag != "p":
            self.unknown.append(name)  # e.g. "Article II." of a compact: statutory text

    def _heading_in_annotations(self, el, i: int, hkind: str | None, bold: bool, name: str) -> None:
        """A heading in the annotations: the part that follows it, by its kind and by what follows it."""
        part, block = self.part, self.block
        if hkind == "case":
            self.part = "case"
        elif hkind == "notes" and not (part == "case" and (decisions_follow(self.leaves, i) or (
                block == "case" and not _REFERENCE_NOTE.fullmatch(name)))):
            # (in an <h4> block of case notes, only a research note leaves them: North Dakota's "Collateral
            # References."; an editor's note on the cases under it is theirs)
            self.part = "notes"  # (in case notes, North Carolina's "Editor's Note. — Most of the cases below
            # were decided under former law." before the decisions is theirs)
        elif hkind == "history" and el.tag in ("h5", "h6") and block in ("notes", "case") and part == block:
            pass  # a sub-heading of the block its <h4> opened (Idaho's Official Comment's "Source: Former
            # Section 1-102", under RESEARCH REFERENCES): of the block's kind, not the section's history
        elif hkind == "history":
            self.part = "history"
        elif bold and el.tag in ("h5", "h6"):
            pass  # a sub-heading of the block its <h4> opened (Idaho's comment's "Purpose and Scope."): its kind
        elif bold and (name == "analysis" or (block in ("case", "notes") and part == block and el.tag != "h4")
                       or (el.tag == "h4" and part == "notes")):
            pass  # a topic inside an <h4>'s block is of its kind (North Carolina's "I. In General" in CASE NOTES,
            # its official comments' definitions), an <h4> of no case kind among notes is a note; "Analysis",
            # the outline of the block it is in
        elif bold:  # a decision's topic, or a note's heading: by what follows it
            if decisions_follow(self.leaves, i):
                self.part = "case"
            elif hkind == "weak" or part == "history":
                self.part = "notes"
            if hkind is None and el.tag != "p":
                self.unknown.append(name)


def _report_h3s_inside(h3s: list, kinds: dict, used: set, label: str, report: Report) -> None:
    """Each ``<h3>`` that heads no section: a note where a section read it as a paragraph, else a skip."""
    for h3 in h3s:
        if kinds[h3][0] == H3_INSIDE and h3 not in used:
            report.skip("an <h3> outside any section that is not a section's heading (a chapter's note printed as "
                        "<h3>): not read", f"{located(label, h3.sourceline, h3.get('id'))}: "
                                           f"{WS.sub(' ', h3.text_content()).strip()[:80]!r}")
        elif kinds[h3][0] == H3_INSIDE:
            report.note("<h3> inside a section that is not a section's heading: read as a paragraph of that section",
                        f"{located(label, h3.sourceline, h3.get('id'))}")


def _report_bold_section_headings(root, label: str, report: Report) -> None:
    """A section heading printed as a bold paragraph (NC r80 "§ 1. Fee tail converted ..."), outside any
    section: reported, not read (its place is unknown)."""
    for p in root.iter("p"):
        bold = bold_only(p)
        if bold and _BOLD_SECTION.match(bold) and p.getparent() is not None and \
                any(isinstance(k.tag, str) and k.tag in ("h1", "h2") for k in p.getparent()):
            report.skip("a section heading printed as a bold paragraph, not an <h3>: not read",
                        f"{located(label, p.sourceline, None)}: {bold[:80]!r}")


def _add_chapters(sections: list[Section], report: Report) -> None:
    """In a code of hyphenated numbers, "§ 1." printed without its chapter (NC G.S. 41-1): the chapter of its
    place added."""
    for s in sections:
        if "-" not in s.number and len(s.numbers) == 1:
            place = PLACE.findall(s.anchor)
            chapter = re.sub(r"^[a-z]+0*", "", place[0]) if place else ""
            if chapter:
                report.note("section number printed without its chapter: the chapter of its place added",
                            f"{located(s.file, s.line, s.anchor)}: {s.number!r} read as {chapter}-{s.number}")
                s.number = s.numbers[0] = f"{chapter}-{s.number}"


def located(file: str, line: int | None, anchor: str | None) -> str:
    """``file:line (#anchor)``; libxml2 counts lines only up to 65535, past it the anchor locates."""
    at = f":{line}" if line and line < 65535 else ""
    return f"{file}{at} (#{anchor})" if anchor else f"{file}{at}"


# ------------------------------------------------------------------ the report
@dataclass
class Report:
    """What a conversion read, wrote and skipped (``manifest.json``, ``reader``)."""

    files: int = 0
    read: int = 0
    written: int = 0
    skipped: Counter = field(default_factory=Counter)
    skipped_first: dict = field(default_factory=dict)
    notes: Counter = field(default_factory=Counter)
    notes_first: dict = field(default_factory=dict)
    counts: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def skip(self, reason: str, where: str) -> None:
        self.skipped[reason] += 1
        self.skipped_first.setdefault(reason, [])
        if len(self.skipped_first[reason]) < 20:
            self.skipped_first[reason].append(where)

    def note(self, what: str, where: str) -> None:
        self.notes[what] += 1
        self.notes_first.setdefault(what, [])
        if len(self.notes_first[what]) < 10:
            self.notes_first[what].append(where)

    def as_dict(self) -> dict:
        return {"files": self.files, "sections_read": self.read, "documents_written": self.written,
                "skipped": dict(sorted(self.skipped.items())), "skipped_first": dict(sorted(self.skipped_first.items())),
                "notes": dict(sorted(self.notes.items())), "notes_first": dict(sorted(self.notes_first.items())),
                "counts": dict(sorted(self.counts.items())), "seconds": round(self.seconds, 2)}
