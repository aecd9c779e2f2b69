"""The data model (topics, qrels, runs as plain mappings; ``Hits``; ``Topic``), ids, and reading files whole."""
from __future__ import annotations

import json
import os
from collections.abc import ItemsView, Iterable, Iterator, Mapping, ValuesView
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from legalir.errors import LegalirError

__all__ = ["FormatError", "Hits", "IdError", "MAX_RELEVANCE", "MIN_RELEVANCE", "Qrels", "Run", "STDIN", "Topic", "clean_text", "id_message", "iter_jsonl", "json_type", "read_bytes", "topic_id_message"]

try:  # the plain-file fast path of the readers, in C (built by `pip install`; optional)
    from legalir import _plain as _fast
except ImportError:  # pragma: no cover - not built: the same fast path in Python
    _fast = None

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]  # a topic's hits may be any Mapping[str, float], e.g. Hits


class Hits(Mapping):
    """One topic's ranked hits as a read-only ``{docid: score}`` mapping over the engine's arrays.

    ``ids`` and ``scores`` are equal-length rows (a numpy object array of
    docids and a numpy float array, best first), as a FAISS search returns
    them after the row -> docid gather. No Python object per hit is made until
    the hits are read: iterating (``items()``, ``keys()``, ``values()``, what
    run writers and fusion do) goes through the two lists; looking a document
    up builds the dict once. Equal to a dict with the same items.
    """

    __slots__ = ("_ids", "_scores", "_map")

    def __init__(self, ids, scores):
        self._ids = ids
        self._scores = scores
        self._map = None

    def _dict(self) -> dict[str, float]:
        if self._map is None:
            self._map = dict(zip(self._ids.tolist(), self._scores.tolist()))
        return self._map

    def __getitem__(self, docid: str) -> float:
        return self._dict()[docid]

    def __contains__(self, docid: object) -> bool:
        return docid in self._dict()

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids.tolist())

    def __len__(self) -> int:
        return len(self._ids)

    def items(self):
        return _HitItems(self)

    def values(self):
        return _HitValues(self)

    def __repr__(self) -> str:
        return f"Hits({self._dict()!r})"

    def __reduce__(self):
        return Hits, (self._ids, self._scores)


class _HitItems(ItemsView):
    def __iter__(self):
        return zip(self._mapping._ids.tolist(), self._mapping._scores.tolist())


class _HitValues(ValuesView):
    def __iter__(self):
        return iter(self._mapping._scores.tolist())


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


class IdError(LegalirError, ValueError):
    """An id (topic, document, run tag) that a TREC file cannot hold, refused where it enters."""


