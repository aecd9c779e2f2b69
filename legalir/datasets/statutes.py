"""Official state codes as Public.Resource.Org publishes them (UniCourt's ``cic-code-XX`` repositories).

One reader for the publisher's layout, for every state it publishes; nothing per state but
:data:`STATES` (name, abbreviation, official citation form). Published layout, under
``--data-dir DIR`` (``DIR/statutes`` or ``DIR`` itself)::

    cic-code-ga/transforms/ga/ocga/r86/gov.ga.ocga.title.08.html    one file per title (chapter in NC)
    cic-code-nc/transforms/nc/ocnc/r81/gov.nc.stat.title.042.html
    cic-code-ga-r85-r86.tar.xz                                       or the same tree in a .tar.xz

What a file holds (see ``../shared/data/statutes/README.md``): each section is an ``<h3>``
whose ``id`` encodes its place (``t08c02a01p01s8-2-1``: title 8, chapter 2, article 1, part 1,
section 8-2-1) and whose text is the number and heading; its statutory text (``<p>``, nested
``<ol>``/``<li>``) and annotations follow it: a ``History.`` paragraph, bold note headings
(Editor's notes, Cross references, Law reviews ...) and ``<h4>`` blocks (CASE NOTES,
JUDICIAL DECISIONS, RESEARCH REFERENCES ...). A reference within the code is a link to the
cited section's anchor, ``<cite class="ocga"><a href="#t08c02a01p01s8-2-3">8-2-3</a></cite>``.

One document per section (``legalir convert statutes --option state=ga --option release=86``):

* ``id``: legalir's citation key of the section's official citation (what
  :mod:`legalir.legal.citations` gives ``O.C.G.A. § 8-2-1``; where it reads none, the key of the
  state's general code it gives other forms, ``ga_code_8_2_1``, counted in the report);
* ``section`` (as printed), ``state``, ``citation`` (the official form),
  ``title`` (the heading), ``heading_path`` (Title > Chapter > Article > Part); the release is the
  collection's (its manifest's ``options.release``) and then the index version's, not each record's: a
  section a newer release leaves as it was is the same record, so ``legalir index update --to`` replaces
  only the sections that changed (documents shown still name their version's ``release``:
  :class:`legalir.indexing.changes.Documents`);
* ``contents``: the statutory text only (list labels ``(a)``, ``(1)`` restored from the
  ``<ol type>``); ``history``, ``notes`` (editor's notes, cross-references, research
  references, comments), ``case_notes``: separate fields (``--option text=`` adds them);
* ``status``: ``in force``, ``repealed`` (also transferred, redesignated) or ``reserved``;
  such sections are kept (their heading is their text) so a citation to them resolves;
* ``citations`` (:mod:`legalir.legal.citations` roles): ``is_<id>``, ``cites_<key>`` of every link
  to a section of this code, exactly (its target, plus the subsection its text prints), and
  of what :mod:`legalir.legal.citations` reads in the rest of the statutory text (other codes, U.S.C.,
  cases; the notes' own links are read, their other text is not: law reviews and case reporters).
  A link whose text the page says is another state's code ("Ark. Code § 16-13-301" linked to
  the home state's title 16) is not a reference to this code.

The codes differ in how they print the same things, and the reader knows each form (docs/statutes.md, "Every
code the publisher publishes"): a heading ``§ 8-2-1.``, ``Sec. 09.10.070.`` (Alaska), ``§ 2144a.`` (a letter
suffix), a range ``§§ 61-69. Repealed.`` (one document per section; Alaska's and Kentucky's numbers by tens);
an ``<h3>`` inside a section (Idaho's compact articles, Mississippi's notes printed as ``<h3>``) read as a
paragraph of it; a heading printed as a paragraph that links to its own anchor (Mississippi's title 79);
annotations by the kind of their heading (:func:`heading_kind`: an ``<h4>``, a bold paragraph or a bold lead),
a heading of no known kind in the annotations being a decision's topic when decisions follow it (Wyoming's and
Alaska's case notes, printed without a case-notes heading). Vermont's numbers repeat from title to title: its
ids carry the title (``vt_code_17_2531``, the key of ``Vt. Stat. Ann. tit. 17, § 2531``) and its title-first
citations (``13 V.S.A. § 2901``) are keyed by the title they print.

Bad or unexpected HTML is a counted, located skip in the reader's report (``manifest.json``,
``reader``), never a silent loss: sections read, documents written, skips with their reasons.

Topic sets ``xref`` (train/valid/test) come from the links (:meth:`Statutes.xref_examples`).
"""
from __future__ import annotations

import hashlib
import multiprocessing
import re
import tarfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from legalir.base import checks
from legalir.base import log as _logging
from legalir.datasets.dataset import Dataset, DatasetError, Document, Judgement, Option, Topic, register
from legalir.errors import ApiError

_log = _logging.get(__name__)


@dataclass(frozen=True)
class State:
    """One state the publisher serves: its name, and the official citation form of a section."""

    name: str
    #: the official form; ``{section}`` the number as printed, ``{title}`` its title (Vermont)
    form: str
    #: section numbers begin with their title or chapter and a hyphen (``8-2-1``, ``42-25.6``)
    hyphenated: bool = True
    #: the code's own title-first short form, where its section numbers repeat from title to title (Vermont's
    #: ``V.S.A.``: ``13 V.S.A. § 2901``, the publisher's ``<cite>`` without a link): read by the reader with the
    #: title it prints, never the citing section's
    title_first: str | None = None


#: the publisher's states (repository ``UniCourt/cic-code-<abbr>``) and their official citation forms
STATES: dict[str, State] = {
    "ak": State("Alaska", "Alaska Stat. § {section}", hyphenated=False),
    "ar": State("Arkansas", "Ark. Code Ann. § {section}"),
    "co": State("Colorado", "Colo. Rev. Stat. § {section}"),
    "ga": State("Georgia", "O.C.G.A. § {section}"),
    "id": State("Idaho", "Idaho Code § {section}"),
    "ky": State("Kentucky", "Ky. Rev. Stat. Ann. § {section}", hyphenated=False),
    "ms": State("Mississippi", "Miss. Code Ann. § {section}"),
    "nc": State("North Carolina", "N.C. Gen. Stat. § {section}"),
    "nd": State("North Dakota", "N.D. Cent. Code § {section}"),
    "ri": State("Rhode Island", "R.I. Gen. Laws § {section}"),
    "tn": State("Tennessee", "Tenn. Code Ann. § {section}"),
    "va": State("Virginia", "Va. Code Ann. § {section}"),
    "vt": State("Vermont", "Vt. Stat. Ann. tit. {title}, § {section}", hyphenated=False, title_first="V.S.A."),
    "wy": State("Wyoming", "Wyo. Stat. Ann. § {section}"),
}

TEXT_PARTS = ("heading", "text", "history", "notes", "case_notes")
TEXT_DEFAULT = "text"
SPLITS = ("train", "valid", "test")
MASK = "[CITATION]"
#: seconds one call of legalir.legal.citations may take on one section before it is given up (and counted)
#: seconds legalir.legal.citations may take on one section: 0, no guard (its extraction is linear in the text since
#: issue 29; the option remains for a guard in a child process)
CITE_TIMEOUT_S = 0.0

# ------------------------------------------------------------------ the publisher's vocabulary (all states)
# A heading (an ``<h4>``, a bold paragraph, or a paragraph's bold lead) is compared lower case, without its final
# ". —", "." or ":" (:func:`_norm_heading`), and is of one kind (:func:`heading_kind`): case notes, history,
# editors' notes, a "weak" note heading (a note, or in case notes the topic of decisions: decided by what follows
# it), or none (statutory text before the annotations; in them, the topic of what follows).
#: headings whose block is case notes (decisions, attorney general's opinions)
CASE_HEADINGS = ("case notes", "notes to decisions", "judicial decisions", "decisions under prior law",
                 "decisions under former law", "opinions of the attorney general", "opinions of attorney general",
                 "attorney general opinions", "notes to unpublished decisions", "annotation", "annotations",
                 "notes to opinions", "circuit court opinions", "cited in", "quoted in", "applied in", "stated in",
                 "cited", "quoted", "applied", "stated", "construed in", "distinguished in", "mentioned in")
_CASE_EXTRA = re.compile(r"annotations? from former .{0,40}|.{0,30}attorney general'?s? opinions?")
#: headings whose block is the section's history
HISTORY_HEADINGS = ("history", "history of section", "source", "derivation")
#: headings whose block is editors' notes (and ``the 20xx amendments``, ``... comment``, ``... notes``,
#: ``... references``, ``... sections``: :data:`_NOTE_EXTRA`)
NOTE_HEADINGS = ("research references", "comment", "comments", "official comment", "commentary",
                 "editor's note", "editor's notes", "cross references", "cross-references", "cross reference",
                 "compiler's notes", "compiler's note", "north carolina comment", "law reviews", "law review",
                 "collateral references", "comments to official text", "code commission notes", "legal periodicals",
                 "effect of amendments", "am. jur. 2d", "am. jur", "c.j.s", "cjs", "alr", "a.l.r",
                 "administrative rules and regulations", "u.s. code", "delayed effective date", "local modification",
                 "comparative legislation", "amendments", "history of code section", "u.l.a",
                 "repealed and reenacted", "transfer of functions", "note", "notes", "editor's and revisor's notes",
                 "revisor's notes", "publisher's notes", "federal law", "textbooks", "rule reference",
                 "section comment", "general comment", "annotator's note", "administrative code",
                 "legislative history reports", "reenactments", "rules of court", "michie's jurisprudence",
                 "statutory notes", "prefatory note", "revision note", "references in text", "codification",
                 "federal aspects", "amendment notes", "comparable laws from other states", "lawyers' edition",
                 "preambles", "meaning of “this act.”", "meaning of “this code.”", "conflicting legislation",
                 "repealing clauses", "temporary provisions", "revision of title", "appropriations",
                 "wyoming administrative procedure act", "sunset provision", "cross references to related sections",
                 "definitional cross references", "purposes", "changes", "uniform statutory source",
                 "prior uniform statutory provision", "uniform law source", "purposes of changes",
                 "compact cross references", "commissioner's comment", "virginia comment", "official text",
                 "official commentary")
