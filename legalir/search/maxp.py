"""MaxP: score a document by its best passage.

A passage run (``{qid: {passage id: score}}``) becomes a document run in which
each document keeps the score of its highest-scoring passage (Dai & Callan
2019, "MaxP"). The parent document of a passage is found

1. in a mapping ``passage id -> parent id`` when one is given (a collection's
   ``parent_id`` field, see :func:`parents_from_collection`); a passage whose
   parent is empty *is* a document (CRUMB's tasks whose documents needed no
   chunking);
2. otherwise from the id: the part before the **last** ``:`` (``NCT01:3`` ->
   ``NCT01``, ``Star Wars: A New Hope:2`` -> ``Star Wars: A New Hope``), or
   the id itself when it has no ``:``.

CRUMB's own evaluator takes the part before the *first* ``:``, which cuts
document ids that contain ``:``; with the ``parent_id`` mapping the
difference cannot arise.

The document run is usually shorter than the passage run (several passages,
one document): retrieve passages deep (CRUMB: 2,000) to keep ~1,000 documents.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from legalir import collections, trec
from legalir.base import atomic, log
from legalir.search.runner import SearchError, check_topics
from legalir.trec import Run, Topic, runformats

__all__ = ["parent_of", "maxp", "maxp_file", "parents_from_collection", "MaxP", "MaxPError"]


class MaxPError(SearchError):
    pass


_log = log.get(__name__)


def parent_of(passage_id: str, parents: Mapping[str, str] | None = None) -> str:
    """The document a passage belongs to (see module doc)."""
    if parents is not None:
        parent = parents.get(passage_id)
        if parent is not None:
            return parent or passage_id
    head, sep, _ = passage_id.rpartition(":")
    return head if sep and head else passage_id


def maxp(run: Mapping[str, Mapping[str, float]], parents: Mapping[str, str] | None = None, *,
         strict: bool = False) -> Run:
    """Each document's best passage score, per topic.

    With ``strict`` and a ``parents`` mapping, a passage id missing from the
    mapping is an error (the run was made on another collection) instead of
    falling back to the id rule.
    """
    out: Run = {}
    unknown: set[str] = set()
    for qid, passages in run.items():
        docs: dict[str, float] = {}
        for pid, score in passages.items():
            if parents is not None and pid not in parents:
                unknown.add(pid)
            doc = parent_of(pid, parents)
            s = float(score)
            if doc not in docs or s > docs[doc]:
                docs[doc] = s
        out[qid] = docs
    if unknown and parents is not None:
        msg = (f"{len(unknown)} passage id(s) in the run are not in the collection: "
               + ", ".join(sorted(unknown)[:10]) + (" ..." if len(unknown) > 10 else ""))
        if strict:
            raise MaxPError(msg)
        _log.warning(f"{msg}; their parent was taken from the id (text before the last ':')")
    return out


def parents_from_collection(collection_dir: str | os.PathLike, field: str = "parent_id",
                            only: set[str] | None = None) -> dict[str, str]:
    """``{passage id: parent id}`` from a collection's documents (``""`` when a document has no parent).

    ``only`` keeps just those passage ids (e.g. the ones a run retrieved), to save memory on big corpora.
    """
    parents: dict[str, str] = {}
    seen = 0
    for rec in collections.iter_documents(collection_dir):
        seen += 1
        pid = str(rec["id"])
        if only is not None and pid not in only:
            continue
        value = rec.get(field)
        parents[pid] = "" if value in (None, "") else str(value)
    if not seen:
        raise MaxPError(f"{collection_dir}: no documents")
    return parents


def topics_using_maxp(topics: Mapping[str, Topic], field: str = "use_max_p") -> set[str]:
    """Topics whose metadata asks for MaxP (CRUMB's per-query ``use_max_p`` flag)."""
    out = set()
    for qid, t in topics.items():
        value = t.fields.get(field)
        if isinstance(value, str):
            value = value.strip().lower() in ("1", "true", "yes")
        if value:
            out.add(qid)
    return out


class MaxP:
    """A retriever over passages that returns documents: ``search`` = inner search, then :func:`maxp`.

    ``k`` passages are retrieved per topic; the document run holds at most
    ``k`` documents (usually fewer).
    """

    def __init__(self, passages, parents: Mapping[str, str] | None = None):
        self.passages = passages
        self.parents = parents

    def search(self, topics: Mapping[str, Topic], k: int) -> Run:
        check_topics(topics)
        return maxp(self.passages.search(topics, k), self.parents)


def maxp_file(run_path: str | os.PathLike, out: str | os.PathLike, *, collection: str | os.PathLike | None = None,
              auto: bool = False, depth: int | None = None, tag: str = "maxp",
              force: bool = False) -> tuple[int, int, int, int]:
    """MaxP on a passage run file (TREC or CRUMB JSONL) into ``out`` (``.jsonl``: CRUMB JSONL, else TREC).

    ``auto``: only topics whose ``use_max_p`` is true in ``collection``'s topics
    (CRUMB's flag) become document rankings; the others are copied unchanged.
    Returns (topics MaxP'ed, topics, passages read, entries written). ``run_path`` may be ``-``
    (standard input); ``out`` may not be it, nor a file legalir did not write unless ``force``
    (:func:`legalir.base.atomic.check_file`).
    """

    atomic.check_file(out, [run_path], force=force)
    if auto and not collection:
        raise MaxPError("--auto needs --collection (its topics carry use_max_p)")
    if depth is not None and depth < 1:
        raise MaxPError(f"-k/--depth must be at least 1 (got {depth})")
    if not str(out).endswith(".jsonl"):
        trec.check_tag(tag)
    passages = runformats.read_any_run(run_path)
    chosen = set(passages)
    if auto:
        assert collection is not None  # refused above without it
        topics = {}
        for path in sorted((Path(collection) / "topics").glob("*.jsonl")):
            topics.update(trec.read_topics(path))
        chosen = topics_using_maxp(topics) & set(passages)
    parents = None
    if collection and chosen:
        needed = {d for q in chosen for d in passages[q]}
        parents = parents_from_collection(collection, only=needed)
    docs = maxp({q: passages[q] for q in chosen}, parents)
    result = {q: (docs[q] if q in chosen else passages[q]) for q in passages}
    if str(out).endswith(".jsonl"):
        runformats.write_crumb_run(out, result, depth=depth, inputs=[run_path], force=force)
    else:
        trec.write_run(out, result, tag=tag, depth=depth, inputs=[run_path], force=force)
    return len(chosen), len(passages), sum(map(len, passages.values())), sum(map(len, result.values()))