def json_type(value: Any) -> str:
    """How a JSON value's type reads in a message: ``a string``, ``a list``, ``an object``, ``null``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def _ids_ok(ids: Iterable[str]) -> bool:
    """Whether every id of ``ids`` may stand in a TREC file (:func:`legalir.collections.id_problem`'s
    rule, checked at C speed: non-empty strings, printable, no space)."""
    ids = list(ids)
    try:
        joined = "".join(ids)
    except TypeError:
        return False
    return joined.isprintable() and " " not in joined and "" not in ids


def id_problem(value: Any) -> str | None:
    """Why ``value`` cannot be an id in legalir's TREC files (run, qrels, topics), or None.

    TREC files are whitespace-separated columns, so an id must be a non-empty
    string without whitespace or control characters. A missing (null) id is
    refused rather than written as the word ``None``. The one id rule: topic
    readers and run, topics and qrels writers apply it too
    (:func:`legalir.trec.id_message`, the same test at C speed).
    """
    if value is None:
        return "is missing (null)"
    if not isinstance(value, str):
        return f"is a {type(value).__name__}, not a string"
    if not value:
        return "is empty"
    if any(c.isspace() or not c.isprintable() for c in value):
        return "holds whitespace or a control character, which TREC run and qrels files cannot hold"
    return None


def id_message(value: Any) -> str | None:
    """Why ``value`` cannot be an id of a TREC file (:func:`id_problem`), or None."""
    if isinstance(value, str) and _ids_ok([value]):
        return None
    return id_problem(value)


def topic_id_message(qid: Any) -> str | None:
    """:func:`id_message` for a topic id, which also may not start with ``#``: it stands first on its run and
    qrels lines, and readers (trec_eval 10's too) skip a line starting with ``#`` as a comment."""
    problem = id_message(qid)
    if problem is None and qid.startswith("#"):
        return "starts with '#', which run and qrels readers take for a comment line"
    return problem


def _check_run_ids(path, qid: Any, docs: Iterable[Any]) -> None:
    """Refuse (:class:`IdError`) a topic id or document id that the run at ``path`` could not hold."""
    docs = list(docs)
    if isinstance(qid, str) and _ids_ok([qid, *docs]) and not qid.startswith("#"):
        return
    problem = topic_id_message(qid)
    if problem:
        raise IdError(f"{path}: topic id {qid!r} {problem}; legalir writes only runs it can read back: give "
                      f"the topic a one-word id")
    for d in docs:
        problem = id_message(d)
        if problem:
            raise IdError(f"{path}: document id {d!r} of topic {qid!r} {problem}; legalir writes only runs it can "
                          f"read back: map the ids to one-word ids (e.g. legalir.trec.runformats.trec_id)")


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


def _input_file(path: str | os.PathLike) -> Path:
    """``path``, an input that exists and is no folder, or a :class:`FormatError` saying which."""
    p = Path(path)
    if not p.exists():
        raise FormatError(p, None, "file not found")
    if p.is_dir():
        raise FormatError(p, None, "is a directory, expected a file")
    return p


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
        p = _input_file(path)
        with open(p, "rb") as f:  # one read: a pipe or FIFO gives its data only once
            data = f.read()
        where = p
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    _check_text((data,), where)
    return data


def _check_text(chunks: Iterable[bytes], where) -> None:
    """:func:`read_bytes`' checks of a text's bytes (after its byte-order mark), given whole or in consecutive
    chunks: no NUL byte (a file that begins with one is binary; a later one is named by its line), and not empty
    or blank. The one rule for a file read whole and a file read a line at a time (:func:`json_lines`)."""
    blank, n, at = True, 1, 0
    for chunk in chunks:
        if b"\x00" in chunk:
            i = chunk.index(b"\x00")
            if at + i < 8192:
                raise FormatError(_display(where), None, "binary file (NUL bytes), expected text")
            raise FormatError(_display(where), n + chunk.count(b"\n", 0, i), "binary data (NUL bytes) in a text file")
        blank = blank and (not chunk or chunk.isspace())  # (not chunk.strip(): no copy of a large file)
        n += chunk.count(b"\n")
        at += len(chunk)
    if blank:
        raise FormatError(_display(where), None, "file is empty")


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
    for n, _, rec in json_lines(path, data):
        yield n, rec


def _stream_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """:func:`_lines` of a file, read a line at a time (a large collection is never held whole): the same lines and
    the same errors (:func:`read_bytes`' checks and UTF-8), checked over the whole file before the first line is
    given, as a file read whole is."""
    p = _input_file(path)
    if not p.is_file():  # a pipe or FIFO gives its data once: read whole
        yield from _lines(path)
        return

    def raw_lines() -> Iterator[tuple[int, bytes]]:  # numbered lines, the byte-order mark dropped
        with open(p, "rb") as f:
            for n, raw in enumerate(f, 1):
                yield n, raw[3:] if n == 1 and raw.startswith(b"\xef\xbb\xbf") else raw

    bad: list[FormatError] = []

    def checked() -> Iterator[bytes]:  # each line, its UTF-8 checked; the first error kept for after the others
        for n, raw in raw_lines():
            if not bad:
                try:
                    _decode(raw, path, n)
                except FormatError as e:
                    bad.append(e)
            yield raw

    _check_text(checked(), p)  # NUL bytes and an empty file first, as read_bytes before any decoding
    if bad:
        raise bad[0]
    for n, raw in raw_lines():
        yield n, _decode(raw, path, n).rstrip("\n").rstrip("\r")


def json_lines(path: str | os.PathLike, data: bytes | None = None, stream: bool = False
               ) -> Iterator[tuple[int, str, dict]]:
    """:func:`iter_jsonl`'s objects with their lines: ``(line number, line, object)``.

    Parameters
    ----------
    path : path or ``-``
        A JSONL file (``-``: standard input).
    data : bytes, optional
        The file's bytes when already read.
    stream : bool
        Read a file a line at a time (a large collection is never held whole), with the same checks, made over
        the whole file before the first line is given: the same lines and the same errors as read whole.

    Yields
    ------
    tuple
        ``(line number, line, object)`` of each non-blank line; :class:`FormatError` names the file and line
        of a line that is not a JSON object.
    """
    p = _display(path)
    for n, line in _stream_lines(path) if stream else _lines(path, data):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise FormatError(p, n, f"invalid JSON: {e.msg} (column {e.colno})") from None
        if not isinstance(rec, dict):
            raise FormatError(p, n, f"expected a JSON object, found {type(rec).__name__}")
        yield n, line, rec
