"""The one way into a Lucene index: :class:`LuceneIndex`.

Every reader of a Lucene index goes through it: BM25 (+RM3) search
(:mod:`legalir.search.bm25`), candidate-pool scoring
(:mod:`legalir.search.pool`), document lookup for rerankers
(:mod:`legalir.search.rerank`) and the index builder's checks
(:mod:`legalir.indexing.sparse`). The folder is validated when it is opened,
so a user who points at the wrong folder gets a located error, never a Java
stack trace:

* a missing folder, a collection folder, a partitioned index folder (one
  index per sub-folder), a folder without Lucene segments;
* RM3 needs the document vectors that ``legalir index`` stores.

It drives the Java objects that Pyserini wraps (``IndexReaderUtils``,
``SimpleSearcher`` from Pyserini's Anserini jar) directly: importing
``pyserini.search.lucene`` pulls in torch and the encoders (~13 s per
command); results are identical.
"""
from __future__ import annotations

import json
import os
import threading
from array import array
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from legalir.base import jvm
from legalir.errors import LegalirError
from legalir.indexing.folders import partition_keys

#: the file every index built by legalir holds (what it was built from, document count)
META = "legalir-index.json"


class LuceneError(LegalirError, RuntimeError):
    pass


def check_folder(index_dir: str | os.PathLike) -> Path:
    """``index_dir`` if it holds one Lucene index, else a :class:`LuceneError` saying what it is instead."""

    p = Path(index_dir)
    if not p.exists():
        raise LuceneError(f"{p}: no such folder; build the index first (legalir index COLLECTION {p})")
    if not p.is_dir():
        raise LuceneError(f"{p}: a file, not an index folder; give the folder that `legalir index` wrote")
    if any(p.glob("segments_*")):
        return p
    if (p / "manifest.json").exists() and (p / "corpus").is_dir():
        raise LuceneError(f"{p}: a collection folder, not an index; index it first "
                          f"(legalir index {p} INDEX_DIR) and give INDEX_DIR")
    parts = partition_keys(p, META)
    if parts:
        raise LuceneError(f"{p}: holds one index per partition ({', '.join(parts[:5])}"
                          f"{' ...' if len(parts) > 5 else ''}); this command needs one index: give "
                          f"{p / parts[0]}, or use a command that routes topics to partitions (legalir search)")
    raise LuceneError(f"{p}: not a Lucene index (no segments file); build it with `legalir index`")


def _java(call, where: Path, what: str):
    """Run a Java call; a Java exception becomes a located :class:`LuceneError`."""
    try:
        return call()
    except Exception as e:  # jnius.JavaException
        if type(e).__name__ != "JavaException":
            raise
        cls = getattr(e, "classname", "") or "JavaException"
        detail = str(getattr(e, "innermessage", "") or e).splitlines()[0]
        raise LuceneError(f"{where}: {what} failed ({cls.rsplit('.', 1)[-1]}: {detail}); "
                          f"rebuild the index with `legalir index`") from None


_writer = None
_writer_lock = threading.Lock()


def _hits_writer():
    """A Jackson ``ObjectWriter`` (from the Anserini jar) printing ``Map<qid, ScoredDoc[]>`` as
    ``{"qid": [["docid", score], ...]}``: each ``ScoredDoc`` as an array of its ``docid`` and
    ``score`` fields, the stored Lucene document and internal docid left out. Built once."""
    global _writer
    with _writer_lock:
        if _writer is None:
            cls = jvm.autoclass("java.lang.Class")
            mapper = jvm.autoclass("com.fasterxml.jackson.databind.ObjectMapper")()
            # ["docid", score]: properties in name order, whatever order reflection lists the fields in
            mapper.configure(jvm.autoclass("com.fasterxml.jackson.databind.MapperFeature").SORT_PROPERTIES_ALPHABETICALLY,
                             True)
            fmt = jvm.autoclass("com.fasterxml.jackson.annotation.JsonFormat$Value")
            shape = jvm.autoclass("com.fasterxml.jackson.annotation.JsonFormat$Shape")
            ignore = jvm.autoclass("com.fasterxml.jackson.annotation.JsonIgnoreProperties$Value")
            hit = mapper.configOverride(cls.forName("io.anserini.search.ScoredDoc"))
            hit.setFormat(fmt.forShape(shape.ARRAY))
            hit.setIgnorals(ignore.forIgnoredProperties("lucene_document", "lucene_docid"))
            _writer = mapper.writer()
        return _writer


