"""The words two texts are compared by: the one splitter of the statutes benchmark's leak rules.

:func:`words` is what :mod:`legalir.datasets.statutes` compares a train paragraph with the held-out ones by (a train
paragraph whose words are a held-out paragraph's is no training question) and what :mod:`legalir.collections.anchors`
cuts anchors from. No regular expression: a linear scan of the characters.
"""
from __future__ import annotations

__all__ = ["words", "words_at"]


def words(text: str) -> list[str]:
    """The words of ``text``: runs of letters and digits, casefolded, a run holding a digit dropped
    (``"§ 25-16-403 of the Code"`` -> ``["of", "the", "code"]``).

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    list of str
        Its words, in order.
    """
    return [w for w, _ in words_at(text)]


def words_at(text: str) -> list[tuple[str, int]]:
    """:func:`words` with each word's character offset in ``text``.

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    list of (str, int)
        Each word and the offset of its first character.
    """
    out: list[tuple[str, int]] = []
    start = None
    for i, ch in enumerate(text + " "):
        if ch.isalnum():
            if start is None:
                start = i
        elif start is not None:
            w = text[start:i].casefold()
            if not any(c.isdigit() for c in w):
                out.append((w, start))
            start = None
    return out
