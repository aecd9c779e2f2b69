"""Measures trec_eval lacks, computed per topic from a ranked list.

Every function takes ``ranked``: the topic's docids in trec_eval's order
(score descending, ties by docid descending; unjudged documents already
dropped under -J) and ``judged``: the topic's qrels ``{docid: relevance}``.
A document absent from ``judged`` is unjudged; a negative relevance is
trec_eval's "in the pool but unjudged". Neither is ever relevant.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence


def recip_rank_cut(ranked: Sequence[str], judged: Mapping[str, int], k: int, level: int = 1) -> float:
    """MRR@k: 1/rank of the first document with relevance >= level in the top k, else 0."""
    for i, d in enumerate(ranked[:k]):
        if judged.get(d, -1) >= level:
            return 1.0 / (i + 1)
    return 0.0


def recall_all(ranked: Sequence[str], judged: Mapping[str, int], k: int, level: int = 1) -> float:
    """1 if every document with relevance >= level is in the top k, else 0.

    A topic with no relevant document scores 0, as trec_eval's recall does.
    """
    relevant = {d for d, r in judged.items() if r >= level}
    if not relevant:
        return 0.0
    return 1.0 if relevant.issubset(ranked[:k]) else 0.0  # defined: the measure is 0 or 1


def star_precision(ranked: Sequence[str], judged: Mapping[str, int], stars: int, n: int,
                   normalised: bool = True) -> float | None:
    """ACORD's K-star precision@N; ``None`` when the topic has no document rated >= K stars.

    Stars = relevance + 1 (ACORD stores stars - 1), so ">= K stars" is
    relevance >= K - 1. Value = (documents rated >= K stars in the top N)
    / min(N, number of the topic's documents rated >= K stars); with
    ``normalised=False``, / N (the form of the ACORD paper's tables).
    """
    threshold = stars - 1
    good = sum(1 for r in judged.values() if r >= threshold)
    if good == 0:
        return None
    hits = sum(1 for d in ranked[:n] if judged.get(d, -1) >= threshold)
    return hits / (min(n, good) if normalised else n)


def relstring(ranked: Sequence[str], judged: Mapping[str, int], n: int = 10) -> str:
    """trec_eval's relstring: one character per top-N document.

    0-9: the relevance; '>' above 9; '-' not in the qrels; '.' in the qrels
    with a negative (unjudged) relevance.
    """
    out = []
    for d in ranked[:n]:
        if d not in judged:
            out.append("-")
        else:
            r = judged[d]
            out.append("." if r < 0 else (str(r) if r <= 9 else ">"))
    return "".join(out)
