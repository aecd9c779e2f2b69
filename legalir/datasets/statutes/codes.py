"""The publisher's states and how their codes print and cite a section: :data:`STATES` (official citation
forms), section numbers and ranges as printed, the anchors that place a section, and a section's key."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


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

# a printed section number (``8-2-1``, ``42-25.6``, ``47C-1-101``, ``2-8A-1``, ``45-21.9A``, Vermont's ``2144a``,
# Idaho's ``1-2001a``, Alaska's ``09.10.070``, Virginia's ``2.2-507.1:1``)
NUM = r"\d+[A-Za-z]{0,3}(?:[-.:]\d+[A-Za-z]{0,3})*"
LIST_ITEM = re.compile(NUM)
# the section an anchor names: the last "s<digit>..." (``t08c02a01p01s8-2-3``, ``…s8-2-3ol1a`` for an item)
# (an item ``…ol1a``, a note ``…-notetodecisison-II``: lower case after the number)
ANCHOR = re.compile(r"s(?P<sec>\d[0-9A-Z]*(?:[-.][0-9A-Z]+)*)(?=ol|-[a-z]|$)")
PLACE = re.compile(r"[a-z]+[0-9.]*[A-Z]*|[a-z]+[IVXL]+")

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


def anchor_section(anchor: str, fallback: str = "") -> str:
    m = ANCHOR.search(anchor)
    return m.group("sec") if m else fallback


def expand_range(first: str, last: str, limit: int = 500) -> list[str] | None:
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


def alt_id(key: str, number: str) -> str:
    """The id of a section whose number legalir.legal.citations writes as another's (``4-4.1-1`` as ``4-4-1.1``): the
    key with the number's dots written ``d`` (``ri_code_4_4d1_1``)."""
    from legalir.legal import citations

    tail = "_" + citations.section_key(number)
    base = key[: -len(tail)] if key.endswith(tail) else key
    return base + "_" + citations.section_key(number.replace(".", "d"))


def plural_range(first: str) -> tuple[str, str] | None:
    """The two ends of a range printed after ``§§`` with a hyphen between them (Vermont's ``§§ 61-69.
    Repealed.``, ``§§ 114-114a``): a plural mark before one number is a range; split at its middle hyphen
    (``1-101-1-105``: ``1-101`` and ``1-105``), or None where it has no middle."""
    parts = first.split("-")
    if len(parts) < 2 or len(parts) % 2:
        return None
    half = len(parts) // 2
    return "-".join(parts[:half]), "-".join(parts[half:])




def title_of(anchor: str, number: str) -> str:
    """The title (chapter) a section is in, from its anchor (``t08c02a01p01s8-2-1`` -> ``8``, ``t1Ba01s1B-1``
    -> ``1B``), else from its number."""
    place = PLACE.findall(anchor)
    return re.sub(r"^[a-z]+0*", "", place[0]) if place else number.split("-")[0]
