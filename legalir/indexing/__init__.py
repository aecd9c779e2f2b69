"""Indexes over collections: sparse (Lucene, via Pyserini) and dense (FAISS)."""
from __future__ import annotations

import os
from pathlib import Path

from legalir.base import atomic
from legalir.errors import LegalirError
from legalir.indexing.folders import (  # noqa: F401
    keep_partitions,
    partition_keys,
    recorded_location,
    recorded_path,  # (re-exported)
)


class NotAnIndex(LegalirError, ValueError):
    """A folder that holds no index legalir built (raised by :func:`kind_of`)."""


class DamagedIndex(LegalirError, ValueError):
    """An index whose own metadata (``legalir-index.json``, ``legalir-dense.json``, its output marker, its
    change log) is not what legalir wrote: raised on open (:func:`check_metadata`), never read as defaults."""


def _damaged(path: Path, what: str, index: Path, kind: str) -> DamagedIndex:
    build = ("legalir index COLLECTION" if kind == "sparse" else "legalir index-dense EMBEDDINGS")
    again = (f"move {index} away and build the index again ({build} {index})" if path.name == atomic.MARKER
             else f"build the index again ({build} {index} --overwrite)")
    return DamagedIndex(f"{path}: {what}; this index's metadata is damaged, and legalir does not guess what it "
                        f"held (its BM25 parameters, collection, fields, release): restore the file, or {again}")


def _json_object(path: Path, index: Path, kind: str) -> dict:
    import json

    try:
        raw = path.read_bytes()
    except OSError as e:
        raise _damaged(path, f"cannot be read ({e.strerror or e})", index, kind) from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        why = e.msg if isinstance(e, json.JSONDecodeError) else "not UTF-8"
        raise _damaged(path, f"is not JSON ({why})", index, kind) from None
    if not isinstance(doc, dict):
        raise _damaged(path, f"holds a JSON {type(doc).__name__}, not the object legalir writes", index, kind)
    return doc


def _need(doc: dict, path: Path, index: Path, kind: str, key: str, types, what: str, required: bool = True):
    if key not in doc:
        if required:
            raise _damaged(path, f"has no {key!r} ({what})", index, kind)
        return
    value = doc[key]
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)) \
            or not isinstance(value, types):
        raise _damaged(path, f"{key!r} is {value!r:.60}, not {what}", index, kind)
    return value


