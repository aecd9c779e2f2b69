"""FAISS indexes over encoded collections (one per corpus, or one per partition).

An index folder holds ``index.faiss``, ``docids.txt`` (row -> document id) and
``legalir-dense.json`` (the encoder's settings, the index type and its
parameters, the collection it came from). Index types, all inner product
(cosine for normalised vectors):

* ``flat``   exact search (``IndexFlatIP``), the default;
* ``hnsw``   graph search (``IndexHNSWFlat``: ``--hnsw-m``, ``--ef-construction``; ``--ef-search`` at search);
* ``ivfpq``  inverted lists + product quantisation (``IndexIVFPQ``: ``--nlist``, ``--pq-m``, ``--pq-bits``;
  ``--nprobe`` at search), trained on (a sample of) the corpus.

Builds are atomic and versioned as a whole (every partition), like Lucene
builds: see :mod:`legalir.atomic`. An index is searched on
the GPU when FAISS was built with GPU support and a CUDA device is visible
(``faiss.get_num_gpus() > 0``; flat and IVF-PQ, HNSW has no GPU form), on
the CPU otherwise. FAISS is imported lazily: it comes from the ``[cpu]``
(``faiss-cpu``) or ``[gpu]`` (``faiss-gpu-cu12``) extra.
"""
from __future__ import annotations
from legalir.errors import LegalirError

import json
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from legalir import atomic, collections
from legalir.index import encoders, partition_keys

META = "legalir-dense.json"
INDEX_FILE = "index.faiss"
DOCIDS = "docids.txt"
TYPES = ("flat", "hnsw", "ivfpq")
KIND = "dense-index"


class DenseIndexError(LegalirError, ValueError):
    """A dense index that cannot be built or used as asked."""


def faiss():
    """The faiss module, or a clear error saying how to install it."""
    try:
        import faiss as _faiss
    except ImportError:
        raise DenseIndexError("FAISS is not installed: pip install 'legalir[cpu]' (faiss-cpu) or "
                              "'legalir[gpu]' (faiss-gpu-cu12)") from None
    return _faiss


def num_gpus() -> int:
    f = faiss()
    return int(f.get_num_gpus()) if hasattr(f, "get_num_gpus") else 0


