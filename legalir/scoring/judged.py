"""The one judged-only rule (trec_eval's -J), used by eval, compare, report, finetune and serve.

The rule is written here; scoring applies it in one place, :func:`legalir.scoring.prepare.cut`.

A document is *judged* for a topic when the topic's qrels grade it 0 or
higher. No qrels line, or a negative grade (trec_eval's "in the pool, not
judged"), is unjudged. Judged-only scoring drops unjudged documents before
anything is computed; the ranks of the rest close up and ties keep their order.
"""
from __future__ import annotations

from collections.abc import Mapping


def is_judged(docid: str, judgements: Mapping[str, int]) -> bool:
    """True when ``judgements`` (one topic's ``{docid: grade}``) grade ``docid`` 0 or higher."""
    grade = judgements.get(docid)
    return grade is not None and grade >= 0


def drop_unjudged(docs: Mapping[str, float], judgements: Mapping[str, int]) -> dict[str, float]:
    """One topic's ranking ``{docid: score}`` without its unjudged documents."""
    return {d: s for d, s in docs.items() if is_judged(d, judgements)}
