"""Indexes over collections: sparse (Lucene, via Pyserini) and dense (FAISS)."""
from __future__ import annotations

import os
from pathlib import Path

from legalir.errors import LegalirError


from legalir.indexing.folders import (keep_partitions, partition_keys, recorded_location,  # noqa: F401
                                      recorded_path)  # (re-exported)


class NotAnIndex(LegalirError, ValueError):
    """A folder that holds no index legalir built (raised by :func:`kind_of`)."""


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
        if method not in self.methods:
            raise MethodError(f"{name} offers {', '.join(self.methods)}, not {method}: "
                              f"{'dense needs a FAISS index' if method == 'dense' else 'hybrid needs a Lucene and a FAISS index'}"
                              f"{' under one name' if name != 'this searcher' else ''}")
        return method
