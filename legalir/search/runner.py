"""The retriever interface and the one `topics -> retriever -> run file` chain.

Every search command (``legalir search`` and ``search-dense`` through :class:`legalir.Searcher`, pools) ends
in :func:`search_to_run`:
options are checked first (depth, run tag), then the topics are read,
searched, topics that retrieved nothing are reported, and the run is written.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

from legalir import trec
from legalir.base import atomic, log
from legalir.errors import LegalirError
from legalir.search.arguments import check_k
from legalir.trec import Run, Topic

_log = log.get(__name__)


class SearchError(LegalirError, ValueError):
    pass


class Retriever(Protocol):
    def search(self, topics: Mapping[str, Topic], k: int) -> Run: ...

    def close(self) -> None:
        """Release what the retriever holds open (Lucene readers); a no-op for in-memory ones."""


def check_topics(topics: Mapping[str, Topic]) -> None:
    """Refuse empty queries up front, naming them."""
    if not topics:
        raise SearchError("no topics to search")
    empty = [q for q, t in topics.items() if not str(t.text).strip()]
    if empty:
        raise SearchError(f"empty query text for topic(s): {', '.join(empty[:10])}")


def report_empty_results(run: Run, topics: Mapping[str, Topic], quiet: bool = False) -> list[str]:
    """Topics that retrieved nothing (e.g. all stopwords): reported, never hidden."""
    missing = sorted(q for q in topics if not run.get(q))
    if not quiet:
        _warn_empty(missing)
    return missing


def _warn_empty(missing: list[str]) -> None:
    if missing:
        _log.warning(f"{len(missing)} topic(s) retrieved no documents: {', '.join(missing[:10])}"
                     + (" ..." if len(missing) > 10 else ""))


def search_to_run(make_retriever: Callable[[], Retriever], topics_path: str | os.PathLike,
                  run_path: str | os.PathLike, *, k: int, tag: str, depth: int | None = None,
                  force: bool = False, topics: Mapping[str, Topic] | None = None) -> tuple[int, int]:
    """Read ``topics_path``, search it with the retriever ``make_retriever()`` builds, write ``run_path``.

    Options are checked before anything slow starts (the retriever is built
    after the topics are read), the output rule first: ``run_path`` may not be
    the topics file, nor a file legalir did not write unless ``force``
    (:func:`legalir.base.atomic.check_file`). ``topics_path`` may be ``-`` (standard
    input); ``topics``: the topics when already read from it. Returns (lines
    written, topics).
    """
    check_k(k)
    trec.check_tag(tag)
    atomic.check_file(run_path, [topics_path], force=force)
    if topics is None:
        topics = trec.read_topics(topics_path)
    check_topics(topics)
    found: set[str] = set()  # topics with results
    seen = [0]  # topics in the run

    def written(hits: Iterator[tuple[str, Mapping[str, float]]]) -> Iterator[tuple[str, Mapping[str, float]]]:
        for qid, docs in log.progress(hits, total=len(topics), desc="search", unit=" topics"):
            seen[0] += 1
            if docs:
                found.add(qid)
            yield qid, docs

    retriever = make_retriever()
    try:
        if hasattr(retriever, "search_hits"):
            # streamed: each batch of topics is written as it is searched, no whole run in memory
            hits = ((q, dict(zip(docids, scores))) for q, docids, scores in retriever.search_hits(topics, k))
        else:
            run = retriever.search(topics, k)
            hits = ((q, run[q]) for q in sorted(run))
        n = trec.write_run_stream(run_path, written(hits), tag=tag, depth=k if depth is None else depth,
                                  inputs=[topics_path], force=force)
    finally:
        retriever.close()
    _warn_empty(sorted(set(topics) - found))
    _log.info(f"{run_path}: {n} lines for {seen[0]} topics")
    return n, seen[0]
