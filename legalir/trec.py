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
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from itertools import compress
from operator import itemgetter, ne
from collections.abc import ItemsView, ValuesView
from typing import Any, Iterable, Iterator, Mapping

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


def id_message(value: Any) -> str | None:
    """Why ``value`` cannot be an id of a TREC file (:func:`legalir.collections.id_problem`), or None."""
    if isinstance(value, str) and _ids_ok([value]):
        return None
    from legalir.collections import id_problem

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
                          f"read back: map the ids to one-word ids (e.g. legalir.runformats.trec_id)")


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
    if not data or data.isspace():  # (not data.strip(): no copy of a large file)
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


def _check_topic(path, t: Topic, seen: set[str]) -> None:
    """Refuse (:class:`IdError`) a topic that :func:`read_topics` could not read back (``seen``: the ids so far)."""
    problem = topic_id_message(t.qid)
    if problem is None and t.qid in seen:
        problem = "is given twice"
    seen.add(t.qid)
    if problem:
        raise IdError(f"{path}: topic id {t.qid!r} {problem}; legalir writes only topics it can read back: give "
                      f"the topic a one-word id")
    if not isinstance(t.text, str) or not t.text.strip():
        raise IdError(f"{path}: topic {t.qid!r}: query text is "
                      f"{json_type(t.text) if not isinstance(t.text, str) else 'empty'}; expected a non-empty string")
    clash = [k for k in t.fields if k in ("qid", "text")]
    if clash:
        raise IdError(f"{path}: topic {t.qid!r}: metadata field(s) {clash} would replace the topic's own; rename them")


def write_topics(path: str | os.PathLike, topics: Iterable[Topic], *, inputs: Iterable = (),
                 force: bool = False) -> int:
    """Write ``qid<TAB>text`` (Pyserini's TSV topics), atomically; returns the count.

    Written under the output rule (``inputs``, ``force``: :func:`legalir.atomic.check_file`); a topic
    :func:`read_topics` could not read back (an id with whitespace, an empty text) is refused.
    """
    from legalir import atomic

    n = 0
    seen: set[str] = set()
    with atomic.open_file(path, output=True, inputs=inputs, force=force) as f:
        for t in topics:
            _check_topic(path, t, seen)
            text = clean_text(t.text)
            if not text or "\x00" in text:
                why = "is empty once on one line" if not text else "holds a NUL character, which a text file cannot hold"
                raise IdError(f"{path}: topic {t.qid!r}: query text {why}")
            f.write(f"{t.qid}\t{text}\n")
            n += 1
    return n


def write_topics_jsonl(path: str | os.PathLike, topics: Iterable[Topic], *, inputs: Iterable = (),
                       force: bool = False) -> int:
    """Write topics with their metadata, one JSON object a line (qid, text, fields...), atomically.

    The output rule and the checks of :func:`write_topics` apply.
    """
    from legalir import atomic

    n = 0
    seen: set[str] = set()
    with atomic.open_file(path, output=True, inputs=inputs, force=force) as f:
        for t in topics:
            _check_topic(path, t, seen)
            rec = {"qid": t.qid, "text": t.text, **dict(t.fields)}
            f.write(json.dumps(rec, ensure_ascii=False, sort_keys=False) + "\n")
            n += 1
    return n