class _JavaBatch:
    """Searching many Lucene query objects at once over Java threads, with no Java of our own to compile.

    Anserini's ``batch_search`` takes query strings (or a ``QueryGenerator``, an abstract class that
    pyjnius cannot implement), so a query built here (:meth:`LuceneIndex.query`: filters, citation tiers,
    a partition's searcher) goes to Java as a ``Callable`` made from the JDK's own method handles:
    ``cascade.run(ScoredDocs.fromTopDocs(searcher.search(query, k, sort, true), searcher), context)``,
    Anserini's ``SimpleSearcher.search`` step for step (top ``k`` by score, ties by docid, its score-tie
    adjustment), bound to one query's arguments (``MethodHandles.insertArguments``), wrapped as a
    ``Callable`` (``MethodHandleProxies.asInterfaceInstance``) and submitted to a ``ForkJoinPool`` (daemon
    threads) of the batch's thread count, all inside one composed handle: the proxy's class is a hidden class,
    which pyjnius cannot look up, so the proxy never crosses the bridge. Each search starts as soon as its
    query is built, so Java searches while Python builds the next. Java threads call no Python, and every call
    from Python still comes from the one thread that holds the gate (:data:`legalir.search.gate.LUCENE`). The
    hits come back as one JSON string (``{qid: {"docids": [...], "scores": [...]}}``), as
    :meth:`LuceneIndex._batch`'s. Built once per process (:meth:`get`).
    """

    _one: _JavaBatch | None = None

    @classmethod
    def get(cls) -> _JavaBatch:
        with _writer_lock:
            if cls._one is None:
                cls._one = cls()
            return cls._one

    def __init__(self) -> None:
        A, forname = jvm.autoclass, jvm.autoclass("java.lang.Class").forName
        handles, types = A("java.lang.invoke.MethodHandles"), A("java.lang.invoke.MethodType")
        lookup = handles.publicLookup()
        integer, boolean = A("java.lang.Integer"), A("java.lang.Boolean")
        c = {n: forname(n) for n in (
            "org.apache.lucene.search.IndexSearcher", "org.apache.lucene.search.Query",
            "org.apache.lucene.search.Sort", "org.apache.lucene.search.TopFieldDocs",
            "org.apache.lucene.search.TopDocs", "io.anserini.search.ScoredDocs", "io.anserini.rerank.RerankerContext",
            "io.anserini.rerank.RerankerCascade", "java.lang.invoke.MethodHandle", "java.lang.Object",
            "java.lang.Class", "java.util.List", "java.util.concurrent.Callable", "java.lang.invoke.MethodHandles",
            "java.lang.invoke.MethodHandleProxies", "[Ljava.lang.Object;")}
        searcher_c, query_c, docs_c = (c["org.apache.lucene.search.IndexSearcher"], c["org.apache.lucene.search.Query"],
                                       c["io.anserini.search.ScoredDocs"])
        handle_c, object_c = c["java.lang.invoke.MethodHandle"], c["java.lang.Object"]
        # (searcher, query, k) -> searcher.search(query, k, BREAK_SCORE_TIES_BY_DOCID, true), as SimpleSearcher._search
        field, kind = A("org.apache.lucene.search.SortField"), A("org.apache.lucene.search.SortField$Type")
        sort = A("org.apache.lucene.search.Sort")(field.FIELD_SCORE, field("id", kind.STRING_VAL))
        search = lookup.findVirtual(searcher_c, "search", types.methodType(
            c["org.apache.lucene.search.TopFieldDocs"], [query_c, integer.TYPE, c["org.apache.lucene.search.Sort"],
                                                         boolean.TYPE]))
        search = handles.insertArguments(search, 3, sort, boolean(True))
        search = search.asType(types.methodType(c["org.apache.lucene.search.TopDocs"], [searcher_c, query_c,
                                                                                        integer.TYPE]))
        # (searcher, query, k) -> ScoredDocs.fromTopDocs(that, searcher)
        scored = lookup.findStatic(docs_c, "fromTopDocs", types.methodType(
            docs_c, [c["org.apache.lucene.search.TopDocs"], searcher_c]))
        scored = handles.permuteArguments(handles.collectArguments(scored, 0, search),
                                          types.methodType(docs_c, [searcher_c, query_c, integer.TYPE]), 0, 1, 2, 0)
        # (searcher, query, k, context) -> cascade.run(that, context): the score-tie adjustment
        self.cascade = A("io.anserini.rerank.RerankerCascade")()
        self.cascade.add(A("io.anserini.rerank.lib.ScoreTiesAdjusterReranker")())
        run = lookup.findVirtual(c["io.anserini.rerank.RerankerCascade"], "run", types.methodType(
            docs_c, [docs_c, c["io.anserini.rerank.RerankerContext"]])).bindTo(self.cascade)
        one = handles.collectArguments(run, 0, scored)
        # (list, pool, searcher, query, k, context) -> list.add(pool.submit(Callable of `one` with those four
        # arguments bound)): the search starts while Python builds the next query
        objects, callable_c = c["[Ljava.lang.Object;"], c["java.util.concurrent.Callable"]
        pool_c = forname("java.util.concurrent.ForkJoinPool")
        bind = lookup.findStatic(c["java.lang.invoke.MethodHandles"], "insertArguments", types.methodType(
            handle_c, [handle_c, integer.TYPE, objects]))
        bind = handles.insertArguments(bind, 0, one, integer(0)).asCollector(objects, 4)
        proxy = lookup.findStatic(c["java.lang.invoke.MethodHandleProxies"], "asInterfaceInstance", types.methodType(
            object_c, [c["java.lang.Class"], handle_c])).bindTo(callable_c)
        proxy = proxy.asType(types.methodType(callable_c, [handle_c]))
        submit = lookup.findVirtual(pool_c, "submit", types.methodType(forname("java.util.concurrent.ForkJoinTask"),
                                                                       [callable_c]))
        submit = handles.collectArguments(submit, 1, handles.filterReturnValue(bind, proxy))
        add = lookup.findVirtual(c["java.util.List"], "add", types.methodType(boolean.TYPE, [object_c]))
        self._add = handles.collectArguments(add, 1, submit.asType(submit.type().changeReturnType(object_c)))
        self._integer = integer
        self._args = A("io.anserini.search.SearchCollection$Args")()  # defaults, as SimpleSearcher's
        self._context = A("io.anserini.rerank.RerankerContext")
        self._list, self._map = A("java.util.ArrayList"), A("java.util.HashMap")
        self._pools: dict[int, object] = {}
        mapper = A("com.fasterxml.jackson.databind.ObjectMapper")()
        ignore = A("com.fasterxml.jackson.annotation.JsonIgnoreProperties$Value")
        mapper.configOverride(docs_c).setIgnorals(ignore.forIgnoredProperties("lucene_documents", "lucene_docids"))
        self._writer = mapper.writer()
        # what LuceneIndex.query builds queries with
        self.analyze = A("io.anserini.analysis.AnalyzerUtils").analyze
        self.bow = A("io.anserini.search.query.BagOfWordsQueryGenerator")()
        self.Builder = A("org.apache.lucene.search.BooleanQuery$Builder")
        occur = A("org.apache.lucene.search.BooleanClause$Occur")
        self.SHOULD, self.MUST, self.FILTER = occur.SHOULD, occur.MUST, occur.FILTER
        self.Term, self.TermQuery = A("org.apache.lucene.index.Term"), A("org.apache.lucene.search.TermQuery")
        self.Const, self.Boost = A("org.apache.lucene.search.ConstantScoreQuery"), A("org.apache.lucene.search.BoostQuery")
        self.DisMax = A("org.apache.lucene.search.DisjunctionMaxQuery")
        self.Range = A("org.apache.lucene.search.TermRangeQuery")

    def jobs(self, threads: int):
        """A new batch: ``(list of its searches started, the pool of ``threads`` Java threads they run on)``."""
        threads = max(1, int(threads))
        pool = self._pools.get(threads)
        if pool is None:
            pool = self._pools[threads] = jvm.autoclass("java.util.concurrent.ForkJoinPool")(threads)
        return self._list(), pool

    def add(self, jobs, searcher, query, k: int, text: str, tokens) -> None:
        """Start the search of ``query`` over ``searcher`` for its top ``k`` in the batch ``jobs``."""
        context = self._context(searcher, None, query, None, text, tokens, None, self._args)
        self._add.invokeWithArguments(jobs[0], jobs[1], searcher, query, self._integer(int(k)), context)

    def run(self, jobs, qids: Sequence[str]) -> dict[str, dict]:
        """The hits of the batch ``jobs`` (those of ``qids``, in the order they were added), once every search
        has ended: ``{qid: {"docids", "scores"}}``. A search's Java exception is raised here."""
        out = self._map()
        for q, f in zip(qids, jobs[0].toArray()):
            out.put(q, f.get())
        return json.loads(self._writer.writeValueAsString(out))


