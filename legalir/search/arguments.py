"""The searcher core's checks at the door: a bad argument is a :class:`SearcherError` naming it and what is
accepted, the same text through every face (the API, ``legalir search``/``search-dense``, serve, MCP,
PyTerrier).

* :func:`check_k`: the one check of a search depth (every face's ``k``; serve passes its transport limit);
* :func:`check_query`: a query's text;
* :func:`as_topics` / :func:`frame_topics`: topics as a mapping, a Benchmark or a PyTerrier-style DataFrame;
* :class:`DenseOptions`: how a FAISS index is searched;
* :func:`refuse_unknown`: a face's argument that the searcher core does not take, refused in the words of
  :func:`legalir.base.checks.arguments` (what serve and MCP say of an unknown argument).
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from legalir.base import checks
from legalir.errors import ApiError
from legalir.trec import Topic

#: the deepest search a caller may ask for (Lucene takes a Java int; FAISS allocates k per query)
MAX_DEPTH = 1_000_000


class SearcherError(ApiError):
    """A bad argument to a search (what was given, what is accepted): the API's :class:`ApiError`."""

    status = 400


class UnknownPartition(SearcherError, LookupError):
    """A partition the index does not hold (404 over HTTP)."""

    status = 404


class UnknownRelease(SearcherError, LookupError):
    """A release (``as_of=``) the index does not hold (404 over HTTP)."""

    status = 404


@dataclasses.dataclass(frozen=True)
class DenseOptions:
    """How a FAISS index is searched (every field optional: the index's and FAISS's own defaults).

    Attributes
    ----------
    instruction : str, optional
        A task instruction for every query (overrides the topics' ``instruction`` field, CRUMB's).
    gpu : bool, optional
        Search on the GPU (default: when FAISS sees one).
    ef_search : int, optional
        HNSW search width.
    nprobe : int, optional
        IVF lists visited per query.
    threads : int, optional
        FAISS's OpenMP threads for each search (default: all cores).
    resident : bool
        Keep a sharded index's shards loaded between searches (a long-lived searcher); ``False``: one shard
        in memory at a time (``legalir search-dense``, an index larger than memory).
    """

    instruction: str | None = None
    gpu: bool | None = None
    ef_search: int | None = None
    nprobe: int | None = None
    threads: int | None = None
    resident: bool = True

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]


def check_k(k: Any, name: str = "k", *, high: int = MAX_DEPTH, text: bool = False) -> int:
    """``k`` as an int from 1 to ``high`` (:data:`MAX_DEPTH`; serve gives its transport limit): the one check
    of a search depth, :func:`legalir.base.checks.integer` (a bool or a float is refused). ``text``: its decimal
    text is taken too (a URL's query string, :func:`legalir.base.checks.integer_or_text`)."""
    if text:
        return checks.integer_or_text(name, k, 1, high)
    return checks.integer(name, k, 1, high)


def check_query(q: Any, name: str = "query") -> str:
    """A non-empty string that UTF-8 can hold, no lone surrogate (:func:`legalir.base.checks.text`)."""
    return checks.text(name, q)


def check_optional_str(value: Any, name: str, accepted: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise SearcherError(f"{name} must be {accepted}, not {type(value).__name__} {value!r}"[:300])
    return value


def refuse_unknown(operation: str, given: Mapping[str, Any], accepted: Sequence[str]) -> None:
    """Refuse the names of ``given`` that are not ``accepted``, in the words serve and MCP refuse an unknown
    argument with (:func:`legalir.base.checks.arguments`): ``OPERATION has no argument 'x'; its arguments are: ...``."""
    params = {n: checks.Param(lambda _name, v: v) for n in accepted}
    unknown = {n: v for n, v in given.items() if n not in params}
    if unknown:
        try:
            checks.arguments(operation, unknown, params)
        except ApiError as e:
            raise SearcherError(str(e)) from None


def index_paths(path: Any) -> list[Path]:
    """An index folder, or a list of one Lucene and one FAISS folder, as paths."""
    if isinstance(path, (str, os.PathLike)):
        return [Path(path)]
    if isinstance(path, Sequence) and path and all(isinstance(p, (str, os.PathLike)) for p in path):
        return [Path(p) for p in path]
    raise SearcherError(f"path must be an index folder, or a list of one Lucene and one FAISS folder, not "
                        f"{type(path).__name__} {path!r}"[:300])


def _empty_cell(v: Any) -> bool:
    """A frame's missing value: None, pandas' NA, NaN."""
    return v is None or type(v).__name__ in ("NAType", "NaTType") or (isinstance(v, float) and v != v)


def frame_topics(frame: Any) -> dict[str, Topic]:
    """``Topic`` objects of a PyTerrier-style queries DataFrame: ``qid``, ``query``, and every other column a
    topic field, as a topics file's other keys are (``state``: the partition a topic is routed to and the code
    its bare ``§ N`` is read in); a missing cell is no field. The one reader of a frame's topics
    (:meth:`legalir.Searcher.batch_search`, :mod:`legalir.pt`)."""
    cols = [str(c) for c in frame.columns]
    if not {"qid", "query"} <= set(cols):
        raise SearcherError(f"a topics DataFrame needs the columns qid and query (has {', '.join(cols)})")
    out: dict[str, Topic] = {}
    for rec in frame.to_dict("records"):
        qid = str(rec["qid"])
        out[qid] = Topic(qid, check_query(rec["query"], f"the query of topic {qid!r}"),
                         {str(k): v for k, v in rec.items() if k not in ("qid", "query") and not _empty_cell(v)})
    return out


def as_topics(topics: Any) -> dict[str, Topic]:
    """``Topic`` objects from ``{qid: text}``, ``{qid: Topic}``, a Benchmark (its split's topics, with
    their fields) or a PyTerrier-style DataFrame (``qid``, ``query``, other columns its fields:
    :func:`frame_topics`)."""
    records = getattr(topics, "topic_records", None)
    if records is not None and not isinstance(topics, Mapping):
        return dict(records)
    if type(topics).__name__ == "DataFrame" and hasattr(topics, "to_dict"):
        return frame_topics(topics)
    if not isinstance(topics, Mapping):
        raise SearcherError(f"topics must be a mapping {{qid: text}}, a Benchmark or a DataFrame, not "
                            f"{type(topics).__name__}")
    if not topics:
        raise SearcherError("topics is empty: give at least one {qid: text}")
    out = {}
    for qid, t in topics.items():
        if not isinstance(qid, (str, int)) or isinstance(qid, bool) or not str(qid).strip():
            raise SearcherError(f"topic ids must be non-empty strings, got {qid!r}")
        if isinstance(t, Topic):
            check_query(t.text, f"the query of topic {qid!r}")
            out[str(qid)] = t
        elif isinstance(t, str):
            out[str(qid)] = Topic(str(qid), check_query(t, f"the query of topic {qid!r}"))
        else:
            raise SearcherError(f"topic {qid!r}: the query is a {type(t).__name__}; expected a string")
    return out