@dataclass(frozen=True)
class IndexSpec:
    type: str = "flat"
    hnsw_m: int = 32
    ef_construction: int = 200
    nlist: int | None = None  # default: about 4 * sqrt(n), at most n / 39
    pq_m: int | None = None  # default: dim / 4 (sub-vectors of 4 dimensions)
    pq_bits: int = 8
    train_size: int = 200_000
    seed: int = 1234

    def check(self, dim: int, n: int) -> None:
        if self.type not in TYPES:
            raise DenseIndexError(f"index type must be one of {', '.join(TYPES)}, got {self.type!r}")
        if self.type == "hnsw" and self.hnsw_m < 2:
            raise DenseIndexError(f"--hnsw-m must be at least 2, got {self.hnsw_m}")
        if self.type == "ivfpq":
            m = self.pq_m or max(1, dim // 4)
            if dim % m:
                raise DenseIndexError(f"--pq-m {m} must divide the vector dimension {dim}")
            if not 1 <= self.pq_bits <= 16:
                raise DenseIndexError(f"--pq-bits must be between 1 and 16, got {self.pq_bits}")
            if n < 2 ** self.pq_bits:
                raise DenseIndexError(f"IVF-PQ with {self.pq_bits}-bit codes needs at least {2 ** self.pq_bits} "
                                      f"documents to train, this corpus has {n}: use fewer --pq-bits, or --type flat")
            if self.nlist is not None and not 1 <= self.nlist <= n:
                raise DenseIndexError(f"--nlist must be between 1 and the number of documents ({n}), "
                                      f"got {self.nlist}")


def _make_index(spec: IndexSpec, dim: int, n: int):
    f = faiss()
    if spec.type == "flat":
        return f.IndexFlatIP(dim)
    if spec.type == "hnsw":
        index = f.IndexHNSWFlat(dim, int(spec.hnsw_m), f.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = int(spec.ef_construction)
        return index
    nlist = spec.nlist or max(1, min(int(4 * np.sqrt(n)), n // 39 or 1))
    m = spec.pq_m or max(1, dim // 4)
    quantizer = f.IndexFlatIP(dim)
    index = f.IndexIVFPQ(quantizer, dim, int(nlist), int(m), int(spec.pq_bits), f.METRIC_INNER_PRODUCT)
    index.cp.seed = int(spec.seed)
    return index


def _training_sample(emb_dir: Path, n: int, size: int, seed: int) -> np.ndarray:
    rows = np.sort(np.random.default_rng(seed).choice(n, size=min(n, size), replace=False))
    out, offset = [], 0
    for shard in encoders.iter_shards(emb_dir):
        pick = rows[(rows >= offset) & (rows < offset + len(shard))] - offset
        if len(pick):
            out.append(np.asarray(shard[pick], dtype=np.float32))
        offset += len(shard)
    return np.ascontiguousarray(np.concatenate(out))


def collection_docids(collection_dir: str | os.PathLike, partition: str | None) -> list[str]:
    return [str(r["id"]) for r in collections.iter_documents(collection_dir, partition or None)]


def _is_legacy_index(path: Path) -> bool:
    """A dense index folder written by legalir before output markers existed."""
    return (path / META).exists() or bool(partition_keys(path, META))


def _write_index(folder: Path, index, emb_dir: Path, manifest: dict, spec: IndexSpec, dim: int, n: int,
                 coll, partition, source: dict) -> None:
    f = faiss()
    folder.mkdir(parents=True, exist_ok=True)
    f.write_index(index, str(folder / INDEX_FILE))
    shutil.copyfile(emb_dir / encoders.DOCIDS, folder / DOCIDS)
    meta = {"encoder": manifest["encoder"], "dim": dim, "documents": n, "index": asdict(spec),
            "embeddings": str(emb_dir), "collection": str(coll) if coll is not None else None,
            "partition": partition, "partition_field": source.get("partition_field")}
    atomic.write_json(folder / META, meta)


def build_one(emb_dir: str | os.PathLike, index_dir: str | os.PathLike, spec: IndexSpec = IndexSpec(),
              collection_dir: str | os.PathLike | None = None, threads: int | None = None,
              overwrite: bool = False) -> int:
    """Build one FAISS index from a complete embeddings folder into ``index_dir`` (atomic); returns its size.

    The embeddings' document ids are checked against the collection
    (``collection_dir``, else the one recorded when encoding): the same ids in
    the same order, or a :class:`DenseIndexError` and nothing written.
    """
    with atomic.atomic_dir(index_dir, KIND, overwrite=overwrite, legacy=_is_legacy_index, versioned=True) as tmp:
        index, emb_dir, manifest, dim, n, coll, partition, source = _make(emb_dir, spec, collection_dir, threads)
        _write_index(tmp, index, emb_dir, manifest, spec, dim, n, coll, partition, source)
    return n


def _make(emb_dir, spec: IndexSpec, collection_dir, threads):
    """The FAISS index of a complete embeddings folder, checked against its collection, in memory."""
    f = faiss()
    emb_dir = Path(emb_dir)
    manifest = encoders.read_manifest(emb_dir)
    dim, n = int(manifest["dim"]), int(manifest["documents"])
    spec.check(dim, n)
    docids = encoders.read_docids(emb_dir)
    if len(docids) != n or encoders.docids_digest(docids) != manifest["docids_sha256"]:
        raise DenseIndexError(f"{emb_dir / encoders.DOCIDS}: does not match {emb_dir / encoders.MANIFEST} "
                              f"({len(docids)} ids, manifest says {n})")
    source = manifest.get("source") or {}
    coll = collection_dir or source.get("collection")
    partition = source.get("partition") or None
    if collection_dir is None and coll is not None and not (Path(coll) / "manifest.json").exists():
        raise DenseIndexError(f"{emb_dir}: the collection it was encoded from ({coll}) is gone; name it with "
                              f"--collection to check the document ids against it")
    if coll is not None:
        expected = collection_docids(coll, partition)
        if expected != docids:
            missing = sorted(set(expected) - set(docids))
            extra = sorted(set(docids) - set(expected))
            detail = (f"{len(docids)} ids in the embeddings, {len(expected)} in the collection"
                      + (f"; not encoded: {', '.join(missing[:5])}" if missing else "")
                      + (f"; not in the collection: {', '.join(extra[:5])}" if extra else "")
                      + ("; same ids in another order" if not missing and not extra else ""))
            where = f"{coll}" + (f" partition {partition!r}" if partition else "")
            raise DenseIndexError(f"{emb_dir / encoders.DOCIDS}: the document ids do not match the collection "
                                  f"{where} ({detail}); encode it again (legalir encode --overwrite)")
    if threads:
        f.omp_set_num_threads(int(threads))
    index = _make_index(spec, dim, n)
    if not index.is_trained:
        index.train(_training_sample(emb_dir, n, spec.train_size, spec.seed))
    for shard in encoders.iter_shards(emb_dir):
        index.add(np.ascontiguousarray(shard, dtype=np.float32))
    if index.ntotal != n:  # pragma: no cover - invariant
        raise DenseIndexError(f"{emb_dir}: {index.ntotal} vectors added, {n} expected")
    return index, emb_dir, manifest, dim, n, coll, partition, source


def build(emb_dir: str | os.PathLike, index_dir: str | os.PathLike, spec: IndexSpec = IndexSpec(),
          collection_dir: str | os.PathLike | None = None, partitions: list[str] | None = None,
          threads: int | None = None, quiet: bool = False, overwrite: bool = False) -> dict[str, int]:
    """Index an embeddings folder: one index, or one per partition (``index_dir/<partition>/``).

    Atomic and versioned as a whole, like Lucene builds (:mod:`legalir.atomic`); building only some
    ``partitions`` keeps the other partitions of the current index.
    """
    emb_dir = Path(emb_dir)
    parts = encoders.partitions(emb_dir)
    if not parts:
        if partitions:
            raise DenseIndexError(f"{emb_dir}: not partitioned, cannot build partitions {partitions}")
        keys = [""]
    else:
        keys = parts if partitions is None else partitions
        unknown = [k for k in keys if k not in parts]
        if unknown:
            raise DenseIndexError(f"{emb_dir}: no embeddings for partition(s) {unknown}; known: {', '.join(parts)}")
    index_dir = Path(index_dir)
    out: dict[str, int] = {}
    with atomic.atomic_dir(index_dir, KIND, overwrite=overwrite, legacy=_is_legacy_index, versioned=True) as tmp:
        if parts and partitions is not None:  # keep the partitions not rebuilt now
            old = atomic.current(index_dir)
            for key in partition_keys(old, META) if old.is_dir() else []:
                if key not in keys:
                    atomic.copy_linked(old / key, tmp / key)
        for i, key in enumerate(keys, 1):
            t0 = time.time()
            src = emb_dir / key if key else emb_dir
            index, _, manifest, dim, n, coll, partition, source = _make(src, spec, collection_dir, threads)
            _write_index(tmp / key if key else tmp, index, src, manifest, spec, dim, n, coll, partition, source)
            del index
            out[key] = n
            if not quiet:
                where = index_dir / key if key else index_dir
                print(f"indexed {n} vectors -> {where} ({spec.type}, [{i}/{len(keys)}], "
                      f"{time.time() - t0:.1f}s)", file=sys.stderr)
    return out


def partitions(index_dir: str | os.PathLike) -> list[str]:
    """Partition keys of a partitioned dense index folder; [] when it is one index."""
    return partition_keys(index_dir, META)


def read_meta(index_dir: str | os.PathLike) -> dict[str, Any]:
    root = Path(index_dir)
    path = root / META
    if not path.exists():
        parts = partitions(root)
        if parts:
            path = root / parts[0] / META
        else:
            raise DenseIndexError(f"{root}: no dense index here ({META} missing); build it first (legalir index-dense)")
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


class LoadedIndex:
    """A FAISS index in memory, with its row -> docid mapping; on the GPU when one is usable."""

    def __init__(self, index_dir: str | os.PathLike, gpu: bool | None = None, ef_search: int | None = None,
                 nprobe: int | None = None, threads: int | None = None):
        f = faiss()
        # resolved once: every file below comes from the same version of a versioned index
        self.dir = Path(os.path.realpath(index_dir))
        if not (self.dir / META).exists() or not (self.dir / INDEX_FILE).exists():
            raise DenseIndexError(f"{self.dir}: no dense index here; build it first (legalir index-dense)")
        self.meta = read_meta(self.dir)
        with open(self.dir / DOCIDS, encoding="utf-8") as fh:
            self.docids = [line.rstrip("\n") for line in fh]
        if threads:
            f.omp_set_num_threads(int(threads))
        index = f.read_index(str(self.dir / INDEX_FILE))
        if index.ntotal != len(self.docids):
            raise DenseIndexError(f"{self.dir}: {index.ntotal} vectors but {len(self.docids)} document ids")
        self.dim = int(index.d)
        kind = self.meta["index"]["type"]
        if kind == "hnsw" and ef_search:
            index.hnsw.efSearch = int(ef_search)
        if kind == "ivfpq" and nprobe:
            index.nprobe = int(nprobe)
        self.on_gpu = False
        use_gpu = (num_gpus() > 0) if gpu is None else gpu
        if use_gpu and num_gpus() == 0:
            raise DenseIndexError("--gpu asked for, but FAISS sees no GPU (install faiss-gpu-cu12, check CUDA)")
        if use_gpu and kind != "hnsw":  # pragma: no cover - needs a GPU
            self._res = f.StandardGpuResources()
            index = f.index_cpu_to_gpu(self._res, 0, index)
            if kind == "ivfpq" and nprobe:
                index.nprobe = int(nprobe)
            self.on_gpu = True
        self.index = index

    def search(self, queries: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        q = np.ascontiguousarray(queries, dtype=np.float32)
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise DenseIndexError(f"{self.dir}: query vectors have dimension {q.shape[-1]}, the index {self.dim}")
        k = min(int(k), self.index.ntotal)
        if k <= 0 or len(q) == 0:
            return [[] for _ in range(len(q))]
        scores, rows = self.index.search(q, k)
        ids = self.docids
        return [[(ids[r], s) for s, r in zip(srow, rrow) if r >= 0]
                for srow, rrow in zip(scores.tolist(), rows.tolist())]
