"""Write a dataset as a collection on disk: Pyserini JsonCollection, topics, qrels.

Layout of ``collections/<name>/``::
    corpus/docs.jsonl                {"id", "contents", ...metadata}   (one partition)
    corpus/<partition>/docs.jsonl    same, one folder per partition value
    topics/<set>.tsv                 qid<TAB>text        (Pyserini topics)
    topics/<set>.jsonl               {"qid", "text", ...metadata}
    qrels/<set>.txt                  qid 0 docid rel     (TREC qrels)
    manifest.json                    counts and everything reported

Conversion streams documents (memory grows only with the set of ids kept to
detect duplicates), checks that documents in = documents written + reported
rejects, and reports duplicate ids, empty texts, repeated judgements and qrels
documents missing from the corpus. Every document, topic and qrels id is
checked: an id a TREC file cannot hold (empty, null, holding whitespace) is an
error naming it, so that every file legalir writes can be read back. The
whole folder is written atomically (:mod:`legalir.base.atomic`), and replaces only
a collection that legalir wrote.
"""
from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import ItemsView, Iterable, Iterator, Mapping, Sequence, ValuesView
from pathlib import Path
from typing import Any

from legalir import trec
from legalir.base import atomic, log
from legalir.datasets.dataset import Dataset, Judgement
from legalir.errors import LegalirError, read_json
from legalir.legal import filters
from legalir.trec.model import id_problem

_log = log.get(__name__)

RESERVED = ("id", "contents")
KIND = "collection"
SHOW = 10  # ids listed per problem in messages


#: where converted collections live (``<folder>/<dataset>``), as the Makefile writes them
ROOT_ENV = "LEGALIR_COLLECTIONS"
DEFAULT_ROOT = "collections"


def root() -> Path:
    """The folder holding converted collections: ``$LEGALIR_COLLECTIONS``, else ``./collections``."""
    return Path(os.path.expanduser(os.environ.get(ROOT_ENV, "").strip() or DEFAULT_ROOT))


def default_path(dataset: str) -> Path:
    """Where dataset ``dataset``'s converted collection lives unless told otherwise: ``root() / dataset``
    (``$LEGALIR_COLLECTIONS/<dataset>``, else ``collections/<dataset>``). `legalir convert` writes it,
    :func:`legalir.load` and `legalir report` read it."""
    return root() / dataset


def split_of(run_path: str | os.PathLike, topic_sets: Iterable[str]) -> str | None:
    """The topic set a run file's name names (``bm25.test.long.trec`` -> ``test.long``), the longest
    that matches whole dot-separated parts; ``None`` when none does."""
    name = f".{Path(run_path).name}."
    found = [s for s in topic_sets if f".{s}." in name]
    return max(found, key=len) if found else None


class CollectionError(LegalirError, ValueError):
    pass


def base_set(name: str) -> str:
    """Qrels set that a topic set uses: ``test.long`` -> ``test``."""
    return name.split(".", 1)[0]


def _report(lines: list[str], quiet: bool) -> None:
    if not quiet:
        for line in lines:
            _log.warning(line)


def _where(dataset: Dataset, item: Any) -> str:
    """``file:line`` of a published document or judgement when its reader recorded it, else the dataset folder."""
    source, line = getattr(item, "source", None), getattr(item, "line", None)
    return f"{source}:{line}" if source and line else str(source or dataset.root)


def _check_id(dataset: Dataset, value: Any, what: str, item: Any = None, topic: bool = False) -> None:
    problem = trec.topic_id_message(value) if topic else trec.id_message(value)
    if problem:
        raise CollectionError(f"{_where(dataset, item)}: {dataset.name}: {what} id {value!r} {problem}; fix the "
                              f"published file, or map the ids in the dataset module (legalir writes only ids it "
                              f"can read back)")


def is_collection(path: Path) -> bool:
    """A collection folder written by legalir before output markers existed."""
    try:
        with open(path / "manifest.json", encoding="utf-8") as f:
            return "dataset" in json.load(f)
    except (OSError, ValueError, TypeError):
        return False


def write(dataset: Dataset, out_dir: str | os.PathLike, *, quiet: bool = False, strict: bool = False,
          overwrite: bool = False, citations: bool = True) -> dict:
    """Convert ``dataset`` into ``out_dir``; returns the manifest.

    A qrels document counts as present when it is a document of the corpus or
    the ``parent_id`` of one of its passages (document-level qrels scored after MaxP).

    ``strict`` turns every reported problem (duplicates, empty texts, repeated
    judgements, dangling qrels documents) into an error. ``citations``: extract each document's
    citations into its ``citations`` field (:mod:`legalir.legal.citations`). Filterable metadata goes into
    its ``filters`` field (:mod:`legalir.legal.filters`). Every id written is
    checked (:func:`id_problem`). ``out_dir`` is written atomically and only
    replaces a collection legalir wrote (``overwrite``: another legalir output;
    see :mod:`legalir.base.atomic`).
    """
    with atomic.atomic_dir(out_dir, KIND, overwrite=overwrite, legacy=is_collection) as tmp:
        for sub in ("corpus", "topics", "qrels"):
            (tmp / sub).mkdir()
        manifest = _write(dataset, tmp, quiet=quiet, strict=strict, citations=citations)
        atomic.write_json(tmp / "manifest.json", manifest, ensure_ascii=True)
    return manifest


