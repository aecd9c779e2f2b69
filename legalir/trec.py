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

import gc
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from operator import itemgetter, ne
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


STDIN = "-"

#: trec_eval reads relevance grades into C longs and allocates one counter per grade up to the
#: largest; legalir refuses grades outside this range with a located error (instead of an
#: overflow or an allocation of terabytes)
MAX_RELEVANCE = 1_000_000
MIN_RELEVANCE = -(2**31)


def _display(path) -> str:
    return "<stdin>" if str(path) == STDIN else str(path)


def read_bytes(path: str | os.PathLike) -> bytes:
    """The whole content of a text input, read in ONE pass (pipes, FIFOs, ``/dev/stdin`` and
    ``-`` for standard input work and are read whole); a UTF-8 byte-order mark is dropped.

    Raises :class:`FormatError` for a missing file, a folder, an empty file or binary data.
    """
    if str(path) == STDIN:
        import sys

        data = sys.stdin.buffer.read()
        where = STDIN
    else:
        p = Path(path)
        if not p.exists():
            raise FormatError(p, None, "file not found")
        if p.is_dir():
            raise FormatError(p, None, "is a directory, expected a file")
        with open(p, "rb") as f:  # one read: a pipe or FIFO gives its data only once
            data = f.read()
        where = p
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        raise FormatError(_display(where), None, "file is empty")
    if b"\x00" in data:
        n = data.count(b"\n", 0, data.index(b"\x00")) + 1
        if b"\x00" in data[:8192]:
            raise FormatError(_display(where), None, "binary file (NUL bytes), expected text")
        raise FormatError(_display(where), n, "binary data (NUL bytes) in a text file")
    return data


def _decode(data: bytes, path, first_line: int = 1) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        n = first_line + data.count(b"\n", 0, e.start)
        line_start = data.rfind(b"\n", 0, e.start) + 1
        raise FormatError(_display(path), n,
                          f"not UTF-8 text ({e.reason} at byte {e.start - line_start})") from None


def _lines(path: str | os.PathLike, data: bytes | None = None) -> Iterator[tuple[int, str]]:
    """Numbered, decoded lines of a text input (read whole, once); clear errors for missing/binary/empty files."""
    if data is None:
        data = read_bytes(path)
    text = _decode(data, path)
    for n, line in enumerate(text.split("\n"), 1):
        yield n, line.rstrip("\r")


def iter_jsonl(path: str | os.PathLike, data: bytes | None = None) -> Iterator[tuple[int, dict]]:
    """Numbered JSON objects of a JSONL file (blank lines skipped); FormatError names file and line.

    ``path`` may be ``-`` (standard input); ``data``: the file's bytes when already read."""
    p = _display(path)
    for n, line in _lines(path, data):
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
    """Write ``qid<TAB>text`` (Pyserini's TSV topics); returns the count."""
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for t in topics:
            f.write(f"{t.qid}\t{clean_text(t.text)}\n")
            n += 1
    return n


def write_topics_jsonl(path: str | os.PathLike, topics: Iterable[Topic]) -> int:
    """Write topics with their metadata, one JSON object a line (qid, text, fields...)."""
    n = 0
    with open(path, "w", encoding="utf-8") as f:
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
    """Write TREC qrels ``qid 0 docid rel`` (topics and docids in sorted order)."""
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for qid in sorted(qrels):
            for docid in sorted(qrels[qid]):
                f.write(f"{qid} 0 {docid} {int(qrels[qid][docid])}\n")
                n += 1
    return n


