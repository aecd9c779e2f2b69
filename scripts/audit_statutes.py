"""An independent reader of the publisher's state codes, and an audit of a `legalir convert statutes` collection.

Issue 35 asks that every code the publisher (UniCourt for Public.Resource.Org, ``cic-code-XX``) publishes
be measured against a reader *sharing no code with the converter*. This is that reader. It imports
nothing from ``legalir``: it was written from the publisher's HTML alone (lxml), and reads the
converter's output only as the documented collection format (``corpus/docs.jsonl``: ``id``, ``section``,
``contents``, ``history``, ``notes``, ``case_notes``, ``citations``, ``source``; docs/statutes.md,
"One document per section").

What it reads, per release folder ``<data>/cic-code-XX/transforms/XX/ocXX/rNN/*.html``:

* **Sections.** Every ``<h3>`` of a title file (constitutions are not the code) whose heading is a section
  number (``§ 1-1-1.``, ``Sec. 01.05.006.``, ``6A.010.``, ``§ 41a.``). A heading for a range or list
  (``§§ 32-34.``, ``2-10-1 through 2-10-39.``, ``Secs. 02.10.020 , 02.10.030.``) counts one section per
  number it names (a span over 2000 is kept as one). Where numbers repeat across titles (Vermont: more
  than 5% of the numbers appear in two titles) a section's key carries its title (``9:41a``).
* **Its parts**, by reading the blocks from the heading to the next ``<h1>``-``<h3>`` in document order:
  ``text`` until the first annotation, then ``history``, ``notes`` or ``case_notes``. A block switches the
  kind by its label: the heading of an ``<h4>``-``<h6>``, or the leading label of a paragraph (bold or
  not: ``History.``, ``HISTORY:``, ``Source:``, ``Cross references. —``, ``Notes to Decisions`` ...), from a
  fixed vocabulary (``HISTORY``, ``NOTES``, ``CASE`` below). An unknown sub-heading inside an annotation
  returns to the kind of the last known ``<h4>`` (Colorado's ANNOTATION with its ``Law reviews.`` first);
  an unknown ``<h4>`` in the statutory text stays text (a compact's ``Article II.``). A history line
  without a label (Tennessee's ``Acts 1923, ch. 7, § 1; ...``) is history when it follows the text.
* **Cross-reference links**: every ``<cite class="ocXX"><a href="...#anchor">`` inside a section, the
  anchor resolved to the section holding that id in any file of the release (or, failing that, the
  section whose anchor is the longest prefix of it).

The comparison with a collection (``--collection``):

* **sections**: the reader's keys against the documents' (``section``; the title from ``source``'s file
  where keys carry one); every difference with its reason: ``missing in collection``, ``extra in
  collection``, ``section number mismatch`` (same anchor, other number);
* **leaks**: documents whose ``contents`` holds a sentence (30+ characters, whitespace and quotes
  normalised) the reader files as history, notes or case notes (and not also in the statutory text),
  per kind, with examples; and the reverse: statutory text not in ``contents``;
* **mislabels**: where each annotation block of the reader landed (``history``/``notes``/``case_notes``/
  ``contents``/nowhere), per kind; ``case notes filed under notes`` counts sections;
* **links**: (citing, cited) pairs, written as TSV (``--links-tsv``) for citation precision/recall, and the
  share of text+notes pairs the collection's ``citations`` field carries.

Usage (one release; ``--json`` keeps everything, stdout gets the summary)::

    python scripts/audit_statutes.py --data-dir /work/data/statutes --state nc --release 81 \\
        --collection /work/data/audit/nc-81 --json /work/data/audit/report-nc-81.json \\
        --links-tsv /work/data/audit/links-nc-81.tsv --eyeball /work/data/audit/eyeball-nc.md

    python scripts/audit_statutes.py table /work/data/audit/report-*.json   # the Markdown table
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import lxml.html

KINDS = ("text", "history", "notes", "case_notes")
ANNOT = ("history", "notes", "case_notes")
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
BLOCKS = HEADINGS | {"p", "li", "div", "ol", "ul", "table", "tr", "td", "th", "tbody", "thead", "tfoot",
                     "pre", "blockquote", "dl", "dd", "dt", "section", "article", "center", "caption",
                     "figure", "form", "main", "header", "footer", "aside"}
SKIP = {"nav", "script", "style", "head", "noscript"}

# ---- the vocabulary of labels (normalised: lower case, ’ -> ', no trailing punctuation) ----
HISTORY = {"history", "history of section", "source", "sources", "derivation", "statutory history"}
CASE = {"case notes", "notes to decisions", "notes to unpublished decisions", "judicial decisions",
        "annotation", "annotations", "notes to opinions", "opinions of attorney general",
        "opinions of the attorney general", "attorney general opinions", "opinion of attorney general",
        "circuit court opinions", "decisions under prior law", "decisions under former law",
        "decisions under current law", "cited", "cited in", "quoted", "quoted in", "applied",
        "applied in", "stated", "stated in", "analysis", "unpublished decision", "unpublished decisions"}
CASE_RX = re.compile(r"^(annotations? from former|decisions under |notes? to decisions|opinions? of (the )?attorney general)")
NOTES = {"editor's note", "editor's notes", "editors' notes", "editors' note", "editorial note", "editorial notes",
         "compiler's note", "compiler's notes", "revisor's note", "revisor's notes", "annotator's note",
         "annotator's notes", "publisher's note", "publisher's notes", "code commission note",
         "code commission notes", "a.c.r.c. notes", "a.c.r.c. note", "legislative research commission note",
         "legislative research commission notes", "joint legislative committee note", "cross references",
         "cross-references", "cross reference", "cross-reference", "compact cross references",
         "collateral references", "collateral reference", "research references",
         "research references and practice aids", "law review", "law reviews", "legal periodicals",
         "am. jur", "am. jur. 2d", "am. jur. pleading and practice forms", "am. jur. proof of facts",
         "am. jur. trials", "c.j.s", "cjs", "alr", "a.l.r", "u.s. code", "effective date", "effective dates",
         "effect of amendment", "effect of amendments", "amendment notes", "amendment note", "amendments",
         "delayed effective date", "delayed amendment", "delayed repeal of section", "administrative code",
         "administrative rules and regulations", "legislative history reports", "preambles", "preamble",
         "comparative legislation", "repealed sections", "prior law", "prior laws", "federal references",
         "federal act references", "federal aspects", "rules of court", "official comment",
         "official comments", "comment", "comments", "comments to official text",
         "2013 restated comments to official text", "comment to official text", "north carolina comment",
         "prefatory note", "introductory comment", "statutory notes", "note", "notes",
         "meaning of \"this act\"", "meaning of “this act", "conflicting legislation", "appropriations",
         "repealing clauses", "severability", "temporary provisions", "revision note", "revision notes",
         "references in text", "implementation", "michie's jurisprudence", "for related discussion, see",
         "changes from former law", "practice references", "comparable laws from other states",
         "lawyers' edition", "treatises", "kentucky law journal", "kentucky bench & bar",
         "northern kentucky law review", "idaho law review", "ark. l. rev", "ark. l. notes",
         "u. ark. little rock l. rev", "u. ark. little rock l.j", "savings clauses", "revision of title",
         "effective date of amendments", "law review articles", "transferred sections", "research references.", "j.s", "l.r",
         "official comment to", "official text", "editor's note to", "transfer of functions"}
NOTES_RX = re.compile(r"^(the \d{4} amendments?\b|official comments?\b|(north carolina |\d{4} restated )?comments? to\b|\d{4}-\d{4} budget reference|.*\blaw review\b|"
                      r".*\bl\. ?rev\b|.*\blaw journal\b|am\. jur\.|c\.j\.s\.)")
#: notes that are never part of the decisions, even inside a case-notes block (Colorado's ANNOTATION opens
#: with Law reviews., North Dakota's Notes to Decisions close with Collateral References.); an Editor's note
#: inside JUDICIAL DECISIONS is the annotator's, and stays with the decisions
RESEARCH_RX = re.compile(r"^(research references|collateral references?|cross[- ]references?|law reviews?|legal periodicals|"
                         r"am\. jur|c\.j\.s|cjs|alr|a\.l\.r|.*\blaw review\b|.*\bl\. ?rev\b|.*\blaw journal\b|treatises|"
                         r"practice references|lawyers' edition|michie's jurisprudence)")
#: a history line without its label (Tennessee), only where the statutory text was being read
BARE_HISTORY = re.compile(r"^(Acts \d{4}(-\d{4})?(\s*\([^)]*\))?,? (ch|No)\. ?\d|Code \d{4}, §|Priv\. Acts \d{4}|Private Acts \d{4}"
                          r"|\((?:\d{4}(?:, c\.|, Ex\.| \(|-\d)|Code,|C\. ?S\.|Rev\.,|R\. ?C\.,|P\. ?R\.)[^\n]*\)\.?$)")
LEADING_NUMBER = re.compile(r"^(?:[IVXL]+|[A-Z]|\d+)\.\s+")


def norm_label(s: str) -> str:
    s = " ".join(s.replace("’", "'").replace("‘", "'").replace("\u00a0", " ").split()).lower()
    return s.strip(" .:—–-")


def classify_label(label: str, heading: bool = False) -> str | None:
    """The kind a label opens (history, notes, case_notes), or None where the vocabulary does not know it."""
    lab = norm_label(label)
    if heading:
        lab = norm_label(LEADING_NUMBER.sub("", label.strip()))
    if not lab:
        return None
    if lab in HISTORY:
        return "history"
    if lab in CASE or CASE_RX.match(lab):
        return "case_notes"
    if lab in NOTES or NOTES_RX.match(lab):
        return "notes"
    return None


# ---- text normalisation for comparisons ----
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "—": "-", "–": "-", "\u00a0": " ",
                         "\u2009": " ", "\u202f": " ", "\u2002": " ", "\u2003": " "})


def norm_text(s: str) -> str:
    s = " ".join(s.translate(_QUOTES).split())
    s = re.sub(r" ([.,;:)\]])", r"\1", s)
    s = re.sub(r"([(\[]) ", r"\1", s)
    return s.lower()


_SENT = re.compile(r"[.!?][\"”’)]?\s+(?=[A-Z“\"(\[])")
_ABBREV = re.compile(r"(?:^|\s)(?:[A-Za-z]{1,4}\.)+$|(?:^|\s)(?:[A-Z][a-z]{0,5}\.)$|§$")


def body(b: Block) -> str:
    """A block's text without its leading label (``History.``, ``Cross References. —``): the collection
    may keep the label or drop it."""
    t = b.text
    if b.label and not b.tag.startswith("h") and t.startswith(b.label) and classify_label(b.label):
        t = t[len(b.label):].lstrip(" .:—–-")
    return t


def pieces(raw: str, minimum: int = 40) -> list[str]:
    """Sentences of a block (normalised) long enough to be evidence of where it went: split at a stop
    followed by a capital, not after an abbreviation (``G.S.``, ``c.``, ``No.``, ``Ann.``), never at a
    semicolon (a history line is one list); a block with no such sentence is one piece if 20+ long."""
    out, start = [], 0
    for m in _SENT.finditer(raw):
        before = raw[start:m.start() + 1]
        if _ABBREV.search(before.rstrip(".!?") + ".") and raw[m.start()] == ".":
            continue
        out.append(raw[start:m.end()])
        start = m.end()
    out.append(raw[start:])
    got = [p for p in (norm_text(x) for x in out) if len(p) >= minimum]
    if not got:   # a short block (a history line "(§ 2 ch 136 SLA 2003)") is its own evidence
        whole = norm_text(raw)
        got = [whole] if len(whole) >= 20 else []
    return got


# ---- section numbers ----
_PREFIX = re.compile(r"^\s*(§§|§|Secs?\.|Sections?|Section)\s*")
_NUM = re.compile(r"\d[0-9A-Za-z.:\-]*")
_JOIN = re.compile(r"^\s*(?:,|—|–|-|through|thru|to|and|&)\s*(?:§\s*)?")


def parse_heading(text: str) -> tuple[list[str], str] | None:
    """The section numbers a heading names, and how (one, range, list); None for no number."""
    t = " ".join(text.replace("\u00a0", " ").split())
    m = _PREFIX.match(t)
    prefix = m.group(1) if m else ""
    rest = t[m.end():] if m else t
    n = _NUM.match(rest)
    if not n:
        return None
    first = n.group(0).rstrip(".-:")
    after = rest[n.start() + len(first):]
    if not prefix and "-" not in first and "." not in first and not re.match(r"^\s*([.:,]|—|–|-|through\b|to\b|$)", after):
        return None   # "18 Am. Jur. 2d, Corporations" is not a section heading
    nums = [first]
    how = "one"
    pos = n.start() + len(first)
    while True:
        rest2 = rest[pos:]
        rest2s = rest2.lstrip(".")
        j = _JOIN.match(rest2s)
        if not j:
            break
        n2 = _NUM.match(rest2s[j.end():])
        if not n2:
            break
        word = j.group(0).strip(" §").lower()
        nums.append(n2.group(0).rstrip(".-:"))
        how = "range" if word in ("—", "–", "-", "through", "thru", "to") else "list"
        pos += (len(rest2) - len(rest2s)) + j.end() + len(n2.group(0).rstrip(".-:"))
        if how == "range":
            break
    if prefix == "§§" and len(nums) == 1 and first.count("-") == 1:
        a, b = first.split("-")          # Vermont's "§§ 32-34." and "§§ 114-114a." are ranges
        if a[:1].isdigit() and b[:1].isdigit():
            nums, how = [a, b], "range"
    return nums, how


def expand(nums: list[str], how: str, cap: int = 100) -> list[str]:
    """The numbers a heading names: a range is enumerated where both ends differ only in their last
    integer and by at most ``cap``; a wider one (``26-4-101 to 26-4-1408``: parts, not every integer)
    is kept as its first number, one unit, compared by its anchor."""
    if how == "list" or how == "one":
        return nums
    a, b = nums[0], nums[-1]
    ma, mb = re.match(r"^(.*?)(\d+)$", a), re.match(r"^(.*?)(\d+)$", b)
    tail = []
    if ma and mb and ma.group(1) != mb.group(1):
        mb2 = re.match(r"^(.*?)(\d+)\.\d+$", b)   # 45-1 through 45-3.1: 45-1, 45-2, 45-3, 45-3.1
        if mb2 and mb2.group(1) == ma.group(1):
            mb, tail = mb2, [b]
    if not ma or not mb or ma.group(1) != mb.group(1):
        return [a, b] if b[:1].isdigit() else [a]   # 114 to 114a, 421a to 435: the ends, unenumerated
    lo, hi = int(ma.group(2)), int(mb.group(2))
    if hi < lo or hi - lo > cap:
        return [a]
    width = len(ma.group(2)) if ma.group(2).startswith("0") else 0
    return [f"{ma.group(1)}{i:0{width}d}" for i in range(lo, hi + 1)] + tail


def norm_num(s: str) -> str:
    return re.sub(r"\s+", "", s.translate(_QUOTES)).strip(".").lower()


# ---- the reading ----
@dataclass
class Block:
    kind: str
    text: str          # as printed, whitespace collapsed
    tag: str
    label: str | None = None


@dataclass
class Section:
    file: str
    anchor: str
    heading: str
    numbers: list[str]
    how: str
    title: str
    blocks: list[Block] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    line: int = 0

    def part(self, kind: str) -> str:
        return "\n".join(b.text for b in self.blocks if b.kind == kind)


def _text(el) -> str:
    return " ".join("".join(el.itertext()).split())


def _has_block(el) -> bool:
    for d in el.iterdescendants():
        if isinstance(d.tag, str) and d.tag in BLOCKS:
            return True
    return False


def _segments(el) -> list[tuple[str | None, str, list]]:
    """A leaf block's text, split before a bold label that is not at its start (annotations left inside
    the last list item). Returns (label or None, text, elements) per segment."""
    segs: list[list] = [[None, [], []]]

    def add(s):
        if s:
            segs[-1][1].append(s)

    def rec(e, top=False):
        if not top and e.tag == "b":
            btxt = _text(e)
            before = " ".join("".join(segs[-1][1]).split())
            if btxt and classify_label(btxt) and before:
                if re.search(r"[.;:)\]]\s*$", before) or e.getparent().tag != el.tag:
                    segs.append([btxt, [], []])
            elif btxt and not before and segs[-1][0] is None:
                segs[-1][0] = btxt
        segs[-1][2].append(e)
        add(e.text)
        for c in e:
            if isinstance(c.tag, str) and c.tag not in SKIP:
                rec(c)
            elif not isinstance(c.tag, str):
                pass
            add(c.tail)

    rec(el, top=True)
    out = []
    for i, (lab, parts, els) in enumerate(segs):
        out.append((("split:" if i else "") + lab if lab else None, " ".join("".join(parts).split()), els))
    return out


def _events(main):
    """(tag, element, text, label, elements) in document order; headings as their own events."""
    def walk(el):
        for c in el:
            if not isinstance(c.tag, str) or c.tag in SKIP:
                if isinstance(c.tag, str) and c.tag in SKIP and c.tail and c.tail.strip():
                    yield ("#text", el, " ".join(c.tail.split()), None, [])
                continue
            if c.tag in HEADINGS:
                yield (c.tag, c, _text(c), None, [x for x in c.iter() if isinstance(x.tag, str)])
            elif c.tag in BLOCKS and _has_block(c):
                if c.text and c.text.strip():
                    yield ("#text", c, " ".join(c.text.split()), None, [])
                yield from walk(c)
            else:
                for lab, txt, els in _segments(c):
                    if txt:
                        yield (c.tag, c, txt, lab, els)
            if c.tail and c.tail.strip():
                yield ("#text", el, " ".join(c.tail.split()), None, [])
    yield from walk(main)


_DELIMS = re.compile(r"\.\s*[—–-]{1,2}|\s[—–]|[—–]|:|\.(?=\s|$)")


#: labels that also head statutory paragraphs ("Implementation. A description of ...", a form's
#: "EFFECTIVE DATE"): in the statutory text they open an annotation only in bold, never in a list item
WEAK = {"implementation", "severability", "appropriations", "note", "notes", "comment", "comments", "effective date",
        "effective dates", "amendments", "amendment", "preamble", "preambles", "prior law", "prior laws",
        "savings clauses", "temporary provisions", "transfer of functions", "official text", "analysis", "cited",
        "applied", "stated", "quoted", "annotation", "annotations", "source", "sources", "derivation"}


def text_zone_switch(tag: str, label: str, bold: str | None, kind: str) -> bool:
    """Whether a known label read while in the statutory text opens an annotation."""
    lab = norm_label(label)
    if tag == "li":
        return False
    if lab in WEAK and not bold:
        return False
    if label.isupper() and kind != "case_notes" and not bold:
        return False
    return True


def _paragraph_label(text: str, bold: str | None) -> str:
    """The paragraph's label: its leading bold text, else the first prefix ending at a delimiter
    (``.``, ``:``, ``—``) within 70 characters that the vocabulary knows (``A.C.R.C. Notes.`` is not
    cut at ``A.``), else the first such prefix, else the whole of a short paragraph."""
    if bold:
        return bold
    head = text[:70]
    first = None
    for m in _DELIMS.finditer(head):
        cand = head[:m.start()]
        if first is None:
            first = cand
        if classify_label(cand):
            return cand
    if len(text) <= 60 and classify_label(text):
        return text
    return first if first is not None else (text if len(text) <= 60 else "")


@dataclass
class Reading:
    state: str
    release: str
    sections: list[Section] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped_files: dict = field(default_factory=dict)
    non_section_h3: Counter = field(default_factory=Counter)
    non_section_h3_first: list = field(default_factory=list)
    outside_blocks: int = 0
    unknown_labels: Counter = field(default_factory=Counter)
    links: list = field(default_factory=list)
    title_keys: bool = False
    chapter_added: list = field(default_factory=list)


def title_of(fname: str) -> str:
    m = re.search(r"title\.([0-9A-Za-z.]+?)\.html$", fname)
    if not m:
        return fname
    t = m.group(1)
    return t.lstrip("0") or "0"


def read_file(path: str, reading: Reading) -> None:
    fname = os.path.basename(path)
    root = lxml.html.parse(path).getroot()
    main = root.find(".//main")
    if main is None:
        reading.skipped_files[fname] = "no <main>: a file the publisher did not transform"
        return
    reading.files.append(fname)
    title = title_of(fname)
    cur: Section | None = None
    kind = "text"
    region = "text"
    for tag, el, text, bold, els in _events(main):
        if tag in ("h1", "h2", "h3"):
            parsed = parse_heading(text) if tag == "h3" else None
            if parsed:
                nums, how = parsed
                cur = Section(fname, el.get("id") or "", text, nums, how, title, line=el.sourceline or 0)
                cur.ids.extend(x.get("id") for x in el.iter() if isinstance(x.tag, str) and x.get("id"))
                reading.sections.append(cur)
                kind = region = "text"
            else:
                if tag == "h3":
                    reading.non_section_h3[re.sub(r"\d+", "9", text)[:24]] += 1
                    if len(reading.non_section_h3_first) < 20:
                        reading.non_section_h3_first.append(f"{fname}:{el.sourceline} (#{el.get('id')}): {text[:80]!r}")
                cur = None
            continue
        if cur is None:
            reading.outside_blocks += 1
            continue
        for x in els:
            if True:
                if isinstance(x.tag, str) and x.get("id"):
                    cur.ids.append(x.get("id"))
                if isinstance(x.tag, str) and x.tag == "cite":
                    for a in x.iter("a"):
                        href = a.get("href") or ""
                        if "#" in href:
                            reading.links.append((cur, None, href, _text(a)))  # kind filled below
        label = None
        if tag in ("h4", "h5", "h6"):
            k = classify_label(text, heading=True)
            if k:
                kind = region = k
            elif kind != "text" and re.match(r"^I\.\s*\S", text) and region != "case_notes":
                kind = region = "case_notes"   # "I. General Consideration": a decisions' analysis with no heading (Wyoming)
            elif kind != "text" and region != "text":
                kind = region
            label = text
        else:
            split = bool(bold and bold.startswith("split:"))
            if split:
                bold = bold[len("split:"):]
            label = _paragraph_label(text, bold)
            k = classify_label(label) if label else None
            if k and kind == "text" and not split and not (k == "history" and tag != "li") \
                    and not text_zone_switch(tag, label, bold, k):
                k = None
            if k is None and re.match(r"^the \d{4} amendments?\b", text, re.I):
                k = "notes"
            if k == "history" and kind in ("notes", "case_notes") and region != "history":
                k = None  # a "Source:" inside an official comment
            if k == "notes" and region == "case_notes" and not RESEARCH_RX.match(norm_label(label)):
                k = None  # an annotator's note among the decisions
            if k:
                kind = k
            elif kind == "notes" and region == "case_notes" and bold and not split:
                kind = region   # a decisions' topic ("Laches. —") after a research note among them
            elif kind == "text" and BARE_HISTORY.match(text):
                kind = "history"
            elif kind != "text" and label and len(label) < 50 and bold:
                reading.unknown_labels[(kind, norm_label(label))] += 1
        cur.blocks.append(Block(kind, text, tag, label))
        # the links of this block carry its kind
        for i in range(len(reading.links) - 1, -1, -1):
            if reading.links[i][1] is not None:
                break
            reading.links[i] = (reading.links[i][0], kind, reading.links[i][2], reading.links[i][3])


def read_release(data_dir: str, state: str, release: str) -> Reading:
    folder = os.path.join(data_dir, f"cic-code-{state}", "transforms", state, f"oc{state}", f"r{release}")
    if not os.path.isdir(folder):
        raise SystemExit(f"{folder}: no such release folder")
    reading = Reading(state, str(release))
    for path in sorted(glob.glob(os.path.join(folder, "*.html"))):
        if "constitution" in os.path.basename(path):
            reading.skipped_files[os.path.basename(path)] = "a constitution, not the code"
            continue
        read_file(path, reading)
    # a number printed without its chapter ("§ 1." under Chapter 41 of a code whose numbers are
    # chapter-section, G.S. 41-1): the title of its file is put before it, and counted
    hyph = sum(1 for s in reading.sections if "-" in s.numbers[0])
    if reading.sections and hyph / len(reading.sections) > 0.9:
        for s in reading.sections:
            if all("-" not in n and "." not in n for n in s.numbers) and re.fullmatch(r"\d+[A-Z]?", s.title):
                s.numbers = [f"{s.title}-{n}" for n in s.numbers]
                reading.chapter_added.append(f"{s.file}:{s.line} (#{s.anchor}): {s.heading[:60]!r}")
    # numbers unique only within a title?
    by_num = defaultdict(set)
    for s in reading.sections:
        for n in expand(s.numbers, s.how):
            by_num[norm_num(n)].add(s.title)
    repeated = sum(1 for v in by_num.values() if len(v) > 1)
    reading.title_keys = bool(by_num) and repeated / len(by_num) > 0.05
    return reading


def keys_of(reading: Reading, s: Section) -> list[str]:
    nums = expand(s.numbers, s.how)
    return [f"{s.title}:{norm_num(n)}" if reading.title_keys else norm_num(n) for n in nums]


# ---- the collection ----
def load_collection(folder: str) -> list[dict]:
    for rel in ("corpus/docs.jsonl", "corpus.jsonl"):
        p = os.path.join(folder, rel)
        if os.path.exists(p):
            with open(p, encoding="utf-8") as f:
                return [json.loads(line) for line in f if line.strip()]
    raise SystemExit(f"{folder}: no corpus/docs.jsonl")


def doc_key(reading: Reading, d: dict) -> str:
    num = norm_num(str(d.get("section", "")))
    if reading.title_keys:
        src = (d.get("source") or "").split("#")[0]
        return f"{title_of(src)}:{num}"
    return num


def doc_anchor(d: dict) -> tuple[str, str]:
    src = d.get("source") or ""
    f, _, a = src.partition("#")
    return os.path.basename(f), a


# ---- comparison ----
def compare_sections(reading: Reading, docs: list[dict]) -> dict:
    mine: dict[str, list[Section]] = defaultdict(list)
    for s in reading.sections:
        for k in keys_of(reading, s):
            mine[k].append(s)
    theirs: dict[str, list[dict]] = defaultdict(list)
    for d in docs:
        theirs[doc_key(reading, d)].append(d)
    dup_mine = {k: [f"{s.file}#{s.anchor}" for s in v] for k, v in mine.items() if len(v) > 1}
    dup_theirs = {k: [d["id"] for d in v] for k, v in theirs.items() if len(v) > 1}
    missing = [k for k in mine if k not in theirs]
    extra = [k for k in theirs if k not in mine]
    diffs = []
    # a range or list heading: its members as the collection enumerated them, by the heading's anchor
    range_anchor = {(s.file, s.anchor) for s in reading.sections if s.how != "one"}
    docs_at = defaultdict(list)
    for k in extra:
        for d in theirs[k]:
            docs_at[doc_anchor(d)].append(k)
    range_missing = [k for k in missing if mine[k][0].how != "one"]
    range_extra = [k for k in extra if any(doc_anchor(d) in range_anchor for d in theirs[k])]
    for k in range_missing:
        s = mine[k][0]
        diffs.append({"reason": f"range member missing in collection ({s.how} heading)", "key": k,
                      "where": f"{s.file}:{s.line} (#{s.anchor})", "heading": s.heading[:100]})
    for k in range_extra:
        d = theirs[k][0]
        diffs.append({"reason": "range member extra in collection", "key": k, "where": d.get("source"),
                      "id": d.get("id"), "heading": (d.get("title") or "")[:100]})
    missing = [k for k in missing if k not in set(range_missing)]
    extra = [k for k in extra if k not in set(range_extra)]
    # pair a missing and an extra that share an anchor: the number was read differently
    extra_by_anchor = defaultdict(list)
    for k in extra:
        for d in theirs[k]:
            extra_by_anchor[doc_anchor(d)].append(k)
    mismatch = []
    still_missing = []
    used = set()
    for k in missing:
        s = mine[k][0]
        cands = [e for e in extra_by_anchor.get((s.file, s.anchor), []) if e not in used]
        if cands:
            mismatch.append({"reader": k, "collection": cands[0], "anchor": f"{s.file}#{s.anchor}",
                             "heading": s.heading[:100]})
            used.add(cands[0])
        else:
            still_missing.append(k)
    extra_left = [k for k in extra if k not in used]
    for k in still_missing:
        s = mine[k][0]
        diffs.append({"reason": "missing in collection", "key": k, "where": f"{s.file}:{s.line} (#{s.anchor})",
                      "heading": s.heading[:100]})
    for m in mismatch:
        diffs.append({"reason": "section number mismatch", "key": m["reader"], "collection": m["collection"],
                      "where": m["anchor"], "heading": m["heading"]})
    for k in extra_left:
        d = theirs[k][0]
        diffs.append({"reason": "extra in collection", "key": k, "where": d.get("source"), "id": d.get("id"),
                      "heading": (d.get("title") or "")[:100]})
    headings = len(reading.sections)
    return {
        "reader_headings": headings,
        "reader_sections": len(mine),
        "reader_range_headings": sum(1 for s in reading.sections if s.how != "one"),
        "collection_documents": len(docs),
        "collection_keys": len(theirs),
        "matched": len(set(mine) & set(theirs)),
        "missing_in_collection": len(still_missing),
        "extra_in_collection": len(extra_left),
        "section_number_mismatch": len(mismatch),
        "range_members_missing": len(range_missing),
        "range_members_extra": len(range_extra),
        "reasons": dict(Counter(d["reason"] for d in diffs)),
        "differences": diffs,
        "reader_duplicate_keys": len(dup_mine),
        "reader_duplicate_first": dict(list(dup_mine.items())[:10]),
        "collection_duplicate_keys": len(dup_theirs),
        "collection_duplicate_first": dict(list(dup_theirs.items())[:10]),
        "_mine": mine, "_theirs": theirs,
    }


#: a decision or an Attorney General's opinion cites one (a case "v.", a LEXIS cite, "Op. Att'y Gen.", "OAG 82-123",
#: "A.G. Op."); an annotator's note among them ("In light of the similarity of the statutory provisions,
#: annotations decided under former Code ... are included") does not
DECISION_RX = re.compile(r"\sv\.\s|LEXIS|Ops?\.\s*(?:of\s*)?(?:the\s*)?Att(?:orne)?'?y\.?\s*Gen|Att(?:orne)?'?y\.?\s*Gen\.?\s*Op|"
                         r"A\.\s?G\.\s?Op|\bOAG\b|\bAGO\b")


def compare_fields(reading: Reading, mine: dict, theirs: dict, examples: int = 5) -> dict:
    leak_docs = {k: 0 for k in ANNOT}
    leak_ex = {k: [] for k in ANNOT}
    text_missing_docs = 0
    text_missing_half = 0
    text_ex = []
    # where each annotation block of the reader landed
    landed = {k: Counter() for k in KINDS}
    landed_sections = {k: Counter() for k in KINDS}
    mislabel_ex = defaultdict(list)
    decisions_sections = Counter()
    decisions_ex = []
    compared = 0
    for key, secs in mine.items():
        if key not in theirs or len(secs) != 1:
            continue   # a key read twice (versions, a compact's copy) is not compared field by field
        s = secs[0]
        d = theirs[key][0]
        compared += 1
        fields = {f: norm_text(d.get(f) or "") for f in ("contents", "history", "notes", "case_notes")}
        own_text = norm_text(s.part("text"))
        # leaks
        for kind in ANNOT:
            hit = None
            for b in s.blocks:
                if b.kind != kind:
                    continue
                for p in pieces(body(b)):
                    if p in fields["contents"] and p not in own_text:
                        hit = p
                        break
                if hit:
                    break
            if hit:
                leak_docs[kind] += 1
                if len(leak_ex[kind]) < examples:
                    leak_ex[kind].append({"id": d.get("id"), "key": key, "anchor": f"{s.file}#{s.anchor}", "sentence": hit[:200]})
        # reverse: statutory text not in contents
        tp = [p for b in s.blocks if b.kind == "text" for p in pieces(body(b))]
        if tp:
            found = sum(1 for p in tp if p in fields["contents"])
            if found < len(tp):
                text_missing_docs += 1
                if found < len(tp) / 2:
                    text_missing_half += 1
                if len(text_ex) < examples:
                    miss = next(p for p in tp if p not in fields["contents"])
                    text_ex.append({"id": d.get("id"), "key": key, "anchor": f"{s.file}#{s.anchor}",
                                    "found": f"{found}/{len(tp)}", "missing": miss[:200]})
        # mislabels
        per_section = {k: Counter() for k in KINDS}
        for b in s.blocks:
            ps = pieces(body(b))
            if not ps:
                continue
            p = ps[0]
            where = [f for f in ("history", "notes", "case_notes", "contents") if p in fields[f]]
            dest = where[0] if len(where) == 1 else ("+".join(where) if where else "nowhere")
            if b.kind in where:
                dest = b.kind
            landed[b.kind][dest] += 1
            per_section[b.kind][dest] += 1
            if dest not in (b.kind, "contents" if b.kind == "text" else "") and len(mislabel_ex[(b.kind, dest)]) < examples:
                mislabel_ex[(b.kind, dest)].append({"id": d.get("id"), "anchor": f"{s.file}#{s.anchor}", "block": p[:160]})
        for k in KINDS:
            for dest in per_section[k]:
                landed_sections[k][dest] += 1
        dec = Counter()
        for b in s.blocks:
            if b.kind == "case_notes" and DECISION_RX.search(b.text):
                ps = pieces(body(b))
                if ps:
                    dec["case_notes" if ps[0] in fields["case_notes"] else "notes" if ps[0] in fields["notes"]
                        else "contents" if ps[0] in fields["contents"] else "elsewhere"] += 1
        for dest in dec:
            decisions_sections[dest] += 1
        if dec.get("notes") and len(decisions_ex) < examples:
            b = next(b for b in s.blocks if b.kind == "case_notes" and DECISION_RX.search(b.text)
                     and pieces(body(b)) and pieces(body(b))[0] in fields["notes"])
            decisions_ex.append({"id": d.get("id"), "anchor": f"{s.file}#{s.anchor}", "block": b.text[:160]})
    return {
        "compared_sections": compared,
        "leaks": {f"{k}_in_contents": leak_docs[k] for k in ANNOT},
        "leak_examples": leak_ex,
        "text_missing_from_contents": text_missing_docs,
        "text_mostly_missing_from_contents": text_missing_half,
        "text_missing_examples": text_ex,
        "blocks_landed": {k: dict(v) for k, v in landed.items()},
        "sections_landed": {k: dict(v) for k, v in landed_sections.items()},
        "case_notes_filed_under_notes": landed_sections["case_notes"].get("notes", 0),
        "decisions_sections_landed": dict(decisions_sections),
        "decisions_filed_under_notes": decisions_sections.get("notes", 0),
        "decisions_under_notes_examples": decisions_ex,
        "mislabel_examples": {f"{a} -> {b}": v for (a, b), v in mislabel_ex.items()},
    }


def resolve_links(reading: Reading) -> list[dict]:
    by_id: dict[tuple[str, str], Section] = {}
    anchors: dict[str, list[Section]] = defaultdict(list)
    for s in reading.sections:
        for i in s.ids:
            by_id.setdefault((s.file, i), s)
        if s.anchor:
            anchors[s.anchor].append(s)
    rows = []
    for src, kind, href, text in reading.links:
        f, _, a = href.partition("#")
        f = os.path.basename(f) or src.file
        if "constitution" in f:
            continue
        target = by_id.get((f, a))
        how = "id"
        if target is None:
            # the longest section anchor that prefixes the target's (a list item of a section)
            cand = [x for n in range(len(a), 2, -1) for x in anchors.get(a[:n], []) if x.file == f]
            target = cand[0] if cand else None
            how = "prefix" if target else ("file absent" if f not in reading.files else "unresolved")
        rows.append({"citing": keys_of(reading, src)[0], "citing_anchor": f"{src.file}#{src.anchor}",
                     "kind": kind or "text", "cited": keys_of(reading, target)[0] if target else "",
                     "cited_anchor": f"{f}#{a}", "text": text, "resolved_by": how})
    return rows


def compare_links(rows: list[dict], theirs: dict) -> dict:
    pairs = {(r["citing"], r["cited"]) for r in rows if r["cited"]}
    # the collection's `citations` carry the links of the statutory text and the notes (docs/statutes.md):
    # a history line's links (Georgia's "Code 1981, § 18-2-80, enacted by") and the case notes' are not asked
    tn = {(r["citing"], r["cited"]) for r in rows if r["cited"] and r["kind"] in ("text", "notes")}
    found = checked = 0
    miss_ex = []
    for a, b in sorted(tn):
        if a not in theirs or b not in theirs or a == b:
            continue
        checked += 1
        cid = theirs[b][0]["id"]
        toks = set((theirs[a][0].get("citations") or "").split())
        if f"cites_{cid}" in toks or any(t.startswith(f"cites_{cid}_") for t in toks):
            found += 1
        elif len(miss_ex) < 5:
            miss_ex.append({"citing": theirs[a][0]["id"], "cited": cid})
    return {
        "links": len(rows),
        "links_by_kind": dict(Counter(r["kind"] for r in rows)),
        "links_resolved_by": dict(Counter(r["resolved_by"] for r in rows)),
        "pairs": len(pairs),
        "pairs_text_notes": len(tn),
        "pairs_checked_in_collection": checked,
        "pairs_in_citations_field": found,
        "pairs_recall": round(found / checked, 4) if checked else None,
        "pairs_missing_examples": miss_ex,
    }


def relink(report_path: str, tsv: str, collection: str) -> dict:
    """Recompute a report's link figures from its links TSV and the collection (no HTML read again)."""
    with open(report_path, encoding="utf-8") as fh:
        report = json.load(fh)
    with open(tsv, encoding="utf-8") as fh:
        head = fh.readline().rstrip("\n").split("\t")
        rows = [dict(zip(head, line.rstrip("\n").split("\t"))) for line in fh]
    reading = Reading(report["state"], report["release"], title_keys=report["title_qualified_keys"])
    theirs = defaultdict(list)
    for d in (load_collection(collection) if collection else []):
        theirs[doc_key(reading, d)].append(d)
    report["links"] = compare_links(rows, theirs)
    with open(report_path, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1, ensure_ascii=False)
    return report


