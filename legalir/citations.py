"""Legal citations, extracted from text and normalised to one key per authority.

``Cal. Civ. Code § 1942``, ``CA Civ Code § 1942 (2021)``, ``California Civil Code section 1942``,
``CC 1942`` and ``Section 1942 of the Civil Code`` (in a California statute or question) all
become the key ``ca_civ_1942``; ``42 U.S.C. § 1983`` becomes ``us_usc_42_1983`` and
``347 U.S. 483`` becomes ``case_347_us_483``. Keys hold only ``[a-z0-9_]``, so Lucene's analyzer
keeps each one as a single token.

Two extractors run and their keys are merged:

* `eyecite <https://github.com/freelawproject/eyecite>`_ (offline): case citations and the
  statute reporters of its laws database. Its ``corrected_citation()`` drops parts of state
  codes (``Cal. Civ. Code § 1942`` -> ``Cal. Code § 1942``; ``Ala. Code § 35-9A-201`` keeps
  only ``35``), does not read upper-case (``CAL. CIV. CODE``), the dot-less form the Housing
  release writes (``Tex Prop Code § 92.052``, ``NY Real Prop L § 235-B``), short forms
  (``CC 1942``, ``NRS 118A.290``, ``RPL 235-b``) or spelled-out names. Its law citations are
  re-read from its groups (reporter, subject, chapter, section) through the rule table here.
* The rule table of this module (:data:`JURISDICTIONS`, :data:`SUBJECT_CODES`,
  :data:`SHORT_FORMS`): an optional jurisdiction (name, Bluebook abbreviation or upper-case
  postal code), a code (a subject code such as Civil Code, or a state's general code:
  Code, Stat., Rev. Stat., Gen. Laws, Comp. Laws ...), ``§``/``§§``/``sec.``/``section`` and
  one or more sections, with ranges (``§§ 1941-1942``) and lists; chapter forms
  (``Mass. Gen. Laws ch. 186, § 14``); the reversed form ``section 1942 of the Civil Code``;
  and bare ``section 1950.5`` inside a document, read as its own code's section.

A subject code without a jurisdiction (``Civil Code section 1942``) is resolved with the
jurisdiction given (a Housing question's state), or when only one jurisdiction of the table
has that code. A jurisdiction's general code has one key whatever it is called
(``AK Stat`` = ``Alaska Statutes`` = ``Alaska Code``: ``ak_code_...``).

A document's ``citations`` field (written by ``legalir convert``) holds its keys with their
role: ``is_<key>`` (its own citation), ``in_<key>`` (it is a subsection of that section) and
``cites_<key>`` (cited in its text). :func:`field` writes it, :func:`parse_field` reads it.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

_log = logging.getLogger(__name__)

#: the collection field holding a document's citation keys (``is_``/``in_``/``cites_`` + key)
FIELD = "citations"
ROLES = ("is", "in", "cites")

# ------------------------------------------------------------------ the rule table
#: postal code -> (name, Bluebook abbreviation(s)); ``us`` is federal law
JURISDICTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "al": ("Alabama", ("Ala.",)), "ak": ("Alaska", ("Alaska",)), "az": ("Arizona", ("Ariz.",)),
    "ar": ("Arkansas", ("Ark.",)), "ca": ("California", ("Cal.", "Calif.")), "co": ("Colorado", ("Colo.",)),
    "ct": ("Connecticut", ("Conn.",)), "de": ("Delaware", ("Del.",)),
    "dc": ("District of Columbia", ("D.C.",)), "fl": ("Florida", ("Fla.",)), "ga": ("Georgia", ("Ga.",)),
    "hi": ("Hawaii", ("Haw.",)), "id": ("Idaho", ("Idaho",)), "il": ("Illinois", ("Ill.",)),
    "in": ("Indiana", ("Ind.",)), "ia": ("Iowa", ("Iowa",)), "ks": ("Kansas", ("Kan.",)),
    "ky": ("Kentucky", ("Ky.",)), "la": ("Louisiana", ("La.",)), "me": ("Maine", ("Me.",)),
    "md": ("Maryland", ("Md.",)), "ma": ("Massachusetts", ("Mass.",)), "mi": ("Michigan", ("Mich.",)),
    "mn": ("Minnesota", ("Minn.",)), "ms": ("Mississippi", ("Miss.",)), "mo": ("Missouri", ("Mo.",)),
    "mt": ("Montana", ("Mont.",)), "ne": ("Nebraska", ("Neb.",)), "nv": ("Nevada", ("Nev.",)),
    "nh": ("New Hampshire", ("N.H.",)), "nj": ("New Jersey", ("N.J.",)), "nm": ("New Mexico", ("N.M.",)),
    "ny": ("New York", ("N.Y.",)), "nc": ("North Carolina", ("N.C.",)), "nd": ("North Dakota", ("N.D.",)),
    "oh": ("Ohio", ("Ohio",)), "ok": ("Oklahoma", ("Okla.",)), "or": ("Oregon", ("Or.", "Ore.")),
    "pa": ("Pennsylvania", ("Pa.",)), "ri": ("Rhode Island", ("R.I.",)), "sc": ("South Carolina", ("S.C.",)),
    "sd": ("South Dakota", ("S.D.",)), "tn": ("Tennessee", ("Tenn.",)), "tx": ("Texas", ("Tex.",)),
    "ut": ("Utah", ("Utah",)), "vt": ("Vermont", ("Vt.",)), "va": ("Virginia", ("Va.",)),
    "wa": ("Washington", ("Wash.",)), "wv": ("West Virginia", ("W. Va.",)), "wi": ("Wisconsin", ("Wis.",)),
    "wy": ("Wyoming", ("Wyo.",)),
}

#: a state's general code, however it is called (one key: ``<jur>_code_<section>``)
GENERAL_CODE = (r"(?:Rev(?:ised)?\.?\s+|Gen(?:eral)?\.?\s+|Comp(?:iled)?\.?\s+|Consol(?:idated)?\.?\s+|"
                r"Off(?:icial)?\.?\s+)?(?:Code|Stat(?:utes?)?|Laws?|L)\.?(?:\s+Ann(?:otated)?\.?)?")

#: subject codes: id -> (regex of the name, jurisdictions that have it). A name is matched after
#: an optional jurisdiction, case-insensitively, with optional dots and spelled-out words.
SUBJECT_CODES: dict[str, tuple[str, tuple[str, ...]]] = {
    "civ_proc": (r"(?:Code\s+(?:of\s+)?Civ(?:il)?\.?\s+Proc(?:edure)?\.?|Civ(?:il)?\.?\s+Proc(?:edure)?\.?\s+Code)",
                 ("ca",)),
    "civ_prac_rem": (r"Civ(?:il)?\.?\s+Prac(?:tice)?\.?\s+(?:&|and)\s+Rem(?:edies)?\.?\s+Code", ("tx",)),
    "civ": (r"(?:Civ(?:il)?\.?\s+Code|Code\s+Civ(?:il)?\.?)", ("ca", "la", "ga", "mt", "nd", "sd", "ok")),
    "health_safety": (r"Health\s+(?:&|and)\s+Saf(?:ety)?\.?\s+Code", ("ca", "tx")),
    "gov": (r"Gov(?:'?t|ernment)?\.?\s+Code", ("ca", "tx")),
    "bus_prof": (r"Bus(?:iness)?\.?\s+(?:&|and)\s+Prof(?:essions)?\.?\s+Code", ("ca",)),
    "prop": (r"Prop(?:erty)?\.?\s+Code", ("tx",)),
    "real_prop_acts": (r"(?:Real\s+Prop(?:erty)?\.?\s+Act(?:ion)?s\.?(?:\s+(?:&|and)\s+Proc(?:eedings)?\.?)?\s+L(?:aw)?"
                       r"|RPAPL)\.?", ("ny",)),
    "real_prop": (r"Real\s+Prop(?:erty)?\.?\s+(?:L(?:aw)?|Code)\.?", ("ny", "md")),
    "gen_oblig": (r"Gen(?:eral)?\.?\s+Oblig(?:ations)?\.?\s+L(?:aw)?\.?", ("ny",)),
    "mult_dwell": (r"Mult(?:iple)?\.?\s+Dwell(?:ing)?\.?\s+L(?:aw)?\.?", ("ny",)),
}

#: short forms that name a jurisdiction and a code: regex -> (jurisdiction, code id)
SHORT_FORMS: dict[str, tuple[str, str]] = {
    r"CCP": ("ca", "civ_proc"), r"CC": ("ca", "civ"), r"RPAPL": ("ny", "real_prop_acts"),
    r"RPL": ("ny", "real_prop"), r"GOL": ("ny", "gen_oblig"), r"MDL": ("ny", "mult_dwell"),
    r"NRS": ("nv", "code"), r"RCW": ("wa", "code"), r"ORS": ("or", "code"),
    r"(?:M\.?\s?)?G\.?\s?L\.?": ("ma", "code"),
}

# ------------------------------------------------------------------ the grammar
_SEC = r"\d+[A-Za-z]?(?:[.\-:/]\d*[A-Za-z0-9]+)*(?:\([A-Za-z0-9]{1,4}\))*"
_MARK = r"(?:§§?|[Ss][Ss]?\.|[Ss]ec(?:tion)?s?\.?|SEC(?:TION)?S?\.?)"
_RANGE = r"\s*(?:-|–|—|to|through|thru)\s*"
_LIST = r"(?:\s*(?:,|&|and|or)\s*)+"


def _jur_pattern() -> str:
    names, abbrs = [], []
    for postal, (name, bb) in JURISDICTIONS.items():
        names.append(r"\s+".join(re.escape(w) for w in name.split()))
        for a in bb:
            abbrs.append(r"\.?\s?".join(re.escape(p.rstrip(".")) for p in a.split()) + (r"\.?" if a.endswith(".") else ""))
    postal = "|".join(p.upper() for p in JURISDICTIONS if p != "us")
    # postal codes only upper case: "in Civil Code section 5" is not Indiana
    return rf"(?:{'|'.join(sorted(names, key=len, reverse=True))}|{'|'.join(sorted(abbrs, key=len, reverse=True))}|(?-i:{postal}))"


@lru_cache(maxsize=1)
def _patterns():
    jur = _jur_pattern()
    subject = "|".join(f"(?P<s_{k}>{v})" for k, (v, _) in SUBJECT_CODES.items())
    short = "|".join(f"(?P<f{i}>(?-i:{k}))" for i, k in enumerate(SHORT_FORMS))
    secs = rf"(?P<secs>{_SEC}(?:(?:{_RANGE}|{_LIST}){_SEC})*)"
    chapter = r"(?:(?:ch(?:apter)?|c)\.?\s*(?P<chap>\d+[A-Za-z]?)\s*,?\s*)?"
    forward = re.compile(
        rf"(?<![\w.])(?:(?P<jur>{jur})\.?\s*,?\s+)?(?:(?:{subject})(?:\s+Ann(?:otated)?\.?)?|(?P<general>{GENERAL_CODE})|{short})"
        rf",?\s*{chapter}(?P<mark>{_MARK})?\s*{secs}", re.IGNORECASE)
    usc = re.compile(rf"(?<![\w.])(?P<title>\d+)\s+U\.?\s?S\.?\s?C\.?(?:\s?A\.?)?\s*(?P<mark>{_MARK})?\s*{secs}",
                     re.IGNORECASE)
    backward = re.compile(
        rf"(?<![\w.])(?P<mark>{_MARK})\s*{secs}\s+of\s+(?:the\s+)?(?:(?P<jur>{jur})\.?\s+)?(?:{subject}|(?P<general>{GENERAL_CODE}))",
        re.IGNORECASE)
    bare = re.compile(rf"(?<![\w.])(?P<mark>{_MARK})\s*{secs}", re.IGNORECASE)
    return forward, usc, backward, bare


_JUR_BY_TEXT: dict[str, str] = {}


def jurisdiction(value: str | None) -> str | None:
    """A jurisdiction's key (``ca``) from its name, abbreviation or postal code, any case; else ``None``."""
    if not value:
        return None
    if not _JUR_BY_TEXT:
        for postal, (name, abbrs) in JURISDICTIONS.items():
            for v in (postal, name, *abbrs):
                _JUR_BY_TEXT[_squash(v)] = postal
        _JUR_BY_TEXT["us"] = "us"
    return _JUR_BY_TEXT.get(_squash(value))


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", str(text).lower())


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(text).lower()).strip("_")


