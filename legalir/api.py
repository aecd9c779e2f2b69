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
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legalir import collections, datasets, trec
from legalir.base import atomic, checks
from legalir.collections import Corpus, read_manifest
from legalir.datasets import DatasetError, dataset_class
from legalir.datasets.dataset import Dataset, Document
from legalir.errors import ApiError, LegalirError  # ApiError: a bad argument (legalir.base.checks), public here
from legalir.search import searcher as _searcher

if TYPE_CHECKING:  # excluded from coverage by pyproject.toml
    import pandas

    from legalir.trec import Topic

_log = logging.getLogger(__name__)



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

    def with_split(self, split: str) -> Benchmark:
        """The same collection with another topic set."""
        return Benchmark(self.path, split)

    @property
    def topic_records(self) -> dict[str, Topic]:
        """The topics with their metadata (:class:`legalir.trec.Topic`: ``qid``, ``text``, ``fields``)."""
        if self._topics is None:
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
    if not isinstance(name, (str, os.PathLike)) or not str(os.fspath(name)).strip():
        raise ApiError(f"name must be a dataset ({', '.join(datasets.names())}) or a converted "
                       f"collection folder (a str or pathlib.Path), not {checks.shown(name)}")
    checks.path("name", name)
    checks.optional_text("split", split)
    checks.path("data_dir", data_dir)
    checks.optional_path("collections_dir", collections_dir)
    for key, value in options.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ApiError(f"option {key} must be a string or a number, as `legalir convert --option "
                           f"{key}=VALUE` gives it, not {checks.shown(value)}")
    p = Path(name)
    if collections.is_collection(p):
        if options:
            raise ApiError(f"{p}: a converted collection; options apply when converting: give the dataset name")
        return Benchmark(p, split)
    cls = datasets.dataset_class(str(name))  # unknown names: the error lists the known ones
    path = Path(collections_dir) / cls.name if collections_dir is not None else collections.default_path(cls.name)
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
          overwrite: bool = False, drop_duplicates: bool = False, skip_empty: bool = False) -> Searcher:
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

    checks.choice("kind", kind, ("bm25", "dense"))
    checks.path("path", path)
    if partition is not None and not isinstance(partition, str):
        if isinstance(partition, (bytes, Mapping)) or not isinstance(partition, Sequence) or not partition:
            raise ApiError(f"partition must be a partition's name or a non-empty list of them, not "
                           f"{checks.shown(partition)}")
        for i, part in enumerate(partition):
            checks.text(f"partition[{i}]", part)
    elif partition is not None:
        checks.text("partition", partition)
    checks.integer("threads", threads, 1, 1024)
    checks.text("encoder", encoder)
    checks.optional_text("device", device)
    checks.optional_integer("batch_size", batch_size, 1)
    checks.boolean("overwrite", overwrite)
    checks.boolean("drop_duplicates", drop_duplicates)
    checks.boolean("skip_empty", skip_empty)
    from legalir.indexing import dense, sparse

    path = Path(path)
    mod = sparse if kind == "bm25" else dense
    # the index's own target checked first: a refused index() writes no collection beside it either
    atomic.check_target(path, mod.KIND, overwrite=overwrite, legacy=mod._is_legacy_index)
    coll = _collection_dir(source, path, overwrite, drop_duplicates, skip_empty)
    parts = [partition] if isinstance(partition, str) else (list(partition) if partition else None)
    if kind == "bm25":
        sparse.build(coll, path, threads=threads, partitions=parts, quiet=True, overwrite=overwrite)
        return Searcher(path)
    from legalir.indexing import encoders

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
           delete: Any = None, to: str | os.PathLike | None = None, allow_older: bool = False, threads: int = 2,
           device: str | None = None, batch_size: int | None = None) -> dict[str, dict]:
    """Apply added, replaced and deleted documents to a built index as a new version (``legalir index update``).

    The new version searches exactly as a full rebuild from the updated collection would
    (:mod:`legalir.indexing.update`); a :class:`Searcher` opened before keeps the old version, open a new one
    to see the changes.

    Parameters
    ----------
    path : str, PathLike or sequence of them
        A Lucene index, a FAISS index, or one of each of the same collection (updated together).
    add, replace : str, PathLike or iterable of dict, optional
        Documents ``{"id": str, "contents": str, ...metadata}``, or a JSONL file of them.
    delete : str, PathLike or iterable of str, optional
        Ids of documents to delete, or a file of them (one per line).
    to : str or PathLike, optional
        A newer release's collection of the same dataset: apply the difference (documents added, changed,
        removed), so the new version searches as a fresh index of it (not with add/replace/delete). A release
        not newer than the index's (older, the same, or none recorded) is refused, naming both.
    allow_older : bool
        Apply ``to`` all the same; the new version's marker records the release it went from.
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

    from legalir.indexing import update as upd

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
        return upd.update(paths, add=files.get("add", ()), replace=files.get("replace", ()), delete=files.get("delete", ()),
                          to=to, allow_older=checks.boolean("allow_older", allow_older), threads=threads,
                          device=device, batch_size=batch_size, quiet=True)


# ------------------------------------------------------------------ searching
# the searcher core lives in the search layer (legalir/search/searcher.py); the API re-exports it
Hit = _searcher.Hit
Searcher = _searcher.Searcher
SearcherError = _searcher.SearcherError


# ------------------------------------------------------------------ runs and qrels in, runs out
def _is_frame(x: Any) -> bool:
    return type(x).__name__ == "DataFrame" and hasattr(x, "itertuples")


def as_qrels(qrels: Any) -> dict[str, dict[str, int]]:
    """Qrels from a TREC file path, ``{qid: {docid: grade}}`` or a DataFrame (``relevance``/``label``).

    Ids are strings (an integer id is taken as its decimal string); grades are integers (a float
    grade must be whole, as a DataFrame's may be). Anything else is an :class:`ApiError` naming the
    topic and document (:func:`legalir.scoring.core.to_qrels`).
    """
    from legalir.scoring import core

    return core.to_qrels(qrels)


def as_run(run: Any) -> dict[str, dict[str, float]]:
    """A run from a file path (a TREC run or a CRUMB JSONL run, whichever the file is: as `legalir eval`
    reads it), ``{qid: {docid: score}}`` or a DataFrame (``score``).

    Scores are numbers; a NaN score is refused, as a run file's is (:func:`legalir.scoring.core.to_run`).
    """
    from legalir.scoring import core

    return core.to_run(run)


def write_run(path: str | os.PathLike, run: Any, *, tag: str = "legalir", depth: int | None = None) -> int:
    """Write a run as a TREC file (atomically; ranks as trec_eval reads them); returns the lines written.

    Parameters
    ----------
    path : str or PathLike
        The file to write (a file legalir did not write is never replaced).
    run
        As :func:`as_run` takes it.
    tag : str
        The run tag (last column): one word.
    depth : int, optional
        Keep each topic's ``depth`` best documents (at least 1).
    """
    checks.path("path", path)
    checks.text("tag", tag)
    checks.optional_integer("depth", depth, 1)
    try:
        trec.check_tag(tag)
    except LegalirError as e:
        raise ApiError(f"tag: {e}") from None
    return trec.write_run(path, as_run(run), tag=tag, depth=depth)


# ------------------------------------------------------------------ scoring
def evaluate(qrels: Any, run: Any, measures: Any = None, *, judged_only: bool = False, per_topic: bool = False,
             relevance_level: int = 1, complete: bool = False) -> dict:
    """Score a run, as ``legalir eval`` (and trec_eval) would, keyed by the measures as requested.

    The one scoring function of every face (:func:`legalir.scoring.core.score`): `legalir eval`,
    `legalir serve`'s run scores and the MCP ``evaluate`` tool give the same values.

    Parameters
    ----------
    qrels, run
        Mappings, file paths (a run: TREC or CRUMB JSONL) or DataFrames (see :func:`as_qrels`, :func:`as_run`).
    measures : sequence of str or ir_measures measures, optional
        ir_measures names (``nDCG@10``, ``P(rel=2)@5``, ``R@100``) and trec_eval names
        (``ndcg_cut.10``, ``map``, ``P.5,10``) alike, mixed as you like; default: legalir's one
        default set, ``map`` and ``ndcg_cut.10`` (:data:`legalir.scoring.DEFAULT_MEASURES`).
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
        An unknown measure or bad parameter (with a "did you mean"), no topic in common, or a bad
        argument (:class:`ApiError`: an empty measure list, a NaN score, a grade that is not an integer,
        a flag that is not a bool, ...).

    Examples
    --------
    >>> legalir.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 2.0, "d2": 1.0}}, ["nDCG@10", "P.1"])
    {'nDCG@10': 1.0, 'P.1': 1.0}
    """
    from legalir.scoring import core

    per_topic = checks.boolean("per_topic", per_topic)
    requests = core.measure_requests(measures)
    result = core.score(qrels, run, requests, judged_only=judged_only, relevance_level=relevance_level,
                        complete=complete)
    return core.by_request(result, requests, per_topic)


def compare(runs: Any, qrels: Any, measures: Any = None, *, baseline: int | str = 0, correction: str = "holm",
            test: str = "t", judged_only: bool = False, alpha: float = 0.05, permutations: int = 10000,
            bootstrap: int = 1000, level: float = 0.95, seed: int = 0, relevance_level: int = 1) -> pandas.DataFrame:
    """Compare systems on the topics they share: means, differences, p-values corrected for multiplicity.

    The one comparison (:func:`legalir.scoring.core.compare`): `legalir compare` has the same
    defaults and gives the same p-values.

    Parameters
    ----------
    runs : mapping or sequence
        ``{name: run}`` (runs as for :func:`evaluate`), or a list of runs (named ``run1``, ...)
        or of file paths (named by their paths); at least two.
    qrels
        As for :func:`evaluate`.
    measures : optional
        As for :func:`evaluate` (default ``map`` and ``ndcg_cut.10``); each must have a numeric
        value per topic.
    baseline : int or str
        The run every other is tested against: its position (0-based; -1 the last) or name.
    correction : {"holm", "bonferroni", "fdr_bh", "none"}
        Multiple-comparison correction, per measure, over the runs compared to the baseline.
    test : {"t", "randomization"}
        Paired two-sided t-test, or paired randomization test (``permutations`` sign vectors).
    judged_only : bool
        As for :func:`evaluate`.
    alpha : float
        Significance level of the ``significant`` column, strictly between 0 and 1.
    permutations : int
        Randomization test: sign vectors (1 to 10,000,000; exact enumeration when 2^topics is fewer).
    bootstrap : int
        Percentile-bootstrap resamples for the intervals (0: none; at most 1,000,000); ``level`` their
        coverage, strictly between 0 and 1.
    seed : int
        Seed of the randomization test and the bootstrap: same seed, same numbers.
    relevance_level : int
        Lowest grade counted relevant (``-l``).

    Returns
    -------
    pandas.DataFrame
        One row per (measure, run), the baseline first: ``measure, run, topics, mean, ci_low, ci_high,
        delta, delta_ci_low, delta_ci_high, p, p_corrected, significant``; the baseline's test columns
        are empty. ``df.to_latex()`` / ``df.to_markdown()`` export it.

    Raises
    ------
    legalir.errors.LegalirError
        A bad argument (:class:`ApiError`, naming it and what is accepted), an unknown measure, or runs
        with no evaluated topic in common.

    Examples
    --------
    >>> legalir.compare({"bm25": run_a, "dense": run_b}, ds.qrels, ["nDCG@10"])   # doctest: +SKIP
    """
    import math

    from legalir.scoring import core

    found = core.compare(runs, qrels, measures, baseline=baseline, correction=correction, test=test,
                         judged_only=judged_only, relevance_level=relevance_level, alpha=alpha,
                         permutations=permutations, bootstrap=bootstrap, level=level, seed=seed)
    import pandas as pd

    rows = []
    nan = math.nan
    for c in found.comparisons:
        for j, run_name in enumerate(c.runs):
            ci = c.intervals[j] if c.intervals else None
            d = c.diff_intervals[j] if c.diff_intervals else None
            res = c.results[j]
            p = c.pvalues[j]
            rows.append({
                "measure": found.labels[c.measure], "run": run_name, "topics": c.topics, "mean": c.means[j],
                "ci_low": ci.low if ci else nan, "ci_high": ci.high if ci else nan,
                "delta": (c.means[j] - c.means[0]) if j else nan,
                "delta_ci_low": d.low if d else nan, "delta_ci_high": d.high if d else nan,
                "p": res.pvalue if res else nan, "p_corrected": nan if p is None else p,
                "significant": (p is not None and not math.isnan(p) and p < found.alpha) if j else None,
            })
    df = pd.DataFrame(rows)
    df.attrs.update({"test": found.test, "correction": found.correction, "alpha": found.alpha,
                     "baseline": found.baseline})
    return df