def read_topics(path: str | os.PathLike, data: bytes | None = None) -> dict[str, Topic]:
    """Read topics from ``.tsv`` (qid<TAB>text) or ``.jsonl`` (qid, text, metadata); ``-`` = standard input,
    read whole (JSONL when its first character is ``{``).

    A JSONL topic's ``text`` must be a string and its ``qid`` a string or an integer (written as its
    digits, losslessly); every topic id must be one a TREC run can hold (no whitespace, not empty). Any
    other line is a :class:`FormatError` naming the file and the line.
    """
    where = _display(path)
    if data is None:
        data = read_bytes(path)
    if str(path) == STDIN:
        jsonl = data.lstrip()[:1] == b"{"
    else:
        jsonl = Path(path).suffix == ".jsonl"
    topics: dict[str, Topic] = {}
    rows = iter_jsonl(path, data) if jsonl else ((n, line) for n, line in _lines(path, data) if line.strip())
    for n, row in rows:
        if jsonl:
            rec = dict(row)
            if "qid" not in rec or "text" not in rec:
                hint = ""
                if "_id" in rec:
                    hint = ("; this looks like a published BEIR queries file ('_id'): convert the dataset first "
                            "(`legalir convert`) and search its topics/<set>.jsonl, whose 'qid' a run can hold "
                            "(ACORD's free-text query ids become one-word slugs there; the original is kept in "
                            "'query_id')")
                raise FormatError(where, n, "a topic object needs 'qid' and 'text'" + hint)
            qid, text = rec.pop("qid"), rec.pop("text")
            if isinstance(qid, bool) or not isinstance(qid, (str, int)):
                raise FormatError(where, n, f"field 'qid' is {json_type(qid)}; expected a string (or an integer)")
            if not isinstance(text, str):
                raise FormatError(where, n, f"field 'text' is {json_type(text)}; expected a string")
            qid = str(qid)
            fields = rec
        else:
            line = row
            if "\t" not in line:
                raise FormatError(where, n, "expected 'qid<TAB>text'")
            qid, text = line.split("\t", 1)
            fields = {}
        qid = qid.strip()
        if not qid:
            raise FormatError(where, n, "empty topic id")
        problem = topic_id_message(qid)
        if problem:
            raise FormatError(where, n, f"topic id {qid!r} {problem}: give the topic a one-word id (e.g. {'_'.join(qid.split()) or 'q1'!r})")
        if not text.strip():
            raise FormatError(where, n, f"empty query text for topic {qid!r}")
        if qid in topics:
            raise FormatError(where, n, f"duplicate topic id {qid!r}")
        topics[qid] = Topic(qid, text, fields)
    if not topics:
        raise FormatError(where, None, "no topics in file")
    return topics


# ---------------------------------------------------------------- qrels


def write_qrels(path: str | os.PathLike, qrels: Mapping[str, Mapping[str, int]], *, inputs: Iterable = (),
                force: bool = False) -> int:
    """Write TREC qrels ``qid 0 docid rel`` (topics and docids in sorted order), atomically.

    Written under the output rule (``inputs``, ``force``: :func:`legalir.atomic.check_file`); an id a
    qrels file cannot hold, or a grade :func:`read_qrels` refuses, is refused.
    """
    from legalir import atomic

    n = 0
    with atomic.open_file(path, output=True, inputs=inputs, force=force) as f:
        for qid in sorted(qrels):
            _check_run_ids(path, qid, qrels[qid])
            for docid in sorted(qrels[qid]):
                rel = qrels[qid][docid]
                if isinstance(rel, bool) or not isinstance(rel, int) or not MIN_RELEVANCE <= rel <= MAX_RELEVANCE:
                    raise IdError(f"{path}: grade {rel!r} of topic {qid!r}, document {docid!r}: expected an integer "
                                  f"between {MIN_RELEVANCE} and {MAX_RELEVANCE}")
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
    if data is None:
        data = read_bytes(path)
    qrels = _plain_qrels(data, where)
    if qrels is not None:
        return qrels
    qrels = {}
    first_line: dict[tuple[str, str], int] = {}
    repeats: list[str] = []
    tails: list[str] = []
    intern = sys.intern
    for n, line in _lines(path, data):
        cols = line.split() if line.isascii() else _ASCII_WS.split(line.strip(_WS_CHARS))
        if not cols or not cols[0] or cols[0].startswith("#"):
            continue
        if len(cols) != 4:
            hint = ("; this line looks like a run line (qid Q0 docid rank score tag): are QRELS and RUN given "
                    "in the wrong order? (`legalir eval QRELS RUN`)" if len(cols) == 6 and cols[1] == "Q0" else "")
            raise FormatError(where, n, f"expected 4 columns 'qid iter docid rel', found {len(cols)}{hint}")
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


