"""The plain-file fast path shared by the qrels and run readers, and C's ``atol``/``atof``/``isspace``
as trec_eval reads fields with them."""
from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator
from itertools import compress
from operator import ne

from legalir.trec.model import _decode

_CHUNK = 1 << 16  # small enough that the fields of one piece stay in the CPU cache (2x faster than 1 MiB)



def _numbers(text: str, column: list[str], convert) -> list | None:
    """``column`` (a line piece's grades or scores) converted with ``int``/``float``; None when a value is
    not a plain number, or holds ``_`` (Python reads 1_0 as 10, C's atol/atof as 1: the line reader decides)."""
    if "_" in text and "_" in "".join(column):
        return None
    try:
        return list(map(convert, column))
    except ValueError:
        return None


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
_C_SPACE = frozenset(_WS_CHARS)
_ASCII_WS = re.compile(r"[ \t\n\r\x0b\x0c]+")


def _splits_off_c(text: str) -> bool:
    """True when ``text`` holds a character str.split() splits on and C's isspace does not."""
    return "\x1c" in text or "\x1d" in text or "\x1e" in text or "\x1f" in text
_ATOL = re.compile(r"[ \t\n\r\x0b\x0c]*([+-]?[0-9]+)")
_ZERO_FRACTION = re.compile(r"\.0*")
_FRACTION = re.compile(r"\.[0-9]+")


def _atol(text: str) -> tuple[int | None, str]:
    """(value, ignored tail) as C's atol reads ``text``; value None when no number starts it."""
    m = _ATOL.match(text)
    if not m:
        return None, text
    return int(m.group(1)), text[m.end():]


_DIGITS = frozenset("0123456789")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_NAN_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")


def _run_of(text: str, i: int, chars: frozenset) -> int:
    """The index after the run of ``chars`` that starts at ``i``."""
    n = len(text)
    while i < n and text[i] in chars:
        i += 1
    return i


def strtod(text: str) -> tuple[float, int]:
    """``(value, characters read)`` exactly as glibc's ``strtod`` reads ``text`` in the C locale.

    The one number parser of the run readers (trec_eval 10.0 reads scores with ``atof``, which is
    ``strtod`` keeping the value): leading C whitespace, an optional sign, then the longest of
    ``inf``/``infinity``, ``nan``/``nan(chars)``, a hexadecimal float (``0x1.8p3``; ``0x`` with no
    hexadecimal digit after it reads as ``0``) or a decimal one (``1.5e3``; an exponent without
    digits is not read). What follows is left unread. No number at all reads as ``(0.0, 0)``, as
    ``atof("abc")`` is 0. Values are correctly rounded, as glibc's are (Python's ``float`` and
    ``float.fromhex`` round correctly too); overflow gives an infinity, underflow 0 or a subnormal.
    A plain scan, no regular expression: linear in the length of ``text``.

    Parameters
    ----------
    text : str

    Returns
    -------
    tuple of (float, int)
        The value and how many characters of ``text`` it used (0: no number).

    Examples
    --------
    >>> strtod("0x10"), strtod("1.5abc"), strtod(" +inf"), strtod("abc")
    ((16.0, 4), (1.5, 3), (inf, 5), (0.0, 0))
    """
    n = len(text)
    i = _run_of(text, 0, _C_SPACE)
    start = i
    if i < n and text[i] in "+-":
        i += 1
    negative = text[start:i] == "-"
    word = text[i:i + 8].lower()
    if word.startswith("inf"):
        return (-math.inf if negative else math.inf), i + (8 if word == "infinity" else 3)
    if word.startswith("nan"):
        end = i + 3
        if end < n and text[end] == "(":
            close = _run_of(text, end + 1, _NAN_CHARS)
            if close < n and text[close] == ")":
                end = close + 1
        return (-math.nan if negative else math.nan), end
    if text[i:i + 2] in ("0x", "0X"):
        j = _run_of(text, i + 2, _HEX_DIGITS)
        digits = j - (i + 2)
        if j < n and text[j] == ".":
            k = _run_of(text, j + 1, _HEX_DIGITS)
            digits += k - (j + 1)
            j = k
        if digits:
            j = _exponent(text, j, "pP")
            try:
                value = float.fromhex(text[i:j])
            except OverflowError:
                value = math.inf
            return (-value if negative else value), j
        # "0x" and no hexadecimal digit: the "0" is the number
    j = _run_of(text, i, _DIGITS)
    digits = j - i
    if j < n and text[j] == ".":
        k = _run_of(text, j + 1, _DIGITS)
        digits += k - (j + 1)
        j = k
    if not digits:
        return 0.0, 0
    j = _exponent(text, j, "eE")
    return float(text[start:j]), j


def _exponent(text: str, j: int, letters: str) -> int:
    """The index after an exponent (``e``/``p``, a sign, digits) at ``j``; ``j`` itself when there is none."""
    if j < len(text) and text[j] in letters:
        k = j + 1
        if k < len(text) and text[k] in "+-":
            k += 1
        end = _run_of(text, k, _DIGITS)
        if end > k:
            return end
    return j


def _atof(text: str) -> tuple[float | None, str]:
    """(value, ignored tail) as C's atof reads ``text`` (:func:`strtod`); value None when no number starts it."""
    value, used = strtod(text)
    if not used:
        return None, text
    return value, text[used:]