class LuceneIndex:
    """One Lucene index opened for reading, validated at open.

    ``needs_docvectors``: refuse an index without stored document vectors
    (RM3 reads them). Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, index_dir: str | os.PathLike, *, needs_docvectors: bool = False):
        self.path = check_folder(index_dir)
        self._utils = jvm.autoclass("io.anserini.index.IndexReaderUtils")
        # resolved once: the reader and the searcher opened later read the same version of a versioned index
        # (a link `legalir index` or `legalir index update` may switch meanwhile); absolute, because the JVM
        # resolves relative paths against the directory it started in
        self.real = os.path.realpath(self.path)
        self.reader = _java(lambda: self._utils.getReader(self.real), self.path, "opening the index")
        self._searcher = None
        self._segments: dict | None = None
        self._partition_searchers: dict = {}
        self._deleted = None  # LiveStatsSearcher$Deleted of self.reader, read once
        self._filter_clauses: dict = {}
        self._all_match: dict = {}
        self._analyzer = None
        self._lock = threading.RLock()  # deleted_stats is reached under it (_partition_searcher)
        if needs_docvectors and not self.has_docvectors():
            self.close()
            raise LuceneError(f"{self.path}: the index stores no document vectors, which RM3 needs; "
                              f"rebuild it with `legalir index` (it stores them)")

    # ---- what the index holds
    def num_docs(self) -> int:
        return int(self.reader.numDocs())

    def has_docvectors(self) -> bool:
        infos = jvm.autoclass("org.apache.lucene.index.FieldInfos").getMergedFieldInfos(self.reader)
        return bool(infos.hasVectors())

    def has_doc(self, docid: str) -> bool:
        return int(self._utils.convertDocidToLuceneDocid(self.reader, docid)) >= 0

    def raw(self, docid: str) -> str | None:
        """The stored raw JSON of ``docid`` (``None`` when absent)."""
        raw = self._utils.documentRaw(self.reader, docid)
        return None if raw is None else str(raw)

    def _leaves(self) -> list[tuple[int, str, object]]:
        """``(doc base, segment name, SegmentReader)`` of each segment."""
        cast = jvm.cast
        out = []
        for c in self.reader.leaves():
            leaf = cast("org.apache.lucene.index.SegmentReader", c.reader())
            out.append((int(c.docBase), str(leaf.getSegmentName()), leaf))
        return out

    def segment_of(self, docids) -> dict[str, str]:
        """``{docid: name of the segment holding it}`` of those ``docids`` the index holds."""
        leaves = self._leaves()
        out = {}
        for d in docids:
            n = int(self._utils.convertDocidToLuceneDocid(self.reader, d))
            if n >= 0:
                out[d] = max((base, name) for base, name, _ in leaves if base <= n)[1]
        return out

    def docids(self) -> list[str]:
        """The ids of every live document, sorted (read from the ``id`` terms of each segment; the postings
        are read only in a segment holding deleted documents)."""
        out: list[str] = []
        for _, _, leaf in self._leaves():
            terms = leaf.terms("id")
            if terms is None:
                continue
            live = leaf.getLiveDocs()
            it = terms.iterator()
            postings = None
            while True:
                term = it.next()
                if term is None:
                    break
                if live is not None:  # a deleted document keeps its term until its segment is merged
                    postings = it.postings(postings, 0)
                    doc = postings.nextDoc()
                    if not live.get(doc):
                        continue
                out.append(str(term.utf8ToString()))
        return sorted(out)

    def live_records(self, segments) -> list[dict]:
        """The stored raw records (parsed JSON) of the live documents of the named ``segments``."""
        out = []
        for _, name, leaf in self._leaves():
            if name not in segments:
                continue
            live, stored = leaf.getLiveDocs(), leaf.storedFields()
            for i in range(int(leaf.maxDoc())):
                if live is None or live.get(i):
                    out.append(json.loads(str(stored.document(i).get("raw"))))
        return out

    def shared_term(self, field: str, prefix: str, exclude: Sequence[str] = ()) -> str | None:
        """The one term of ``field`` beginning with ``prefix`` that every live document holds, when no live
        document holds another such term (``exclude``: prefixes of terms that are not such terms); else
        ``None``. What :class:`legalir.search.bm25.BM25` reads an index's own jurisdiction from (every document
        of a code of one state holds ``state_ga`` in its ``filters`` field)."""
        terms = jvm.autoclass("org.apache.lucene.index.MultiTerms").getTerms(self.reader, field)
        total = self.num_docs()
        if terms is None or total == 0:
            return None
        new_term = jvm.autoclass("org.apache.lucene.index.Term")
        query = jvm.autoclass("org.apache.lucene.search.TermQuery")
        searcher = jvm.autoclass("org.apache.lucene.search.IndexSearcher")(
            jvm.cast("org.apache.lucene.index.IndexReader", self.reader))
        it = terms.iterator()
        if str(it.seekCeil(new_term(field, prefix).bytes()).name()) == "END":
            return None
        found = None
        term = it.term()
        while term is not None:
            text = str(term.utf8ToString())
            if not text.startswith(prefix):
                break
            # a deleted document keeps its terms until its segment is merged: count the live ones
            if not text.startswith(tuple(exclude)) and int(searcher.count(query(new_term(field, text)))) > 0:
                if found is not None:
                    return None
                found = text
            term = it.next()
        if found is None or int(searcher.count(query(new_term(field, found)))) != total:
            return None
        return found

    # ---- scoring
    def score(self, docid: str, query: str, k1: float, b: float) -> float:
        """BM25 score of one document for ``query`` (term statistics of the whole index)."""
        sim = jvm.autoclass("org.apache.lucene.search.similarities.BM25Similarity")(float(k1), float(b))
        if self.deleted_stats() is None:
            return float(self._utils.computeQueryDocumentScoreWithSimilarity(self.reader, docid, query, sim))
        # what Anserini's computeQueryDocumentScoreWithSimilarity does, through a searcher of live statistics:
        # the bag of words AND a constant 1 for the document, minus 1
        searcher = self.index_searcher()
        searcher.setSimilarity(sim)
        j = _JavaBatch.get()
        one = j.Const(j.TermQuery(j.Term("id", docid)))
        bow = j.bow.buildQuery("contents", self.analyzer(), query)  # built before the builder's add (pyjnius)
        q = j.Builder()
        q.add(one, j.MUST)
        q.add(bow, j.MUST)
        hits = _java(lambda: searcher.search(q.build(), 1), self.path, "scoring").scoreDocs
        return float(hits[0].score) - 1.0 if len(hits) else 0.0

    def search(self, qids: Sequence[str], queries: Sequence[str], k: int, *, k1: float, b: float,
               rm3: tuple[int, int, float] | None = None, threads: int = 1) -> dict[str, dict[str, float]]:
        """Batch BM25 (+RM3 ``(fb_terms, fb_docs, original_query_weight)``) search of one batch of queries."""
        return {q: dict(zip(docids, scores))
                for q, docids, scores in self.search_hits(qids, queries, k, k1=k1, b=b, rm3=rm3, threads=threads)}

    def search_hits(self, qids: Sequence[str], queries: Sequence[str], k: int, *, k1: float, b: float,
                    rm3: tuple[int, int, float] | None = None, threads: int = 1,
                    filters: Mapping[str, list] | None = None,
                    citations: Mapping[str, list[tuple[str, int]]] | None = None,
                    partitions: Mapping[str, Sequence[str]] | None = None) -> Iterator[tuple[str, list[str], array]]:
        """:meth:`search`'s hits as ``(qid, docids, scores)`` per query, in the order of ``qids``.

        One Anserini ``batch_search`` (Java threads) for the whole batch; its
        hits cross the Java bridge as one JSON string (``[[docid, score], ...]``
        per query, written by the jar's own Jackson) instead of one pyjnius
        proxy and two attribute calls per hit, which took most of the Python
        side's time. Scores are Java floats printed exactly (at most 9
        significant digits, read back into ``array('f')``): the same float32
        values as the hits' ``score`` fields.

        ``filters`` (``{qid: clauses}``, :func:`legalir.legal.filters.clauses`) and ``citations``
        (``{qid: [(token, tier), ...]}``, :func:`legalir.legal.citations.query_clauses`) make the
        topics that have them go through :meth:`_structured`: each becomes one Lucene query object, and
        those of the batch are searched together over ``threads`` Java threads (:class:`_JavaBatch`); the
        others keep Anserini's batch. ``partitions`` (``{qid: partition keys}``, on a pooled index built by
        ``legalir index --pooled``) searches those topics over their partitions' segments only, with
        those segments' BM25 statistics: the scores of a per-partition index, exactly.
        """
        filters, citations, partitions = filters or {}, citations or {}, partitions or {}
        special = [q for q in qids if filters.get(q) or citations.get(q)]
        if special and rm3 is not None:
            raise LuceneError(f"{self.path}: RM3 cannot be combined with filters or citation clauses "
                              f"(topic {special[0]!r}); leave out --rm3, or --filter / use --citations off")
        if not special:
            yield from self._batch(qids, queries, k, k1=k1, b=b, rm3=rm3, threads=threads)
            return
        text = dict(zip(qids, queries))
        plain = [q for q in qids if not (filters.get(q) or citations.get(q))]
        found = {q: (d, sc) for q, d, sc in self._batch(plain, [text[q] for q in plain], k, k1=k1, b=b,
                                                         rm3=rm3, threads=threads)} if plain else {}
        found.update(self._structured({q: text[q] for q in special}, k, filters, citations, partitions, k1, b,
                                      threads))
        for q in qids:
            yield (q, *found.pop(q))

    # ---- queries with FILTER clauses (metadata) and citation clauses
    def partition_segments(self) -> dict[str, list[str]]:
        """``{partition key: segment names}`` of a pooled index (``{}`` for any other)."""
        if self._segments is None:
            try:
                meta = json.loads((Path(self.real) / META).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                meta = {}
            self._segments = meta.get("segments") or {}
        return self._segments

    def _partition_searcher(self, keys: Sequence[str], k1: float, b: float):
        """An ``IndexSearcher`` over the segments of partitions ``keys`` only (their own BM25 statistics);
        no ``keys``: over the whole index."""
        key = tuple(sorted(set(keys)))
        with self._lock:
            found = self._partition_searchers.get(key)
            if found is None:
                found = self._partition_searchers[key] = self._open_partitions(key)
        searcher = found[0]
        searcher.setSimilarity(jvm.autoclass("org.apache.lucene.search.similarities.BM25Similarity")(float(k1), float(b)))
        return searcher, int(found[1].numDocs())

    def deleted_stats(self, reader=None):
        """What the deleted documents still in the segments of ``reader`` (default: the index's) add to its BM25
        statistics (``io.legalir.LiveStatsSearcher$Deleted``, read once per reader from the postings of the
        segments holding deletions), or ``None`` when it holds no deleted document.

        ``legalir index update`` leaves a replaced or deleted document in its segment, marked deleted, so that
        the versions of an index share their segments (hard links); Lucene counts such a document in the term
        statistics until the segment is rewritten. A searcher that subtracts it scores as a fresh index of the
        live documents alone."""
        mine = reader is None
        reader = self.reader if mine else reader
        if not reader.hasDeletions():
            return None
        with self._lock:
            if mine and self._deleted is not None:
                return self._deleted
            cast = jvm.cast("org.apache.lucene.index.IndexReader", reader)
            found = _java(lambda: jvm.autoclass("io.legalir.LiveStatsSearcher$Deleted")(cast), self.path,
                          "reading the statistics of deleted documents")
            if mine:  # a partition searcher's reader is read once too: its searcher is kept
                self._deleted = found
        return found

    def index_searcher(self, reader=None):
        """An ``IndexSearcher`` of ``reader`` (default: the index's) that reads a hit's id alone, from the id's
        doc values (``io.legalir.HitSearcher``: Anserini decompresses every hit's stored document just for its id) and
        whose BM25 statistics count its live documents only (``LiveStatsSearcher``, where it holds deleted
        documents: :meth:`deleted_stats`)."""
        reader = self.reader if reader is None else reader
        cast = jvm.cast("org.apache.lucene.index.IndexReader", reader)
        deleted = self.deleted_stats(None if reader is self.reader else reader)
        if deleted is None:
            return jvm.autoclass("io.legalir.HitSearcher")(cast)
        return jvm.autoclass("io.legalir.LiveStatsSearcher")(cast, deleted)

    def _open_partitions(self, key: tuple[str, ...]):
        if not key:  # the whole index
            reader = jvm.cast("org.apache.lucene.index.IndexReader", self.reader)
            return self.index_searcher(), reader
        wanted = {s for p in key for s in self.partition_segments()[p]}
        cast = jvm.cast
        leaves = [c.reader() for c in self.reader.leaves()
                  if str(cast("org.apache.lucene.index.SegmentReader", c.reader()).getSegmentName()) in wanted]
        multi = jvm.autoclass("org.apache.lucene.index.MultiReader")(leaves, False)
        return self.index_searcher(multi), multi

    def _structured(self, texts: Mapping[str, str], k: int, filters: Mapping[str, list],
                    citations: Mapping[str, list[tuple[str, int]]], partitions: Mapping[str, Sequence[str]],
                    k1: float, b: float, threads: int) -> dict[str, tuple[list[str], array]]:
        """``{qid: (docids, scores)}`` of queries with filter or citation clauses (:meth:`query`), searched
        together over ``threads`` Java threads (:class:`_JavaBatch`), each over the searcher of its
        partitions (:meth:`_partition_searcher`) as Anserini's ``SimpleSearcher.search`` does (top ``k`` by
        score, ties by docid, its score-tie adjustment): what the same queries give one at a time, exactly
        (``tests/test_filter_batch.py``)."""
        java = _JavaBatch.get()
        jobs = java.jobs(threads)
        order = []
        searchers: dict[tuple[str, ...], tuple] = {}
        # longest queries first (as _batch): the batch ends on short ones and no thread idles long at the end
        for q in sorted(texts, key=lambda q: -len(texts[q])):
            key = tuple(sorted(set(partitions.get(q) or ())))
            if key not in searchers:  # the similarity is set before any thread searches
                searchers[key] = self._partition_searcher(key, k1, b)
            sub, n_docs = searchers[key]
            # a clause every document searched matches filters nothing: left out, as Lucene's rewrite leaves out
            # a clause that cannot change the hits (a state's filter over that state's own segments; the scores
            # are the same floats, tests/test_filter_batch.py), it costs a conjunction per query
            flt = [c for c in filters.get(q) or [] if not self._matches_all(key, sub, n_docs, c)]
            query, tokens = self.query(texts[q], flt, citations.get(q) or [], n_docs)
            java.add(jobs, sub, query, k, texts[q], tokens)
            order.append(q)
        hits = _java(lambda: java.run(jobs, order), self.path, "search")
        return {q: (pairs["docids"], array("f", pairs["scores"])) for q, pairs in hits.items()}

    def query(self, text: str, filter_clauses: list, cite: list[tuple[str, int]], n_docs: int | None = None):
        """One BM25 query as a Lucene ``BooleanQuery`` and the query's analysed tokens (a Java list):
        ``MUST(bag of words OR citation tiers)`` plus one ``FILTER`` per filter clause (its values OR-ed;
        clauses AND-ed, a repeated field included; a range a ``TermRangeQuery`` over the order-preserving
        tokens of :mod:`legalir.legal.filters`). Filter clauses never score; a document matching citation
        tokens gets ``t * W`` added for the highest tier ``t`` it matches (one ``DisjunctionMaxQuery``: the
        tiers are not summed, so a document citing five of a query's sections, tier 1 each, never outranks a
        section the query cites, tier 3), ``W`` larger than any bag-of-words score the query can reach (its
        token count times the largest BM25 idf, ``log(1 + N)``, ``N`` = ``n_docs``, else the index's
        documents), so tiers order first and BM25 orders within a tier."""
        import math

        j = _JavaBatch.get()
        analyzer = self.analyzer()
        tokens = j.analyze(analyzer, text)
        ranked = j.Builder()
        ranked.add(j.bow.buildQuery("contents", analyzer, text), j.SHOULD)
        if cite:
            from legalir.legal.citations import FIELD

            weight = (int(tokens.size()) + 1) * math.log(1 + max(1, n_docs or self.num_docs())) + 1
            tiers = jvm.autoclass("java.util.ArrayList")()
            for tok, tier in cite:
                for t in j.analyze(analyzer, tok).toArray():
                    tiers.add(j.Boost(j.Const(j.TermQuery(j.Term(FIELD, t))), float(tier * weight)))
            if tiers.size():
                ranked.add(j.DisMax(tiers, 0.0), j.SHOULD)
        outer = j.Builder()
        outer.add(ranked.build(), j.MUST)
        for alts in filter_clauses:
            # built before outer.add is looked up: pyjnius binds a method object to its receiver when it is
            # looked up and shares it between instances, so `outer.add(x(), ...)` where x() calls `either.add`
            # the first time a clause is built would add to `either` (pyjnius issue #287)
            clause = self._filter_clause(tuple(map(tuple, alts)))
            outer.add(clause, j.FILTER)
        return outer.build(), tokens

    def _filter_clause(self, alts: tuple[tuple[str, ...], ...]):
        """One filter clause's Lucene query, its alternatives OR-ed (built once per index: a filter repeats
        across topics, a state's on every question of that state)."""
        found = self._filter_clauses.get(alts)
        if found is not None:
            return found
        from legalir.legal.filters import FIELD as FF

        j = _JavaBatch.get()
        analyzer = self.analyzer()
        either = j.Builder()
        for alt in alts:
            if alt[0] == "term":
                got = j.analyze(analyzer, alt[1]).toArray()
                either.add(j.TermQuery(j.Term(FF, got[0] if len(got) == 1 else alt[1])), j.SHOULD)
            else:
                # FIELD__DIGITS (legalir.legal.filters.encode): the analyzer leaves such tokens as they are
                either.add(j.Range.newStringRange(FF, alt[1], alt[2], True, True), j.SHOULD)
        found = self._filter_clauses[alts] = either.build()
        return found

    def _matches_all(self, key: tuple[str, ...], searcher, n_docs: int, alts: list) -> bool:
        """Whether every live document of the partitions ``key`` (``searcher``, ``n_docs`` of them) matches the
        filter clause ``alts`` (counted once per index)."""
        alts_key = tuple(map(tuple, alts))
        found = self._all_match.get((key, alts_key))
        if found is None:
            clause = self._filter_clause(alts_key)
            found = self._all_match[(key, alts_key)] = int(searcher.count(clause)) == n_docs
        return found

    def terms(self, text: str) -> list[str]:
        """The terms the index's analyzer makes of ``text``, in order: what a query or a document of this index
        is matched by (Anserini's default analyzer: lowercased, English stop words dropped, Porter-stemmed).

        Parameters
        ----------
        text : str
            Any text.

        Returns
        -------
        list of str
            Its terms, repeated as often as they occur.
        """
        return [str(t) for t in _JavaBatch.get().analyze(self.analyzer(), text).toArray()]

    def analyzer(self):
        """The analyzer of the index's searcher (Anserini's default: what ``legalir index`` indexed with)."""
        if self._analyzer is None:
            self._analyzer = self.searcher().get_analyzer()
        return self._analyzer

    def _batch(self, qids: Sequence[str], queries: Sequence[str], k: int, *, k1: float, b: float,
               rm3: tuple[int, int, float] | None, threads: int) -> Iterator[tuple[str, list[str], array]]:
        s = self._bm25_searcher(k1, b)
        if rm3 is not None:
            s.set_rm3(int(rm3[0]), int(rm3[1]), float(rm3[2]))
        else:
            s.unset_rm3()
        jlist = jvm.autoclass("java.util.ArrayList")
        jq, jt = jlist(), jlist()
        # longest queries first: the Java threads take them in this order, so the batch ends on short
        # ones and no thread idles long waiting for the last (results do not depend on the order)
        for q, t in sorted(zip(qids, queries), key=lambda qt: -len(qt[1])):
            jq.add(q)
            jt.add(t)
        results = _java(lambda: s.batch_search(jt, jq, int(k), int(threads)), self.path, "search")
        text = _hits_writer().writeValueAsString(results)
        del results
        hits = json.loads(text)
        del text
        for q in qids:
            pairs = hits.pop(q, ())
            yield q, [p[0] for p in pairs], array("f", [p[1] for p in pairs])

    def _bm25_searcher(self, k1: float, b: float):
        """Anserini's ``SimpleSearcher`` set to BM25 ``k1``, ``b``, searching through the searcher
        :meth:`index_searcher` gives: hits read with their id alone, statistics of the live documents."""
        s = self.searcher()
        s.set_bm25(float(k1), float(b))  # makes its IndexSearcher anew
        deleted = self.deleted_stats()
        _java(lambda: jvm.autoclass("io.legalir.HitSearcher").install(s, deleted), self.path, "opening a searcher")
        return s

    def searcher(self):
        if self._searcher is None:
            self._searcher = _java(lambda: jvm.autoclass("io.anserini.search.SimpleSearcher")(self.real),
                                   self.path, "opening a searcher")
        return self._searcher

    # ---- lifetime
    def close(self) -> None:
        for key, (_, multi) in self._partition_searchers.items():
            if key:  # () is the index's own reader, closed below
                multi.close()
        self._partition_searchers = {}
        self._filter_clauses, self._all_match, self._analyzer = {}, {}, None
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
        if self.reader is not None:
            self.reader.close()
            self.reader = None

    def __enter__(self) -> LuceneIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LuceneWriter:
    """The one way legalir changes a Lucene index in place (Anserini's ``IndexCollection`` builds them):
    a Lucene ``IndexWriter`` on a folder, for the pooled build (indexes added as segments, unmerged) and for
    ``legalir index update`` (documents deleted and added, touched segments rewritten).

    Parameters
    ----------
    folder : str or PathLike
        The index folder (created empty when it holds no index yet).
    merge : bool
        ``True``: a ``TieredMergePolicy`` whose :meth:`expunge_deletes` rewrites every segment holding more
        than ``deletes_pct_allowed`` % deleted documents (0: none left anywhere), and which merges segments
        on its own only where deletions pass that share; ``False``: no merge ever (each added index stays
        its own segments: the pooled index's per-partition map).
    deletes_pct_allowed : float
        The share of deleted documents a segment may keep (``merge=True``). Searches count live documents
        only either way (:meth:`LuceneIndex.index_searcher`).

    Merges run in the calling thread (``SerialMergeScheduler``): the caller waits for them anyway, and
    ``ConcurrentMergeScheduler``'s threads made a forced merge of a few hundred documents take 0.1 s.
    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, folder: str | os.PathLike, *, merge: bool, deletes_pct_allowed: float = 0.0,
                 index_arguments: Sequence[str] | None = None):
        self.path = Path(folder)
        self._directory = self._open(self.path)
        self._arguments = list(index_arguments) if index_arguments is not None else None
        if self._arguments is not None:  # analyzed and scored as a build (IndexCollection with these arguments)
            cfg = _java(lambda: jvm.autoclass("io.legalir.IndexUpdate").config(self._arguments), self.path,
                        "configuring the index writer")
        else:
            cfg = jvm.autoclass("org.apache.lucene.index.IndexWriterConfig")()
        if merge:
            policy = jvm.autoclass("org.apache.lucene.index.TieredMergePolicy")()
            policy.setForceMergeDeletesPctAllowed(float(deletes_pct_allowed))
            if deletes_pct_allowed:
                # segments are merged for their deletions only: an update adds one small segment, shared after
                policy.setSegmentsPerTier(1e9)
                policy.setDeletesPctAllowed(max(20.0, min(50.0, float(deletes_pct_allowed))))
        else:
            policy = jvm.autoclass("org.apache.lucene.index.NoMergePolicy").INSTANCE
        cfg.setMergePolicy(policy)
        cfg.setMergeScheduler(jvm.autoclass("org.apache.lucene.index.SerialMergeScheduler")())
        self.writer = _java(lambda: jvm.autoclass("org.apache.lucene.index.IndexWriter")(self._directory, cfg),
                            self.path, "opening the index for writing")

    @staticmethod
    def _open(folder: Path):
        # absolute: the JVM resolves relative paths against the directory it started in
        return jvm.autoclass("org.apache.lucene.store.FSDirectory").open(
            jvm.autoclass("java.io.File")(os.path.abspath(folder)).toPath())

    def delete(self, docids) -> None:
        """Delete the documents of these ids (applied to the segments there now, not to those added later)."""
        term, query = jvm.autoclass("org.apache.lucene.index.Term"), jvm.autoclass("org.apache.lucene.search.TermQuery")
        queries = [query(term("id", d)) for d in sorted(docids)]  # pyjnius picks the Query... overload, not Term...
        for i in range(0, len(queries), 1024):
            self.writer.deleteDocuments(*queries[i:i + 1024])

    def add_index(self, folder: str | os.PathLike) -> None:
        """Add the index in ``folder`` as it is (its segments copied, not re-analysed)."""
        src = self._open(Path(folder))
        try:
            _java(lambda: self.writer.addIndexes(src), self.path, "adding an index")
        finally:
            src.close()

    def add_documents(self) -> int:
        """Index the JSON documents of the ``-input`` of the writer's ``index_arguments`` into it, exactly as
        ``legalir index`` (Anserini's IndexCollection) indexes them, in this thread (``io.legalir.IndexUpdate``);
        returns how many."""
        if self._arguments is None:
            raise LuceneError(f"{self.path}: this writer was opened without index_arguments, so it cannot index "
                              f"documents as a build does")
        adder = jvm.autoclass("io.legalir.IndexUpdate")
        return int(_java(lambda: adder.add(self.writer, self._arguments), self.path, "indexing documents"))

    def expunge_deletes(self) -> None:
        """Rewrite every segment holding more deleted documents than allowed (``merge=True``)."""
        self.writer.forceMergeDeletes(True)

    def commit(self) -> None:
        self.writer.commit()

    def segments(self) -> list[str]:
        """Names of the segments of the last commit."""
        infos = jvm.autoclass("org.apache.lucene.index.SegmentInfos").readLatestCommit(self._directory)
        return sorted(str(sci.info.name) for sci in infos.asList())

    def num_docs(self) -> int:
        """Live documents, the uncommitted changes included."""
        return int(self.writer.getDocStats().numDocs)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self._directory.close()
            self.writer = None

    def __enter__(self) -> LuceneWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def live_ids(index_dir: str | os.PathLike, docids: Sequence[str]) -> set[str]:
    """Those of ``docids`` that are live documents of the index at ``index_dir`` (one version folder), read with
    Lucene's classes alone (``io.legalir.IndexUpdate.live``): what ``legalir index update`` asks before it writes,
    without the searcher :class:`LuceneIndex` opens."""
    folder = check_folder(index_dir)
    ids = list(docids)
    directory = LuceneWriter._open(folder)
    try:
        reader = _java(lambda: jvm.autoclass("org.apache.lucene.index.DirectoryReader").open(directory), folder,
                       "opening the index")
        try:
            live = jvm.autoclass("io.legalir.IndexUpdate").live(reader, ids) if ids else []
        finally:
            reader.close()
    finally:
        directory.close()
    return {d for d, ok in zip(ids, live) if ok}


def num_docs(index_dir: str | os.PathLike) -> int:
    """Documents in the index at ``index_dir``."""
    with LuceneIndex(index_dir) as idx:
        return idx.num_docs()


def _stored(index_dir: str | os.PathLike, docids: Sequence[str] | set[str]) -> Iterator[tuple[str, str, Any]]:
    """``(id, stored raw text, its JSON or None)`` of each of ``docids`` found in the index, in id order."""
    with LuceneIndex(index_dir) as idx:
        for d in sorted(docids):
            raw = idx.raw(d)
            if raw is None:
                continue
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError:
                rec = None
            yield d, raw, rec


def texts(index_dir: str | os.PathLike, docids: Sequence[str] | set[str], field: str = "contents") -> Mapping[str, str]:
    """Stored texts (``field`` of the raw JSON, else the raw text) of ``docids`` found in the index."""
    return {d: str(rec.get(field, rec.get("contents", raw))) if isinstance(rec, dict) else raw
            for d, raw, rec in _stored(index_dir, docids)}


def records(index_dir: str | os.PathLike, docids: Sequence[str] | set[str]) -> Mapping[str, dict | None]:
    """The stored raw JSON records of ``docids`` found in the index, each a dict of the collection record's fields;
    ``None`` for a document whose stored raw text is not a JSON object (an index built from plain text)."""
    return {d: rec if isinstance(rec, dict) else None for d, _, rec in _stored(index_dir, docids)}