def check_metadata(path: str | os.PathLike) -> None:
    """Check an index folder's own metadata, as legalir wrote it, before anything reads it.

    Checked: the output marker (``.legalir-output.json``: a JSON object naming the index's kind, its
    ``release`` a non-empty string when recorded), the index metadata of the folder or of each
    partition (``legalir-index.json``: ``input`` the collection, ``documents`` a count, ``fields`` a
    list of names, a pooled index's ``segments``; ``legalir-dense.json``: ``encoder``, ``dim``,
    ``documents``, ``index``) and the change log ``legalir index update`` writes
    (``legalir-updates/NNNNNN.jsonl.gz``, or an older version's ``legalir-updates.jsonl``; each line a
    change legalir wrote). A damaged file is a located
    error; nothing falls back to a default (Pyserini's BM25 parameters instead of the dataset's).

    Parameters
    ----------
    path : str or PathLike
        An index folder (the link ``legalir index`` publishes, or a version folder).

    Raises
    ------
    DamagedIndex
        Naming the file, what is wrong and what to do.
    NotAnIndex
        When the folder holds no index at all.
    """
    from legalir.indexing import changes, dense, sparse

    p = Path(path)
    kind, parts = kind_of(p)
    real = Path(os.path.realpath(p))
    marker_path = real / atomic.MARKER
    if os.path.lexists(marker_path):
        if marker_path.is_symlink():
            raise _damaged(marker_path, "is a symbolic link, not the marker legalir writes", p, kind)
        marker = _json_object(marker_path, p, kind)
        if not atomic.common._marker_shape({"kind": "?", **marker}):
            raise _damaged(marker_path, "is not a marker legalir wrote (its tables of entries are not lists and "
                                        "tables)", p, kind)
        want = sparse.KIND if kind == "sparse" else dense.KIND
        if marker.get("kind") != want:
            raise _damaged(marker_path, f"names the kind {marker.get('kind')!r:.40}, not {want!r} (the "
                                        f"folder holds a {'Lucene' if kind == 'sparse' else 'FAISS'} index)", p, kind)
        for key, what in (("release", "a release name"), ("date", "the release's date")):
            value = marker.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise _damaged(marker_path, f"{key!r} is {value!r:.40}, not {what}", p, kind)
    for key in parts or [""]:
        folder = real / key if key else real
        if kind == "sparse":
            meta_path = folder / sparse.META
            doc = _json_object(meta_path, p, kind)
            input_ = _need(doc, meta_path, p, kind, "input", str, "the collection it was built from")
            if not input_.strip():
                raise _damaged(meta_path, "'input' is empty, not the collection it was built from", p, kind)
            documents = _need(doc, meta_path, p, kind, "documents", int, "a count of documents")
            if documents < 0:
                raise _damaged(meta_path, f"'documents' is {documents}, not a count of documents", p, kind)
            fields = _need(doc, meta_path, p, kind, "fields", list, "a list of field names", required=False)
            if fields is not None and not all(isinstance(f, str) and f for f in fields):
                raise _damaged(meta_path, f"'fields' is {fields!r:.60}, not a list of field names", p, kind)
            _need(doc, meta_path, p, kind, "filter_types", dict, "a table of field types", required=False)
            if doc.get("pooled") is not None:
                _need(doc, meta_path, p, kind, "pooled", bool, "true or false")
            if doc.get("pooled"):
                _need(doc, meta_path, p, kind, "partition_field", str, "the partition field")
                segments = _need(doc, meta_path, p, kind, "segments", dict, "the segments of each partition")
                if not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in segments.values()):
                    raise _damaged(meta_path, "'segments' is not a list of segment names per partition", p, kind)
        else:
            meta_path = folder / dense.META
            doc = _json_object(meta_path, p, kind)
            _need(doc, meta_path, p, kind, "encoder", dict, "the encoder's settings")
            dim = _need(doc, meta_path, p, kind, "dim", int, "the vectors' dimension")
            documents = _need(doc, meta_path, p, kind, "documents", int, "a count of documents")
            if dim < 1 or documents < 0:
                raise _damaged(meta_path, f"'dim' {dim} or 'documents' {documents} is not a size", p, kind)
            spec = _need(doc, meta_path, p, kind, "index", dict, "the FAISS index's type")
            if not isinstance(spec.get("type"), str):
                raise _damaged(meta_path, f"'index' is {spec!r:.60}, without its type", p, kind)
            collection = doc.get("collection")
            if collection is not None and not isinstance(collection, str):
                raise _damaged(meta_path, f"'collection' is {collection!r:.60}, not a folder", p, kind)
    logs = changes.change_logs(real)
    if os.path.lexists(real / changes.UPDATES) and real / changes.UPDATES not in logs:
        logs.insert(0, real / changes.UPDATES)  # a link or a folder there: damaged
    if logs:
        # the changes applied since the build exist nowhere else: a log cut at a line end still reads as JSON, so
        # each is held to what the marker recorded when legalir wrote it
        recorded_files = (atomic.read_marker(real) or {}).get("files") or {}
        unproven = []
        for log in logs:
            recorded = recorded_files.get(log.relative_to(real).as_posix())
            if log.is_symlink() or (isinstance(recorded, dict) and not atomic.ownership.matches(log, recorded)):
                raise _damaged(log, "changed since legalir wrote it (its size, time or SHA-256 differ from what the "
                                    "index's marker records): changes applied to the index may be lost", p, kind)
            if not isinstance(recorded, dict):
                unproven.append(log)
        # a log whose SHA-256 is the one the marker recorded holds the bytes legalir wrote: its rows were checked
        # when it was written; a log the marker does not record (a version written before markers recorded
        # files) is read row by row
        try:
            for _ in changes.change_rows(real, only=unproven):  # each row checked, none kept
                pass
        except LegalirError as e:
            raise DamagedIndex(str(e)) from None


def kind_of(path: str | os.PathLike) -> tuple[str, list[str]]:
    """What an index folder holds: ``("sparse" | "dense", partition keys)``.

    Parameters
    ----------
    path : str or PathLike
        A folder written by ``legalir index`` (Lucene) or ``legalir index-dense`` (FAISS).

    Returns
    -------
    tuple of (str, list of str)
        The kind and, for a folder of per-partition indexes, their keys (``[]`` otherwise).

    Raises
    ------
    NotAnIndex
        When the folder holds neither kind.
    """
    from legalir.indexing import dense, sparse

    p = Path(path)
    if (p / sparse.META).exists():
        return "sparse", []
    if (p / dense.META).exists():
        return "dense", []
    sp, dn = sparse.partitions(p), dense.partitions(p)
    if sp:
        return "sparse", sp
    if dn:
        return "dense", dn

    if p.is_file():
        raise NotAnIndex(f"{p}: a file, not an index folder; give the folder that `legalir index` "
                         f"(or `legalir index-dense`) wrote")
    if (p / "manifest.json").exists() and (p / "corpus").is_dir():
        raise NotAnIndex(f"{p}: a collection folder, not an index; index it first "
                         f"(legalir index {p} INDEX_DIR) and give INDEX_DIR")
    what = "no such folder" if not p.exists() else "not a Lucene index nor a FAISS index"
    raise NotAnIndex(f"{p}: {what} (nor a folder of per-partition indexes); build it first "
                     f"(legalir index COLLECTION {p} / legalir index-dense EMBEDDINGS {p})")


