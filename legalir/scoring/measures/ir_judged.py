"""ir_measures' ``Judged[@k]`` (its judged provider): the share of the top k with a qrels line, ties by
docid ascending; an empty ranking scores 0."""
from __future__ import annotations

from legalir.scoring.measures.base import IrFamily, IrMeasure
from legalir.scoring.prepare import Topic


def _compute(m: IrMeasure, topic: Topic) -> float:
    ranked = topic.ranking_ir if m.cutoff is None else topic.ranking_ir[:int(m.cutoff)]
    j = topic.judgements
    return sum(d in j for d in ranked) / len(ranked) if ranked else 0.0  # defined: nothing retrieved


IR_FAMILIES = (IrFamily("Judged", {}, "optional", compute=_compute),)