def make_record(docid: str, contents: str, fields: Mapping[str, Any], *, citation_field: str | None = None,
                jurisdiction_field: str | None = None, filter_fields: Iterable[str] | None = None,
                citations: bool = True, given: str | None = None,
                filter_types: Mapping[str, str] | None = None) -> tuple[dict, set[str]]:
    """One document as a collection holds it: ``{"id", "contents", ...fields}`` with its derived fields.

    The one place the derived fields are made, for :func:`write` and for documents added to a built
    index (:mod:`legalir.indexing.update`): ``citations`` (when asked; :mod:`legalir.legal.citations`, from the
    ``citation_field`` and the text, the ``jurisdiction_field`` as a hint; ``given``: the field a dataset
    with ``citations_given`` read from its source's own links, used as it is) and ``filters``
    (:mod:`legalir.legal.filters`, from the metadata; ``filter_types``: the dataset's declared field types).
    Derived fields the record already carries (one read back from a collection) are made again from it.

    Returns
    -------
    tuple of (dict, set of str)
        The record, and the metadata fields it made filterable.
    """
    from legalir.legal import citations as cite

    rec = {"id": docid, "contents": contents,
           **{k: v for k, v in fields.items() if k not in (cite.FIELD, filters.FIELD)}}
    if citations and given is not None:
        if given:
            rec[cite.FIELD] = given
    elif citations:
        found = cite.document_field(fields.get(citation_field) if citation_field else None, contents,
                                    jurisdiction_hint=fields.get(jurisdiction_field) if jurisdiction_field else None)
        if found:
            rec[cite.FIELD] = found
    meta = {k: v for k, v in rec.items() if k not in ("id", "contents", cite.FIELD)}
    try:
        tokens = filters.document_tokens(meta, filter_fields, filter_types)
    except filters.FilterError as e:
        raise CollectionError(f"document {docid!r}: {e}") from None
    if tokens:
        rec[filters.FIELD] = tokens
        return rec, set(filters.filterable(meta, filter_fields))
    return rec, set()


#: documents whose records are made together (in order); past PARALLEL_AFTER documents with citations on, each
#: batch is shared among RECORD_WORKERS processes (citation extraction is most of a convert's time)
RECORDS_BATCH = 4000
PARALLEL_AFTER = 20_000
RECORD_WORKERS = min(4, os.cpu_count() or 1)


