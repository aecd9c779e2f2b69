"""Live updates of built indexes: added, replaced and deleted documents applied as a new version.

``legalir index update INDEX [INDEX] --add FILE --replace FILE --delete FILE``
(:func:`update`) applies a change set to a built Lucene index, a FAISS index,
or both (the two indexes of one collection, updated together), each as a new
version published like a rebuild (:mod:`legalir.base.atomic`, versioned): a search
or a server that opened the old version keeps reading it; ``legalir serve``
switches to the new one between requests.

The guarantee: **an updated index searches exactly like a full rebuild from
the updated collection.** How:

* Added and replaced documents become records exactly as ``legalir convert``
  makes them (:func:`legalir.collections.make_record`: the ``citations`` and
  ``filters`` fields derived the same way), and are indexed as a build indexes
  them: into the new version's own writer, in this thread, by
  ``io.legalir.IndexUpdate`` (Anserini's JSON reader, document generator,
  analyzer and similarity, with a build's ``IndexCollection`` arguments), or, for
  a pooled index and a new partition, by an Anserini ``IndexCollection`` run.
* Lucene keeps a deleted document in its term statistics until the segment
  holding it is rewritten, so BM25 scores would drift from a rebuild's. The
  new version keeps such a document in its segment, marked deleted (the
  segment's files stay hard links shared with the version before), and every
  search of it goes through ``io.legalir.LiveStatsSearcher``, which subtracts
  what the deleted documents add to the statistics: exact statistics, with no
  segment rewritten until its deleted documents pass
  :data:`DELETES_PCT_ALLOWED` % of it. A pooled index (``legalir index
  --pooled``) keeps one set of segments per partition: each changed
  partition's segments are made again from its documents (the stored raw
  records plus the changes), so a search filtered to partitions still reads
  their statistics alone.
* FAISS: the vectors of kept documents are taken from the index as they are
  (flat and HNSW: the exact vectors, re-added; IVF-PQ: the codes, kept in their
  lists), new documents are encoded with the index's own encoder settings and
  appended. A flat index then gives a rebuild's hits up to the float rounding
  of encoding in other batches (about 1e-7); HNSW and IVF-PQ are approximate,
  and any two builds of them may differ.

Nothing is written until the whole change set is checked: every record (id,
text, partition field), each id in one file only, an added id not in the
index, a replaced or deleted one in it; with two indexes, both hold the same
documents.

An index version is its collection plus the changes applied since the build:
the version folder records them in ``legalir-updates/`` (one gzip-compressed
JSONL log per update, holding that update's changes only, the logs of the
versions before hard-linked beside it; one JSON object per changed document:
``{"id", "op", "partition", "record"}``, ``record`` ``null`` for a deleted
document). A replaced or deleted document stays in its segment, marked
deleted, so that versions share their segments' files; searches subtract its
statistics (``io.legalir.LiveStatsSearcher``, :meth:`LuceneIndex.index_searcher
<legalir.indexing.lucene.LuceneIndex.index_searcher>`). Readers that show documents
(``legalir serve``) read a changed document from there, every other one
from the collection (:func:`changed_documents`). Beside the log of an update
``--to`` a release, ``NNNNNN.digests.gz`` keeps digests of the documents the
version holds (:data:`DIGESTS`), so that the next ``--to`` reads only the new
release's collection.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from legalir.base import atomic, log
from legalir.errors import LegalirError
from legalir.indexing import IndexPair, NotAnIndex, collection_of, kind_of

# a version's changes as readers see them (the changes file, the documents shown, the rebuild guard)
from legalir.indexing.changes import (  # noqa: F401
    OPS,
    TOGETHER,
    UPDATES,
    UPDATES_DIR,
    Documents,
    UpdateError,
    change_logs,
    change_rows,
    changed_documents,
    half_published,
    refuse_rebuild,
    release_key,
)
from legalir.indexing.folders import recorded_path
from legalir.legal import filters

_log = log.get(__name__)


# ------------------------------------------------------------------ the change set
@dataclass
class Change:
    """One changed document: what to do, its record as a collection holds it, where it was read."""

    op: str
    docid: str
    where: str
    record: dict | None = None
    partition: str = ""  # the partition key of the new record ("" when not partitioned)
    #: a replaced record whose indexed fields are unchanged (``--to``): logged for display, its Lucene document kept
    restate: bool = False


@dataclass
class ChangeSet:
    """The changes read from ``--add``, ``--replace`` and ``--delete`` files, keyed by document id."""

    changes: dict[str, Change] = field(default_factory=dict)

    def ids(self, *ops: str) -> list[str]:
        return [d for d, c in self.changes.items() if c.op in ops]

    def counts(self) -> dict[str, int]:
        return {op: len(self.ids(op)) for op in OPS}

    def __len__(self) -> int:
        return len(self.changes)


def _read(path: str | os.PathLike, ids: bool) -> Iterator[tuple[str, int, dict | str]]:
    """``(file, line, record or id)`` of a change file: JSON objects, or (``ids``: ``--delete``) bare ids."""
    from legalir import trec

    shown = "<stdin>" if str(path) == "-" else str(path)
    if not ids and str(path) != "-":  # a file of records: read a line at a time
        for n, _, rec in trec.model.json_lines(path, stream=True):
            yield shown, n, rec
        return
    data = trec.read_bytes(path)
    if not ids or data.lstrip()[:1] == b"{":
        for n, rec in trec.iter_jsonl(path, data=data):
            yield shown, n, rec
        return
    for n, line in trec.model._lines(path, data):
        if line.strip():
            yield shown, n, line.strip()


def read_changes(add: Sequence[str | os.PathLike] = (), replace: Sequence[str | os.PathLike] = (),
                 delete: Sequence[str | os.PathLike] = ()) -> ChangeSet:
    """Read change files whole (``-``: standard input, once), checking every line.

    Parameters
    ----------
    add, replace : sequence of path
        JSONL documents ``{"id", "contents", ...metadata}`` (a collection's corpus shape).
    delete : sequence of path
        Document ids, one per line, or JSONL objects with an ``id``.

    Returns
    -------
    ChangeSet
        Records as given (derived fields are made later, with the collection's settings).

    Raises
    ------
    UpdateError
        ``file:line``: a bad id, a missing or empty ``contents``, an id changed twice.
    """

    if sum(str(p) == "-" for p in (*add, *replace, *delete)) > 1:
        raise UpdateError("standard input (-) can be read once: give it for one change file only")
    out = ChangeSet()
    for op, paths in (("add", add), ("replace", replace), ("delete", delete)):
        for path in paths:
            for shown, n, item in _read(path, ids=op == "delete"):
                _take(out, _checked(op, f"{shown}:{n}", item))
    if not out.changes:
        raise UpdateError("no changes: give --add, --replace or --delete files holding documents")
    return out


def _checked(op: str, where: str, item: dict | str) -> Change:
    """One line of a change file as a :class:`Change`, its id and text checked (:func:`read_changes`)."""
    from legalir import trec

    rec = item if isinstance(item, dict) else None
    docid = rec.get("id") if rec is not None else item
    problem = trec.id_message(docid) if isinstance(docid, str) else "is missing or not a string"
    if problem:
        raise UpdateError(f"{where}: document id {docid!r} {problem}; give each document a one-word id")
    if op != "delete":
        text = rec.get("contents")
        if not isinstance(text, str):
            raise UpdateError(f"{where}: document {docid!r}: field 'contents' is "
                              f"{trec.json_type(text)}; expected a string")
        if not text.strip():
            raise UpdateError(f"{where}: document {docid!r} has empty text; a collection holds no "
                              f"empty documents (delete it with --delete instead)")
    return Change(op, docid, where, None if op == "delete" else rec)


def _take(changes: ChangeSet, c: Change) -> None:
    before = changes.changes.get(c.docid)
    if before is not None:
        raise UpdateError(f"{c.where}: document {c.docid!r} is changed twice (--{before.op} at "
                          f"{before.where}, --{c.op} here); change each document once")
    changes.changes[c.docid] = c


def _make_records(changes: ChangeSet, manifest: dict) -> dict[str, list[str]]:
    """Each added or replaced record as the collection would hold it, and its partition key; returns each
    record's filterable fields."""

    make = _record_maker(manifest)
    filterable: dict[str, list[str]] = {}
    for c in changes.changes.values():
        if c.record is None:
            continue
        filterable[c.docid] = make(c)
    return filterable


def _record_maker(manifest: dict):
    """``make(change) -> its record's filterable fields``: the change's record made as the collection would hold it
    (:func:`legalir.collections.make_record`, with the collection's dataset settings), its partition key set."""
    from legalir import collections
    from legalir.datasets import dataset_class
    from legalir.legal import citations as cite

    try:
        cls = dataset_class(str(manifest.get("dataset")))
    except LegalirError:
        cls = None  # a collection of the caller's own records (legalir.index(records, ...))
    pfield = manifest.get("partition_field")
    with_citations = cite.FIELD in (manifest.get("fields") or {})

    def make(c: Change) -> list[str]:
        fields = {k: v for k, v in c.record.items() if k not in ("id", "contents")}
        if pfield:
            if fields.get(pfield) in (None, ""):
                raise UpdateError(f"{c.where}: document {c.docid!r} has no {pfield!r}, the field the collection is "
                                  f"partitioned on; give it one")
            c.partition = filters.partition_key(fields[pfield])
        try:
            c.record, names = collections.make_record(
                c.docid, c.record["contents"], fields, citation_field=getattr(cls, "citation_field", None),
                jurisdiction_field=getattr(cls, "jurisdiction_field", None),
                filter_fields=getattr(cls, "filter_fields", None), citations=with_citations,
                filter_types=getattr(cls, "filter_types", None),
                # a dataset that reads citations from its source's links (statutes): the record's own, as converted
                given=(str(fields.get(cite.FIELD) or "") if getattr(cls, "citations_given", False) else None))
        except LegalirError as e:
            raise UpdateError(f"{c.where}: {e}") from None
        return sorted(names)

    return make


def _filter_types(changes: ChangeSet, filterable: dict[str, list[str]], types: dict | None, declared,
                  index_dir) -> dict | None:
    """The index's filterable fields and types after the change set (:mod:`legalir.legal.filters`): a field the
    index has keeps its type, and a value not of it is refused (a rebuild would type the field anew: build
    the index again to change a type); a field it lacks is typed from the change set's values, as a rebuild
    would type it."""
    if types is None:  # an index built before types were recorded
        return None
    new = filters.TypeInference(declared)
    for docid, names in filterable.items():
        c = changes.changes[docid]
        for name in names:
            kind = types.get(name)
            if kind is None:
                new.add(c.record, [name])
                continue
            if kind == "keyword":
                continue
            for value in filters._values(c.record.get(name)):
                if filters.encode(kind, value) is None:
                    raise UpdateError(f"{c.where}: document {docid!r}: {name}={value!r} is not "
                                      f"{filters._a(kind)}, the type of {name!r} in {index_dir}; give "
                                      f"{filters._a(kind)}, or convert the collection again and rebuild the index "
                                      f"to change the field's type")
    return dict(sorted({**types, **new.types()}.items()))


# ------------------------------------------------------------------ where the documents are now
def _lucene_locations(root: Path, parts: list[str], pooled: dict, docids: Sequence[str]) -> dict[str, str]:
    """``{docid: partition key}`` of the ``docids`` a Lucene index (one version folder) holds."""
    from legalir.indexing import lucene

    found: dict[str, str] = {}
    if pooled:
        owner = {seg: key for key, segs in (pooled.get("segments") or {}).items() for seg in segs}
        with lucene.LuceneIndex(root) as idx:
            for d, seg in idx.segment_of(docids).items():
                if seg not in owner:
                    raise UpdateError(f"{root}: segment {seg} belongs to no partition in {lucene.META}; "
                                      f"rebuild the index (legalir index --pooled)")
                found[d] = owner[seg]
        return found
    for key in parts or [""]:
        for d in lucene.live_ids(root / key if key else root, [d for d in docids if d not in found]):
            found[d] = key
    return found


def _dense_locations(root: Path, parts: list[str], docids: Sequence[str]) -> dict[str, str]:
    from legalir.indexing import dense

    wanted, found = set(docids), {}
    for key in parts or [""]:
        with open((root / key if key else root) / dense.DOCIDS, encoding="utf-8") as f:
            for line in f:
                d = line.rstrip("\n")
                if d in wanted:
                    found.setdefault(d, key)
    return found


def lucene_ids(root: Path, parts: list[str]) -> set[str]:
    """Every document id a Lucene index version holds (all its partitions)."""
    from legalir.indexing import lucene

    out: set[str] = set()
    for key in parts or [""]:
        with lucene.LuceneIndex(root / key if key else root) as idx:
            out.update(idx.docids())
    return out


def faiss_ids(root: Path, parts: list[str]) -> set[str]:
    """Every document id a FAISS index version holds (all its partitions)."""
    from legalir.indexing import dense

    out: set[str] = set()
    for key in parts or [""]:
        with open((root / key if key else root) / dense.DOCIDS, encoding="utf-8") as f:
            out.update(line.rstrip("\n") for line in f)
    return out


#: ids named in the message of a pair that differs
SHOW_IDS = 5


def _check_pair(sparse_path, sparse_root: Path, sparse_parts: list[str], dense_path, dense_root: Path,
                dense_parts: list[str]) -> None:
    """Refuse a Lucene and a FAISS index (their current versions) that do not hold the same documents.

    Raises
    ------
    UpdateError
        The ids only in each, counted, and the first :data:`SHOW_IDS` of each named.
    """
    lucene_only = lucene_ids(sparse_root, sparse_parts)
    faiss_only = faiss_ids(dense_root, dense_parts)
    lucene_only, faiss_only = lucene_only - faiss_only, faiss_only - lucene_only
    if not (lucene_only or faiss_only):
        return
    said = []
    for n, only, path in ((len(lucene_only), lucene_only, sparse_path), (len(faiss_only), faiss_only, dense_path)):
        if n:
            first = sorted(only)[:SHOW_IDS]
            said.append(f"{n} only in {path} ({', '.join(first)}{' ...' if n > len(first) else ''})")
    raise UpdateError(f"{sparse_path} and {dense_path} do not hold the same documents: {'; '.join(said)}; "
                      f"nothing was written: update each on its own, or build them again from one collection")


@dataclass
class Plan:
    """What one index does: the ids removed from each partition, the records added to each."""

    removed: dict[str, set[str]] = field(default_factory=dict)
    added: dict[str, list[dict]] = field(default_factory=dict)

    def keys(self) -> list[str]:
        return sorted(set(self.removed) | set(self.added))


def _plan(changes: ChangeSet, located: dict[str, str], index_dir: Path, partitioned: bool) -> Plan:
    plan = Plan()
    for c in changes.changes.values():
        at = located.get(c.docid)
        if c.op == "add" and at is not None:
            raise UpdateError(f"{c.where}: document {c.docid!r} is already in {index_dir}"
                              f"{f' (partition {at})' if partitioned else ''}; give it with --replace to change it")
        if c.op != "add" and at is None:
            raise UpdateError(f"{c.where}: document {c.docid!r} is not in {index_dir}, so it cannot be "
                              f"{'replaced' if c.op == 'replace' else 'deleted'}"
                              f"{'; give it with --add' if c.op == 'replace' else ''}")
        if c.restate and at == c.partition:
            continue  # the same indexed document: only its displayed fields changed (the change log has them)
        if c.restate:  # pragma: no cover - a partition is a searched field: a record moved is never restated
            raise UpdateError(f"{c.where}: document {c.docid!r} is in partition {at!r} of {index_dir}, not "
                              f"{c.partition!r}, yet its searched fields are unchanged; build the index again")
        if at is not None:
            plan.removed.setdefault(at, set()).add(c.docid)
        if c.record is not None:
            plan.added.setdefault(c.partition, []).append(c.record)
    return plan


# ------------------------------------------------------------------ the new version's files
_SKIP = ("write.lock",)


def _copy_version(current: Path, tmp: Path) -> None:
    """The current version's files into the new version folder ``tmp``, hard-linked (neither Lucene nor this
    module ever writes into an existing file: every file changed is written anew and renamed into place, or
    removed first), its change logs included; its marker and Lucene lock files left out."""
    atomic.copy_linked(current, tmp, ignore=(atomic.MARKER, *_SKIP))


def _log_row(c: Change) -> str:
    """A change as its change log holds it (one JSON line)."""
    return json.dumps({"id": c.docid, "op": c.op, "partition": c.partition if c.record is not None else None,
                       "record": c.record}, ensure_ascii=False)


def _write_updates(current: Path, tmp: Path, changes: ChangeSet, digests: str | os.PathLike | None = None,
                   restated: str | os.PathLike | None = None) -> None:
    """The new version's own change log, ``legalir-updates/NNNNNN.jsonl.gz``: these changes only, beside the logs
    of the versions before it (hard links: :func:`_copy_version`); readers take the last change of a document
    (:func:`legalir.indexing.changes.changed_documents`). ``digests`` (``--to``: :func:`release_changes`' file):
    kept beside it as ``NNNNNN.digests.gz`` (:data:`DIGESTS`). ``restated``: the rows of the restated records,
    written when they were read (their records are not held), appended last."""
    import gzip
    import io
    import shutil

    (tmp / UPDATES_DIR).mkdir(exist_ok=True)
    packed = io.BytesIO()  # compressed a row at a time: the log's text is never held whole
    with gzip.GzipFile(fileobj=packed, mode="wb", compresslevel=6, mtime=0) as z:
        for c in changes.changes.values():
            if not (c.restate and c.record is None):
                z.write((_log_row(c) + "\n").encode("utf-8"))
        if restated is not None:
            with open(restated, "rb") as rows:
                shutil.copyfileobj(rows, z)
    n = len(change_logs(current)) + 1
    atomic.write_bytes(tmp / UPDATES_DIR / f"{n:06d}.jsonl.gz", packed.getvalue())
    if digests is not None:
        atomic.write_bytes(tmp / UPDATES_DIR / f"{n:06d}{DIGESTS}",
                           gzip.compress(Path(digests).read_bytes(), compresslevel=6, mtime=0))


def _write_jsonl(folder: Path, records: Sequence[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "docs.jsonl", "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return folder


def _meta_update(meta: dict, changes: ChangeSet, documents: int) -> dict:
    done = dict(meta.get("updates") or {})
    for op, n in changes.counts().items():
        done[op] = int(done.get(op, 0)) + n
    done["applied"] = int(done.get("applied", 0)) + 1
    return {**meta, "documents": documents, "updates": done}


# ------------------------------------------------------------------ Lucene
def _index_records(records: Sequence[dict], work: Path, fields: list[str], threads: int,
                   out: Path | None = None) -> Path:
    """A Lucene index of ``records`` built exactly as ``legalir index`` builds one (same generator, fields),
    in ``out`` [default: ``work/index``]; ``work`` holds the records' JSONL."""
    from legalir.indexing import sparse

    src = _write_jsonl(work / "docs", records)
    out = out or work / "index"
    out.mkdir(parents=True)
    log = sparse._index_collection(src, out, threads, fields)
    if log:
        _log.warning(f"{src}: Java reported problems while indexing the changed documents; its report: {log}")
    return out


#: the JVM options an update asks for when it is the first to start the process's JVM (:func:`legalir.base.jvm.prefer`;
#: ``LEGALIR_JVM_OPTIONS`` still wins): an update allocates a little at a time, and the young generation the JVM
#: sizes by default for a long job was 15-50 MB of the peak memory of ``legalir index update --to`` on Georgia
JVM_OPTIONS = ("-XX:MaxNewSize=32m",)

#: a segment keeps its deleted documents (marked deleted: the segment's files stay shared with the versions
#: before, and searches subtract their statistics, ``io.legalir.LiveStatsSearcher``) until they are more than
#: this share of it; then the update rewrites it without them
DELETES_PCT_ALLOWED = 50.0


def _apply_lucene_folder(folder: Path, removed: set[str], records: list[dict], work: Path, fields: list[str],
                         threads: int) -> int:
    """Delete ``removed`` from the Lucene index in ``folder``, add ``records``, rewrite the touched segments;
    returns the documents it holds now."""
    from legalir.indexing import sparse
    from legalir.indexing.lucene import LuceneWriter

    # the records analyzed and indexed in this writer as a build indexes them (io.legalir.IndexUpdate: Anserini's
    # reader, document generator, analyzer and similarity, IndexCollection's arguments), not in an index of their own
    # copied in: no second JVM indexer, thread pool or segment copy
    src = _write_jsonl(work / "docs", records) if records else work
    with LuceneWriter(folder, merge=True, deletes_pct_allowed=DELETES_PCT_ALLOWED,
                      index_arguments=sparse.index_arguments(src, work / "index", threads, fields)) as writer:
        if removed:
            writer.delete(removed)  # the documents there now: not those added below
        if records:
            added = writer.add_documents()
            if added != len(records):  # pragma: no cover - IndexUpdate.add raises first
                raise UpdateError(f"{folder}: {len(records)} documents to index, {added} indexed; nothing was "
                                  f"published")
        if removed:
            writer.expunge_deletes()  # only the segments with more than DELETES_PCT_ALLOWED % deleted
        writer.commit()  # one commit (one round of fsync) per index
        return writer.num_docs()


def _apply_lucene(index_dir: Path, cur: Path, tmp: Path, plan: Plan, parts: list[str], meta: dict,
                  changes: ChangeSet, corpus: Path, fields: list[str], threads: int, quiet: bool) -> int:
    """Write the new version of a Lucene index into ``tmp`` (the current one's files, hard-linked, changed)."""
    import shutil
    import time

    from legalir.indexing import lucene, sparse

    work = tmp / ".update"
    _copy_version(cur, tmp)
    total = 0
    if meta.get("pooled"):
        segments = {k: list(v) for k, v in (meta.get("segments") or {}).items()}
        with lucene.LuceneIndex(cur) as idx:
            docs = {key: idx.live_records(set(segments.get(key, ()))) for key in plan.keys()}
        with lucene.LuceneWriter(tmp, merge=False) as writer:
            # every changed partition's documents deleted first (by id: a document moving to another partition
            # is deleted from its old one before it is added to its new one), then each one's segments made
            # again from its kept and new documents
            writer.delete([r["id"] for key in plan.keys() for r in docs[key]])
            writer.commit()  # the old segments, now without a live document, are dropped
            for i, key in enumerate(log.progress(plan.keys(), desc="index update", unit=" partitions",
                                                 quiet=quiet), 1):
                t0 = time.time()
                gone = plan.removed.get(key, set())
                new = [r for r in docs[key] if r["id"] not in gone] + plan.added.get(key, [])
                segments.pop(key, None)
                if new:
                    before = set(writer.segments())
                    writer.add_index(_index_records(new, work / key, fields, threads))
                    writer.commit()
                    segments[key] = sorted(set(writer.segments()) - before)
                if not quiet:
                    _log.info(f"updated partition {key} of {index_dir}: {len(new)} documents "
                              f"([{i}/{len(plan.keys())}], {time.time() - t0:.1f}s)")
        shutil.rmtree(work, ignore_errors=True)
        total = sparse.num_docs(tmp)
        atomic.write_json(tmp / lucene.META, _meta_update({**meta, "segments": segments}, changes, total),
                          sort_keys=False)
        return total
    for i, key in enumerate(log.progress(plan.keys(), desc="index update", unit=" partitions", quiet=quiet), 1):
        t0 = time.time()
        folder = tmp / key if key else tmp
        removed, records = plan.removed.get(key, set()), plan.added.get(key, [])
        # a new partition: its collection folder recorded as a build records it
        own = sparse.index_meta(folder) if (folder / lucene.META).exists() else \
            {**recorded_path("input", corpus / key, folder), "documents": 0, "fields": fields}
        if key and key not in parts:  # a partition the index did not have: a new index, as a build makes it
            _index_records(records, work / key, fields, threads, out=folder)
            n = sparse.num_docs(folder)
        else:
            n = _apply_lucene_folder(folder, removed, records, work / (key or "_"), fields, threads)
        expected = int(own["documents"]) - len(removed) + len(records)
        if n != expected:  # pragma: no cover - invariant
            raise UpdateError(f"{index_dir}: {expected} documents expected in {key or 'the index'} after the "
                              f"update, {n} found; nothing was published")
        if n == 0 and not key:
            raise UpdateError(f"{index_dir}: the update deletes every document of the index; build another "
                              f"index instead (an empty index cannot be searched)")
        if n == 0:  # every document of the partition deleted: a rebuild would not have it
            shutil.rmtree(folder)
        else:
            atomic.write_json(folder / lucene.META, _meta_update(own, changes, n), sort_keys=False)
        if not quiet:
            _log.info(f"updated {index_dir / key if key else index_dir}: {n} documents (-{len(removed)} "
                      f"+{len(records)}; [{i}/{len(plan.keys())}], {time.time() - t0:.1f}s)")
    shutil.rmtree(work, ignore_errors=True)
    for key in sparse.partition_keys(tmp, lucene.META) or [""]:
        total += int(sparse.index_meta(tmp / key if key else tmp)["documents"])
    return total


# ------------------------------------------------------------------ FAISS
def _faiss_rows(index, keep):
    """The vectors of rows ``keep`` of a flat or HNSW index (stored exactly)."""
    import numpy as np

    n = int(index.ntotal)
    if n == 0 or len(keep) == 0:
        return np.zeros((0, int(index.d)), dtype=np.float32)
    return np.ascontiguousarray(index.reconstruct_n(0, n)[keep], dtype=np.float32)


def _ivf_keep(index, keep) -> None:
    """Keep rows ``keep`` of an IVF index in place: their codes stay in their lists, renumbered 0..len(keep)-1."""
    import numpy as np

    from legalir.indexing import dense

    f = dense.faiss()
    ivf = f.extract_index_ivf(index)
    inv = ivf.invlists
    new_row = np.full(int(ivf.ntotal), -1, dtype=np.int64)
    new_row[keep] = np.arange(len(keep), dtype=np.int64)
    size = int(inv.code_size)
    for lst in range(int(ivf.nlist)):
        n = int(inv.list_size(lst))
        if n == 0:
            continue
        ids = f.rev_swig_ptr(inv.get_ids(lst), n).copy()
        codes = f.rev_swig_ptr(inv.get_codes(lst), n * size).copy().reshape(n, size)
        mapped = new_row[ids]
        kept = mapped >= 0
        inv.resize(lst, 0)
        if kept.any():
            ids_kept = np.ascontiguousarray(mapped[kept])
            codes_kept = np.ascontiguousarray(codes[kept])
            inv.add_entries(lst, int(kept.sum()), f.swig_ptr(ids_kept), f.swig_ptr(codes_kept))
    ivf.ntotal = len(keep)
    if ivf is not index:  # pragma: no cover - a wrapper around the IVF index
        index.ntotal = len(keep)


def _apply_dense(index_dir: Path, cur: Path, tmp: Path, plan: Plan, parts: list[str], changes: ChangeSet,
                 device: str | None, batch_size: int, quiet: bool) -> int:
    """Write the new version of a FAISS index into ``tmp``: kept vectors as they are, new ones encoded."""
    import shutil
    import time

    import numpy as np

    from legalir.indexing import dense, encoders

    f = dense.faiss()
    _copy_version(cur, tmp)
    template = dense.read_meta(cur)
    encoder = None
    for i, key in enumerate(plan.keys(), 1):
        t0 = time.time()
        folder = tmp / key if key else tmp
        removed, records = plan.removed.get(key, set()), plan.added.get(key, [])
        fresh = not (folder / dense.META).exists()
        if fresh:  # a partition the index did not have
            folder.mkdir()
            meta = {**template, "partition": key, "documents": 0, "updates": {}}
            spec = dense.IndexSpec(**meta["index"])
            if spec.type == "ivfpq":  # untrainable on a few documents: the trained lists of another partition
                index = f.read_index(str(cur / parts[0] / dense.INDEX_FILE))
                index.reset()
            else:
                index = dense._make_index(spec, int(meta["dim"]), len(records))
            docids: list[str] = []
        else:
            meta = json.loads((folder / dense.META).read_text(encoding="utf-8"))
            spec = dense.IndexSpec(**meta["index"])
            index = f.read_index(str(folder / dense.INDEX_FILE))
            with open(folder / dense.DOCIDS, encoding="utf-8") as fh:
                docids = [line.rstrip("\n") for line in fh]
        keep = np.array([r for r, d in enumerate(docids) if d not in removed], dtype=np.int64)
        if spec.type == "ivfpq":
            _ivf_keep(index, keep)
            out = index
        else:
            out = dense._make_index(spec, int(meta["dim"]), len(keep) + len(records))
            out.add(_faiss_rows(index, keep))
        if records:
            if encoder is None:
                encoder = encoders.Encoder.from_settings(template["encoder"], device=device)
            vecs = encoder.encode_documents([encoders.record_text(encoder.settings.doc_text, r) for r in records],
                                            batch_size=batch_size,
                                            progress=not quiet)
            out.add(np.ascontiguousarray(vecs, dtype=np.float32))
        ids = [docids[r] for r in keep] + [r["id"] for r in records]
        if int(out.ntotal) != len(ids):  # pragma: no cover - invariant
            raise UpdateError(f"{index_dir}: {out.ntotal} vectors but {len(ids)} document ids after the update")
        if not ids and not key:
            raise UpdateError(f"{index_dir}: the update deletes every document of the index; build another "
                              f"index instead (an empty index cannot be searched)")
        if not ids:
            shutil.rmtree(folder)
            continue
        for name in (dense.INDEX_FILE, dense.DOCIDS):  # hard links to the current version's files: new files
            (folder / name).unlink(missing_ok=True)
        f.write_index(out, str(folder / dense.INDEX_FILE))
        with open(folder / dense.DOCIDS, "w", encoding="utf-8") as fh:
            fh.write("".join(d + "\n" for d in ids))
        atomic.write_json(folder / dense.META, _meta_update(meta, changes, len(ids)), sort_keys=False)
        if not quiet:
            _log.info(f"updated {index_dir / key if key else index_dir}: {len(ids)} vectors (-{len(removed)} "
                      f"+{len(records)}; [{i}/{len(plan.keys())}], {time.time() - t0:.1f}s)")
    return sum(int(dense.read_meta(tmp / k if k else tmp)["documents"])
               for k in (dense.partitions(tmp) or [""]))


# ------------------------------------------------------------------ the command
def release_changes(indexes: Sequence[str | os.PathLike], to: str | os.PathLike,
                    out_dir: str | os.PathLike) -> dict[str, int]:
    """The change set that turns what ``indexes`` hold now into the collection ``to`` (a newer release of the
    same dataset), written as ``add.jsonl``, ``replace.jsonl`` and ``delete.txt`` into ``out_dir``.

    A document is added, removed or replaced by its id and its whole record as each collection holds it
    (``contents`` and every field): what an index of ``to`` would hold, so the update searches exactly as a
    fresh index of ``to``. A replaced record that differs only in fields the Lucene index does not index
    (a section's annotations, history, headings: not its text, citations, filters or partition) is written
    to ``restate.jsonl`` instead: its new record is logged for display, its Lucene document left as it is.
    Returns the counts ``{"add", "replace", "delete", "same", "text_changed", "restated"}``
    (``text_changed``: the replaced documents whose ``contents`` differ; ``restated``: of the replaced, those
    in ``restate.jsonl``).

    What the index holds is read as digests (:data:`DIGESTS`): those the versions of earlier ``--to`` updates keep,
    else (an index never updated with ``--to`` since the digests were kept) computed from the collection it was
    built from and its change logs. ``to``'s records are read a line at a time; a line equal to the one the index
    holds is not compared further. The digests of this update are left in ``out_dir`` (:data:`DIGESTS_FILE`).

    Raises
    ------
    UpdateError
        ``to`` is not a collection, or not of the index's dataset and partition field.
    """
    from legalir import collections

    try:
        pair = IndexPair(indexes)
    except NotAnIndex as e:
        raise UpdateError(str(e)) from None
    built = [p for p in (pair.sparse, pair.dense) if p is not None]
    root = collection_of(built[0])
    if root is None:
        raise UpdateError(f"{built[0]}: the collection it was built from is gone or not recorded; build the index "
                          f"of the new release afresh (legalir index {to} ...)")
    try:
        new = collections.Corpus(to)
    except LegalirError as e:
        raise UpdateError(f"--to {to}: {e}") from None
    old_manifest = collections.read_manifest(root)
    for key in ("dataset", "partition_field"):
        if new.manifest.get(key) != old_manifest.get(key):
            raise UpdateError(f"--to {to}: its {key} is {new.manifest.get(key)!r}, the index's collection's "
                              f"{old_manifest.get(key)!r}; give a release of the same dataset")

    from legalir.indexing import sparse

    # what a Lucene index of the record depends on: its id, text, indexed fields and partition
    searched = ["id", "contents", *sparse.indexed_fields(old_manifest), *([old_manifest["partition_field"]]
                                                                        if old_manifest.get("partition_field") else [])]
    # what the index holds now, as digests: those its versions keep (held_digests), else its collection's records
    # and its changes (the last of a document winning), read once; this update then keeps them
    cur = atomic.current(built[0])
    held = held_digests(cur, searched)
    full = held is None
    if held is None:
        held = _digests_read_whole(cur, root, searched)
    out = Path(out_dir)
    counts = {"add": 0, "replace": 0, "delete": 0, "same": 0, "text_changed": 0, "restated": 0}
    seen: set[str] = set()
    rows: list[str] = []  # this version's digests: every document's (full), or the changed ones'
    with open(out / "add.jsonl", "w", encoding="utf-8") as fa, \
            open(out / "replace.jsonl", "w", encoding="utf-8") as fr, \
            open(out / "restate.jsonl", "w", encoding="utf-8") as fs:
        for line, rec in collections.iter_document_lines(new.root):
            docid = str(rec["id"])
            seen.add(docid)
            was = held.get(docid)
            whole = _digest(line)
            if was is not None and was[0] == whole:  # the same line: the same record, not read further
                counts["same"] += 1
                if full:
                    rows.append("\t".join((docid, *was)))
                continue
            now = (whole, *_digest_fields(rec, searched))
            if was is not None and was[1] != now[1]:
                counts["text_changed"] += 1
            if "_partition" in rec:
                line = json.dumps({k: v for k, v in rec.items() if k != "_partition"}, ensure_ascii=False)
            restated = was is not None and was[2] == now[2]
            (fa if was is None else fs if restated else fr).write(line + "\n")
            counts["add" if was is None else "replace"] += 1
            counts["restated"] += restated
            # a restated record keeps its text's and indexed fields' digests: its whole record's alone changes
            rows.append("\t".join((docid, now[0]) if restated and not full else (docid, *now)))
    gone = sorted(d for d in held if d not in seen)
    (out / "delete.txt").write_text("".join(f"{d}\n" for d in gone), encoding="utf-8")
    counts["delete"] = len(gone)
    if not full:
        rows += gone  # a deleted document: its id alone
    header = {"about": "legalir index update: digests of the documents this version holds (full) or of those this "
                       "update changed", "full": full, "searched": searched}
    (out / DIGESTS_FILE).write_text(json.dumps(header) + "\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    return counts


# ------------------------------------------------------------------ digests of what a version holds
#: beside each change log ``legalir-updates/NNNNNN.jsonl.gz`` that ``--to`` writes, ``NNNNNN.digests.gz``: a JSON
#: header line (``full``: every document the version holds, else only those the update changed; ``searched``:
#: the fields the indexed digest covers), then a line per document, ``id<TAB>whole<TAB>text<TAB>indexed``
#: (BLAKE2b, 8 bytes, hex: of the record's line in its collection, of its ``contents``, of what Lucene indexes of
#: it); ``id<TAB>whole``: a record changed in fields the index does not search only; ``id``: a deleted document.
#: The next ``--to`` reads them instead of the collection the index was built from and every change log.
DIGESTS = ".digests.gz"
#: what :func:`release_changes` leaves in its folder for :func:`update` to keep
DIGESTS_FILE = "digests.tsv"


def _digest(text: str) -> str:
    import hashlib

    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def _digest_fields(rec: dict, searched: Sequence[str]) -> tuple[str, str]:
    """The digests of a record's text and of what Lucene indexes of it (its ``searched`` fields)."""
    return (_digest(str(rec.get("contents", ""))),
            _digest(json.dumps([rec.get(k) for k in searched], ensure_ascii=False)))


def _digests_read_whole(cur: Path, root: Path, searched: Sequence[str]) -> dict[str, tuple[str, str, str]]:
    """What the version ``cur`` holds, as digests, read from its collection ``root`` and its change logs (the
    last change of a document winning)."""
    from legalir import collections

    changed: dict[str, tuple[str, str, str] | None] = {}
    for docid, rec, _ in change_rows(cur):
        # a record in a change log is the line its collection holds (json.dumps of the record, as converted)
        changed[docid] = None if rec is None else (_digest(json.dumps(rec, ensure_ascii=False)),
                                                   *_digest_fields(rec, searched))
    held: dict[str, tuple[str, str, str]] = {}
    for line, rec in collections.iter_document_lines(root):
        docid = str(rec["id"])
        if docid not in changed:
            held[docid] = (_digest(line), *_digest_fields(rec, searched))
    for docid, d in changed.items():
        if d is not None:
            held[docid] = d
    return held


def held_digests(cur: Path, searched: Sequence[str]) -> dict[str, tuple[str, str, str]] | None:
    """The digests of what the version ``cur`` holds, from its ``NNNNNN.digests.gz`` files (:data:`DIGESTS`): the
    newest full table and the changes of every update after it. ``None`` when they do not reach the current
    version (an update applied without ``--to``, or by an older legalir), cover other fields than ``searched``,
    or differ from what the version's marker records: then the caller reads the collection and the change logs.

    Returns
    -------
    dict or None
        ``{docid: (whole record, text, indexed fields)}``.
    """
    import gzip

    logs = len(change_logs(cur))
    recorded = (atomic.read_marker(cur) or {}).get("files") or {}
    chain: list[tuple[Path, list[str]]] = []
    for n in range(logs, 0, -1):
        path = cur / UPDATES_DIR / f"{n:06d}{DIGESTS}"
        entry = recorded.get(f"{UPDATES_DIR}/{path.name}")
        if not path.is_file() or path.is_symlink():
            return None
        if not (isinstance(entry, dict) and atomic.ownership.matches(path, entry)):
            _log.warning(f"{path}: not as legalir wrote it (its size, time or SHA-256 differ from what the "
                         f"version's marker records); reading the collection and the change logs instead")
            return None
        head, _, body = gzip.decompress(path.read_bytes()).decode("utf-8").partition("\n")
        header = json.loads(head)
        if header.get("searched") != list(searched):
            return None
        chain.append((path, body.splitlines()))
        if header.get("full"):
            break
    else:
        return None
    held: dict[str, tuple[str, str, str]] = {}
    for path, lines in reversed(chain):
        for n, line in enumerate(lines, 2):
            cells = line.split("\t")
            if len(cells) == 4:
                held[cells[0]] = (cells[1], cells[2], cells[3])
            elif len(cells) == 2 and cells[0] in held:
                held[cells[0]] = (cells[1], *held[cells[0]][1:])
            elif len(cells) == 1 and cells[0] in held:
                del held[cells[0]]
            else:  # pragma: no cover - the file is the one legalir wrote (its SHA-256 checked above)
                raise UpdateError(f"{path}:{n}: not a digest line legalir wrote ({line!r:.80}); build the index "
                                  f"again (legalir index COLLECTION INDEX --overwrite)")
    return held


def _publish_release_only(indexes: Sequence[str | os.PathLike], release: dict) -> dict[str, dict]:
    """A new version of each of ``indexes`` that holds what the current one holds (hard links) as ``release``
    (its marker's ``release`` and ``date``): a newer release without a change, kept for ``as_of=`` it."""
    import uuid
    from contextlib import ExitStack

    from legalir.indexing import dense, sparse

    kinds = [kind_of(p)[0] for p in indexes]
    together = {TOGETHER: uuid.uuid4().hex} if len(indexes) == 2 else {}
    out: dict[str, dict] = {}
    with ExitStack() as stack:
        for path, kind in zip(indexes, kinds):
            mod = sparse if kind == "sparse" else dense
            marker = {**together, **release}
            tmp = stack.enter_context(atomic.atomic_dir(path, mod.KIND, legacy=mod._is_legacy_index, versioned=True,
                                                        marker=marker))
            cur = atomic.current(path)
            _copy_version(cur, tmp)
            documents = (sum(sparse.num_docs(cur / k) for k in sparse.partitions(cur)) if sparse.partitions(cur)
                         else sparse.num_docs(cur)) if kind == "sparse" else \
                sum(int(dense.read_meta(cur / k if k else cur)["documents"]) for k in (dense.partitions(cur) or [""]))
            out["bm25" if kind == "sparse" else "dense"] = {"index": str(path), "documents": documents,
                                                            "add": 0, "replace": 0, "delete": 0}
    for kind, d in out.items():
        d["version"] = atomic.current(d["index"]).name
    return out


def check_release_order(indexes: Sequence[str | os.PathLike], to: str | os.PathLike,
                        allow_older: bool = False) -> dict | None:
    """Refuse to apply the release ``to`` holds onto ``indexes`` unless it is newer than the one each holds now.

    A release goes forward: ``--to`` an older release (80 onto an index at 81), the same release, or a
    collection that records no release while the index does, is refused with both releases named.
    ``allow_older`` (``--allow-older``) applies it all the same; the new version's marker then records it
    (``release_from``: the release it went from).

    Parameters
    ----------
    indexes : sequence of path
        The index folders to update.
    to : path
        The collection of the release to apply.
    allow_older : bool
        Apply a release that is not newer.

    Returns
    -------
    dict or None
        ``{"release_from": R}`` to record in the new version when it does not go forward (``allow_older``),
        else None.

    Raises
    ------
    UpdateError
        Naming the index's release and ``to``'s, and the option that allows it.
    """
    from legalir import collections
    from legalir.indexing import dense, sparse

    for path in indexes:  # a copy of each is the next version: legalir's, unchanged, before its release is read
        try:
            kind, _ = kind_of(path)
        except NotAnIndex as e:
            raise UpdateError(str(e)) from None
        mod = sparse if kind == "sparse" else dense
        atomic.check_target(path, mod.KIND, legacy=mod._is_legacy_index, yes=None)
    try:
        IndexPair(indexes)  # their metadata whole (legalir.indexing.check_metadata) before their releases are read
    except LegalirError as e:
        raise UpdateError(str(e)) from None
    try:
        new = collections.release_of(collections.read_manifest(to))
    except LegalirError as e:
        raise UpdateError(f"--to {to}: {e}") from None
    went_back = None
    for path in indexes:
        now = (atomic.read_marker(atomic.current(path)) or {}).get("release")
        if not now:
            continue  # an index of no release: any release is its first
        if new is None:
            why = f"{to} records no release (converted without --option release=N), and {path} is at release {now}"
        elif release_key(new) < release_key(now):
            why = f"{to} holds release {new}, older than release {now} that {path} is at"
        elif new == now:
            why = f"{to} holds release {new}, the release {path} is at already"
        else:
            continue
        if not allow_older:
            raise UpdateError(f"--to {to}: {why}; a release goes forward (legalir index update --to applies a newer "
                              f"release): give a newer release's collection, or pass --allow-older to apply this one "
                              f"all the same (the new version records that it went from release {now})")
        _log.warning(f"--allow-older: {why}; applied all the same, recorded in the new version (release_from: {now})")
        went_back = {"release_from": now}
    return went_back


def update(indexes: Sequence[str | os.PathLike], add: Sequence[str | os.PathLike] = (),
           replace: Sequence[str | os.PathLike] = (), delete: Sequence[str | os.PathLike] = (), *,
           to: str | os.PathLike | None = None, allow_older: bool = False, threads: int | None = None,
           device: str | None = None, batch_size: int | None = None, quiet: bool = False,
           _release: dict | None = None, _marker: dict | None = None,
           _restate: Sequence[str | os.PathLike] = (), _digests: str | os.PathLike | None = None) -> dict[str, dict]:
    """Apply added, replaced and deleted documents to built indexes, each as a new version.

    Parameters
    ----------
    indexes : sequence of path
        A Lucene index, a FAISS index, or one of each built from the same collection (updated
        together: both or neither). Partitioned (one index per partition, or ``--pooled``) or not.
    add, replace : sequence of path
        JSONL documents ``{"id", "contents", ...metadata}``, as a collection holds them; a
        partitioned collection's documents carry its partition field (e.g. ``state``).
    delete : sequence of path
        Document ids, one per line (or JSONL objects with an ``id``).
    to : path, optional
        A converted collection of a newer release of the index's dataset (``legalir convert statutes
        --option release=86``): the difference between what the indexes hold and it is the change set
        (:func:`release_changes`), so the new version searches exactly as a fresh index of ``to``. Not
        with ``add``/``replace``/``delete``. The result's ``same`` counts the documents left as they were.
        A release that is not newer than the index's is refused (:func:`check_release_order`).
    allow_older : bool
        Apply ``to`` even when its release is older than the index's, the same, or not recorded; the new
        version's marker records the release it went from (``release_from``).
    threads : int, optional
        Lucene indexing threads [default: as ``legalir index``].
    device : str, optional
        torch device of the FAISS index's encoder (new documents are encoded).
    batch_size : int, optional
        Encoding batch size.
    quiet : bool
        No progress messages.

    Returns
    -------
    dict
        Per kind (``"bm25"``, ``"dense"``): ``index``, ``version`` (the folder now published),
        ``documents`` (after), and the counts ``add``, ``replace``, ``delete``.

    Raises
    ------
    UpdateError
        A change set that does not fit the index (module doc); nothing is written then.
    """
    import uuid
    from contextlib import ExitStack

    from legalir.base import jvm

    jvm.prefer(*JVM_OPTIONS)
    if to is not None:
        if add or replace or delete:
            raise UpdateError("--to applies a whole release: leave out --add, --replace and --delete")
        import tempfile

        from legalir import collections

        went_back = check_release_order(indexes, to, allow_older)
        with tempfile.TemporaryDirectory(prefix="legalir-release-") as tmp:
            counts = release_changes(indexes, to, tmp)
            if not (counts["add"] or counts["replace"] or counts["delete"]):
                release = collections.release_marker(collections.read_manifest(to))
                if went_back is not None or not release or all(
                        (atomic.read_marker(atomic.current(p)) or {}).get("release") == release["release"]
                        for p in indexes):
                    return {}
                # a newer release that prints every section as the one before: a version of its own all the
                # same (as_of= it), its files all hard links to the current version's
                done = _publish_release_only(indexes, release)
                for d in done.values():
                    d["same"], d["text_changed"], d["restated"] = counts["same"], 0, 0
                return done
            written = {**counts, "replace": counts["replace"] - counts["restated"]}  # replace.jsonl's, restated apart
            files = {op: [str(Path(tmp) / name)] if written[op] else []
                     for op, name in (("add", "add.jsonl"), ("replace", "replace.jsonl"), ("delete", "delete.txt"))}
            restate = [str(Path(tmp) / "restate.jsonl")] if counts["restated"] else []
            lucene_only = all(kind_of(p)[0] == "sparse" for p in indexes)
            if not lucene_only:  # a FAISS index encodes fields Lucene does not index (its doc_text): replaced whole
                files["replace"] = files["replace"] + restate
                restate = []
            done = update(indexes, **files, threads=threads, device=device, batch_size=batch_size, quiet=quiet,
                          _release=collections.release_marker(collections.read_manifest(to)), _marker=went_back,
                          _restate=restate, _digests=Path(tmp) / DIGESTS_FILE)
        for d in done.values():
            d["same"], d["text_changed"] = counts["same"], counts["text_changed"]
            d["restated"] = counts["restated"] if lucene_only else 0
        return done

    from legalir import collections
    from legalir import datasets as datasets_base
    from legalir.indexing import dense, encoders, sparse

    for path in indexes:  # first, before its metadata is read: the next version is a copy of this one
        try:
            kind, _ = kind_of(path)
        except NotAnIndex as e:
            raise UpdateError(str(e)) from None
        mod = sparse if kind == "sparse" else dense
        atomic.check_target(path, mod.KIND, legacy=mod._is_legacy_index, yes=None)
    try:
        pair = IndexPair(indexes)
    except LegalirError as e:
        raise UpdateError(str(e)) from None
    if (add or replace or delete):
        changes = read_changes(add, replace, delete)
    else:
        changes = ChangeSet()
    if not changes.changes and not _restate:
        raise UpdateError("no changes: give --add, --replace or --delete files holding documents")
    kinds = [(k, p) for k, p in (("bm25", pair.sparse), ("dense", pair.dense)) if p is not None]
    roots = {}
    for kind, path in kinds:
        root = collection_of(path)
        if root is None:
            raise UpdateError(f"{path}: the collection it was built from is gone or not recorded; an update needs "
                              f"its settings (partition field, derived fields): build the index again")
        roots[kind] = root
    if len(set(roots.values())) > 1:
        raise UpdateError(f"{pair.sparse} and {pair.dense} were built from different collections "
                          f"({roots['bm25']}, {roots['dense']}); update each on its own")
    root = next(iter(roots.values()))
    lucene_meta = sparse.META
    manifest = collections.read_manifest(root)
    filterable = _make_records(changes, manifest)
    restated_rows = None
    if _restate:  # replaced records whose indexed fields are unchanged (release_changes): logged, not reindexed
        # read a record at a time, made as the collection holds it, its change-log row written out at once and the
        # record let go: a release that reprints every section is never held whole
        make = _record_maker(manifest)
        restated_rows = Path(_restate[0]).with_name("restate.rows.jsonl")
        with open(restated_rows, "w", encoding="utf-8") as out:
            for path in _restate:
                for shown, n, item in _read(path, ids=False):
                    c = _checked("replace", f"{shown}:{n}", item)
                    c.restate = True
                    _take(changes, c)
                    make(c)
                    out.write(_log_row(c) + "\n")
                    c.record = None
    try:
        declared = datasets_base.dataset_class(str(manifest.get("dataset"))).filter_types
    except LegalirError:
        declared = None
    fields = sparse.indexed_fields(manifest)
    partitioned = bool(manifest.get("partition_field"))
    out: dict[str, dict] = {}
    # two indexes updated together carry one token in their markers: a reader seeing one published waits for
    # the other (half_published)
    together = {TOGETHER: uuid.uuid4().hex} if len(kinds) == 2 else None
    with ExitStack() as stack:
        work = []
        for kind, path in kinds:
            mod = sparse if kind == "bm25" else dense
            marker = {**(together or {}), **(_marker or {})}  # completed below, written with the version
            tmp = stack.enter_context(atomic.atomic_dir(path, mod.KIND, legacy=mod._is_legacy_index, versioned=True,
                                                        marker=marker))
            cur = atomic.current(path)  # under the lock: no other writer changes it now
            # the release the new version holds, with its date: the one --to applies, else the current version's
            # (changes to it)
            held = _release or atomic.read_marker(cur) or {}
            if held.get("release"):
                marker.update({k: held[k] for k in ("release", "date") if held.get(k)})
            if kind == "bm25":
                meta = sparse.index_meta(cur)
                parts = sparse.partitions(cur)
                if parts:  # one index per partition: each records the fields of the whole collection
                    meta = {**meta, **{k: v for k, v in sparse.index_meta(cur / parts[0]).items()
                                       if k == filters.TYPES_KEY}}
                types = _filter_types(changes, filterable, filters.schema_of(meta), declared, path)
                located = _lucene_locations(cur, parts, meta if meta.get("pooled") else {}, list(changes.changes))
            else:
                meta = dense.read_meta(cur)
                parts = dense.partitions(cur)
                shards = [k for k in parts or [""] if dense.read_meta(cur / k if k else cur).get("shards")]
                if shards:
                    raise UpdateError(f"{path}: built in shards (index-dense --shard-size); a sharded index cannot be "
                                      f"updated: build it again (legalir encode, legalir index-dense)")
                located = _dense_locations(cur, parts, list(changes.changes))
            work.append((kind, path, tmp, cur, parts, meta, located))
        if len(work) == 2:  # the whole pair, before anything is applied: every id, then the changed ones' places
            _check_pair(pair.sparse, work[0][3], work[0][4], pair.dense, work[1][3], work[1][4])
        if len(work) == 2 and work[0][6] != work[1][6]:
            differ = sorted(d for d in changes.changes if work[0][6].get(d) != work[1][6].get(d))
            raise UpdateError(f"{pair.sparse} and {pair.dense} hold documents in different partitions (e.g. "
                              f"{', '.join(differ[:3])}); update each on its own, or build them again")
        for kind, path, tmp, cur, parts, meta, located in work:
            plan = _plan(changes, located, Path(path), partitioned)
            if kind == "bm25":
                n = _apply_lucene(Path(path), cur, tmp, plan, parts, meta, changes, root / "corpus", fields,
                                  threads or sparse.DEFAULT_THREADS, quiet)
                if types is not None:  # every index of the version records the fields after the update
                    for key in sparse.partition_keys(tmp, lucene_meta) or [""]:
                        folder = tmp / key if key else tmp
                        own = sparse.index_meta(folder)
                        if own.get(filters.TYPES_KEY) != types:
                            atomic.write_json(folder / lucene_meta, {**own, filters.TYPES_KEY: types},
                                              sort_keys=False)
            else:
                n = _apply_dense(Path(path), cur, tmp, plan, parts, changes, device,
                                 batch_size or encoders.DEFAULT_BATCH_SIZE, quiet)
            _write_updates(cur, tmp, changes, _digests, restated_rows)
            out[kind] = {"index": str(path), "documents": n, **changes.counts()}
    for kind, path in kinds:  # published now
        out[kind]["version"] = atomic.current(path).name
    return out