def _numbers(text: str, column: list[str], convert) -> list | None:
    """``column`` (a line piece's grades or scores) converted with ``int``/``float``; None when a value is
    not a plain number, or holds ``_`` (Python reads 1_0 as 10, C's atol/atof as 1: the line reader decides)."""
    if "_" in text and "_" in "".join(column):
        return None
    try:
        return list(map(convert, column))
    except ValueError:
        return None


def _plain_qrels(data: bytes, where: str) -> Qrels | None:
    """The qrels of a plain file (four fields a line, integer grades in range, no judgement twice: see
    :func:`_plain_tokens`), read at C speed; None for any other file, which :func:`read_qrels` reads line
    by line (the same values, with its notes and located errors)."""
    qrels: Qrels = {}
    intern = sys.intern
    for line_no, start, end in _pieces(data):
        if _fast is not None:
            got = _fast.groups(data, start, end, True, MIN_RELEVANCE, MAX_RELEVANCE)
            if got is None or not _merge(qrels, got[0]):
                return None
            continue
        text = _text(data, start, end, where, line_no)
        toks = _plain_tokens(text, 4)
        if toks is None:
            return None
        values = _numbers(text, toks[3::5], int)
        if values is None:
            return None
        if min(values) < MIN_RELEVANCE or max(values) > MAX_RELEVANCE:
            return None
        groups = _groups(toks[0::5], list(map(intern, toks[2::5])), values)
        if groups is None or not _merge(qrels, groups):
            return None
    return qrels or None


def _pieces(data: bytes, size: int | None = None) -> Iterator[tuple[int, int, int]]:
    """(number of its first line, start, end) of the pieces of ``data`` of about ``size`` bytes
    that end at a line end."""
    size = size or _CHUNK
    pos, total, line_no = 0, len(data), 1
    while pos < total:
        end = data.find(b"\n", min(pos + size, total))
        end = total if end < 0 else end + 1
        yield line_no, pos, end
        line_no += data.count(b"\n", pos, end)
        pos = end


def _text(data: bytes, start: int, end: int, where: str, line_no: int) -> str:
    """A piece of ``data`` decoded (a located error if it is not UTF-8), ending with a newline."""
    text = _decode(data[start:end], where, line_no)
    return text if text.endswith("\n") else text + "\n"


def _plain_tokens(text: str, ncols: int) -> list[str] | None:
    """The whitespace-separated fields of ``text`` (whole lines, the last ending with a newline) with a
    NUL after each line's fields, when every line has exactly ``ncols`` fields, separated by C's
    whitespace only (ASCII, no comment or blank line); None otherwise.

    This is the fast path of the readers: one ``str.split`` for the whole text instead of one a line;
    field ``k`` of every line is ``tokens[k::ncols + 1]``.
    """
    if not text.isascii() or "#" in text or "\x00" in text or _splits_off_c(text):
        return None
    toks = text.replace("\n", " \x00 ").split()
    lines = text.count("\n")
    step = ncols + 1
    if len(toks) != step * lines or toks[ncols::step].count("\x00") != lines:
        return None
    return toks


def _groups(qids: list[str], docids: list[str], values: list) -> list[tuple[str, dict]] | None:
    """``[(qid, {docid: value})]``, one per run of consecutive lines with the same qid; None when a
    document appears twice in one such run."""
    n = len(qids)
    bounds = [0, *compress(range(1, n), map(ne, qids, qids[1:])), n]
    out = []
    for a, b in zip(bounds, bounds[1:]):
        docs = dict(zip(docids[a:b], values[a:b]))
        if len(docs) != b - a:
            return None
        out.append((qids[a], docs))
    return out


def _merge(into: dict, groups: list[tuple[str, dict]]) -> bool:
    """Add ``groups`` to ``into`` (qid -> docs); False when a document would appear twice for a topic."""
    intern = sys.intern
    for qid, docs in groups:
        have = into.get(qid)
        if have is None:
            into[intern(qid)] = docs
            continue
        n = len(have) + len(docs)
        have.update(docs)
        if len(have) != n:
            return False
    return True


def _summarise(items: list[str], n: int = 5) -> list[str]:
    if len(items) <= n:
        return [f"warning: {x}" for x in items]
    return [f"warning: {x}" for x in items[:n]] + [f"warning: ... and {len(items) - n} more such lines"]


