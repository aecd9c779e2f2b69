"""Run formats other than TREC: CRUMB's JSONL runs, format sniffing, conversion.

CRUMB's evaluator (``crumb_eval``) reads one JSON object per line and query::

    {"query": {"id": "q1"}, "items": [{"id": "d1", "score": 12.5}, {"id": "d7", "score": 11.0}]}

The score of each item sits in the item (``score``), which is what
``crumb_eval`` reads. The dataset description and the evaluator's own
in-memory form (``QueryAssociatedItems``) also name the scores as a list
beside the items (``"item_scores": [12.5, 11.0]``). :func:`read_crumb_run`
accepts either (both must agree when both are present);
:func:`write_crumb_run` writes both, so the file is read correctly by
``crumb_eval`` and by anything that follows the description.

Document and query ids in a TREC file cannot hold whitespace, so collections
store such ids with whitespace and ``%`` percent-encoded (:func:`trec_id`);
conversion to CRUMB's format decodes them (:func:`original_id`), so a run
converted to CRUMB JSONL names CRUMB's own ids.
"""
from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path

from legalir import trec
from legalir.trec import FormatError, Run

FORMATS = ("trec", "crumb")

# ---------------------------------------------------------------- ids

_NEEDS_ESCAPE = re.compile(r"[%\s]")
_ESCAPED = re.compile(r"%(?:25|[0-9A-F]{2}(?:%[89AB][0-9A-F])*)")


def trec_id(identifier: str) -> str:
    """An id that a whitespace-separated TREC file can hold.

    Whitespace characters and ``%`` are percent-encoded (UTF-8 bytes, upper
    case hex); every other character is kept, so ordinary ids are unchanged.
    The mapping is reversed exactly by :func:`original_id`.
    """
    s = str(identifier)
    if not _NEEDS_ESCAPE.search(s):
        return s
    return _NEEDS_ESCAPE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode("utf-8")), s)


def original_id(identifier: str) -> str:
    """Inverse of :func:`trec_id`: decodes only what :func:`trec_id` encodes (``%`` and whitespace)."""
    s = str(identifier)
    if "%" not in s:
        return s

    def decode(m: re.Match) -> str:
        text = m.group()
        try:
            raw = bytes(int(h, 16) for h in text[1:].split("%")).decode("utf-8")
        except UnicodeDecodeError:
            return text
        if raw == "%" or raw.isspace():
            return raw
        return text  # not something trec_id writes: keep literally

    return _ESCAPED.sub(decode, s)


# ---------------------------------------------------------------- CRUMB JSONL


