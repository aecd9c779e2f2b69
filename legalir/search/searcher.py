"""The one searcher core: every face (the Python API, ``legalir search`` and ``search-dense``, ``legalir serve``,
MCP, PyTerrier) searches through :class:`Searcher`.

It owns each search rule once, each in the module of its job:

* argument checks at the door (:mod:`legalir.search.arguments`): a bad argument is a :class:`SearcherError`
  naming it and what is accepted, the same text through every face; :func:`check_k` the one depth check;
* partition routing (:mod:`legalir.search.routing`): one index per partition (a topic goes to its own), or a
  pooled index (``legalir index --pooled``: ``partition=`` and each topic's own partition field become
  filters, AND-ed with any ``filter=``), and the citation hint of a topic's jurisdiction (else the index's
  own: a bare ``§ N`` asked of a code of one state is read in that code,
  :attr:`legalir.search.bm25.BM25.jurisdiction`);
* the versions held and the releases kept, ``as_of=`` (:mod:`legalir.search.releases`);
* documents shown and looked up (:mod:`legalir.search.documents`);
* BM25 parameters from the index's dataset (:func:`legalir.search.bm25.bm25_params`);
* metadata filters and citation clauses (:mod:`legalir.legal.filters`, :mod:`legalir.legal.citations`);
* dense search (:class:`legalir.search.vector.DenseRetriever`, :class:`~legalir.search.arguments.DenseOptions`),
  and hybrid search: both legs to :func:`legalir.search.fusion.hybrid_depth`, fused with RRF, ranked in
  trec_eval's order, *then* cut at ``k`` (:func:`legalir.search.fusion.hybrid`);
* the Java gate (:data:`legalir.search.gate.LUCENE`): every Lucene call one at a time, concurrent
  searches batched, so one ``Searcher`` may be shared by many threads.
"""
from __future__ import annotations

import logging
import math
import os
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from legalir.base import atomic, checks
from legalir.collections import Corpus
from legalir.indexing import METHODS, IndexPair, MethodError, NotAnIndex, collection_of
from legalir.indexing import sparse as sparse_index
from legalir.indexing.changes import Documents
from legalir.legal import filters
from legalir.search import bm25, fusion
from legalir.search import releases as _releases
from legalir.search.arguments import (
    MAX_DEPTH,
    DenseOptions,
    SearcherError,
    UnknownPartition,
    UnknownRelease,
    as_topics,
    check_k,
    check_optional_str,
    check_query,
    frame_topics,
    index_paths,
    refuse_unknown,
)
from legalir.search.documents import Display, Hit
from legalir.search.gate import LUCENE
from legalir.search.routing import Router, key_of
from legalir.trec import Run, Topic, ranking

_log = logging.getLogger(__name__)

#: the searcher core's names, importable from here as before the split
__all__ = ["Searcher", "BoundSearch", "Hit", "SearcherError", "UnknownPartition", "UnknownRelease", "MAX_DEPTH",
           "check_k", "check_query", "as_topics", "frame_topics"]