_WS_CHARS = " \t\n\r\x0b\x0c"           # C's isspace(): what trec_eval splits fields on
_ASCII_WS = re.compile(r"[ \t\n\r\x0b\x0c]+")


def _splits_off_c(text: str) -> bool:
    """True when ``text`` holds a character str.split() splits on and C's isspace does not."""
    return "\x1c" in text or "\x1d" in text or "\x1e" in text or "\x1f" in text
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


def ranking(docs: Mapping[str, float], k: int | None = None) -> list[tuple[str, float]]:
    """Documents in trec_eval's order: score descending, ties by docid descending; the top ``k`` if given.

    The one top-k helper: every ranker and run writer orders documents with it.
    """
    ranked = sorted(zip(docs.values(), docs), reverse=True)  # (score, docid) pairs: no Python key function
    if k is not None:
        ranked = ranked[:k]
    return list(zip(map(itemgetter(1), ranked), map(itemgetter(0), ranked)))


class TagError(LegalirError, ValueError):
    pass


def check_tag(tag: str) -> str:
    """A run tag is one word (the last column of a TREC run; the id rule of :func:`id_message`);
    checked before any search starts."""
    if id_message(tag) is not None:
        raise TagError(f"run tag must be one word without spaces, got {tag!r}; e.g. --tag bm25-rm3")
    return tag


def write_run(
    path: str | os.PathLike,
    run: Mapping[str, Mapping[str, float]],
    tag: str = "legalir",
    depth: int | None = None,
    precision: int = 6,
    *,
    inputs: Iterable = (),
    force: bool = False,
) -> int:
    """Write a TREC run ``qid Q0 docid rank score tag``.

    Scores are rounded to ``precision`` decimals *before* ranking, so the rank
    column is exactly the order in which trec_eval will read the file, and a
    re-run writes identical bytes. Topics are written in sorted order. The
    file is written through :mod:`legalir.atomic`, so a reader never sees a
    half-written run, and under its output rule: never onto one of ``inputs``,
    never over a file legalir did not write unless ``force``
    (:func:`legalir.atomic.check_file`). What :func:`read_run` could not read
    back is refused (:class:`IdError`): an id with whitespace or empty, a NaN score,
    a run without a single line.
    """
    return write_run_stream(path, ((q, run[q]) for q in sorted(run)), tag=tag, depth=depth, precision=precision,
                            inputs=inputs, force=force)


def write_run_stream(
    path: str | os.PathLike,
    topics: Iterable[tuple[str, Mapping[str, float]]],
    tag: str = "legalir",
    depth: int | None = None,
    precision: int = 6,
    *,
    inputs: Iterable = (),
    force: bool = False,
) -> int:
    """:func:`write_run` for a run that arrives one topic at a time, ``(qid, {docid: score})`` in
    sorted qid order (the order :func:`write_run` writes): each topic is written as it comes and
    nothing is kept, so the bytes are :func:`write_run`'s and the memory one topic's."""
    check_tag(tag)
    from legalir import atomic

    n = 0
    last = None
    with atomic.open_file(path, output=True, inputs=inputs, force=force) as f:
        for qid, docs in topics:
            _check_run_ids(path, qid, docs)
            if last is not None and not qid > last:
                raise ValueError(f"write_run_stream: topic {qid!r} after {last!r}; topics must come in sorted order")
            last = qid
            rounded = {d: round(float(s), precision) for d, s in docs.items()}
            if any(v != v for v in rounded.values()):
                bad = next(d for d, v in rounded.items() if v != v)
                raise IdError(f"{path}: score of document {bad!r} for topic {qid!r} is NaN; a run cannot rank it "
                              f"(legalir eval refuses NaN scores)")
            ranked = ranking(rounded)
            if depth is not None:
                ranked = ranked[:depth]
            f.write("".join([f"{qid} Q0 {docid} {rank} {score:.{precision}f} {tag}\n"
                             for rank, (docid, score) in enumerate(ranked, 1)]))
            n += len(ranked)
        if n == 0:
            raise IdError(f"{path}: no document for any topic; an empty run cannot be read back (legalir eval and "
                          f"trec_eval refuse it): nothing written")
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
    with _no_gc():  # millions of new objects, no cycles: the collector would only rescan them
        for line_no, start, end in _pieces(data):
            groups = _plain_run(data, start, end, where, line_no, state, share=True)
            if groups is None:
                _read_run_chunk(_text(data, start, end, where, line_no), run, state, where, line_no)
            elif not _merge(run, groups):  # a document twice for a topic: the line-by-line reader locates it
                return _read_run_exact(path, data, notes)
    return run, _run_notes(run, state, where, notes)