def _number(value, path: Path, n: int, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FormatError(path, n, f"{what} {value!r} is not a number")
    v = float(value)
    if math.isnan(v):
        raise FormatError(path, n, f"{what} is NaN")
    return v


def read_crumb_run(path: str | os.PathLike, *, decode_ids: bool = False, data: bytes | None = None) -> Run:
    """Read a CRUMB JSONL run into ``{qid: {docid: score}}``.

    Every line must hold ``query.id`` and ``items`` (objects with ``id``);
    scores come from each item's ``score`` or from ``item_scores``. With
    ``decode_ids=False`` (default) ids are made TREC-safe with
    :func:`trec_id`, so the run matches a legalir collection's qrels.
    """
    p = trec._display(path)
    run: Run = {}
    for n, rec in trec.iter_jsonl(path, data):
        query = rec.get("query")
        if not isinstance(query, dict) or query.get("id") in (None, ""):
            raise FormatError(p, n, "missing query id (expected \"query\": {\"id\": ...})")
        items = rec.get("items")
        if not isinstance(items, list):
            raise FormatError(p, n, "missing \"items\" list")
        scores = rec.get("item_scores")
        if scores is not None and (not isinstance(scores, list) or len(scores) != len(items)):
            raise FormatError(p, n, f"\"item_scores\" must be a list as long as \"items\" ({len(items)})")
        qid = str(query["id"])
        qid = qid if decode_ids else trec_id(qid)
        if qid in run:
            raise FormatError(p, n, f"query {query['id']!r} appears on more than one line")
        docs: dict[str, float] = {}
        for i, item in enumerate(items):
            if not isinstance(item, dict) or item.get("id") in (None, ""):
                raise FormatError(p, n, f"item {i} has no \"id\"")
            in_item = item.get("score")
            listed = scores[i] if scores is not None else None
            if in_item is None and listed is None:
                raise FormatError(p, n, f"item {i} ({item['id']!r}) has no score (neither \"score\" in the item "
                                        f"nor \"item_scores\")")
            value = _number(in_item if in_item is not None else listed, p, n, f"score of item {i}")
            if in_item is not None and listed is not None and _number(listed, p, n, f"item_scores[{i}]") != value:
                raise FormatError(p, n, f"item {i} ({item['id']!r}): \"score\" {in_item!r} disagrees with "
                                        f"item_scores[{i}] {listed!r}")
            docid = str(item["id"])
            docid = docid if decode_ids else trec_id(docid)
            if docid in docs:
                raise FormatError(p, n, f"duplicate item {item['id']!r} for query {query['id']!r}")
            docs[docid] = value
        run[qid] = docs
    if not run:
        raise FormatError(p, None, "no queries in file")
    return run


def write_crumb_run(path: str | os.PathLike, run: Mapping[str, Mapping[str, float]], *,
                    depth: int | None = None, decode_ids: bool = True, inputs=(), force: bool = False) -> int:
    """Write a CRUMB JSONL run; returns the number of items written.

    Queries in sorted order, items in trec_eval's order (score descending,
    ties by id descending), each item with its ``score``, plus the
    ``item_scores`` list. Ids written by :func:`trec_id` are decoded back to
    the original ids (``decode_ids``). Written to a temporary name, then renamed,
    under the output rule (``inputs``, ``force``: :func:`legalir.base.atomic.check_file`).
    """
    from legalir.base import atomic

    trec.check_depth(depth, path)
    n = 0
    dec = original_id if decode_ids else str
    with atomic.open_file(path, output=True, inputs=inputs, force=force) as f:
        for qid in sorted(run):
            ranked = trec.ranking({d: float(s) for d, s in run[qid].items()})
            if depth is not None:
                ranked = ranked[:depth]
            rec = {
                "query": {"id": dec(qid)},
                "items": [{"id": dec(d), "score": s} for d, s in ranked],
                "item_scores": [s for _, s in ranked],
            }
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            n += len(ranked)
    return n


# ---------------------------------------------------------------- sniffing, conversion


def sniff(path: str | os.PathLike) -> str:
    """``"crumb"`` when the first non-blank line is a JSON object, else ``"trec"``."""
    return sniff_bytes(trec.read_bytes(path), path)


def sniff_bytes(data: bytes, path: str | os.PathLike = "-") -> str:
    """:func:`sniff` on a file's bytes (already read: a pipe cannot be read twice)."""
    for line in data[:1 << 20].split(b"\n", 64):  # (not all of a large file: split copies the rest)
        if line.strip():
            return "crumb" if line.lstrip().startswith(b"{") else "trec"
    raise FormatError(trec._display(path), None, "no run lines in file")


def read_any_run(path: str | os.PathLike) -> Run:
    """Read a TREC run or a CRUMB JSONL run, whichever the file is (see :func:`sniff`); read once."""
    data = trec.read_bytes(path)
    return read_crumb_run(path, data=data) if sniff_bytes(data, path) == "crumb" else trec.read_run(path, data=data)


def convert_run(src: str | os.PathLike, dst: str | os.PathLike, to: str, *, tag: str = "legalir",
                depth: int | None = None, force: bool = False) -> int:
    """Convert a run between TREC and CRUMB JSONL (the input format is sniffed); returns lines/items written.

    ``dst`` may not be ``src``, nor a file legalir did not write unless ``force``
    (:func:`legalir.base.atomic.check_file`)."""
    from legalir.base import atomic

    if to not in FORMATS:
        raise ValueError(f"unknown run format {to!r}; known: {', '.join(FORMATS)}")
    atomic.check_file(dst, [src], force=force)
    run = read_any_run(src)
    if to == "trec":
        return trec.write_run(dst, run, tag=tag, depth=depth, inputs=[src], force=force)
    return write_crumb_run(dst, run, depth=depth, inputs=[src], force=force)
