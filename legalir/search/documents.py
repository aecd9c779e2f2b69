"""Documents as a searcher shows them: a hit's record, and a document looked up by id or citation.

One place for every face (API hits and :meth:`legalir.Searcher.doc`, serve's hits and ``/doc``, MCP,
``legalir.pt``'s ``text`` column): the record of an index version is its changes (``legalir index update``),
then its collection (:class:`legalir.indexing.changes.Documents`), else the document the Lucene index stores
(a collection of the user's own that is not at hand).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from legalir.indexing import IndexPair
from legalir.indexing.changes import Documents
from legalir.legal import filters


@dataclass(frozen=True)
class Hit:
    """One search result.

    Attributes
    ----------
    docid : str
    score : float
    rank : int
        1 for the best.
    text : str or None
        The document's ``contents`` (``None`` when the collection is not at hand).
    fields : dict
        The document's other fields (metadata such as ``state``, ``category``, ``citation``, and the
        normalised ``citations`` that ``legalir convert`` extracts; not the index-only ``filters`` tokens).
    partition : str or None
        The partition searched (an index with one index per partition), else ``None``.
    """

    docid: str
    score: float
    rank: int
    text: str | None = None
    fields: dict = field(default_factory=dict)
    partition: str | None = None


class Display:
    """The documents of the index versions one searcher holds.

    Parameters
    ----------
    docs : legalir.indexing.changes.Documents
        The versions' changes, then their collection.
    pair : legalir.indexing.IndexPair
        The versions held (their partitions).
    stored : callable
        ``stored(docid, partition key)``: the JSON the Lucene index stores for ``docid``, or None (called
        only when neither changes nor a collection are at hand).
    """

    def __init__(self, docs: Documents, pair: IndexPair, stored: Callable[[str, str], str | None]):
        self.docs, self.pair, self._stored = docs, pair, stored

    @property
    def from_collection(self) -> bool:
        """Whether records come from the versions' changes or their collection (else: the Lucene index)."""
        return self.docs.corpus is not None or bool(self.docs.changed)

    def record(self, docid: str, key: str) -> dict | None:
        """The record shown for a hit in partition ``key`` ('' when not partitioned)."""
        if self.from_collection:
            return self.docs.record(docid, key or None)
        if self.pair.sparse is None or (key and key not in self.pair.sparse_parts):
            return None
        raw = self._stored(docid, key)
        return None if raw is None else json.loads(raw)

    def lookup(self, docid: str, key: str | None) -> dict | None:
        """The record of ``docid``, or of the document whose own citation ``docid`` is (``O.C.G.A. § 8-2-1``),
        in partition ``key`` (None: any); None when absent, or when the index holds one index per partition,
        no collection is at hand and ``key`` is None (which one would hold it?)."""
        if not self.from_collection and self.pair.sparse_parts and key is None:
            return None
        rec = self.record(docid, key or "")
        if rec is None and self.from_collection:
            # by citation, in the version held: a section `legalir index update` added is found as the others
            for found in self.docs.resolve(docid):
                rec = self.record(found, key or "")
                if rec is not None:
                    break
        return rec

    def hits(self, ranked: Mapping[str, float], key: str) -> list[Hit]:
        """One topic's ranked ``{docid: score}`` (in order) as hits with their records."""
        out = []
        recs = (self.docs.records(list(ranked), key or None) if self.from_collection
                else [self.record(docid, key) for docid in ranked])
        for rank, ((docid, score), rec) in enumerate(zip(ranked.items(), recs), 1):
            rec = rec or {}
            out.append(Hit(docid, float(score), rank, rec.get("contents"),
                           {f: v for f, v in rec.items() if f not in ("id", "contents", filters.FIELD)}, key or None))
        return out
