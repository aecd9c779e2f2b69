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
  Code, Stat., Rev. Stat., Gen. Laws, Comp. Laws ..., or any other code named after its
  jurisdiction: ``N.Y. Penal Law § 235-b`` -> ``ny_penal_235_b``), ``§``/``§§``/``sec.``/``section``
  and one or more sections, with ranges (``§§ 1941-1942``), lists (``§§ 1942, 1943``,
  ``§ 1942 and § 1943``); chapter and ``tit.`` forms (``Mass. Gen. Laws ch. 186, § 14``,
  ``Pa. Stat. Ann. tit. 68, § 250.206``); a title before the code (``42 U.S.C. § 1983``,
  ``735 ILCS 5/9-201``, ``68 P.S. § 250.206``); the reversed form ``section 1942 of the Civil
  Code``; bare ``section 1950.5`` inside a document, read as its own code's section, and a bare
  ``§ 1943`` after a citation, read as that citation's code.

The official codes' own forms (docs/statutes.md, "Citation forms of each code"): ``W.S. 16-3-106``,
``A.C.A. § 4-88-101``, ``AS 09.10.070``, ``N.D.C.C. § 1-01-01``, ``T.C.A. § 1-2-101``, ``section 24-4-103,
C.R.S.``, ``G.L. 1956, § 34-1-1``, ``Code of Virginia § 1-200``, ``Section 3-3-7, Mississippi Code of 1972``,
and, in their own code only, ``I.C. § 5-216`` and ``Code 1972, § 9-7-49``. Vermont's section numbers are
unique only within a title (:data:`TITLE_SCOPED`): ``17 V.S.A. § 2531`` -> ``vt_code_17_2531``
(:func:`code_key`); a bare ``§ N`` read in a code (:data:`SECTION_SHAPES`) is a number of that code's shape.

Time is linear in the text's length: no pattern has a quantifier that can give back what it read
(all are possessive or bounded), and lists and ranges are read by :func:`_scan`, token by token
(docs/legal-structure.md, "Linear time"). No set or dict order decides a key.

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
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

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

#: codes whose section numbers are unique only within a title (``17 V.S.A. § 2531``; ``§ 1`` is in many
#: titles): their keys carry the title (``vt_code_17_2531``), a citation without one gives no key
TITLE_SCOPED = frozenset({"vt"})

#: a state's general code, however it is called (one key: ``<jur>_code_<section>``)
#: (``N.D. Cent. Code``: North Dakota's Century Code; ``Mississippi Code of 1972``: a code named with its year)
GENERAL_CODE = (r"(?:(?:Rev(?:ised)?+|Gen(?:eral)?+|Comp(?:iled)?+|Consol(?:idated)?+|Off(?:icial)?+|Cent(?:ury)?+)"
                r"\.?+\s++)?+(?:Code|Stat(?:utes?+)?+|Laws?+|L)\.?+(?:\s++Ann(?:otated)?+\.?+)?+"
                r"(?:\s++of\s++1[0-9]{3}(?![0-9]))?+")

#: subject codes: id -> (regex of the name, jurisdictions that have it). A name is matched after
#: an optional jurisdiction, case-insensitively, with optional dots and spelled-out words. Every
#: quantifier is possessive (``?+``, ``++``): a name is read in one pass, never re-tried.
SUBJECT_CODES: dict[str, tuple[str, tuple[str, ...]]] = {
    "civ_proc": (r"(?:Code\s++(?:of\s++)?+Civ(?:il)?+\.?+\s++Proc(?:edure)?+\.?+"
                 r"|Civ(?:il)?+\.?+\s++Proc(?:edure)?+\.?+\s++Code)", ("ca",)),
    "civ_prac_rem": (r"Civ(?:il)?+\.?+\s++Prac(?:tice)?+\.?+\s++(?:&|and)\s++Rem(?:edies)?+\.?+\s++Code", ("tx",)),
    "civ": (r"(?:Civ(?:il)?+\.?+\s++Code|Code\s++Civ(?:il)?+\.?+)", ("ca", "la", "ga", "mt", "nd", "sd", "ok")),
    "health_safety": (r"Health\s++(?:&|and)\s++Saf(?:ety)?+\.?+\s++Code", ("ca", "tx")),
    "gov": (r"Gov(?:'?+t|ernment)?+\.?+\s++Code", ("ca", "tx")),
    "bus_prof": (r"Bus(?:iness)?+\.?+\s++(?:&|and)\s++Prof(?:essions)?+\.?+\s++Code", ("ca",)),
    "prop": (r"Prop(?:erty)?+\.?+\s++Code", ("tx",)),
    "real_prop_acts": (r"(?:Real\s++Prop(?:erty)?+\.?+\s++Act(?:ion)?+s\.?+(?:\s++(?:&|and)\s++Proc(?:eedings)?+\.?+)?+"
                       r"\s++L(?:aw)?+|RPAPL)\.?+", ("ny",)),
    "real_prop": (r"Real\s++Prop(?:erty)?+\.?+\s++(?:L(?:aw)?+|Code)\.?+", ("ny", "md")),
    "gen_oblig": (r"Gen(?:eral)?+\.?+\s++Oblig(?:ations)?+\.?+\s++L(?:aw)?+\.?+", ("ny",)),
    "mult_dwell": (r"Mult(?:iple)?+\.?+\s++Dwell(?:ing)?+\.?+\s++L(?:aw)?+\.?+", ("ny",)),
}