def read_qrels(path: str | os.PathLike, notes: list[str] | None = None,
               data: bytes | None = None) -> Qrels:
    """Read TREC qrels (``qid iter docid rel``, any whitespace; ``-`` = standard input).

    As trec_eval reads them: exactly four fields; the relevance is read as C's
    ``atol`` reads it (``1_0`` is 1; the ignored tail is reported in ``notes``).
    Beyond trec_eval: blank lines and every ``#`` comment line are skipped (trec_eval
    10.0 allows a single comment line, 9.0.x none), a fractional grade (``1.5``) or
    one outside [MIN_RELEVANCE, MAX_RELEVANCE] is a located error, and a repeated line
    (same topic, document and grade) is kept once and reported in ``notes`` with both
    line numbers, where trec_eval stops ("duplicate docs"); the same document judged
    twice with different grades is an error.
    """
    where = _display(path)
    qrels: Qrels = {}
    first_line: dict[tuple[str, str], int] = {}
    repeats: list[str] = []
    tails: list[str] = []
    intern = sys.intern
    for n, line in _lines(path, data):
        cols = line.split() if line.isascii() else _ASCII_WS.split(line.strip(_WS_CHARS))
        if not cols or not cols[0] or cols[0].startswith("#"):
            continue
        if len(cols) != 4:
            raise FormatError(where, n, f"expected 4 columns 'qid iter docid rel', found {len(cols)}")
        qid, _, docid, rel = cols
        rel_value, tail = _atol(rel)
        if rel_value is None:
            raise FormatError(where, n, f"relevance {rel!r} is not a number")
        if tail:
            if _ZERO_FRACTION.fullmatch(tail):
                pass
            elif _FRACTION.fullmatch(tail):
                raise FormatError(where, n, f"relevance {rel!r} is not an integer")
            else:
                tails.append(f"{where}:{n}: relevance {rel!r} read as {rel_value}, as trec_eval reads it")
        if not MIN_RELEVANCE <= rel_value <= MAX_RELEVANCE:
            raise FormatError(where, n, f"relevance {rel} is out of range: legalir, like trec_eval, keeps one "
                                        f"counter per grade; use grades between {MIN_RELEVANCE} and {MAX_RELEVANCE}")
        docs = qrels.get(qid)
        if docs is None:
            docs = qrels[intern(qid)] = {}
        if docid in docs:
            first = first_line[(qid, docid)]
            if docs[docid] != rel_value:
                raise FormatError(where, n, f"duplicate judgement for topic {qid!r}, document {docid!r} with a "
                                            f"different relevance ({docs[docid]} on line {first}, {rel_value} here)")
            repeats.append(f"{where}:{n}: repeated judgement for topic {qid!r}, document {docid!r} (also on line "
                           f"{first}); kept once (trec_eval stops on it: 'duplicate docs')")
            continue
        docs[intern(docid)] = rel_value
        first_line[(qid, docid)] = n
    if not qrels:
        raise FormatError(where, None, "no judgements in file")
    if notes is not None:
        notes.extend(_summarise(repeats) + _summarise(tails))
    return qrels


def _summarise(items: list[str], n: int = 5) -> list[str]:
    if len(items) <= n:
        return [f"warning: {x}" for x in items]
    return [f"warning: {x}" for x in items[:n]] + [f"warning: ... and {len(items) - n} more such lines"]


_WS_CHARS = " \t\n\r\x0b\x0c"           # C's isspace(): what trec_eval splits fields on
_ASCII_WS = re.compile(r"[ \t\n\r\x0b\x0c]+")
_NOT_C_WS = re.compile(r"[\x1c-\x1f]")      # str.split() splits on these too; C does not
_ATOL = re.compile(r"[ \t\n\r\x0b\x0c]*([+-]?[0-9]+)")
_ATOF = re.compile(r"[ \t\n\r\x0b\x0c]*([+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan))",
                   re.IGNORECASE)
_ZERO_FRACTION = re.compile(r"\.0*")
_FRACTION = re.compile(r"\.[0-9]+")


def _atol(text: str) -> tuple[int | None, str]:
    """(value, ignored tail) as C's atol reads ``text``; value None when no number starts it."""
    m = _ATOL.match(text)
    if not m:
        return None, text
    return int(m.group(1)), text[m.end():]


