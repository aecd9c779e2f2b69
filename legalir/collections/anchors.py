"""Anchor text: each document expanded, at index time, with the words around the links that point to it.

Web search's classic lever, applied to a code's own cross-references. A converted statutes collection
(``legalir convert statutes``) holds, as its topic sets, every paragraph of the code that links to another
section, with the linked sections as its qrels. This module writes a copy of the collection in which each
section's ``contents`` is followed by the text around the links that point to it from *other* paragraphs
of the same code: a definition section gains "the term ... as defined in", a licensing section gains
"a license issued under". Nothing is trained; only the code's own published text is read.

The leak rule
-------------
The paragraphs of the benchmark's held-out topic sets are questions, and a question must never be answered
by its own text. Anchors are read only from the topic sets named in ``sources`` (``train`` by default); every
other topic set of the collection (``valid``, ``test``, and their ``.masked`` variants) is **excluded**, and a
source paragraph is dropped, not read, when

* its id is the id of an excluded topic,
* its words (:func:`words`) are those of an excluded topic, as written or masked, or
* it shares any run of ``shingle`` words with an excluded topic, as written or masked (a paragraph repeated
  in another section's notes with a different label, "Cross References. X" beside "X", is caught here),
* or it has fewer than ``shingle`` words (too short for the check above to see it).

Anchors are runs of a kept paragraph's :func:`words`, so no run of ``shingle`` words of any excluded topic
appears in any document's anchors: :func:`check_no_leak` proves it on the written text, and
:func:`expand_collection` runs it before anything is written.

The words of an anchor are those within ``window`` words of the target's section number in the paragraph
(the whole paragraph when the number is not printed there: a section inside a linked range), lowercased,
every token holding a digit dropped (section numbers, so a citation in a question meets no number in the
anchor, and subsection marks), a paragraph's links to its own section ignored. Each document gets its
distinct anchors, at most ``max_per_document`` (in topic id order).
"""
from __future__ import annotations

import bisect
import os
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from legalir import collections, trec
from legalir.base import log
from legalir.base.words import words
from legalir.base.words import words_at as _words_at
from legalir.collections import CollectionError
from legalir.datasets.dataset import Document, Judgement

_log = log.get(__name__)

__all__ = ["AnchorError", "Anchors", "words", "read_anchors", "check_no_leak", "expand_collection",
           "DEFAULT_SOURCES", "DEFAULT_WINDOW", "DEFAULT_SHINGLE", "DEFAULT_MAX_PER_DOCUMENT", "SEPARATOR"]

#: the topic sets anchors are read from unless told otherwise (every other set is held out)
DEFAULT_SOURCES = ("train",)
#: words kept on each side of the target's section number (chosen on the training codes' valid.masked topics,
#: Georgia r86 and North Carolina r81: 10 over 25 and the whole paragraph; docs/statutes.md)
DEFAULT_WINDOW = 10
#: the run of words a kept paragraph may never share with a held-out topic
DEFAULT_SHINGLE = 8
#: the most anchors one document gets
DEFAULT_MAX_PER_DOCUMENT = 100
#: between a document's own text and its anchors, and between anchors
SEPARATOR = "\n\n"


class AnchorError(CollectionError):
    pass


def _shingles(ws: Sequence[str], n: int) -> Iterator[tuple[str, ...]]:
    for i in range(len(ws) - n + 1):
        yield tuple(ws[i:i + n])


def _number_at(text: str, number: str) -> list[int]:
    """Offsets where ``number`` stands in ``text`` as a whole section number (not inside ``1-2-1011``)."""
    out, i = [], text.find(number)
    while i >= 0:
        before = text[i - 1] if i else " "
        j = i + len(number)
        after = text[j] if j < len(text) else " "
        after2 = text[j + 1] if j + 1 < len(text) else " "
        if not (before.isalnum() or before == "-") and not after.isalnum() and \
                not (after in "-." and after2.isdigit()):
            out.append(i)
        i = text.find(number, i + 1)
    return out


@dataclass
class Anchors:
    """The anchors read from a collection: ``texts[docid]`` (each an anchor, in order) and where each came from
    (``sources[docid][n]``: the topic id of the paragraph ``texts[docid][n]`` was cut from), the topic sets
    read and held out, and the counts of paragraphs kept and dropped by each rule."""

    texts: dict[str, list[str]] = field(default_factory=dict)
    sources: dict[str, list[str]] = field(default_factory=dict)
    read_from: tuple[str, ...] = ()
    held_out: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)


def _topic_sets(collection_dir: Path) -> list[str]:
    return sorted(p.name[:-len(".jsonl")] for p in (collection_dir / "topics").glob("*.jsonl"))


