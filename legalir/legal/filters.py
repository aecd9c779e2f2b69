"""Metadata filters: ``state=california,nevada;year=2000..2010`` at query time, over a Lucene index.

``legalir convert`` writes each document's filterable metadata (the dataset's ``filter_fields``,
e.g. Housing's ``state``; otherwise every short scalar field) as tokens in one field, ``filters``;
``legalir index`` indexes it (Anserini ``-fields``), and a search turns a filter into Lucene
``FILTER`` clauses of a ``BooleanQuery`` around the ranked query
(:meth:`legalir.indexing.lucene.LuceneIndex.search_hits`): the filter restricts which documents match
and never changes a score, and the ``k`` best matching documents come back whenever that many
match (no post-filtering).

Types
-----
A filterable field is a ``keyword``, an ``integer``, a ``float`` or a ``date`` (ISO
``YYYY-MM-DD``): declared by the dataset (its ``filter_types``), else inferred at conversion (the
most specific type every value of the field parses as: integer, then float, then date, else
keyword), recorded in the collection's manifest and in the index's ``legalir-index.json``
(``filter_types``). A value is indexed as

* a keyword token ``<field>_<value>`` (:func:`token`: case and punctuation do not matter,
  ``New York`` = ``new_york``), and
* when it is a number or a date, an order-preserving token ``<field>__<digits>`` (:func:`encode`:
  digit strings whose byte order is the numeric order, dates by their day number), which a range
  reads with a Lucene ``TermRangeQuery``.

A field declared ``keyword`` gets the keyword token only, a field declared of another type the
typed token only; an undeclared field gets both (its type is known only once every document is
read). Numbers are compared as exact decimals (``2.50`` = ``2.5``, ``10000`` > ``999``), with up to
:data:`PRECISION` significant digits and a decimal exponent within +-4,999 (a value beyond is no
number: its field is a keyword).

Why tokens and not Lucene point fields (``LongPoint``): every index is built by Anserini's
``IndexCollection`` from the collection's JSON (``legalir index``, the pooled build's
per-partition indexes, ``legalir index update``'s added documents), which indexes a JSON field as
text; an encoded token goes through that one path unchanged, so the three builds stay the same
bytes, where point fields would need a document generator of our own in Java beside Anserini's.

Filter syntax
-------------
``FIELD=VALUE[,VALUE...]``: the values of one clause are OR-ed; clauses (``;`` in one string,
repeated ``--filter``, the keys of a dict) are AND-ed, a field repeated included
(``state=ohio;state=utah`` matches a document holding both values). A value ``LOW..HIGH`` is an
inclusive range, ``LOW..`` and ``..HIGH`` open-ended ones, over an integer, float or date field
(a range whose LOW is above HIGH matches nothing). :func:`clauses` checks a filter against the
index's fields (:func:`schema_of`): an unknown field, a range over a keyword field, a value that is
not of its field's type are a :class:`FilterError` listing the index's filterable fields and
their types. A document without the field never matches a clause on it.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from legalir.errors import LegalirError

#: the collection field holding the filter tokens
FIELD = "filters"
#: the key of the filterable fields' types in a collection's manifest and an index's legalir-index.json
TYPES_KEY = "filter_types"
#: longest metadata value made filterable when a dataset does not name its filter fields
MAX_VALUE = 100
#: metadata never made filterable automatically
SKIP = ("citations", "filters", "parent_id", "title")
#: longest text read as a number or a date (``1e300`` written out in full fits)
MAX_LITERAL = 1000
#: the field types, most specific first (inference picks the first every value parses as)
TYPES = ("integer", "float", "date", "keyword")
#: significant digits a number may have to be indexed as one (64-bit integers and doubles fit)
PRECISION = 24
_EXP = 5000  # decimal exponents -5000..4999, four digits

#: a filter: clauses ``(field, values)``, AND-ed; the values of a clause OR-ed
Filter = list[tuple[str, tuple[str, ...]]]
#: an index's filterable fields and their types: ``{"state": "keyword", "year": "integer"}``
Schema = dict[str, str]

_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_COMPLEMENT = str.maketrans("0123456789", "9876543210")


class FilterError(LegalirError, ValueError):
    pass


# ------------------------------------------------------------------ values and their types
def _text(value: Any) -> str | None:
    """A scalar value as the text its type is read from (``None``: a bool, a non-finite float, a container)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, (int, str)):
        s = str(value).strip()
        return s if len(s) <= MAX_LITERAL else None
    return None