def write_links_tsv(rows: list[dict], path: str) -> None:
    cols = ("citing", "citing_anchor", "kind", "cited", "cited_anchor", "resolved_by", "text")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\t".join(cols) + "\n")
        for r in rows:
            f.write("\t".join(str(r[c]).replace("\t", " ").replace("\n", " ") for c in cols) + "\n")


def write_eyeball(reading: Reading, theirs: dict | None, path: str, n: int = 20, seed: int = 35) -> list[str]:
    rng = random.Random(seed)
    pool = [s for s in reading.sections]
    pick = rng.sample(pool, min(n, len(pool)))
    base = f"https://unicourt.github.io/cic-code-{reading.state}/transforms/{reading.state}/oc{reading.state}/r{reading.release}"
    out = [f"# {reading.state.upper()} r{reading.release}: {len(pick)} sections drawn at random (seed {seed})", "",
           "Each: the independent reader's parts, then where the collection put each of its blocks "
           "(`contents`, `history`, `notes`, `case_notes`, `nowhere`). Read against the page at the link.", ""]
    for s in pick:
        key = keys_of(reading, s)[0]
        out.append(f"## {key}: {s.heading[:120]}")
        out.append(f"<{base}/{s.file}#{s.anchor}>  ({s.file}:{s.line})")
        d = theirs.get(key, [None])[0] if theirs else None
        out.append(f"collection: {d['id'] if d else 'NO DOCUMENT'}")
        for kind in KINDS:
            bl = [b for b in s.blocks if b.kind == kind]
            if not bl:
                continue
            out.append(f"\n**{kind}** ({len(bl)} blocks)\n")
            shown = 0
            for b in bl:
                where = ""
                if d:
                    ps = pieces(body(b))
                    if ps:
                        w = [f for f in ("contents", "history", "notes", "case_notes") if ps[0] in norm_text(d.get(f) or "")]
                        where = f" [{'+'.join(w) or 'nowhere'}]"
                t = b.text if len(b.text) < 400 else b.text[:400] + " …"
                out.append(f"- {t}{where}")
                shown += 1
                if shown >= 12:
                    out.append(f"- … {len(bl) - shown} more")
                    break
        out.append("")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    return [keys_of(reading, s)[0] for s in pick]


