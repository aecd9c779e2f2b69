"""The indexes ``legalir serve`` exposes: one :class:`IndexEntry` per name, serving one :class:`Snapshot`
(a :class:`legalir.Searcher` on pinned versions) at a time, reloaded when a new version is published;
:class:`DocStore` for a served collection."""
from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from legalir import collections
from legalir.api import Searcher
from legalir.base import atomic, log
from legalir.errors import LegalirError
from legalir.indexing import IndexPair, NotAnIndex, collection_of, kind_of
from legalir.indexing.changes import half_published
from legalir.serve.config import ConfigError
from legalir.serve.failures import Unavailable

_log = log.get(__name__)

#: seconds a reload waits for the second half of a Lucene + FAISS update before serving what is published
PAIR_WAIT_S = 30.0


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


# ------------------------------------------------------------------ indexes
def _kind(path: Path) -> tuple[str, list[str]]:
    """("sparse"|"dense", partition keys) of an index folder (:func:`legalir.indexing.kind_of`)."""

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
    links: each index's version folder pinned (:func:`legalir.base.atomic.pin`: no rebuild removes it
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

    def __init__(self, entry: IndexEntry, searcher: Searcher):
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

    def open(self, dense_keys: Iterable[str] = ()) -> Snapshot:
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
                "versions": self.versions(), "reloads": self.reloads if self.watched else None,
                **self._releases()}

    def _releases(self) -> dict:
        """``release`` (the one served now), ``releases`` (those ``as_of=`` reaches) and ``release_dates``
        (``{release: date}``, None where none is recorded), for an index of a code's releases; nothing for any
        other."""
        snap = self._current
        if snap is None:
            return {}
        releases = snap.searcher.releases
        return {"release": snap.searcher.release, "releases": releases,
                "release_dates": snap.searcher.release_dates} if releases else {}

    # ---- snapshots
    def open_snapshot(self, dense_keys: Iterable[str] = ()) -> Snapshot:
        """A new :class:`Snapshot` of the versions the links designate now, opened completely.

        Raises whatever opening raises (a half-written or broken folder); nothing stays open then.
        """
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
