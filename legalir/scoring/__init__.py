"""Evaluation: trec_eval-exact scores of any TREC run, plus the measures legal IR needs.

    from legalir import scoring as evaluate, trec
    res = evaluate.evaluate(trec.read_qrels("qrels.txt"), trec.read_run("run.trec"),
                            ["ndcg_cut.5,10", "star3_P.5"], judged_only=True)
    res["all"]["ndcg_cut_10"], res["per_topic"]["q1"]["star3_P_5"]

Each measure family is one module of :mod:`legalir.scoring.measures` (found there by discovery);
trec_eval's are computed by pytrec_eval (:mod:`legalir.scoring.pytrec`, the one way in) and
summarised as trec_eval summarises them, the others by their module's ``compute``. Every measure
sees a topic after the one pass of :mod:`legalir.scoring.prepare` (-M, judged-only, ranking).
Files: :mod:`legalir.scoring.runfiles`. Significance tests: :mod:`legalir.scoring.stats`.
"""
from __future__ import annotations

from legalir.scoring.evaluator import (
    Evaluation,
    EvaluationError,
    NoCommonTopics,
    coverage_notes,
    evaluate,
    evaluate_batches,
    format_trec_eval,
    judged_only,
    to_json,
    topic_coverage,
)
from legalir.scoring.measures import DEFAULT_MEASURES, TREC_EVAL_MEASURES, Measure, MeasureError, supported
from legalir.scoring.parsing import parse_measures
from legalir.scoring.runfiles import evaluate_files

__all__ = [
    "DEFAULT_MEASURES",
    "Evaluation",
    "EvaluationError",
    "Measure",
    "MeasureError",
    "NoCommonTopics",
    "TREC_EVAL_MEASURES",
    "coverage_notes",
    "evaluate",
    "evaluate_batches",
    "evaluate_files",
    "format_trec_eval",
    "judged_only",
    "parse_measures",
    "supported",
    "to_json",
    "topic_coverage",
]
