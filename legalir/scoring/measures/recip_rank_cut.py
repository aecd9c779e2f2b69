"""``recip_rank_cut.k``: MRR@k, which trec_eval lacks (its ``recip_rank`` reads the whole ranking)."""
from __future__ import annotations

from legalir.scoring.measures.base import Context, Family, Measure, Value
from legalir.scoring.prepare import Topic


def _compute(m: Measure, topic: Topic, ctx: Context) -> dict[str, Value]:
    j = topic.judgements
    first = next((i for i, d in enumerate(topic.ranking) if j.get(d, -1) >= ctx.level), None)
    return {name: 1.0 / (first + 1) if first is not None and first < k else 0.0  # defined: no relevant in top k
            for name, k in zip(m.output_names(), m.effective_params())}


FAMILIES = (
    Family("recip_rank_cut", "legalir", params="int", defaults=(10,), compute=_compute,
           doc="MRR@k: reciprocal rank of the first relevant document within the top k, else 0"),
)
