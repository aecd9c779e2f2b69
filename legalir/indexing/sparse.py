"""Lucene indexes over a collection, built with Anserini's IndexCollection in-process.

Each index stores positions, document vectors and the raw JSON, which is what
BM25, RM3 (document vectors) and raw-text display need. A partitioned
collection gets one index per partition value, under one folder.

Builds are atomic and versioned (:mod:`legalir.base.atomic`): ``INDEX_DIR`` is a
link to ``INDEX_DIR.vN``; a build writes the next version and switches the
link when every partition is complete, so an interrupted build leaves the
old index, and a search opened before or during a build keeps reading one
consistent version. A folder that is not a legalir index is never replaced.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from legalir import collections, trec
from legalir.base import atomic, jvm, log
from legalir.errors import LegalirError
from legalir.indexing import lucene
from legalir.indexing.folders import keep_partitions, partition_keys, recorded_path
from legalir.legal import filters

_log = log.get(__name__)

DEFAULT_THREADS = max(1, min(8, os.cpu_count() or 1))
META = lucene.META
KIND = "lucene-index"


class IndexError_(LegalirError, RuntimeError):
    pass


def check_corpus(input_dir: str | os.PathLike) -> int:
    """Check every record of a corpus folder as Lucene will read it, before it does; returns their number.

    Each line of each file (JSONL, as ``legalir convert`` writes ``docs.jsonl``) must be a JSON object with
    an ``id`` a run can hold and a non-empty ``contents`` string; blank lines are skipped (as Anserini
    does). Anserini would stop at a bad line with a Java stack trace and no file or line (or skip it, and
    the count would differ): here the error names both.

    Parameters
    ----------
    input_dir : path
        A corpus folder (``COLLECTION/corpus``, or one partition's ``corpus/KEY``).

    Returns
    -------
    int
        The records read.

    Raises
    ------
    IndexError_
        ``file:line: what is wrong``, and what to do.
    """
    import json

    folder = Path(input_dir)
    n = 0
    again = "fix that line, or convert the collection again (legalir convert)"

    def records(path: Path):  # streamed (a corpus may not fit in memory twice), each line decoded on its own
        with open(path, "rb") as f:
            for line, raw in enumerate(f, 1):
                if not raw.strip():
                    continue
                try:
                    rec = json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError as e:
                    raise trec.FormatError(path, line, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
                except json.JSONDecodeError as e:
                    cut = "" if raw.endswith(b"\n") else ", and the file ends there: cut short?"
                    raise trec.FormatError(path, line, f"invalid JSON: {e.msg} (column {e.colno}){cut}") from None
                if not isinstance(rec, dict):
                    raise trec.FormatError(path, line, f"expected a JSON object, found {trec.json_type(rec)}")
                yield line, rec

    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")):
        try:
            for line, rec in records(path):
                docid, text = rec.get("id"), rec.get("contents")
                if not isinstance(docid, str) or trec.id_message(docid):
                    problem = ("has no 'id'" if "id" not in rec else
                               f"id {docid!r:.60} {trec.id_message(docid) if isinstance(docid, str) else 'is not a string'}")
                    raise IndexError_(f"{path}:{line}: the document {problem}; {again}")
                if not isinstance(text, str):
                    what = "has no 'contents'" if "contents" not in rec else f"'contents' is {trec.json_type(text)}"
                    raise IndexError_(f"{path}:{line}: the document {what}, not its text; {again}")
                if not text.strip():
                    raise IndexError_(f"{path}:{line}: the document {docid!r:.60} has an empty 'contents' (Lucene "
                                      f"would skip it); {again}")
                n += 1
        except trec.FormatError as e:
            raise IndexError_(f"{e}; {again}") from None
    return n


def index_arguments(input_dir: Path, index_dir: Path, threads: int, fields: list[str] | None = None) -> list[str]:
    """Anserini's IndexCollection arguments of a build: what a build indexes, and how (``io.legalir.IndexUpdate``,
    which adds documents to an open index as a build indexes them, reads the same)."""
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
    return args


def _index_collection(input_dir: Path, index_dir: Path, threads: int, fields: list[str] | None = None) -> Path | None:
    """Anserini's IndexCollection over ``input_dir``; what Java prints goes to a log file (:func:`jvm.output_to_log`),
    whose path is returned when Java wrote one (else None)."""
    args = index_arguments(input_dir, index_dir, threads, fields)
    main = jvm.autoclass("io.legalir.Anserini")  # IndexCollection.main by name: pyjnius reflecting it took seconds
    with jvm.output_to_log("index") as log:
        try:
            main.indexCollection(args)
        except Exception as e:  # a Java exception, as jnius raises it: its report is in the log
            raise IndexError_(f"{input_dir}: Lucene could not index it ({' '.join(str(e).split())[:200]}); Java's "
                              f"report: {log}") from None
    return log if log.exists() else None


def num_docs(index_dir: str | os.PathLike) -> int:
    """Documents in the index (read through the one Lucene access class)."""
    return lucene.num_docs(index_dir)


def _is_legacy_index(path: Path) -> bool:
    """An index folder written by legalir before output markers existed."""
    return (path / META).exists() or bool(partition_keys(path, META))


def indexed_fields(manifest: dict) -> list[str]:
    """The metadata fields a collection asks to index besides ``contents`` (``citations``, ``filters``)."""
    return sorted(manifest.get("fields") or {})


def filter_types(manifest: dict) -> dict | None:
    """What an index built from a collection records of its filterable fields (``{field: type}``,
    :mod:`legalir.legal.filters`), or ``None`` when the collection has no ``filters`` field."""

    return filters.schema_from_manifest(manifest) if filters.FIELD in (manifest.get("fields") or {}) else None


def _types(types: dict | None) -> dict:
    return {} if types is None else {filters.TYPES_KEY: types}


def _build_into(input_dir: Path, index_dir: Path, threads: int, expected: int | None,
                fields: list[str] | None = None, types: dict | None = None) -> int:
    index_dir.mkdir(parents=True, exist_ok=True)
    records = check_corpus(input_dir)
    if expected is not None and records != expected:
        raise IndexError_(f"{input_dir}: {records} documents in its files but {expected} in the collection's "
                          f"manifest; convert the collection again (legalir convert)")
    log = _index_collection(Path(input_dir), index_dir, threads, fields)
    n = num_docs(index_dir)
    if n != records:
        raise IndexError_(f"{input_dir}: {records} documents in the collection but {n} indexed"
                          + (f"; Java's report: {log}" if log else ""))
    if log:
        _log.warning(f"{input_dir}: Java reported problems while indexing it; its report: {log}")
    # the collection's folder relative to the index when it sits beside it (found after both move), else absolute
    atomic.write_json(index_dir / META, {**recorded_path("input", input_dir, index_dir), "documents": n,
                                         "fields": list(fields or []), **_types(types)},
                      sort_keys=False)
    return n


def _build_pooled(collection_dir: Path, index_dir: Path, dirs: dict[str, Path], counts: dict[str, int],
                  fields: list[str], threads: int, quiet: bool, overwrite: bool, partition_field: str,
                  types: dict | None = None) -> dict[str, int]:
    """One index whose segments each hold one partition (see :func:`build`)."""
    import shutil

    out: dict[str, int] = {}
    segments: dict[str, list[str]] = {}
    with atomic.atomic_dir(index_dir, KIND, overwrite=overwrite, legacy=_is_legacy_index, versioned=True,
                           marker=collections.release_marker(collections.read_manifest(collection_dir))) as tmp:
        parts = tmp / ".partitions"
        seen: set[str] = set()
        with lucene.LuceneWriter(tmp, merge=False) as writer, \
                log.progress(total=sum(counts.values()), desc="index", unit=" docs", quiet=quiet) as bar:
            for i, key in enumerate(sorted(dirs), 1):
                t0 = time.time()
                with log.ticking(bar):
                    out[key] = _build_into(dirs[key], parts / key, threads, counts[key], fields, types)
                bar.update(out[key])
                writer.add_index(parts / key)
                writer.commit()
                now = set(writer.segments())
                segments[key] = sorted(now - seen)
                seen = now
                shutil.rmtree(parts / key)
                if not quiet:
                    _log.info(f"indexed {out[key]} documents of {key} -> {index_dir} ([{i}/{len(dirs)}], "
                              f"{len(segments[key])} segment(s), {time.time() - t0:.1f}s)")
        shutil.rmtree(parts, ignore_errors=True)
        n = num_docs(tmp)
        if n != sum(out.values()):  # pragma: no cover - invariant
            raise IndexError_(f"{index_dir}: {sum(out.values())} documents indexed but {n} in the pooled index")
        atomic.write_json(tmp / META, {**recorded_path("input", collection_dir / "corpus", tmp), "documents": n,
                                       "fields": fields, **_types(types),
                                       "pooled": True, "partition_field": partition_field, "segments": segments},
                          sort_keys=False)
    return out


def build_one(input_dir: Path, index_dir: Path, threads: int = DEFAULT_THREADS, expected: int | None = None,
              overwrite: bool = False, fields: list[str] | None = None) -> int:
    """Build one index atomically (see :mod:`legalir.base.atomic`); returns its document count."""
    from legalir.indexing.changes import refuse_rebuild

    refuse_rebuild(index_dir, overwrite)
    with atomic.atomic_dir(index_dir, KIND, overwrite=overwrite, legacy=_is_legacy_index, versioned=True) as tmp:
        return _build_into(Path(input_dir), tmp, threads, expected, fields)


def build(collection_dir: str | os.PathLike, index_dir: str | os.PathLike, threads: int = DEFAULT_THREADS,
          partitions: list[str] | None = None, quiet: bool = False, overwrite: bool = False,
          pooled: bool = False) -> dict[str, int]:
    """Index a collection: one index, or one per partition under ``index_dir/<partition>/``.

    The whole build is atomic: ``index_dir`` holds the old index (every partition of it) until the
    new one is complete, then switches to it at once (:mod:`legalir.base.atomic`, versioned). Building
    only some ``partitions`` keeps the other partitions of the current index (hard-linked, not
    rebuilt). Returns document counts by partition key (``""`` when not partitioned). An index holding
    changes applied by ``legalir index update`` is rebuilt only with ``overwrite`` (the changes are not
    in the collection: :func:`legalir.indexing.changes.refuse_rebuild`).

    ``pooled``: one index over every partition of a partitioned collection (searched with a
    filter on the partition field, :mod:`legalir.legal.filters`, instead of one index per partition).
    Each partition is indexed on its own, then its segments are added to the one index unmerged
    (Lucene ``IndexWriter.addIndexes`` with ``NoMergePolicy``), and ``legalir-index.json`` records
    which segments hold which partition: a search filtered to some partitions then reads the
    BM25 statistics of those partitions' segments only, so it gives the per-partition index's
    scores exactly (:meth:`legalir.indexing.lucene.LuceneIndex.search_hits`). The collection's
    ``citations`` and ``filters`` fields are indexed beside ``contents``.
    """
    from legalir.indexing.changes import refuse_rebuild

    refuse_rebuild(index_dir, overwrite)
    manifest = collections.read_manifest(collection_dir)
    dirs = collections.corpus_dirs(collection_dir)
    fields = indexed_fields(manifest)
    counts = manifest["partitions"] if manifest.get("partition_field") else {"": manifest["documents"]["written"]}
    if pooled:
        if partitions is not None:
            raise IndexError_(f"{collection_dir}: a pooled index holds every partition; leave out --partition")
        if not manifest.get("partition_field"):
            raise IndexError_(f"{collection_dir}: not partitioned; a pooled index is what `legalir index` builds "
                              f"already (leave out --pooled)")
        return _build_pooled(Path(collection_dir), Path(index_dir), dirs, counts, fields, threads, quiet, overwrite,
                             manifest["partition_field"], filter_types(manifest))
    keys = sorted(dirs) if partitions is None else list(partitions)
    unknown = [k for k in keys if k not in dirs]
    if unknown:
        raise IndexError_(f"unknown partition(s) {unknown}; known: {', '.join(sorted(dirs))}")
    if partitions is not None and "" in dirs:
        raise IndexError_(f"{collection_dir}: not partitioned, cannot build partitions {partitions}")
    index_dir = Path(index_dir)
    out: dict[str, int] = {}
    with atomic.atomic_dir(index_dir, KIND, overwrite=overwrite, legacy=_is_legacy_index, versioned=True,
                           marker=collections.release_marker(manifest)) as tmp:
        if partitions is not None:  # keep the partitions not rebuilt now
            keep_partitions(index_dir, tmp, META, keys)
        bar = log.progress(total=sum(counts[k] for k in keys), desc="index", unit=" docs", quiet=quiet)
        for i, key in enumerate(keys, 1):
            t0 = time.time()
            with log.ticking(bar):
                out[key] = _build_into(dirs[key], tmp / key if key else tmp, threads, counts[key], fields,
                                       filter_types(manifest))
            bar.update(out[key])
            if not quiet:
                label = f"[{i}/{len(keys)}] {key}" if key else str(index_dir)
                where = index_dir / key if key else index_dir
                _log.info(f"indexed {out[key]} documents -> {where} ({label}, {time.time() - t0:.1f}s)")
        bar.close()
    return out


def partitions(index_dir: str | os.PathLike) -> list[str]:
    """Partition keys of a partitioned index folder (sub-folders holding an index)."""
    return partition_keys(index_dir, META)


def index_meta(index_dir: str | os.PathLike) -> dict:
    """What ``legalir-index.json`` records of one index (``{}`` when absent): input, documents, fields, pooled."""
    import json

    try:
        return json.loads((Path(index_dir) / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
