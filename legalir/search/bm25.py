"""BM25 (optionally + RM3) over one Lucene index: what the searcher core runs for each partition.

:class:`BM25` searches one index through :class:`legalir.indexing.lucene.LuceneIndex`
(the one way into a Lucene index; the same Java searcher and calls as
Pyserini's ``LuceneSearcher``: ``set_bm25`` / ``set_rm3`` / ``batch_search``).
Partition routing, the pooled index's default filter and the citation hint are the searcher
core's (:class:`legalir.search.searcher.Searcher`), which opens one :class:`BM25` per partition.

Legal structure (docs/legal-structure.md): :meth:`BM25.clauses` turns each topic's metadata filter
(:mod:`legalir.legal.filters`) and the citations its text names (:mod:`legalir.legal.citations`) into the
Lucene clauses that :class:`legalir.indexing.lucene.LuceneIndex` adds to its query, and
:meth:`BM25.partitions_of` the partitions whose own statistics a pooled index scores with.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from legalir.collections import read_manifest
from legalir.datasets import DatasetError, dataset_class
from legalir.datasets.dataset import BM25_DEFAULTS
from legalir.errors import LegalirError
from legalir.indexing import collection_of, sparse
from legalir.indexing.lucene import LuceneIndex
from legalir.legal import filters
from legalir.search.runner import SearchError, check_topics
from legalir.trec import Run, Topic, clean_text

#: Pyserini's LuceneSearcher defaults (stated once: :data:`legalir.datasets.dataset.BM25_DEFAULTS`)
DEFAULT_K1: float = BM25_DEFAULTS["k1"]
DEFAULT_B: float = BM25_DEFAULTS["b"]


@dataclass
class RM3:
    fb_terms: int = 10
    fb_docs: int = 10
    original_query_weight: float = 0.5

    def __post_init__(self):
        if self.fb_terms < 1 or self.fb_docs < 1 or not 0.0 <= self.original_query_weight <= 1.0:
            raise SearchError(f"RM3 needs fb_terms >= 1, fb_docs >= 1 and 0 <= original query weight <= 1 "
                              f"(got {self.fb_terms}, {self.fb_docs}, {self.original_query_weight})")


class BM25:
    """BM25 over one Lucene index. ``search`` is a multi-threaded batch search.

    ``batch_size`` topics go to Java at a time: Anserini's ``batch_search`` keeps every hit's
    stored document until the batch returns, so the JVM heap grows with it (measured with
    ``scripts/bench_search.py``: 64 topics x 1000 hits took the peak from 1.3 GB to 2.0 GB).
    """

    def __init__(self, index_dir: str | os.PathLike, k1: float = DEFAULT_K1, b: float = DEFAULT_B,
                 rm3: RM3 | None = None, threads: int = 1, batch_size: int = 16, *,
                 filter: filters.Filter | None = None, filter_by: Sequence[str] = (), filter_by_optional: bool = False,
                 citations: bool | None = None, jurisdiction_field: str | None = None):
        from legalir.legal import citations as cite

        check_bm25(k1, b)
        self.index = LuceneIndex(index_dir, needs_docvectors=rm3 is not None)
        self.index_dir = str(self.index.path)
        self.k1, self.b, self.rm3, self.threads = k1, b, rm3, max(1, threads)
        self.batch_size = max(1, batch_size)
        meta = sparse.index_meta(self.index.real)
        fields = meta.get("fields") or []
        self.has_citations, self.has_filters = cite.FIELD in fields, filters.FIELD in fields
        #: the index's filterable fields and their types (legalir.legal.filters)
        self.schema = filters.schema_of(meta)
        try:
            self._check(bool(citations), bool(filter or filter_by))
            self.filter = filters.parse(filter)
            filters.clauses(self.filter, self.schema)  # checked now: a bad field fails before any topic is read
        except LegalirError:
            self.index.close()
            raise
        #: whether queries' citations add clauses (default: when the index has the field)
        self.citations = self.has_citations if citations is None else bool(citations)
        self.filter_by, self.filter_by_optional = list(filter_by), filter_by_optional
        self.jurisdiction_field = jurisdiction_field
        self._jurisdiction: str | None | bool = False  # not read yet (jurisdiction)

    @property
    def jurisdiction(self) -> str | None:
        """The jurisdiction every document of the index shares (``ga`` for an index of Georgia's code; on a
        pooled index of several states, ``None``), read once from the index's ``filters`` field: the value of
        the ``jurisdiction_field`` (else ``state``) that every live document holds. ``None`` when the field is
        not filterable or its values differ."""
        if self._jurisdiction is False:  # not read yet
            self._jurisdiction = None
            field = self.jurisdiction_field or "state"
            if self.has_filters:
                prefix = f"{filters.partition_key(field)}_"
                # typed tokens (state__...), and other fields whose tokens begin the same (state_code_...)
                others = [f"{prefix}_"] + [f"{filters.partition_key(n)}_" for n in (self.schema or {})
                                            if n != field and filters.partition_key(n).startswith(prefix)]
                term = self.index.shared_term(filters.FIELD, prefix, others)
                if term:
                    # the filters field is analysed as text, so its term is stemmed (``state_wy`` is indexed as
                    # ``state_wi``, ``state_ms`` as ``state_m``): the value is the field as a live document
                    # stores it (every live document holds that one term)
                    self._jurisdiction = self._stored_key(field) or term[len(prefix):]
        return self._jurisdiction if isinstance(self._jurisdiction, str) else None

    def _stored_key(self, field: str) -> str | None:
        """``field``'s value (as :func:`legalir.legal.filters.partition_key` writes it) in the stored record of the
        first live document, or None where it has none."""
        ids = self.index.docids()
        raw = self.index.raw(ids[0]) if ids else None
        try:
            value = json.loads(raw).get(field) if raw else None
        except (ValueError, AttributeError):
            return None
        if value in (None, "") or isinstance(value, (list, dict)):
            return None
        try:
            return filters.partition_key(value)
        except filters.FilterError:
            return None

    def set_bm25(self, k1: float, b: float) -> None:
        check_bm25(k1, b)
        self.k1, self.b = k1, b

    def search(self, topics: Mapping[str, Topic], k: int) -> Run:
        run: Run = {q: dict(zip(docids, scores)) for q, docids, scores in self.search_hits(topics, k)}
        return {q: run.get(q, {}) for q in topics}

    def search_hits(self, topics: Mapping[str, Topic], k: int) -> Iterator[tuple[str, list[str], Sequence[float]]]:
        """``(qid, docids, scores)`` per topic, topics in sorted order (the order runs are written in),
        searched ``batch_size`` topics at a time: memory stays bounded by one batch's hits."""
        check_topics(topics)
        qids = sorted(topics)
        texts = [clean_text(topics[q].text) for q in qids]
        flt, cites = self.clauses(topics)
        parts = self.partitions_of(topics)
        rm3 = None if self.rm3 is None else (self.rm3.fb_terms, self.rm3.fb_docs, self.rm3.original_query_weight)
        for start in range(0, len(qids), self.batch_size):
            end = start + self.batch_size
            yield from self.index.search_hits(qids[start:end], texts[start:end], k, k1=self.k1, b=self.b, rm3=rm3,
                                              threads=self.threads, filters=flt, citations=cites, partitions=parts)

    def partitions_of(self, topics: Mapping[str, Topic]) -> dict[str, list[str]]:
        """On a pooled index: the partitions each topic's filter names (its partition-field values, no
        range), searched over those partitions' segments with their own statistics."""
        segments = self.index.partition_segments()
        field = sparse.index_meta(self.index.real).get("partition_field") if segments else None
        if not field:
            return {}
        out = {}
        for q, t in topics.items():
            keys = filters.partition_keys(self.topic_filter(q, t), field)
            if keys:  # a key of no partition matches no document: the others' segments hold every match
                kept = [k for k in keys if k in segments]
                if kept:
                    out[q] = kept
        return out

    def topic_filter(self, qid: str, topic: Topic) -> filters.Filter:
        """A topic's filter: the static filter AND its ``filter_by`` fields AND the filter in its ``_filter``
        field (the API and ``legalir serve`` pass one per request; the API's ``partition=`` on a pooled index
        arrives as the topic's partition field, a ``filter_by`` field): every clause AND-ed."""
        by = [f for f in self.filter_by if not (self.filter_by_optional and topic.fields.get(f) in (None, ""))]
        own = filters.for_topic(self.filter, by, topic.fields, qid) if (self.filter or by) else []
        return filters.combine(own, topic.fields.get("_filter") or [])

    def _check(self, citations: bool, filtered: bool) -> None:
        from legalir.legal import citations as cite

        if citations and not self.has_citations:
            raise SearchError(f"{self.index_dir}: the index has no {cite.FIELD!r} field; convert the collection "
                              f"again (legalir convert) and rebuild the index, or use --citations off")
        if filtered and not self.has_filters:
            raise SearchError(f"{self.index_dir}: the index has no {filters.FIELD!r} field to filter on; convert "
                              f"the collection again (legalir convert) and rebuild the index (legalir index)")

    def clauses(self, topics: Mapping[str, Topic]) -> tuple[dict[str, list], dict[str, list[tuple[str, int]]]]:
        """Per topic: its filter clauses (the static filter, its ``filter_by`` fields, and a parsed
        filter in its ``_filter`` field, as the API and ``legalir serve`` pass one per request) and its
        citation clauses (:func:`legalir.legal.citations.query_clauses`, unless its ``_citations`` field says
        otherwise; the jurisdiction of a citation without one is the topic's ``jurisdiction_field``,
        else the filter's only value of it, else the index's own, :attr:`jurisdiction`: a bare ``§ N`` asked
        of a code of one state is read in that code, whichever face asks)."""
        from legalir.legal import citations as cite

        flt: dict[str, list] = {}
        cites: dict[str, list[tuple[str, int]]] = {}
        for q, t in topics.items():
            f = self.topic_filter(q, t)
            on = self.citations if t.fields.get("_citations") is None else bool(t.fields["_citations"])
            self._check(on and t.fields.get("_citations") is not None, bool(f))
            if f:
                # the one check of a filter against the index's fields and types, for every face (API, CLI, serve)
                flt[q] = filters.clauses(f, self.schema, "filter" if len(topics) == 1 else f"topic {q!r}: filter")
            if on:
                hint = t.fields.get(self.jurisdiction_field) if self.jurisdiction_field else None
                if not hint and self.jurisdiction_field:
                    hint = filters.single_value(f, self.jurisdiction_field)
                if not hint:  # a question asked of a code of one state is read in that code
                    hint = self.jurisdiction
                c = cite.query_clauses(clean_text(t.text), jurisdiction_hint=str(hint) if hint else None)
                if c:
                    cites[q] = c
        return flt, cites

    def close(self) -> None:
        self.index.close()