#: headings that are a note before a decision's topic, decided by what follows them in a section's annotations
WEAK_NOTE_HEADINGS = ("applicability", "severability", "prior law", "effective date", "effective dates",
                      "legislative findings", "analysis", "contingent effective dates", "delayed effective dates",
                      "retroactive effective dates", "legislative findings and intent", "purpose of act")
#: ``<h4>`` headings of notes by their form (Tennessee's ``2 RESTATED COMMENTS TO OFFICIAL TEXT``)
_NOTE_H4 = re.compile(r"(?:\d+ )?(?:restated )?comments? to official text|official comment(?:ary)?(?: \(\d{4}\))?")
#: kept for the run-in notes of Tennessee and Colorado (a paragraph opening with its heading, not in bold)
NOTE_STARTS = NOTE_HEADINGS + WEAK_NOTE_HEADINGS
#: note headings that open a paragraph with its text on the same line, without bold (Tennessee:
#: ``Cross-References. Income tax, § 67-2-119.``); a bold one (Colorado: ``<b>Editor's note:</b> This
#: section ...``) may be any note heading
INLINE_NOTE_STARTS = ("compiler's notes", "compiler's note", "cross-references", "cross references", "textbooks",
                      "law reviews", "effective dates", "amendments", "collateral references", "code commission notes",
                      "rule reference", "section comment", "general comment", "comparative legislation",
                      "editor's notes", "editor's note", "research references", "official comment", "annotator's note")
#: paragraph-opening headings of case notes (attorney general's opinions, Tennessee's ``Cited:`` lists)
INLINE_CASE_STARTS = ("attorney general opinions", "opinions of the attorney general", "opinions of attorney general",
                      "cited", "notes to decisions", "case notes")
_INLINE_HEAD = re.compile(r"([A-Z][A-Za-z'’-]*(?: [A-Za-z'’-]+){0,3})\s*[.:](?=\s|$)")
#: a history line that is not marked ``History.`` (Tennessee: ``Acts 1988, ch. 1016, § 1; ...``,
#: ``Code 1858, § 1; Shan., § 3``; Georgia before release 83, in parentheses: ``(Code 1981, § 8-2-1, enacted by
#: Ga. L. 1990, p. 1212, § 1.)``, ``(Orig. Code 1863, § 1; ...)``, ``(Ga. L. 1990, p. 1212, § 1.)``; Virginia's
#: compacts: ``(1936, p. 369; Michie Code 1942, § 311a; ...)``)
_HISTORY_LINE = re.compile(r"\(?(?:(?:Priv\.|Pub\.) )?(?:Acts|Code|Orig\. Code|Civil Code|Penal Code|Ga\. L\.),? \d{4}\b"
                           r"[^;]{0,40}?(?:, ch\. \d|, §)|\(\d{4}, (?:p|c)\. \d+[,;]")
#: a paragraph that is the section's history by its bold lead (``History.``; Colorado's and North Dakota's
#: ``Source:``, Rhode Island's ``History of Section.``)
_HISTORY_LEAD = ("history", "source", "history of section")
#: a paragraph that is a history line by its first word (Mississippi's plain ``HISTORY: Laws, 1987, ...``,
#: Colorado's plain ``Source: L. 2022: Entire section added, ...``)
_HISTORY_WORD = re.compile(r"(?:History(?: of Section)?\s*[.:]|HISTORY\s*[.:]?)(?:\s|$)|History$")
_SOURCE_WORD = re.compile(r"Source: [A-Z]")  # (read as history only before the annotations: a comment has its own)
_HISTORY_CUT = re.compile(r"(?:(?:History(?: of Section)?|HISTORY|Source|Derivation)\s*[.:]?\s*)?")
_TRAILING_STATUS = re.compile(r"\[\s*(?P<what>repealed|reserved|transferred|renumbered|expired|recodified)\b[^\]]{0,200}\]\s*$",
                              re.I)
_NOTE_EXTRA = re.compile(r"(?:the \d{4}(?: [\w. ]{0,20})? amendments?|.{0,50} comment(?:ary)?(?: \(\d{4}\))?|.{0,50} notes?"
                         r"|.{0,40} references?|.{0,30} sections|am\. jur\..{0,60}|\d{4} adoption note)$")
#: a decision or an attorney general's opinion cited as case notes cite them (``Smith v. Jones, 806 P.2d 281``,
#: ``1907 Vt. LEXIS 135``, ``OAG 04-037``, ``1987-88 Op. Att'y Gen. 123``): what tells a decision's topic
#: heading from a note's in a section's annotations (:func:`_cites_decision`)
_CASE_NAME = re.compile(r"\bv\. |\bIn re |\bEx parte ")
_REPORTER = re.compile(r"\b\d{1,4} [A-Z][A-Za-z.']{0,12}(?: ?[A-Z][A-Za-z.']{0,12}){0,2}(?: ?(?:2d|3d|4th|5th|6th))? \d{1,5}\b")
_OPINION = re.compile(r"LEXIS \d|\bOAG \d|\bOps?\. (?:Att'?y|Atty\.?) Gen|\bAtt'?y Gen\. Op|\bOp\. Att'?y|\b\d{4} WY \d|"
                      r"\bInformal Op|\bOpinion of the Attorney General|\bAttorney General (?:opined|concluded|advised)")

# a printed section number (``8-2-1``, ``42-25.6``, ``47C-1-101``, ``2-8A-1``, ``45-21.9A``, Vermont's ``2144a``,
# Idaho's ``1-2001a``, Alaska's ``09.10.070``, Virginia's ``2.2-507.1:1``)
_NUM = r"\d+[A-Za-z]{0,3}(?:[-.:]\d+[A-Za-z]{0,3})*"
#: a section heading: ``§ 8-2-1. Heading``, ``Sec. 09.10.070. Heading`` (Alaska), ``§§ 1-2-1 through 1-2-5. Repealed.``,
#: ``§§ 47-1, 47-2.``, ``§§ 61-69. Repealed.`` (a range joined by a hyphen: :func:`_plural_range`)
_HEAD = re.compile(rf"(?P<mark>§§?|Secs?\.)?\s*(?P<first>{_NUM})(?:\s*(?P<sep>through|to|–|—|-)\s*(?:§§?\s*)?(?P<last>{_NUM})"
                   rf"|(?P<list>(?:\s*(?:,|and|&)\s*(?:§§?\s*)?{_NUM})+))?\s*[.:]?(?=\s|$)\s*(?P<rest>.*)", re.S)
_LIST_ITEM = re.compile(_NUM)
_BOLD_SECTION = re.compile(rf"§§?\s*{_NUM}[.:]\s+\S")
# the section an anchor names: the last "s<digit>..." (``t08c02a01p01s8-2-3``, ``…s8-2-3ol1a`` for an item)
# (an item ``…ol1a``, a note ``…-notetodecisison-II``: lower case after the number)
_ANCHOR = re.compile(r"s(?P<sec>\d[0-9A-Z]*(?:[-.][0-9A-Z]+)*)(?=ol|-[a-z]|$)")
_PLACE = re.compile(r"[a-z]+[0-9.]*[A-Z]*|[a-z]+[IVXL]+")
_SUB = re.compile(r"\s*((?:\([0-9A-Za-z]{1,4}\)\s*)+)$")
_WS = re.compile(r"\s+")
_BEFORE_PUNCT = re.compile(r" (?=[,.;:)\]])|(?<=[(\[]) ")
_LINK = re.compile(r"\x01(\d+)\x02([^\x03]*)\x03")
_REPEALED = re.compile(r"\[?\s*(?:repealed|transferred|redesignated|recodified|renumbered|expired)\b(?!\s+effective)",
                       re.I)
_RESERVED = re.compile(r"\[?\s*reserved\b", re.I)
_FUTURE = re.compile(r"\[\s*(?:effective|for effective date)\b(?!\s+until)", re.I)
#: the file of a title of the code (``gov.ga.ocga.title.08.html``); the publisher's other files (the state's
#: and the U.S. constitutions, ``gov.ky.krs.constitution.us.html``) are not the code's sections
#: (Idaho names its files ``idaho.title.01.html``; Virginia's compilation of interstate compacts,
#: ``gov.va.compact.title.01.html``, reprints sections of the code: read, the code's own print kept)
_TITLE_FILE = re.compile(r"(?:gov\.[a-z]{2}\.\w+|[a-z]+)\.title\.[\w.]+\.html")


def _norm_heading(text: str) -> str:
    t = text.replace("’", "'").replace("‘", "'").strip().lower()
    t = re.sub(r"[\s.,:—–-]+$", "", t)
    return _WS.sub(" ", t)


def _is_note_heading(text: str) -> bool:
    return heading_kind(text) in ("notes", "weak")


def heading_kind(text: str) -> str | None:
    """The kind of a heading in a section (an ``<h4>``, a bold paragraph or a paragraph's bold lead):
    ``"case"`` (case notes: decisions, attorney general's opinions), ``"history"``, ``"notes"`` (editors'
    notes), ``"weak"`` (a note heading that, in case notes, may be a decision's topic: ``Applicability.``)
    or ``None`` (unknown: statutory text before the annotations, a topic in them)."""
    t = _norm_heading(text)
    if len(t) >= 80:
        return None
    if t in CASE_HEADINGS or _CASE_EXTRA.fullmatch(t):
        return "case"
    if t in HISTORY_HEADINGS:
        return "history"
    if t in NOTE_HEADINGS or _NOTE_H4.fullmatch(t):
        return "notes"
    if t in WEAK_NOTE_HEADINGS or (_NOTE_EXTRA.fullmatch(t) and len(t) < 60):
        return "weak"  # (by its form only: "Validity of Note." is a topic of Arkansas's case notes)
    return None


