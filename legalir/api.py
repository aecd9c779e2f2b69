"""legalir's Python API: load a benchmark, index it, search it, score and compare runs.

Five names cover a notebook's work; each is a thin layer over the modules the
command line uses (the CLI commands call the same functions)::

    import legalir
    ds = legalir.load("acord", split="test")            # corpus, topics, qrels (BEIR's shape)
    searcher = legalir.index(ds, "indexes/acord/bm25")  # or legalir.Searcher("indexes/acord/bm25")
    searcher.search("limitation of liability", k=3)     # hits: docid, score, text, fields
    run = searcher.batch_search(ds, k=1000)             # {qid: {docid: score}}
    legalir.evaluate(ds.qrels, run, ["nDCG@10", "P@5"], judged_only=ds.judged_only)

Data are plain mappings, as BEIR, pytrec_eval and ir_measures read them:
topics ``{qid: text}``, qrels ``{qid: {docid: grade}}``, runs ``{qid: {docid: score}}``.
Runs and qrels may also be given as TREC files or pandas DataFrames (ir_measures'
columns ``query_id, doc_id, score|relevance``, or PyTerrier's ``qid, docno``).
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from legalir.errors import LegalirError

if TYPE_CHECKING:  # pragma: no cover
    import pandas

    from legalir.collections import Corpus
    from legalir.trec import Topic

_log = logging.getLogger(__name__)



class ApiError(LegalirError, ValueError):
    """A bad argument to the Python API (what was given, what is expected)."""


# ------------------------------------------------------------------ datasets
class Benchmark:
    """A converted dataset: its corpus, one topic set and its qrels, as plain mappings.

    Returned by :func:`load`. ``corpus`` streams from disk (a 1.8M-statute corpus opens at
    once); ``topics`` and ``qrels`` are read when first used.

    Attributes
    ----------
    name : str
        The dataset (``acord``, ``housing``, ...).
    path : pathlib.Path
        The collection folder (``collections/<name>``).
    split : str
        The topic set, e.g. ``test`` or ``test.long``; :attr:`splits` lists them.
    corpus : legalir.collections.Corpus
        ``{docid: {"id", "contents", ...metadata}}``.
    judged_only : bool
        Whether the dataset's papers score judged-only (``trec_eval -J``), as ACORD does.
    measures : tuple of str
        The measures its papers report (trec_eval names).
    """

    def __init__(self, path: str | os.PathLike, split: str | None = None):
        from legalir.collections import Corpus, read_manifest

        self.path = Path(path)
        self.manifest = read_manifest(self.path)
        self.name: str = str(self.manifest.get("dataset"))
        self.splits: list[str] = sorted(p.stem for p in (self.path / "topics").glob("*.jsonl"))
        self.split = self._pick(split)
        self.corpus: Corpus = Corpus(self.path)
        self._topics: dict[str, Topic] | None = None
        self._qrels: dict[str, dict[str, int]] | None = None
        cls = self._dataset_class()
        self.judged_only: bool = bool(cls and cls.judged_only)
        self.measures: tuple[str, ...] = tuple(cls.measures) if cls else ()

    def _dataset_class(self):
        from legalir.datasets.base import DatasetError, dataset_class

        try:
            return dataset_class(self.name)
        except DatasetError:
            return None

    def _pick(self, split: str | None) -> str | None:
        if split is not None:
            if split not in self.splits:
                raise ApiError(f"{self.path}: no topic set {split!r}; known: {', '.join(self.splits) or 'none'}")
            return split
        if not self.splits:
            return None
        cls = self._dataset_class()
        preferred = list(cls.pipeline.topics) if cls is not None and cls.pipeline is not None else []
        return next((s for s in preferred + ["test"] if s in self.splits), self.splits[0])

    def with_split(self, split: str) -> "Benchmark":
        """The same collection with another topic set."""
        return Benchmark(self.path, split)

    @property
    def topic_records(self) -> dict[str, "Topic"]:
        """The topics with their metadata (:class:`legalir.trec.Topic`: ``qid``, ``text``, ``fields``)."""
        if self._topics is None:
            from legalir import collections, trec

            self._topics = {} if self.split is None else trec.read_topics(
                collections.topics_path(self.path, self.split))
        return self._topics

    @property
    def topics(self) -> dict[str, str]:
        """``{qid: query text}`` of the split."""
        return {q: t.text for q, t in self.topic_records.items()}

    @property
    def topic_fields(self) -> dict[str, dict[str, Any]]:
        """``{qid: metadata}`` of the split (jurisdiction, category, ... as the dataset has them)."""
        return {q: dict(t.fields) for q, t in self.topic_records.items()}

    @property
    def qrels(self) -> dict[str, dict[str, int]]:
        """``{qid: {docid: grade}}`` of the split (a ``X.variant`` topic set uses ``X``'s qrels)."""
        if self._qrels is None:
            from legalir import collections, trec

            if self.split is None:
                self._qrels = {}
            else:
                try:
                    path = collections.qrels_path(self.path, self.split)
                except LegalirError:
                    self._qrels = {}  # a topic set without judgements (e.g. a dataset's unjudged queries)
                else:
                    self._qrels = trec.read_qrels(path)
        return self._qrels

    def __repr__(self) -> str:
        return (f"Benchmark({self.name!r}, split={self.split!r}: {len(self.corpus)} documents, "
                f"{len(self.topic_records)} topics; splits {', '.join(self.splits)})")


def load(name: str | os.PathLike, split: str | None = None, *, data_dir: str | os.PathLike = "data",
         collections_dir: str | os.PathLike | None = None, **options: Any) -> Benchmark:
    """A dataset as corpus, topics and qrels, converted from its published files on first use.

    Parameters
    ----------
    name : str or PathLike
        A dataset (``legalir datasets`` lists them: ``acord``, ``housing``, ``barexam``,
        ``scalr``, ``crumb``), or the path of a converted collection folder.
    split : str, optional
        The topic set (``train``, ``valid``, ``test``, ``test.long``, ...); default: the one
        its papers report (ACORD: ``test``).
    data_dir : str or PathLike
        The folder holding ``<name>/`` in its published layout (ACORD's release ships inside
        legalir and is used when ``data_dir`` has none).
    collections_dir : str or PathLike, optional
        Where converted collections live; default ``$LEGALIR_COLLECTIONS`` or ``./collections``
        (the Makefile's folder, so ``make convert-acord`` and ``load("acord")`` share one).
    **options
        Dataset options, as ``legalir convert --option KEY=VALUE``.

    Returns
    -------
    Benchmark
        With ``.corpus``, ``.topics``, ``.qrels``, ``.topic_fields``, ``.judged_only``.

    Raises
    ------
    legalir.errors.LegalirError
        An unknown dataset or split, missing published files, or a collection converted with
        other options than those given.

    Examples
    --------
    >>> ds = legalir.load("acord", split="test")   # doctest: +SKIP
    >>> len(ds.corpus), len(ds.topics)             # doctest: +SKIP
    (3931, 57)
    """
    from legalir import collections, datasets

    p = Path(name)
    if collections.is_collection(p):
        if options:
            raise ApiError(f"{p}: a converted collection; options apply when converting: give the dataset name")
        return Benchmark(p, split)
    cls = datasets.base.dataset_class(str(name))  # unknown names: the error lists the known ones
    path = Path(collections_dir) if collections_dir is not None else collections.root()
    path = path / cls.name
    if collections.is_collection(path):
        had = collections.read_manifest(path).get("options") or {}
        want = {k: str(v) for k, v in cls.check_options(options).items()}
        if options and had != want:
            raise ApiError(f"{path}: converted with options {had or 'none'}, not {want}; give another "
                           f"collections_dir for this variant")
    else:
        _log.info(f"converting {cls.name} from {Path(data_dir) / cls.name} into {path} (once)")
        collections.write(datasets.get(cls.name, data_dir, **options), path, quiet=True)
    return Benchmark(path, split)


# ------------------------------------------------------------------ indexing
def _records_dataset(docs: Iterable[Mapping[str, Any]], where: str, drop_duplicates: bool = False,
                     skip_empty: bool = False):
    from legalir.datasets.base import Dataset, Document

    class Records(Dataset):
        name = "records"

        def documents(self):
            first: dict[str, int] = {}  # id -> number of the document that has it (the collection keeps as many)
            for n, d in enumerate(docs, 1):
                if not isinstance(d, Mapping):
                    raise ApiError(f"{where}: document #{n} is a {type(d).__name__}; expected a dict "
                                   f'{{"id": ..., "contents": ..., ...fields}}')
                missing = [k for k in ("id", "contents") if k not in d]
                if missing:
                    raise ApiError(f"{where}: document #{n} has no {' or '.join(repr(k) for k in missing)} "
                                   f"(keys: {', '.join(map(str, d)) or 'none'})")
                for k in ("id", "contents"):
                    if not isinstance(d[k], str):
                        raise ApiError(f"{where}: document #{n}: field {k!r} is a {type(d[k]).__name__}; "
                                       f"expected a string")
                if not drop_duplicates and d["id"] in first:
                    raise ApiError(f"{where}: document #{n}: id {d['id']!r} is also document #{first[d['id']]}'s; "
                                   f"give each document its own id, or pass drop_duplicates=True to keep the first")
                first.setdefault(d["id"], n)
                if not skip_empty and not d["contents"].strip():
                    raise ApiError(f"{where}: document #{n} ({d['id']!r}) has empty text, which an index cannot "
                                   f"hold; leave it out, or pass skip_empty=True to skip such documents")
                yield Document(d["id"], d["contents"], {k: v for k, v in d.items() if k not in ("id", "contents")})

        def topic_sets(self):
            return {}

        def qrels_sets(self):
            return {}

    return Records(Path(where))


def _collection_dir(source: Any, path: Path, overwrite: bool, drop_duplicates: bool = False,
                    skip_empty: bool = False) -> Path:
    from legalir import collections

    if isinstance(source, Benchmark):
        return source.path
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        if collections.is_collection(p):
            return p
        raise ApiError(f"{p}: not a converted collection (no manifest.json); convert it first "
                       f"(legalir.load / legalir convert), or give the documents as dicts")
    if isinstance(source, Mapping) or not isinstance(source, Iterable):
        raise ApiError(f"index() takes a Benchmark, a collection folder or an iterable of dicts, not "
                       f"{type(source).__name__}")
    out = path.with_name(path.name + ".collection")
    _log.info(f"writing the documents as a collection into {out} (what the index reads its texts from)")
    manifest = collections.write(_records_dataset(source, str(out), drop_duplicates, skip_empty), out, quiet=True,
                                 overwrite=overwrite)
    docs = manifest["documents"]
    if docs["duplicate_ids"] or docs["empty_text"]:
        _log.warning(f"{out}: {docs['written']} of {docs['read']} documents indexed: {docs['duplicate_ids']} with a "
                     f"repeated id dropped (the first kept, drop_duplicates=True), {docs['empty_text']} with empty "
                     f"text skipped (skip_empty=True)")
    return out


def index(source: Any, path: str | os.PathLike, *, kind: str = "bm25", partition: str | Sequence[str] | None = None,
          threads: int = 2, encoder: str = "minilm", device: str | None = None, batch_size: int | None = None,
          overwrite: bool = False, drop_duplicates: bool = False, skip_empty: bool = False) -> "Searcher":
    """Build a BM25 (Lucene) or dense (FAISS) index and open it.

    Parameters
    ----------
    source : Benchmark, str, PathLike or iterable of dict
        A dataset from :func:`load`, a converted collection folder, or documents as
        ``{"id": str, "contents": str, ...metadata}`` (written first as a collection into
        ``<path>.collection``, which the searcher reads texts from).
    path : str or PathLike
        The index folder to write (replaced atomically when it holds an index legalir built;
        a folder holding anything else is never touched).
    kind : {"bm25", "dense"}
        Lucene BM25, or a flat FAISS index over ``encoder``'s embeddings (kept, resumable,
        in ``<path>.embeddings``).
    partition : str or sequence of str, optional
        Build only these partitions of a partitioned collection (Housing: jurisdictions).
    threads : int
        Indexing threads.
    encoder : str
        Dense only: a model folder, ``minilm`` (bundled all-MiniLM-L6-v2) or a Hub name.
    device : str, optional
        Dense only: ``cpu``, ``cuda``, ... (default: the best available).
    batch_size : int, optional
        Dense only: documents per encoder batch.
    overwrite : bool
        Also replace a legalir output of another kind at ``path``.
    drop_duplicates : bool
        Documents given as dicts: keep the first of documents sharing an id (a warning counts them)
        instead of refusing them.
    skip_empty : bool
        Documents given as dicts: leave out documents with empty text (a warning counts them) instead
        of refusing them.

    Returns
    -------
    Searcher
        The new index, opened.

    Raises
    ------
    legalir.errors.LegalirError
        A bad source, an unknown partition, a folder legalir did not write, a document id given twice
        or an empty text (without ``drop_duplicates`` / ``skip_empty``). Refused before anything is written.

    Examples
    --------
    >>> s = legalir.index([{"id": "d1", "contents": "rent is due monthly"}], "/tmp/idx")  # doctest: +SKIP
    >>> s.search("rent")[0].docid                                                        # doctest: +SKIP
    'd1'
    """
    if kind not in ("bm25", "dense"):
        raise ApiError(f"unknown index kind {kind!r}; one of: bm25, dense")
    from legalir import atomic
    from legalir.index import dense, sparse

    path = Path(path)
    mod = sparse if kind == "bm25" else dense
    # the index's own target checked first: a refused index() writes no collection beside it either
    atomic.check_target(path, mod.KIND, overwrite=overwrite, legacy=mod._is_legacy_index)
    coll = _collection_dir(source, path, overwrite, drop_duplicates, skip_empty)
    parts = [partition] if isinstance(partition, str) else (list(partition) if partition else None)
    if kind == "bm25":

        sparse.build(coll, path, threads=threads, partitions=parts, quiet=True, overwrite=overwrite)
        return Searcher(path)
    from legalir.index import encoders

    enc = encoders.Encoder.load(encoder, device=device)
    emb = path.with_name(path.name + ".embeddings")
    kwargs = {"batch_size": batch_size} if batch_size else {}
    results = encoders.encode_collection(enc, coll, emb, partitions=parts, quiet=True, **kwargs)
    if not all(r.complete for r in results.values()):  # pragma: no cover - only with stop_after_shards
        raise ApiError(f"{emb}: encoding stopped before the end; call index() again to resume")
    dense.build(emb, path, dense.IndexSpec(), collection_dir=coll, partitions=parts, threads=threads,
                overwrite=overwrite)
    return Searcher(path, encoder=encoder, device=device)


def update(path: str | os.PathLike | Sequence[str | os.PathLike], *, add: Any = None, replace: Any = None,
           delete: Any = None, threads: int = 2, device: str | None = None,
           batch_size: int | None = None) -> dict[str, dict]:
    """Apply added, replaced and deleted documents to a built index as a new version (``legalir index update``).

    The new version searches exactly as a full rebuild from the updated collection would
    (:mod:`legalir.index.update`); a :class:`Searcher` opened before keeps the old version, open a new one
    to see the changes.

    Parameters
    ----------
    path : str, PathLike or sequence of them
        A Lucene index, a FAISS index, or one of each of the same collection (updated together).
    add, replace : str, PathLike or iterable of dict, optional
        Documents ``{"id": str, "contents": str, ...metadata}``, or a JSONL file of them.
    delete : str, PathLike or iterable of str, optional
        Ids of documents to delete, or a file of them (one per line).
    threads : int
        Lucene indexing threads.
    device, batch_size : optional
        Dense: where new documents are encoded, and in batches of how many.

    Returns
    -------
    dict
        Per kind (``"bm25"``, ``"dense"``): ``index``, ``version``, ``documents`` and the counts ``add``,
        ``replace``, ``delete``.

    Raises
    ------
    legalir.errors.LegalirError
        A change that does not fit (an added id already there, a replaced or deleted one missing, ...);
        nothing is written then.

    Examples
    --------
    >>> legalir.update("indexes/contracts/bm25", add=[{"id": "c9", "contents": "..."}], delete=["c3"])  # doctest: +SKIP
    """
    import json
    import tempfile

    from legalir.index import update as upd

    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    with tempfile.TemporaryDirectory(prefix="legalir-update-") as tmp:
        files: dict[str, list] = {}
        for name, given in (("add", add), ("replace", replace), ("delete", delete)):
            if given is None:
                continue
            if isinstance(given, (str, os.PathLike)):
                files[name] = [given]
                continue
            if isinstance(given, Mapping) or not isinstance(given, Iterable):
                raise ApiError(f"{name}= takes a file or an iterable of "
                               f"{'ids' if name == 'delete' else 'dicts'}, not {type(given).__name__}")
            out = Path(tmp) / f"{name}.jsonl"
            with open(out, "w", encoding="utf-8") as f:
                for n, item in enumerate(given, 1):
                    if name == "delete":
                        item = {"id": item}
                    elif not isinstance(item, Mapping):
                        raise ApiError(f"{name}=: item #{n} is a {type(item).__name__}; expected a dict "
                                       f'{{"id": ..., "contents": ..., ...fields}}')
                    f.write(json.dumps(dict(item), ensure_ascii=False) + "\n")
            files[name] = [out]
        return upd.update(paths, **files, threads=threads, device=device, batch_size=batch_size, quiet=True)


# ------------------------------------------------------------------ searching
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
    """

    docid: str
    score: float
    rank: int
    text: str | None = None
    fields: dict = field(default_factory=dict)


def _topics(topics: Any) -> dict[str, "Topic"]:
    """``Topic`` objects from a Benchmark, ``{qid: text}``, ``{qid: Topic}`` or a PyTerrier-style DataFrame."""
    from legalir.trec import Topic

    if isinstance(topics, Benchmark):
        return dict(topics.topic_records)
    if _is_frame(topics):
        cols = set(topics.columns)
        if not {"qid", "query"} <= cols:
            raise ApiError(f"a topics DataFrame needs the columns qid and query (has {', '.join(map(str, cols))})")
        return {str(r.qid): Topic(str(r.qid), str(r.query)) for r in topics.itertuples()}
    if not isinstance(topics, Mapping):
        raise ApiError(f"topics must be a mapping {{qid: text}}, a Benchmark or a DataFrame, not "
                       f"{type(topics).__name__}")
    out = {}
    for qid, t in topics.items():
        if isinstance(t, Topic):
            out[str(qid)] = t
        elif isinstance(t, str):
            out[str(qid)] = Topic(str(qid), t)
        else:
            raise ApiError(f"topic {qid!r}: the query is a {type(t).__name__}; expected a string")
    return out


class Searcher:
    """Search one index, BM25 or dense, partitioned or not; or both fused (hybrid).

    Opened and validated at once, like Pyserini's ``LuceneSearcher``: a folder that is not an
    index is a clear error. BM25 uses the tuned k1/b of the dataset the index was built from
    (ACORD: 1.0 / 0.5) unless given, else Pyserini's 0.9 / 0.4; :attr:`k1` and :attr:`b` say
    which.

    Parameters
    ----------
    path : str, PathLike or sequence of them
        An index folder (``legalir index`` / ``legalir index-dense`` / :func:`index`), or one
        Lucene and one FAISS folder of the same collection for ``hybrid`` search.
    k1, b : float, optional
        BM25 parameters.
    encoder : str, optional
        Dense: the query encoder (default: the one the index records).
    device : str, optional
        Dense: where the encoder runs.
    threads : int
        Lucene search threads for :meth:`batch_search`.

    Raises
    ------
    legalir.errors.LegalirError
        A folder that holds no index, two indexes of one kind, or bad BM25 parameters.

    Examples
    --------
    >>> with legalir.Searcher("indexes/acord/bm25") as s:     # doctest: +SKIP
    ...     hits = s.search("cap on liability", k=5)
    >>> hits[0].docid, hits[0].score, hits[0].text[:40]       # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike | Sequence[str | os.PathLike], *, k1: float | None = None,
                 b: float | None = None, encoder: str | None = None, device: str | None = None, threads: int = 1):
        from legalir.collections import Corpus
        from legalir.index import IndexPair, collection_of

        paths = [Path(path)] if isinstance(path, (str, os.PathLike)) else [Path(p) for p in path]
        pair = self._pair = IndexPair(paths)
        self.sparse: Path | None = pair.sparse
        self.dense: Path | None = pair.dense
        self.partitions: list[str] = pair.partitions
        self.methods: list[str] = pair.methods
        from legalir import atomic
        from legalir.index.update import Documents

        # the versions there now, held until close() (legalir.atomic.pin: no later build or update removes
        # them): the Lucene searchers, the FAISS index (loaded on first use) and the documents shown all
        # come from the same versions
        self._pins = {kind: atomic.pin(p) for kind, p in (("sparse", self.sparse), ("dense", self.dense)) if p}
        held = {kind: pin.path for kind, pin in self._pins.items()}
        root = next((c for c in (collection_of(p) for p in paths) if c is not None), None)
        self.corpus: Corpus | None = Corpus(root) if root is not None else None
        # an updated version's changed documents (legalir index update) first, then the collection
        self._docs = Documents(self.corpus, list(held.values()))
        self.partition_field: str | None = self.corpus.partition_field if self.corpus else None
        self.k1 = self.b = None
        self._threads = max(1, int(threads))
        self._encoder_name, self._device = encoder, device
        self._bm25 = self._dense = None
        self._dense_version = held.get("dense")
        self._lucene = None
        from legalir.index import sparse as sparse_index

        #: one Lucene index over every partition, filtered by the partition field (legalir index --pooled)
        self._pooled = bool(self.sparse is not None and not self.partitions
                            and sparse_index.index_meta(self.sparse).get("pooled"))
        if self.sparse is not None:
            from legalir.search import lucene

            self.k1, self.b, _ = lucene.bm25_params(self.sparse, k1, b)
            # the retriever logs the k1/b it uses and where they come from
            self._bm25 = lucene.retriever(held["sparse"], k1=k1, b=b, threads=self._threads,
                                          partition_field=self.partition_field)

    # ---- retrievers, opened on first use
    def _dense_retriever(self):
        if self._dense is None:
            from legalir.search import dense as dense_search

            enc = dense_search.load_encoder(self._dense_version, self._encoder_name, device=self._device)
            self._dense = dense_search.retriever(self._dense_version, enc, partition_field=self.partition_field)
        return self._dense

    def _run(self, topics: Mapping[str, "Topic"], k: int, method: str, filter: Any = None,
             citations: bool | None = None) -> dict[str, dict[str, float]]:
        from legalir.search import fusion
        from legalir.search.base import check_depth

        check_depth(k)
        if filter and method != "bm25":
            raise ApiError(f"filter= works with BM25 (Lucene FILTER clauses), not {method}; dense search takes "
                           f"partition= on a per-partition index")
        if filter or citations is not None:
            # per call, through the topics (legalir.search.lucene.BM25.clauses reads _filter / _citations)
            from legalir import filters
            from legalir.trec import Topic

            try:
                flt = filters.parse(filter, "filter=")
            except LegalirError as e:
                raise ApiError(str(e)) from None
            topics = {q: Topic(q, t.text, {**t.fields, "_filter": flt, "_citations": citations})
                      for q, t in topics.items()}
        bm25 = self._bm25
        if method == "bm25":
            return bm25.search(topics, k)
        if method == "dense":
            return self._dense_retriever().search(topics, k)
        depth = max(k, fusion.HYBRID_DEPTH)
        fused = fusion.rrf([bm25.search(topics, depth), self._dense_retriever().search(topics, depth)])
        return {q: dict(list(fused.get(q, {}).items())[:k]) for q in topics}

    def _routed(self, topics: dict[str, "Topic"], partition: str | None) -> dict[str, "Topic"]:
        """Topics carrying the partition they are searched in (a partitioned index routes by it)."""
        from legalir.trec import Topic

        if not self.partitions:
            if partition is not None and not self._pooled:
                raise ApiError("this index is not partitioned; leave out partition (or give filter=)")
            if partition is None:
                return topics
            # a pooled index: the partition becomes the topics' filter value (legalir.filters)
        if partition is None:
            missing = [q for q, t in topics.items() if not t.fields.get(self.partition_field or "")]
            if missing:
                raise ApiError(f"this index holds one index per {self.partition_field or 'partition'} "
                               f"({', '.join(self.partitions[:5])}{' ...' if len(self.partitions) > 5 else ''}): "
                               f"give partition=, or topics whose {self.partition_field!r} field names it "
                               f"(e.g. a Benchmark's); missing for: {', '.join(missing[:5])}")
            return topics
        return {q: Topic(q, t.text, {**t.fields, str(self.partition_field): partition}) for q, t in topics.items()}

    # ---- public
    def search(self, query: str, k: int = 10, *, method: str | None = None,
               partition: str | None = None, filter: Any = None, citations: bool | None = None) -> list[Hit]:
        """The ``k`` best documents for one query.

        Parameters
        ----------
        query : str
            Free text.
        k : int
            Hits to return.
        method : {"bm25", "dense", "hybrid"}, optional
            Default: the first this searcher has (``bm25`` when it has a Lucene index).
        partition : str, optional
            For a partitioned index (Housing): the jurisdiction to search; on a pooled index
            (``legalir index --pooled``) a filter on the partition field.
        filter : dict or str, optional
            Metadata filter, BM25 only: ``{"state": ["california", "nevada"]}`` or
            ``"state=california,nevada"`` (values OR-ed, fields AND-ed; ``"2000..2010"`` a range),
            applied as Lucene FILTER clauses: ``k`` hits whenever ``k`` documents match.
        citations : bool, optional
            Rank the document that is an authority the query cites first, documents citing it
            next (:mod:`legalir.citations`); default: on where the index has the field.

        Returns
        -------
        list of Hit
            Best first, with the document's text and metadata where the collection is at hand.
        """
        from legalir import filters
        from legalir.trec import Topic, ranking

        if not isinstance(query, str) or not query.strip():
            raise ApiError(f"query must be a non-empty string, not {query!r}")
        topics = self._routed({"q": Topic("q", query)}, partition)
        docs = self._run(topics, k, self._pair.method(method), filter, citations).get("q", {})
        hits = []
        for rank, (docid, score) in enumerate(ranking(docs, k), 1):
            rec = self.doc(docid, partition) or {}
            hits.append(Hit(docid, float(score), rank, rec.get("contents"),
                            {f: v for f, v in rec.items() if f not in ("id", "contents", filters.FIELD)}))
        return hits

    def batch_search(self, topics: Any, k: int = 1000, *, method: str | None = None,
                     partition: str | None = None, filter: Any = None,
                     citations: bool | None = None) -> dict[str, dict[str, float]]:
        """A run: ``{qid: {docid: score}}`` of the ``k`` best documents of every topic.

        Parameters
        ----------
        topics : Benchmark, mapping or DataFrame
            ``{qid: text}``, ``{qid: Topic}``, a :class:`Benchmark` (its split's topics, with the
            fields a partitioned index routes by) or a DataFrame with ``qid`` and ``query``.
        k : int
            Depth.
        method, partition, filter, citations
            As for :meth:`search`. On a pooled index each topic carrying the partition field
            (a Housing question's ``state``) is searched only among that partition's documents.

        Returns
        -------
        dict
            The form pytrec_eval, ir_measures and :func:`evaluate` read; :func:`write_run` saves it.
        """
        from legalir.search.base import check_topics

        found = self._routed(_topics(topics), partition)
        check_topics(found)
        run = self._run(found, k, self._pair.method(method), filter, citations)
        return {q: dict(run.get(q, {})) for q in found}

    def doc(self, docid: str, partition: str | None = None) -> dict | None:
        """The stored record ``{"id", "contents", ...}`` of ``docid``, or ``None`` when absent (or deleted by
        ``legalir index update``: an updated index's changed documents come from its version)."""
        if self.corpus is not None or self._docs.changed:
            return self._docs.record(docid, partition)
        if self.sparse is not None and not self.partitions:
            import json

            from legalir.index.lucene import LuceneIndex

            with LuceneIndex(self._pins["sparse"].path) as idx:
                raw = idx.raw(docid)
            return None if raw is None else json.loads(raw)
        return None

    def close(self) -> None:
        """Release the Lucene readers and the index versions held (also done on leaving a ``with`` block)."""
        for r in (self._bm25, self._dense):
            if r is not None:
                r.close()
        self._bm25 = self._dense = None
        for p in self._pins.values():
            p.close()

    def __enter__(self) -> "Searcher":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        where = ", ".join(str(p) for p in (self.sparse, self.dense) if p is not None)
        bm25 = f", k1={self.k1:g} b={self.b:g}" if self.k1 is not None else ""
        return f"Searcher({where}: {'/'.join(self.methods)}{bm25})"


