"""File formats shared by every layer: topics, qrels and runs.

The data model is BEIR's, as three plain mappings:

* topics: ``{qid: Topic}`` (a ``Topic`` has ``text`` and metadata ``fields``)
* qrels:  ``{qid: {docid: relevance}}`` (int)
* run:    ``{qid: {docid: score}}`` (float); the ranking is implied by the
  scores, ordered as trec_eval orders them: score descending, then docid in
  *descending* lexical order for ties.

Readers validate every line and raise :class:`FormatError`, whose message
names the file, the line number and what is wrong. Nothing is dropped
silently.
"""
from __future__ import annotations
from legalir.errors import LegalirError

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


class FormatError(LegalirError, ValueError):
    """A malformed input file. ``str(err)`` is ``path:line: what is wrong``."""

    def __init__(self, path: str | os.PathLike, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Topic:
    qid: str
    text: str
    fields: Mapping[str, Any] = field(default_factory=dict)


def clean_text(text: str) -> str:
    """One line of text: tabs, newlines and runs of spaces become one space."""
    return " ".join(str(text).split())


def _lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Numbered, decoded lines of a text file; clear errors for missing/binary/empty files."""
    p = Path(path)
    if not p.exists():
        raise FormatError(p, None, "file not found")
    if p.is_dir():
        raise FormatError(p, None, "is a directory, expected a file")
    with open(p, "rb") as f:
        head = f.read(8192)
    if not head.strip():
        raise FormatError(p, None, "file is empty")
    if b"\x00" in head:
        raise FormatError(p, None, "binary file (NUL bytes), expected text")
    with open(p, "rb") as f:
        for n, raw in enumerate(f, 1):
            if b"\x00" in raw:
                raise FormatError(p, n, "binary data (NUL bytes) in a text file")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise FormatError(p, n, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
            yield n, line.rstrip("\r\n")


def iter_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """Numbered JSON objects of a JSONL file (blank lines skipped); FormatError names file and line."""
    p = Path(path)
    for n, line in _lines(p):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise FormatError(p, n, f"invalid JSON: {e.msg}") from None
        if not isinstance(rec, dict):
            raise FormatError(p, n, f"expected a JSON object, found {type(rec).__name__}")
        yield n, rec


# ---------------------------------------------------------------- topics


def write_topics(path: str | os.PathLike, topics: Iterable[Topic]) -> int:
    """Write ``qid<TAB>text`` (Pyserini's TSV topics), atomically; returns the count."""
    from legalir import atomic

    n = 0
    with atomic.open_file(path) as f:
        for t in topics:
            f.write(f"{t.qid}\t{clean_text(t.text)}\n")
            n += 1
    return n


def write_topics_jsonl(path: str | os.PathLike, topics: Iterable[Topic]) -> int:
    """Write topics with their metadata, one JSON object a line (qid, text, fields...), atomically."""
    from legalir import atomic

    n = 0
    with atomic.open_file(path) as f:
        for t in topics:
            rec = {"qid": t.qid, "text": t.text, **dict(t.fields)}
            f.write(json.dumps(rec, ensure_ascii=False, sort_keys=False) + "\n")
            n += 1
    return n


def read_topics(path: str | os.PathLike) -> dict[str, Topic]:
    """Read topics from ``.tsv`` (qid<TAB>text) or ``.jsonl`` (qid, text, metadata)."""
    p = Path(path)
    topics: dict[str, Topic] = {}
    jsonl = p.suffix == ".jsonl"
    rows = iter_jsonl(p) if jsonl else ((n, line) for n, line in _lines(p) if line.strip())
    for n, row in rows:
        if jsonl:
            rec = row
            if "qid" not in rec or "text" not in rec:
                raise FormatError(p, n, "a topic object needs 'qid' and 'text'")
            qid, text = str(rec.pop("qid")), str(rec.pop("text"))
            fields = rec
        else:
            line = row
            if "\t" not in line:
                raise FormatError(p, n, "expected 'qid<TAB>text'")
            qid, text = line.split("\t", 1)
            fields = {}
        qid = qid.strip()
        if not qid:
            raise FormatError(p, n, "empty topic id")
        if not text.strip():
            raise FormatError(p, n, f"empty query text for topic {qid!r}")
        if qid in topics:
            raise FormatError(p, n, f"duplicate topic id {qid!r}")
        topics[qid] = Topic(qid, text, fields)
    if not topics:
        raise FormatError(p, None, "no topics in file")
    return topics


# ---------------------------------------------------------------- qrels


def write_qrels(path: str | os.PathLike, qrels: Mapping[str, Mapping[str, int]]) -> int:
    """Write TREC qrels ``qid 0 docid rel`` (topics and docids in sorted order), atomically."""
    from legalir import atomic

    n = 0
    with atomic.open_file(path) as f:
        for qid in sorted(qrels):
            for docid in sorted(qrels[qid]):
                f.write(f"{qid} 0 {docid} {int(qrels[qid][docid])}\n")
                n += 1
    return n


def read_qrels(path: str | os.PathLike) -> Qrels:
    """Read TREC qrels (``qid iter docid rel``, any whitespace)."""
    p = Path(path)
    qrels: Qrels = {}
    for n, line in _lines(p):
        cols = line.split()
        if not cols:
            continue
        if len(cols) != 4:
            raise FormatError(p, n, f"expected 4 columns 'qid iter docid rel', found {len(cols)}")
        qid, _, docid, rel = cols
        try:
            rel_value = int(rel)
        except ValueError:
            try:
                as_float = float(rel)
            except ValueError:
                raise FormatError(p, n, f"relevance {rel!r} is not a number") from None
            if not as_float.is_integer():
                raise FormatError(p, n, f"relevance {rel!r} is not an integer")
            rel_value = int(as_float)
        docs = qrels.setdefault(qid, {})
        if docid in docs:
            raise FormatError(p, n, f"duplicate judgement for topic {qid!r}, document {docid!r}")
        docs[docid] = rel_value
    if not qrels:
        raise FormatError(p, None, "no judgements in file")
    return qrels


# ---------------------------------------------------------------- runs


def ranking(docs: Mapping[str, float]) -> list[tuple[str, float]]:
    """Documents in trec_eval's order: score descending, ties by docid descending."""
    return sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)


def write_run(
    path: str | os.PathLike,
    run: Mapping[str, Mapping[str, float]],
    tag: str = "legalir",
    depth: int | None = None,
    precision: int = 6,
) -> int:
    """Write a TREC run ``qid Q0 docid rank score tag``.

    Scores are rounded to ``precision`` decimals *before* ranking, so the rank
    column is exactly the order in which trec_eval will read the file, and a
    re-run writes identical bytes. Topics are written in sorted order. The
    file is written through :mod:`legalir.atomic`, so a reader never sees a
    half-written run.
    """
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"run tag must be one word, got {tag!r}")
    from legalir import atomic

    n = 0
    with atomic.open_file(path) as f:
        for qid in sorted(run):
            rounded = {d: round(float(s), precision) for d, s in run[qid].items()}
            ranked = ranking(rounded)
            if depth is not None:
                ranked = ranked[:depth]
            for rank, (docid, score) in enumerate(ranked, 1):
                f.write(f"{qid} Q0 {docid} {rank} {score:.{precision}f} {tag}\n")
                n += 1
    return n


