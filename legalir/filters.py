"""Metadata filters: ``state=california,nevada`` at query time, over one pooled Lucene index.

``legalir convert`` writes each document's filterable metadata (a partitioned collection's
partition field, e.g. Housing's ``state``; otherwise every short scalar field) as keyword
tokens in one field, ``filters``: ``state_california``, ``year_2021``. ``legalir index`` indexes
it (Anserini ``-fields``), and a search turns a filter into Lucene ``FILTER`` clauses of a
``BooleanQuery`` around the ranked query (:meth:`legalir.indexing.lucene.LuceneIndex.search_hits`):
the filter restricts which documents match and never changes a score, and the ``k`` best
matching documents come back whenever that many match (no post-filtering).

A filter is ``{field: [values]}``: values of one field are OR-ed, fields are AND-ed. A value
``LOW..HIGH`` of digits is a range (inclusive; equal-length numbers compare as numbers, e.g.
years or ``YYYYMMDD`` dates). Values match as :func:`partition_key` writes
them: case and punctuation do not matter (``New York`` = ``new_york``).
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from legalir.errors import LegalirError

#: the collection field holding the filter tokens
FIELD = "filters"
#: longest metadata value made filterable when a dataset does not name its filter fields
MAX_VALUE = 100
#: metadata never made filterable automatically
SKIP = ("citations", "filters", "parent_id", "title")

Filter = dict[str, list[str]]


class FilterError(LegalirError, ValueError):
    pass


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


_key = partition_key


def token(field: str, value: Any) -> str:
    """The indexed token of ``field=value``: ``state_new_york``."""
    return f"{_key(field)}_{_key(value)}"


def filterable(fields: Mapping[str, Any], names: Iterable[str] | None) -> list[str]:
    """The metadata fields of a document made filterable: ``names``, or (``None``) every short scalar one."""
    if names is not None:
        return [n for n in names if fields.get(n) not in (None, "")]
    return [k for k, v in fields.items() if k not in SKIP and isinstance(v, (str, int, bool))
            and 0 < len(str(v)) <= MAX_VALUE]


def document_tokens(fields: Mapping[str, Any], names: Iterable[str] | None) -> str:
    """A document's ``filters`` field: its ``names`` metadata (``None``: every short scalar field)."""
    out = []
    for name in filterable(fields, names):
        v = fields.get(name)
        values = v if isinstance(v, (list, tuple)) else [v]
        for x in values:
            if x not in (None, "") and re.search(r"[A-Za-z0-9]", str(x)):
                out.append(token(name, x))
    return " ".join(dict.fromkeys(out))


def parse(spec: Any, where: str = "filter") -> Filter:
    """A filter from ``"state=california,nevada;type=statute"``, a list of such strings (the CLI's
    repeated ``--filter``) or a mapping ``{"state": ["california", "nevada"]}``; ``{}`` for none."""
    if spec is None or spec == "" or spec == {}:
        return {}
    out: Filter = {}
    if isinstance(spec, Mapping):
        items = list(spec.items())
    else:
        parts = [spec] if isinstance(spec, str) else list(spec)
        items = []
        for part in parts:
            for clause in str(part).split(";"):
                if not clause.strip():
                    continue
                name, eq, values = clause.partition("=")
                if not eq or not name.strip() or not values.strip():
                    raise FilterError(f"{where}: {clause!r} is not FIELD=VALUE[,VALUE...] "
                                      f"(e.g. state=california,nevada)")
                items.append((name.strip(), [v for v in values.split(",")]))
    for name, values in items:
        if isinstance(values, (str, int)):
            values = [values]
        if not isinstance(values, (list, tuple, set)):
            raise FilterError(f"{where}: the values of {name!r} must be a string or a list, not "
                              f"{type(values).__name__}")
        vals = [str(v).strip() for v in values if str(v).strip()]
        if not vals:
            raise FilterError(f"{where}: no value for {name!r}")
        for v in vals:
            if ".." in v and not re.fullmatch(r"\d*\.\.\d*", v):
                raise FilterError(f"{where}: {name}={v}: a range is LOW..HIGH of digits (e.g. 2000..2010)")
        out.setdefault(str(name), []).extend(vals)
    return out


def clauses(flt: Filter) -> list[list[tuple[str, ...]]]:
    """Per field, the OR-ed alternatives: ``("term", token)`` or ``("range", low_token, high_token)``."""
    out = []
    for name, values in flt.items():
        alts: list[tuple[str, ...]] = []
        for v in values:
            if ".." in v:
                lo, hi = v.split("..", 1)
                # open ends: the field's own tokens only ("_" sorts before digits, "~" after them)
                alts.append(("range", f"{_key(name)}_{lo}", f"{_key(name)}_{hi or '~'}"))
            else:
                alts.append(("term", token(name, v)))
        out.append(alts)
    return out


def for_topic(static: Filter, by: Iterable[str], fields: Mapping[str, Any], qid: str) -> Filter:
    """``static`` plus, for each topic field in ``by``, that field's value as a filter on the same-named
    document field (Housing: each question searched only among its own state's statutes)."""
    out = {k: list(v) for k, v in static.items()}
    for name in by:
        v = fields.get(name)
        if v in (None, ""):
            raise FilterError(f"topic {qid!r} has no {name!r} to filter by")
        out.setdefault(name, []).extend([str(x) for x in v] if isinstance(v, (list, tuple)) else [str(v)])
    return out