class Searcher:
    """Search one index, BM25 or dense, partitioned or not; or both fused (hybrid).

    Opened and validated at once, like Pyserini's ``LuceneSearcher``: a folder that is not an
    index is a clear error. BM25 uses the tuned k1/b of the dataset the index was built from
    (ACORD: 1.0 / 0.5) unless given, else Pyserini's 0.9 / 0.4; :attr:`k1` and :attr:`b` say
    which. The index versions there when it opens are held (:func:`legalir.base.atomic.pin`) until
    :meth:`close`: a rebuild or ``legalir index update`` meanwhile changes nothing it answers.
    Safe to share between threads (Lucene calls go through one gate, batched).

    Parameters
    ----------
    path : str, PathLike or sequence of them
        An index folder (``legalir index`` / ``legalir index-dense`` / :func:`legalir.index`), or
        one Lucene and one FAISS folder of the same collection for ``hybrid`` search.
    k1, b : float, optional
        BM25 parameters.
    encoder : str or legalir.indexing.encoders.Encoder, optional
        Dense: the query encoder (default: the one the index records), or one already loaded.
    device : str, optional
        Dense: where the encoder runs.
    threads : int
        Lucene search threads (Java) per batch.
    dense_options : legalir.search.arguments.DenseOptions, optional
        Dense: how the FAISS index is searched (an instruction for every query, GPU, HNSW ``ef_search``,
        IVF ``nprobe``, FAISS threads, shards kept loaded).
    rm3 : legalir.search.bm25.RM3, optional
        BM25 with RM3 pseudo-relevance feedback.
    filter_by : sequence of str, optional
        Topic fields whose values filter the same-named document field (default: on a pooled
        index, its partition field for the topics that have it; ``[]``: none).
    partition_field : str, optional
        The topic field naming each topic's partition (default: the one the index records).
    collection : str, PathLike or legalir.collections.Corpus, optional
        Where the documents shown come from (default: the collection the index records; else the
        documents the Lucene index stores).

    Raises
    ------
    SearcherError
        A bad argument.
    legalir.errors.LegalirError
        A folder that holds no index, two indexes of one kind, or bad BM25 parameters.

    Examples
    --------
    >>> with legalir.Searcher("indexes/acord/bm25") as s:     # doctest: +SKIP
    ...     hits = s.search("cap on liability", k=5)
    >>> hits[0].docid, hits[0].score, hits[0].text[:40]       # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike | Sequence[str | os.PathLike], *, k1: float | None = None,
                 b: float | None = None, encoder: Any = None, device: str | None = None, threads: int = 1,
                 rm3: bm25.RM3 | None = None, filter_by: Sequence[str] | None = None,
                 partition_field: str | None = None, collection: Any = None,
                 dense_options: DenseOptions | None = None):
        paths = index_paths(path)
        for name, v in (("k1", k1), ("b", b)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
                raise SearcherError(f"{name} must be a finite number, not {v!r}")
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise SearcherError(f"threads must be an integer of at least 1, not {threads!r}")
        if filter_by is not None and (isinstance(filter_by, str) or
                                      not all(isinstance(f, str) for f in filter_by)):
            raise SearcherError(f"filter_by must be a list of field names, not {filter_by!r}")
        if dense_options is not None and not isinstance(dense_options, DenseOptions):
            raise SearcherError(f"dense_options must be a legalir.search.arguments.DenseOptions, not "
                                f"{type(dense_options).__name__}")
        self._closed = True  # until opened whole
        self._pins: dict[str, atomic.Pin] = {}
        given = IndexPair(paths)
        self._given = given  # the folders as the caller named them (errors name these, not version folders)
        #: the folders as given (a versioned index: its link)
        self.sparse: Path | None = given.sparse
        self.dense: Path | None = given.dense
        try:
            # the versions there now, held until close(): the Lucene searchers, the FAISS index and the
            # documents shown all come from the same versions
            for kind, p in (("sparse", given.sparse), ("dense", given.dense)):
                if p is not None:
                    self._pins[kind] = atomic.pin(p)
            #: the version folders held (``pair.sparse``, ``pair.dense``), their partitions and methods
            self.pair = IndexPair([pin.path for pin in self._pins.values()])
            if (self.pair.sparse is None) != (given.sparse is None) or (self.pair.dense is None) != (given.dense is None):
                raise NotAnIndex(f"{', '.join(map(str, paths))} changed kind while being opened; try again")
            self.partitions: list[str] = self.pair.partitions
            self.methods: list[str] = self.pair.methods
            if isinstance(collection, Corpus):
                self.corpus: Corpus | None = collection
            elif collection is not None:
                self.corpus = Corpus(index_paths(collection)[0])
            else:
                root = next((c for c in (collection_of(p) for p in paths) if c is not None), None)
                self.corpus = Corpus(root) if root is not None else None
            # an updated version's changed documents (legalir index update) first, then the collection
            self._docs = Documents(self.corpus, [p for p in (self.pair.sparse, self.pair.dense) if p is not None])
            self.partition_field: str | None = partition_field or (self.corpus.partition_field if self.corpus else None)
            self.k1: float | None = None
            self.b: float | None = None
            self.jurisdiction_field: str | None = None
            self.pooled = False
            self._filter_by: list[str] = []
            self._filter_by_optional = True
            if given.sparse is not None:
                self.k1, self.b, source = bm25.bm25_params(given.sparse, k1, b)
                _log.info(f"BM25 k1={self.k1:g} b={self.b:g} ({source})")
                part, jur = bm25.structure(given.sparse)
                self.partition_field = self.partition_field or part
                self.jurisdiction_field = jur
                #: one Lucene index over every partition, filtered by the partition field (legalir index --pooled)
                self.pooled = bool(self.pair.sparse is not None and not self.pair.sparse_parts
                                   and sparse_index.index_meta(self.pair.sparse).get("pooled"))
                if filter_by is not None:
                    self._filter_by, self._filter_by_optional = list(filter_by), False
                elif self.pooled and self.partition_field:
                    self._filter_by = [self.partition_field]
            if self.pair.dense is not None and not self.partition_field and self.pair.dense_parts:
                from legalir.indexing import dense as dense_index

                # a FAISS index of one index per partition records the topic field that names it
                self.partition_field = dense_index.read_meta(self.pair.dense).get("partition_field")
        except BaseException:
            for pin in self._pins.values():
                pin.close()
            raise
        held = self.pair.sparse if self.pair.sparse is not None else self.pair.dense
        assert held is not None  # IndexPair holds one index at least
        #: the releases kept (:mod:`legalir.search.releases`)
        self._kept = _releases.Kept({"sparse": self.sparse, "dense": self.dense}, held)
        self._docs.release = self._kept.release  # the records shown name their version's release
        self._router = Router(self.pair, self.partition_field, self.pooled)
        # the display reaches the searcher's Lucene indexes through a weak reference: no cycle, so a searcher
        # dropped without close() is freed at once, and its pins (the index versions it holds) with it, not at
        # the garbage collector's next pass (a publish meanwhile would keep a version nobody reads)
        stored = weakref.WeakMethod(self._stored)
        self._display = Display(self._docs, self.pair, lambda docid, key: stored()(docid, key))  # type: ignore[misc]
        self._rm3 = rm3
        self._threads = threads
        self._encoder, self._device = encoder, device
        self._dense_options = dense_options or DenseOptions()
        #: what a searcher of an older release (as_of=) is opened with: this one's own options
        self._options: dict[str, Any] = dict(k1=k1, b=b, device=device, threads=threads, rm3=rm3,
                                             filter_by=filter_by, partition_field=partition_field,
                                             dense_options=dense_options)
        self._past: dict[str, Searcher] = {}
        self._bm25: dict[str, bm25.BM25] = {}
        self._getters: dict[str, Any] = {}
        self._dense: dict[str, Any] = {}  # legalir.search.vector.DenseRetriever, loaded on first use
        self._lock = threading.Lock()        # opening retrievers, closing
        self._closed = False

    # ---- what the searcher holds
    @property
    def versions(self) -> dict[str, Path]:
        """``{"sparse"|"dense": version folder}`` held (the ``INDEX.vN`` of a versioned index)."""
        return {kind: pin.path for kind, pin in self._pins.items()}

    @property
    def pins(self) -> dict[str, atomic.Pin]:
        """The pins that hold :attr:`versions` (released by :meth:`close`)."""
        return dict(self._pins)

    # ---- releases: point-in-time search (legalir.search.releases)
    @property
    def release(self) -> str | None:
        """The release the versions held hold (an index of a code's release, ``legalir index update --to``), or
        None."""
        return self._kept.release

    @property
    def releases(self) -> list[str]:
        """The releases this index can be searched as of (``as_of=``), oldest first: the newest version of each
        release ``legalir index`` and ``legalir index update --to`` made is kept; [] for an index of no release."""
        return self._kept.releases

    @property
    def release_date(self) -> str | None:
        """The date of :attr:`release` as recorded (``"2022-11"``), or None."""
        return self._kept.date

    @property
    def release_dates(self) -> dict[str, str | None]:
        """``{release: date}`` of :attr:`releases`, oldest first: each release's date as the publisher printed it
        (``"2022-11"``, ``"2020-04-20"``), recorded by ``legalir convert statutes``; None where none was."""
        return self._kept.dates

    def history(self, ref: str, partition: str | None = None) -> list[dict]:
        """The section ``ref`` (an id, or a citation: ``O.C.G.A. § 8-2-1``) in each release the index keeps,
        oldest first: ``release``, ``date``, ``status`` (``absent`` where that release lacks it), ``sha256`` of
        its text and whether it ``changed`` (:func:`legalir.search.releases.history`).

        An index of no release gives one entry (``release`` None): the version it keeps.

        Raises
        ------
        legalir.search.releases.NotInAnyRelease
            A section no release holds (404 over HTTP).
        """
        self._check_open()
        return _releases.history(self, ref, partition)

    def at(self, as_of: Any) -> Searcher:
        """This index as it stood in release ``as_of``: a searcher of that release's own version (its documents,
        its BM25 statistics: an index of that release alone), opened once and closed with this one; this
        searcher itself when it holds that release, or when ``as_of`` is None.

        ``as_of`` may be a date (``"2021-09-01"``, a :class:`datetime.date`): the newest release dated on or
        before it (:func:`legalir.search.releases.release_for_date`).

        Raises
        ------
        UnknownRelease
            A release the index keeps no version of (the known ones named).
        legalir.search.releases.ReleaseError
            A date before the oldest release kept (naming it), or a release without a recorded date.
        """
        self._check_open()
        if as_of is None:
            return self
        # a release, or a date: the newest release dated on or before it (legalir.search.releases)
        release = _releases.release_of(as_of, lambda: self.release_dates)
        if release == self.release:
            return self
        with self._lock:
            found = self._past.get(release)
        if found is not None:
            return found
        folders = self._kept.folders(release)
        if folders is None:
            known = ", ".join(self.releases) or "none: it was not built from a release (legalir convert statutes)"
            raise UnknownRelease(f"as_of={release!r}: this index keeps no version of release {release!r}; "
                                 f"releases: {known}")
        try:
            past = Searcher(folders, encoder=self._encoder, **self._options)
        except atomic.OutputError:  # removed between listing and opening: a publish dropped it
            raise UnknownRelease(f"as_of={release!r}: its version was removed while being opened; try again") from None
        with self._lock:
            if self._closed:
                past.close()
                self._check_open()
            found = self._past.setdefault(release, past)
        if found is not past:
            past.close()
        return found

    def _check_open(self) -> None:
        if self._closed:
            raise SearcherError("this Searcher is closed; open a new one (legalir.Searcher(path))")

    # ---- retrievers, opened on first use (or by warm())
    def _open_bm25(self, key: str) -> bm25.BM25:
        found = self._bm25.get(key)
        if found is None:
            root = self.pair.sparse
            if root is None or self.k1 is None or self.b is None:
                raise SearcherError("this searcher holds no Lucene index: BM25 cannot search it")
            found = bm25.BM25(root / key if key else root, k1=self.k1, b=self.b, rm3=self._rm3,
                                threads=self._threads, filter_by=self._filter_by,
                                filter_by_optional=self._filter_by_optional,
                                jurisdiction_field=self.jurisdiction_field)
            self._bm25[key] = found
        return found

    def _bm25_getter(self, key: str):
        """One callable per partition: the gate batches the searches that pass the same one."""
        with self._lock:
            getter = self._getters.get(key)
            if getter is None:
                me = weakref.ref(self)  # no cycle (see __init__'s display): dropped, the searcher goes at once

                def getter(key=key):
                    searcher = me()
                    if searcher is None:  # pragma: no cover - a getter is called only by a search of its searcher
                        raise SearcherError("this searcher is gone")
                    searcher._check_open()
                    return searcher._open_bm25(key)
                self._getters[key] = getter
        return getter

    def _encoder_object(self):
        from legalir.search import vector as dense_search

        if self._encoder is None or isinstance(self._encoder, str):
            if self.pair.dense is None:
                raise SearcherError("this searcher holds no FAISS index: it has no query encoder")
            self._encoder = dense_search.load_encoder(self.pair.dense, self._encoder, device=self._device)
        return self._encoder

    def set_encoder(self, encoder: Any) -> None:
        """Query with ``encoder`` (a loaded :class:`legalir.indexing.encoders.Encoder`, e.g. one shared by
        several searchers) instead of loading the one the index records."""
        self._encoder = encoder

    def _dense_retriever(self, key: str) -> Any:
        from legalir.search import vector as dense_search

        with self._lock:
            self._check_open()
            found = self._dense.get(key)
            if found is None:
                root = self.pair.dense
                if root is None:
                    raise SearcherError("this searcher holds no FAISS index: dense search cannot search it")
                o = self._dense_options
                found = dense_search.DenseRetriever(root / key if key else root, self._encoder_object(),
                                                    instruction=o.instruction, gpu=o.gpu, ef_search=o.ef_search,
                                                    nprobe=o.nprobe, threads=o.threads, resident=o.resident)
                self._dense[key] = found
        return found

    def warm(self, dense: bool = False) -> Searcher:
        """Open now what a first search would wait for: every partition's Lucene searcher (a broken
        version fails here, not in a search) and, with ``dense``, the encoder and the first FAISS index."""
        self._check_open()
        if self.pair.sparse is not None:
            for key in self.pair.sparse_parts or [""]:
                LUCENE.call(lambda key=key: self._open_bm25(key).index.searcher())
        if dense and self.pair.dense is not None:
            self._dense_retriever(self.pair.dense_parts[0] if self.pair.dense_parts else "")
        return self

    def warm_dense(self, key: str = "") -> None:
        """Load the FAISS retriever of partition ``key`` ('' when not partitioned) and its encoder now."""
        self._dense_retriever(key)

    def dense_loaded(self) -> list[str]:
        """Partitions whose FAISS retriever is loaded."""
        return sorted(self._dense)

    # ---- routing (legalir.search.routing)
    def route(self, topics: Mapping[str, Topic], partition: str | None, method: str) -> dict[str, dict[str, Topic]]:
        """``{partition key: topics}``: where each topic is searched ('' for an index that is not partitioned);
        :meth:`legalir.search.routing.Router.route`, the one router."""
        return self._router.route(topics, partition, method)

    # ---- searching
    def _prepare(self, topics: Mapping[str, Topic], k: Any, method: Any, partition: Any, filter: Any,
                 citations: Any) -> tuple[dict[str, dict[str, Topic]], int, str]:
        self._check_open()
        k = check_k(k)
        method = check_optional_str(method, "method", f"one of {', '.join(METHODS)} or None")
        try:
            method = self.pair.method(method)
        except MethodError as e:
            raise SearcherError(str(e)) from None
        citations = None if citations is None else checks.boolean("citations", citations)
        if filter is not None and not isinstance(filter, (str, Mapping, list, tuple)):
            raise SearcherError(f"filter must be a string 'field=value[,value];...' or a mapping "
                                f"{{field: [values]}}, not {type(filter).__name__}")
        flt = filters.parse(filter, "filter=") if filter else []
        if flt and method != "bm25":
            raise SearcherError(f"filter= works with BM25 (Lucene FILTER clauses), not {method}; dense search takes "
                                f"partition= on a per-partition index")
        if flt or citations is not None:
            # per call, through the topics (legalir.search.bm25.BM25.clauses reads _filter / _citations)
            topics = {q: Topic(q, t.text, {**t.fields, "_filter": flt, "_citations": citations})
                      for q, t in topics.items()}
        return self.route(topics, partition, method), k, method

    def _search_group(self, key: str, topics: Mapping[str, Topic], k: int, method: str) -> Run:
        if method == "bm25":
            return LUCENE.search(self._bm25_getter(key), topics, k)
        if method == "dense":
            return self._dense_search(key, topics, k)
        depth = fusion.hybrid_depth(k)
        sparse_run = LUCENE.search(self._bm25_getter(key), topics, depth)
        return fusion.hybrid(sparse_run, self._dense_search(key, topics, depth), k)

    def _dense_search(self, key: str, topics: Mapping[str, Topic], k: int) -> Run:
        run = self._dense_retriever(key).search(topics, k)
        return {q: dict(ranking(run.get(q, {}), k)) for q in topics}

    def _run(self, groups: Mapping[str, Mapping[str, Topic]], k: int, method: str) -> tuple[Run, dict[str, str]]:
        run: Run = {}
        keys: dict[str, str] = {}
        for key, group in sorted(groups.items()):
            run.update(self._search_group(key, group, k, method))
            keys.update((q, key) for q in group)
        return run, keys

    def search(self, query: str, k: int = 10, *, method: str | None = None,
               partition: str | None = None, filter: Any = None, citations: bool | None = None,
               as_of: Any = None) -> list[Hit]:
        """The ``k`` best documents for one query.

        Parameters
        ----------
        query : str
            Free text.
        k : int
            Hits to return (1 to :data:`MAX_DEPTH`).
        method : {"bm25", "dense", "hybrid"}, optional
            Default: the first this searcher has (``bm25`` when it has a Lucene index).
        partition : str, optional
            For a partitioned index (Housing): the jurisdiction to search; on a pooled index
            (``legalir index --pooled``) a filter on the partition field, AND-ed with ``filter``.
        filter : dict or str, optional
            Metadata filter, BM25 only: ``{"state": ["california", "nevada"]}`` or
            ``"state=california,nevada"`` (see :mod:`legalir.legal.filters`), applied as Lucene FILTER
            clauses: ``k`` hits whenever ``k`` documents match.
        citations : bool, optional
            Rank the document that is an authority the query cites first, documents citing it
            next (:mod:`legalir.legal.citations`); default: on where the index has the field.
        as_of : str or datetime.date, optional
            A release (``"85"``), or a date (``"2022-09-01"``: the newest release dated on or before it):
            search the code as it stood then, with that release's documents and BM25 statistics
            (:meth:`at`); default: the release held now.

        Returns
        -------
        list of Hit
            Best first (trec_eval's order), with the document's text and metadata where the
            collection (or the index's stored document) is at hand.
        """
        check_query(query)
        return self.search_many([(query, partition)], k, method=method, filter=filter, citations=citations,
                                as_of=as_of)[0]

    def search_many(self, queries: Sequence[Any], k: int = 10, *, method: str | None = None,
                    filter: Any = None, citations: bool | None = None, as_of: Any = None) -> list[list[Hit]]:
        """:meth:`search` for several queries at once (one Java batch per partition): ``queries`` are
        strings or ``(query, partition)`` pairs; one list of hits per query, in order."""
        if as_of is not None:
            return self.at(as_of).search_many(queries, k, method=method, filter=filter, citations=citations)
        if isinstance(queries, (str, bytes)) or not isinstance(queries, Sequence):
            raise SearcherError(f"queries must be a list of strings or (query, partition) pairs, not "
                                f"{type(queries).__name__}")
        if not queries:
            raise SearcherError("queries is empty: give at least one query")
        by_partition: dict[Any, dict[str, Topic]] = {}
        for i, item in enumerate(queries):
            text, partition = (item, None) if isinstance(item, str) else \
                (tuple(item) if isinstance(item, (tuple, list)) and len(item) == 2 else (None, None))
            where = "query" if len(queries) == 1 else f"query {i}"
            check_query(text, where)
            checks.optional_text(f"the partition of {where}", partition)
            by_partition.setdefault(partition, {})[str(i)] = Topic(str(i), text)
        run: Run = {}
        keys: dict[str, str] = {}
        for partition, topics in by_partition.items():
            groups, k_checked, m = self._prepare(topics, k, method, partition, filter, citations)
            found, placed = self._run(groups, k_checked, m)
            run.update(found)
            keys.update(placed)
        # each group's run is ranked and cut already (the gate, fusion.hybrid, _dense_search): read it in order
        return [self._display.hits(run.get(str(i), {}), keys[str(i)]) for i in range(len(queries))]

    def batch_search(self, topics: Any, k: int = 1000, *, method: str | None = None,
                     partition: str | None = None, filter: Any = None,
                     citations: bool | None = None, as_of: Any = None) -> dict[str, dict[str, float]]:
        """A run: ``{qid: {docid: score}}`` of the ``k`` best documents of every topic.

        Parameters
        ----------
        topics : Benchmark, mapping or DataFrame
            ``{qid: text}``, ``{qid: Topic}``, a :class:`legalir.Benchmark` (its split's topics, with
            the fields a partitioned index routes by) or a DataFrame with ``qid`` and ``query`` (its
            other columns the topics' fields, as a topics file's other keys: a ``state`` column routes
            and reads citations as ``legalir search`` does).
        k : int
            Depth.
        method, partition, filter, citations, as_of
            As for :meth:`search`. On a pooled index each topic carrying the partition field
            (a Housing question's ``state``) is searched only among that partition's documents.

        Returns
        -------
        dict
            ``{qid: {docid: score}}``, each topic's documents in trec_eval's order; the form
            pytrec_eval, ir_measures and :func:`legalir.evaluate` read.
        """
        if as_of is not None:
            return self.at(as_of).batch_search(topics, k, method=method, partition=partition, filter=filter,
                                               citations=citations)
        found = as_topics(topics)
        groups, depth, how = self._prepare(found, k, method, partition, filter, citations)
        run, _ = self._run(groups, depth, how)
        return {q: run.get(q, {}) for q in found}

    def search_hits(self, topics: Mapping[str, Topic], k: int, *, method: str | None = None,
                    partition: str | None = None, filter: Any = None,
                    citations: bool | None = None, chunk: int = 256,
                    as_of: Any = None) -> Iterator[tuple[str, dict[str, float]]]:
        """:meth:`batch_search` as ``(qid, {docid: score})`` in sorted qid order, searched ``chunk`` topics
        at a time (what ``legalir search`` writes as it goes; memory stays one chunk's hits)."""
        if as_of is not None:
            yield from self.at(as_of).search_hits(topics, k, method=method, partition=partition, filter=filter,
                                                  citations=citations, chunk=chunk)
            return
        found = as_topics(topics)
        groups, depth, how = self._prepare(found, k, method, partition, filter, citations)
        if len(groups) == 1:
            (key, group), = groups.items()
            qids = sorted(group)
            for start in range(0, len(qids), chunk):
                part = {q: group[q] for q in qids[start:start + chunk]}
                run = self._search_group(key, part, depth, how)
                for q in sorted(part):
                    yield q, run.get(q, {})
            return
        run, _ = self._run(groups, depth, how)
        for q in sorted(run):
            yield q, run.pop(q)

    def retriever(self, *, owned: bool = True, **options: Any) -> BoundSearch:
        """This searcher with fixed search options (``method``, ``partition``, ``filter``, ``citations``), as
        the retriever protocol of :mod:`legalir.search.runner` (``search(topics, k)``, ``search_hits``,
        ``close``); ``owned``: its ``close`` closes this searcher. A ``method`` the indexes cannot serve is
        refused here, before any search (:class:`SearcherError`), as is an option :meth:`batch_search` does not
        take."""
        try:
            refuse_unknown("retriever", options, ("method", "partition", "filter", "citations", "as_of"))
        except SearcherError:
            if owned:
                self.close()
            raise
        if options.get("method") is not None:
            method = check_optional_str(options["method"], "method", f"one of {', '.join(METHODS)} or None")
            try:
                self._given.method(method)
            except MethodError as e:
                if owned:
                    self.close()
                raise SearcherError(str(e)) from None
        return BoundSearch(self, options, owned)

    # ---- documents (legalir.search.documents)
    def _stored(self, docid: str, key: str) -> str | None:
        """The JSON the Lucene index of partition ``key`` stores for ``docid`` (through the Java gate)."""
        return LUCENE.call(lambda: self._open_bm25(key).index.raw(docid))

    def _record(self, docid: str, key: str) -> dict | None:
        """The record shown for a hit (:meth:`legalir.search.documents.Display.record`)."""
        return self._display.record(docid, key)

    def doc(self, docid: str, partition: str | None = None, *, as_of: Any = None) -> dict | None:
        """The stored record ``{"id", "contents", ...}`` of ``docid``, or ``None`` when absent (or deleted by
        ``legalir index update``: an updated index's changed documents come from its version).

        ``docid`` may also be a citation as a lawyer writes it (``O.C.G.A. § 8-2-1``, ``GA Code 8-2-1``,
        ``§ 8-2-1`` in a code of one state): the document whose own citation it is, in the version held
        (:meth:`legalir.indexing.changes.Documents.resolve`: one ``legalir index update`` added included); the
        record's ``id`` says which. ``as_of``: the
        record as release ``as_of`` held it (:meth:`at`)."""
        if as_of is not None:
            return self.at(as_of).doc(docid, partition)
        self._check_open()
        if not isinstance(docid, str) or not docid:
            raise SearcherError(f"docid must be a non-empty string, not {docid!r}")
        return self._display.lookup(docid, key_of(partition))

    @property
    def documents(self) -> Documents:
        """The documents of the versions held (changes first, then the collection)."""
        return self._docs

    # ---- lifetime
    def close(self) -> None:
        """Release the Lucene readers and the index versions held (also done on leaving a ``with``
        block); idempotent. A closed searcher refuses to search."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            searchers, self._bm25, self._dense = list(self._bm25.values()), {}, {}
            past, self._past = list(self._past.values()), {}
        for p in past:
            p.close()
        for s in searchers:
            try:
                LUCENE.call(s.close)
            except Exception as e:  # pragma: no cover - a searcher that cannot close still lets the pins go
                _log.warning(f"closing {s.index_dir}: {e}")
        for pin in self._pins.values():
            pin.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        where = ", ".join(str(p) for p in (self.sparse, self.dense) if p is not None)
        params = f", k1={self.k1:g} b={self.b:g}" if self.k1 is not None else ""
        return f"Searcher({where}: {'/'.join(self.methods)}{params}{', closed' if self._closed else ''})"


class BoundSearch:
    """A :class:`Searcher` with fixed options, as a retriever (``search``, ``search_hits``, ``close``)."""

    def __init__(self, searcher: Searcher, options: Mapping[str, Any], owned: bool = True):
        self.searcher, self.options, self.owned = searcher, dict(options), owned

    def search(self, topics: Mapping[str, Topic], k: int) -> Run:
        return self.searcher.batch_search(dict(topics), k, **self.options)

    def search_hits(self, topics: Mapping[str, Topic], k: int) -> Iterator[tuple[str, list[str], list[float]]]:
        for q, docs in self.searcher.search_hits(dict(topics), k, **self.options):
            yield q, list(docs), list(docs.values())

    def close(self) -> None:
        if self.owned:
            self.searcher.close()