def audit(data_dir: str, state: str, release: str, collection: str | None, links_tsv: str | None = None,
          eyeball: str | None = None, seed: int = 35, no_documents: bool = False) -> dict:
    reading = read_release(data_dir, state, release)
    kinds = Counter(b.kind for s in reading.sections for b in s.blocks)
    with_kind = {k: sum(1 for s in reading.sections if any(b.kind == k for b in s.blocks)) for k in KINDS}
    report = {
        "state": state, "release": str(release),
        "files_read": len(reading.files), "files_skipped": reading.skipped_files,
        "title_qualified_keys": reading.title_keys,
        "reader": {
            "headings": len(reading.sections),
            "sections": len({k for s in reading.sections for k in keys_of(reading, s)}),
            "blocks": dict(kinds), "sections_with": with_kind,
            "non_section_h3": sum(reading.non_section_h3.values()),
            "non_section_h3_shapes": dict(reading.non_section_h3.most_common(10)),
            "non_section_h3_first": reading.non_section_h3_first[:10],
            "blocks_outside_sections": reading.outside_blocks,
            "numbers_printed_without_chapter": len(reading.chapter_added),
            "numbers_printed_without_chapter_first": reading.chapter_added[:5],
            "unknown_bold_labels_in_annotations": [f"{k[0]}: {k[1]} ×{n}" for k, n in reading.unknown_labels.most_common(15)],
        },
    }
    readme = os.path.join(data_dir, f"cic-code-{state}", "README.md")
    if os.path.exists(readme):
        with open(readme, encoding="utf-8") as fh:
            m = re.search(rf"Release {int(release)} dated ([0-9.]+?)\.?\s*$", fh.read(), re.M)
        report["release_date"] = m.group(1) if m else None
    rows = resolve_links(reading)
    if links_tsv:
        write_links_tsv(rows, links_tsv)
    theirs = None
    if collection or no_documents:
        docs = [] if no_documents else load_collection(collection)
        sec = compare_sections(reading, docs)
        mine, theirs = sec.pop("_mine"), sec.pop("_theirs")
        report["sections"] = sec
        report["fields"] = compare_fields(reading, mine, theirs)
        report["links"] = compare_links(rows, theirs)
        man = os.path.join(collection, "manifest.json") if collection else ""
        if man and os.path.exists(man):
            with open(man, encoding="utf-8") as fh:
                rd = json.load(fh).get("reader", {})
            report["converter"] = {"sections_read": rd.get("sections_read"), "skipped": rd.get("skipped", {})}
    else:
        report["links"] = compare_links(rows, {})
    if eyeball:
        report["eyeball"] = write_eyeball(reading, theirs, eyeball, seed=seed)
    return report