def collection_of(path: str | os.PathLike) -> Path | None:
    """The collection folder an index was built from, when recorded and still there (else ``None``).

    The one place that derives it: a Lucene index records its corpus folder
    (``collections/<name>/corpus[/<partition>]``) in ``legalir-index.json``, a
    FAISS index its collection in its metadata.
    """
    import json

    from legalir.indexing import dense, sparse

    p = Path(path)
    try:
        kind, parts = kind_of(p)
        first = p / parts[0] if parts else p
        if kind == "sparse":
            corpus = recorded_location(json.loads((first / sparse.META).read_text(encoding="utf-8")), "input", first)
            root = (corpus.parent.parent if parts else corpus.parent) if corpus is not None else Path("")
        else:
            meta = dense.read_meta(p)
            root = recorded_location(meta, "collection", p if (p / dense.META).exists() else first) or Path("")
    except (OSError, ValueError, KeyError, IndexError):
        return None
    return root.resolve() if str(root) and (root / "manifest.json").exists() else None


#: how a searcher over an IndexPair can search
METHODS = ("bm25", "dense", "hybrid")


class MethodError(LegalirError, ValueError):
    """A search method unknown, or one the indexes at hand cannot serve (raised by :meth:`IndexPair.method`)."""


class IndexPair:
    """At most one Lucene and one FAISS index of the same collection: what one searcher or served name holds.

    Parameters
    ----------
    paths : sequence of str or PathLike
        One or two index folders (:func:`kind_of` tells their kinds).

    Raises
    ------
    NotAnIndex
        A folder that holds no index, two indexes of one kind, or a partitioned and an unpartitioned one.

    Attributes
    ----------
    sparse, dense : pathlib.Path or None
    sparse_parts, dense_parts : list of str
        Partition keys of each (``[]`` when not partitioned).
    methods : list of str
        ``bm25``, ``dense``, ``hybrid`` as the indexes allow, in that order.
    """

    def __init__(self, paths) -> None:
        self.sparse: Path | None = None
        self.dense: Path | None = None
        parts: dict[str, list[str]] = {}
        for p in (Path(x) for x in paths):
            kind, keys = kind_of(p)
            check_metadata(p)  # what it records is read below and by every reader: damaged, it is an error
            if getattr(self, kind) is not None:
                raise NotAnIndex(f"two {'Lucene' if kind == 'sparse' else 'FAISS'} indexes ({getattr(self, kind)} "
                                 f"and {p}); give at most one of each kind")
            setattr(self, kind, p)
            parts[kind] = keys
        if self.sparse is None and self.dense is None:
            raise NotAnIndex("no index folder given")
        if self.sparse and self.dense and bool(parts["sparse"]) != bool(parts["dense"]):
            raise NotAnIndex(f"{self.sparse} and {self.dense} are not both partitioned")
        self.sparse_parts: list[str] = parts.get("sparse", [])
        self.dense_parts: list[str] = parts.get("dense", [])
        self.partitions: list[str] = sorted(set(self.sparse_parts) | set(self.dense_parts))
        self.methods: list[str] = [m for m, ok in (("bm25", self.sparse), ("dense", self.dense),
                                                   ("hybrid", self.sparse and self.dense)) if ok]

    def method(self, method: str | None, name: str = "this searcher") -> str:
        """``method`` checked against what the pair offers; ``None``: the first it offers (bm25 where it can)."""
        if method in (None, ""):
            return self.methods[0]
        if method not in METHODS:
            raise MethodError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        if method == "bm25" and self.sparse is None:
            raise MethodError(f"{self.dense}: is a dense (FAISS) index, not a Lucene one, so BM25 cannot search it: "
                              f"search it with dense search (legalir search-dense {self.dense} TOPICS RUN, or "
                              f"method='dense'), or build a Lucene index of its collection (legalir index)")
        if method == "dense" and self.dense is None:
            raise MethodError(f"{self.sparse}: is a Lucene (BM25) index, not a dense (FAISS) one (dense search needs "
                              f"a FAISS index): search it with BM25 "
                              f"(legalir search {self.sparse} TOPICS RUN, or method='bm25'), or build a dense index "
                              f"of its collection (legalir encode, legalir index-dense)")
        if method not in self.methods:
            raise MethodError(f"{name} offers {', '.join(self.methods)}, not {method}: "
                              f"{'dense needs a FAISS index' if method == 'dense' else 'hybrid needs a Lucene and a FAISS index'}"
                              f"{' under one name' if name != 'this searcher' else ''}")
        return method
