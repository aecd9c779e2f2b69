"""The retriever interface, partition routing, and the one `topics -> retriever -> run file` chain.

Every search command (BM25, dense, pools) ends in :func:`search_to_run`:
options are checked first (depth, run tag), then the topics are read,
searched, topics that retrieved nothing are reported, and the run is written.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from legalir import atomic, log, trec
from legalir.collections import partition_key
from legalir.errors import LegalirError
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


def check_depth(k: int, what: str = "documents retrieved per topic") -> int:
    if k is None or int(k) < 1:
        raise SearchError(f"{what} must be at least 1 (got {k}); e.g. -k 1000")
    return int(k)


def search_to_run(make_retriever: Callable[[], Retriever], topics_path: str | os.PathLike,
                  run_path: str | os.PathLike, *, k: int, tag: str, depth: int | None = None,
                  force: bool = False, topics: Mapping[str, Topic] | None = None) -> tuple[int, int]:
    """Read ``topics_path``, search it with the retriever ``make_retriever()`` builds, write ``run_path``.

    Options are checked before anything slow starts (the retriever is built
    after the topics are read), the output rule first: ``run_path`` may not be
    the topics file, nor a file legalir did not write unless ``force``
    (:func:`legalir.atomic.check_file`). ``topics_path`` may be ``-`` (standard
    input); ``topics``: the topics when already read from it. Returns (lines
    written, topics).
    """


    check_depth(k)
    trec.check_tag(tag)
    atomic.check_file(run_path, [topics_path], force=force)
    if topics is None:
        topics = trec.read_topics(topics_path)
    check_topics(topics)
    found: set[str] = set()  # topics with results
    seen = [0]  # topics in the run

    def written(hits):
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


class Partitioned:
    """Send each topic only to its own partition's retriever.

    ``field`` names the topic metadata field holding the partition value
    (matched case-insensitively through :func:`legalir.collections.partition_key`);
    ``make(key)`` builds the retriever for partition ``key`` (under ``root``).
    """

    def __init__(self, root: str | os.PathLike, field: str, make: Callable[[Path], Retriever], known: list[str]):
        self.root = Path(root)
        self.field = field
        self.make = make
        self.known = sorted(known)
        if not self.known:
            raise SearchError(f"{self.root}: no partition indexes found")

    def route(self, topics: Mapping[str, Topic]) -> dict[str, dict[str, Topic]]:
        groups: dict[str, dict[str, Topic]] = {}
        for qid, t in topics.items():
            value = t.fields.get(self.field)
            if value in (None, ""):
                raise SearchError(f"topic {qid!r} has no {self.field!r} to route it to a partition")
            key = partition_key(value)
            if key not in self.known:
                raise SearchError(f"topic {qid!r}: no index for {self.field} {value!r} under {self.root}; "
                                  f"known: {', '.join(self.known)}")
            groups.setdefault(key, {})[qid] = t
        return groups

    def search(self, topics: Mapping[str, Topic], k: int) -> Run:
        return {q: dict(zip(docids, scores)) for q, docids, scores in self.search_hits(topics, k)}

    def search_hits(self, topics: Mapping[str, Topic], k: int):
        """``(qid, docids, scores)`` in qid order, for :func:`search_to_run` to write as they come.

        Each partition is searched (and its retriever closed) in turn; until written, the hits
        are kept as each retriever returns them (lists, or a dense index's array views), not as
        one dict per topic."""
        found: dict[str, object] = {}
        # one version of a versioned index for every partition, held (atomic.pin) until all are searched: a
        # rebuild publishing meanwhile removes no partition this search has yet to open
        with atomic.pin(self.root) as pin:
            root = Path(os.path.realpath(pin.path))
            for key, group in sorted(self.route(topics).items()):
                retriever = self.make(root / key)
                try:
                    if hasattr(retriever, "search_hits"):
                        found.update((q, (docids, scores)) for q, docids, scores in retriever.search_hits(group, k))
                    else:
                        found.update(retriever.search(group, k))
                finally:
                    retriever.close()
        for qid in sorted(found):
            hits = found.pop(qid)
            yield (qid, *hits) if isinstance(hits, tuple) else (qid, list(hits), list(hits.values()))

    def close(self) -> None:
        """Each partition's retriever is closed after its topics are searched."""