#: short forms that name a jurisdiction and a code: regex -> (jurisdiction, code id)
SHORT_FORMS: dict[str, tuple[str, str]] = {
    r"CCP": ("ca", "civ_proc"), r"CC": ("ca", "civ"), r"RPAPL": ("ny", "real_prop_acts"),
    r"RPL": ("ny", "real_prop"), r"GOL": ("ny", "gen_oblig"), r"MDL": ("ny", "mult_dwell"),
    r"NRS": ("nv", "code"), r"RCW": ("wa", "code"), r"ORS": ("or", "code"),
    # Rhode Island's General Laws as its history lines cite them: "G.L. 1956, § 34-1-1" (the 1956 reenactment is
    # the present code; "G.L. 1938, ch. 441, § 1" is not). Before Massachusetts' G.L., which needs a chapter
    r"G\.\s?+L\.\s++1956\s*+,": ("ri", "code"),
    r"M\.?+\s?+G\.?+\s?+L\.?+|G\.?+\s?+L\.?+(?=\s*+c)": ("ma", "code"),
    # the official codes' own short forms (docs/statutes.md): Georgia's O.C.G.A., North Carolina's G.S.
    r"O\.?+\s?+C\.?+\s?+G\.?+\s?+A\.?+": ("ga", "code"),
    r"(?:N\.?+\s?+C\.?+\s?+)?+G\.?+\s?+S\.?+": ("nc", "code"),
    # Kentucky's Revised Statutes as its code writes them: "KRS 421.010", "KRS 15A.020(2)"
    r"KRS": ("ky", "code"),
    # each code's own forms (issue 35; docs/statutes.md, "Citation forms"): Wyoming "W.S. 16-3-106" and its
    # 1977 compilation's "W.S. 1977, § 9-2-1708"; Arkansas "A.C.A. § 4-88-101" (A.C.A. § 1-2-113); Alaska
    # "AS 09.10.070"; North Dakota "N.D.C.C. § 1-01-01"; Tennessee "T.C.A. § 1-2-101" (T.C.A. § 1-1-111);
    # Colorado "C.R.S. 24-4-103"; Idaho "I.C. § 5-216", "I.C.A., § 16-924" (in Idaho's code only: Indiana's
    # code is "IC" too). Each reads only sections of its code's shape (SECTION_SHAPES)
    r"W\.?+\s?+S\.?+(?:\s++1977\s*+,)?+|Rev\.\s?+W\.\s?+S\.\s++1957\s*+,": ("wy", "code"),
    r"A\.\s?+C\.\s?+A\.": ("ar", "code"),
    r"AS": ("ak", "code"),
    r"N\.\s?+D\.\s?+C\.\s?+C\.": ("nd", "code"),
    r"T\.\s?+C\.\s?+A\.": ("tn", "code"),
    r"C\.\s?+R\.\s?+S\.": ("co", "code"),
    r"I\.\s?+C\.(?:\s?+A\.)?+": ("id", "code"),
    # Mississippi's "Code 1972, § 9-7-49" (its code is the Mississippi Code of 1972) and Georgia's history lines'
    # "Code 1981, § 1-1-10" (the Official Code of Georgia of 1981), each in its own code only
    r"Code\s++1972\s*+,": ("ms", "code"),
    r"Code\s++1981\s*+,": ("ga", "code"),
}

#: short forms read only in their own code (a text of that jurisdiction, or a question asked of it)
HOME_SHORT_FORMS = frozenset({r"I\.\s?+C\.(?:\s?+A\.)?+", r"Code\s++1972\s*+,", r"Code\s++1981\s*+,"})

_HYPHENATED = re.compile(r"[0-9][0-9A-Za-z.]{0,7}-[0-9A-Za-z]")
#: the shape of a section number of a state's general code, where all have one (``8-2-1``, ``15.1-02-01``,
#: ``8.1A-201``; Alaska ``09.10.070``; Kentucky ``421.010``): a bare ``§ N`` read in that code (a section's own
#: text, a question asked of it) and its short forms read only sections of this shape, so that a session
#: law's "Laws 1989, ch. 262, § 2" or an old compilation's "Code 1932, § 7597" is not read as the code's
#: codes numbered with gaps (Kentucky's 381.290, 381.300; Alaska's 09.10.070, 09.10.080): a range of their
#: sections gives its two ends, not every number between (most would be no section)
RANGE_ENDS_ONLY = frozenset({"ak", "ky"})
SECTION_SHAPES: dict[str, re.Pattern] = {
    **{j: _HYPHENATED for j in ("ar", "co", "ga", "id", "ms", "nc", "nd", "ri", "tn", "va", "wy")},
    "ak": re.compile(r"[0-9]{2}\.[0-9]{2}\.[0-9]{3}"), "ky": re.compile(r"[0-9]{1,3}[A-Z]?\.[0-9]"),
}

#: the words a citation's name can begin with besides a jurisdiction's (lower case; the short forms'
#: are matched case-sensitively): the forward pattern is tried only at these words, so prose costs
#: one set look-up per word. ``tests/test_citations.py`` checks it against every name of the table.
SUBJECT_FIRST_WORDS = frozenset(
    "code civ civil health gov govt government bus business prop property real rpapl gen general "
    "mult multiple".split())
SHORT_FIRST_WORDS = frozenset("CCP CC RPAPL RPL GOL MDL NRS RCW ORS M G GL MG MGL O OCGA N NC NCGS GS KRS "
                              "W WS Rev A AS NDCC T TCA C CRS I IC ICA".split())

# ------------------------------------------------------------------ the grammar
# Linear time (docs/legal-structure.md, "Linear time"): no pattern below has a nested or overlapping
# quantifier. Every quantifier is possessive (it never gives back what it read) or bounded, and
# quantifiers that touch read disjoint characters. Lists and ranges of sections are not patterns:
# :func:`_scan` reads them token by token, each character once.
_MARK = r"(?:§§?+|[Ss][Ss]?+\.|[Ss]ec(?:tion)?+s?+\.?+)"
_PLURAL_MARK = re.compile(r"§§|ss\.|secs|sections", re.IGNORECASE)
#: a run of the characters a section can hold, from its first digit (cut by :func:`_sec_len`)
_RUN = re.compile(r"[0-9][0-9A-Za-z.\-:/()]*+")
#: one list separator (``,``, ``&``, ``and``, ``or``) with the spaces around it
#: (a word then a number without a space between, "and15-1-57": a page the publisher joined at a link)
_SEP1 = re.compile(r"\s*+(?:,|&|and(?![A-Za-z_])|or(?![A-Za-z_]))\s*+", re.IGNORECASE)
#: a range separator
_RANGE1 = re.compile(r"\s*+(?:-|–|—|(?:to|through|thru)(?![A-Za-z_]))\s*+", re.IGNORECASE)
#: what a list may hold after a section before it goes on: "3-4-215 [repealed], 3-4-217", "8-6-201 et seq. and"
_ITEM_NOTE = re.compile(r"\s*+(?:\[[A-Za-z][A-Za-z .]{0,24}+\]|et\s++seq\.?+)")
#: a section mark directly before a section number (a "§" may follow a word: Idaho's pages print "Former§ 1-802")
#: (the lookbehind follows the first character, so that the engine skips to a "§" or an "s" at C speed)
_MARK_AT = re.compile(r"(?P<mark>§(?<![0-9_.].)§?+|[Ss](?<![\w.].)(?:[Ss]?+\.|[Ee][Cc](?:[Tt][Ii][Oo][Nn])?+[Ss]?+\.?+))"
                      r"\s*+(?=[0-9])")
_WORD = re.compile(r"[A-Za-z]++")
_USC_HINT = re.compile(r"[Uu]\.?+\s?+[Ss]\.?+\s?+[Cc]")
_DIGITS = re.compile(r"[0-9]++")


def _jur_alternatives() -> list[tuple[str, str]]:
    """(first word, regex) of every jurisdiction's name, abbreviation and postal code, in the order the
    pattern tries them: names, then abbreviations (longest first), then postal codes (upper case only:
    "in Civil Code section 5" is not Indiana). A postal code's first word keeps its case."""
    names, abbrs = [], []
    for name, bb in JURISDICTIONS.values():
        names.append((name.split()[0].lower(), r"\s++".join(re.escape(w) for w in name.split())))
        for a in bb:
            # an abbreviation begins with its capital ("or Miss. Code" is not Oregon's "Or. ... Code")
            rx = r"\.?+\s?+".join(re.escape(p.rstrip(".")) for p in a.split()) + (r"\.?+" if a.endswith(".") else "")
            abbrs.append((_WORD.match(a).group().lower(), f"(?-i:{rx[0]}){rx[1:]}"))
    def by_len(x):  # stable: ties keep the table's order
        return -len(x[1])

    postals = [(p.upper(), f"(?-i:{p.upper()})") for p in JURISDICTIONS if p != "us"]
    return sorted(names, key=by_len) + sorted(abbrs, key=by_len) + postals