def _parse(kind: str, value: Any) -> Decimal | None:
    """``value`` as a number of type ``kind`` (a date: its day number), or ``None`` when it is not one."""
    s = _text(value)
    if s is None:
        return None
    if kind == "date":
        if not _DATE.fullmatch(s):
            return None
        try:
            return Decimal(date.fromisoformat(s).toordinal())
        except ValueError:
            return None
    if not (_INTEGER if kind == "integer" else _NUMBER).fullmatch(s):
        return None
    try:
        d = Decimal(s)
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        return None
    return d if _encode(d) is not None else None


def _encode(d: Decimal) -> str | None:
    """Digits whose byte order is the numeric order of ``d``: a class digit (0 negative, 1 zero, 2 positive),
    then the decimal exponent of ``0.d1d2... x 10^e`` (four digits) and :data:`PRECISION` mantissa digits,
    both complemented for a negative number. ``None`` when ``d`` has more significant digits or a larger
    exponent than that holds."""
    sign, digits, exp = d.as_tuple()
    if not isinstance(exp, int):  # pragma: no cover - NaN / infinity: the patterns admit neither
        return None
    ds = "".join(map(str, digits)).lstrip("0")
    if not ds:
        return "1"
    stripped = ds.rstrip("0")
    exp += len(ds) - len(stripped)
    if len(stripped) > PRECISION:
        return None
    e = exp + len(stripped)
    if not -_EXP <= e < _EXP:
        return None
    mantissa = stripped.ljust(PRECISION, "0")
    if sign:
        return f"0{_EXP - 1 - e:04d}{mantissa.translate(_COMPLEMENT)}"
    return f"2{e + _EXP:04d}{mantissa}"


def value_types(value: Any) -> set[str]:
    """The types a metadata value parses as (always ``keyword``)."""
    return {kind for kind in ("integer", "float", "date") if _parse(kind, value) is not None} | {"keyword"}


def encode(kind: str, value: Any) -> str | None:
    """The order-preserving digits of ``value`` read as ``kind`` (integer, float, date); ``None`` when it is
    not one."""
    d = _parse(kind, value)
    return None if d is None else _encode(d)


def partition_key(value: Any) -> str:
    """Folder-safe, case-insensitive name of a partition value (``"New York"`` -> ``new_york``): the one
    rule for partition folders, partition routing and filter tokens.

    Raises
    ------
    FilterError
        A value with no letters or digits.
    """
    key = re.sub(r"[^a-z0-9]+", "_", str(value).strip().lower()).strip("_")
    if not key:
        raise FilterError(f"partition value {value!r} has no letters or digits")
    return key




def token(field: str, value: Any) -> str:
    """The indexed keyword token of ``field=value``: ``state_new_york``."""
    return f"{partition_key(field)}_{partition_key(value)}"


def typed_token(field: str, kind: str, value: Any) -> str | None:
    """The indexed token of ``field=value`` as a number or a date (``year__25004202100...``), or ``None``."""
    code = encode(kind, value)
    return None if code is None else f"{partition_key(field)}__{code}"


# ------------------------------------------------------------------ documents
def filterable(fields: Mapping[str, Any], names: Iterable[str] | None) -> list[str]:
    """The metadata fields of a document made filterable: ``names``, or (``None``) every short scalar one."""
    if names is not None:
        return [n for n in names if fields.get(n) not in (None, "")]
    return [k for k, v in fields.items() if k not in SKIP and isinstance(v, (str, int, bool, float))
            and 0 < len(str(v)) <= MAX_VALUE and (not isinstance(v, float) or math.isfinite(v))]


def _values(v: Any) -> list:
    return [x for x in (v if isinstance(v, (list, tuple)) else [v])
            if x not in (None, "") and re.search(r"[A-Za-z0-9]", str(x))]


def document_tokens(fields: Mapping[str, Any], names: Iterable[str] | None,
                    declared: Mapping[str, str] | None = None) -> str:
    """A document's ``filters`` field: its ``names`` metadata (``None``: every short scalar field).

    ``declared``: the dataset's field types (``filter_types``); a declared field gets the tokens of its
    type only, and a value that is not of it is a :class:`FilterError`; any other field gets its keyword
    token and, for a number or a date, its typed token (module doc)."""
    declared = declared or {}
    out = []
    for name in filterable(fields, names):
        kind = declared.get(name)
        for x in _values(fields.get(name)):
            if kind in (None, "keyword"):
                out.append(token(name, x))
            if kind == "keyword":
                continue
            for k in ((kind,) if kind else ("float", "date")):  # an integer's token is its float token
                t = typed_token(name, k, x)
                if t is not None:
                    out.append(t)
                elif kind:
                    raise FilterError(f"{name}={x!r} is not {_a(kind)} (the dataset declares {name!r} "
                                      f"{_a(kind)} field)")
    return " ".join(dict.fromkeys(out))