def _cites_decision(text: str) -> bool:
    """Whether a paragraph cites a decision or an attorney general's opinion as case notes do."""
    if _OPINION.search(text):
        return True
    return bool(_CASE_NAME.search(text)) and bool(_REPORTER.search(text))


def parse_text_option(value: str) -> tuple[str, ...]:
    parts = tuple(p.strip().lower() for p in str(value).split("+") if p.strip())
    bad = [p for p in parts if p not in TEXT_PARTS]
    if not parts or bad or len(set(parts)) != len(parts) or "text" not in parts:
        raise DatasetError(f"statutes: option text={value!r}: expected '+'-joined parts, each once, from "
                           f"{', '.join(TEXT_PARTS)}, 'text' among them (default {TEXT_DEFAULT})")
    return parts


def _check_date(value: str) -> str:
    """``--option date``: ``YYYY-MM-DD``, ``YYYY-MM`` or ``YYYY`` (:func:`legalir.base.checks.calendar_date`), as ISO text."""
    try:
        return checks.calendar_date("date", str(value).strip(), partial=True)
    except ApiError:
        raise DatasetError(f"statutes: option date={value!r}: expected the release's date as the publisher dates "
                           f"it, YYYY-MM-DD, YYYY-MM or YYYY (e.g. 2022-11 for 'Release 86 dated 2022.11.')") from None