def _jur_pattern(word: str | None = None) -> str:
    """The jurisdiction alternation; with ``word``, only the alternatives that begin with it (the others
    cannot match where it stands)."""
    alts = [rx for first, rx in _jur_alternatives()
            if word is None or first == word or (first.islower() and first == word.lower())]
    return f"(?:{'|'.join(alts)})" if alts else ""


def _jur_first_words() -> tuple[frozenset, frozenset]:
    """(lower-case first words of the jurisdictions' names and abbreviations, upper-case postal codes)."""
    words = set()
    for name, abbrs in JURISDICTIONS.values():
        for v in (name, *abbrs):
            words.add(_WORD.match(v).group().lower())
    return frozenset(words), frozenset(p.upper() for p in JURISDICTIONS)


#: a code named after a jurisdiction but outside the table (``N.Y. Penal Law``, ``CA Penal Code``):
#: one to three capitalised words, then Code/Law/L (bounded: at most three words are re-tried)
_NAMED_WORD = r"(?-i:[A-Z])[A-Za-z']*+\.?+"
_NAMED = (rf"(?P<named>{_NAMED_WORD}(?:\s++{_NAMED_WORD})?(?:\s++{_NAMED_WORD})?)\s++"
          r"(?:Code|Laws?+|L)\.?+(?:\s++Ann(?:otated)?+\.?+)?+")


def _names_pattern() -> str:
    """The jurisdictions' full names (``Virginia``, ``West Virginia``), longest first: ``Code of Virginia``."""
    names = sorted((name for name, _ in JURISDICTIONS.values()), key=lambda n: (-len(n), n))
    return "|".join(r"\s++".join(re.escape(w) for w in n.split()) for n in names)


#: a code named "Code of <State>" (``Code of Virginia § 1-200``, ``§ 1-200 of the Code of Virginia``)
def _code_of(n: str = "") -> str:
    return rf"(?P<codeof{n}>Code\s++of\s++(?:the\s++State\s++of\s++)?+(?P<ofjur{n}>{_names_pattern()}))(?![A-Za-z])"


@lru_cache(maxsize=1)
def _patterns():
    jur = _jur_pattern()
    subject = _SUBJECT_ALT
    forward = _forward_pattern(jur)
    usc = re.compile(rf"(?P<title>[0-9](?<![\w.][0-9])[0-9]*+)\s++U\.?+\s?+S\.?+\s?+C\.?+(?:\s?+A\.?+(?![A-Za-z])|\s?+S\.)?+\s*+(?P<mark>{_MARK})?+"
                     r"\s*+(?=[0-9])", re.IGNORECASE)
    # a title or chapter before the code: Illinois "735 ILCS 5/9-201", "735 Ill. Comp. Stat. 5/9-201"
    # (chapter 735, act 5, section 9-201); Pennsylvania "68 P.S. § 250.206", "68 Pa. Stat. Ann. § 250.206"
    # (its unconsolidated statutes, as "Pa. Stat. Ann. tit. 68, § 250.206") and "42 Pa.C.S. § 5524" (pa_cons)
    ilcs = re.compile(rf"(?P<chap>[0-9](?<![\w.][0-9])[0-9]*+)\s++(?:(?P<il>(?-i:ILCS)|Ill\.?+\s*+Comp\.?+\s*+Stat\.?+)"
                      rf"|(?P<pacons>Pa\.?+\s*+C\.?+\s*+S\.?+|Pa\.?+\s*+Cons\.?+\s*+Stat\.?+)"
                      rf"|(?P<pa>(?-i:P\.\s?+S\.)|Pa\.?+\s*+Stat(?:utes)?+\.?+))"
                      rf"(?:\s*+Ann\.?+)?+\s*+(?P<mark>{_MARK})?+\s*+(?=[0-9])", re.IGNORECASE)
    # backward: what follows a section list: "of the [jurisdiction] code", "of the Code of Virginia", "of Title 2"
    # (Vermont: a title of the code the text is in); after a comma, only a code that names its jurisdiction:
    # "Section 3-3-7, Mississippi Code of 1972", "section 24-4-103, C.R.S." (not "C.R.S. 1963", an old edition)
    of_code = re.compile(
        rf"(?:\s++of\s++(?:the\s++)?+(?:(?P<jur>{jur})\.?+\s++)?(?:{subject}|{_code_of()}|(?P<general>{GENERAL_CODE})"
        rf"|(?P<oftitle>(?-i:T)itle\s++(?P<title>[0-9]{{1,3}}[A-Z]?+)(?![0-9A-Za-z])))"
        rf"|\s*+,\s*+(?:the\s++)?+(?:(?P<cjur>{_names_pattern()})\s++Code\s++of\s++1[0-9]{{3}}(?![0-9])|{_code_of('2')}"
        rf"|(?P<crs>(?-i:C\.\s?+R\.\s?+S\.))(?!\s*+[0-9])))(?![A-Za-z])",
        re.IGNORECASE)
    # Vermont, title first: "17 V.S.A. § 2531", "1 V.S.A. §§ 1-9" (1 V.S.A. § 51: "—— V.S.A. § ——")
    vsa = re.compile(r"(?P<title>[0-9](?<![\w.][0-9])[0-9]?+[A-Z]?+)\s++(?-i:V\.\s?+S\.\s?+A\.)\s*+(?P<mark>§§?+)?+"
                     r"\s*+(?=[0-9])")
    return forward, usc, ilcs, of_code, vsa


_SUBJECT_ALT = "|".join(f"(?P<s_{k}>{v})" for k, (v, _) in SUBJECT_CODES.items())
_SHORT_ALT = "|".join(f"(?P<f{i}>(?-i:{k}))" for i, k in enumerate(SHORT_FORMS))
_CHAPTER = (r"(?:(?P<chapword>ch(?:apter)?+|c|tit(?:le)?+)\.?+\s*+(?P<chap>[0-9]++[A-Za-z]?+)"
            r"(?:\s*+,)?+\s*+)?+")


@lru_cache(maxsize=256)
def _forward_pattern(jur: str) -> re.Pattern:
    """forward: [jurisdiction] code [chapter] [mark], up to the first section's digit. A general code
    and a code outside the table need a jurisdiction: without one, only subject codes and short forms."""
    codes = rf"(?:{_SUBJECT_ALT})(?:\s++Ann(?:otated)?+\.?+)?+|{_SHORT_ALT}|{_code_of()}(?:\s++Ann(?:otated)?+\.?+)?+"
    head = rf"(?<![\w.])(?:(?P<jur>{jur})\.?+(?:\s*+,)?+\s++)?" if jur else r"(?<![\w.])"
    if jur:
        codes += rf"|(?P<general>{GENERAL_CODE})|{_NAMED}"
    return re.compile(rf"{head}(?:{codes})(?:\s*+,)?+\s*+{_CHAPTER}(?P<mark>{_MARK})?+\s*+(?=[0-9])",
                      re.IGNORECASE)


