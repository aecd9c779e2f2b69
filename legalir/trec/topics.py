"""Topics: Pyserini's TSV (``qid<TAB>text``) and legalir's JSONL (``{"qid", "text", ...fields}``)."""
from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from legalir.trec.model import (
    STDIN,
    FormatError,
    IdError,
    Topic,
    _display,
    _lines,
    clean_text,
    iter_jsonl,
    json_type,
    read_bytes,
    topic_id_message,
)

__all__ = ["read_topics", "write_topics", "write_topics_jsonl"]



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

    Written under the output rule (``inputs``, ``force``: :func:`legalir.base.atomic.check_file`); a topic
    :func:`read_topics` could not read back (an id with whitespace, an empty text) is refused.
    """
    from legalir.base import atomic

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
    from legalir.base import atomic

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
