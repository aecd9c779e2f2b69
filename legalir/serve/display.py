"""What a hit shows: the query's terms, a snippet around them, the record's citation and heading path."""
from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

try:  # the word counting of snippets, in C (built by `pip install`; optional: the same in Python otherwise)
    from legalir._plain import ascii_words as _ascii_words
    from legalir._plain import hit_words as _hit_words
    from legalir._plain import word_span as _word_span
except ImportError:  # pragma: no cover - not built, or built before it had them
    _ascii_words = _hit_words = _word_span = None

SNIPPET_WORDS = 40
#: Lucene's default English stop words (what the index ignores), not highlighted
STOPWORDS = frozenset("a an and are as at be but by for if in into is it no not of on or such that the their then "
                      "there these they this to was will with".split())
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


_SUFFIXES = ("ing", "ed", "es", "s", "ly")


@functools.lru_cache(maxsize=1 << 16)
def norm_term(word: str) -> str:
    """A word folded for highlighting (the page's script does the same): lower case, crude suffixes off."""
    w = word.lower()
    for suffix in _SUFFIXES:
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


def query_terms(q: str) -> list[str]:
    """The query's folded terms, stop words left out, in first-seen order."""
    out: list[str] = []
    for w in _WORD.findall(q):
        if w.lower() in STOPWORDS:
            continue
        t = norm_term(w)
        if t not in out:
            out.append(t)
    return out


@functools.lru_cache(maxsize=4096)
def _hit_forms(terms: tuple[str, ...]) -> frozenset[str]:
    """The lower-case words that fold to one of ``terms`` (:func:`norm_term` only lowers and takes a suffix
    off, so they are each term and the term with each suffix that norm_term takes off again); built once a
    query, not once a hit."""
    return frozenset(c for t in set(terms) for c in (t, *(t + x for x in _SUFFIXES)) if norm_term(c) == t)


#: ASCII bytes as word (``a``) or not (`` ``): a word of :data:`_WORD` in text without non-ASCII word characters
#: is a run of ``a`` in ``text.encode("ascii", "replace").translate(_CLASS)``
_CLASS = bytes(ord("a") if chr(i).isascii() and chr(i).isalnum() else ord(" ") for i in range(256))
#: a word character outside ASCII (a text holding one takes the general path)
_NON_ASCII_WORD = re.compile(r"[^\W_\x00-\x7f]")


@functools.lru_cache(maxsize=4096)
def _hit_prefixes(terms: tuple[str, ...]) -> tuple[bytes, ...]:
    """The terms that some hit form starts with (every form is its term and a suffix), as ASCII bytes, none that
    another holds at its start (its occurrences are the other's): what :func:`_hit_starts` looks for."""
    forms = _hit_forms(terms)
    found = sorted({t for t in set(terms) if t and t.isascii() and any(f.startswith(t) for f in forms)}, key=len)
    out: list[str] = []
    for t in found:
        if not any(t.startswith(p) for p in out):
            out.append(t)
    return tuple(t.encode("ascii") for t in out)


def _hit_starts(low: bytes, cls: bytes, terms: tuple[str, ...]) -> list[int]:
    """The character offsets, in order, of the words of an ASCII text (``low``: its bytes in lower case; ``cls``:
    its classes, :data:`_CLASS`) whose lower case is a hit form of ``terms``: each term found by ``bytes.find`` (C),
    kept where a word starts there and the whole word is a form."""
    forms = _hit_forms(terms)
    starts: set[int] = set()
    for prefix in _hit_prefixes(terms):
        at = low.find(prefix)
        while at >= 0:
            if at == 0 or cls[at - 1] == 32:  # a word starts here
                end = cls.find(b" ", at)
                if (low[at:] if end < 0 else low[at:end]).decode("ascii") in forms:
                    starts.add(at)
            at = low.find(prefix, at + 1)
    return sorted(starts)


def snippet(text: str, terms: Iterable[str], width: int = SNIPPET_WORDS) -> str:
    """The ``width``-word window of ``text`` holding the most query terms (the start when none).

    Written for speed (it runs for every hit a server answers). A text with no word character outside ASCII
    (legal text: ``§`` and curly quotes are not word characters) is never split into words: its words are runs
    of one class in the bytes ``translate`` makes, counted by ``bytes.count``, the hits found by ``bytes.find``
    of each term, and the words read (by the regular expression) only in the window. Any other text: its words
    found by one ``findall``, hits by a set lookup of each word's lower case. Both give the answer of sliding a
    window over every folded word (``tests/test_serve_hostile.py`` compares them with it, and each other, on
    generated texts).
    """
    terms = tuple(terms)
    if text.isascii() or (_ascii_words(text) if _ascii_words is not None else not _NON_ASCII_WORD.search(text)):
        return _snippet_ascii(text, terms, width)
    return _snippet_words(text, terms, width)


