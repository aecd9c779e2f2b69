"""ir_measures' ``Compat``: compatibility (Clarke, Vtyurina and Smucker, TOIS 2021), as its compat provider
computes it. The example of adding a measure: this module and ``tests/test_measure_compat.py``.

The rank-biased overlap (persistence ``p``) of the topic's ranking (ties by docid ascending, as
ir_measures ranks) with the ideal ranking: the documents graded above 0, by grade, ties by their run
score (0 when not retrieved), then in qrels order; ``normalize`` divides by the ideal's overlap with
itself. Judged-only and -M apply, as to every measure, before the ranking is read.
"""
from __future__ import annotations

from legalir.scoring.measures.base import IrFamily, IrMeasure, IrParam
from legalir.scoring.prepare import Topic


def rbo(ranking: list[str], ideal: list[str], p: float, depth: int) -> float:
    """Rank-biased overlap of two rankings to ``depth`` (> 0), normalised by the weights' sum."""
    seen_ranking: set[str] = set()
    seen_ideal: set[str] = set()
    score = normalizer = 0.0
    weight = 1.0
    for i in range(depth):
        if i < len(ranking):
            seen_ranking.add(ranking[i])
        if i < len(ideal):
            seen_ideal.add(ideal[i])
        score += weight * len(seen_ideal & seen_ranking) / (i + 1)
        normalizer += weight
        weight *= p
    return score / normalizer


def compatibility(m: IrMeasure, topic: Topic) -> float:
    p, normalize = m.param("p"), m.param("normalize")
    assert isinstance(p, float)  # IrParam below
    docs, judgements = topic.docs, topic.judgements
    ranking = topic.ranking_ir
    ideal = [d for d, g in judgements.items() if g > 0]
    # two stable sorts, as ir_measures sorts: by run score, then by grade
    ideal.sort(key=lambda d: docs.get(d, 0.0), reverse=True)  # defined: an unretrieved document's score is 0
    ideal.sort(key=lambda d: judgements[d], reverse=True)
    depth = max(len(ranking), len(ideal))
    if depth == 0:  # nothing retrieved (-J emptied it) and nothing relevant
        return 0.0  # defined: ir_measures scores a topic without documents 0
    score = rbo(ranking, ideal, p, depth)
    if normalize:
        best = rbo(ideal, ideal, p, depth)
        if best > 0.0:
            score /= best
    return score


PERSISTENCE = IrParam(0.95, lambda v: type(v) is float and 0.0 <= v <= 1.0,
                      "a decimal number between 0 and 1 (the persistence, e.g. Compat(p=0.8))")
NORMALIZE = IrParam(True, lambda v: type(v) is bool, "True or False")

IR_FAMILIES = (
    IrFamily("Compat", {"p": PERSISTENCE, "normalize": NORMALIZE}, "no", compute=compatibility,
             doc="rank-biased overlap with the ideal ranking (Clarke et al. 2021)"),
)