# ------------------------------------------------------------------ runs and qrels in, runs out
def _is_frame(x: Any) -> bool:
    return type(x).__name__ == "DataFrame" and hasattr(x, "itertuples")


def _frame_to_dict(df: "pandas.DataFrame", value_cols: Sequence[str], what: str, cast) -> dict:
    cols = set(df.columns)
    q = next((c for c in ("query_id", "qid") if c in cols), None)
    d = next((c for c in ("doc_id", "docno") if c in cols), None)
    v = next((c for c in value_cols if c in cols), None)
    if q is None or d is None or v is None:
        raise ApiError(f"a {what} DataFrame needs columns query_id (or qid), doc_id (or docno) and "
                       f"{' or '.join(value_cols)}; it has {', '.join(map(str, df.columns))}")
    out: dict[str, dict] = {}
    for qid, docid, value in zip(df[q], df[d], df[v]):
        out.setdefault(str(qid), {})[str(docid)] = cast(value)
    return out


def as_qrels(qrels: Any) -> dict[str, dict[str, int]]:
    """Qrels from a TREC file path, ``{qid: {docid: grade}}`` or a DataFrame (``relevance``/``label``)."""
    from legalir import trec

    if isinstance(qrels, (str, os.PathLike)):
        return trec.read_qrels(qrels)
    if _is_frame(qrels):
        return _frame_to_dict(qrels, ("relevance", "label"), "qrels", int)
    if isinstance(qrels, Mapping):
        return {str(q): {str(d): int(r) for d, r in docs.items()} for q, docs in qrels.items()}
    raise ApiError(f"qrels must be a file path, a mapping or a DataFrame, not {type(qrels).__name__}")