def readme_release_dates(text: str) -> dict[str, tuple[str | None, int, str]]:
    """``{release: (date, line, as written)}`` of the release lines of a publisher's repository README
    (``* Release 81 dated 2021.07.`` -> ``("2021-07", 8, "2021.07.")``): the date as ISO text at the precision
    printed (``2020.04.20.`` day, ``2021.07`` month, ``2020`` year), or None where it is not a date of the
    calendar (``2020.11.019``: the line is still reported). Read by splitting words, no regular expression."""
    out: dict[str, tuple[str | None, int, str]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        words = line.replace("*", " ").split()
        if len(words) < 4 or words[0].lower() != "release" or words[2].lower() != "dated" or not words[1].isdigit():
            continue
        raw = words[3]
        parts = raw.rstrip(".").split(".")
        try:
            date = checks.calendar_date("date", "-".join(parts), partial=True) if raw.rstrip(".") else None
        except ApiError:
            date = None
        release = str(int(words[1]))
        if release not in out or (out[release][0] is None and date is not None):  # the first date read counts
            out[release] = (date, n, raw)
    return out


def _check_release(value: str) -> None:
    if not re.fullmatch(r"\d{1,4}", str(value).strip()):
        raise DatasetError(f"statutes: option release={value!r}: expected the publisher's release number "
                           f"(e.g. 86 for cic-code-ga/transforms/ga/ocga/r86)")


# ------------------------------------------------------------------ keys
def official_citation(state: str, section: str, title: str | None = None) -> str:
    """The official citation of ``section`` of ``state``'s code (``O.C.G.A. § 8-2-1``)."""
    st = STATES[state]
    return st.form.format(section=section, title=title or section.split("-")[0])


@lru_cache(maxsize=200_000)
def section_key(state: str, section: str, title: str | None = None) -> tuple[str, bool]:
    """(key, from legalir.legal.citations) of a section: the one key :mod:`legalir.legal.citations` gives its
    official citation, else the key of the state's general code it gives other forms
    (``ga_code_8_2_1``; with the title where numbers repeat across titles, ``vt_code_9_2470aa``) and ``False``."""
    from legalir.legal import citations

    found = citations.keys(official_citation(state, section, title), use_eyecite=False)
    tail = "_" + citations.section_key(section)
    if len(found) == 1 and found[0].endswith(tail):
        return found[0], True
    if len(found) == 1:
        # legalir.legal.citations reads the number otherwise (Vermont's ``§ 2470aa`` as ``2470a``): the code's key (that
        # of a section it reads, ``1`` of the same title) with the number as printed, so two sections keep two ids
        probe = citations.keys(official_citation(state, "1", title), use_eyecite=False)
        if len(probe) == 1 and probe[0].endswith("_1"):
            return probe[0][:-2] + tail, False
    return f"{state}_code{'_' + title if title else ''}{tail}", False


def key_prefix(key: str, section: str) -> str:
    """The code part of a section's key (``ga_code`` of ``ga_code_8_2_1``)."""
    from legalir.legal import citations

    tail = "_" + citations.section_key(section)
    return key[: -len(tail)] if key.endswith(tail) else key.rsplit("_", 1)[0]


# ------------------------------------------------------------------ guarded extraction
def _cite_worker(conn) -> None:  # pragma: no cover - runs in the child process
    from legalir.legal import citations

    while True:
        try:
            text, kwargs = conn.recv()
        except EOFError:
            return
        try:
            out = [(c.key, c.base, c.start, c.end, c.source) for c in citations.extract(text, **kwargs)]
            conn.send(("ok", out))
        except Exception as e:
            conn.send(("error", f"{type(e).__name__}: {e}"))


class GuardedCitations:
    """:func:`legalir.legal.citations.extract` in a child process, given up after ``timeout`` seconds.

    legalir.legal.citations can take time exponential in the length of a ``§§`` list (issue "Legal
    structure that is exact"); a conversion must finish on every file, so a call that runs past
    ``timeout`` is ended (the child, which this object started, is killed and started again on the
    next call) and counted by the caller. ``timeout=None``: called in this process, unguarded.
    """

    def __init__(self, timeout: float | None = None):
        self.timeout = timeout
        self._proc = None
        self._conn = None

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")  # never fork a process that may hold a JVM
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(target=_cite_worker, args=(child,), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent

    def extract(self, text: str, **kwargs) -> list[tuple[str, str, int, int, str]] | None:
        """``(key, base, start, end, source)`` of each citation, or ``None`` when it timed out."""
        if self.timeout is None:
            from legalir.legal import citations

            return [(c.key, c.base, c.start, c.end, c.source) for c in citations.extract(text, **kwargs)]
        if self._proc is None or not self._proc.is_alive():
            self._start()
        self._conn.send((text, kwargs))
        if not self._conn.poll(self.timeout):
            self.close()
            return None
        status, value = self._conn.recv()
        if status != "ok":
            raise DatasetError(f"legalir.legal.citations failed: {value}")
        return value

    def close(self) -> None:
        """End the child process (the one this object started)."""
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join()
            self._conn.close()
        self._proc = self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ------------------------------------------------------------------ HTML -> blocks of text with links
@dataclass
class Link:
    """A link inside a ``<cite>``: ``href``, the ``<cite>`` class, its text, its span in its block."""

    href: str
    cls: str
    text: str
    start: int = 0
    end: int = 0


@dataclass
class Block:
    """One paragraph (or list item) of a section: its text and the links in it."""

    text: str
    links: list[Link] = field(default_factory=list)
    line: int | None = None


_ROMAN = ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"), (40, "xl"),
          (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))


def _label(kind: str | None, n: int) -> str:
    if kind in ("a", "A"):
        s = ""
        while n > 0:
            n, r = divmod(n - 1, 26)
            s = chr(ord("a") + r) + s
        return f"({s.upper() if kind == 'A' else s})"
    if kind in ("i", "I"):
        s = ""
        for v, r in _ROMAN:
            while n >= v:
                s, n = s + r, n - v
        return f"({s.upper() if kind == 'I' else s})"
    return f"({n})"


def _inline(el, out: list[str], links: list[Link], in_cite: str | None = None) -> None:
    """Text of ``el``'s content (not its tail) into ``out``; a link inside a ``<cite>`` as a marked span."""
    tag = el.tag if isinstance(el.tag, str) else None
    if tag is None:  # comment, processing instruction
        return
    if tag == "a" and in_cite is not None and el.get("href"):
        text = _WS.sub(" ", el.text_content()).strip()
        out.append(f"\x01{len(links)}\x02{text}\x03")
        links.append(Link(el.get("href"), in_cite, text))
        return
    cite = (el.get("class") or "") if tag == "cite" else in_cite
    out.append(el.text or "")
    for child in el:
        if isinstance(child.tag, str) and child.tag in ("ol", "ul"):
            continue  # a nested list is its own blocks
        _inline(child, out, links, cite)
        out.append(child.tail or "")


#: a link run into a word by the publisher's markup (Idaho's ``former<cite><a>§ 32-706</a></cite>or``): a space is
#: where a reader of the page sees a word's end
_GLUED_BEFORE = re.compile(r"(?<=[A-Za-z0-9])(?=\x01\d+\x02[§A-Za-z0-9])")
_GLUED_AFTER = re.compile(r"(?<=[A-Za-z0-9]\x03)(?=[A-Za-z0-9])")


def _finish(raw: str, links: list[Link], line: int | None) -> Block:
    if "\x01" in raw:
        raw = _GLUED_AFTER.sub(" ", _GLUED_BEFORE.sub(" ", raw))
    text = _BEFORE_PUNCT.sub("", _WS.sub(" ", raw).strip())
    out, kept, pos = [], [], 0
    for m in _LINK.finditer(text):
        out.append(text[pos:m.start()])
        start = sum(len(p) for p in out)
        link = links[int(m.group(1))]
        link.start, link.end = start, start + len(m.group(2))
        out.append(m.group(2))
        kept.append(link)
        pos = m.end()
    out.append(text[pos:])
    return Block("".join(out), kept, line)


def _blocks(el) -> Iterator[Block]:
    """The blocks of an element: a paragraph, each item of a list (with its label), each child of a div."""
    tag = el.tag if isinstance(el.tag, str) else None
    if tag is None:
        return
    if tag in ("ol", "ul"):
        kind = el.get("type") if tag == "ol" else None
        try:
            n = int(el.get("start") or 1) - 1
        except ValueError:
            n = 0
        for li in el:
            if not isinstance(li.tag, str):
                continue
            n = int(li.get("value")) if (li.get("value") or "").isdigit() else n + 1
            out, links = [], []
            _inline(li, out, links)
            label = _label(kind, n) + " " if tag == "ol" else ""
            block = _finish("".join(out), links, li.sourceline)
            if block.text:
                yield Block(label + block.text, [Link(k.href, k.cls, k.text, k.start + len(label), k.end + len(label))
                                                 for k in block.links], block.line)
            for child in li:
                if isinstance(child.tag, str) and child.tag in ("ol", "ul"):
                    yield from _blocks(child)
        return
    if tag in ("div", "section", "main", "nav") or (tag in ("li",) and len(el)):
        if tag == "nav":
            return
        if el.text and el.text.strip():
            yield _finish(el.text, [], el.sourceline)
        for child in el:
            yield from _blocks(child)
            if child.tail and child.tail.strip():
                yield _finish(child.tail, [], el.sourceline)
        return
    out, links = [], []
    _inline(el, out, links)
    block = _finish("".join(out), links, el.sourceline)
    if block.text:
        yield block


def _bold_only(el) -> str | None:
    """The text of a paragraph that is only a bold heading (``<p><b>Editor's notes.</b></p>``), else None."""
    kids = [k for k in el if isinstance(k.tag, str)]
    if len(kids) == 1 and kids[0].tag in ("b", "strong") and not (el.text or "").strip() \
            and not (kids[0].tail or "").strip():
        return _WS.sub(" ", kids[0].text_content()).strip()
    span = [k for k in kids if k.tag == "span" and "boldspan" in (k.get("class") or "")]
    if len(kids) == 1 and span and not (el.text or "").strip() and not (kids[0].tail or "").strip():
        return _WS.sub(" ", kids[0].text_content()).strip()
    return None


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


def _lead(el) -> tuple[str, bool] | None:
    """The heading a paragraph opens with and whether it is bold: ``<b>Source:</b> L. 92 ...`` ->
    ``("source", True)``; ``Cross-References. Income tax, ...`` -> ``("cross-references", False)``."""
    first = next((k for k in el if isinstance(k.tag, str)), None)
    if first is not None and not (el.text or "").strip() and (
            first.tag in ("b", "strong") or (first.tag == "span" and "boldspan" in (first.get("class") or ""))):
        return _norm_heading(first.text_content()), True
    m = _INLINE_HEAD.match(_WS.sub(" ", el.text_content()).strip()[:80])
    return (_norm_heading(m.group(1)), False) if m else None


def _is_history_line(txt: str, lead: tuple[str, bool] | None) -> bool:
    """Whether a paragraph is a history line by its words (``History.``, ``HISTORY:``, ``History of Section.``) or
    by its bold lead (``<b>Source:</b>``)."""
    return bool(_HISTORY_WORD.match(txt)) or (lead is not None and lead[1] and lead[0] in _HISTORY_LEAD)


def _opens_annotations(el) -> bool:
    """Whether ``el`` (a ``<p>``, ``<div>`` or ``<h4>``) is where a section's annotations begin: a history line,
    a note or case-note heading (in bold, opening the paragraph, or an ``<h4>``)."""
    if el.tag == "p":
        txt = _WS.sub(" ", el.text_content()).strip()
        lead = _lead(el)
        if _is_history_line(txt, lead) or _HISTORY_LINE.match(txt):
            return True
        bold = _bold_only(el)
        if bold is not None and heading_kind(bold) is not None:
            return True
        return lead is not None and (lead[0] in INLINE_NOTE_STARTS or lead[0] in INLINE_CASE_STARTS
                                     or (lead[1] and heading_kind(lead[0]) is not None))
    h4 = el if el.tag == "h4" else el.find(".//h4")
    if h4 is None:
        return False
    return heading_kind(h4.text_content()) is not None


def _lift_annotations(el) -> list:
    """``[el]``, or, where the publisher left a section's annotations inside its last list item (an unclosed
    ``<li>``: Tennessee's ``<ol>... <li>(5) Evidence ... <p>Code, 1858, § 4352</p><p>Textbooks. ...</p>``),
    ``[el, *the annotations]``, taken out of the list so that they are read as annotations, not text."""
    if el.tag not in ("ol", "ul"):
        return [el]
    start = next((x for x in el.iter("p", "div", "h4") if x is not el and _opens_annotations(x)), None)
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
        head = _WS.sub(" ", h3.text_content()).strip()
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


def _heading_of(el) -> tuple[str | None, str | None, bool]:
    """(kind, heading, bold) of a leaf: an ``<h4>``-``<h6>``'s text; a bold paragraph or a paragraph's bold
    lead; a known run-in lead (``Cross-References. ...``, not bold); else (None, None, False)."""
    if not isinstance(el, tuple) and el.tag in ("h4", "h5", "h6"):
        name = _WS.sub(" ", el.text_content()).strip()
        return heading_kind(name), name, True
    if isinstance(el, tuple) or el.tag != "p":
        return None, None, False
    bold = _bold_only(el)
    if bold is not None:
        return heading_kind(bold), bold, True
    whole = _WS.sub(" ", el.text_content()).strip()
    if len(whole) < 40 and heading_kind(whole) in ("case", "notes"):
        return heading_kind(whole), whole, True  # a heading alone in its paragraph, not bold (Virginia's "Annotations")
    lead = _lead(el)
    if lead is None:
        return None, None, False
    if lead[1]:
        return heading_kind(lead[0]), lead[0], True
    if lead[0] in INLINE_CASE_STARTS:
        return "case", lead[0], False
    if lead[0] in INLINE_NOTE_STARTS:
        return "notes", lead[0], False
    return None, None, False


def _decisions_follow(leaves: list, i: int, limit: int = 3) -> bool:
    """Whether the block a heading opens cites a decision at once (the heading's paragraph or one of the two after
    it, up to the next heading): the heading is then a topic of the case notes."""
    for j in range(i, min(len(leaves), i + limit)):
        el = leaves[j]
        if j > i and _heading_of(el)[1] is not None:
            return False
        text = el[0] if isinstance(el, tuple) else el.text_content()
        if _cites_decision(_WS.sub(" ", text)):
            return True
    return False


_PARA_SECTION = re.compile(rf"§§?\s*(?P<num>{_NUM})\s*\.\s+\S")
#: a note of research references (which leaves a block of case notes it is printed in)
_REFERENCE_NOTE = re.compile(r".{0,40}(?:references?|law reviews?|periodicals|textbooks|c\.j\.s|cjs|a\.?l\.?r)|am\. ?jur.{0,60}")
#: the history of a repealed section printed as its paragraph (Mississippi: ``§65-3-72. [Laws, 1972, ch. 380, § 1]``)
_FORMER_HISTORY = re.compile(rf"§\s*{_NUM}\s*\.\s*\[(?:Codes|Laws|Code|Acts|En)\b")
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
        txt = _WS.sub(" ", el.text_content()).strip()
        m = _PARA_SECTION.match(txt)
        if el.get("id") or m is None or not chapter:
            continue
        anchor = f"{chapter}s{m.group('num')}"
        report.note("a section heading in an <h3> without an id: its chapter's anchor and its number",
                    f"{_where(label, el.sourceline, anchor)}: {txt[:80]!r}")
        el.set("id", anchor)
    for p in root.iter("p"):
        if not (p.text or "").strip().startswith("§"):
            continue
        kids = [k for k in p if isinstance(k.tag, str)]
        if not kids or kids[0].tag != "cite" or len(kids) != 1:
            continue
        links = [a for a in kids[0].iter("a") if (a.get("href") or "").startswith("#")]
        txt = _WS.sub(" ", p.text_content()).strip()
        m = _PARA_SECTION.match(txt)
        if len(links) != 1 or m is None or len(txt) > 400:
            continue
        anchor = links[0].get("href")[1:]
        if ids is None:
            ids = {e.get("id") for e in root.iter() if isinstance(e.tag, str) and e.get("id")}
            listed = {a.get("href")[1:] for nav in root.iter("nav") for a in nav.iter("a")
                      if (a.get("href") or "").startswith("#")}
        if anchor in ids or anchor not in listed or _ANCHOR_SEC(anchor) != m.group("num"):
            continue
        report.note("a section heading printed as a paragraph that links to its own anchor: read as its <h3>",
                    f"{_where(label, p.sourceline, anchor)}: {txt[:80]!r}")
        for child in list(p):
            p.remove(child)
        p.text = txt
        p.tag = "h3"
        p.set("id", anchor)
        ids.add(anchor)


def _read_sections(label: str, data: bytes, report: Report, state: str) -> list[Section]:
    """Every section of one published file."""
    import lxml.html
    from lxml import etree

    try:
        root = lxml.html.document_fromstring(data, parser=lxml.html.HTMLParser(encoding="utf-8"))
    except (etree.ParserError, ValueError) as e:
        report.skip("file that cannot be parsed as HTML", f"{label}: {e}")
        return []
    places: dict[str, str] = {}
    for h in root.iter("h1", "h2"):
        if h.get("id"):
            places[h.get("id")] = _WS.sub(" ", h.text_content()).strip()
    _paragraph_headings(root, label, report)
    out: list[Section] = []
    h3s = list(root.iter("h3"))
    if not h3s:
        report.skip("file without any section (<h3>)", label)
    kinds = _h3_kinds(h3s)
    used: set = set()  # the <h3>s inside a section read as its paragraphs
    for h3 in h3s:
        report.read += 1
        where = _where(label, h3.sourceline, h3.get("id"))
        anchor = (h3.get("id") or "").strip()
        head = _WS.sub(" ", h3.text_content()).strip()
        kind, m = kinds[h3]
        if kind == H3_INSIDE:
            continue  # read with its section (or reported below, when it is in none)
        if kind == H3_OTHER:
            # the heading of a part of the code (Arkansas's "Subchapter 1 — General Provisions"), or of what is not a
            # section (Vermont's executive orders): not a section
            report.skip("<h3> without a section number", f"{where}: {head[:80]!r}")
            continue
        first = m.group("first")
        numbers = [first]
        if m.group("last"):
            numbers = _expand(first, m.group("last"))
            if numbers is None:
                report.note("range that cannot be expanded: its two ends kept", where)
                numbers = [first, m.group("last")]
        elif m.group("list"):
            numbers += _LIST_ITEM.findall(m.group("list"))
        elif m.group("mark") == "§§" and _plural_range(first):
            a, b = _plural_range(first)
            first = a
            numbers = _expand(a, b)
            if numbers is None:
                report.note("range that cannot be expanded: its two ends kept", where)
                numbers = [a, b]
            report.note("a range printed with a hyphen after §§ (§§ 61-69): one document per section", where)
        numbers = list(dict.fromkeys(numbers))
        rest = m.group("rest").strip()
        path = [places[anchor[:i]] for i in range(1, len(anchor)) if anchor[i].islower() and anchor[:i] in places]
        parts: dict[str, list[Block]] = {"text": [], "history": [], "notes": [], "case": []}
        unknown: list[str] = []
        part = "text"
        block = None  # the kind of the <h4> whose block this is (case, notes, history), None before any
        leaves = [x for el in _section_body(h3, kinds) for x in _leaves(el)]
        for i, el in enumerate(leaves):
            if isinstance(el, tuple):
                block = _finish(el[0], [], el[1])
                if block.text:
                    parts[part].append(block)
                continue
            if el.tag == "h3":  # a heading inside the section: a paragraph of the part it is in
                used.add(el)
                parts[part].extend(_blocks(el))
                continue
            if part == "history" and el.tag in ("p", "ol", "ul") and not isinstance(el, tuple) and \
                    _LIST_LABEL.match(_WS.sub(" ", el.text_content()).strip()) or (part == "history" and el.tag in ("ol", "ul")):
                # statutory text the publisher printed under the history heading (Idaho's "<h5>History.</h5><p>(4) There
                # shall be ...</p><p>I.C., § 33-514, ...</p>"): text
                report.note("statutory text printed under the history heading: read as text", where)
                parts["text"].extend(_blocks(el))
                continue
            if el.tag == "p":
                txt = _WS.sub(" ", el.text_content()).strip()
                lead = _lead(el)
                if _FORMER_HISTORY.match(txt):
                    parts["history"].extend(_blocks(el))  # (Mississippi's "§65-3-72. [Laws, 1972, ch. 380, ...]")
                    continue
                if (part != "case" and _is_history_line(txt, lead)) or (part == "text" and not parts["history"]
                                                  and (_HISTORY_LINE.match(txt) or _SOURCE_WORD.match(txt))):
                    blocks = list(_blocks(el))
                    if blocks:
                        b = blocks[0]
                        cut = len(_HISTORY_CUT.match(b.text).group(0))
                        b = Block(b.text[cut:], [Link(k.href, k.cls, k.text, k.start - cut, k.end - cut)
                                                 for k in b.links], b.line)
                        if b.text:
                            parts["history"].append(b)
                        for extra in blocks[1:]:  # (a list run into the history line: kept with it)
                            parts["history"].append(extra)
                        if not b.text and len(blocks) == 1:
                            part = "history"  # a bold "History." alone: the history follows it
                            continue
                    if part == "text" and parts["text"]:
                        part = "notes"  # (a History line before any text, as in Kentucky's compacts: text follows)
                    elif part == "history":
                        part = "notes"
                    continue
            hkind, heading, bold = _heading_of(el)
            if heading is not None and el.tag == "h4" and hkind is not None:
                block = hkind
            if heading is not None:
                name = _norm_heading(heading)
                if part == "text":
                    if hkind == "case" and (bold or name != "cited"):  # (Tennessee's run-in "Cited:" only after)
                        part = "case"
                    elif hkind in ("notes", "weak"):
                        part = "notes"
                    elif hkind == "history" and (el.tag != "p" or _bold_only(el) is not None):
                        part = "history"
                    elif el.tag == "p" and bold and _bold_only(el) is not None and heading.rstrip().endswith("—"):
                        # a heading in the annotations' form, "Revision of chapter. —" (Wyoming, Alaska, Virginia): a
                        # note, or a decision's topic when decisions follow
                        part = "case" if _decisions_follow(leaves, i) else "notes"
                    elif el.tag != "p":
                        unknown.append(name)  # e.g. "Article II." of a compact: statutory text
                elif hkind == "case":
                    part = "case"
                elif hkind == "notes" and not (part == "case" and (_decisions_follow(leaves, i) or (
                        block == "case" and not _REFERENCE_NOTE.fullmatch(name)))):
                    # (in an <h4> block of case notes, only a research note leaves them: North Dakota's "Collateral
                    # References."; an editor's note on the cases under it is theirs)
                    part = "notes"  # (in case notes, North Carolina's "Editor's Note. — Most of the cases below
                    # were decided under former law." before the decisions is theirs)
                elif hkind == "history" and el.tag in ("h5", "h6") and block in ("notes", "case") and part == block:
                    pass  # a sub-heading of the block its <h4> opened (Idaho's Official Comment's "Source: Former
                    # Section 1-102", under RESEARCH REFERENCES): of the block's kind, not the section's history
                elif hkind == "history":
                    part = "history"
                elif bold and el.tag in ("h5", "h6"):
                    pass  # a sub-heading of the block its <h4> opened (Idaho's comment's "Purpose and Scope."): its kind
                elif bold and (name == "analysis" or (block in ("case", "notes") and part == block and el.tag != "h4")
                               or (el.tag == "h4" and part == "notes")):
                    pass  # a topic inside an <h4>'s block is of its kind (North Carolina's "I. In General" in CASE NOTES,
                    # its official comments' definitions), an <h4> of no case kind among notes is a note; "Analysis",
                    # the outline of the block it is in
                elif bold:  # a decision's topic, or a note's heading: by what follows it
                    if _decisions_follow(leaves, i):
                        part = "case"
                    elif hkind == "weak" or part == "history":
                        part = "notes"
                    if hkind is None and el.tag != "p":
                        unknown.append(name)
                if hkind == "history" and part == "history":
                    continue  # (Vermont's <h4>History</h4>, North Dakota's <h4>Source:</h4>: the history follows)
            parts[part].extend(_blocks(el))
        text, history, notes, case = parts["text"], parts["history"], parts["notes"], parts["case"]
        if text and not history:
            _split_trailing_history(text, history)
        status = _status(rest, text, history)
        out.append(Section(anchor, label, h3.sourceline, first, numbers, rest, path, status,
                           bool(_FUTURE.match(rest) or _FUTURE.search(rest[-200:])), text, history, notes, case, unknown))
    for h3 in h3s:
        if kinds[h3][0] == H3_INSIDE and h3 not in used:
            report.skip("an <h3> outside any section that is not a section's heading (a chapter's note printed as "
                        "<h3>): not read", f"{_where(label, h3.sourceline, h3.get('id'))}: "
                                           f"{_WS.sub(' ', h3.text_content()).strip()[:80]!r}")
        elif kinds[h3][0] == H3_INSIDE:
            report.note("<h3> inside a section that is not a section's heading: read as a paragraph of that section",
                        f"{_where(label, h3.sourceline, h3.get('id'))}")
    for p in root.iter("p"):
        # a section heading printed as a bold paragraph (NC r80 "§ 1. Fee tail converted ..."), outside any
        # section: reported, not read (its place is unknown)
        bold = _bold_only(p)
        if bold and _BOLD_SECTION.match(bold) and p.getparent() is not None and \
                any(isinstance(k.tag, str) and k.tag in ("h1", "h2") for k in p.getparent()):
            report.skip("a section heading printed as a bold paragraph, not an <h3>: not read",
                        f"{_where(label, p.sourceline, None)}: {bold[:80]!r}")
    if STATES[state].hyphenated:
        for s in out:
            if "-" not in s.number and len(s.numbers) == 1:
                # "§ 1." printed without its chapter (NC G.S. 41-1, in a file of hyphenated numbers)
                place = _PLACE.findall(s.anchor)
                chapter = re.sub(r"^[a-z]+0*", "", place[0]) if place else ""
                if chapter:
                    report.note("section number printed without its chapter: the chapter of its place added",
                                f"{_where(s.file, s.line, s.anchor)}: {s.number!r} read as {chapter}-{s.number}")
                    s.number = s.numbers[0] = f"{chapter}-{s.number}"
    return out


def _where(file: str, line: int | None, anchor: str | None) -> str:
    """``file:line (#anchor)``; libxml2 counts lines only up to 65535, past it the anchor locates."""
    at = f":{line}" if line and line < 65535 else ""
    return f"{file}{at} (#{anchor})" if anchor else f"{file}{at}"


def _ANCHOR_SEC(anchor: str, fallback: str = "") -> str:
    m = _ANCHOR.search(anchor)
    return m.group("sec") if m else fallback


def _expand(first: str, last: str, limit: int = 500) -> list[str] | None:
    """The sections of a printed range (``2-1-1 through 2-1-5``), or None when the ends differ but in
    their last number. An end with a letter suffix is itself in the range (``114-114a``: 114, 114a;
    ``114a-117``: 114a, 115, 116, 117; ``5a-5c``: 5a, 5b, 5c); a zero-padded number keeps its width
    (Alaska's ``09.10.070``), and in a number of dots only (Alaska's, Kentucky's) three digits after the last dot
    that end both ends in 0 (5) count by tens (fives)."""
    a, b = re.split(r"([-.:])", first), re.split(r"([-.:])", last)
    if len(a) != len(b) or a[:-1] != b[:-1]:
        return None
    ma, mb = re.fullmatch(r"(\d+)([A-Za-z]{0,3})", a[-1]), re.fullmatch(r"(\d+)([A-Za-z]{0,3})", b[-1])
    if not (ma and mb):
        return None
    lo, sa, hi, sb = int(ma.group(1)), ma.group(2), int(mb.group(1)), mb.group(2)
    prefix = "".join(a[:-1])
    width = len(ma.group(1)) if ma.group(1).startswith("0") else 0
    if lo == hi and len(sa) == 1 and len(sb) == 1 and sa.islower() == sb.islower() and sa <= sb:
        return [f"{prefix}{ma.group(1)}{chr(c)}" for c in range(ord(sa), ord(sb) + 1)]
    if not 0 <= hi - lo <= limit or (lo == hi and (sa or not sb)):
        return None
    # Alaska and Kentucky number a chapter's sections by tens or fives (09.10.070, 421.015): a range of such
    # numbers, ``Secs. 02.10.060 — 02.10.090``, is the sections 060, 070, 080, 090 (``27.20.065 — 27.20.480``: by fives)
    by_tens = "-" not in first and len(a) > 1 and a[-2] == "." and len(ma.group(1)) == 3 and not sa and not sb
    step = next((k for k in (10, 5) if by_tens and lo % k == 0 and hi % k == 0), 1)
    out = [first] if sa else []
    out += [f"{prefix}{n:0{width}d}" for n in range(lo + (1 if sa else 0), hi + 1, step)]
    return out + ([last] if sb else [])


def _alt_id(key: str, number: str) -> str:
    """The id of a section whose number legalir.legal.citations writes as another's (``4-4.1-1`` as ``4-4-1.1``): the
    key with the number's dots written ``d`` (``ri_code_4_4d1_1``)."""
    from legalir.legal import citations

    tail = "_" + citations.section_key(number)
    base = key[: -len(tail)] if key.endswith(tail) else key
    return base + "_" + citations.section_key(number.replace(".", "d"))


def _plural_range(first: str) -> tuple[str, str] | None:
    """The two ends of a range printed after ``§§`` with a hyphen between them (Vermont's ``§§ 61-69.
    Repealed.``, ``§§ 114-114a``): a plural mark before one number is a range; split at its middle hyphen
    (``1-101-1-105``: ``1-101`` and ``1-105``), or None where it has no middle."""
    parts = first.split("-")
    if len(parts) < 2 or len(parts) % 2:
        return None
    half = len(parts) // 2
    return "-".join(parts[:half]), "-".join(parts[half:])


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


# ------------------------------------------------------------------ the dataset
@dataclass
class Converted:
    """A section with its keys: the document, and the links of its statutory text (for the benchmark)."""

    doc: Document
    key: str
    title_number: str
    #: (part, paragraph, [(link, key of the linked section)]) of each paragraph with a link within the code
    paragraphs: list[tuple[str, Block, list[tuple[Link, str]]]]
    #: for each of ``paragraphs``, the keys of the sections inside a range whose two ends are links
    inside_ranges: list[list[str]] = field(default_factory=list)


@register
class Statutes(Dataset):
    """A state's official code as Public.Resource.Org publishes it (see the module docstring)."""

    name = "statutes"
    jurisdiction_field = "state"
    filter_fields = ("state", "status")  # a release is a version of the index: as_of=, not a filter
    #: the reader writes each document's ``citations`` field itself, from the code's own links
    citations_given = True
    #: set by legalir.collections (``legalir convert --citations off``: False, nothing extracted)
    citations_wanted = True
    # the cross-reference benchmark's protocol (legalir report, tune-bm25, tune-fusion)
    measures = ("success.1,10", "recip_rank", "recall.10,100", "ndcg_cut.10")
    headline = "recip_rank"
    report_scale = 1
    options_spec = {
        "state": Option("the state's postal abbreviation (the publisher's cic-code-<state>)", "ga",
                        choices=tuple(STATES)),
        "release": Option("the publisher's release number (r86 -> 86) [default: the newest present]",
                          check=_check_release),
        "date": Option("the release's date as the publisher dates it, YYYY-MM-DD, YYYY-MM or YYYY [default: the one the "
                       "repository's README gives: 'Release 86 dated 2022.11.']", check=lambda v: _check_date(v)),
        "text": Option(f"what `contents` holds: '+'-joined parts of {', '.join(TEXT_PARTS)} (text: the "
                       f"statutory text)", TEXT_DEFAULT, check=lambda v: parse_text_option(v)),
        "cite_timeout": Option("seconds legalir.legal.citations may take on one section before it is given up and "
                               "counted (0: no guard, in this process)", str(int(CITE_TIMEOUT_S)),
                               check=lambda v: _check_timeout(v)),
    }

    def __init__(self, root, **options):
        super().__init__(root, **options)
        self.state = str(options.get("state", "ga")).strip().lower()
        self.options["state"] = self.state
        self.text_parts = parse_text_option(options.get("text", TEXT_DEFAULT))
        self.options["text"] = "+".join(self.text_parts)
        self.cite_timeout = _check_timeout(options.get("cite_timeout", str(int(CITE_TIMEOUT_S))))
        self.release = str(options["release"]).strip() if options.get("release") else None
        #: the release's date (ISO, at the precision the publisher gives) and where it was read (_record_date)
        self.date: str | None = _check_date(options["date"]) if options.get("date") else None
        self.date_from: str | None = "--option date" if self.date else None
        self.report = Report()
        self._converted: list[Converted] | None = None

    # ------------------------------------------------------------ files
    def _sources(self) -> list[Path]:
        """Where the publisher's files are: folders ``cic-code-<st>/`` and ``cic-code-<st>*.tar.xz`` archives,
        under ``root`` (``DIR/statutes``) or its parent (``DIR``)."""
        st = self.state
        for base in (self.root, self.root.parent):
            found = ([base / f"cic-code-{st}"] if (base / f"cic-code-{st}").is_dir() else []) + \
                sorted(base.glob(f"cic-code-{st}*.tar.xz")) + sorted(base.glob(f"cic-code-{st}*.tar"))
            if found:
                return found
        raise DatasetError(f"statutes: no cic-code-{st}/ folder or cic-code-{st}*.tar.xz archive under {self.root} "
                           f"or {self.root.parent}; place the publisher's repository UniCourt/cic-code-{st} there "
                           f"as published (cic-code-{st}/transforms/{st}/<code>/r<release>/*.html)")

    def _member_release(self, name: str) -> str | None:
        st = self.state
        m = re.fullmatch(rf"(?:.*/)?cic-code-{st}/transforms/{st}/[^/]+/r(\d+)/[^/]+\.html", name)
        return m.group(1) if m else None

    def _files(self) -> Iterator[tuple[str, bytes]]:
        """``(label, bytes)`` of each HTML file of the release, in name order."""
        sources = self._sources()
        found: dict[str, tuple[str, Any]] = {}
        releases: set[str] = set()
        readmes: list[tuple[str, str]] = []  # (where, text) of the repository's README: the releases' dates
        for src in sources:
            if src.is_dir():
                if (src / "README.md").is_file():
                    readmes.append((str(src / "README.md"), (src / "README.md").read_text("utf-8", "replace")))
                for p in sorted(src.glob(f"transforms/{self.state}/*/r*/*.html")):
                    rel = self._member_release(f"{src.name}/{p.relative_to(src).as_posix()}")
                    if rel is not None:
                        releases.add(rel)
                        found.setdefault(f"{src.name}/{p.relative_to(src).as_posix()}", ("file", p))
            else:
                found.update(self._scan_archive(src, releases, readmes))
        if not releases:
            raise DatasetError(f"statutes: no release folder transforms/{self.state}/<code>/r<N>/*.html in "
                               f"{', '.join(map(str, sources))}")
        if self.release is None:
            self.release = max(releases, key=int)
            self.options["release"] = self.release
        if self.release not in releases:
            raise DatasetError(f"statutes: no release {self.release} of {self.state} in "
                               f"{', '.join(map(str, sources))}; present: {', '.join(sorted(releases, key=int))} "
                               f"(--option release=N)")
        self._record_date(readmes)
        wanted = sorted(n for n in found if self._member_release(n) == self.release)
        archives: dict[Path, list[str]] = {}
        for n in wanted:
            kind, where = found[n]
            if kind == "file":
                yield str(where), where.read_bytes()
            else:
                archives.setdefault(where, []).append(n)
        for arc, names in archives.items():  # one pass over each archive (xz cannot seek cheaply)
            want = set(names)
            got: dict[str, bytes] = {}
            with tarfile.open(arc) as tf:
                for member in tf:
                    if member.name in want and member.isfile():
                        got[member.name] = tf.extractfile(member).read()
            for n in names:
                yield f"{arc}!{n}", got[n]

    def _scan_archive(self, path: Path, releases: set[str],
                      readmes: list[tuple[str, str]] | None = None) -> dict[str, tuple[str, Any]]:
        out = {}
        try:
            with tarfile.open(path) as tf:
                for member in tf:
                    if readmes is not None and member.isfile() and \
                            member.name.split("/")[-2:] == [f"cic-code-{self.state}", "README.md"]:
                        readmes.append((f"{path}!{member.name}", tf.extractfile(member).read().decode("utf-8", "replace")))
                    rel = self._member_release(member.name) if member.isfile() else None
                    if rel is not None:
                        releases.add(rel)
                        out[member.name] = ("archive", path)
        except (tarfile.TarError, OSError, EOFError) as e:
            raise DatasetError(f"{path}: not a readable tar archive ({e})") from None
        return out

    # ------------------------------------------------------------ conversion
    def converted(self) -> list[Converted]:
        """Every section of the release with its keys, read once (the corpus and the benchmark)."""
        if self._converted is not None:
            return self._converted
        t0 = time.perf_counter()
        report = self.report = Report()
        sections: list[Section] = []
        for label, data in self._files():
            report.files += 1
            if not _TITLE_FILE.fullmatch(Path(label.split("!")[-1]).name):
                report.skip("a file that is not a title of the code (the publisher's copy of a constitution): not "
                            "read, its <h3>s not counted", f"{label} ({data.count(b'<h3')} <h3>)")
                continue
            sections += _read_sections(label, data, report, self.state)
        by_anchor = {s.anchor: s for s in sections}
        from legalir.legal import citations as cite

        # two numbers legalir.legal.citations writes alike (Rhode Island's 4-4-1.1 and 4-4.1-1, Colorado's 26-5.3-101 and
        # 26.5-3-101: one key): the later number's id writes its dots as "d" (ri_code_4_4d1_1), so both are kept
        self._alt_ids = {}
        firsts: dict[str, str] = {}
        for s in sections:
            title = title_of(s.anchor, s.number)
            for number in s.numbers:
                key = self._key(number, title)
                if firsts.setdefault(key, number) != number and (number, title) not in self._alt_ids:
                    self._alt_ids[(number, title)] = _alt_id(key, number)
                    report.note("two section numbers with one citation key (legalir.legal.citations writes them alike): "
                                "the later one's id writes its dots as 'd'",
                                f"{_where(s.file, s.line, s.anchor)}: {number} ({self._alt_ids[(number, title)]}; "
                                f"{key} is {firsts[key]})")
        out: list[Converted] = []
        seen: dict[str, tuple[str, str]] = {}
        with GuardedCitations(self.cite_timeout) as guard:
            for s in sections:
                out += self._convert(s, by_anchor, seen, guard, cite)
        report.written = len(out)
        report.seconds = time.perf_counter() - t0
        self._converted = out
        return out


    def _key(self, section: str, title: str | None = None, *, count: bool = False) -> str:
        alt = getattr(self, "_alt_ids", {}).get((section, title))
        if alt is not None:
            return alt
        key, from_lib = section_key(self.state, section, title if self.state == "vt" else None)
        if count and not from_lib:
            self.report.counts["ids: legalir.legal.citations reads no key in the official form (the general code's key)"] += 1
        return key

    def _title_first(self, text: str, own: str, found: list[str]) -> str:
        """The code's title-first citations in ``text`` (``13 V.S.A. § 2901``), keyed by the title they print (the
        key :func:`section_key` gives ``Vt. Stat. Ann. tit. 13, § 2901``: ``vt_code_13_2901``) into ``found``;
        returns the text with them blanked, so that legalir.legal.citations does not read their ``§ 2901`` in the
        citing section's title."""
        abbr = STATES[self.state].title_first
        if not abbr:
            return text
        pattern = _title_first_pattern(abbr)
        out = []
        pos = 0
        for m in pattern.finditer(text):
            numbers = [m.group("sec")] + _LIST_ITEM.findall(m.group("more") or "")
            for number in numbers:
                k = self._key(number, m.group("title"))
                if k != own and k not in found:
                    found.append(k)
            self.report.counts["citations: the code's title-first form, keyed by the title it prints"] += len(numbers)
            out.append(text[pos:m.start()] + " " * (m.end() - m.start()))
            pos = m.end()
        return "".join(out) + text[pos:]

    def _target(self, link: Link, by_anchor: dict[str, Section]) -> tuple[str, str] | None:
        """(section as printed, anchor) a link within this code points to, or None (not a section link)."""
        href = link.href
        anchor = href.split("#", 1)[1] if "#" in href else ""
        page = href.split("#", 1)[0]
        name = page.rsplit("/", 1)[-1]
        if not anchor or not (page == "" or re.fullmatch(rf"gov\.{self.state}\.[\w.]+\.html", name)
                              or _TITLE_FILE.fullmatch(name)):
            return None
        if anchor in by_anchor:
            return by_anchor[anchor].number, anchor
        # an item or a note of a section read (``…s2144aol1a``, ``…s511-notetodecision-…``): the longest anchor of a
        # section that begins the link's, followed by ``ol`` or ``-``
        for cut in sorted((c.start() for c in re.finditer(r"ol|-", anchor)), reverse=True):
            if anchor[:cut] in by_anchor:
                return by_anchor[anchor[:cut]].number, anchor[:cut]
        m = _ANCHOR.search(anchor)
        if not m:
            return None
        base = anchor[: m.start()] + "s" + m.group("sec")
        if base in by_anchor:
            return by_anchor[base].number, base
        return m.group("sec"), base

    def _foreign(self, block: Block, link: Link) -> str | None:
        """The key of another code's citation when the text around the link says the link is one."""
        from legalir.legal import citations as cite

        a = max(0, link.start - 60)
        window = block.text[a:link.end]
        if not _other_states(self.state).search(block.text, a, link.start):
            return None
        for c in cite.extract(window, use_eyecite=False):
            if c.end + a >= link.end - 1 and c.start + a < link.end:
                jur = c.key.split("_", 1)[0]
                if jur in cite.JURISDICTIONS and jur != self.state:
                    return c.key
        return None

    def _inside_ranges(self, block: Block, printed: list[tuple[Link, str, str | None]]) -> list[str]:
        """Keys of the sections a linked range cites besides its linked ends: strictly inside a range whose two
        ends are links (``§§ 12-6-101 — 12-6-105``: the publisher links the ends only; the paragraph cites the
        five), and after the link of a range whose last end is printed without one (``§§ 5-8-601—5-8-604``)."""
        out = []
        for i, (a, first, title) in enumerate(printed):
            nxt = printed[i + 1] if i + 1 < len(printed) else None
            if nxt is not None and _RANGE_BETWEEN.fullmatch(block.text[a.end:nxt[0].start]):
                numbers = _expand(first, nxt[1], limit=RANGE_GOLD_LIMIT) or []
                out += [self._key(n, title) for n in numbers[1:-1]]
                continue
            m = _RANGE_END.match(block.text, a.end)
            if m and (nxt is None or m.end() <= nxt[0].start):
                numbers = _expand(first, m.group("last"), limit=RANGE_GOLD_LIMIT) or []
                out += [self._key(n, title) for n in numbers[1:]]
        return out

    def _convert(self, s: Section, by_anchor, seen: dict[str, tuple[str, str]], guard: GuardedCitations, cite) -> list[Converted]:
        report = self.report
        where = _where(s.file, s.line, s.anchor)
        title_number = title_of(s.anchor, s.number)
        if s.future and any(self._key(n, title_number) in seen for n in s.numbers):
            report.skip("a later version of a section already read (delayed effective date): the version in "
                        "force kept", f"{where}: {s.number} ({s.anchor})")
            return []
        if s.unknown_h4:
            report.note("<h4> headings read as statutory text or notes by position", f"{where}: {s.unknown_h4[:3]}")
        out = []
        # links of every part, resolved once
        cites: list[str] = []
        paragraphs: list[tuple[str, Block, list[tuple[Link, str]]]] = []
        inside: list[list[str]] = []
        for part, blocks in (("text", s.text), ("notes", s.notes), ("case_notes", s.case_notes)):
            for b in blocks:
                resolved = []
                printed: list[tuple[Link, str, str | None]] = []  # (link, section, its title) for ranges
                for link in b.links:
                    target = self._target(link, by_anchor)
                    if target is None:
                        page = link.href.split("#", 1)[0].rsplit("/", 1)[-1]
                        if "#" not in link.href and re.fullmatch(rf"gov\.{self.state}\.[\w.]+\.html", page):
                            # NC r80: every link names a title's file, none its section
                            report.counts[f"links: to a whole file of this code, no section anchor ({part})"] += 1
                        else:
                            report.counts[f"links: not to a section of this code ({part})"] += 1
                        continue
                    foreign = self._foreign(b, link)
                    if foreign:
                        report.counts[f"links: on another state's citation, read as that code ({part})"] += 1
                        if part != "case_notes":
                            cites.append(foreign)
                        report.note("link on another state's citation, not a reference to this code",
                                    f"{where}: {b.text[max(0, link.start - 40):link.end]!r}")
                        continue
                    sec, anchor = target
                    place = _PLACE.findall(anchor)
                    its_title = re.sub(r"^[a-z]+0*", "", place[0]) if place else None
                    key = self._key(sec, its_title)
                    report.counts[f"links: within this code ({part})"] += 1
                    if anchor not in by_anchor:
                        report.counts[f"links: to a section in a file not present, key from the anchor ({part})"] += 1
                    resolved.append((link, key))
                    printed.append((link, sec, its_title))
                    if part == "case_notes":
                        continue  # a decision's words about another section: not this section's citation
                    cites.append(key)
                    sub = _SUB.search(link.text)
                    if sub:
                        cites.append(self._key(sec + re.sub(r"\s+", "", sub.group(1)), its_title))
                abbr = STATES[self.state].title_first
                if abbr:
                    # the code's title-first citations (Vermont's "13 V.S.A. § 2901", a <cite> without a link: the code
                    # links no section) are its cross-references: read as links to the section they name
                    for m in _title_first_pattern(abbr).finditer(b.text):
                        for number in [m.group("sec")] + _LIST_ITEM.findall(m.group("more") or ""):
                            key = self._key(number, m.group("title"))
                            report.counts[f"links: the code's title-first citations, read as links ({part})"] += 1
                            resolved.append((Link("", "title-first", m.group(0), m.start(), m.end()), key))
                            if part == "notes":
                                cites.append(key)
                    resolved.sort(key=lambda r: r[0].start)
                if resolved:
                    paragraphs.append((part, b, resolved))
                    inside.append(self._inside_ranges(b, printed))
        text = "\n".join(b.text for b in s.text)
        notes = "\n".join(b.text for b in s.notes)
        for number in s.numbers:
            key = self._key(number, title_number, count=True)
            if key in seen:
                first_where, first_number = seen[key]
                if first_number != number:
                    # Colorado's 26-5.3-101 (title 26) and 26.5-3-101 (title 26.5): legalir.legal.citations gives both
                    # the key co_code_26_5_3_101, so one id cannot hold both
                    report.skip("two section numbers with one citation key (legalir.legal.citations writes them alike): "
                                "the first kept", f"{where}: {number} (first: {first_number} at {first_where})")
                else:
                    report.skip("a section number read twice: the first kept", f"{where}: {number} (first at {first_where})")
                continue
            seen[key] = (where, number)
            # the rest of the text through legalir.legal.citations (links blanked: they are read above)
            found = list(dict.fromkeys(c for c in cites if c != key))
            for part_blocks in ((s.text,) if self.citations_wanted else ()):  # the statute's text (notes: links)
                blanked = "\n".join(_blank(b) for b in part_blocks)
                if not blanked.strip():
                    continue
                blanked = self._title_first(blanked, key, found)
                got = guard.extract(blanked, context=key_prefix(key, number), jurisdiction_hint=self.state)
                if got is None:
                    report.skip("citations of the text not read: legalir.legal.citations ran past the time limit "
                                "(links kept)", f"{where}: {number}")
                    continue
                found += [k for k, *_ in got if k != key and k not in found]
            fields = {
                "section": number, "state": self.state,
                "citation": official_citation(self.state, number, title_number),
                "title": s.heading, "heading_path": " > ".join(s.heading_path),
                "status": s.status, "history": "\n".join(b.text for b in s.history), "notes": notes,
                "case_notes": "\n".join(b.text for b in s.case_notes),
                "source": f"{Path(s.file.split('!')[-1]).name}#{s.anchor}",
            }
            if len(s.numbers) > 1:
                fields["printed_as"] = f"{s.number}: one heading for {len(s.numbers)} sections"
            fields[cite.FIELD] = " ".join(dict.fromkeys([f"is_{key}"] + [f"cites_{k}" for k in found]))
            parts = {"heading": s.heading, "text": text or f"{fields['citation']}. {s.heading or s.status.capitalize()}", "history": fields["history"],
                     "notes": notes, "case_notes": fields["case_notes"]}
            contents = "\n".join(parts[p] for p in self.text_parts if parts[p])
            report.counts[f"status: {s.status}"] += 1
            if not text:
                report.counts["sections without statutory text (their heading is their text)"] += 1
            out.append(Converted(Document(key, contents, fields, source=s.file, line=s.line), key, title_number,
                                 paragraphs if number == s.numbers[0] else [],
                                 inside if number == s.numbers[0] else []))
        return out

    def documents(self) -> Iterator[Document]:
        conv = self.converted()
        for c in conv:
            yield c.doc
        r = self.report
        _log.info(f"statutes {self.state} r{self.release}: {r.files} files, {r.read} sections read, {r.written} "
                  f"documents, {sum(r.skipped.values())} skipped, in {r.seconds:.1f} s")
        for reason, n in sorted(r.skipped.items()):
            _log.warning(f"statutes: skipped {n}: {reason} (first: {r.skipped_first[reason][0]})")

    def convert_report(self) -> dict:
        """The reader's report, for the collection's manifest (``reader``)."""
        return {"state": self.state, "release": self.release,
                **({"date": self.date, "date_from": self.date_from} if self.date else {}), **self.report.as_dict()}

    def _record_date(self, readmes: list[tuple[str, str]]) -> None:
        """The release's date, from the repository README's release lines (:func:`readme_release_dates`) or
        ``--option date``, recorded in the options (the collection's manifest, then each index version's
        marker: ``as_of=`` a date). Both given and different: an error naming both. Neither: no date (logged);
        a date is required only where one is asked for (``as_of=2021-09-01``), and never invented."""
        dated = [(where, *readme_release_dates(text).get(self.release, (None, None, None))) for where, text in readmes]
        read = [(where, date, line, raw) for where, date, line, raw in dated if date]
        for where, date, line, raw in dated:
            if date is None and line is not None:
                _log.warning(f"{where}:{line}: release {self.release} dated {raw!r}, not a date legalir reads "
                             f"(YYYY.MM.DD, YYYY.MM or YYYY); give --option date=YYYY-MM[-DD]")
        if read:
            where, date, line, raw = read[0]
            if self.date is not None and self.date != date:
                raise DatasetError(f"statutes: --option date={self.date} for release {self.release}, but {where}:"
                                   f"{line} dates it {raw!r} ({date}); leave the option out, or give the date the "
                                   f"publisher gives")
            if self.date is None:
                self.date, self.date_from = date, f"{where}:{line}"
        if self.date is None:
            _log.info(f"statutes {self.state} r{self.release}: no date (no README release line, no --option "
                      f"date=YYYY-MM): searching as of a date will need it")
        else:
            self.options["date"] = self.date

    # ------------------------------------------------------------ the cross-reference benchmark
    def xref_examples(self) -> list[dict]:
        """The benchmark's questions: each paragraph (statutory text, notes or case notes) with a link to
        another section of this code present in the corpus.

        Returns
        -------
        list of dict
            ``qid`` (``<section id>.<part letter><n>``), ``split`` (by the paragraph's title:
            :func:`split_of`), ``text`` (the paragraph as written), ``masked`` (each link's text replaced
            by ``[CITATION]``), ``gold`` (the linked sections' ids, in order, each once; a range whose
            two ends are links, ``§§ 12-6-101 — 12-6-105``, gives the sections inside it too, at most
            :data:`RANGE_GOLD_LIMIT`; the paragraph's own section where it links to it besides another),
            ``part``, ``source`` (the paragraph's own section id).
        """
        conv = self.converted()
        present = {c.key for c in conv}
        out = []
        for c in conv:
            n: Counter = Counter()
            for (part, block, resolved), inside in zip(c.paragraphs, c.inside_ranges):
                linked = [k for _, k in resolved]
                gold = list(dict.fromkeys(k for k in linked + inside if k != c.key and k in present))
                n[part] += 1
                if not gold:
                    continue  # a paragraph that links to its own section only is no question
                if c.key in linked:
                    gold.append(c.key)  # "this section and § 6-51-103": its own section, linked, is cited too
                masked = block.text
                for start, end in sorted({(link.start, link.end) for link, _ in resolved}, reverse=True):
                    masked = masked[:start] + MASK + masked[end:]  # (a span once: "17 V.S.A. §§ 2121, 2122")
                out.append({"qid": f"{c.key}.{PART_LETTER[part]}{n[part]}", "split": split_of(self.state, c.title_number),
                            "text": block.text, "masked": masked, "gold": gold, "part": part, "source": c.key})
        return out

    def topic_sets(self) -> dict[str, list[Topic]]:
        """``train``, ``valid``, ``test`` (the paragraph as written) and ``<split>.masked`` (its citations
        replaced by a placeholder), split by title (:func:`split_of`)."""
        sets: dict[str, list[Topic]] = {}
        examples = self.xref_examples()
        for split in SPLITS:
            for variant in ("", ".masked"):
                sets[split + variant] = [
                    Topic(e["qid"], e["masked"] if variant else e["text"],
                          {"state": self.state, "part": e["part"], "source": e["source"]})
                    for e in examples if e["split"] == split]
        return sets

    def qrels_sets(self) -> dict[str, list[Judgement]]:
        examples = self.xref_examples()
        return {split: [Judgement(e["qid"], g, 1) for e in examples if e["split"] == split for g in e["gold"]]
                for split in SPLITS}


@cache
def _title_first_pattern(abbr: str) -> re.Pattern:
    """``<title> <abbr> § <number>`` (and ``§§ <number>, <number> and <number>``): ``13 V.S.A. § 2901``."""
    a = r"\.?\s?".join(re.escape(x) for x in abbr.rstrip(".").split("."))
    return re.compile(rf"(?<![\w.])(?P<title>\d{{1,3}}[A-Z]?)\s{{1,3}}{a}\.?\s{{1,3}}§§?\s{{0,3}}(?P<sec>{_NUM})"
                      rf"(?P<more>(?:\s{{0,3}}(?:,|and|or)\s{{1,3}}{_NUM}(?![\w-])){{0,20}})")


@cache
def _other_states(state: str) -> re.Pattern:
    """Names and abbreviations of every jurisdiction but ``state`` (a cheap test before reading a window)."""
    from legalir.legal import citations as cite

    words = sorted({w for j, (name, abbrs) in cite.JURISDICTIONS.items() if j != state for w in (name, *abbrs)},
                   key=len, reverse=True)
    return re.compile(r"(?<![\w.])(?:" + "|".join(re.escape(w) for w in words) + r")(?!\w)")


def title_of(anchor: str, number: str) -> str:
    """The title (chapter) a section is in, from its anchor (``t08c02a01p01s8-2-1`` -> ``8``, ``t1Ba01s1B-1``
    -> ``1B``), else from its number."""
    place = _PLACE.findall(anchor)
    return re.sub(r"^[a-z]+0*", "", place[0]) if place else number.split("-")[0]


PART_LETTER = {"text": "t", "notes": "n", "case_notes": "c"}
#: the text between two links that makes them the ends of one range (``§§ 1-2-107 — 1-2-113``)
_RANGE_BETWEEN = re.compile(r"\s*(?:—|–|-|through|to)\s*(?:§§?\s*)?")
#: the unlinked last end of a range after a link (``—5-8-604``)
_RANGE_END = re.compile(rf"\s*(?:—|–|-|through|to)\s*(?:§§?\s*)?(?P<last>{_NUM})(?![\w-])")
#: the most sections a linked range makes relevant (a longer one is a citation of a chapter, not of sections)
RANGE_GOLD_LIMIT = 50


def split_of(state: str, title: str) -> str:
    """The benchmark split of a title (chapter): 60% train, 20% valid, 20% test by a hash of
    ``state/title``, so a title keeps its split whatever else a release holds."""
    h = int(hashlib.sha256(f"{state}/{title.lower()}".encode()).hexdigest(), 16) % 5
    return "train" if h < 3 else "valid" if h == 3 else "test"


def _blank(block: Block) -> str:
    """The block's text with its links' text replaced by spaces (same length: offsets kept)."""
    t = block.text
    for k in sorted(block.links, key=lambda k: k.start, reverse=True):
        t = t[:k.start] + " " * (k.end - k.start) + t[k.end:]
    return t


def _check_timeout(value: Any) -> float | None:
    try:
        v = float(str(value).strip())
    except ValueError:
        raise DatasetError(f"statutes: option cite_timeout={value!r}: expected seconds (0: no guard)") from None
    if v < 0:
        raise DatasetError(f"statutes: option cite_timeout={value!r}: expected seconds >= 0")
    return None if v == 0 else v
