"""The retriever interface and partition routing, shared by sparse and dense search."""
from __future__ import annotations
from legalir.errors import LegalirError

import os
import sys
from pathlib import Path
from typing import Callable, Mapping, Protocol

from legalir.collections import partition_key
from legalir.trec import Run, Topic


class SearchError(LegalirError, ValueError):
    pass


class Retriever(Protocol):
    def search(self, topics: Mapping[str, Topic], k: int) -> Run: ...


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
    if missing and not quiet:
        print(f"warning: {len(missing)} topic(s) retrieved no documents: {', '.join(missing[:10])}"
              + (" ..." if len(missing) > 10 else ""), file=sys.stderr)
    return missing


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
        run: Run = {}
        # resolved once: every partition comes from the same version of a versioned index (legalir.atomic)
        root = Path(os.path.realpath(self.root))
        for key, group in sorted(self.route(topics).items()):
            retriever = self.make(root / key)
            try:
                run.update(retriever.search(group, k))
            finally:
                close = getattr(retriever, "close", None)
                if close is not None:
                    close()
        return run
