"""The work behind `legalir serve`'s endpoints, without HTTP: search, documents, runs.

Search goes through the library's retrievers: :class:`legalir.search.bm25.BM25`
(BM25), :class:`legalir.search.vector.DenseRetriever` (FAISS) and
:func:`legalir.search.fusion.rrf` (hybrid); run scores through
:func:`legalir.scoring.evaluate`. What is added here is only what a server
needs: names for what is exposed, partition routing by a request parameter,
loaded searchers kept for the next request, document lookup by id,
metadata and snippets for display.

Nothing a request sends is ever used as a path: index, collection and run
names, partitions, document ids and topic ids are all looked up in tables
built at start-up from the configuration.

Concurrency (measured with ``scripts/bench_serve.py``):

* Lucene: pyjnius is not thread-safe: a Java method object is shared by all
  instances of a class and holds its receiver while it is called (pyjnius
  issues #287, #563), so two Python threads calling ``BM25.search`` at once,
  on one searcher *or on one searcher each*, fail now and then
  (``IncompatibleClassChangeError``, ``NullPointerException``; reproduced
  here with 8 threads). Every Java call of the server therefore goes through
  :class:`LuceneGate`, one at a time, and the searches waiting meanwhile are
  run together: one ``BM25.search`` per partition, i.e. one Anserini
  ``batch_search`` over Java threads, where Lucene is thread-safe. So one
  shared searcher per index/partition (``IndexSearcher`` is thread-safe;
  per-thread searchers would only add open readers).
* FAISS + encoder: one retriever per index/partition, one encoder per
  index; a dense search holds the index's lock while it encodes and
  searches, because a Hugging Face fast tokenizer must not be called from
  two threads at once ("Already borrowed"); torch and FAISS use several
  cores inside one call anyway. Dense search runs beside Lucene searches.
* Worker threads are attached to the JVM when they first call Java, and
  detached when the server stops (:class:`legalir.serve.app.Workers`).

Live index updates: an index given as the link `legalir index` (or `legalir
index update`) publishes, ``INDEX -> INDEX.vN``, is served one
:class:`Snapshot` at a time: its version folders pinned
(:func:`legalir.atomic.pin`), its Lucene searchers open on them, the
documents changed since its build. A thread (:meth:`Engine.start_reloading`)
reads the links every ``reload_interval`` seconds; when one changed, the new
version is opened completely and made current in one assignment. A request
takes the current snapshot once (:meth:`IndexEntry.acquire`) and uses it for
everything it does, so searches under way finish on the old version and no
answer mixes two; the old snapshot is closed (searchers closed, pins
released) when its last request ends, and the next publish removes its
folder. A version that cannot be opened is logged and skipped: the old one
goes on being served.
"""
from __future__ import annotations

import bisect
import contextlib
import functools
import itertools
import json
import math
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from legalir import collections, log, trec
from legalir.errors import LegalirError
from legalir.indexing import collection_of
from legalir.indexing.changes import half_published
from legalir.scoring.judged import is_judged
from legalir.serve.config import DEFAULT_RELOAD_INTERVAL, Config, ConfigError, RunSpec
from legalir.api import Hit, Searcher
from legalir.search import gate
from legalir.trec import Topic

_log = log.get(__name__)

from legalir.indexing import METHODS  # noqa: E402  (re-exported for the app)
MAX_K = 1000
MAX_BATCH = 1000
MAX_QUERY_CHARS = 10_000
#: an inline run (MCP evaluate/fuse) is at most this many characters (~60,000 TREC lines)
MAX_INLINE_RUN_CHARS = 3_000_000
SNIPPET_WORDS = 40
from legalir.scoring.measures import DEFAULT_MEASURES  # noqa: E402,F401  (the one default set, legalir.evaluate's)
#: Lucene's default English stop words (what the index ignores), not highlighted
STOPWORDS = frozenset("a an and are as at be but by for if in into is it no not of on or such that the their then "
                      "there these they this to was will with".split())
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


class ServeError(LegalirError):
    """A request that cannot be answered; ``status`` is its HTTP status."""

    status = 400


class BadRequest(ServeError):
    status = 400


class NotFound(ServeError):
    status = 404


#: seconds a reload waits for the second half of a Lucene + FAISS update before serving what is published
PAIR_WAIT_S = 30.0


class Unavailable(ServeError):
    status = 503


# ------------------------------------------------------------------ text helpers
_SUFFIXES = ("ing", "ed", "es", "s", "ly")


@functools.lru_cache(maxsize=1 << 16)
def norm_term(word: str) -> str:
    """A word folded for highlighting (the page's script does the same): lower case, crude suffixes off."""
    w = word.lower()
    for suffix in _SUFFIXES:
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


def query_terms(q: str) -> list[str]:
    """The query's folded terms, stop words left out, in first-seen order."""
    out: list[str] = []
    for w in _WORD.findall(q):
        if w.lower() in STOPWORDS:
            continue
        t = norm_term(w)
        if t not in out:
            out.append(t)
    return out


@functools.lru_cache(maxsize=4096)
def _hit_forms(terms: tuple[str, ...]) -> frozenset[str]:
    """The lower-case words that fold to one of ``terms`` (:func:`norm_term` only lowers and takes a suffix
    off, so they are each term and the term with each suffix that norm_term takes off again); built once a
    query, not once a hit."""
    return frozenset(c for t in set(terms) for c in (t, *(t + x for x in _SUFFIXES)) if norm_term(c) == t)