def _read_run_exact(path, data: bytes, notes: list[str] | None) -> tuple[Run, str]:
    """:func:`read_run_and_tag` line by line only (every line checked, errors located)."""
    where = _display(path)
    run: Run = {}
    state = _RunState()
    with _no_gc():
        for line_no, start, end in _pieces(data):
            _read_run_chunk(_text(data, start, end, where, line_no), run, state, where, line_no)
    return run, _run_notes(run, state, where, notes)


def _run_notes(run: Run, state: "_RunState", where: str, notes: list[str] | None) -> str:
    """The run's tag after the last chunk; its reading notes into ``notes``; an error when it had no line."""
    if not run:
        raise FormatError(where, None, "no run lines in file")
    if notes is not None:
        if state.extra:
            notes.append(f"warning: {where}: {state.extra} run lines have more than 6 fields; the fields after the "
                         f"sixth are ignored, as trec_eval ignores them (first: line {state.first_extra})")
        notes.extend(_summarise(state.tails))
    return state.tag


class ScatteredTopics(Exception):
    """A topic's lines come back after other topics' lines: :class:`RunBatches` cannot hand out whole
    topics; read the run whole (:func:`read_run_and_tag`) instead. Not an input error."""


class RunBatches:
    """A TREC run read as batches of whole topics, so that a large run is never in memory at once.

    ``for batch in RunBatches(path, data, notes): ...`` gives ``{qid: {docid: score}}`` dicts, each
    topic in exactly one batch, read with :func:`read_run`'s rules and errors (a plain file at C
    speed, any other chunk line by line). After the loop, ``tag`` is the run tag and the reading
    notes are in ``notes``. A topic whose lines are not consecutive (it comes back after another
    topic's batch was handed out) raises :class:`ScatteredTopics`.
    """

    def __init__(self, path: str | os.PathLike, data: bytes | None = None, notes: list[str] | None = None,
                 chunk: int | None = None, batch_docs: int | None = None):
        self.path = path
        self.data = read_bytes(path) if data is None else data
        self.notes = notes
        self.chunk = chunk
        self.batch_docs = batch_docs or _BATCH_DOCS  # a batch is handed out once it holds this many documents
        self.tag = ""

    def __iter__(self) -> Iterator[Run]:
        where = _display(self.path)
        state = _RunState()
        done: set[str] = set()
        pending_qid, pending = None, None
        ready: Run = {}
        size = 0
        data = self.data
        for line_no, start, end in _pieces(data, self.chunk):
            with _no_gc():
                part: Run = {}
                groups = _plain_run(data, start, end, where, line_no, state)
                if groups is None:
                    try:
                        _read_run_chunk(_text(data, start, end, where, line_no), part, state, where, line_no)
                    except FormatError:  # the file's first error may be a duplicate of an earlier piece
                        _read_run_exact(self.path, data, None)
                        raise
                elif not _merge(part, groups):
                    _read_run_exact(self.path, data, None)  # raises the located error
                    raise AssertionError("a duplicate document went unreported")  # pragma: no cover
                if not part:  # comment or blank lines only
                    continue
                if pending_qid is not None:
                    more = part.get(pending_qid)
                    if more is not None:
                        n = len(pending) + len(more)
                        pending.update(more)
                        if len(pending) != n:
                            _read_run_exact(self.path, self.data, None)  # raises the located error
                            raise AssertionError("a duplicate document went unreported")  # pragma: no cover
                    part[pending_qid] = pending  # first in the batch: the first topic of the chunk
                    part = {pending_qid: pending, **part}
                if not done.isdisjoint(part):
                    raise ScatteredTopics(f"{where}: topic lines are not consecutive")
                pending_qid = state.last
                pending = part.pop(pending_qid)
                done.update(part)
                ready.update(part)
                size += sum(map(len, part.values()))
            if size >= self.batch_docs:
                yield ready
                ready, size = {}, 0
        if pending_qid is None:
            raise FormatError(where, None, "no run lines in file")
        ready[pending_qid] = pending
        yield ready
        self.tag = _run_notes({pending_qid: pending}, state, where, self.notes)