class TypeInference:
    """The types of a collection's filterable fields, from every value seen (:meth:`add`)."""

    def __init__(self, declared: Mapping[str, str] | None = None):
        self.declared = dict(declared or {})
        check_types(self.declared, "filter_types")
        self._possible: dict[str, set[str]] = {}

    def add(self, fields: Mapping[str, Any], names: Iterable[str]) -> None:
        """The values of the filterable fields ``names`` of one document."""
        for name in names:
            vals = _values(fields.get(name))
            if not vals:
                continue
            possible = self._possible.setdefault(name, set(TYPES))
            for x in vals:
                possible &= value_types(x)

    def types(self) -> Schema:
        """``{field: type}`` in field order: the declared type, else the most specific one every value has."""
        out = {n: self.declared.get(n) or next(t for t in TYPES if t in p) for n, p in self._possible.items()}
        return dict(sorted(out.items()))


def check_types(types: Mapping[str, str], where: str) -> None:
    bad = {k: v for k, v in types.items() if v not in TYPES}
    if bad:
        raise FilterError(f"{where}: unknown field type(s) {bad}; one of: {', '.join(TYPES)}")


def _a(kind: str) -> str:
    return f"an {kind}" if kind == "integer" else f"a {kind}"


# ------------------------------------------------------------------ filters
def _clause_values(name: str, values: Any, where: str) -> tuple[str, tuple[str, ...]]:
    if isinstance(values, (str, int, float)) and not isinstance(values, bool):
        values = [values]
    if not isinstance(values, (list, tuple, set, frozenset)):
        raise FilterError(f"{where}: the values of {name!r} must be a string or a list, not "
                          f"{type(values).__name__}")
    vals = [str(v).strip() for v in (sorted(map(str, values)) if isinstance(values, (set, frozenset)) else values)]
    vals = [v for v in vals if v]
    if not str(name).strip():
        raise FilterError(f"{where}: a clause without a field name; FIELD=VALUE[,VALUE...] "
                          f"(e.g. state=california,nevada)")
    if not vals:
        raise FilterError(f"{where}: no value for {name!r}")
    for v in vals:
        if ".." in v:
            lo, hi = v.split("..", 1)
            if ".." in hi or not (lo.strip() or hi.strip()):
                raise FilterError(f"{where}: {name}={v}: a range is LOW..HIGH, LOW.. or ..HIGH "
                                  f"(e.g. year=2000..2010, date=2020-01-01..)")
    return str(name).strip(), tuple(vals)


def parse(spec: Any, where: str = "filter") -> Filter:
    """A filter from ``"state=california,nevada;year=2000.."``, a list of such strings (the CLI's repeated
    ``--filter``) or of ``(field, values)`` pairs (a parsed filter), or a mapping
    ``{"state": ["california", "nevada"]}``; ``[]`` for none. Syntax only: :func:`clauses` checks the
    fields and values against an index."""
    if spec is None or spec == "" or (isinstance(spec, (Mapping, list, tuple)) and not spec):
        return []
    out: Filter = []
    if isinstance(spec, Mapping):
        for name, values in spec.items():
            out.append(_clause_values(str(name), values, where))
        return out
    parts = [spec] if isinstance(spec, str) else list(spec)
    for part in parts:
        if isinstance(part, (tuple, list)) and len(part) == 2 and isinstance(part[0], str):
            out.append(_clause_values(part[0], part[1], where))
            continue
        if not isinstance(part, str):
            raise FilterError(f"{where}: {part!r} is not FIELD=VALUE[,VALUE...] (e.g. state=california,nevada)")
        for clause in part.split(";"):
            if not clause.strip():
                continue
            name, eq, values = clause.partition("=")
            if not eq or not name.strip() or not values.strip():
                raise FilterError(f"{where}: {clause.strip()!r} is not FIELD=VALUE[,VALUE...] "
                                  f"(e.g. state=california,nevada)")
            out.append(_clause_values(name, values.split(","), where))
    return out


def combine(*filters: Filter | None) -> Filter:
    """The filters AND-ed (their clauses, in order)."""
    return [c for f in filters if f for c in f]


def for_topic(static: Filter, by: Iterable[str], fields: Mapping[str, Any], qid: str) -> Filter:
    """``static`` AND, for each topic field in ``by``, that field's value as a clause on the same-named
    document field (Housing: each question searched only among its own state's statutes)."""
    out = list(static)
    for name in by:
        v = fields.get(name)
        if v in (None, ""):
            raise FilterError(f"topic {qid!r} has no {name!r} to filter by")
        out.append(_clause_values(name, [str(x) for x in v] if isinstance(v, (list, tuple)) else [str(v)],
                                  f"topic {qid!r}"))
    return out