def _atof(text: str) -> tuple[float | None, str]:
    """(value, ignored tail) as C's atof reads ``text`` (decimal forms); None when no number starts it."""
    m = _ATOF.match(text)
    if not m:
        return None, text
    return float(m.group(1)), text[m.end():]


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
    file is written to a temporary name and renamed, so a reader never sees a
    half-written run.
    """
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"run tag must be one word, got {tag!r}")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + f".tmp-{os.getpid()}")
    n = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for qid in sorted(run):
            rounded = {d: round(float(s), precision) for d, s in run[qid].items()}
            ranked = ranking(rounded)
            if depth is not None:
                ranked = ranked[:depth]
            for rank, (docid, score) in enumerate(ranked, 1):
                f.write(f"{qid} Q0 {docid} {rank} {score:.{precision}f} {tag}\n")
                n += 1
    os.replace(tmp, p)
    return n


def read_run(path: str | os.PathLike, notes: list[str] | None = None,
             data: bytes | None = None) -> Run:
    """Read a TREC run (``qid Q0 docid rank score tag``, any whitespace; ``-`` = standard input).

    As trec_eval reads it: the rank column is ignored (order comes from scores);
    fields after the sixth are ignored (reported in ``notes``); blank lines and
    ``#`` comment lines are skipped (as trec_eval 10.0 skips them); the score is
    read as C's ``atof`` reads it (``1_0`` is 1.0, reported in ``notes``).
    Beyond trec_eval: a score with no number at all (``high``, which trec_eval
    reads as 0) or NaN, and a document twice for a topic (trec_eval: "duplicate
    docs"), are located errors.
    """
    return read_run_and_tag(path, notes, data)[0]


def read_run_and_tag(path: str | os.PathLike, notes: list[str] | None = None,
                     data: bytes | None = None) -> tuple[Run, str]:
    """:func:`read_run` and the run tag trec_eval reports as ``runid`` (the last line's tag), in one pass."""
    where = _display(path)
    if data is None:
        data = read_bytes(path)
    run: Run = {}
    state = _RunState()
    pos, line_no, size = 0, 1, len(data)
    collecting = gc.isenabled()
    gc.disable()  # millions of new objects, no cycles: the collector would only rescan them
    try:
        while pos < size:
            end = data.find(b"\n", min(pos + _CHUNK, size))
            end = size if end < 0 else end + 1
            chunk = data[pos:end]
            text = _decode(chunk, where, line_no)
            _read_run_chunk(text, run, state, where, line_no)
            line_no += chunk.count(b"\n")
            pos = end
    finally:
        if collecting:
            gc.enable()
    if not run:
        raise FormatError(where, None, "no run lines in file")
    if notes is not None:
        if state.extra:
            notes.append(f"warning: {where}: {state.extra} run lines have more than 6 fields; the fields after the "
                         f"sixth are ignored, as trec_eval ignores them (first: line {state.first_extra})")
        notes.extend(_summarise(state.tails))
    return run, state.tag


_CHUNK = 1 << 22


class _RunState:
    __slots__ = ("tag", "extra", "first_extra", "tails", "floats")

    def __init__(self):
        self.tag = ""
        self.extra = 0
        self.first_extra = 0
        self.tails: list[str] = []
        self.floats: dict[float, float] = {}


def _read_run_chunk(text: str, run: Run, state: _RunState, where: str, first_line: int) -> None:
    """Line by line, with trec_eval's rules and a located error for what it cannot read.

    Document ids are interned and equal scores share one float object, so a run whose
    documents recur across topics takes a fraction of the memory.
    """
    intern = sys.intern
    floats = state.floats.setdefault
    plain = text.isascii() and not _NOT_C_WS.search(text)
    docs = None
    last_qid = None
    tag = state.tag
    for n, line in enumerate(text.split("\n"), first_line):
        cols = line.split() if plain else [c for c in _ASCII_WS.split(line) if c]
        if len(cols) != 6:
            if not cols or cols[0][0] == "#":  # blank and comment lines, as trec_eval 10.0 skips them
                continue
            if len(cols) < 6:
                raise FormatError(where, n, f"expected 6 columns 'qid Q0 docid rank score tag', found {len(cols)}")
            state.extra += 1
            state.first_extra = state.first_extra or n
            cols = cols[:6]
        elif cols[0][0] == "#":
            continue
        qid, _, docid, _, score, tag = cols
        try:
            if "_" in score:
                raise ValueError
            value = float(score)
        except ValueError:
            value, tail = _atof(score)
            if value is None:
                raise FormatError(where, n, f"score {score!r} is not a number (trec_eval would read it as 0)") from None
            if tail or "_" in score:
                state.tails.append(f"{where}:{n}: score {score!r} read as {value!r}, as trec_eval reads it")
        if value != value:
            raise FormatError(where, n, "score is NaN")
        if qid != last_qid:
            docs = run.get(qid)
            if docs is None:
                docs = run[intern(qid)] = {}
            last_qid = qid
        if docid in docs:
            raise FormatError(where, n, f"duplicate document {docid!r} for topic {qid!r}")
        docs[intern(docid)] = floats(value, value)
    state.tag = tag


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
                    return cols[5] if len(cols) > 5 else cols[-1]  # trec_eval's runid: the sixth field
            if start == 0:
                raise FormatError(p, None, "no run lines in file")
            block *= 4