def read_anchors(collection_dir: str | os.PathLike, *, sources: Iterable[str] = DEFAULT_SOURCES,
                 window: int | None = DEFAULT_WINDOW, shingle: int = DEFAULT_SHINGLE,
                 max_per_document: int = DEFAULT_MAX_PER_DOCUMENT) -> Anchors:
    """The anchors of a converted cross-reference collection (topics and qrels as `legalir convert statutes`
    writes them), read under the leak rule of this module.

    Parameters
    ----------
    collection_dir
        The collection: ``topics/<set>.jsonl`` (the paragraph as written, ``source``: its own section),
        ``qrels/<set>.txt`` (the sections it links to) and the corpus (each section's ``section`` number).
    sources
        The base topic sets anchors are read from; every other topic set of the collection is held out.
    window
        Words kept on each side of the target's section number; None keeps the whole paragraph.
    shingle
        The run of words a kept paragraph may not share with a held-out topic (and its least length).
    max_per_document
        The most distinct anchors one document gets.

    Returns
    -------
    Anchors

    Raises
    ------
    AnchorError
        A source set without topics or qrels, no set held out, or a setting out of range.
    """
    root = Path(collection_dir)
    sources = tuple(dict.fromkeys(sources))
    if shingle < 1 or (window is not None and window < 1) or max_per_document < 1:
        raise AnchorError(f"anchors: window {window}, shingle {shingle}, max_per_document {max_per_document}: "
                          f"each must be at least 1")
    sets = _topic_sets(root)
    for s in sources:
        if s not in sets:
            raise AnchorError(f"{root}: anchors from topic set {s!r}, but the collection has no such topic set "
                              f"(topic sets: {', '.join(sets) or 'none'}); name a set with topics and qrels")
        collections.qrels_path(root, s)  # a located error when the set has no qrels
    held = tuple(s for s in sets if collections.base_set(s) not in sources)
    if not held:
        raise AnchorError(f"{root}: anchors from {', '.join(sources)} leave no topic set held out; anchors are "
                          f"for searching held-out topics, name fewer sources")
    held_ids: set[str] = set()
    held_words: set[tuple[str, ...]] = set()
    held_shingles: set[tuple[str, ...]] = set()
    for s in held:
        for t in trec.read_topics(collections.topics_path(root, s)).values():
            held_ids.add(t.qid)
            ws = words(t.text)
            held_words.add(tuple(ws))
            held_shingles.update(_shingles(ws, shingle))
    numbers = {}
    for doc in collections.iter_documents(root):
        numbers[doc["id"]] = str(doc.get("section") or "")
    counts = dict.fromkeys(("paragraphs", "kept", "dropped_held_out_id", "dropped_same_text",
                            "dropped_shared_words", "dropped_short", "links", "links_own_section",
                            "links_number_found", "links_whole_paragraph", "anchors_repeated",
                            "anchors_over_limit"), 0)
    texts: dict[str, list[str]] = defaultdict(list)
    froms: dict[str, list[str]] = defaultdict(list)
    seen: dict[str, set[str]] = defaultdict(set)
    for s in sources:
        qrels = trec.read_qrels(collections.qrels_path(root, s))
        topics = trec.read_topics(collections.topics_path(root, s))
        for qid in sorted(topics):
            t = topics[qid]
            counts["paragraphs"] += 1
            at = _words_at(t.text)
            ws = [w for w, _ in at]
            if qid in held_ids:
                counts["dropped_held_out_id"] += 1
                continue
            if tuple(ws) in held_words:
                counts["dropped_same_text"] += 1
                continue
            if len(ws) < shingle:
                counts["dropped_short"] += 1
                continue
            if any(sh in held_shingles for sh in _shingles(ws, shingle)):
                counts["dropped_shared_words"] += 1
                continue
            counts["kept"] += 1
            own = t.fields.get("source")
            offsets = [o for _, o in at]
            for docid in sorted(qrels.get(qid, {})):
                if qrels[qid][docid] <= 0:
                    continue
                counts["links"] += 1
                if docid == own:
                    counts["links_own_section"] += 1
                    continue
                number = numbers.get(docid, "")
                found = _number_at(t.text, number) if number else []
                if window is None or not found:
                    spans = [(0, len(ws))]
                    counts["links_whole_paragraph" if not found else "links_number_found"] += 1
                else:
                    counts["links_number_found"] += 1
                    spans = []
                    for p in found:
                        c = bisect.bisect_left(offsets, p)
                        spans.append((max(0, c - window), min(len(ws), c + window)))
                anchor = " ".join(" ".join(ws[a:b]) for a, b in _merge(spans))
                if not anchor:
                    continue
                if anchor in seen[docid]:
                    counts["anchors_repeated"] += 1
                    continue
                if len(texts[docid]) >= max_per_document:
                    counts["anchors_over_limit"] += 1
                    continue
                seen[docid].add(anchor)
                texts[docid].append(anchor)
                froms[docid].append(qid)
    counts["documents_with_anchors"] = len(texts)
    counts["anchors"] = sum(len(v) for v in texts.values())
    return Anchors(dict(texts), dict(froms), sources, held, counts)


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def check_no_leak(collection_dir: str | os.PathLike, anchors: Mapping[str, Sequence[str]],
                  held_out: Iterable[str], shingle: int = DEFAULT_SHINGLE) -> None:
    """Raise :class:`AnchorError` when any anchor holds a run of ``shingle`` words (:func:`words`) of a topic
    of a ``held_out`` set of the collection, as written or masked, naming the topic and the document."""
    root = Path(collection_dir)
    where: dict[tuple[str, ...], str] = {}
    for s in held_out:
        for t in trec.read_topics(collections.topics_path(root, s)).values():
            for sh in _shingles(words(t.text), shingle):
                where.setdefault(sh, f"{s}/{t.qid}")
    for docid, texts in anchors.items():
        for text in texts:
            for sh in _shingles(text.split(), shingle):
                if sh in where:
                    raise AnchorError(f"{root}: the anchors of {docid!r} hold {' '.join(sh)!r}, words of held-out "
                                      f"topic {where[sh]}: a leak; nothing written")