@lru_cache(maxsize=4096)
def _forward_at(word: str) -> re.Pattern:
    """The forward pattern for a place where ``word`` stands: only the jurisdictions it can begin."""
    return _forward_pattern(_jur_pattern(word))


_STARTS: dict[str, bool] = {}


def _can_start(word: str) -> bool:
    """Whether a forward citation can begin with ``word`` (remembered per spelling, up to a bound)."""
    lower, exact = _first_words()
    ok = word in exact or word.lower() in lower
    if len(_STARTS) < 100_000:
        _STARTS[word] = ok
    return ok


@lru_cache(maxsize=1)
def _first_words() -> tuple[frozenset, frozenset]:
    """(lower-case words, case-sensitive words) a forward citation can begin with."""
    jur_lower, postal = _jur_first_words()
    return jur_lower | SUBJECT_FIRST_WORDS, postal | SHORT_FIRST_WORDS


_JUR_BY_TEXT: dict[str, str] = {}


def jurisdiction(value: str | None) -> str | None:
    """A jurisdiction's key (``ca``) from its name, abbreviation or postal code, any case; else ``None``."""
    if not value:
        return None
    if isinstance(value, str) and value in _JUR_SEEN:
        return _JUR_SEEN[value]
    if not _JUR_BY_TEXT:
        for postal, (name, abbrs) in JURISDICTIONS.items():
            for v in (postal, name, *abbrs):
                _JUR_BY_TEXT[_squash(v)] = postal
        _JUR_BY_TEXT["us"] = "us"
    out = _JUR_BY_TEXT.get(_squash(value))
    if isinstance(value, str) and len(_JUR_SEEN) < 10_000:
        _JUR_SEEN[value] = out
    return out


_JUR_SEEN: dict[str, str | None] = {}


_NOT_ALNUM = re.compile(r"[^a-z0-9]++")


def _squash(text: str) -> str:
    return _NOT_ALNUM.sub("", str(text).lower())


def _slug(text: str) -> str:
    return _NOT_ALNUM.sub("_", str(text).lower()).strip("_")


# ------------------------------------------------------------------ sections
def _split_sub(sec: str) -> tuple[str, str]:
    """``238-A(1)(a)`` -> (``238-A``, ``(1)(a)``)."""
    i = sec.find("(")
    return (sec, "") if i < 0 else (sec[:i], sec[i:])


def _sec_len(run: str) -> int:
    """Length of the longest prefix of ``run`` (a :data:`_RUN`) that is a section: digits, an optional
    letter, then parts after ``.``/``-``/``:``/``/``, then up to 4-character subsections in
    parentheses (``9-21-213(d)``, ``118A.290``, ``5/9-201``, ``238-A(1)(a)``). One pass."""
    n, i = len(run), 0
    while i < n and run[i].isdigit():
        i += 1
    if i < n and run[i].isalpha():
        i += 1
    while i + 1 < n and run[i] in ".-:/" and run[i + 1].isalnum():
        i += 2
        while i < n and run[i].isalnum():
            i += 1
    while i < n and run[i] == "(":
        j = i + 1
        while j < n and j - i <= 4 and run[j].isalnum():
            j += 1
        if j > i + 1 and j < n and run[j] == ")":
            i = j + 1
        else:
            break
    return i


def _parts(sec: str) -> list[str]:
    return re.split(r"([.\-:/])", sec)


def _expand(first: str, last: str, limit: int = 50) -> list[str]:
    """Sections of a range. Endpoints of one shape that differ in their last number by at most
    ``limit`` give every section between (``1941``-``1943``: all three; ``92.103``-``92.105`` and
    ``92.103``-``105`` likewise); an integer section to a decimal one within ``limit`` gives the
    integer sections between and the last one (``1940``-``1954.05``: 1940, 1941, ..., 1954, 1954.05);
    anything else its two endpoints. A range never becomes one key of its own."""
    a, b = _split_sub(first)[0], _split_sub(last)[0]
    pa, pb = _parts(a), _parts(b)
    if len(pb) == 1 and len(pa) > 1 and pb[0].isdigit():  # "92.103-105": the last part only
        pb = pa[:-1] + pb
        last = "".join(pb)
    if len(pa) == len(pb) and pa[:-1] == pb[:-1] and pa[-1].isdigit() and pb[-1].isdigit():
        lo, hi = int(pa[-1]), int(pb[-1])
        if 0 < hi - lo <= limit:
            width = len(pa[-1]) if pa[-1].startswith("0") else 0
            return ["".join(pa[:-1]) + str(n).zfill(width) for n in range(lo, hi + 1)]
    if _mixed_range(a, b, limit):
        lo, hi = int(a), int(pb[0])
        return [str(n) for n in range(lo, hi + 1)] + [last]
    return [first, last]


def _mixed_range(a: str, b: str, limit: int = 50) -> bool:
    """``1940``-``1954.05``: an integer to a decimal section whose integer part has as many digits and
    is at most ``limit`` above."""
    pb = _parts(b)
    return (a.isdigit() and len(pb) == 3 and pb[1] == "." and pb[0].isdigit() and len(pb[0]) == len(a)
            and 0 <= int(pb[0]) - int(a) <= limit)


def _is_range(first: str, last: str) -> bool:
    """Whether ``first-last`` reads as a range (``1941-1942``, ``92.103-92.105``, ``1940-1954.05``),
    not one hyphenated section (``5-1401``, ``7-108``, ``9-21-213``)."""
    a, b = _split_sub(first)[0], _split_sub(last)[0]
    pa, pb = _parts(a), _parts(b)
    return ((len(pa) == len(pb) and pa[:-1] == pb[:-1] and pa[-1].isdigit() and pb[-1].isdigit()
             and len(pa[-1]) == len(pb[-1]) and 0 < int(pb[-1]) - int(pa[-1]) <= 50)
            or _mixed_range(a, b))


def _same_stem(first: str, last: str) -> bool:
    """Whether two sections differ only in their last number (``35-11-101`` and ``35-11-1904``): then
    ``§ 35-11-101 through 35-11-1904`` is a range after one mark too."""
    pa, pb = _parts(_split_sub(first)[0]), _parts(_split_sub(last)[0])
    return len(pa) == len(pb) >= 3 and pa[:-1] == pb[:-1] and pa[-1].isdigit() and pb[-1].isdigit()


def _hyphen_range(sec: str) -> tuple[str, str] | None:
    """``1941-1943`` -> (``1941``, ``1943``) when the hyphen joins a range's ends (last hyphen first)."""
    base = _split_sub(sec)[0]
    i = base.rfind("-")
    while i > 0:
        if _is_range(base[:i], sec[i + 1:]):
            return base[:i], sec[i + 1:]
        i = base.rfind("-", 0, i)
    return None