def snippet(text: str, terms: Iterable[str], width: int = SNIPPET_WORDS) -> str:
    """The ``width``-word window of ``text`` holding the most query terms (the start when none).

    Written for speed (it runs for every hit a server answers): words found by one ``findall``, hits
    by a set lookup of each word's lower case, the best window found among the hits' positions only, and
    character offsets taken only for the window. The answer is the one of sliding a window over every
    folded word (``tests/test_serve_hostile.py`` compares both on generated texts).
    """
    words = _WORD.findall(text)
    if len(words) <= width:
        return " ".join(text.split())
    forms = _hit_forms(tuple(terms))
    best_at = 0
    # the hits' word positions, found without a Python step per word (lower case, set lookup, compress: all C)
    at = list(itertools.compress(range(len(words)), map(forms.__contains__, map(str.lower, words)))) if forms else []
    if at:
        # the first window start holding the most hits: the count only rises where a window's last word
        # reaches a hit, so the candidates are 0 and those starts
        last = len(words) - width
        best, best_at = bisect.bisect_left(at, width), 0
        for p in at:
            s = p - width + 1
            if 1 <= s <= last:
                n = bisect.bisect_left(at, s + width) - bisect.bisect_left(at, s)
                if n > best:
                    best, best_at = n, s
        if best > 0:  # centre the window on its first and last query term
            first = at[bisect.bisect_left(at, best_at)]
            final = at[bisect.bisect_left(at, best_at + width) - 1]
            best_at = max(0, min(last, (first + final) // 2 - width // 2))
    end = best_at + width
    window = list(itertools.islice(_WORD.finditer(text), best_at, end))  # the skipped matches cost C time only
    start_char = 0 if best_at == 0 else window[0].start()
    end_char = len(text) if end >= len(words) else window[-1].end()
    out = " ".join(text[start_char:end_char].split())
    return ("… " if best_at > 0 else "") + out + (" …" if end < len(words) else "")


def describe(rec: Mapping[str, Any]) -> dict:
    """Display fields of a collection record: citation, heading path, state, category, body text.

    The citation is the ``citation`` (or ``source``) field; the heading path the
    ``heading_path`` (or ``path``) field, else, for statutes written as
    ``citation / heading > path / text`` (Housing's default text), the line
    after the citation when it holds ``' > '``.
    """
    fields = {k: v for k, v in rec.items() if k not in ("id", "contents")}
    text = str(rec.get("contents", ""))
    citation = fields.get("citation") or fields.get("source") or None
    heading = fields.get("heading_path") or fields.get("path") or None
    lines = text.split("\n")
    if citation and lines and lines[0].strip() == str(citation).strip():
        lines = lines[1:]
        if heading is None and lines and " > " in lines[0]:
            heading = lines[0].strip()
            lines = lines[1:]
    return {"citation": citation, "heading_path": heading, "state": fields.get("state"),
            "category": fields.get("category"), "fields": fields, "body": "\n".join(lines).strip()}


# ------------------------------------------------------------------ documents
class DocStore(collections.Corpus):
    """A served collection: :class:`legalir.collections.Corpus` under a name."""

    def __init__(self, name: str, root: str | Path):
        self.name = name
        try:
            super().__init__(root)
        except (LegalirError, ValueError, OSError) as e:
            raise ConfigError(f"collection {name}: {e}") from None

    def get(self, docid: str, partition: str | None = None) -> dict | None:  # type: ignore[override]
        """The record of ``docid`` (``{"id", "contents", ...}``), or None; ``partition`` narrows the search."""
        return self.record(docid, partition)

    def info(self) -> dict:
        return {"name": self.name, "dataset": self.manifest.get("dataset"), "partition_field": self.partition_field,
                "partitions": self.partitions, "documents": self.manifest.get("documents", {}).get("written")}


# the one way into the JVM: legalir.search.gate (the searcher core's gate, shared by every face)
LuceneGate = gate.LuceneGate
LUCENE = gate.LUCENE


# ------------------------------------------------------------------ indexes
def _kind(path: Path) -> tuple[str, list[str]]:
    """("sparse"|"dense", partition keys) of an index folder (:func:`legalir.indexing.kind_of`)."""
    from legalir.indexing import NotAnIndex, kind_of

    try:
        return kind_of(path)
    except NotAnIndex as e:
        raise ConfigError(str(e)) from None


def _version_label(pin) -> str:
    """The N of a pinned ``INDEX.vN`` folder, "-" for an index that is not versioned."""
    return str(pin.version) if pin.version is not None else "-"


class _Partitions:
    """The partitions of ``self.pair`` (a :class:`legalir.indexing.IndexPair`), for a snapshot and an entry."""

    pair: Any

    @property
    def sparse_parts(self) -> list[str]:
        return self.pair.sparse_parts

    @property
    def dense_parts(self) -> list[str]:
        return self.pair.dense_parts

    @property
    def partitions(self) -> list[str]:
        return self.pair.partitions

    @property
    def partitioned(self) -> bool:
        return bool(self.pair.sparse_parts or self.pair.dense_parts)


class Snapshot(_Partitions):
    """One version of an :class:`IndexEntry`'s indexes, open: all a request searches and shows.

    It is a :class:`legalir.Searcher` (the searcher core every face uses) opened on the entry's
    links: each index's version folder pinned (:func:`legalir.atomic.pin`: no rebuild removes it
    while the snapshot lives), the Lucene searcher of every partition opened on that folder (never
    on the link) before it is served, the documents changed since the build read. A request takes
    one snapshot (:meth:`IndexEntry.acquire`) and does everything with it: every partition, both legs
    of a hybrid search, the hits' display; so an answer never mixes two versions.

    Attributes
    ----------
    searcher : legalir.Searcher
    pair : legalir.indexing.IndexPair
        The version folders (``pair.sparse``, ``pair.dense``), their partitions and methods.
    versions : dict
        ``{"bm25"|"dense": N}``: the N of each ``INDEX.vN`` folder, "-" when not versioned.
    changed : dict
        ``{docid: record or None}``: documents added or replaced, or deleted (None), since the build.
    """

    def __init__(self, entry: "IndexEntry", searcher: Searcher):
        self.entry = entry
        self.searcher = searcher
        self.pair = searcher.pair
        self.pins = searcher.pins
        #: ``{kind: version folder}``, resolved (as :meth:`IndexEntry.current_targets` reads the links)
        self.targets = {kind: os.path.realpath(p) for kind, p in searcher.versions.items()}
        self.versions = {("bm25" if kind == "sparse" else "dense"): _version_label(p) for kind, p in self.pins.items()}
        self.docs = searcher.documents
        self.changed: dict[str, dict | None] = self.docs.changed
        self.refs = 0          # requests using it now (IndexEntry's lock guards it)
        self.retired = False   # no longer the entry's current snapshot: closed when the last request ends

    @property
    def closed(self) -> bool:
        return self.searcher.closed

    @property
    def sparse(self) -> Path | None:
        return self.pair.sparse

    @property
    def dense(self) -> Path | None:
        return self.pair.dense

    def open(self, dense_keys: Iterable[str] = ()) -> "Snapshot":
        """Open everything a request would wait for: every Lucene searcher, and the FAISS retrievers of
        ``dense_keys``; on any error, close what was opened."""
        try:
            self.searcher.warm()
            for key in dense_keys:
                self.searcher.warm_dense(key)
        except BaseException:
            self.close()
            raise
        return self

    def dense_loaded(self) -> list[str]:
        """Partitions whose FAISS retriever is loaded (a new version loads the same ones before it is served)."""
        return self.searcher.dense_loaded()

    def record(self, docid: str, key: str = "") -> dict | None:
        """The record of ``docid`` as this version holds it: a changed document's from the version
        (None when deleted: never the collection's stale text), any other from the collection
        (:class:`legalir.indexing.changes.Documents`)."""
        return self.docs.record(docid, key or None)

    def close(self) -> None:
        """Close the searcher: its Lucene searchers and pins (idempotent)."""
        self.searcher.close()

    def __repr__(self) -> str:
        return f"Snapshot({self.entry.name!r}, {self.versions})"


class IndexEntry(_Partitions):
    """One exposed name: a Lucene index, a FAISS index, or both (bm25, dense and hybrid).

    It serves one :class:`Snapshot` at a time. An index given as the link that `legalir index`
    publishes (``INDEX -> INDEX.vN``) is watched: :meth:`reload` (called every
    ``--reload-interval`` seconds by :class:`Engine`) opens a new version completely, then makes it
    current in one assignment; requests under way finish on the snapshot they took, which is closed
    when the last of them ends. An index given as a plain folder (or a version folder itself) is
    served as it is.
    """

    def __init__(self, name: str, dirs: list[Path], *, k1: float, b: float, device: str | None,
                 lucene_threads: int = 1):
        from legalir import atomic
        from legalir.indexing import IndexPair, NotAnIndex

        self.name = name
        try:
            pair = self.pair = IndexPair(dirs)  # the current version's, once one is served (_install)
        except NotAnIndex as e:
            raise ConfigError(f"--index {name}: {e}") from None
        self._current: Snapshot | None = None  # the version served
        #: the folders as given (a versioned index: its link)
        self.sparse, self.dense = pair.sparse, pair.dense
        self.links: dict[str, Path] = {k: p for k, p in (("sparse", pair.sparse), ("dense", pair.dense)) if p}
        #: the links watched for new versions (plain folders have none)
        self.watched: dict[str, Path] = {k: p for k, p in self.links.items() if atomic.current(p) != p}
        self.methods = pair.methods
        self.k1, self.b = k1, b
        self.lucene_threads = max(1, lucene_threads)
        self.device = device
        self.collection: DocStore | None = None
        self.partition_field: str | None = None
        self.reloads = 0          # new versions served since start
        self.reload_failures = 0  # new versions that could not be opened
        self._swap = threading.Lock()      # guards _current and every snapshot's refs / retired
        self._opening = threading.Lock()   # one snapshot opened at a time (first use, reloads, close)
        self._failed: dict[str, str] | None = None  # the link targets that failed to open last
        self._waiting: dict[str, float] = {}  # link targets -> when a half-published pair update was first seen
        self._encoders: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._closed = False


    def recorded_collection(self) -> Path | None:
        for kind in ("sparse", "dense"):
            d = getattr(self, kind)
            if d is not None:
                found = collection_of(d)
                if found is not None:
                    return found
        return None

    def versions(self) -> dict[str, str]:
        """``{"bm25"|"dense": N}`` of the version served now (of the links now, before the first request)."""
        snap = self._current
        if snap is not None:
            return dict(snap.versions)
        out = {}
        for kind, path in self.links.items():
            m = re.search(r"\.v(\d+)$", Path(os.path.realpath(path)).name)
            out["bm25" if kind == "sparse" else "dense"] = m.group(1) if m else "-"
        return out

    def info(self) -> dict:
        return {"name": self.name, "methods": self.methods, "default_method": self.methods[0],
                "partitioned": self.partitioned, "partition_field": self.partition_field,
                "partitions": self.partitions,
                "collection": self.collection.name if self.collection else None,
                "bm25": {"k1": self.k1, "b": self.b} if self.sparse else None,
                "versions": self.versions(), "reloads": self.reloads if self.watched else None}

    # ---- snapshots
    def open_snapshot(self, dense_keys: Iterable[str] = ()) -> Snapshot:
        """A new :class:`Snapshot` of the versions the links designate now, opened completely.

        Raises whatever opening raises (a half-written or broken folder); nothing stays open then.
        """
        from legalir.indexing import NotAnIndex

        try:
            searcher = Searcher(list(self.links.values()), k1=self.k1, b=self.b, device=self.device,
                                threads=self.lucene_threads, collection=self.collection)
        except NotAnIndex as e:
            raise ConfigError(f"index {self.name}: {e}") from None
        try:
            if searcher.pair.dense is not None:
                searcher.set_encoder(self.encoder(searcher.pair.dense))
        except BaseException:
            searcher.close()
            raise
        return Snapshot(self, searcher).open(dense_keys)

    @contextlib.contextmanager
    def acquire(self) -> Iterator[Snapshot]:
        """The current snapshot, held for the block: a reload meanwhile does not close it.

        Yields
        ------
        Snapshot
        """
        snap = self._take()
        try:
            yield snap
        finally:
            self._release(snap)

    def _take(self) -> Snapshot:
        while True:
            with self._swap:
                snap = self._current
                if snap is not None:
                    snap.refs += 1
                    return snap
            with self._opening:  # first use: open the version the links designate now
                if self._closed:
                    raise Unavailable(f"index {self.name!r} is closed (the server is stopping)")
                if self._current is None:
                    self._install(self.open_snapshot())

    def _release(self, snap: Snapshot) -> None:
        with self._swap:
            snap.refs -= 1
            done = snap.retired and snap.refs == 0
        if done:
            snap.close()

    def _install(self, new: Snapshot | None) -> Snapshot | None:
        """Make ``new`` current in one assignment (hold ``_opening``); the one it replaces is closed
        now if no request holds it, else when the last one releases it. Returns the replaced one."""
        with self._swap:
            old, self._current = self._current, new
            if new is not None:
                self.pair = new.pair
            done = False
            if old is not None:
                old.retired = True
                done = old.refs == 0
        if done:
            old.close()
        return old

    def current_targets(self) -> dict[str, str]:
        """``{kind: version folder}`` the watched links designate now (cheap: the links are read)."""
        return {kind: os.path.realpath(path) for kind, path in self.watched.items()}

    def reload(self) -> bool:
        """Serve the version the links designate now, if it changed: open it whole, then swap it in.

        A version that cannot be opened (half-copied, broken, not an index) is logged once, with the
        folder and the error; the current one goes on being served, and that version is not tried
        again until the links change again. Between the two publishes of a Lucene and a FAISS index
        updated together (:func:`legalir.indexing.changes.half_published`) the reload waits for the second,
        at most :data:`PAIR_WAIT_S` seconds.

        Returns
        -------
        bool
            Whether a new version is served now.
        """
        if not self.watched:
            return False
        with self._opening:
            cur = self._current
            if cur is None:
                return False  # not opened yet: the first request opens the current version
            now = self.current_targets()
            if all(cur.targets.get(k) == t for k, t in now.items()):
                self._failed = None
                return False
            if now == self._failed:
                return False
            # a Lucene and a FAISS index updated together: between their two publishes, wait for the second
            waiting = half_published(self.links, now)
            if waiting:
                since = self._waiting.setdefault(json.dumps(now, sort_keys=True), time.monotonic())
                if time.monotonic() - since < PAIR_WAIT_S:
                    return False
                _log.warning(f"index {self.name}: {waiting} after {PAIR_WAIT_S:g} s; serving what is published")
            self._waiting.clear()
            try:
                new = self.open_snapshot(cur.dense_loaded())
            except Exception as e:
                self._failed = now
                self.reload_failures += 1
                folders = ", ".join(t for k, t in now.items() if cur.targets.get(k) != t)
                _log.warning(f"index {self.name}: cannot serve {folders}: {e}; still serving version "
                             f"{self._shown(cur.versions)}")
                return False
            self._failed = None
            self._install(new)
            self.reloads += 1
        changed = [kind for kind in new.versions if new.versions[kind] != cur.versions.get(kind)]
        if len(new.versions) == 1:
            (kind,) = new.versions
            _log.info(f"index {self.name}: now serving version {new.versions[kind]} (was {cur.versions[kind]})")
        else:
            _log.info(f"index {self.name}: now serving " + "; ".join(
                f"{kind} version {new.versions[kind]} (was {cur.versions.get(kind)})" for kind in changed or new.versions))
        return True

    @staticmethod
    def _shown(versions: Mapping[str, str]) -> str:
        if len(versions) == 1:
            return next(iter(versions.values()))
        return ", ".join(f"{kind} {v}" for kind, v in versions.items())

    # ---- shared by snapshots
    def encoder(self, dense_dir: Path):
        """The query encoder of a FAISS index version: one per encoder setting, shared by the versions."""
        from legalir.indexing import dense as dense_index
        from legalir.search import vector as dense_search

        key = json.dumps(dense_index.read_meta(dense_dir).get("encoder"), sort_keys=True, default=str)
        found = self._encoders.get(key)
        if found is None:
            with self._lock:
                found = self._encoders.get(key)
                if found is None:
                    found = self._encoders[key] = dense_search.load_encoder(dense_dir, device=self.device)
        return found

    # ---- the current snapshot's, for callers that need no consistency across calls
    def search(self, queries: list, k: int, **options: Any) -> list:
        """:meth:`legalir.Searcher.search_many` on the current version."""
        with self.acquire() as snap:
            return snap.searcher.search_many(queries, k, **options)

    def warm(self) -> None:
        """Load what requests would wait for: the current version (every Lucene searcher: memory-mapped,
        cheap), the encoder (torch) with one FAISS index, the collection's id -> offset tables."""
        with self.acquire() as snap:
            if self.collection is not None:
                self.collection.warm()
            if snap.dense:
                snap.searcher.warm(dense=True)

    def close(self) -> None:
        """Stop serving: the current snapshot is closed (now, or when the last request using it ends)."""
        with self._opening:
            self._closed = True
            self._install(None)


# ------------------------------------------------------------------ runs
@dataclass
class RunEntry:
    name: str
    path: Path
    run: trec.Run
    qrels: trec.Qrels | None = None
    qrels_path: Path | None = None
    qrels_name: str | None = None
    topics: dict[str, Topic] | None = None
    topics_path: Path | None = None
    collection: DocStore | None = None
    judged_only: bool = False
    measures: list[str] = field(default_factory=list)
    evaluation: dict | None = None
    grade_names: dict[str, str] | None = None   # the dataset's words for its grades (ACORD: stars)

    def info(self) -> dict:
        from legalir.report import display_name

        values = self.evaluation["all"] if self.evaluation else None
        missing = sorted(set(self.qrels or {}) - set(self.run)) if self.qrels else []
        return {"name": self.name, "file": self.path.name, "topics": len(self.run),
                "qrels": self.qrels_name, "qrels_file": self.qrels_path.name if self.qrels_path else None,
                "collection": self.collection.name if self.collection else None,
                "judged_only": self.judged_only, "measures": self.measures,
                "all": values, "measure_names": {k: display_name(k) for k in values or {}},
                "grade_names": self.grade_names, "qrels_topics_not_in_run": len(missing)}


def _sibling_topics(qrels_path: Path) -> Path | None:
    """``collections/x/topics/<set>.jsonl`` (or .tsv) beside ``collections/x/qrels/<set>.txt``."""
    folder = qrels_path.parent.parent / "topics"
    for suffix in (".jsonl", ".tsv"):
        p = folder / f"{qrels_path.stem}{suffix}"
        if p.is_file():
            return p
    return None


# ------------------------------------------------------------------ the engine
class Engine:
    """Everything exposed, loaded and checked at start-up; each method answers one endpoint.

    ``reload_interval``: seconds between two looks at the links of versioned indexes, by the thread
    :meth:`start_reloading` starts (the server does when it starts); 0: never. See :meth:`reload`.
    """

    def __init__(self, cfg: Config, *, k1: float | None = None, b: float | None = None, lucene_threads: int = 1,
                 measures: list[str] | None = None, judged_only: bool | None = None, device: str | None = None,
                 quiet: bool = False, reload_interval: float = DEFAULT_RELOAD_INTERVAL):
        from legalir.search import bm25 as lucene

        if cfg.empty():
            raise ConfigError("nothing to serve: give at least one --index, --collection or --run")
        if not isinstance(reload_interval, (int, float)) or not math.isfinite(reload_interval) or reload_interval < 0:
            raise ConfigError(f"--reload-interval must be 0 (never) or a number of seconds, got {reload_interval!r}")
        self.quiet = quiet
        self.reload_interval = float(reload_interval)
        self._reloader: threading.Thread | None = None
        self._stop = threading.Event()
        self.collections: dict[str, DocStore] = {n: DocStore(n, p) for n, p in sorted(cfg.collections.items())}
        self.indexes: dict[str, IndexEntry] = {}
        for name, dirs in sorted(cfg.indexes.items()):
            sparse_dir = next((d for d in dirs if _kind(d)[0] == "sparse"), None)
            k1_, b_, source = (lucene.bm25_params(sparse_dir, k1, b) if sparse_dir is not None
                               else (lucene.DEFAULT_K1, lucene.DEFAULT_B, ""))
            if sparse_dir is not None:
                _log.info(f"index {name}: BM25 k1={k1_:g} b={b_:g} ({source})")
            entry = IndexEntry(name, dirs, k1=k1_, b=b_, device=device, lucene_threads=lucene_threads)
            entry.collection = self.collections.get(name) or self._collection_for(entry.recorded_collection(), name)
            if entry.collection is not None:
                entry.partition_field = entry.collection.partition_field
            self.indexes[name] = entry
        self.qrels_files: dict[str, Path] = dict(cfg.qrels)
        self._qrels: dict[str, trec.Qrels] = {}
        self._qrels_lock = threading.Lock()
        self.runs: dict[str, RunEntry] = {}
        for name, spec in sorted(cfg.runs.items()):
            self.runs[name] = self._load_run(spec, cfg, measures, judged_only)

    def _collection_for(self, root: Path | None, name: str) -> DocStore | None:
        """The registered collection at ``root``, else ``root`` registered under ``name`` (if free)."""
        if root is None:
            return None
        for store in self.collections.values():
            if store.root == root.resolve():
                return store
        if name in self.collections:
            return None
        self.collections[name] = DocStore(name, root)
        return self.collections[name]

    def _load_run(self, spec: RunSpec, cfg: Config, measures: list[str] | None,
                  judged_only: bool | None) -> RunEntry:
        from legalir import datasets
        from legalir.scoring import core

        # every run format legalir reads (TREC, CRUMB JSONL), as legalir eval and legalir.evaluate read it
        entry = RunEntry(spec.name, spec.file, core.to_run(spec.file, f"run {spec.name}"))
        qname = spec.qrels or (spec.name if spec.name in cfg.qrels else None)
        if qname is None and len(cfg.qrels) == 1:
            qname = next(iter(cfg.qrels))
        if spec.qrels and spec.qrels not in cfg.qrels:
            raise ConfigError(f"run {spec.name}: no qrels named {spec.qrels!r}; known: {', '.join(cfg.qrels)}")
        if qname is None and cfg.qrels:
            raise ConfigError(f"run {spec.name}: which qrels? give --qrels {spec.name}=FILE or name it in a "
                              f"config file ([run] {spec.name} = {{ file = ..., qrels = ... }})")
        if qname is not None:
            entry.qrels_name, entry.qrels_path = qname, cfg.qrels[qname]
            entry.qrels = trec.read_qrels(entry.qrels_path)
        entry.topics_path = spec.topics or (_sibling_topics(entry.qrels_path) if entry.qrels_path else None)
        if entry.topics_path:
            entry.topics = trec.read_topics(entry.topics_path)
        if spec.collection:
            if spec.collection not in self.collections:
                raise ConfigError(f"run {spec.name}: no collection named {spec.collection!r}; known: "
                                  f"{', '.join(self.collections) or 'none'}")
            entry.collection = self.collections[spec.collection]
        elif entry.qrels_path and (entry.qrels_path.parent.parent / "manifest.json").exists():
            root = entry.qrels_path.parent.parent
            entry.collection = self._collection_for(root, root.name)
        # the dataset's own protocol (ACORD: judged-only), unless told otherwise
        dataset_cls = None
        if entry.collection is not None:
            try:
                dataset_cls = type(datasets.get(entry.collection.manifest.get("dataset", ""), "."))
            except LegalirError:
                dataset_cls = None
        entry.judged_only = bool(getattr(dataset_cls, "judged_only", False)) if judged_only is None else judged_only
        names = getattr(dataset_cls, "grade_names", None)
        entry.grade_names = {str(g): str(w) for g, w in names.items()} if names else None
        entry.measures = core.measure_requests(measures if measures is not None else
                                               getattr(dataset_cls, "measures", None) or None)
        if entry.qrels is not None:
            try:
                # the one scoring function (legalir.evaluate's), keyed by trec_eval's names for the page
                entry.evaluation = core.score(entry.qrels, entry.run, entry.measures, judged_only=entry.judged_only)
            except LegalirError as e:
                raise ConfigError(f"run {spec.name} ({spec.file}) against {entry.qrels_path}: {e}") from None
        return entry

    def warm(self) -> None:
        for entry in self.indexes.values():
            entry.warm()

    def close(self) -> None:
        """Stop the reload thread (joined) and close every index's snapshot."""
        self.stop_reloading()
        for entry in self.indexes.values():
            entry.close()

    # ---- live index updates
    def reload(self) -> list[str]:
        """Look at every watched index link once; serve the new version of those that changed
        (:meth:`IndexEntry.reload`). Returns the names of the indexes now serving a new version."""
        done = []
        for entry in self.indexes.values():
            try:
                if entry.reload():
                    done.append(entry.name)
            except Exception as e:  # pragma: no cover - reload() logs what it expects; anything else too
                _log.warning(f"index {entry.name}: looking for a new version failed: {e}")
        return done

    def start_reloading(self) -> bool:
        """Start the thread that calls :meth:`reload` every ``reload_interval`` seconds (a daemon; stopped
        and joined by :meth:`close`). Nothing is started with an interval of 0 or no versioned index.

        Returns
        -------
        bool
            Whether the thread runs.
        """
        if self.reload_interval <= 0 or not any(e.watched for e in self.indexes.values()):
            return False
        if self._reloader is None:
            self._stop.clear()
            self._reloader = threading.Thread(target=self._watch, name="legalir-reload", daemon=True)
            self._reloader.start()
        return True

    def stop_reloading(self) -> None:
        """Stop the reload thread and wait for it (a reload under way finishes first)."""
        thread, self._reloader = self._reloader, None
        if thread is not None:
            self._stop.set()
            thread.join()

    def _watch(self) -> None:
        try:
            while not self._stop.wait(self.reload_interval):
                self.reload()
        finally:  # the thread called Java (opening searchers): detach it, as pyjnius asks
            if "jnius" in sys.modules:
                with contextlib.suppress(Exception):
                    sys.modules["jnius"].detach()

    def reload_counts(self) -> dict[str, dict[str, int]]:
        """``{index: {"reloads": n, "failures": n}}`` of the watched indexes (``/metrics``)."""
        return {e.name: {"reloads": e.reloads, "failures": e.reload_failures}
                for e in self.indexes.values() if e.watched}

    # ---- lookups
    def index(self, name: str) -> IndexEntry:
        if name not in self.indexes:
            raise NotFound(f"no index named {name!r}; known: {', '.join(self.indexes) or 'none'}")
        return self.indexes[name]

    def collection(self, name: str) -> DocStore:
        if name not in self.collections:
            raise NotFound(f"no collection named {name!r}; known: {', '.join(self.collections) or 'none'}")
        return self.collections[name]

    def run(self, name: str) -> RunEntry:
        if name not in self.runs:
            raise NotFound(f"no run named {name!r}; known: {', '.join(self.runs) or 'none'}")
        return self.runs[name]

    def health(self) -> dict:
        """``{"status": "ok", "version"}``: nothing of what is served. ``/health`` answers without a key and
        whatever the ``Host`` header (load balancers probe it by address), so a page that rebinds its own
        name to the server must learn nothing from it; ``/indexes``, ``/collections`` and ``/runs`` list
        what is served, behind the checks."""
        from legalir.version import __version__

        return {"status": "ok", "version": __version__}

    def list_indexes(self) -> list[dict]:
        return [e.info() for e in self.indexes.values()]

    def index_versions(self) -> dict[str, dict[str, str]]:
        """``{index: {"bm25"|"dense": version}}`` served now: the N of a versioned build's ``INDEX.vN``
        folder, else "-"."""
        return {name: e.versions() for name, e in self.indexes.items()}

    def list_collections(self) -> list[dict]:
        return [c.info() for c in self.collections.values()]

    # ---- search
    @staticmethod
    def _check_query(q: Any, where: str) -> str:
        """The transport's own limit (a request's size); what a query must be is the core's rule."""
        if isinstance(q, str) and len(q) > MAX_QUERY_CHARS:
            raise BadRequest(f"{where}query of {len(q)} characters; at most {MAX_QUERY_CHARS}")
        return q

    @staticmethod
    def _check_k(k: Any) -> int:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise BadRequest(f"k must be an integer from 1 to {MAX_K}, got {k!r}")
        return k

    @staticmethod
    def _hit(hit: Hit, terms: list[str]) -> dict:
        out: dict[str, Any] = {"rank": hit.rank, "id": hit.docid, "score": hit.score}
        if hit.partition:
            out["partition"] = hit.partition
        if hit.text is not None:
            d = describe({"id": hit.docid, "contents": hit.text, **hit.fields})
            out.update(citation=d["citation"], heading_path=d["heading_path"], state=d["state"],
                       category=d["category"], snippet=snippet(d["body"], terms),
                       metadata={k: v for k, v in d["fields"].items() if not k.startswith("_")})
            out["_same"] = " ".join(hit.text.split()).lower()
        return out

    @staticmethod
    def _mark_duplicates(hits: list[dict]) -> list[dict]:
        """A hit whose text equals a better-ranked one's (whitespace and case aside) gets ``duplicate_of``:
        that hit's rank (contracts repeat boilerplate clauses word for word; the page can collapse them)."""
        first: dict[str, int] = {}
        for h in hits:
            same = h.pop("_same", None)
            if same:
                if same in first:
                    h["duplicate_of"] = first[same]
                else:
                    first[same] = h["rank"]
        return hits

    def search_many(self, index: str, queries: list[tuple[str, str, str | None]], k: int = 10,
                    method: str | None = None, filter: str | None = None, citations: str | None = None) -> list[dict]:
        """``queries``: (id, text, partition) triples; one result per query, in order, searched by the
        searcher core (:meth:`legalir.Searcher.search_many`) on one version of the index. ``filter``
        (``state=california,nevada;type=statute``) and ``citations`` (``on``/``off``) apply to every query."""
        entry = self.index(index)
        k = self._check_k(k)
        if citations not in (None, "", "on", "off"):
            raise BadRequest(f"citations must be on or off, got {citations!r}")
        for i, (qid, text, partition) in enumerate(queries):
            self._check_query(text, f"query {i} ({qid}): " if len(queries) > 1 else "")
        cites = {"on": True, "off": False}.get(citations or "")
        # one version for the whole request: routing, every partition, both legs of hybrid, the hits' display
        with entry.acquire() as snap:
            searcher = snap.searcher
            method = searcher.pair.method(method or None, f"index {entry.name!r}")
            found = searcher.search_many([(text, partition or None) for _, text, partition in queries], k,
                                         method=method, filter=filter or None, citations=cites)
            out = []
            for (qid, text, partition), hits in zip(queries, found):
                terms = query_terms(text)
                out.append({"id": qid, "query": text, "index": index, "method": method,
                            "partition": collections.partition_key(partition) if partition else None,
                            "k": k, "terms": terms,
                            "hits": self._mark_duplicates([self._hit(h, terms) for h in hits])})
        return out

    def search(self, index: str, q: str, k: int = 10, method: str | None = None,
               partition: str | None = None, filter: str | None = None, citations: str | None = None) -> dict:
        out = self.search_many(index, [("q", q, partition)], k=k, method=method, filter=filter, citations=citations)[0]
        if filter:
            out["filter"] = filter
        return out

    # ---- documents
    def document(self, collection: str, docid: str, q: str | None = None) -> dict:
        """Document ``docid`` of a served collection, as the indexes serving it hold it now.

        A document changed since an index was built (``legalir index update``: added, replaced or
        deleted) is read from that index's current version (:attr:`Snapshot.changed`), so an added
        document is found, a replaced one shows its new text and a deleted one is not found (404);
        any other comes from the collection. When two served indexes of the collection say different
        things about one document, the first of them by name that changed it decides.
        """
        store = self.collection(collection)
        rec, changed = None, False
        for entry in sorted((e for e in self.indexes.values() if e.collection is store), key=lambda e: e.name):
            with entry.acquire() as snap:
                if docid in snap.changed:
                    rec, changed = snap.record(docid), True
                    break
        if not changed:
            rec = store.get(docid)
        if rec is None:
            raise NotFound(f"collection {collection!r} has no document {docid!r}")
        d = describe(rec)
        partition = rec.pop("_partition", None) or None
        return {"collection": collection, "id": docid, "partition": partition, "contents": rec.get("contents", ""),
                "citation": d["citation"], "heading_path": d["heading_path"], "state": d["state"],
                "category": d["category"], "metadata": {k: v for k, v in d["fields"].items() if not k.startswith("_")},
                "terms": query_terms(q) if q else []}

    # ---- runs
    def list_runs(self) -> list[dict]:
        return [r.info() for r in self.runs.values()]

    def _per_topic(self, entry: RunEntry, qid: str) -> dict | None:
        if entry.evaluation is None:
            return None
        return entry.evaluation["per_topic"].get(qid)

    def run_topics(self, name: str) -> dict:
        entry = self.run(name)
        qids = sorted(entry.run)  # the run's topics (info() counts the qrels topics it lacks)
        topics = []
        for qid in qids:
            t = entry.topics.get(qid) if entry.topics else None
            fields = dict(t.fields) if t else {}
            topics.append({"qid": qid, "text": t.text if t else None, "category": fields.get("category"),
                           "state": fields.get("state"), "retrieved": len(entry.run.get(qid, {})),
                           "relevant": sum(1 for r in (entry.qrels or {}).get(qid, {}).values() if r > 0),
                           "measures": self._per_topic(entry, qid)})
        return {**entry.info(), "topic_list": topics}

    def run_topic(self, name: str, qid: str, compare: str | None = None, k: int = 20) -> dict:
        entry = self.run(name)
        other = self.run(compare) if compare else None
        if not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise BadRequest(f"k must be an integer from 1 to {MAX_K}, got {k!r}")
        if qid not in entry.run and qid not in (entry.qrels or {}):
            raise NotFound(f"run {name!r} has no topic {qid!r} (GET /runs/{name}/topics lists them)")
        labels = (entry.qrels or {}).get(qid, {})
        ranking = trec.ranking(entry.run.get(qid, {}))
        rank_of = {d: r for r, (d, _) in enumerate(ranking, 1)}
        # judged-only scoring sees only judged documents: their ranks among themselves
        judged_rank = {d: r for r, d in enumerate((d for d, _ in ranking if is_judged(d, labels)), 1)}
        other_rank = {d: r for r, (d, _) in enumerate(trec.ranking(other.run.get(qid, {})), 1)} if other else {}
        t = entry.topics.get(qid) if entry.topics else None
        store = entry.collection

        def doc_fields(docid: str) -> dict:
            rec = store.get(docid) if store else None
            if rec is None:
                return {}
            d = describe(rec)
            return {"citation": d["citation"], "heading_path": d["heading_path"],
                    "snippet": snippet(d["body"], query_terms(t.text) if t else [], 25)}

        hits = []
        for r, (docid, score) in enumerate(ranking[:k], 1):
            hits.append({"rank": r, "id": docid, "score": score, "label": labels.get(docid),
                         "judged": is_judged(docid, labels), "judged_rank": judged_rank.get(docid), **({"other_rank": other_rank.get(docid)} if other else {}),
                         **doc_fields(docid)})
        gold = sorted(((d, r) for d, r in labels.items() if r > 0), key=lambda dr: (-dr[1], dr[0]))
        gold_out = [{"id": d, "label": r, "rank": rank_of.get(d), "judged_rank": judged_rank.get(d),
                     **({"other_rank": other_rank.get(d)} if other else {}), **doc_fields(d)} for d, r in gold]
        out = {"run": name, "qid": qid, "in_run": qid in entry.run, "has_qrels": qid in (entry.qrels or {}),
               "text": t.text if t else None, "fields": dict(t.fields) if t else {},
               "collection": store.name if store else None, "judged_only": entry.judged_only,
               "retrieved": len(ranking), "k": k, "measures": self._per_topic(entry, qid),
               "terms": query_terms(t.text) if t else [], "hits": hits, "gold": gold_out}
        if other:
            out["compare"] = {"run": other.name, "retrieved": len(other_rank), "in_run": qid in other.run,
                              "measures": self._per_topic(other, qid)}
        return out

    # ---- scoring and fusion (the MCP tools evaluate and fuse)
    def qrels_named(self, name: str) -> trec.Qrels:
        """The served qrels called ``name`` (read once)."""
        if name not in self.qrels_files:
            raise NotFound(f"no qrels named {name!r}; known: {', '.join(self.qrels_files) or 'none (start with --qrels)'}")
        with self._qrels_lock:
            if name not in self._qrels:
                served = next((r.qrels for r in self.runs.values() if r.qrels_name == name and r.qrels), None)
                self._qrels[name] = served if served is not None else trec.read_qrels(self.qrels_files[name])
            return self._qrels[name]

    def _a_run(self, name: str | None, text: str | None, where: str = "") -> tuple[str, trec.Run, RunEntry | None]:
        """(label, run, served entry or None) of a served run's name or a run's TREC text."""
        if (name is None) == (text is None):
            raise BadRequest(f"{where}give either the name of a served run or the run itself as TREC lines "
                             f"(qid Q0 docid rank score tag), not {'both' if name else 'neither'}")
        if name is not None:
            from legalir import checks

            entry = self.run(checks.text(f"{where}run", name))
            return name, entry.run, entry
        from legalir import checks, runformats

        checks.text(f"{where}run_text", text)
        if len(text) > MAX_INLINE_RUN_CHARS:
            raise BadRequest(f"{where}inline run of {len(text):,} characters; at most {MAX_INLINE_RUN_CHARS:,} "
                             f"(serve a large run with --run NAME=FILE and give its name)")
        data = text.encode("utf-8")
        if runformats.sniff_bytes(data, INLINE) == "crumb":  # every run format legalir reads
            return INLINE, runformats.read_crumb_run(INLINE, data=data), None
        return INLINE, trec.read_run(INLINE, data=data), None

    def _scoring(self, entries: list[RunEntry | None], qrels: str | None, measures: list[str] | None,
                 judged_only: bool | None) -> tuple[str | None, list[str], bool]:
        """The qrels name, measures and protocol to score with: as asked, else the served runs' own."""
        from legalir import checks

        served = [e for e in entries if e is not None]
        if judged_only is not None:
            judged_only = checks.boolean("judged_only", judged_only)
        if qrels is not None:
            qrels = checks.text("qrels", qrels)
        if qrels is None:
            names = {e.qrels_name for e in served if e.qrels_name}
            if len(names) == 1:
                qrels = names.pop()
            elif len(self.qrels_files) == 1:
                qrels = next(iter(self.qrels_files))
        if qrels is not None:
            self.qrels_named(qrels)  # a 404 for an unknown name
        same = [e for e in self.runs.values() if qrels is not None and e.qrels_name == qrels]
        if judged_only is None:
            judged_only = bool(same and same[0].judged_only)
        if measures is None:
            measures = same[0].measures if same else None
        from legalir.scoring import core

        return qrels, core.measure_requests(measures), judged_only

    def evaluate(self, run: str | None = None, run_text: str | None = None, qrels: str | None = None,
                 measures: list[str] | None = None, judged_only: bool | None = None,
                 per_topic: bool = False) -> dict:
        """Score a served run (by name) or an inline TREC or CRUMB JSONL run against served qrels
        (:func:`legalir.evaluate`: POST /runs/evaluate and the MCP evaluate tool)."""
        from legalir import api, checks

        per_topic = checks.boolean("per_topic", per_topic)
        label, data, entry = self._a_run(run, run_text)
        qname, measures, judged_only = self._scoring([entry], qrels, measures, judged_only)
        if qname is None:
            known = ", ".join(self.qrels_files) or "none (start the server with --qrels)"
            raise BadRequest(f"which qrels? give qrels=, one of: {known}")
        scores = api.evaluate(self.qrels_named(qname), data, measures, judged_only=judged_only, per_topic=True)
        out = {"run": label, "qrels": qname, "judged_only": judged_only, "measures": measures,
               "topics": len(scores["per_topic"]), "all": scores["all"]}
        if per_topic:
            out["per_topic"] = scores["per_topic"]
        return out

    def fuse(self, runs: list[str] | None = None, run_texts: list[str] | None = None, method: str = "rrf",
             weights: list[float] | None = None, rrf_k: float | None = None, norm: str = "minmax",
             depth: int | None = None, qrels: str | None = None, measures: list[str] | None = None,
             judged_only: bool | None = None, topics: list[str] | None = None, k: int = 10) -> dict:
        """Fuse runs (:func:`legalir.search.fusion.fuse`); the fused run's top ``k`` for ``topics`` and, with
        qrels, its scores beside each input's."""
        from legalir import api
        from legalir.search import fusion

        items = [self._a_run(n, None, f"run {n!r}: ") for n in runs or []]
        items += [self._a_run(None, t, f"run_texts[{i}]: ") for i, t in enumerate(run_texts or [])]
        if len(items) < 2:
            raise BadRequest(f"fusion needs at least two runs, got {len(items)}")
        k = self._check_k(k)
        fused = fusion.fuse([r for _, r, _ in items], method=method, weights=weights,
                            k=fusion.DEFAULT_RRF_K if rrf_k is None else rrf_k, norm=norm, depth=depth)
        qids = sorted(fused)
        wanted = list(topics) if topics else qids[:5]
        missing = [q for q in wanted if q not in fused]
        if missing:
            raise NotFound(f"no fused topic {', '.join(map(repr, missing[:5]))}; the runs have: "
                           f"{', '.join(qids[:10])}{' ...' if len(qids) > 10 else ''}")
        out: dict[str, Any] = {
            "method": method, "runs": [label if label != INLINE else f"run_texts[{i - len(runs or [])}]"
                                       for i, (label, _, _) in enumerate(items)],
            "topics": len(fused),
            "rankings": {q: [{"rank": r, "id": d, "score": s} for r, (d, s) in enumerate(trec.ranking(fused[q])[:k], 1)]
                         for q in wanted}}
        qname, measures, judged_only = self._scoring([e for _, _, e in items], qrels, measures, judged_only)
        if qname is not None:
            qr = self.qrels_named(qname)
            out["scores"] = {"qrels": qname, "judged_only": judged_only, "measures": measures,
                             "fused": api.evaluate(qr, fused, measures, judged_only=judged_only),
                             "inputs": {name: api.evaluate(qr, r, measures, judged_only=judged_only)
                                        for name, (_, r, _) in zip(out["runs"], items)}}
        return out


INLINE = "(inline run)"


def build(cfg: Config, **kwargs: Any) -> Engine:
    """An :class:`Engine` for ``cfg``, with its searchers loaded (what the first request would wait for)."""
    engine = Engine(cfg, **kwargs)
    if not kwargs.get("quiet"):
        for e in engine.indexes.values():
            _log.info(f"serve: index {e.name}: {', '.join(e.methods)}"
                      + (f", {len(e.partitions)} partitions" if e.partitioned else "")
                      + (f", documents from {e.collection.root}" if e.collection else ", no collection (ids only)"))
        for r in engine.runs.values():
            _log.info(f"serve: run {r.name}: {len(r.run)} topics"
                      + (f", scored against {r.qrels_path}" if r.qrels_path else ", no qrels"))
    engine.warm()
    return engine
