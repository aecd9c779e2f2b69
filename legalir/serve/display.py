"""What a hit shows: the query's terms, a snippet around them, the record's citation and heading path."""
from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Iterable, Mapping
from typing import Any

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


def snippet(text: str, terms: Iterable[str], width: int = SNIPPET_WORDS) -> str:
    """The ``width``-word window of ``text`` holding the most query terms (the start when none).

    Written for speed (it runs for every hit a server answers): words found by one ``findall``, hits
    by a set lookup of each word's lower case, the best window found among the hits' positions only, and
    character offsets taken only for the window. The answer is the one of sliding a window over every
    folded word (``tests/test_serve_hostile.py`` compares both on generated texts).
    """
    words = _WORD.findall(text)
    if len(words) <= width:
        return " ".join(text.split())
    forms = _hit_forms(tuple(terms))
    best_at = 0
    # the hits' word positions, found without a Python step per word (lower case, set lookup, compress: all C)
    at = list(itertools.compress(range(len(words)), map(forms.__contains__, map(str.lower, words)))) if forms else []
    if at:
        # the first window start holding the most hits: the count only rises where a window's last word
        # reaches a hit, so the candidates are 0 and those starts
        last = len(words) - width
        best, best_at = bisect.bisect_left(at, width), 0
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
    end = best_at + width
    window = list(itertools.islice(_WORD.finditer(text), best_at, end))  # the skipped matches cost C time only
    start_char = 0 if best_at == 0 else window[0].start()
    end_char = len(text) if end >= len(words) else window[-1].end()
    out = " ".join(text[start_char:end_char].split())
    return ("… " if best_at > 0 else "") + out + (" …" if end < len(words) else "")


def describe(rec: Mapping[str, Any]) -> dict:
    """Display fields of a collection record: citation, heading path, state, category, body text.

    The citation is the ``citation`` (or ``source``) field; the heading path the
    ``heading_path`` (or ``path``) field, else, for statutes written as
    ``citation / heading > path / text`` (Housing's default text), the line
    after the citation when it holds ``' > '``.
    """
    fields = {k: v for k, v in rec.items() if k not in ("id", "contents")}
    text = str(rec.get("contents", ""))
    citation = fields.get("citation") or fields.get("source") or None
    heading = fields.get("heading_path") or fields.get("path") or None
    lines = text.split("\n")
    if citation and lines and lines[0].strip() == str(citation).strip():
        lines = lines[1:]
        if heading is None and lines and " > " in lines[0]:
            heading = lines[0].strip()
            lines = lines[1:]
    return {"citation": citation, "heading_path": heading, "state": fields.get("state"),
            "category": fields.get("category"), "fields": fields, "body": "\n".join(lines).strip()}