def section_key(sec: str) -> str:
    return _slug(sec.replace("(", "_").replace(")", ""))


@dataclass(frozen=True)
class _Item:
    """One section (or range) a list names: ``first`` (and ``last`` of a range), its span, whether its
    mark was plural (``§§``, ``sections``: a hyphen may join a range's ends)."""

    first: str
    last: str | None
    start: int
    end: int
    plural: bool


def _scan(text: str, pos: int, plural: bool, memo: dict | None = None) -> tuple[list[_Item], int]:
    """The sections named from ``pos`` (a section's first digit) on, and where they end.

    A plural mark takes a list (``§§ 1942, 1943 and 1945``) and ranges (``1941 to 1943``); any mark
    takes an en-dash range (``§ 1941–1943``) and a next mark after a separator (``§ 1942 and
    § 1943``, with that mark's number). Each character is read once: no pattern spans two tokens."""
    if memo is not None:
        key = (pos, plural)
        if key not in memo:
            memo[key] = _scan(text, pos, plural)
        return memo[key]
    items: list[_Item] = []
    end, n = pos, len(text)
    while True:
        m = _RUN.match(text, pos)
        if not m:
            break
        k = _sec_len(m.group())
        a, pos = pos, pos + k
        first, last = text[a:pos], None
        r = _RANGE1.match(text, pos)
        if r:
            dash = r.group().strip()
            m2 = _RUN.match(text, r.end())
            if m2 and (dash in ("–", "—") or (plural and dash != "-")
                       or (plural and _is_range(first, m2.group()[:_sec_len(m2.group())]))
                       or _same_stem(first, m2.group()[:_sec_len(m2.group())])):
                last = m2.group()[:_sec_len(m2.group())]
                pos = r.end() + len(last)
        items.append(_Item(first, last, a, pos, plural))
        note = _ITEM_NOTE.match(text, pos)
        if note:
            pos = note.end()
        end = pos
        k = pos
        while k < n and text[k] == " ":
            k += 1
        if k >= n or (text[k] not in _GOES_ON and not text[k].isspace()):
            break  # nothing that continues a list or a range follows (most citations: one section)
        s = pos
        while True:
            q = _SEP1.match(text, s)
            if not q or q.end() == s:
                break
            s = q.end()
        if s == pos:
            break
        mk = _MARK_AT.match(text, s)
        if mk:
            plural, pos = _is_plural(mk.group("mark")), mk.end()
            continue
        if plural and s < len(text) and text[s].isdigit():
            pos = s
            continue
        break
    return items, end


#: the characters a separator, a range or a next mark can begin with (after spaces)
_GOES_ON = frozenset(",&;-–—aAoOtT§sS")


def _is_plural(mark: str | None) -> bool:
    return bool(mark) and bool(_PLURAL_MARK.fullmatch(mark) or _PLURAL_MARK.fullmatch(mark.rstrip(".")))


def _item_sections(item: _Item) -> list[str]:
    if item.last is not None:
        return _expand(item.first, item.last)
    if item.plural:
        split = _hyphen_range(item.first)
        if split:
            return _expand(*split)
    return [item.first]


# ------------------------------------------------------------------ extraction
@dataclass(frozen=True)
class Citation:
    """One normalised citation: ``key`` (``ca_civ_1942``), ``base`` (the section without its
    subsections: ``ny_real_prop_238_a`` for ``238-A(1)(a)``; equal to ``key`` otherwise), where it
    was found (``start``, ``end``), by which extractor, and its code's ``prefix`` (``ca_civ``; for
    reading a bare ``§ 1943`` that follows it)."""

    key: str
    base: str
    start: int
    end: int
    source: str = "rules"
    prefix: str = ""


_SHORT = [(f"f{i}", j, code) for i, (j, code) in enumerate(SHORT_FORMS.values())]
_HOME_SHORT = frozenset(f"f{i}" for i, form in enumerate(SHORT_FORMS) if form in HOME_SHORT_FORMS)
_SUBJECT = [(f"s_{code}", code, jurs) for code, (_, jurs) in SUBJECT_CODES.items()]


def _groups(m: re.Match) -> dict[str, str]:
    """The named groups a match filled (one ``groupdict`` per match: most are empty)."""
    return {k: v for k, v in m.groupdict().items() if v}


def _code_of_groups(gd: dict[str, str], jur: str | None) -> tuple[str | None, str | None]:
    """(jurisdiction, code id) of a forward/backward match's filled groups."""
    given = jurisdiction(gd["jur"]) if "jur" in gd else None
    for name in ("ofjur", "ofjur2", "cjur"):
        if name in gd:
            return jurisdiction(gd[name]), "code"
    if "crs" in gd:
        return "co", "code"
    for name, j, code in _SHORT:
        if name in gd:
            return j, code
    for name, code, jurs in _SUBJECT:
        if name in gd:
            return given or (jur if jur in jurs else None) or (jurs[0] if len(jurs) == 1 else None), code
    if "general" in gd:
        return given, "code"  # a general code needs its jurisdiction named
    if "named" in gd:
        return given, _slug(gd["named"])  # a code outside the table: its own words, with its jurisdiction
    return None, None


def _emit(prefix: str, chap: str | None, items: list[_Item], start: int, source: str, covered: bytearray,
          found: list[Citation], shape: re.Pattern | None = None) -> int:
    """Keys of ``items`` not inside text already read (``covered``), of the sections of ``shape`` (a
    :data:`SECTION_SHAPES` pattern) if given; marks their span read; returns how many were added."""
    added = 0
    head = f"{prefix}_{chap}" if chap else prefix
    if shape is not None and items and not shape.match(items[0].first):
        return 0  # "W.S. 1957, § 1-139": not a section of the code (its first number is not of the code's shape)
    ends_only = _jurisdiction_of(prefix) in RANGE_ENDS_ONLY and prefix.endswith("_code")
    for it in items:
        if covered.find(1, it.start, it.end) >= 0:
            continue
        for sec in (_item_sections(it) if not (ends_only and it.last) else [it.first, it.last]):
            if shape is not None and not shape.match(sec):
                continue
            key = f"{head}_{section_key(sec)}"
            base = key if "(" not in sec else f"{head}_{section_key(_split_sub(sec)[0])}"
            found.append(Citation(key, base, start if not added else it.start, it.end, source, prefix))
            added += 1
    if added:
        stop = max(it.end for it in items)
        covered[start:stop] = b"\x01" * (stop - start)
    return added


#: characters read before and after a number (the longest code name precedes it:
#: "District of Columbia Real Property Actions and Proceedings Law section"; "of the ... Code" follows)
_BEFORE, _AFTER = 160, 90
_SPACE = re.compile(r"\s")
_CLUSTER = re.compile(rf"[0-9](?:[^0-9]{{0,{_BEFORE + _AFTER - 1}}}+[0-9])*+")