def _window(text: str, at: list[int], count: int, width: int) -> int:
    """The first word of the ``width``-word window shown: the one holding the most of the hits at word
    positions ``at`` (sorted) among ``count`` words, centred on its first and last hit; 0 when none."""
    best_at = 0
    if at:
        # the first window start holding the most hits: the count only rises where a window's last word
        # reaches a hit, so the candidates are 0 and those starts
        last = count - width
        best = bisect.bisect_left(at, width)
        for p in at:
            s = p - width + 1
            if 1 <= s <= last:
                n = bisect.bisect_left(at, s + width) - bisect.bisect_left(at, s)
                if n > best:
                    best, best_at = n, s
        if best > 0:  # centre the window on its first and last query term
            first = at[bisect.bisect_left(at, best_at)]
            final = at[bisect.bisect_left(at, best_at + width) - 1]
            best_at = max(0, min(last, (first + final) // 2 - width // 2))
    return best_at


def _shown(text: str, start_char: int, end_char: int, best_at: int, count: int, width: int) -> str:
    """The snippet of words ``best_at`` to ``best_at + width`` of ``count`` (``start_char``: where the first starts,
    ``end_char``: where the last ends; each read only where the window does not reach that end of the text)."""
    end = best_at + width
    start_char = 0 if best_at == 0 else start_char
    end_char = len(text) if end >= count else end_char
    out = " ".join(text[start_char:end_char].split())
    return ("… " if best_at > 0 else "") + out + (" …" if end < count else "")


def _hit_words_py(raw: bytes, terms: tuple[str, ...], width: int) -> tuple[int, list[int], list[int]]:
    """``(words, hit offsets, hit word positions)`` of ``raw`` (an ASCII text's bytes), as ``legalir._plain.hit_words``
    finds them (the hits only when there are more than ``width`` words): words counted by ``bytes.count`` of the
    class bytes ``translate`` makes, hits found by ``bytes.find`` of each term."""
    cls = raw.translate(_CLASS)
    lead = cls[:1] == b"a"
    count = cls.count(b" a") + lead  # words: runs of "a"
    if count <= width:
        return count, [], []
    starts = _hit_starts(raw.lower(), cls, terms) if _hit_forms(terms) else []
    # each hit's word position: the words starting before it, counted from the previous hit on (one pass in all)
    at: list[int] = []
    prev, n = 0, 0
    for c in starts:
        if not at:
            n = cls.count(b" a", 0, c) + (lead and c > 0)
        else:  # the word starts in [prev, c): the pairs " a" starting in [prev - 1, c - 1)
            n += cls.count(b" a", prev - 1, c) if prev > 0 else cls.count(b" a", 0, c) + lead
        at.append(n)
        prev = c
    return count, starts, at


def _snippet_ascii(text: str, terms: tuple[str, ...], width: int, c_off: bool = False) -> str:
    """:func:`snippet` of a text with no word character outside ASCII (each other character one ``?`` byte, not a
    word character: character offsets are byte offsets). ``c_off``: the Python path even where the C one is
    built (the tests compare them)."""
    raw = text.encode("ascii", "replace")
    if _hit_words is not None and not c_off:  # the words counted and the hits found in one pass, in C
        count, starts, at = _hit_words(raw, _hit_prefixes(terms), _hit_forms(terms))
    else:
        count, starts, at = _hit_words_py(raw, terms, width)
    if count <= width:
        return " ".join(text.split())
    best_at = _window(text, at, count, width)
    # the window's words, read from the nearest hit at or before it (else the start): a few words of regex
    i = bisect.bisect_right(at, best_at) - 1
    anchor_char, anchor_word = (starts[i], at[i]) if i >= 0 else (0, 0)
    skip = best_at - anchor_word
    if _word_span is not None and not c_off:
        start_char, end_char = _word_span(raw, anchor_char, skip, skip + width - 1)
    else:
        window = list(itertools.islice(_WORD.finditer(text, anchor_char), skip, skip + width))
        start_char, end_char = window[0].start(), window[-1].end()
    return _shown(text, start_char, end_char, best_at, count, width)


def _snippet_words(text: str, terms: tuple[str, ...], width: int) -> str:
    """:func:`snippet` of any text: its words found by one ``findall``."""
    words = _WORD.findall(text)
    if len(words) <= width:
        return " ".join(text.split())
    forms = _hit_forms(terms)
    # the hits' word positions, found without a Python step per word (lower case, set lookup, compress: all C)
    at = list(itertools.compress(range(len(words)), map(forms.__contains__, map(str.lower, words)))) if forms else []
    best_at = _window(text, at, len(words), width)
    window = list(itertools.islice(_WORD.finditer(text), best_at, best_at + width))  # skipped matches: C time
    return _shown(text, window[0].start(), window[-1].end(), best_at, len(words), width)


#: words at each end of a text that :func:`duplicates` compares before normalising whole texts
_ENDS = 8


def _same(text: str) -> str:
    """``text`` with whitespace and case aside: what :func:`duplicates` compares."""
    return " ".join(text.split()).lower()


def _ends(text: str) -> tuple[str, str]:
    """A necessary condition for two texts' :func:`_same` to be equal, at a few words' cost: the first and the
    last :data:`_ENDS` words, folded as :func:`_same` folds them. ``_same`` is the words, each lowered on its own
    (``str.lower`` reads a letter's context, the final sigma, only within its word: whitespace is neither cased
    nor case-ignorable, and lowering makes no whitespace), joined by one space; equal ``_same`` means equal
    words, so equal ends."""
    head = text.split(None, _ENDS)[:_ENDS]
    tail = text.rsplit(None, _ENDS)[1:] if len(head) == _ENDS else []
    return " ".join(head).lower(), " ".join(tail).lower()


def duplicates(texts: Sequence[str | None]) -> list[int | None]:
    """For each text, the position of the first earlier one equal to it, whitespace and case aside (``None``:
    none, or no text, or a text of whitespace only): contracts repeat boilerplate clauses word for word.

    Whole texts are normalised only where their first and last words (:func:`_ends`) meet another's: most hits
    are told apart without splitting them (``tests/test_serve_hostile.py`` compares it with normalising every
    text, on generated texts).
    """
    by_ends: dict[tuple[str, str], list[int]] = {}
    for i, t in enumerate(texts):
        if t:
            by_ends.setdefault(_ends(t), []).append(i)
    out: list[int | None] = [None] * len(texts)
    for group in by_ends.values():
        if len(group) < 2:
            continue
        first: dict[str, int] = {}
        for i in group:  # in order: each group's members ascend
            same = _same(texts[i])  # type: ignore[arg-type]
            if same:
                if same in first:
                    out[i] = first[same]
                else:
                    first[same] = i
    return out


def describe(rec: Mapping[str, Any]) -> dict:
    """Display fields of a collection record: citation, heading path, state, category, body text.

    The citation is the ``citation`` (or ``source``) field; the heading path the
    ``heading_path`` (or ``path``) field, else, for statutes written as
    ``citation / heading > path / text`` (Housing's default text), the line
    after the citation when it holds ``' > '``.
    """
    fields = {k: v for k, v in rec.items() if k not in ("id", "contents")}
    return {**shown(str(rec.get("contents", "")), fields), "fields": fields}


def shown(text: str, fields: Mapping[str, Any]) -> dict:
    """:func:`describe` of a record's text and other fields: ``citation``, ``heading_path``, ``state``,
    ``category`` and ``body`` (the text without its citation and heading lines), reading only those lines."""
    citation = fields.get("citation") or fields.get("source") or None
    heading = fields.get("heading_path") or fields.get("path") or None
    body = text
    if citation:
        cut = text.find("\n")
        if (text if cut < 0 else text[:cut]).strip() == str(citation).strip():
            body = "" if cut < 0 else text[cut + 1:]
            if heading is None and cut >= 0:
                cut = body.find("\n")
                first = body if cut < 0 else body[:cut]
                if " > " in first:
                    heading = first.strip()
                    body = "" if cut < 0 else body[cut + 1:]
    return {"citation": citation, "heading_path": heading, "state": fields.get("state"),
            "category": fields.get("category"), "body": body.strip()}
