"""``recall_all.k``: 1 when every relevant document is in the top k (a recall lower bound)."""
from __future__ import annotations

from legalir.scoring.measures.base import DEFAULT_CUTOFFS, Context, Family, Measure, Value
from legalir.scoring.prepare import Topic


def _compute(m: Measure, topic: Topic, ctx: Context) -> dict[str, Value]:
    relevant = {d for d, r in topic.judgements.items() if r >= ctx.level}
    # a topic with no relevant document scores 0, as trec_eval's recall does; else the measure is 0 or 1
    return {name: 1.0 if relevant and relevant.issubset(topic.ranking[:k]) else 0.0  # defined: 0 or 1
            for name, k in zip(m.output_names(), m.effective_params())}


FAMILIES = (
    Family("recall_all", "legalir", params="int", defaults=DEFAULT_CUTOFFS, compute=_compute,
           doc="1 if ALL the topic's relevant documents are in the top k, else 0 (recall lower bound; "
               "0 for a topic with no relevant document)"),
)