def _windows(text: str) -> list[tuple[int, int, int]]:
    """Spans of ``text`` around its numbers, starting at a word boundary, with the start of their last
    number: every citation has a number, so the patterns read only these (a statute's long prose
    without numbers costs nothing), and a name that precedes a section starts before that number.

    Numbers less than ``_BEFORE + _AFTER`` characters apart share one window (one :data:`_CLUSTER`
    match: a digit, then groups of at most that many non-digits and a digit, each group possessive)."""
    spans = []
    n = len(text)
    for m in _CLUSTER.finditer(text):
        a, b = max(0, m.start() - _BEFORE), min(n, m.end() + _AFTER)
        last = m.end() - 1
        while last > m.start() and text[last - 1].isdigit():
            last -= 1
        if a > 0:
            ws = _SPACE.search(text, a, b)
            a = ws.end() if ws else a
        spans.append((a, b, last))
    return spans


_DOTTED = re.compile(r"\w[.\-:/]\w")
_NOT_NAME = re.compile(r"[^A-Za-z\s.,'&§]")
def _chapter_before(pre: str) -> bool:
    """Whether ``pre`` ends as a chapter or title word does before its number (``ch. ``, ``c``,
    ``tit.``, ``Chapter ``): then the pattern reads that number too (more often than needed is safe)."""
    pre = pre.rstrip()
    pre = pre.removesuffix(".")
    return pre[-1:] in ("c", "C") or pre.lower().endswith(("ch", "chapter", "tit", "title"))
_HEADS: dict = {}
_HEADS_MAX = 100_000
#: after a 4-digit number: a comma, or a section mark (the number is a year a code's name holds)
_YEAR_GOES_ON = re.compile(r"\s*+(?:,|§|[Ss]ec)")
#: what precedes a bare mark that cites another compilation or an act, not the code the text is read in:
#: "Code 1932, § 7597", "Laws 1989, ch. 262, § 2", "1951, No. 2, §§ 1, 22", "Shan., § 3672", "T.C.A. (orig. ed.),
#: § 64-101", "Art. I, § 6", "P.L. § 80", "G.L. §§ 69, 70" ("Id. § 5" is the code just cited). Read on at most
#: 40 characters before the mark, anchored at its end
_OTHER_BEFORE = re.compile(r"(?:(?<![A-Za-z])(?!Id\.)[A-Za-z][A-Za-z&.]{0,9}\.|\)|(?<![A-Za-z])[IVXLC]{1,6}"
                           r"|(?<![A-Za-z])(?:No|no|ch|Ch|chs|c|p|P|pp|art|Art|sec|Sec)\.\s*+[0-9]{1,5}[A-Za-z]?+"
                           r"|(?<![0-9])(?<!of )(?:1[6-9]|20)[0-9]{2})\s*+,\s*+$|(?<![\w.])(?:[A-Z]\.\s?+){2,4}$")


def _head(text: str, at: int, word: str, jur: str | None):
    """The forward citation name starting at ``at`` (the word ``word``): (its length up to the first
    section's digit, key prefix, chapter, mark, whether it is the loose form "<State> Law 2019"), or
    ``None``.

    Remembered by what the pattern can read: the character before, the text up to and including the
    first digit (a chapter's number is read only right after ``ch``/``c``/``tit``: then up to the
    next number's first digit), and the jurisdiction given. The same answer as matching anew: a
    statute collection repeats a handful of names (``Alabama Code § ``) a million times."""
    d1 = _DIGITS.search(text, at, at + _BEFORE)
    if d1 is None or _NOT_NAME.search(text, at, d1.start()):
        return None  # a name holds only letters, spaces, . , ' & and §  before its first number
    stop = d1.start() + 1
    if _chapter_before(text[at:d1.start()]) or (d1.end() - d1.start() == 4 and _YEAR_GOES_ON.match(text, d1.end())):
        # a chapter's number, or a year that a name holds ("W.S. 1977, § 9-2-1708", "Mississippi Code of 1972 §")
        d2 = _DIGITS.search(text, d1.end(), d1.end() + _BEFORE)
        stop = d2.start() + 1 if d2 else d1.end()
    key = (text[at - 1] if at else "", text[at:stop], jur)
    try:
        return _HEADS[key]
    except KeyError:
        pass
    m = _forward_at(word).match(text, at, stop)
    out = None
    if m:
        gd = _groups(m)
        j, code = _code_of_groups(gd, jur)
        short = next((name for name, _, _ in _SHORT if name in gd), None)
        if j is None or code is None or (code == "code" and not ("jur" in gd or short or "codeof" in gd)):
            out = None
        elif "named" in gd and ("jur" not in gd or "mark" not in gd):
            out = None  # a code outside the table needs its jurisdiction and a section mark
        else:
            loose = "mark" not in gd and code == "code" and "jur" in gd and "chap" not in gd
            needs = j if short in _HOME_SHORT else None
            shape = SECTION_SHAPES.get(j) if short and code == "code" else None
            out = (m.end() - at, f"{j}_{code}", gd.get("chap"), gd.get("mark"), loose, needs, shape)
    if len(_HEADS) >= _HEADS_MAX:
        _HEADS.clear()
    _HEADS[key] = out
    return out


def _rules(text: str, jur: str | None, context: str | None,
           own_len: int = 0) -> tuple[list[Citation], bytearray, list]:
    """The rule table's citations in ``text``, the mask of characters they cover, and the windows read.
    With ``own_len``, a bare section's code is that of the first citation in ``text[:own_len]``."""
    found: list[Citation] = []
    covered = bytearray(len(text))
    windows = _windows(text)
    marks: list = []
    memo: dict = {}  # (position, plural) -> the sections read there: a list is read once
    home = jur or _jurisdiction_of(context)
    for a, b, last in windows:
        marks += _rules_in(text, a, b, last, jur, covered, found, memo, home)
    if own_len and not context:
        for c in found:
            if c.end <= own_len and c.prefix:
                context = c.prefix
                break
    if marks:
        _bare(text, marks, context, covered, found, memo)
    return found, covered, windows


def _jurisdiction_of(prefix: str | None) -> str | None:
    """The jurisdiction of a key prefix (``ga_code`` -> ``ga``)."""
    head = prefix.partition("_")[0] if prefix else None
    return head if head in JURISDICTIONS else None