def summary_line(r: dict) -> str:
    s, f, l = r.get("sections", {}), r.get("fields", {}), r["links"]
    if not s:
        return f"{r['state']} r{r['release']}: reader {r['reader']['sections']} sections, {l['links']} links"
    lk = f["leaks"]
    return (f"{r['state']} r{r['release']}: reader {s['reader_sections']} sections ({s['reader_headings']} headings), "
            f"collection {s['collection_documents']} documents; missing {s['missing_in_collection']}, "
            f"extra {s['extra_in_collection']}, number mismatch {s['section_number_mismatch']}; leaks in contents: "
            f"history {lk['history_in_contents']}, notes {lk['notes_in_contents']}, case notes {lk['case_notes_in_contents']}; "
            f"text missing {f['text_missing_from_contents']} (mostly {f['text_mostly_missing_from_contents']}); "
            f"case notes under notes {f['case_notes_filed_under_notes']}; links {l['links']} "
            f"(pairs {l['pairs']}, in citations {l['pairs_in_citations_field']}/{l['pairs_checked_in_collection']})")


def table(paths: list[str]) -> str:
    rows = ["| state | release (date) | reader sections (headings) | documents | missing | extra | number mismatch | "
            "range members missing / extra | history in contents | notes in contents | case notes in contents | "
            "text not in contents | case notes under notes (decisions) | link pairs | text+notes pairs in `citations` |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in sorted(paths):
        with open(p, encoding="utf-8") as fh:
            r = json.load(fh)
        s, f, l = r.get("sections"), r.get("fields"), r["links"]
        if not s:
            continue
        lk = f["leaks"]
        rec = l["pairs_recall"]
        rec = "-" if rec is None else f"{rec:.3f}"
        rows.append(f"| {r['state'].upper()} | {r['release']} ({r.get('release_date') or '?'}) | "
                    f"{s['reader_sections']:,} ({s['reader_headings']:,}) | {s['collection_documents']:,} | "
                    f"{s['missing_in_collection']:,} | {s['extra_in_collection']:,} | {s['section_number_mismatch']:,} | "
                    f"{s.get('range_members_missing', 0):,} / {s.get('range_members_extra', 0):,} | "
                    f"{lk['history_in_contents']:,} | {lk['notes_in_contents']:,} | {lk['case_notes_in_contents']:,} | "
                    f"{f['text_missing_from_contents']:,} | {f['case_notes_filed_under_notes']:,} "
                    f"({f.get('decisions_filed_under_notes', 0):,}) | {l['pairs']:,} | {rec} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "table":
        print(table(argv[1:]))
        return 0
    if argv and argv[0] == "relink":     # relink REPORT.json LINKS.tsv [COLLECTION]
        print(summary_line(relink(argv[1], argv[2], argv[3] if len(argv) > 3 else None)))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", required=True, help="folder holding cic-code-XX/")
    ap.add_argument("--state", required=True)
    ap.add_argument("--release", required=True)
    ap.add_argument("--collection", help="a folder `legalir convert statutes` wrote")
    ap.add_argument("--json", help="write the whole report here")
    ap.add_argument("--links-tsv", help="write the cross-reference links here")
    ap.add_argument("--eyeball", help="write 20 random sections here (Markdown)")
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--no-documents", action="store_true",
                    help="the conversion wrote no collection (it failed): compare with zero documents")
    a = ap.parse_args(argv)
    r = audit(a.data_dir, a.state.lower(), a.release.lstrip("r"), a.collection, a.links_tsv, a.eyeball, a.seed,
              a.no_documents)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(r, f, indent=1, ensure_ascii=False)
    print(summary_line(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