def read_run(path: str | os.PathLike) -> Run:
    """Read a TREC run (``qid Q0 docid rank score tag``, any whitespace).

    The rank column is ignored, as trec_eval ignores it: order comes from scores.
    Blank lines and lines starting with ``#`` are skipped, as trec_eval skips them.
    """
    p = Path(path)
    run: Run = {}
    for n, line in _lines(p):
        cols = line.split()
        if not cols or cols[0].startswith("#"):  # blank and comment lines, as trec_eval skips them
            continue
        if len(cols) != 6:
            raise FormatError(p, n, f"expected 6 columns 'qid Q0 docid rank score tag', found {len(cols)}")
        qid, _, docid, _, score, _ = cols
        try:
            value = float(score)
        except ValueError:
            raise FormatError(p, n, f"score {score!r} is not a number") from None
        if value != value:  # NaN
            raise FormatError(p, n, "score is NaN")
        docs = run.setdefault(qid, {})
        if docid in docs:
            raise FormatError(p, n, f"duplicate document {docid!r} for topic {qid!r}")
        docs[docid] = value
    if not run:
        raise FormatError(p, None, "no run lines in file")
    return run


def run_tag(path: str | os.PathLike) -> str:
    """The run tag trec_eval reports as ``runid``: the last column of the last run line."""
    p = Path(path)
    size = p.stat().st_size
    block = 1 << 16
    with open(p, "rb") as f:
        while True:
            start = max(0, size - block)
            f.seek(start)
            chunk = f.read(size - start)
            lines = chunk.splitlines()
            if start > 0:
                lines = lines[1:]  # may be a partial line
            for raw in reversed(lines):
                cols = raw.decode("utf-8", errors="replace").split()
                if cols and not cols[0].startswith("#"):
                    return cols[-1]
            if start == 0:
                raise FormatError(p, None, "no run lines in file")
            block *= 4