def _rules_in(text: str, lo: int, hi: int, last: int, jur: str | None, covered: bytearray,
              found: list[Citation], memo: dict, home: str | None = None) -> list:
    """Citations of ``text[lo:hi]``: U.S.C. and ILCS first, then ``section N of the X Code``, then
    ``[jurisdiction] code [§] N``; returns the window's section marks (read by :func:`_bare` once every
    window is read). Each pattern is tried at a bounded set of places (a number, a mark, a name's first
    word) and reads a bounded stretch, lists excepted, which :func:`_scan` reads once."""
    _, usc, ilcs, of_code, vsa = _patterns()
    window = text[lo:hi]
    if _USC_HINT.search(window):
        for m in usc.finditer(text, lo, hi):
            if covered.find(1, m.start(), m.end()) < 0:
                items, _ = _scan(text, m.end(), _is_plural(m.group("mark")), memo)
                _emit(f"us_usc_{m.group('title')}", None, items, m.start(), "rules", covered, found)
    if "ILCS" in window or "Comp" in window or "Pa" in window or "P." in window:
        for m in ilcs.finditer(text, lo, hi):
            if covered.find(1, m.start(), m.end()) < 0:
                items, _ = _scan(text, m.end(), _is_plural(m.group("mark")), memo)
                code = "il_code" if m.group("il") else "pa_cons" if m.group("pacons") else "pa_code"
                _emit(f"{code}_{m.group('chap')}", None, items, m.start(), "rules", covered, found)
    if "V.S.A" in window or "V. S. A" in window:
        for m in vsa.finditer(text, lo, hi):
            if covered.find(1, m.start(), m.end()) < 0:
                items, _ = _scan(text, m.end(), _is_plural(m.group("mark")), memo)
                _emit(f"vt_code_{_slug(m.group('title'))}", None, items, m.start(), "rules", covered, found)
    marks = [m for m in _MARK_AT.finditer(text, lo, hi)]
    if " of " in window or " OF " in window or " Of " in window or "," in window:
        scanned = -1
        for m in marks:
            if m.start() < scanned or covered.find(1, m.start(), m.end()) >= 0:
                continue  # inside a list read from an earlier mark: same end, same answer
            items, end = _scan(text, m.end(), _is_plural(m.group("mark")), memo)
            scanned = end
            t = of_code.match(text, end) if items else None
            if t:
                gd = _groups(t)
                shape = None
                if "oftitle" in gd:  # "section 406 of Title 2": a title of the code the text is read in
                    prefix = f"{home}_code_{_slug(gd['title'])}" if home in TITLE_SCOPED else None
                else:
                    j, code = _code_of_groups(gd, jur)
                    prefix = f"{j}_{code}" if j and code and not (j in TITLE_SCOPED and code == "code") else None
                    shape = SECTION_SHAPES.get(j) if "crs" in gd else None
                if prefix and _emit(prefix, None, items, m.start(), "rules", covered, found, shape):
                    covered[end:t.end()] = b"\x01" * (t.end() - end)
    starts = _STARTS
    for w in _WORD.finditer(text, lo, last):
        word = w.group()
        ok = starts.get(word)
        if ok is None:
            ok = _can_start(word)
        if ok and not covered[w.start()]:
            head = _head(text, w.start(), word, jur)
            if head is None:
                continue
            length, prefix, chap, mark, loose, needs, shape = head
            if needs and needs != home:
                continue  # a short form read only in its own code ("I.C. § 5-216": Idaho's, or Indiana's)
            if covered.find(1, w.start(), w.start() + length) >= 0:
                continue
            j = prefix.partition("_")[0]
            if j in TITLE_SCOPED and prefix == f"{j}_code":
                if not chap:
                    continue  # "Vt. Stat. Ann. § 1": no title, no section
                prefix, chap = f"{prefix}_{_slug(chap)}", None
            items, _ = _scan(text, w.start() + length, _is_plural(mark) or (shape is not None and not mark), memo)
            if shape is not None and not mark:
                # a short form without a mark takes a list and a range ("W.S. 2-3-903, 2-3-904 or 2-3-905",
                # "W.S. 1-39-101 through 1-39-120"), never a hyphen as a range's ("G.S. 1-5" is one section)
                items = [_Item(it.first, it.last, it.start, it.end, False) for it in items]
            if loose and items and not _DOTTED.search(items[0].first):
                continue  # "Alaska Law 2019": a general code, no section mark, a plain number: too loose
            _emit(prefix, chap, items, w.start(), "rules", covered, found, shape)
    return marks


def _bare(text: str, marks: list, context: str | None, covered: bytearray, found: list[Citation],
          memo: dict) -> None:
    """Bare marks (``section 1950.5``, ``§§ 1942-1943``): of a statute's own code (``context``), else a
    ``§`` of the code of the last citation before it."""
    prior = sorted(found, key=lambda c: c.start)
    scanned, k, last = -1, 0, None
    for m in marks:
        while k < len(prior) and prior[k].start < m.start():
            last = prior[k].prefix or last
            k += 1
        if m.start() < scanned or covered.find(1, m.start(), m.end()) >= 0:
            continue
        prefix = context or (last if m.group("mark").startswith("§") else None)
        if not prefix:
            continue
        items, end = _scan(text, m.end(), _is_plural(m.group("mark")), memo)
        scanned = end
        if _OTHER_BEFORE.search(text, max(0, m.start() - 40), m.start()):
            continue  # "Code 1932, § 7597", "Laws 1989, ch. 262, § 2": another compilation's, an act's
        j = _jurisdiction_of(prefix)
        shape = SECTION_SHAPES.get(j) if prefix == f"{j}_code" else None
        _emit(prefix, None, items, m.start(), "context" if context else "short", covered, found, shape)


def _eyecite_worth(text: str, covered: bytearray, windows: list) -> bool:
    """Whether eyecite can find anything the rules left: a ``§`` they did not read, or a case's shape
    (a number, spaces, a capital letter, and a number within 40 characters) outside what they read.
    Linear: one pass over the section signs and one over the numbers' starts."""
    i = text.find("§")
    while i >= 0:
        if not covered[i]:
            return True
        i = text.find("§", i + 1)
    for a, b, _ in windows:
        for m in _CASE_START.finditer(text, a, b):
            if not covered[m.start()] and (m.start() == 0 or text[m.start() - 1] not in _WORDISH) \
                    and _DIGITS.search(text, m.end(), m.end() + 40):
                return True
    return False


_CASE_START = re.compile(r"[0-9]++\s++[A-Z]")
_WORDISH = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.")


def _blank(text: str, covered: bytearray) -> str:
    """``text`` with the characters ``covered`` marks replaced by spaces (offsets kept)."""
    parts, i, n = [], 0, len(text)
    while i < n:
        s = covered.find(1, i)
        if s < 0:
            parts.append(text[i:])
            break
        e = covered.find(0, s)
        e = n if e < 0 else e
        parts += [text[i:s], " " * (e - s)]
        i = e
    return "".join(parts)


