"""TREC qrels (``qid iter docid grade``), read as trec_eval reads them."""
from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping

from legalir.trec import model
from legalir.trec.model import (
    MAX_RELEVANCE,
    MIN_RELEVANCE,
    FormatError,
    IdError,
    Qrels,
    _check_run_ids,
    _display,
    _lines,
    read_bytes,
)
from legalir.trec.plain import (
    _ASCII_WS,
    _FRACTION,
    _WS_CHARS,
    _ZERO_FRACTION,
    _atol,
    _groups,
    _merge,
    _numbers,
    _pieces,
    _plain_tokens,
    _summarise,
    _text,
)

__all__ = ["read_qrels", "write_qrels"]


# ---------------------------------------------------------------- qrels


def write_qrels(path: str | os.PathLike, qrels: Mapping[str, Mapping[str, int]], *, inputs: Iterable = (),
                force: bool = False) -> int:
    """Write TREC qrels ``qid 0 docid rel`` (topics and docids in sorted order), atomically.

    Written under the output rule (``inputs``, ``force``: :func:`legalir.base.atomic.check_file`); an id a
    qrels file cannot hold, or a grade :func:`read_qrels` refuses, is refused.
    """
    from legalir.base import atomic

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


def _plain_qrels(data: bytes, where: str) -> Qrels | None:
    """The qrels of a plain file (four fields a line, integer grades in range, no judgement twice: see
    :func:`_plain_tokens`), read at C speed; None for any other file, which :func:`read_qrels` reads line
    by line (the same values, with its notes and located errors)."""
    qrels: Qrels = {}
    intern = sys.intern
    for line_no, start, end in _pieces(data):
        if model._fast is not None:
            got = model._fast.groups(data, start, end, True, MIN_RELEVANCE, MAX_RELEVANCE)
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
