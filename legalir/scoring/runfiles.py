"""Score a qrels file and a run file (TREC or CRUMB JSONL), reading a TREC run topic by topic."""
from __future__ import annotations

import os
from typing import Any

from legalir import trec
from legalir.errors import OptionError
from legalir.scoring.evaluator import Evaluation, evaluate, evaluate_batches
from legalir.scoring.exceptions import NoCommonTopics
from legalir.scoring.parsing import parse_measures

__all__ = ["evaluate_files"]


def evaluate_files(qrels_path: str | os.PathLike, run_path: str | os.PathLike, measures: Any = None,
                   judged_only: bool = False, complete: bool = False, relevance_level: int = 1,
                   version: str = "10", max_docs: int | None = None, num_docs: int = 0,
                   skip_missing: bool = False, qrels: trec.Qrels | None = None) -> Evaluation:
    """:func:`evaluate` on a qrels file and a run file, TREC or CRUMB JSONL
    (``runid`` = a TREC run's last tag, as trec_eval reports it). Either path may be
    ``-`` (standard input); each file is read whole, once. What the readers report
    (repeated qrels lines, ignored fields) is added to the result's ``notes``.
    ``qrels``: the judgements already read from ``qrels_path`` (a caller scoring several
    runs reads them once); errors still name ``qrels_path``."""


    if qrels is None and str(qrels_path) == "-" and str(run_path) == "-":
        raise OptionError("QRELS and RUN are both '-': standard input can be read once; give one of them as a file "
                          "(e.g. `... | legalir eval qrels.txt -`)")
    notes: list[str] = []
    parse_measures(measures, version)  # bad measure names fail before any file is read
    options = dict(judged_only=judged_only, complete=complete, relevance_level=relevance_level, version=version,
                   max_docs=max_docs, num_docs=num_docs, skip_missing=skip_missing)
    if qrels is None:
        qrels = trec.read_qrels(qrels_path, notes)
    data = trec.read_bytes(run_path)
    try:
        result = _evaluate_data(qrels, run_path, data, measures, options)
    except NoCommonTopics as e:  # a problem of the two files together: name both
        raise type(e)(f"{trec._display(run_path)} (scored against {trec._display(qrels_path)}): {e}") from None
    result.notes[:0] = notes
    return result


def _evaluate_data(qrels: trec.Qrels, run_path: str | os.PathLike, data: bytes, measures: Any,
                   options: dict[str, Any]) -> Evaluation:
    from legalir.trec import runformats

    notes: list[str] = []
    if runformats.sniff_bytes(data) == "crumb":
        result = evaluate(qrels, runformats.read_crumb_run(run_path, data=data), measures, run_id="crumb",
                          **options)
    else:
        # topic by topic as the run is read: a large run is never in memory as Python objects
        run_notes: list[str] = []
        batches = trec.RunBatches(run_path, data, run_notes)
        try:
            result = evaluate_batches(qrels, batches, measures, run_id=lambda: batches.tag, **options)
        except trec.ScatteredTopics:  # a topic's lines are not consecutive: read the run whole
            run_notes = []
            run, run_id = trec.read_run_and_tag(run_path, run_notes, data=data)
            result = evaluate(qrels, run, measures, run_id=run_id, **options)
        notes += run_notes
    result.notes[:0] = notes
    return result


