"""The publisher's vocabulary, the same for every state: the kind of a heading in a section (case notes,
history, editors' notes), and what tells a section's annotations from its statutory text."""
from __future__ import annotations

import re

from legalir.datasets.statutes.blocks import WS, bold_only

# A heading (an ``<h4>``, a bold paragraph, or a paragraph's bold lead) is compared lower case, without its final
# ". —", "." or ":" (:func:`norm_heading`), and is of one kind (:func:`heading_kind`): case notes, history,
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
HISTORY_LINE = re.compile(r"\(?(?:(?:Priv\.|Pub\.) )?(?:Acts|Code|Orig\. Code|Civil Code|Penal Code|Ga\. L\.),? \d{4}\b"
                           r"[^;]{0,40}?(?:, ch\. \d|, §)|\(\d{4}, (?:p|c)\. \d+[,;]")
#: a paragraph that is the section's history by its bold lead (``History.``; Colorado's and North Dakota's
#: ``Source:``, Rhode Island's ``History of Section.``)
_HISTORY_LEAD = ("history", "source", "history of section")
#: a paragraph that is a history line by its first word (Mississippi's plain ``HISTORY: Laws, 1987, ...``,
#: Colorado's plain ``Source: L. 2022: Entire section added, ...``)
_HISTORY_WORD = re.compile(r"(?:History(?: of Section)?\s*[.:]|HISTORY\s*[.:]?)(?:\s|$)|History$")
SOURCE_WORD = re.compile(r"Source: [A-Z]")  # (read as history only before the annotations: a comment has its own)
HISTORY_CUT = re.compile(r"(?:(?:History(?: of Section)?|HISTORY|Source|Derivation)\s*[.:]?\s*)?")
_NOTE_EXTRA = re.compile(r"(?:the \d{4}(?: [\w. ]{0,20})? amendments?|.{0,50} comment(?:ary)?(?: \(\d{4}\))?|.{0,50} notes?"
                         r"|.{0,40} references?|.{0,30} sections|am\. jur\..{0,60}|\d{4} adoption note)$")
#: a decision or an attorney general's opinion cited as case notes cite them (``Smith v. Jones, 806 P.2d 281``,
#: ``1907 Vt. LEXIS 135``, ``OAG 04-037``, ``1987-88 Op. Att'y Gen. 123``): what tells a decision's topic
#: heading from a note's in a section's annotations (:func:`_cites_decision`)
_CASE_NAME = re.compile(r"\bv\. |\bIn re |\bEx parte ")
_REPORTER = re.compile(r"\b\d{1,4} [A-Z][A-Za-z.']{0,12}(?: ?[A-Z][A-Za-z.']{0,12}){0,2}(?: ?(?:2d|3d|4th|5th|6th))? \d{1,5}\b")
_OPINION = re.compile(r"LEXIS \d|\bOAG \d|\bOps?\. (?:Att'?y|Atty\.?) Gen|\bAtt'?y Gen\. Op|\bOp\. Att'?y|\b\d{4} WY \d|"
                      r"\bInformal Op|\bOpinion of the Attorney General|\bAttorney General (?:opined|concluded|advised)")


def norm_heading(text: str) -> str:
    t = text.replace("’", "'").replace("‘", "'").strip().lower()
    t = re.sub(r"[\s.,:—–-]+$", "", t)
    return WS.sub(" ", t)


def _is_note_heading(text: str) -> bool:
    return heading_kind(text) in ("notes", "weak")


def heading_kind(text: str) -> str | None:
    """The kind of a heading in a section (an ``<h4>``, a bold paragraph or a paragraph's bold lead):
    ``"case"`` (case notes: decisions, attorney general's opinions), ``"history"``, ``"notes"`` (editors'
    notes), ``"weak"`` (a note heading that, in case notes, may be a decision's topic: ``Applicability.``)
    or ``None`` (unknown: statutory text before the annotations, a topic in them)."""
    t = norm_heading(text)
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

def lead_of(el) -> tuple[str, bool] | None:
    """The heading a paragraph opens with and whether it is bold: ``<b>Source:</b> L. 92 ...`` ->
    ``("source", True)``; ``Cross-References. Income tax, ...`` -> ``("cross-references", False)``."""
    first = next((k for k in el if isinstance(k.tag, str)), None)
    if first is not None and not (el.text or "").strip() and (
            first.tag in ("b", "strong") or (first.tag == "span" and "boldspan" in (first.get("class") or ""))):
        return norm_heading(first.text_content()), True
    m = _INLINE_HEAD.match(WS.sub(" ", el.text_content()).strip()[:80])
    return (norm_heading(m.group(1)), False) if m else None


def is_history_line(txt: str, lead: tuple[str, bool] | None) -> bool:
    """Whether a paragraph is a history line by its words (``History.``, ``HISTORY:``, ``History of Section.``) or
    by its bold lead (``<b>Source:</b>``)."""
    return bool(_HISTORY_WORD.match(txt)) or (lead is not None and lead[1] and lead[0] in _HISTORY_LEAD)


def opens_annotations(el) -> bool:
    """Whether ``el`` (a ``<p>``, ``<div>`` or ``<h4>``) is where a section's annotations begin: a history line,
    a note or case-note heading (in bold, opening the paragraph, or an ``<h4>``)."""
    if el.tag == "p":
        txt = WS.sub(" ", el.text_content()).strip()
        lead = lead_of(el)
        if is_history_line(txt, lead) or HISTORY_LINE.match(txt):
            return True
        bold = bold_only(el)
        if bold is not None and heading_kind(bold) is not None:
            return True
        return lead is not None and (lead[0] in INLINE_NOTE_STARTS or lead[0] in INLINE_CASE_STARTS
                                     or (lead[1] and heading_kind(lead[0]) is not None))
    h4 = el if el.tag == "h4" else el.find(".//h4")
    if h4 is None:
        return False
    return heading_kind(h4.text_content()) is not None

def heading_of(el) -> tuple[str | None, str | None, bool]:
    """(kind, heading, bold) of a leaf: an ``<h4>``-``<h6>``'s text; a bold paragraph or a paragraph's bold
    lead; a known run-in lead (``Cross-References. ...``, not bold); else (None, None, False)."""
    if not isinstance(el, tuple) and el.tag in ("h4", "h5", "h6"):
        name = WS.sub(" ", el.text_content()).strip()
        return heading_kind(name), name, True
    if isinstance(el, tuple) or el.tag != "p":
        return None, None, False
    bold = bold_only(el)
    if bold is not None:
        return heading_kind(bold), bold, True
    whole = WS.sub(" ", el.text_content()).strip()
    if len(whole) < 40 and heading_kind(whole) in ("case", "notes"):
        return heading_kind(whole), whole, True  # a heading alone in its paragraph, not bold (Virginia's "Annotations")
    lead = lead_of(el)
    if lead is None:
        return None, None, False
    if lead[1]:
        return heading_kind(lead[0]), lead[0], True
    if lead[0] in INLINE_CASE_STARTS:
        return "case", lead[0], False
    if lead[0] in INLINE_NOTE_STARTS:
        return "notes", lead[0], False
    return None, None, False


def decisions_follow(leaves: list, i: int, limit: int = 3) -> bool:
    """Whether the block a heading opens cites a decision at once (the heading's paragraph or one of the two after
    it, up to the next heading): the heading is then a topic of the case notes."""
    for j in range(i, min(len(leaves), i + limit)):
        el = leaves[j]
        if j > i and heading_of(el)[1] is not None:
            return False
        text = el[0] if isinstance(el, tuple) else el.text_content()
        if _cites_decision(WS.sub(" ", text)):
            return True
    return False
