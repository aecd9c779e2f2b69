"""Lucene indexes over a collection, built with Anserini's IndexCollection in-process.

Each index stores positions, document vectors and the raw JSON, which is what
BM25, RM3 (document vectors) and raw-text display need. A build writes to a
temporary folder and renames it on success: an interrupted build leaves no
half index. A partitioned collection gets one index per partition value.
"""
from __future__ import annotations
from legalir.errors import LegalirError

import json
import os
import sys
import time
from pathlib import Path

from legalir import collections, jvm
from legalir.atomic import atomic_dir
from legalir.index import partition_keys

DEFAULT_THREADS = max(1, min(8, os.cpu_count() or 1))
META = "legalir-index.json"


class IndexError_(LegalirError, RuntimeError):
    pass


def _index_collection(input_dir: Path, index_dir: Path, threads: int, fields: list[str] | None = None) -> None:
    # paths go to Java absolute: the JVM resolves relative ones against the directory it started in, not Python's cwd
    args = [
        "-collection", "JsonCollection",
        "-generator", "DefaultLuceneDocumentGenerator",
        "-input", os.path.abspath(input_dir),
        "-index", os.path.abspath(index_dir),
        "-threads", str(threads),
        "-storePositions", "-storeDocvectors", "-storeRaw",
        "-quiet",
    ]
    if fields:
        args += ["-fields", *fields]
    jvm.autoclass("io.anserini.index.IndexCollection").main(args)


def num_docs(index_dir: str | os.PathLike) -> int:
    reader_utils = jvm.autoclass("io.anserini.index.IndexReaderUtils")
    reader = reader_utils.getReader(os.path.abspath(index_dir))
    try:
        return int(reader.numDocs())
    finally:
        reader.close()


def build_one(input_dir: Path, index_dir: Path, threads: int = DEFAULT_THREADS, expected: int | None = None) -> int:
    """Build one index atomically; returns its document count."""
    with atomic_dir(index_dir) as tmp:
        _index_collection(Path(input_dir), tmp, threads)
        n = num_docs(tmp)
        if expected is not None and n != expected:
            raise IndexError_(f"{input_dir}: {expected} documents in the collection but {n} indexed")
        with open(tmp / META, "w", encoding="utf-8") as f:
            json.dump({"input": str(input_dir), "documents": n}, f, indent=2)
    return n


def build(collection_dir: str | os.PathLike, index_dir: str | os.PathLike, threads: int = DEFAULT_THREADS,
          partitions: list[str] | None = None, quiet: bool = False) -> dict[str, int]:
    """Index a collection: one index, or one per partition under ``index_dir/<partition>/``.

    Returns document counts by partition key (``""`` when not partitioned).
    """
    manifest = collections.read_manifest(collection_dir)
    dirs = collections.corpus_dirs(collection_dir)
    counts = manifest["partitions"] if manifest.get("partition_field") else {"": manifest["documents"]["written"]}
    keys = sorted(dirs) if partitions is None else partitions
    unknown = [k for k in keys if k not in dirs]
    if unknown:
        raise IndexError_(f"unknown partition(s) {unknown}; known: {', '.join(sorted(dirs))}")
    out: dict[str, int] = {}
    for i, key in enumerate(keys, 1):
        target = Path(index_dir) / key if key else Path(index_dir)
        t0 = time.time()
        out[key] = build_one(dirs[key], target, threads, expected=counts[key])
        if not quiet:
            label = f"[{i}/{len(keys)}] {key}" if key else str(target)
            print(f"indexed {out[key]} documents -> {target} ({label}, {time.time() - t0:.1f}s)", file=sys.stderr)
    return out


def partitions(index_dir: str | os.PathLike) -> list[str]:
    """Partition keys of a partitioned index folder (sub-folders holding an index)."""
    return partition_keys(index_dir, META)