# ------------------------------------------------------------------ sections
def _split_sub(sec: str) -> tuple[str, str]:
    """``238-A(1)(a)`` -> (``238-A``, ``(1)(a)``)."""
    i = sec.find("(")
    return (sec, "") if i < 0 else (sec[:i], sec[i:])


def _expand(first: str, last: str, limit: int = 50) -> list[str]:
    """Sections of a range: ``1941``-``1943`` -> all three; ``92.103``-``92.105`` likewise; else the ends."""
    a, b = _split_sub(first)[0], _split_sub(last)[0]
    pa, pb = re.split(r"([.\-:/])", a), re.split(r"([.\-:/])", b)
    if len(pb) == 1 and len(pa) > 1 and pb[0].isdigit():  # "92.103-105": the last part only
        pb = pa[:-1] + pb
        last = "".join(pb)
    if len(pa) == len(pb) and pa[:-1] == pb[:-1] and pa[-1].isdigit() and pb[-1].isdigit():
        lo, hi = int(pa[-1]), int(pb[-1])
        if 0 < hi - lo <= limit:
            width = len(pa[-1]) if pa[-1].startswith("0") else 0
            return ["".join(pa[:-1]) + str(n).zfill(width) for n in range(lo, hi + 1)]
    return [first, last]


def _is_range(first: str, last: str) -> bool:
    """Whether ``first-last`` reads as a range (``1941-1942``, ``92.103-92.105``), not one hyphenated
    section (``5-1401``, ``7-108``)."""
    a, b = _split_sub(first)[0], _split_sub(last)[0]
    pa, pb = re.split(r"([.\-:/])", a), re.split(r"([.\-:/])", b)
    return (len(pa) == len(pb) and pa[:-1] == pb[:-1] and pa[-1].isdigit() and pb[-1].isdigit()
            and len(pa[-1]) == len(pb[-1]) and 0 < int(pb[-1]) - int(pa[-1]) <= 50)