def text(flt: Filter) -> str:
    """A filter written back as ``FIELD=VALUE,...;FIELD=...``."""
    return ";".join(f"{n}={','.join(v)}" for n, v in flt)


def single_value(flt: Filter, field: str) -> str | None:
    """The one value every clause on ``field`` names (no range), else ``None``."""
    vals = {v for n, values in flt if n == field for v in values}
    return next(iter(vals)) if len(vals) == 1 and ".." not in next(iter(vals)) else None


def partition_keys(flt: Filter, field: str) -> list[str] | None:
    """The partition keys a document must have to match every clause on ``field`` (the intersection of the
    clauses' values); ``None`` when no clause names ``field`` or one holds a range or a value without a key."""
    keys: set[str] | None = None
    for name, values in flt:
        if name != field:
            continue
        if any(".." in v for v in values):
            return None
        try:
            these = {partition_key(v) for v in values}
        except FilterError:
            return None
        keys = these if keys is None else keys & these
    return None if keys is None else sorted(keys)


# ------------------------------------------------------------------ an index's fields, and the Lucene clauses
def schema_of(meta: Mapping[str, Any]) -> Schema | None:
    """The filterable fields and types an index records (its ``legalir-index.json``), or ``None`` for an
    index built before they were recorded."""
    types = meta.get(TYPES_KEY)
    return dict(types) if isinstance(types, Mapping) else None


def schema_from_manifest(manifest: Mapping[str, Any]) -> Schema:
    """The filterable fields and types a collection's manifest records (a collection converted before types
    were recorded lists names only: all keywords, as it indexed them)."""
    got = (manifest.get("fields") or {}).get(FIELD) or {}
    if isinstance(got, Mapping):
        return dict(got)
    return {str(n): "keyword" for n in got}


def describe(schema: Mapping[str, str]) -> str:
    """``state (keyword), year (integer)``."""
    return ", ".join(f"{n} ({t})" for n, t in sorted(schema.items())) or "none"


def _field(schema: Mapping[str, str], name: str) -> tuple[str, str] | None:
    try:
        key = partition_key(name)
    except FilterError:
        return None
    for n, t in schema.items():
        if partition_key(n) == key:
            return n, t
    return None


def clauses(flt: Filter, schema: Mapping[str, str] | None, where: str = "filter") -> list[list[tuple[str, ...]]]:
    """Per clause, the OR-ed alternatives of its Lucene ``FILTER``: ``("term", token)`` or
    ``("range", low_token, high_token)`` (inclusive; open ends reach the first and last token of the field).

    Raises
    ------
    FilterError
        ``where`` and the clause: an unknown field, a range over a keyword field, a value that is not of its
        field's type, an index without recorded types; listing the index's filterable fields and types.
    """
    if not flt:
        return []
    if schema is None:
        raise FilterError(f"{where}: the index was built before filter types were recorded; build it again "
                          f"(legalir index) to filter it")
    out = []
    for name, values in flt:
        clause = f"{where} {name}={','.join(values)}"
        found = _field(schema, name)
        if found is None:
            raise FilterError(f"{clause}: unknown field {name!r}; the index's filterable fields: "
                              f"{describe(schema)}")
        field, kind = found
        alts: list[tuple[str, ...]] = []
        for v in values:
            if ".." in v:
                if kind == "keyword":
                    raise FilterError(f"{clause}: {field!r} is a keyword field, a range needs an integer, float or "
                                      f"date field; the index's filterable fields: {describe(schema)}")
                lo, hi = (s.strip() for s in v.split("..", 1))
                for end in (lo, hi):
                    if end and encode(kind, end) is None:
                        raise FilterError(f"{clause}: {end!r} is not {_a(kind)} ({field!r} is {_a(kind)} field"
                                          f"{'; a date is YYYY-MM-DD' if kind == 'date' else ''})")
                base = f"{partition_key(field)}__"
                alts.append(("range", base + (encode(kind, lo) if lo else ""),
                             base + (encode(kind, hi) if hi else "3")))  # codes start with 0, 1 or 2
            elif kind == "keyword":
                if not re.search(r"[A-Za-z0-9]", v):
                    raise FilterError(f"{clause}: {v!r} has no letter or digit, no document holds it")
                alts.append(("term", token(field, v)))
            else:
                t = typed_token(field, kind, v)
                if t is None:
                    raise FilterError(f"{clause}: {v!r} is not {_a(kind)} ({field!r} is {_a(kind)} field"
                                      f"{'; a date is YYYY-MM-DD' if kind == 'date' else ''})")
                alts.append(("term", t))
        out.append(alts)
    return out