def _can_fork() -> bool:
    """Whether worker processes may be forked from this one: a platform with fork, and no JVM started here."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    jnius_config = sys.modules.get("jnius_config")
    return not (jnius_config is not None and getattr(jnius_config, "vm_running", False))


def _make_records(items: list[tuple], settings: dict) -> list[tuple[dict, list[str]]]:
    """:func:`make_record` of each ``(docid, contents, fields, given)``: ``(record, filterable fields)``, in
    order (what a worker process of :func:`_write` runs; the keys never depend on the process)."""
    out = []
    for docid, contents, fields, given in items:
        rec, filterable = make_record(docid, contents, fields, given=given, **settings)
        out.append((rec, sorted(filterable)))
    return out


def _write(dataset: Dataset, tmp: Path, *, quiet: bool, strict: bool, citations: bool = True) -> dict:
    if getattr(dataset, "citations_given", False):
        dataset.citations_wanted = citations  # a dataset that reads its own citations skips them when off
    corpus = _CorpusWriter(dataset, tmp, quiet=quiet, citations=citations)
    corpus.write()
    problems = corpus.problems()
    topic_counts = _write_topics(dataset, tmp)
    qrels = _write_qrels(dataset, tmp, corpus, problems)
    _report(problems, quiet)
    if strict and problems:
        raise CollectionError("; ".join(problems))
    return _manifest(dataset, corpus, topic_counts, qrels, problems, citations=citations)


class _CorpusWriter:
    """A dataset's documents -> ``corpus/docs.jsonl`` (``corpus/<partition>/docs.jsonl`` where it partitions),
    each checked, its record made (:func:`make_record`, in processes once the collection is large) and
    written in order; duplicates and empty texts counted, not written."""

    def __init__(self, dataset: Dataset, tmp: Path, *, quiet: bool, citations: bool):
        self.dataset, self.tmp, self.quiet, self.citations = dataset, tmp, quiet, citations
        self.part_field = dataset.partition_field
        # getattr: a dataset-like object of the caller's own (e.g. legalir.collections.chunking's passages) may lack them
        own_field, jur_field = getattr(dataset, "citation_field", None), getattr(dataset, "jurisdiction_field", None)
        filter_names = getattr(dataset, "filter_fields", None)
        declared = getattr(dataset, "filter_types", None)
        self.with_citations = 0
        self.filter_seen = filters.TypeInference(declared)
        self.seen: set[str] = set()
        self.parents: set[str] = set()  # parent documents of passages (MaxP scores runs on these)
        self.duplicates: list[str] = []
        self.empty: list[str] = []
        self.docs_in = 0
        self.per_partition: Counter[str] = Counter()
        self.handles: dict[str, Any] = {}
        self.settings = dict(citation_field=own_field, jurisdiction_field=jur_field, filter_fields=filter_names,
                             citations=citations, filter_types=declared)
        self.pending: list[tuple] = []  # documents checked, their records not made yet (in order)
        self.workers = None  # processes making records, once the collection is large (a citation read is the cost)
        self.made = 0
        self.bar = None
        self.done = 0  # bar.n at the last flush

    def write(self) -> None:
        """Every document of the dataset, checked and written (or counted as a duplicate or empty)."""
        # documents done (written, or skipped as duplicate or empty); a dataset's documents come as a stream, of a
        # length not known beforehand: count and rate, no time left
        dataset = self.dataset
        self.bar = log.progress(desc=f"{dataset.name}: documents", unit=" docs", quiet=self.quiet)
        try:
            for doc in dataset.documents():
                self._add(doc)
                if len(self.pending) >= RECORDS_BATCH:
                    self.with_citations += self._flush()
            self.with_citations += self._flush()
        finally:
            self.bar.close()
            for h in self.handles.values():
                h.close()
            if self.workers is not None:
                self.workers.shutdown(cancel_futures=True)
        self.written = sum(self.per_partition.values())
        written, docs_in = self.written, self.docs_in
        if written + len(self.duplicates) + len(self.empty) != docs_in:  # pragma: no cover - invariant
            raise CollectionError(f"{dataset.name}: read {docs_in} documents but accounted for "
                                  f"{written + len(self.duplicates) + len(self.empty)}")
        if written == 0:
            raise CollectionError(f"{dataset.name}: no documents written (read {docs_in})")

    def _add(self, doc) -> None:
        """Check one document and queue it (a duplicate id or an empty text is counted instead)."""
        from legalir.legal import citations as cite

        dataset = self.dataset
        self.docs_in += 1
        _check_id(dataset, doc.id, f"document #{self.docs_in}:", doc)
        if not isinstance(doc.contents, str):
            raise CollectionError(f"{_where(dataset, doc)}: {dataset.name}: document {doc.id!r}: its text is "
                                  f"{trec.json_type(doc.contents)}; expected a string")
        if doc.id in self.seen:
            self.duplicates.append(doc.id)
            return
        self.seen.add(doc.id)
        if not doc.contents.strip():
            self.empty.append(doc.id)
            return
        clash = [k for k in doc.fields if k in RESERVED]
        if clash:
            raise CollectionError(f"{dataset.name}: document {doc.id!r} has metadata field(s) {clash} "
                                  f"that clash with the collection's own fields")
        key = None
        part_field = self.part_field
        if part_field:
            if doc.fields.get(part_field) in (None, ""):
                raise CollectionError(f"{dataset.name}: document {doc.id!r} has no {part_field!r} "
                                      f"to partition on")
            key = filters.partition_key(doc.fields[part_field])
        if doc.fields.get("parent_id"):
            self.parents.add(str(doc.fields["parent_id"]))
        self.pending.append((key, doc.id, doc.contents, doc.fields,
                             str(doc.fields.get(cite.FIELD) or "") if getattr(dataset, "citations_given", False)
                             else None))

    def _handle(self, key: str | None):
        k = key or ""
        if k not in self.handles:
            folder = self.tmp / "corpus" / key if key else self.tmp / "corpus"
            folder.mkdir(parents=True, exist_ok=True)
            self.handles[k] = open(folder / "docs.jsonl", "w", encoding="utf-8")
        return self.handles[k]

    def _flush(self) -> int:
        """Make the pending documents' records (in processes once past PARALLEL_AFTER) and write them in
        order; the number of records with citations."""
        from legalir.legal import citations as cite

        pending, bar = self.pending, self.bar
        if not pending:
            return 0
        self.made += len(pending)
        items = [(docid, contents, fields, given) for _, docid, contents, fields, given in pending]
        results = self._records(items)
        n = 0
        for (key, *_), (rec, filterable) in zip(pending, results):
            n += cite.FIELD in rec
            self.filter_seen.add(rec, filterable)
            self._handle(key).write(json.dumps(rec, ensure_ascii=False) + "\n")
            self.per_partition[key or ""] += 1
        pending.clear()
        bar.update(self.docs_in - bar.n)  # every document read so far is written or skipped
        self.done = bar.n
        return n

    def _records(self, items: list[tuple]) -> list[tuple[dict, list[str]]]:
        """:func:`_make_records` of the pending documents: here, or shared among RECORD_WORKERS processes once
        the collection is past PARALLEL_AFTER documents with citations on."""
        bar = self.bar
        if self.workers is None and self.citations and self.made > PARALLEL_AFTER and RECORD_WORKERS > 1 \
                and _can_fork():
            import concurrent.futures
            import multiprocessing

            # fork (spawn would run a user's unguarded script again in each worker), and only where no JVM
            # runs in this process (legalir.load in a notebook that searched makes its records here)
            self.workers = concurrent.futures.ProcessPoolExecutor(
                RECORD_WORKERS, mp_context=multiprocessing.get_context("fork"))
        if self.workers is None:
            results = []
            for i in range(0, len(items), 256):  # in steps, for the progress bar: the records are each their own
                results += _make_records(items[i:i + 256], self.settings)
                bar.update(len(results) - (bar.n - self.done))
            return results
        step = -(-len(items) // RECORD_WORKERS)
        return [r for part in self.workers.map(_make_records, [items[i:i + step] for i in range(0, len(items), step)],
                                               [self.settings] * RECORD_WORKERS) for r in part]

    def problems(self) -> list[str]:
        """The duplicate ids and empty texts, as problems (the manifest's, and errors under ``strict``)."""
        name, duplicates, empty = self.dataset.name, self.duplicates, self.empty
        problems: list[str] = []
        if duplicates:
            problems.append(f"{name}: {len(duplicates)} duplicate document id(s), first copy kept: "
                            + ", ".join(duplicates[:SHOW]) + (" ..." if len(duplicates) > SHOW else ""))
        if empty:
            problems.append(f"{name}: {len(empty)} document(s) with empty text, not indexed: "
                            + ", ".join(empty[:SHOW]) + (" ..." if len(empty) > SHOW else ""))
        return problems


def _write_topics(dataset: Dataset, tmp: Path) -> dict[str, int]:
    """Each topic set of the dataset, checked, -> ``topics/<set>.tsv`` and ``.jsonl``; ``{set: topics}``."""
    topic_counts = {}
    for set_name, topics in dataset.topic_sets().items():
        topics = list(topics)
        for n, t in enumerate(topics, 1):
            _check_id(dataset, t.qid, f"topic set {set_name!r}, topic #{n}:", topic=True)
            if not isinstance(t.text, str):
                raise CollectionError(f"{dataset.root}: {dataset.name}: topic set {set_name!r}, topic {t.qid!r}: its "
                                      f"text is {trec.json_type(t.text)}; expected a string")
        ids = Counter(t.qid for t in topics)
        dup = [q for q, c in ids.items() if c > 1]
        if dup:
            raise CollectionError(f"{dataset.name}: topic set {set_name!r} repeats topic id(s) {dup[:SHOW]}")
        blank = [t.qid for t in topics if not t.text.strip()]
        if blank:
            raise CollectionError(f"{dataset.name}: topic set {set_name!r} has empty query text for {blank[:SHOW]}")
        nul = [t.qid for t in topics if "\x00" in t.text]
        if nul:
            raise CollectionError(f"{dataset.root}: {dataset.name}: topic set {set_name!r}: the query text of "
                                  f"{nul[:SHOW]} holds a NUL character, which a topics file cannot hold")
        trec.write_topics(tmp / "topics" / f"{set_name}.tsv", topics)
        trec.write_topics_jsonl(tmp / "topics" / f"{set_name}.jsonl", topics)
        topic_counts[set_name] = len(topics)
    return topic_counts


def _write_qrels(dataset: Dataset, tmp: Path, corpus: _CorpusWriter,
                 problems: list[str]) -> tuple[dict, dict, dict]:
    """Each qrels set of the dataset, checked, -> ``qrels/<set>.txt``; its problems (repeated judgements,
    documents missing from the corpus) added to ``problems``. Returns (counts, missing documents, repeated
    judgements), each by set."""
    qrels_counts, missing_docs, repeated_judgements = {}, {}, {}
    for set_name, judgements in dataset.qrels_sets().items():
        qrels, repeated = _read_judgements(dataset, set_name, judgements)
        if repeated:
            repeated_judgements[set_name] = len(repeated)
            problems.append(f"{dataset.name}: qrels {set_name!r} repeat {len(repeated)} judgement(s) with the same "
                            f"grade, written once: " + ", ".join(repeated[:SHOW])
                            + (" ..." if len(repeated) > SHOW else ""))
        n = trec.write_qrels(tmp / "qrels" / f"{set_name}.txt", qrels)
        qrels_counts[set_name] = {"topics": len(qrels), "judgements": n,
                                  "relevant": sum(1 for d in qrels.values() for r in d.values() if r > 0)}
        missing = sorted({d for docs in qrels.values() for d in docs if d not in corpus.seen and d not in corpus.parents})
        if missing:
            missing_docs[set_name] = missing
            problems.append(f"{dataset.name}: qrels {set_name!r} name {len(missing)} document(s) missing from "
                            f"the corpus (kept in the qrels, they can never be retrieved): "
                            + ", ".join(missing[:SHOW]) + (" ..." if len(missing) > SHOW else ""))
    return qrels_counts, missing_docs, repeated_judgements


def _read_judgements(dataset: Dataset, set_name: str,
                     judgements: Iterable[Judgement]) -> tuple[dict[str, dict[str, int]], list[str]]:
    """One qrels set checked: ``({topic: {document: grade}}, the judgements repeated with the same grade)``; one
    repeated with another grade is an error naming both."""
    qrels: dict[str, dict[str, int]] = {}
    first: dict[tuple[str, str], Judgement] = {}
    repeated: list[str] = []
    # ids already checked: a qrels file names each topic and document many times (ACORD's: 128k judgements)
    topics_ok: set[str] = set()
    docs_ok: set[str] = set()
    for n, j in enumerate(judgements, 1):
        if not (type(j.qid) is str and j.qid in topics_ok):
            _check_id(dataset, j.qid, f"qrels {set_name!r}, judgement #{n}: topic", j, topic=True)
            topics_ok.add(j.qid)
        if not (type(j.docid) is str and j.docid in docs_ok):
            _check_id(dataset, j.docid, f"qrels {set_name!r}, judgement #{n}: document", j)
            docs_ok.add(j.docid)
        if isinstance(j.relevance, bool) or not isinstance(j.relevance, int):
            raise CollectionError(f"{_where(dataset, j)}: {dataset.name}: qrels {set_name!r}: grade of topic "
                                  f"{j.qid!r}, document {j.docid!r} is {trec.json_type(j.relevance)} "
                                  f"({j.relevance!r}); expected an integer")
        docs = qrels.setdefault(j.qid, {})
        if j.docid in docs:
            before = first[(j.qid, j.docid)]
            if docs[j.docid] != j.relevance:
                also = f" (first on {_where(dataset, before)})" if getattr(before, "source", None) else ""
                raise CollectionError(f"{_where(dataset, j)}: {dataset.name}: qrels {set_name!r} judge topic "
                                      f"{j.qid!r}, document {j.docid!r} twice with different grades "
                                      f"({docs[j.docid]}{also}, {j.relevance} here); keep one judgement")
            repeated.append(f"{j.qid}/{j.docid}")
        else:
            first[(j.qid, j.docid)] = j
        docs[j.docid] = int(j.relevance)
    return qrels, repeated


def _manifest(dataset: Dataset, corpus: _CorpusWriter, topic_counts: dict[str, int], qrels: tuple[dict, dict, dict],
              problems: list[str], *, citations: bool) -> dict:
    """The collection's ``manifest.json``: what was read and written, and its problems."""
    from legalir.legal import citations as cite

    qrels_counts, missing_docs, repeated_judgements = qrels
    part_field, filter_seen = corpus.part_field, corpus.filter_seen
    return {
        "dataset": dataset.name,
        "source": str(dataset.root),
        "options": {k: str(v) for k, v in dataset.options.items()},
        "partition_field": part_field,
        "documents": {
            "read": corpus.docs_in,
            "written": corpus.written,
            "duplicate_ids": len(corpus.duplicates),
            "empty_text": len(corpus.empty),
            "duplicate_ids_first": corpus.duplicates[:100],
            "empty_text_first": corpus.empty[:100],
        },
        "partitions": dict(sorted(corpus.per_partition.items())) if part_field else None,
        # the indexed metadata fields (legalir index passes them to Anserini's -fields)
        "fields": {**({cite.FIELD: {"documents": corpus.with_citations}} if citations else {}),
                   # each filterable field's type: declared by the dataset, else inferred from its values
                   **({filters.FIELD: filter_seen.types()} if filter_seen.types() else {})},
        "topics": topic_counts,
        "qrels": qrels_counts,
        "qrels_missing_documents": {k: v[:100] for k, v in missing_docs.items()},
        "qrels_repeated_judgements": repeated_judgements,
        "problems": problems,
        # a dataset's own account of what it read and skipped (legalir.datasets.statutes: sections, skips)
        **({"reader": dataset.convert_report()} if callable(getattr(dataset, "convert_report", None)) else {}),
    }


def release_of(manifest: Mapping) -> str | None:
    """The release a collection holds (``legalir convert statutes --option release=86``: ``"86"``), else None.

    An index built from it, and each version ``legalir index update --to`` makes, records it: the index
    keeps the newest version of every release for point-in-time search (``Searcher.search(as_of=)``)."""
    value = (manifest.get("options") or {}).get("release")
    return str(value) if value not in (None, "") else None


def release_date_of(manifest: Mapping) -> str | None:
    """The date of the release a collection holds (ISO text at the publisher's precision: ``"2022-11"``), as
    ``legalir convert statutes`` read it from the publisher's README or ``--option date``; else None (never
    invented: ``as_of=`` a date then says which release has none)."""
    value = (manifest.get("options") or {}).get("date")
    return str(value) if value not in (None, "") else None


def release_marker(manifest: Mapping) -> dict:
    """The version marker of an index of a collection that is a release: ``{"release": "86", "date": "2022-11"}``
    (the date where the collection records one), which keeps that version of the index for point-in-time search
    (:func:`legalir.base.atomic.newest_of_each_release`) and dates it (``as_of=`` a date); else ``{}``."""
    release = release_of(manifest)
    date = release_date_of(manifest)
    return {"release": release, **({"date": date} if date else {})} if release else {}


def read_manifest(collection_dir: str | os.PathLike) -> dict:
    path = Path(collection_dir) / "manifest.json"
    if not path.exists():
        raise CollectionError(f"{path}: not found; convert the dataset first (legalir convert)")

    manifest = read_json(path, "collection manifest")
    if not isinstance(manifest, dict) or "documents" not in manifest:
        raise CollectionError(f"{path}: not a legalir collection manifest; convert the dataset again (legalir convert)")
    return manifest


def corpus_dirs(collection_dir: str | os.PathLike) -> dict[str, Path]:
    """Corpus folders by partition key (``{"": corpus/}`` when not partitioned)."""
    manifest = read_manifest(collection_dir)
    corpus = Path(collection_dir) / "corpus"
    if manifest.get("partition_field"):
        return {k: corpus / k for k in manifest["partitions"]}
    return {"": corpus}


def iter_documents(collection_dir: str | os.PathLike, partition: str | None = None) -> Iterable[dict]:
    """Stream the collection's JSONL records (optionally one partition).

    Every record is checked where it enters (a collection written by hand, or edited): ``id`` must be
    an id a run can hold (:func:`id_problem`) and ``contents`` a string; otherwise a
    :class:`CollectionError` names the file and the line.
    """
    for _, rec in iter_document_lines(collection_dir, partition):
        yield rec


def iter_document_lines(collection_dir: str | os.PathLike, partition: str | None = None
                        ) -> Iterable[tuple[str, dict]]:
    """:func:`iter_documents`' records, each with its line as the collection's file holds it (``\\n`` and
    ``\\r`` stripped): ``(line, record)``, every record checked as :func:`iter_documents` checks it."""
    dirs = corpus_dirs(collection_dir)
    keys = [partition] if partition is not None else sorted(dirs)
    for key in keys:
        if key not in dirs:
            raise CollectionError(f"unknown partition {key!r}; known: {', '.join(sorted(dirs))}")

        path = dirs[key] / "docs.jsonl"
        for n, line, rec in trec.model.json_lines(path, stream=True):
            docid = rec.get("id")
            if not isinstance(docid, str) or trec.id_message(docid):
                problem = id_problem(docid) or "is not an id"
                raise CollectionError(f"{path}:{n}: document id {docid!r} {problem}; give each document a one-word "
                                      f"id (convert the dataset again with `legalir convert`)")
            if not isinstance(rec.get("contents"), str):
                raise CollectionError(f"{path}:{n}: field 'contents' is {trec.json_type(rec.get('contents'))}; "
                                      f"expected a string")
            yield line, rec


def topics_path(collection_dir: str | os.PathLike, topic_set: str) -> Path:
    p = Path(collection_dir) / "topics" / f"{topic_set}.jsonl"
    if not p.exists():
        sets = sorted(x.stem for x in (Path(collection_dir) / "topics").glob("*.jsonl"))
        raise CollectionError(f"{p}: no topic set {topic_set!r}; known: {', '.join(sets) or 'none'}")
    return p


def qrels_path(collection_dir: str | os.PathLike, topic_set: str) -> Path:
    p = Path(collection_dir) / "qrels" / f"{base_set(topic_set)}.txt"
    if not p.exists():
        raise CollectionError(f"{p}: no qrels for topic set {topic_set!r}")
    return p


def cited_keys(text: str, jurisdiction: str | None = None) -> list[str]:
    """The citation keys ``text`` names as a lawyer writes it (:func:`legalir.legal.citations.keys`), a bare ``§ N`` read in
    ``jurisdiction``'s general code: the one rule by which a citation finds the documents whose own citation it is
    (:meth:`Corpus.resolve`, :meth:`legalir.indexing.changes.Documents.resolve`)."""
    from legalir.legal import citations as cite

    return cite.keys(str(text), jurisdiction_hint=jurisdiction, context=cite.general_code(jurisdiction))


class Corpus(Mapping):
    """A converted collection's documents as a read-only mapping ``docid -> record``.

    The record is the JSON object the collection holds: ``{"id", "contents", ...fields}``
    (Pyserini's JsonCollection shape). Nothing is held in memory up front, so a 1.8M-statute
    corpus opens at once: iterating streams the files; a lookup builds, on first use, a table
    of each partition file's byte offsets (one pass), then reads one line.

    Parameters
    ----------
    collection_dir : str or PathLike
        A folder written by ``legalir convert`` (or :func:`legalir.load`).

    Raises
    ------
    CollectionError
        When the folder is not a converted collection.

    Examples
    --------
    >>> corpus = Corpus("collections/acord")            # doctest: +SKIP
    >>> len(corpus), corpus["some-docid"]["contents"]   # doctest: +SKIP
    """

    def __init__(self, collection_dir: str | os.PathLike):
        import threading

        self.root = Path(collection_dir).resolve()
        self.manifest = read_manifest(self.root)
        self.dirs = corpus_dirs(self.root)
        self.partition_field: str | None = self.manifest.get("partition_field")
        self._offsets: dict[str, dict[str, int]] = {}
        self._identity: dict[str, tuple] = {}  # partition -> the file its offsets were read from
        self._paths: dict[str, str] = {}  # partition -> its file's path
        self._handles: dict[str, _Handle] = {}  # partition -> its file, open (lookups read it with pread)
        self._epoch = 0  # times the collection was found written anew
        self._lock = threading.Lock()
        self._cited: tuple[dict[str, list[str]], str | None] | None = None

    @property
    def partitions(self) -> list[str]:
        """Partition keys (``[]`` when the collection is not partitioned)."""
        return sorted(k for k in self.dirs if k)

    def _file(self, key: str) -> Path:
        return self.dirs[key] / "docs.jsonl"

    @staticmethod
    def _identity_of(st: os.stat_result) -> tuple:
        return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns

    def _offsets_of(self, key: str, f: _Handle | None = None) -> dict[str, int]:
        """The id -> span table of partition ``key``'s file (each record's ``offset << 32 | length``); with ``f``
        (that file, open), the table of that very file: read again when the file was replaced since (the
        collection written anew)."""
        table = self._offsets.get(key)
        now = f.identity if f is not None else None
        if table is not None and (now is None or self._identity.get(key) == now):
            return table
        with self._lock:
            if key not in self._offsets or (now is not None and self._identity.get(key) != now):
                table = {}
                offset = 0
                with open(self._file(key), "rb") if f is None else open(os.dup(f.fd), "rb") as g:
                    g.seek(0)
                    identity = self._identity_of(os.fstat(g.fileno()))
                    for line in g:
                        if line.strip():
                            table.setdefault(str(json.loads(line)["id"]), offset << 32 | len(line))
                        offset += len(line)
                self._offsets[key], self._identity[key] = table, identity
            return self._offsets[key]

    def _reread(self) -> None:
        """The collection was written anew (``legalir convert`` again): its manifest and partitions again."""
        with self._lock:
            self.manifest = read_manifest(self.root)
            self.dirs = corpus_dirs(self.root)
            self.partition_field = self.manifest.get("partition_field")
            self._offsets, self._identity = {}, {}
            self._paths, self._handles = {}, {}
            self._epoch += 1

    def record(self, docid: str, partition: str | None = None) -> dict | None:
        """The record of ``docid``, or ``None``; ``partition`` narrows the lookup to one partition.

        A record from a partitioned collection carries its partition key as ``_partition``. A
        collection written anew while it is open (``legalir convert`` again) is read anew.
        """
        epoch = self._epoch
        rec = self._lookup(docid, partition)
        if rec is None and self._epoch != epoch:  # written anew meanwhile: look in its partitions now
            rec = self._lookup(docid, partition)
        return rec

    def records(self, docids: Sequence[str], partition: str | None = None) -> list[dict | None]:
        """:meth:`record` of each of ``docids``, in order (a search's hits): where they are all looked up in one
        file (``partition`` names one, or the collection has one), that file is checked once for them all
        (one ``stat``), then each record is one ``pread``; a document not found there is looked up as
        :meth:`record` looks it up."""
        keys = [partition] if partition is not None and partition in self.dirs else sorted(self.dirs)
        handle = self._handle(keys[0]) if len(keys) == 1 else None
        if handle is None:
            return [self.record(d, partition) for d in docids]
        key = keys[0]
        table = self._offsets_of(key, handle)
        out: list[dict | None] = []
        for docid in docids:
            span = table.get(docid)
            if span is None:  # not in this file as it was opened: the general path (written anew meanwhile?)
                out.append(self.record(docid, partition))
                continue
            out.append(_read_at(handle, span, key))
        return out

    def _lookup(self, docid: str, partition: str | None) -> dict | None:
        keys = [partition] if partition is not None and partition in self.dirs else sorted(self.dirs)
        for key in keys:
            handle = self._handle(key)
            if handle is None:  # the collection was written anew, without this partition
                continue
            span = self._offsets_of(key, handle).get(docid)  # the offsets of this very file
            if span is None:
                continue
            return _read_at(handle, span, key)
        return None

    def _handle(self, key: str) -> _Handle | None:
        """An open descriptor of partition ``key``'s file as it is now (one ``stat`` of the path: a file
        replaced or changed since is opened anew, the collection's manifest and partitions read again), or None
        when the collection no longer has that partition."""
        path = self._paths.get(key)
        if path is None:
            path = self._paths[key] = os.fspath(self._file(key))
        try:
            now = self._identity_of(os.stat(path))
        except FileNotFoundError:  # the collection was written anew, with other partitions
            self._reread()
            if key not in self.dirs:
                return None
            path = self._paths[key] = os.fspath(self._file(key))
            now = self._identity_of(os.stat(path))
        handle = self._handles.get(key)
        if handle is not None and handle.identity == now:
            return handle
        known = self._identity.get(key)
        if known is not None and known != now:
            self._reread()  # written anew: its manifest (counts, partitions) too
        handle = _Handle(path)
        self._handles[key] = handle  # one a lookup still reads is closed when it lets it go
        return handle

    def resolve(self, text: str, *, jurisdiction: str | None = None) -> list[str]:
        """The documents a citation written as a lawyer writes it designates: ``O.C.G.A. § 8-2-1``,
        ``GA Code 8-2-1``, ``§ 8-2-1`` (read in the collection's own jurisdiction when all its documents
        share one, else in ``jurisdiction``), or an id as it is.

        The one rule: ``text``'s citation keys (:meth:`citation_keys`) against each document's own
        citation (its ``is_<key>`` tokens, written by ``legalir convert``); a table built on first use
        (one pass over the collection). Returns the matching ids in order (``[]`` when none).
        """
        if isinstance(text, str) and text in self:
            return [text]
        table = self.citation_table()[0]
        found: list[str] = []
        for key in self.citation_keys(text, jurisdiction=jurisdiction):
            found += [d for d in table.get(key, []) if d not in found]
        return found

    def citation_table(self) -> tuple[dict[str, list[str]], str | None]:
        """``({citation key: ids of the documents whose own citation it is}, the jurisdiction every document
        shares or None)``: one pass over the collection, on first use."""
        from legalir.legal import citations as cite

        if self._cited is None:
            with self._lock:
                if self._cited is None:
                    table: dict[str, list[str]] = {}
                    jur = self.partition_field or "state"  # the field a collection's jurisdiction is in
                    seen: set[str] = set()
                    for rec in iter_documents(self.root):
                        for key in cite.parse_field(rec.get(cite.FIELD))["is"]:
                            table.setdefault(key, []).append(str(rec["id"]))
                        if jur and rec.get(jur) not in (None, ""):
                            seen.add(str(rec[jur]))
                    self._cited = (table, next(iter(seen)) if len(seen) == 1 else None)
        return self._cited

    def citation_keys(self, text: str, *, jurisdiction: str | None = None) -> list[str]:
        """The citation keys ``text`` names (:func:`cited_keys`), a bare ``§ N`` read in the jurisdiction all the
        collection's documents share (:meth:`citation_table`), else in ``jurisdiction``."""
        return cited_keys(text, self.citation_table()[1] or jurisdiction)

    def warm(self) -> None:
        """Build every partition's offset table now (what the first lookup would wait for)."""
        for key in self.dirs:
            self._offsets_of(key)

    # ---- the Mapping protocol
    def __getitem__(self, docid: str) -> dict:
        rec = self.record(docid)
        if rec is None:
            raise KeyError(docid)
        return rec

    def __contains__(self, docid: object) -> bool:
        return isinstance(docid, str) and self.record(docid) is not None

    def __iter__(self) -> Iterator[str]:
        for rec in iter_documents(self.root):
            yield str(rec["id"])

    def __len__(self) -> int:
        return int(self.manifest["documents"]["written"])

    def items(self) -> ItemsView:
        """``(docid, record)`` pairs, streamed from the files (no lookups)."""
        return _CorpusItems(self)

    def values(self) -> ValuesView:
        """Records, streamed from the files (no lookups)."""
        return _CorpusValues(self)

    def __repr__(self) -> str:
        return f"Corpus({str(self.root)!r}, {len(self)} documents)"


#: the length part of a span (``offset << 32 | length``) of :meth:`Corpus._offsets_of`
_LENGTH = (1 << 32) - 1


def _read_at(handle: _Handle, span: int, key: str) -> dict:
    """The record at ``span`` (offset and length, :data:`_LENGTH`) of partition ``key``'s open file: one pread at
    its offset, of its length (no open, seek or line reading per lookup), ``_partition`` set where ``key`` is one."""
    rec = _parse(os.pread(handle.fd, span & _LENGTH, span >> 32))
    if key:
        rec.setdefault("_partition", key)
    return rec


def _parse(data: bytes) -> Any:
    """``json.loads(data)`` of one record's line: a line that opens with ``{`` decoded as ``json.loads`` decodes
    it (UTF-8, ``surrogatepass``) without its encoding sniffed again; any other as ``json.loads`` reads it."""
    return json.loads(data.decode("utf-8", "surrogatepass") if data[:1] == b"{" else data)


class _Handle:
    """A file open for ``os.pread`` (which any thread may call at once), with the identity it had when opened
    (device, inode, size, modification time); closed when the last reader lets it go."""

    __slots__ = ("fd", "identity")

    def __init__(self, path: str):
        self.fd = -1
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        self.fd = fd
        self.identity = Corpus._identity_of(os.fstat(fd))

    def __del__(self, _close=os.close):  # bound at definition: freed in the interpreter's teardown, os may be gone
        if self.fd >= 0:
            _close(self.fd)
            self.fd = -1


class _CorpusItems(ItemsView):
    def __iter__(self):
        for rec in iter_documents(self._mapping.root):
            yield str(rec["id"]), rec


class _CorpusValues(ValuesView):
    def __iter__(self):
        yield from iter_documents(self._mapping.root)