def _sections(text: str, plural: bool) -> list[str]:
    """The sections a matched run names: one, a list, or ranges (ranges only after ``§§``/``sections``
    or with an en dash: ``§ 7-108`` is one section)."""
    out: list[str] = []
    items = re.split(_LIST, text, flags=re.IGNORECASE) if plural else [text]
    for item in items:
        m = re.fullmatch(rf"({_SEC})({_RANGE})({_SEC})", item.strip())
        dash = re.fullmatch(rf"({_SEC})\s*[–—]\s*({_SEC})", item.strip())
        if m and m.group(2).strip() == "-" and not _is_range(m.group(1), m.group(3)):
            m = None  # "sections 5-1401": a hyphenated section, not the range 5 to 1401
        if m:
            m = (m.group(1), m.group(3))
        if plural and m:
            out += _expand(*m)
        elif dash:
            out += _expand(dash.group(1), dash.group(2))
        else:
            first = re.match(_SEC, item.strip())
            if first:
                out.append(first.group(0))
    return out


def section_key(sec: str) -> str:
    return _slug(sec.replace("(", "_").replace(")", ""))


# ------------------------------------------------------------------ extraction
@dataclass(frozen=True)
class Citation:
    """One normalised citation: ``key`` (``ca_civ_1942``), ``base`` (the section without its
    subsections: ``ny_real_prop_238_a`` for ``238-A(1)(a)``; equal to ``key`` otherwise), where it
    was found (``start``, ``end``) and by which extractor."""

    key: str
    base: str
    start: int
    end: int
    source: str = "rules"