def _eyecite(text: str, jur: str | None, covered: bytearray, windows: list) -> list[Citation]:
    if covered.find(0) < 0:
        return []
    # what the rule table read is not read again (nor makes eyecite run)
    if not _eyecite_worth(text, covered, windows):
        return []
    rest = _blank(text, covered)
    from eyecite import get_citations
    from eyecite.models import FullCaseCitation, FullLawCitation

    from legalir.base import log

    with log.muted("eyecite", _log):  # its own bookkeeping ("Unknown overlap case. Last cite: ..."): -v only
        found = get_citations(rest)
    out = []
    for c in found:
        span = c.span()
        if covered.find(1, span[0], span[1]) >= 0:
            continue  # the rule table read it whole
        g = c.groups
        if isinstance(c, FullCaseCitation) and g.get("volume") and g.get("page"):
            reporter = c.corrected_reporter() or g.get("reporter", "")
            key = f"case_{_slug(g['volume'])}_{_slug(reporter)}_{_slug(g['page'])}"
            out.append(Citation(key, key, *span, "eyecite"))
        elif isinstance(c, FullLawCitation) and g.get("section"):
            # eyecite's groups for one text differ between processes (which of its patterns matched
            # first): the key is read from the matched text itself, the part before the section
            raw = rest[span[0]:span[1]]
            at = _MARK_AT.search(raw)
            cut = at.start() if at else raw.rfind(g["section"])
            m = _RUN.match(raw, at.end()) if at else _RUN.match(raw, cut)
            if cut <= 0 or not m:
                continue
            sec = m.group()[:_sec_len(m.group())]
            prefix = f"law_{_slug(raw[:cut])}"
            out.append(Citation(f"{prefix}_{section_key(sec)}", f"{prefix}_{section_key(_split_sub(sec)[0])}",
                                *span, "eyecite", prefix))
    return out


def extract(text: str, *, jurisdiction_hint: str | None = None, context: str | None = None,
            use_eyecite: bool = True, unique: bool = True) -> list[Citation]:
    """The citations in ``text``, in order of appearance, each once.

    Time is linear in ``len(text)`` (docs/legal-structure.md, "Linear time").

    Parameters
    ----------
    text : str
        A document or a query.
    jurisdiction_hint : str, optional
        The jurisdiction a subject code without one belongs to (a Housing question's ``state``:
        ``California``, ``CA``, ``california`` alike).
    context : str, optional
        A code prefix (``ca_civ``) that a bare ``section 1950.5`` belongs to (a statute's own code).
        Without it, a bare ``§ 1943`` belongs to the code of the citation before it, if any.
    use_eyecite : bool
        Also run eyecite (case citations, statute reporters outside the rule table).
    unique : bool
        Each key once, where it is first cited (default); ``False``: every place it is cited.

    Returns
    -------
    list of Citation
    """
    if not text:
        return []
    return _extract(text, jurisdiction(jurisdiction_hint) if jurisdiction_hint else None, context, use_eyecite,
                    unique=unique)


def _extract(text: str, jur: str | None, context: str | None, use_eyecite: bool, own_len: int = 0,
             unique: bool = True) -> list[Citation]:
    found, covered, windows = _rules(text, jur, context, own_len)
    if use_eyecite:
        found += _eyecite(text, jur, covered, windows)
    if not unique:
        return sorted(found, key=lambda c: (c.start, c.end))
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
    if parts[0] in TITLE_SCOPED and len(parts) > 3 and parts[1] == "code":
        return "_".join(parts[:3])  # vt_code_17_2531 -> vt_code_17
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
    jur = jurisdiction(jurisdiction_hint) if jurisdiction_hint else None
    if own and text.startswith(own) and (len(text) == len(own) or not text[len(own)].isalnum()):
        # the text opens with the document's own citation (Housing): one reading of both, its citations
        # inside that opening are the document's own (tests/test_citations.py checks it equals two readings)
        everything = _extract(text, jur, None, True, len(own))
        mine_found = [c for c in everything if c.end <= len(own)]
        cited = [c for c in everything if c.end > len(own)]
    else:
        mine_found = _extract(own, jur, None, True) if own else []
        cited = None
    for c in mine_found:
        roles.append(f"is_{c.key}")
        mine.add(c.key)
        if c.base != c.key:
            roles.append(f"in_{c.base}")
            mine.add(c.base)
        context = context or c.prefix or code_prefix(c.key)
    if cited is None:
        cited = _extract(text, jur, context, True) if text else []
    for c in cited:
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


def general_code(jurisdiction_hint: str | None) -> str | None:
    """The key prefix of a jurisdiction's general code (``ga_code``), the context a bare ``§ N`` is read
    in; ``None`` without a known jurisdiction, and for a code whose section numbers are unique only within
    a title (:data:`TITLE_SCOPED`: Vermont's ``§ 1`` is in many titles; :func:`code_context` with the title)."""
    jur = jurisdiction(jurisdiction_hint)
    return f"{jur}_code" if jur and jur != "us" and jur not in TITLE_SCOPED else None


def code_context(jurisdiction_hint: str, title: str | None = None) -> str | None:
    """The key prefix of a section of a jurisdiction's general code: ``ga_code`` (``title`` is not part of
    Georgia's keys), ``vt_code_17`` (title 17 of a :data:`TITLE_SCOPED` code); the ``context`` that a bare
    ``§ N`` in that section's text is read in. ``None`` for an unknown jurisdiction, or a title-scoped code
    without its title.

    Examples
    --------
    >>> code_context("vt", "17"), code_context("Georgia", "8")
    ('vt_code_17', 'ga_code')
    """
    jur = jurisdiction(jurisdiction_hint)
    if not jur or jur == "us":
        return None
    if jur in TITLE_SCOPED:
        return f"{jur}_code_{_slug(title)}" if title and _slug(title) else None
    return f"{jur}_code"


def code_key(jurisdiction_hint: str, section: str, title: str | None = None) -> str:
    """The key of ``section`` of a jurisdiction's general code: what :func:`extract` gives its citations.

    ``code_key("ga", "8-2-1")`` -> ``ga_code_8_2_1`` (``O.C.G.A. § 8-2-1``); ``code_key("vt", "2531", "17")``
    -> ``vt_code_17_2531`` (``17 V.S.A. § 2531``, ``Vt. Stat. Ann. tit. 17, § 2531``): a
    :data:`TITLE_SCOPED` code's keys carry the title, which is then required.

    Raises
    ------
    ValueError
        For an unknown jurisdiction, or a title-scoped code's section without its title.
    """
    prefix = code_context(jurisdiction_hint, title)
    if prefix is None:
        raise ValueError(f"code_key({jurisdiction_hint!r}, {section!r}, title={title!r}): "
                         + ("an unknown jurisdiction" if not jurisdiction(jurisdiction_hint) or
                            jurisdiction(jurisdiction_hint) == "us" else
                            "its section numbers are unique only within a title: give the title"))
    return f"{prefix}_{section_key(section)}"


def query_clauses(text: str, *, jurisdiction_hint: str | None = None) -> list[tuple[str, int]]:
    """``(citations-field token, tier)`` for a query: the authority itself (tier 3), a section it is part
    of or that contains it (tier 2), documents citing it (tier 1). Empty when the query cites nothing.

    With a ``jurisdiction_hint``, a bare ``§ 8-2-3`` is read in that jurisdiction's general code (a question
    about Georgia's code cites it as its own text does), as a document of that code reads it."""
    out: dict[str, int] = {}
    for c in extract(text, jurisdiction_hint=jurisdiction_hint, context=general_code(jurisdiction_hint)):
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
