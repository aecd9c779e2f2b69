"""Evaluation: trec_eval-exact scores of any TREC run, plus the measures legal IR needs.

    from legalir import evaluate, trec
    res = evaluate.evaluate(trec.read_qrels("qrels.txt"), trec.read_run("run.trec"),
                            ["ndcg_cut.5,10", "star3_P.5"], judged_only=True)
    res["all"]["ndcg_cut_10"], res["per_topic"]["q1"]["star3_P_5"]

Measures are named once, in :mod:`legalir.evaluate.measures`; trec_eval's
are computed by pytrec_eval and summarised as trec_eval summarises them,
legalir's own (``recip_rank_cut``, ``recall_all``, ``starK_P``) in
:mod:`legalir.evaluate.custom`. Significance tests: :mod:`legalir.evaluate.stats`.
"""
from __future__ import annotations

import os

from legalir.evaluate.evaluator import (
    Evaluation,
    EvaluationError,
    coverage_notes,
    evaluate,
    format_trec_eval,
    judged_only,
    to_json,
    topic_coverage,
)
from legalir.evaluate.measures import DEFAULT_MEASURES, Measure, MeasureError, parse_measures, supported

__all__ = [
    "DEFAULT_MEASURES",
    "Evaluation",
    "EvaluationError",
    "Measure",
    "MeasureError",
    "coverage_notes",
    "evaluate",
    "evaluate_files",
    "format_trec_eval",
    "judged_only",
    "parse_measures",
    "supported",
    "to_json",
    "topic_coverage",
]


def evaluate_files(qrels_path: str | os.PathLike, run_path: str | os.PathLike, measures=None,
                   judged_only: bool = False, complete: bool = False, relevance_level: int = 1) -> Evaluation:
    """:func:`evaluate` on a qrels file and a run file, TREC or CRUMB JSONL
    (``runid`` = a TREC run's last tag, as trec_eval reports it)."""
    from legalir import runformats, trec

    qrels = trec.read_qrels(qrels_path)
    if runformats.sniff(run_path) == "crumb":
        run, run_id = runformats.read_crumb_run(run_path), "crumb"
    else:
        run, run_id = trec.read_run(run_path), trec.run_tag(run_path)
    return evaluate(qrels, run, measures, judged_only=judged_only, complete=complete,
                    relevance_level=relevance_level, run_id=run_id)