_SHORT = [(f"f{i}", j, code) for i, (j, code) in enumerate(SHORT_FORMS.values())]
_SUBJECT = [(f"s_{code}", code, jurs) for code, (_, jurs) in SUBJECT_CODES.items()]


def _groups(m: re.Match) -> dict[str, str]:
    """The named groups a match filled (one ``groupdict`` per match: most are empty)."""
    return {k: v for k, v in m.groupdict().items() if v}


def _code_of(gd: dict[str, str], jur: str | None) -> tuple[str | None, str | None]:
    """(jurisdiction, code id) of a forward/backward match's filled groups."""
    given = jurisdiction(gd["jur"]) if "jur" in gd else None
    for name, j, code in _SHORT:
        if name in gd:
            return j, code
    for name, code, jurs in _SUBJECT:
        if name in gd:
            return given or (jur if jur in jurs else None) or (jurs[0] if len(jurs) == 1 else None), code
    if "general" in gd:
        return given, "code"  # a general code needs its jurisdiction named
    return None, None


def _keys(prefix: str, gd: dict[str, str], start: int, end: int, source: str) -> list[Citation]:
    plural = bool(gd.get("mark") and re.match(r"(?:§§|[Ss]{2}\.|[Ss]ec(?:tion)?s|SEC(?:TION)?S)", gd["mark"]))
    out = []
    chap = gd.get("chap")
    for sec in _sections(gd["secs"], plural):
        full = (f"{chap}_" if chap else "") + section_key(sec)
        base = (f"{chap}_" if chap else "") + section_key(_split_sub(sec)[0])
        out.append(Citation(f"{prefix}_{full}", f"{prefix}_{base}", start, end, source))
    return out


