"""ir_measures' ``RR``: pytrec_eval's ``recip_rank`` without a cut-off; ``RR@k`` as its MS MARCO provider
computes it (ties by docid ascending), which takes no ``judged_only`` with a cut-off."""
from __future__ import annotations

from legalir.scoring.measures.base import IrFamily, IrMeasure
from legalir.scoring.measures.ir_measures import RJ
from legalir.scoring.prepare import Topic


def _compute(m: IrMeasure, topic: Topic) -> float:
    j, rel = topic.judgements, m.rel
    ranked = topic.ranking_ir if m.cutoff is None else topic.ranking_ir[:int(m.cutoff)]
    first = next((i for i, d in enumerate(ranked) if j.get(d, -1) >= rel), None)
    return 0.0 if first is None else 1.0 / (first + 1)  # defined: no relevant document in the top k


IR_FAMILIES = (IrFamily("RR", RJ, "optional", plain="recip_rank", compute=_compute, cut_judged=False),)