def as_run(run: Any) -> dict[str, dict[str, float]]:
    """A run from a TREC file path, ``{qid: {docid: score}}`` or a DataFrame (``score``)."""
    from legalir import trec

    if isinstance(run, (str, os.PathLike)):
        return trec.read_run(run)
    if _is_frame(run):
        return _frame_to_dict(run, ("score",), "run", float)
    if isinstance(run, Mapping):
        return {str(q): {str(d): float(s) for d, s in docs.items()} for q, docs in run.items()}
    raise ApiError(f"a run must be a file path, a mapping or a DataFrame, not {type(run).__name__}")


def write_run(path: str | os.PathLike, run: Any, *, tag: str = "legalir", depth: int | None = None) -> int:
    """Write a run as a TREC file (atomically; ranks as trec_eval reads them; ``depth``: at least 1, the
    documents kept per topic); returns the lines written."""
    from legalir import trec

    return trec.write_run(path, as_run(run), tag=tag, depth=depth)


# ------------------------------------------------------------------ scoring
def _measure_names(measures: Any) -> list[str]:
    if measures is None:
        raise ApiError('name the measures, e.g. ["nDCG@10", "P@5"] or ["ndcg_cut.10", "map"]')
    if isinstance(measures, str) or not isinstance(measures, Iterable):
        measures = [measures]
    out = []
    for m in measures:
        if isinstance(m, str):
            out.append(m)
        elif type(m).__module__.startswith("ir_measures"):
            out.append(str(m))
        else:
            raise ApiError(f"a measure is a name (nDCG@10, ndcg_cut.10) or an ir_measures measure, not "
                           f"{type(m).__name__}")
    return out