_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s")
#: characters read before and after a section number (the longest code name precedes it:
#: "Real Property Actions and Proceedings Law section"; "of the ... Code" follows it)
_BEFORE, _AFTER = 160, 90


def _windows(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` around its numbers, merged, starting at a word boundary: every citation has
    a number, so the patterns read only these (a statute's long prose without numbers costs nothing)."""
    out: list[list[int]] = []
    for m in _DIGITS.finditer(text):
        a, b = max(0, m.start() - _BEFORE), min(len(text), m.end() + _AFTER)
        if out and a <= out[-1][1]:
            out[-1][1] = b
        else:
            out.append([a, b])
    spans = []
    for a, b in out:
        if a > 0:
            ws = _SPACE.search(text, a)
            a = ws.end() if ws and ws.end() <= b else a
        spans.append((a, b))
    return spans


def _rules(text: str, jur: str | None, context: str | None) -> list[Citation]:
    found: list[Citation] = []
    for a, b in _windows(text):
        found += [Citation(c.key, c.base, c.start + a, c.end + a, c.source)
                  for c in _rules_in(text[a:b], jur, context)]
    return found


def _rules_in(text: str, jur: str | None, context: str | None) -> list[Citation]:
    forward, usc, backward, bare = _patterns()
    found: list[Citation] = []
    taken: list[tuple[int, int]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= s or a >= e for s, e in taken)

    for m in usc.finditer(text):
        gd = _groups(m)
        found += _keys(f"us_usc_{gd['title']}", gd, m.start(), m.end(), "rules")
        taken.append(m.span())
    for pattern in (backward, forward):
        for m in pattern.finditer(text):
            if not free(*m.span()):
                continue
            gd = _groups(m)
            j, code = _code_of(gd, jur)
            if j is None or code is None:
                continue
            if code == "code" and not ("jur" in gd or any(name in gd for name, _, _ in _SHORT)):
                continue
            if ("mark" not in gd and code == "code" and "jur" in gd and "chap" not in gd
                    and not re.search(r"\w[.\-:/]\w", gd["secs"])):
                # "Alaska Law 2019": a general code, no section mark, a plain number: too loose
                continue
            found += _keys(f"{j}_{code}", gd, m.start(), m.end(), "rules")
            taken.append(m.span())
    if context:
        for m in bare.finditer(text):
            if free(*m.span()):
                found += _keys(context, _groups(m), m.start(), m.end(), "context")
                taken.append(m.span())
    return found


_EYECITE_HINT = re.compile(r"§|\bU\.?\s?S\.?\s?C|\b\d+\s+[A-Z][A-Za-z0-9.'&]*(?:\s+[A-Z0-9][A-Za-z0-9.'&]*){0,4}\s+\d+")


def _eyecite(text: str, jur: str | None, taken: Sequence[tuple[int, int]]) -> list[Citation]:
    rest = text
    for s, e in taken:  # what the rule table read is not read again (nor makes eyecite run)
        rest = rest[:s] + " " * (e - s) + rest[e:]
    if not _EYECITE_HINT.search(rest):
        return []
    text = rest
    from eyecite import get_citations
    from eyecite.models import FullCaseCitation, FullLawCitation

    out = []
    for c in get_citations(text):
        span = c.span()
        if any(not (span[1] <= s or span[0] >= e) for s, e in taken):
            continue  # the rule table read it whole
        g = c.groups
        if isinstance(c, FullCaseCitation) and g.get("volume") and g.get("page"):
            reporter = getattr(c, "corrected_reporter", lambda: g.get("reporter"))() or g.get("reporter", "")
            out.append(Citation(f"case_{_slug(g['volume'])}_{_slug(reporter)}_{_slug(g['page'])}",
                                f"case_{_slug(g['volume'])}_{_slug(reporter)}_{_slug(g['page'])}", *span, "eyecite"))
        elif isinstance(c, FullLawCitation) and g.get("section"):
            # eyecite's corrected_citation() drops the subject ("Cal. Code"): re-read its reporter group
            reporter = " ".join(x for x in (g.get("title"), g.get("reporter")) if x)
            prefix = None
            mm = _patterns()[0].match(f"{g.get('reporter', '')} § 1")
            if mm:
                j, code = _code_of(_groups(mm), jur)
                if j and code:
                    prefix = f"{j}_{code}"
            prefix = prefix or f"law_{_slug(reporter)}"
            if g.get("chapter"):
                prefix += f"_{_slug(g['chapter'])}"
            sec = g["section"]
            out.append(Citation(f"{prefix}_{section_key(sec)}", f"{prefix}_{section_key(_split_sub(sec)[0])}",
                                *span, "eyecite"))
    return out


def extract(text: str, *, jurisdiction_hint: str | None = None, context: str | None = None,
            use_eyecite: bool = True) -> list[Citation]:
    """The citations in ``text``, in order of appearance, each once.

    Parameters
    ----------
    text : str
        A document or a query.
    jurisdiction_hint : str, optional
        The jurisdiction a subject code without one belongs to (a Housing question's ``state``:
        ``California``, ``CA``, ``california`` alike).
    context : str, optional
        A code prefix (``ca_civ``) that a bare ``section 1950.5`` belongs to (a statute's own code).
    use_eyecite : bool
        Also run eyecite (case citations, statute reporters outside the rule table).

    Returns
    -------
    list of Citation
    """
    if not text:
        return []
    jur = jurisdiction(jurisdiction_hint) if jurisdiction_hint else None
    found = _rules(text, jur, context)
    if use_eyecite:
        found += _eyecite(text, jur, [(c.start, c.end) for c in found])
    seen, out = set(), []
    for c in sorted(found, key=lambda c: c.start):
        if c.key not in seen:
            seen.add(c.key)
            out.append(c)
    return out


def keys(text: str, **kwargs) -> list[str]:
    """The normalised keys of :func:`extract`."""
    return [c.key for c in extract(text, **kwargs)]


def code_prefix(key: str) -> str | None:
    """The code part of a statute key (``ca_civ_1942_5`` -> ``ca_civ``), for reading bare sections."""
    parts = key.split("_")
    if parts[0] in JURISDICTIONS and len(parts) > 2:
        for code in sorted(SUBJECT_CODES, key=len, reverse=True):
            if key.startswith(f"{parts[0]}_{code}_"):
                return f"{parts[0]}_{code}"
        if parts[1] == "code":
            return f"{parts[0]}_code"
    return None


# ------------------------------------------------------------------ a document's field
def document_field(own: str | None, text: str, *, jurisdiction_hint: str | None = None) -> str:
    """A document's ``citations`` field: ``is_``/``in_`` keys of its own citation ``own`` and
    ``cites_`` keys of what ``text`` cites (its own citation left out), space-separated."""
    roles: list[str] = []
    mine: set[str] = set()
    context = None
    for c in extract(own or "", jurisdiction_hint=jurisdiction_hint):
        roles.append(f"is_{c.key}")
        mine.add(c.key)
        if c.base != c.key:
            roles.append(f"in_{c.base}")
            mine.add(c.base)
        context = context or code_prefix(c.key)
    for c in extract(text, jurisdiction_hint=jurisdiction_hint, context=context):
        if c.key not in mine:
            roles.append(f"cites_{c.key}")
            mine.add(c.key)
    return " ".join(dict.fromkeys(roles))


def parse_field(value: str | None) -> dict[str, list[str]]:
    """``{"is": [...], "in": [...], "cites": [...]}`` from a ``citations`` field."""
    out: dict[str, list[str]] = {r: [] for r in ROLES}
    for tok in str(value or "").split():
        role, _, key = tok.partition("_")
        if role in out and key:
            out[role].append(key)
    return out


def query_clauses(text: str, *, jurisdiction_hint: str | None = None) -> list[tuple[str, int]]:
    """``(citations-field token, tier)`` for a query: the authority itself (tier 3), a section it is part
    of or that contains it (tier 2), documents citing it (tier 1). Empty when the query cites nothing."""
    out: dict[str, int] = {}
    for c in extract(text, jurisdiction_hint=jurisdiction_hint):
        for tok, tier in ((f"is_{c.key}", 3), (f"in_{c.key}", 2), (f"cites_{c.key}", 1)):
            out[tok] = max(out.get(tok, 0), tier)
        if c.base != c.key:
            out[f"is_{c.base}"] = max(out.get(f"is_{c.base}", 0), 2)
    return list(out.items())


def coverage(texts: Iterable[str]) -> tuple[int, int]:
    """(texts with at least one citation, texts)."""
    n = hit = 0
    for t in texts:
        n += 1
        hit += bool(extract(t))
    return hit, n
