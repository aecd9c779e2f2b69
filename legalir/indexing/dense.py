"""FAISS indexes over encoded collections (one per corpus, or one per partition).

An index folder holds ``index.faiss``, ``docids.txt`` (row -> document id) and
``legalir-dense.json`` (the encoder's settings, the index type and its
parameters, the collection it came from). Index types, all inner product
(cosine for normalised vectors):

* ``flat``   exact search (``IndexFlatIP``), the default;
* ``hnsw``   graph search (``IndexHNSWFlat``: ``--hnsw-m``, ``--ef-construction``; ``--ef-search`` at search);
* ``ivfpq``  inverted lists + product quantisation (``IndexIVFPQ``: ``--nlist``, ``--pq-m``, ``--pq-bits``;
  ``--nprobe`` at search), trained on (a sample of) the corpus.

With ``--shard-size N`` an index is written as FAISS shards of at most N
vectors (``index-NNNNN.faiss``, listed under ``shards`` in the metadata; one
``docids.txt``), built one at a time, and searched one at a time with an exact
merge of the top k (:class:`ShardedIndex`): for an index that does not fit the
memory or the GPU that searches it. A sharded flat index returns exactly what
one flat index over the same vectors returns, ties at the cut included (both
keep the lowest rows, :func:`_search_exact`).

Builds are atomic and versioned as a whole (every partition), like Lucene
builds: see :mod:`legalir.base.atomic`. An index is searched on
the GPU when FAISS was built with GPU support and a CUDA device is visible
(``faiss.get_num_gpus() > 0``; flat and IVF-PQ, HNSW has no GPU form), on
the CPU otherwise. FAISS is imported lazily: it comes from the ``[cpu]``
(``faiss-cpu``) or ``[gpu]`` (``faiss-gpu-cu12``) extra.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from legalir import collections
from legalir.base import atomic, log, numeric
from legalir.errors import LegalirError
from legalir.indexing import encoders
from legalir.indexing.folders import keep_partitions, partition_keys, recorded_path
from legalir.trec import Hits

np = numeric.LazyModule("numpy")  # imported where a vector is handled: not by a Lucene-only update

_log = log.get(__name__)

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


def shard_file(i: int) -> str:
    return f"index-{i:05d}.faiss"


def _rows(emb_dir: Path, start: int, stop: int) -> Iterator[np.ndarray]:
    """Rows ``start:stop`` of a complete embeddings folder, block by block (float32, contiguous)."""
    offset = 0
    for shard in encoders.iter_shards(emb_dir):
        lo, hi = max(start, offset), min(stop, offset + len(shard))
        if lo < hi:
            yield np.ascontiguousarray(shard[lo - offset:hi - offset], dtype=np.float32)
        offset += len(shard)
        if offset >= stop:
            return


def write_shards(folder: Path, template, spec: IndexSpec, emb_dir: Path, n: int, shard_size: int) -> list[dict]:
    """Write the index of ``emb_dir`` as FAISS shards of ``shard_size`` rows into ``folder``, one in memory at a time.

    ``template`` is the empty index (trained, for IVF-PQ: every shard shares
    its quantiser and codebooks). Returns the shards' list for the metadata.
    """
    f = faiss()
    shards = []
    for i, start in enumerate(range(0, n, shard_size)):
        stop = min(n, start + shard_size)
        index = f.clone_index(template) if spec.type == "ivfpq" else _make_index(spec, int(template.d), n)
        for block in _rows(emb_dir, start, stop):
            index.add(block)
        if index.ntotal != stop - start:  # pragma: no cover - invariant
            raise DenseIndexError(f"{folder}: shard {i} holds {index.ntotal} vectors, {stop - start} expected")
        f.write_index(index, str(folder / shard_file(i)))
        shards.append({"file": shard_file(i), "start": start, "count": stop - start})
        del index
    return shards


def _sharded(n: int, shard_size: int | None) -> bool:
    if shard_size is not None and shard_size < 1:
        raise DenseIndexError(f"--shard-size must be at least 1, got {shard_size}")
    return shard_size is not None and n > shard_size


def _is_legacy_index(path: Path) -> bool:
    """A dense index folder written by legalir before output markers existed."""
    return (path / META).exists() or bool(partition_keys(path, META))


def _write_index(folder: Path, index, emb_dir: Path, manifest: dict, spec: IndexSpec, dim: int, n: int,
                 coll, partition, source: dict, shard_size: int | None = None) -> None:
    f = faiss()
    folder.mkdir(parents=True, exist_ok=True)
    sharded = _sharded(n, shard_size)
    extra = {"shards": write_shards(folder, index, spec, emb_dir, n, shard_size)} if sharded else {}
    if not sharded:
        f.write_index(index, str(folder / INDEX_FILE))
    shutil.copyfile(emb_dir / encoders.DOCIDS, folder / DOCIDS)
    meta = {"encoder": manifest["encoder"], "dim": dim, "documents": n, "index": asdict(spec),
            "embeddings": str(emb_dir),
            **(recorded_path("collection", coll, folder) if coll is not None else {"collection": None}),
            "partition": partition, "partition_field": source.get("partition_field"), **extra}
    atomic.write_json(folder / META, meta)


def build_one(emb_dir: str | os.PathLike, index_dir: str | os.PathLike, spec: IndexSpec = IndexSpec(),
              collection_dir: str | os.PathLike | None = None, threads: int | None = None,
              overwrite: bool = False, shard_size: int | None = None) -> int:
    """Build one FAISS index from a complete embeddings folder into ``index_dir`` (atomic); returns its size.

    ``shard_size``: build it as FAISS shards of at most that many vectors
    (searched shard by shard, :class:`ShardedIndex`), for an index larger than
    the memory (or GPU memory) that searches it.

    The embeddings' document ids are checked against the collection
    (``collection_dir``, else the one recorded when encoding): the same ids in
    the same order, or a :class:`DenseIndexError` and nothing written.
    """
    from legalir.indexing.changes import refuse_rebuild

    refuse_rebuild(index_dir, overwrite)
    marker: dict = {}  # filled in the block: written with the version when it completes
    with atomic.atomic_dir(index_dir, KIND, overwrite=overwrite, legacy=_is_legacy_index, versioned=True,
                           marker=marker) as tmp:
        n, coll = _build_into(tmp, emb_dir, spec, collection_dir, threads, shard_size)
        marker.update(_release_marker(coll))
    return n


def _build_into(out: Path, emb_dir, spec: IndexSpec, collection_dir, threads: int | None,
                shard_size: int | None) -> tuple[int, Any]:
    """Build the index of one embeddings folder into ``out`` with ``threads`` FAISS threads (for this build
    only); returns ``(vectors, collection)``."""
    with numeric.threads(threads, torch=False):
        index, emb_dir, manifest, dim, n, coll, partition, source = _make(emb_dir, spec, collection_dir, shard_size)
        _write_index(out, index, emb_dir, manifest, spec, dim, n, coll, partition, source, shard_size)
    return n, coll


def _release_marker(coll) -> dict:
    """``{"release": R}`` when the collection is a release (kept for point-in-time search), else ``{}``."""
    if coll is None or not (Path(coll) / "manifest.json").exists():
        return {}
    return collections.release_marker(collections.read_manifest(coll))


def _make(emb_dir, spec: IndexSpec, collection_dir, shard_size: int | None = None):
    """The FAISS index of a complete embeddings folder, checked against its collection, in memory."""
    faiss()
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
    _sharded(n, shard_size)  # checked before the work
    index = _make_index(spec, dim, n)
    if not index.is_trained:
        index.train(_training_sample(emb_dir, n, spec.train_size, spec.seed))
    if not _sharded(n, shard_size):  # a sharded index is filled shard by shard as it is written
        for shard in encoders.iter_shards(emb_dir):
            index.add(np.ascontiguousarray(shard, dtype=np.float32))
        if index.ntotal != n:  # pragma: no cover - invariant
            raise DenseIndexError(f"{emb_dir}: {index.ntotal} vectors added, {n} expected")
    return index, emb_dir, manifest, dim, n, coll, partition, source


def build(emb_dir: str | os.PathLike, index_dir: str | os.PathLike, spec: IndexSpec = IndexSpec(),
          collection_dir: str | os.PathLike | None = None, partitions: list[str] | None = None,
          threads: int | None = None, quiet: bool = False, overwrite: bool = False,
          shard_size: int | None = None) -> dict[str, int]:
    """Index an embeddings folder: one index, or one per partition (``index_dir/<partition>/``).

    Atomic and versioned as a whole, like Lucene builds (:mod:`legalir.base.atomic`); building only some
    ``partitions`` keeps the other partitions of the current index.
    """
    from legalir.indexing.changes import refuse_rebuild

    refuse_rebuild(index_dir, overwrite)
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
    marker: dict = {}  # filled in the block: written with the version when it completes
    with atomic.atomic_dir(index_dir, KIND, overwrite=overwrite, legacy=_is_legacy_index, versioned=True,
                           marker=marker) as tmp:
        if parts and partitions is not None:  # keep the partitions not rebuilt now
            keep_partitions(index_dir, tmp, META, keys)
        for i, key in enumerate(keys, 1):
            t0 = time.time()
            src = emb_dir / key if key else emb_dir
            n, coll = _build_into(tmp / key if key else tmp, src, spec, collection_dir, threads, shard_size)
            marker.update(_release_marker(coll))
            out[key] = n
            if not quiet:
                where = index_dir / key if key else index_dir
                _log.info(f"indexed {n} vectors -> {where} ({spec.type}, [{i}/{len(keys)}], "
                          f"{time.time() - t0:.1f}s)")
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


def _search_exact(index, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` of an exact index with ties at the cut resolved by row: ``(scores, rows)``.

    FAISS keeps an arbitrary subset of the documents tied with the k-th score
    (it depends on k and on its heap). Here the search goes a little deeper
    than ``k`` (deeper again, for the whole batch, in the rare case where a
    tie runs past that), so that every document tied at the cut is seen, and
    the lowest rows are kept. The result is then a function of the vectors
    alone: the same for one index and for any split of it into shards
    (:func:`merge_topk`), and, through :func:`_per_query`, for any batch of
    queries the query is searched with.
    """
    n = int(index.ntotal)
    k = min(int(k), n)
    depth = min(n, k + max(16, k // 8))
    while True:
        scores, rows = _per_query(index, q, depth)
        if depth == n or not (scores[:, k - 1] == scores[:, depth - 1]).any():
            break
        depth = min(n, 4 * depth)
    tied = np.flatnonzero(scores[:, k - 1] == scores[:, k]) if depth > k else np.zeros(0, dtype=np.int64)
    if tied.size:
        s, r = scores[tied], rows[tied]
        order = np.lexsort((r, -s), axis=1)[:, :k]
        scores[tied, :k], rows[tied, :k] = np.take_along_axis(s, order, 1), np.take_along_axis(r, order, 1)
    return np.ascontiguousarray(scores[:, :k]), np.ascontiguousarray(rows[:, :k])


def _per_query(index, q: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """``index.search(q, depth)``, each query's scores computed by FAISS's one-query kernel.

    From ``faiss.cvar.distance_compute_blas_threshold`` queries at once (20),
    FAISS scores a batch with one BLAS matrix product, whose sums run in
    another order: a query's scores would then differ in the last bit with the
    number of queries searched beside it (a topics file against one query over
    HTTP). Searched in slices below that threshold, every query's scores are
    the same bits alone and in any batch. On the GPU the batch goes whole.
    """
    f = faiss()
    step = max(1, int(getattr(f.cvar, "distance_compute_blas_threshold", 20)) - 1)
    if len(q) <= step or _on_gpu(index):
        return index.search(q, depth)
    parts = [index.search(q[i:i + step], depth) for i in range(0, len(q), step)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _on_gpu(index) -> bool:
    return type(index).__name__.startswith("Gpu")


def merge_topk(parts: list[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact top ``k`` of several ``(scores, global rows)`` results of the same queries.

    Highest score first, ties by lowest row; missing hits (row -1) last. With
    shards searched by :func:`_search_exact`, this is what one index over all
    the vectors gives.
    """
    scores = np.concatenate([s for s, _ in parts], axis=1)
    rows = np.concatenate([r for _, r in parts], axis=1)
    key = np.where(rows < 0, -np.inf, scores)
    order = np.lexsort((np.where(rows < 0, np.iinfo(np.int64).max, rows), -key), axis=1)[:, :k]
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(rows, order, axis=1)


def _open_faiss(path: Path, kind: str, use_gpu: bool, ef_search: int | None, nprobe: int | None):
    """Read one FAISS file with the search settings; on the GPU when asked. Returns (index, gpu resources)."""
    f = faiss()
    index = f.read_index(str(path))
    if kind == "hnsw" and ef_search:
        index.hnsw.efSearch = int(ef_search)
    if kind == "ivfpq" and nprobe:
        index.nprobe = int(nprobe)
    if use_gpu and kind != "hnsw":  # pragma: no cover - needs a GPU
        res = f.StandardGpuResources()
        index = f.index_cpu_to_gpu(res, 0, index)
        if kind == "ivfpq" and nprobe:
            index.nprobe = int(nprobe)
        return index, res
    return index, None


class LoadedIndex:
    """A FAISS index in memory, with its row -> docid mapping; on the GPU when one is usable."""

    def __init__(self, index_dir: str | os.PathLike, gpu: bool | None = None, ef_search: int | None = None,
                 nprobe: int | None = None, threads: int | None = None):
        faiss()
        # resolved once: every file below comes from the same version of a versioned index
        self.dir = Path(os.path.realpath(index_dir))
        if not (self.dir / META).exists() or not (self.dir / INDEX_FILE).exists():
            raise DenseIndexError(f"{self.dir}: no dense index here; build it first (legalir index-dense)")
        self.meta = read_meta(self.dir)
        self._read_docids()
        self.threads = threads  # FAISS's OpenMP count, set for each search only (legalir.base.numeric)
        self.kind = self.meta["index"]["type"]
        use_gpu = _use_gpu(gpu)
        index, self._res = _open_faiss(self.dir / INDEX_FILE, self.kind, use_gpu, ef_search, nprobe)
        if index.ntotal != len(self.docids):
            raise DenseIndexError(f"{self.dir}: {index.ntotal} vectors but {len(self.docids)} document ids")
        self.dim = int(index.d)
        self.on_gpu = self._res is not None
        self.index = index

    def _read_docids(self) -> None:
        with open(self.dir / DOCIDS, encoding="utf-8") as fh:
            self.docids = [line.rstrip("\n") for line in fh]
        self._ids = np.array(self.docids, dtype=object)  # row -> docid in one gather, no Python loop
        self.size = len(self.docids)

    def _check(self, queries: np.ndarray) -> np.ndarray:
        q = np.ascontiguousarray(queries, dtype=np.float32)
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise DenseIndexError(f"{self.dir}: query vectors have dimension {q.shape[-1]}, the index {self.dim}")
        return q

    def search_arrays(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, rows)`` of the top ``k`` (``min(k, size)``) per query; row -1 where fewer were found.

        Exact (flat) indexes resolve ties at the cut by row (:func:`_search_exact`)."""
        q = self._check(queries)
        k = min(int(k), self.size)
        with numeric.threads(self.threads, torch=False):
            if self.kind == "flat":
                return _search_exact(self.index, q, k)
            return _per_query(self.index, q, k)

    def search(self, queries: np.ndarray, k: int) -> list[Hits]:
        """Per query, its hits as ``{docid: score}`` (best first)."""
        if min(int(k), self.size) <= 0 or len(queries) == 0:
            return [{} for _ in range(len(queries))]
        return self.hits(*self.search_arrays(queries, k))

    def hits(self, scores: np.ndarray, rows: np.ndarray) -> list[Hits]:
        """``{docid: score}`` per query from FAISS's arrays, as :class:`legalir.trec.Hits`.

        The row -> docid mapping is one numpy gather; each query's hits are
        views of the two arrays (no Python object per hit until they are read).
        """
        missing = rows < 0
        ids = self._ids[np.where(missing, 0, rows)]
        if not missing.any():
            return [Hits(i, v) for i, v in zip(ids, scores)]
        keep = (~missing).sum(axis=1).tolist()  # FAISS puts missing hits last
        return [Hits(i[:n], v[:n]) for i, v, n in zip(ids, scores, keep)]


def _use_gpu(gpu: bool | None) -> bool:
    use = (num_gpus() > 0) if gpu is None else gpu
    if use and num_gpus() == 0:
        raise DenseIndexError("--gpu asked for, but FAISS sees no GPU (install faiss-gpu-cu12, check CUDA)")
    return bool(use)


class ShardedIndex(LoadedIndex):
    """An index built in shards (``index-dense --shard-size``): each shard searched in turn, the top k merged exactly.

    With ``resident=False`` (the default) one shard is in memory (or on the
    GPU) at a time: an index larger than memory or GPU memory is searched in
    as many passes as it has shards, every query in each pass. ``resident=True``
    keeps the shards loaded (repeated searches of one index).
    """

    def __init__(self, index_dir: str | os.PathLike, gpu: bool | None = None, ef_search: int | None = None,
                 nprobe: int | None = None, threads: int | None = None, resident: bool = False):
        faiss()
        self.dir = Path(os.path.realpath(index_dir))  # one version of a versioned index, shard after shard
        self.meta = read_meta(self.dir)
        self.shards = list(self.meta.get("shards") or [])
        if not self.shards or not all((self.dir / sh["file"]).exists() for sh in self.shards):
            raise DenseIndexError(f"{self.dir}: sharded index with missing shard files; build it again "
                                  f"(legalir index-dense --shard-size)")
        self._read_docids()
        if sum(int(sh["count"]) for sh in self.shards) != self.size:
            raise DenseIndexError(f"{self.dir}: its shards hold {sum(int(sh['count']) for sh in self.shards)} "
                                  f"vectors but there are {self.size} document ids")
        self.threads = threads
        self.kind = self.meta["index"]["type"]
        self.dim = int(self.meta["dim"])
        self._settings = (_use_gpu(gpu), ef_search, nprobe)
        self.on_gpu = self._settings[0] and self.kind != "hnsw"
        self.resident = resident
        self._loaded: dict[int, Any] = {}

    def _shard(self, i: int):
        """Shard ``i`` as ``(index, GPU resources or None)``: the caller holds both while searching."""
        if i in self._loaded:
            return self._loaded[i]
        sh = self.shards[i]
        loaded = _open_faiss(self.dir / sh["file"], self.kind, *self._settings)
        if loaded[0].ntotal != int(sh["count"]) or int(loaded[0].d) != self.dim:
            raise DenseIndexError(f"{self.dir / sh['file']}: {loaded[0].ntotal} vectors of dimension "
                                  f"{loaded[0].d}, expected {sh['count']} of dimension {self.dim}")
        if self.resident:
            self._loaded[i] = loaded
        return loaded

    def search_arrays(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        q = self._check(queries)
        k = min(int(k), self.size)
        best = None
        for i, sh in enumerate(self.shards):
            loaded = self._shard(i)
            index = loaded[0]
            with numeric.threads(self.threads, torch=False):
                scores, rows = (_search_exact(index, q, k) if self.kind == "flat"
                                else _per_query(index, q, min(k, int(sh["count"]))))
            del index, loaded  # not resident: this shard leaves memory (or the GPU) before the next comes
            part = (scores, np.where(rows < 0, -1, rows + int(sh["start"])))
            best = part if best is None else merge_topk([best, part], k)  # the running top k only
        return best


def open_index(index_dir: str | os.PathLike, **kwargs: Any) -> LoadedIndex:
    """The index in ``index_dir``, ready to search: one FAISS index, or one built in shards."""
    root = Path(index_dir)
    if (root / META).exists() and not (root / INDEX_FILE).exists() and read_meta(root).get("shards"):
        return ShardedIndex(root, **kwargs)
    kwargs.pop("resident", None)
    return LoadedIndex(root, **kwargs)