def _keys(requests: list[str]) -> list[tuple[str, list[str]]]:
    """Each request with the output names it yields (one name: keyed as requested)."""
    from legalir.evaluate import parse_measures

    out = []
    for r in requests:
        names = [n for m in parse_measures([r]) for n in m.output_names()]
        out.append((r, names))
    return out


def evaluate(qrels: Any, run: Any, measures: Any, *, judged_only: bool = False, per_topic: bool = False,
             relevance_level: int = 1, complete: bool = False) -> dict:
    """Score a run, as ``legalir eval`` (and trec_eval) would, keyed by the measures as requested.

    Parameters
    ----------
    qrels, run
        Mappings, TREC file paths or DataFrames (see :func:`as_qrels`, :func:`as_run`).
    measures : sequence of str or ir_measures measures
        ir_measures names (``nDCG@10``, ``P(rel=2)@5``, ``R@100``) and trec_eval names
        (``ndcg_cut.10``, ``map``, ``P.5,10``) alike, mixed as you like.
    judged_only : bool
        Drop unjudged documents first (trec_eval ``-J``; ACORD's protocol: ``ds.judged_only``).
    per_topic : bool
        Also return each topic's values.
    relevance_level : int
        Lowest grade counted relevant (``-l``).
    complete : bool
        Average over every qrels topic, a topic missing from the run counting 0 (``-c``).

    Returns
    -------
    dict
        ``{name: mean}``, each key exactly as requested (``"ndcg_cut.10"`` stays ``"ndcg_cut.10"``);
        a request that names several values (``"P.5,10"``) gives one key per value, named as
        trec_eval prints it (``P_5``, ``P_10``). With ``per_topic``: ``{"all": {...},
        "per_topic": {qid: {...}}}``.

    Raises
    ------
    legalir.errors.LegalirError
        An unknown measure or bad parameter (with a "did you mean"), or no topic in common.

    Examples
    --------
    >>> legalir.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 2.0, "d2": 1.0}}, ["nDCG@10", "P.1"])
    {'nDCG@10': 1.0, 'P.1': 1.0}
    """
    from legalir.evaluate import evaluator

    requests = _measure_names(measures)
    keys = _keys(requests)
    result = evaluator.evaluate(as_qrels(qrels), as_run(run), requests, judged_only=judged_only,
                                complete=complete, relevance_level=relevance_level)

    def keyed(values: Mapping[str, Any]) -> dict:
        out = {}
        for request, names in keys:
            for n in names:
                if n in values:
                    out[request if len(names) == 1 else n] = values[n]
        return out

    summary = keyed(result["all"])
    missing = [n for r, names in keys for n in names if n not in result["all"]]
    if missing:
        raise ApiError(f"no value for {', '.join(missing)}: no evaluated topic defines it")
    if not per_topic:
        return summary
    return {"all": summary, "per_topic": {q: keyed(v) for q, v in result["per_topic"].items()}}


