"""The one way into the JVM for searches: Java calls one at a time, concurrent searches batched.

pyjnius is not thread-safe: a Java method object is shared by all instances of
a class and holds its receiver while it is called (pyjnius issues #287, #563),
so two Python threads calling Lucene at once, on one searcher or on one
searcher each, fail now and then (wrong hits, ``IncompatibleClassChangeError``,
``NullPointerException``, and once a SIGSEGV in ``BooleanWeight.<init>``).
Every Java call of :class:`legalir.Searcher` therefore goes through
:data:`LUCENE`: one at a time, and the searches that queue up meanwhile are
run together, one ``search`` per searcher over Java threads (where Lucene is
thread-safe). A notebook, a web application and ``legalir serve`` sharing one
``Searcher`` across threads are all safe.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
from collections.abc import Callable, Mapping
from typing import Any

from legalir.trec import Run, Topic, ranking


@dataclasses.dataclass
class _Item:
    """One caller's search waiting for the gate: its searcher getter, topics, depth and answer."""

    get_searcher: Callable[[], Any]
    topics: dict[str, Topic]
    k: int
    future: concurrent.futures.Future[Run]


class LuceneGate:
    """Java calls one at a time; searches that queue up meanwhile are searched as one batch.

    A caller adds its search to the queue and takes the JVM lock; whoever holds the lock runs
    everything queued (grouped by searcher: one ``search`` call each, with the largest k asked
    for, cut per query in trec_eval's order), so a caller often finds its answer ready when it
    gets the lock.

    Attributes
    ----------
    batches : int
        Searcher calls made (for tests and benchmarks).
    """

    def __init__(self) -> None:
        self.jvm = threading.RLock()
        self._queue: list[_Item] = []
        self._mutex = threading.Lock()
        self.batches = 0

    def call(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` with the JVM to itself (opening, closing, document lookups)."""
        with self.jvm:
            return fn(*args, **kwargs)

    def search(self, get_searcher: Callable[[], Any], topics: Mapping[str, Topic], k: int) -> Run:
        """``get_searcher().search(topics, k)``, each topic's documents ranked and cut at ``k``.

        ``get_searcher`` is called with the JVM lock held; callers passing the same
        ``get_searcher`` object at the same time share one Java batch.
        """
        item = _Item(get_searcher, dict(topics), k, concurrent.futures.Future())
        with self._mutex:
            self._queue.append(item)
        with self.jvm:
            if not item.future.done():
                with self._mutex:
                    batch, self._queue = self._queue, []
                self._run(batch)
        return item.future.result()

    def _run(self, batch: list[_Item]) -> None:
        groups: dict[Any, list[_Item]] = {}
        for it in batch:
            groups.setdefault(it.get_searcher, []).append(it)
        for get_searcher, items in groups.items():
            try:
                if len(items) == 1:
                    merged, k = items[0].topics, items[0].k
                else:
                    merged = {f"{i}\t{q}": t for i, it in enumerate(items) for q, t in it.topics.items()}
                    k = max(it.k for it in items)
                run = get_searcher().search(merged, k)
                self.batches += 1
                for i, it in enumerate(items):
                    key = (lambda q: q) if len(items) == 1 else (lambda q, i=i: f"{i}\t{q}")
                    it.future.set_result({q: dict(ranking(run.get(key(q), {}), it.k)) for q in it.topics})
            except BaseException as e:  # each waiting caller gets the error
                for it in items:
                    if not it.future.done():
                        it.future.set_exception(e)


#: the process's only way into the JVM for searching (one per process, as the JVM is)
LUCENE = LuceneGate()