class _no_gc:
    """Collector off inside (many new objects, no cycles: it would only rescan them); back as it was after."""

    def __enter__(self):
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.was:
            gc.enable()


def _plain_run(data: bytes, start: int, end: int, where: str, line_no: int, state: "_RunState",
               share: bool = False) -> list[tuple[str, dict]] | None:
    """``[(qid, {docid: score})]`` of a plain piece of a run (see :func:`_plain_tokens`; every score
    read the same by Python's float() and C's atof, no NaN), one item per run of consecutive lines of
    one topic, read at C speed; the piece's tag and last topic go to ``state``. None for any other
    piece. ``share``: intern document ids and share equal scores (a whole run in memory takes less)."""
    if _fast is not None:
        got = _fast.groups(data, start, end, False, 0, 0)
        if got is None:
            return None
        groups, state.tag, state.last = got
        if share:
            intern, floats = sys.intern, state.floats.setdefault
            groups = [(qid, dict(zip(map(intern, docs), map(floats, docs.values(), docs.values()))))
                      for qid, docs in groups]
        return groups
    text = _text(data, start, end, where, line_no)
    toks = _plain_tokens(text, 6)
    if toks is None:
        return None
    values = _numbers(text, toks[4::7], float)
    if values is None:
        return None
    total = sum(values)
    if total != total:  # a NaN (or inf and -inf): the line-by-line reader says where
        return None
    docids = toks[2::7]
    if share:
        docids = list(map(sys.intern, docids))
        values = list(map(state.floats.setdefault, values, values))
    qids = toks[0::7]
    groups = _groups(qids, docids, values)
    if groups is None:
        return None
    state.tag = toks[-2]
    state.last = qids[-1]
    return groups


_BATCH_DOCS = 1 << 16  # ~6 MB of Python objects a batch; pytrec_eval's per-call cost is paid ~15x at 1M lines
_CHUNK = 1 << 16  # small enough that the fields of one piece stay in the CPU cache (2x faster than 1 MiB)


class _RunState:
    __slots__ = ("tag", "last", "extra", "first_extra", "tails", "floats")

    def __init__(self):
        self.tag = ""
        self.last = None
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
    plain = text.isascii() and not _splits_off_c(text)
    docs = None
    last_qid = None
    tag = state.tag
    for n, line in enumerate(text.split("\n"), first_line):
        cols = line.split() if plain else [c for c in _ASCII_WS.split(line) if c]
        wide = len(cols) > 6
        if len(cols) != 6:
            if not cols or cols[0][0] == "#":  # blank and comment lines, as trec_eval 10.0 skips them
                continue
            if len(cols) < 6:
                hint = ("; this line looks like a qrels line (qid iter docid grade): are QRELS and RUN given in the "
                        "wrong order? (`legalir eval QRELS RUN`)" if len(cols) == 4 else "")
                raise FormatError(where, n, f"expected 6 columns 'qid Q0 docid rank score tag', found {len(cols)}{hint}")
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
                hint = (f"; the line has {len(line.split())} fields, not 6: a query id with spaces (ACORD's free-text "
                        f"ids, e.g. '\"as is\" clause') splits into several. Query ids must be one word: use the "
                        f"converted topics' ids (collections/<dataset>/topics/*.jsonl: 'qid' holds the slug, the "
                        f"original text stays in 'query_id')" if wide else "")
                raise FormatError(where, n, f"score {score!r} is not a number (trec_eval would read it as 0)"
                                            f"{hint}") from None
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
    if last_qid is not None:
        state.last = last_qid


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
