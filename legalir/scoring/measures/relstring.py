"""``relstring``: trec_eval's relevance string of the top N documents (per topic only; pytrec_eval cannot
return a string)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from legalir.scoring.measures.base import Context, Family, Measure, Value
from legalir.scoring.prepare import Topic


def relstring(ranked: Sequence[str], judgements: Mapping[str, int], n: int = 10) -> str:
    """One character per top-N document: 0-9 the relevance; '>' above 9; '-' not in the qrels; '.' in the
    qrels with a negative (unjudged) relevance."""
    out = []
    for d in ranked[:n]:
        if d not in judgements:
            out.append("-")
        else:
            r = judgements[d]
            out.append("." if r < 0 else (str(r) if r <= 9 else ">"))
    return "".join(out)


def _compute(m: Measure, topic: Topic, ctx: Context) -> dict[str, Value]:
    return {m.output_names()[0]: relstring(topic.ranking, topic.judgements, m.effective_params()[0])}


FAMILIES = (
    Family("relstring", "legalir", "none", "str", params="int1", defaults=(10,), summary=False, compute=_compute,
           reset="", doc="trec_eval's relevance string of the top N documents (per topic only)"),
)
