"""TREC runs (``qid Q0 docid rank score tag``): written in trec_eval's order, read as trec_eval reads them."""
from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from operator import itemgetter
from pathlib import Path

from legalir.errors import LegalirError
from legalir.trec import model
from legalir.trec.model import FormatError, IdError, Run, _check_run_ids, _display, id_message, read_bytes
from legalir.trec.plain import (
    _ASCII_WS,
    _atof,
    _groups,
    _merge,
    _numbers,
    _pieces,
    _plain_tokens,
    _splits_off_c,
    _summarise,
    _text,
)

__all__ = ["DepthError", "RunBatches", "ScatteredTopics", "TagError", "check_depth", "check_tag", "ranking", "read_run", "read_run_and_tag", "run_tag", "write_run", "write_run_stream"]


# ---------------------------------------------------------------- runs


def ranking(docs: Mapping[str, float], k: int | None = None) -> list[tuple[str, float]]:
    """Documents in trec_eval's order: score descending, ties by docid descending; the top ``k`` if given.

    The one top-k helper: every ranker and run writer orders documents with it.
    """
    if k is not None and k < 0:
        raise DepthError(f"a ranking's depth cannot be negative (got {k})")
    ranked = sorted(zip(docs.values(), docs), reverse=True)  # (score, docid) pairs: no Python key function
    if k is not None:
        ranked = ranked[:k]
    return list(zip(map(itemgetter(1), ranked), map(itemgetter(0), ranked)))


class TagError(LegalirError, ValueError):
    pass


class DepthError(LegalirError, ValueError):
    """A depth (documents kept per topic) that is not a positive number."""


def check_depth(depth: int | None, where: str | os.PathLike = "") -> int | None:
    """``depth`` as every run writer takes it: ``None`` (all documents) or at least 1; else a :class:`DepthError`."""
    if depth is None:
        return None
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise DepthError(f"{str(where) + ': ' if where else ''}depth must be at least 1 documents per topic, or "
                         f"None for all (got {depth!r}); nothing written")
    return depth


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
    file is written through :mod:`legalir.base.atomic`, so a reader never sees a
    half-written run, and under its output rule: never onto one of ``inputs``,
    never over a file legalir did not write unless ``force``
    (:func:`legalir.base.atomic.check_file`). What :func:`read_run` could not read
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
    check_depth(depth, path)
    from legalir.base import atomic

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
    read exactly as glibc's ``atof`` reads it (:func:`legalir.trec.plain.strtod`: ``0x10`` is 16,
    ``+1.5`` 1.5, ``inf`` infinity; ``1_0`` and ``1.5abc`` are 1.0 and 1.5, the ignored rest and
    hexadecimal scores reported in ``notes``).
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


def _run_notes(run: Run, state: _RunState, where: str, notes: list[str] | None) -> str:
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
                    raise AssertionError("a duplicate document went unreported")  # pragma: no cover - invariant
                if not part:  # comment or blank lines only
                    continue
                if pending_qid is not None:
                    more = part.get(pending_qid)
                    if more is not None:
                        n = len(pending) + len(more)
                        pending.update(more)
                        if len(pending) != n:
                            _read_run_exact(self.path, self.data, None)  # raises the located error
                            raise AssertionError("a duplicate document went unreported")  # pragma: no cover - invariant
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


def _plain_run(data: bytes, start: int, end: int, where: str, line_no: int, state: _RunState,
               share: bool = False) -> list[tuple[str, dict]] | None:
    """``[(qid, {docid: score})]`` of a plain piece of a run (see :func:`_plain_tokens`; every score
    read the same by Python's float() and C's atof, no NaN), one item per run of consecutive lines of
    one topic, read at C speed; the piece's tag and last topic go to ``state``. None for any other
    piece. ``share``: intern document ids and share equal scores (a whole run in memory takes less)."""
    if model._fast is not None:
        got = model._fast.groups(data, start, end, False, 0, 0)
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
            # float() reads a field of a plain text (ASCII, no whitespace of any kind) without "_" exactly as
            # strtod does, whenever it reads it at all: the same grammar, both correctly rounded
            if not plain or "_" in score:
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
            if tail:
                state.tails.append(f"{where}:{n}: score {score!r} read as {value!r} (the rest, {tail!r}, ignored), "
                                   f"as trec_eval reads it")
            elif "x" in score[:3].lower():
                state.tails.append(f"{where}:{n}: hexadecimal score {score!r} read as {value!r}, as trec_eval "
                                   f"reads it")
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
