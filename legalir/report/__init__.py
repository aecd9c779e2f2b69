"""Benchmark reports: score runs with a dataset's own protocol and print them beside the papers' rows.

:mod:`legalir.report.tables` scores and formats (the names below come from there),
:mod:`legalir.report.breakdown` groups per-topic values by topic metadata, :mod:`legalir.report.html`
writes the one-page HTML report with :mod:`legalir.report.plots`' figures.
"""
from __future__ import annotations

from collections.abc import Sequence

from legalir.report import breakdown
from legalir.report.tables import *  # noqa: F403  (the report's public names)
from legalir.report.tables import (
    ReportError,
    _counts,
    converted_qrels,
    measure_columns,
    protocol,
    recall_curve,
    score_inputs,
    table,
    topic_fields,
)


def render(dataset_cls, inputs: Sequence[str], *, qrels: str | None = None, results_dir: str | None = None,
           labels: Sequence[str] = (), title: str | None = None, by: Sequence[str] = (),
           topics_path: str | None = None, html_out: str | None = None, figures: Sequence[str] = (),
           bootstrap: int = 1000, seed: int = 0, command: str | None = None, split: str | None = None) -> str:
    """What `legalir report` prints: the table of ``inputs`` beside the papers' rows, then per-group means
    for each ``by`` field (metadata from ``topics_path``); with ``html_out`` also one HTML page.

    Without ``qrels``, runs are scored on the dataset's converted collection (:func:`converted_qrels`)."""
    if not qrels and any(not str(p).endswith(".json") for p in inputs):
        qrels, found_topics = converted_qrels(dataset_cls, inputs, split)
        topics_path = topics_path or found_topics
    if by and not topics_path:
        raise ReportError("--by needs --topics (a .jsonl topics file with the metadata)")
    fields = topic_fields(topics_path) if topics_path else None
    full = score_inputs(dataset_cls, inputs, qrels, results_dir, labels, keep_per_topic=True)
    parts = [table(dataset_cls, [(label, result["all"]) for label, result in full], title=title,
                   topics=[_counts(result) for _, result in full])]
    columns, scale = measure_columns(dataset_cls), protocol(dataset_cls)["scale"]
    for field in by:
        for label, result in full:
            parts.append("\n" + breakdown.format_breakdown(label, field, breakdown.breakdown(
                result.get("per_topic") or {}, fields, field, columns), columns, scale))
    if html_out:
        from legalir.report import html

        curves = {lab: recall_curve(dataset_cls, qrels, path) for (lab, _), path in zip(full, inputs)
                  if qrels and not str(path).endswith(".json")}
        html.write_report(html_out, dataset_cls, full, title=title, command=command, by=by, topic_fields=fields,
                          curves=curves, extra_figures=figures, bootstrap=bootstrap, seed=seed, inputs=list(inputs))
    return "\n".join(parts)