def compare(runs: Any, qrels: Any, measures: Any, *, baseline: int | str = 0, correction: str = "holm",
            test: str = "t", judged_only: bool = False, alpha: float = 0.05, permutations: int = 10000,
            bootstrap: int = 1000, level: float = 0.95, seed: int = 0) -> "pandas.DataFrame":
    """Compare systems on the topics they share: means, differences, p-values corrected for multiplicity.

    Parameters
    ----------
    runs : mapping or sequence
        ``{name: run}`` (runs as for :func:`evaluate`), or a list of runs (named ``run1``, ...)
        or of TREC file paths (named by their paths).
    qrels
        As for :func:`evaluate`.
    measures
        As for :func:`evaluate`.
    baseline : int or str
        The run every other is tested against: its position or name.
    correction : {"holm", "bonferroni", "fdr_bh", "none"}
        Multiple-comparison correction, per measure, over the runs compared to the baseline.
    test : {"t", "randomization"}
        Paired two-sided t-test, or paired randomization test (``permutations`` sign vectors).
    judged_only : bool
        As for :func:`evaluate`.
    alpha : float
        Significance level of the ``significant`` column.
    bootstrap : int
        Percentile-bootstrap resamples for the intervals (0: none); ``level`` their coverage.
    seed : int
        Seed of the randomization test and the bootstrap: same seed, same numbers.

    Returns
    -------
    pandas.DataFrame
        One row per (measure, run): ``measure, run, topics, mean, ci_low, ci_high, delta,
        delta_ci_low, delta_ci_high, p, p_corrected, significant``; the baseline's test columns
        are empty. ``df.to_latex()`` / ``df.to_markdown()`` export it.

    Examples
    --------
    >>> legalir.compare({"bm25": run_a, "dense": run_b}, ds.qrels, ["nDCG@10"])   # doctest: +SKIP
    """
    import math

    import pandas as pd

    from legalir.evaluate import evaluator, stats

    if isinstance(runs, Mapping):
        named = [(str(n), r) for n, r in runs.items()]
    elif isinstance(runs, Sequence) and not isinstance(runs, str):
        named = [(str(r) if isinstance(r, (str, os.PathLike)) else f"run{i}", r) for i, r in enumerate(runs, 1)]
    else:
        raise ApiError(f"runs must be a mapping {{name: run}} or a list of runs, not {type(runs).__name__}")
    if len(named) < 2:
        raise ApiError("compare needs at least two runs")
    if len({n for n, _ in named}) != len(named):
        raise ApiError("two runs have the same name; give them as a mapping {name: run}")
    names = [n for n, _ in named]
    if isinstance(baseline, str):
        if baseline not in names:
            raise ApiError(f"baseline {baseline!r} is not one of the runs: {', '.join(names)}")
        base = names.index(baseline)
    elif isinstance(baseline, int) and -len(names) <= baseline < len(names):
        base = baseline % len(names)
    else:
        raise ApiError(f"baseline must be a run's name or position (0..{len(names) - 1}), not {baseline!r}")
    if correction not in stats.CORRECTIONS:
        raise ApiError(f"unknown correction {correction!r}; one of: {', '.join(stats.CORRECTIONS)}")
    if test not in stats.TESTS:
        raise ApiError(f"unknown test {test!r}; one of: {', '.join(stats.TESTS)}")
    order = [base] + [i for i in range(len(named)) if i != base]
    requests = _measure_names(measures)
    keys = _keys(requests)
    from legalir.evaluate import parse_measures

    stats.comparable_names(parse_measures(requests))  # refuses what has no per-topic value
    judgements = as_qrels(qrels)
    per_topic = [evaluator.evaluate(judgements, as_run(named[i][1]), requests, judged_only=judged_only)["per_topic"]
                 for i in order]
    out_names = [n for _, ns in keys for n in ns]
    comps = stats.compare(per_topic, [names[i] for i in order], out_names, test=test, correction=correction,
                          permutations=permutations, seed=seed, bootstrap=bootstrap, level=level)
    label = {n: (r if len(ns) == 1 else n) for r, ns in keys for n in ns}
    rows = []
    for c in comps:
        for j, run_name in enumerate(c.runs):
            ci = c.intervals[j] if c.intervals else None
            d = c.diff_intervals[j] if c.diff_intervals else None
            res = c.results[j]
            p = c.pvalues[j]
            nan = math.nan
            rows.append({
                "measure": label[c.measure], "run": run_name, "topics": c.topics, "mean": c.means[j],
                "ci_low": ci.low if ci else nan, "ci_high": ci.high if ci else nan,
                "delta": (c.means[j] - c.means[0]) if j else nan,
                "delta_ci_low": d.low if d else nan, "delta_ci_high": d.high if d else nan,
                "p": res.pvalue if res else nan, "p_corrected": nan if p is None else p,
                "significant": (p is not None and not math.isnan(p) and p < alpha) if j else None,
            })
    df = pd.DataFrame(rows)
    df.attrs.update({"test": test, "correction": correction, "alpha": alpha, "baseline": names[base]})
    return df