def check_bm25(k1: float, b: float) -> None:
    if not (k1 >= 0) or not (0 <= b <= 1):
        raise SearchError(f"BM25 needs k1 >= 0 and 0 <= b <= 1 (got k1={k1}, b={b})")


def bm25_params(index_dir: str | os.PathLike, k1: float | None = None,
                b: float | None = None) -> tuple[float, float, str]:
    """The BM25 ``(k1, b, where they come from)`` to search ``index_dir`` with.

    A value given wins; a missing one comes from the tuned parameters of the dataset the
    index was built from (its collection's manifest names it, and the dataset module's
    ``pipeline.bm25`` holds them, chosen on training topics), else Pyserini's 0.9 / 0.4.
    """
    tuned: dict = {}
    source = "Pyserini's defaults"
    if k1 is None or b is None:
        root = collection_of(index_dir)
        if root is not None:
            name = read_manifest(root).get("dataset")
            try:
                cls = dataset_class(str(name))
            except DatasetError:  # a collection of the user's own (legalir.index on dicts), no tuned values
                cls = None
            if cls is not None and cls.pipeline is not None and cls.pipeline.bm25:
                tuned, source = dict(cls.pipeline.bm25), f"{name}'s tuned parameters"
    if k1 is not None and b is not None:
        source = "given"
    k1 = float(k1 if k1 is not None else tuned.get("k1", DEFAULT_K1))
    b = float(b if b is not None else tuned.get("b", DEFAULT_B))
    check_bm25(k1, b)
    return k1, b, source


def structure(index_dir: str | os.PathLike) -> tuple[str | None, str | None]:
    """``(partition field, jurisdiction field)`` of the collection an index was built from."""
    root = collection_of(index_dir)
    if root is None:
        return None, None
    manifest = read_manifest(root)
    part = manifest.get("partition_field")
    try:
        jur = dataset_class(str(manifest.get("dataset"))).jurisdiction_field
    except DatasetError:
        jur = None
    return part, jur or part