class _Anchored:
    """A collection with its documents' anchors appended, as a Dataset for :func:`legalir.collections.write`
    (citations and filters as the source has them; topics and qrels copied)."""

    name = "anchors"
    citations_given = True

    def __init__(self, src: Path, anchors: Anchors, options: Mapping[str, str]):
        self.root = src
        manifest = collections.read_manifest(src)
        self.partition_field = manifest.get("partition_field")
        self.filter_types = dict((manifest.get("fields") or {}).get("filters") or {}) or None
        self.filter_fields = list(self.filter_types or ())  # the source's filterable fields, and only those
        self.options = {**manifest.get("options", {}), **options}
        self.anchors = anchors

    def convert_report(self) -> dict:
        return {"anchors": dict(self.anchors.counts)}

    def documents(self):
        for rec in collections.iter_documents(self.root):
            extra = self.anchors.texts.get(rec["id"])
            contents = rec["contents"] + SEPARATOR + SEPARATOR.join(extra) if extra else rec["contents"]
            yield Document(rec["id"], contents, {k: v for k, v in rec.items() if k not in ("id", "contents")})

    def topic_sets(self):
        return {s: list(trec.read_topics(collections.topics_path(self.root, s)).values())
                for s in _topic_sets(self.root)}

    def qrels_sets(self):
        out = {}
        for s in sorted({collections.base_set(s) for s in _topic_sets(self.root)}):
            path = collections.qrels_path(self.root, s)
            if path.exists():
                out[s] = [Judgement(q, d, r) for q, docs in trec.read_qrels(path).items() for d, r in docs.items()]
        return out


def expand_collection(src: str | os.PathLike, dst: str | os.PathLike, *,
                      sources: Iterable[str] = DEFAULT_SOURCES, window: int | None = DEFAULT_WINDOW,
                      shingle: int = DEFAULT_SHINGLE, max_per_document: int = DEFAULT_MAX_PER_DOCUMENT,
                      overwrite: bool = False, quiet: bool = False) -> dict:
    """Write ``dst``: the collection ``src`` with each document's anchors (:func:`read_anchors`) after its text,
    its topics and qrels copied, ready for `legalir index`. The anchors are checked for leaks
    (:func:`check_no_leak`) before anything is written; the manifest's ``reader`` holds the counts
    (paragraphs read, kept, dropped by each rule; anchors written).

    Returns
    -------
    dict
        The written collection's manifest (``options``: the settings, the sets read and held out;
        ``reader``: the counts).
    """
    src, dst = Path(src), Path(dst)
    if not collections.is_collection(src) and not (src / "manifest.json").exists():
        raise AnchorError(f"{src}: not a converted collection (no manifest.json); `legalir convert` it first")
    anchors = read_anchors(src, sources=sources, window=window, shingle=shingle, max_per_document=max_per_document)
    check_no_leak(src, anchors.texts, anchors.held_out, shingle)
    options = {"anchors_from": ",".join(anchors.read_from), "anchors_held_out": ",".join(anchors.held_out),
               "anchors_window": "whole" if window is None else str(window), "anchors_shingle": str(shingle),
               "anchors_max_per_document": str(max_per_document), "anchors_of": str(src)}
    manifest = collections.write(_Anchored(src, anchors, options), dst, quiet=quiet, overwrite=overwrite)
    return manifest
