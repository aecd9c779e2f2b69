"""Citations in a benchmark (``legalir analyze citations DATASET``): who carries them, and what they change.

Counts the topics whose text cites an authority (:func:`legalir.legal.citations.extract`, with the
topic's jurisdiction field as the jurisdiction of a code named without one), the gold documents
that carry a ``citations`` field (written by ``legalir convert``), the gold documents that *are*
an authority their topic cites, and the documents of the corpus with at least one citation.
Then, for each run given, the measure over all topics and split by topics with and without
citations (scored as the dataset's papers score: judged-only where they do).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from legalir.errors import LegalirError

_log = logging.getLogger(__name__)


class AnalysisError(LegalirError, ValueError):
    pass


@dataclass
class CitationReport:
    dataset: str
    topic_set: str
    topics: int
    topics_citing: list[str]
    gold: int
    gold_with_field: int
    gold_named: int
    documents: int
    documents_with_citations: int | None
    measure: str
    judged_only: bool
    rows: list[dict] = field(default_factory=list)


def collection_dir(dataset: str | os.PathLike) -> Path:
    """A collection folder, or the converted collection of a dataset name (``collections/<name>``)."""
    from legalir import collections
    from legalir.datasets import dataset_class

    p = Path(dataset)
    if collections.is_collection(p):
        return p
    name = dataset_class(str(dataset)).name  # unknown names: the error lists the known ones
    p = collections.root() / name
    if not collections.is_collection(p):
        raise AnalysisError(f"{p}: no converted collection of {name}; convert it first (legalir convert {name}) "
                            f"or give the collection folder")
    return p


def analyze(dataset: str | os.PathLike, runs: Sequence[tuple[str, str]] = (), *, topic_set: str | None = None,
            measure: str | None = None) -> CitationReport:
    """The counts and, per ``(label, run path)``, the measure split by topics with and without citations."""
    from legalir import api
    from legalir.legal import citations

    bench = api.load(collection_dir(dataset), topic_set)
    cls = bench._dataset_class()
    jur = cls.jurisdiction_field if cls is not None else None
    citing: dict[str, set[str]] = {}
    for q, t in bench.topic_records.items():
        keys = {c.key for c in citations.extract(t.text, jurisdiction_hint=t.fields.get(jur) if jur else None)}
        if keys:
            citing[q] = keys
    gold = {(q, d) for q, docs in bench.qrels.items() for d, r in docs.items() if r > 0}
    with_field = named = 0
    for q, d in gold:
        rec = bench.corpus.record(d) or {}
        roles = citations.parse_field(rec.get(citations.FIELD))
        with_field += bool(rec.get(citations.FIELD))
        named += bool(citing.get(q, set()) & set(roles["is"]))
    fields = bench.manifest.get("fields") or {}
    measure = measure or (cls.headline if cls is not None and cls.headline else None) \
        or (bench.measures[0].split(",")[0] if bench.measures else "ndcg_cut.10")
    report = CitationReport(bench.name, str(bench.split), len(bench.topic_records), sorted(citing), len(gold),
                            with_field, named, len(bench.corpus),
                            (fields.get(citations.FIELD) or {}).get("documents"), measure, bench.judged_only)
    for label, path in runs:
        scores = api.evaluate(bench.qrels, path, [measure], judged_only=bench.judged_only, per_topic=True)
        per = {q: v[measure] for q, v in scores["per_topic"].items() if measure in v}
        row = {"run": label, "all": _mean(per.values()), "topics": len(per)}
        yes = [v for q, v in per.items() if q in citing]
        no = [v for q, v in per.items() if q not in citing]
        row.update(with_citations=_mean(yes), n_with=len(yes), without=_mean(no), n_without=len(no))
        report.rows.append(row)
    return report


def _mean(values) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def _pct(a: int, b: int) -> str:
    return f"{a} of {b} ({100.0 * a / b:.1f}%)" if b else f"{a} of 0"


def format_report(r: CitationReport) -> str:
    def num(v):
        return "n/a" if v is None else f"{v:.4f}"

    lines = [f"{r.dataset}, topic set {r.topic_set}",
             f"  topics citing an authority:        {_pct(len(r.topics_citing), r.topics)}",
             f"  gold documents with citations:     {_pct(r.gold_with_field, r.gold)} (a `citations` field)",
             f"  gold documents their topic cites:  {_pct(r.gold_named, r.gold)}",
             "  documents with citations:          " + (_pct(r.documents_with_citations, r.documents)
                                                        if r.documents_with_citations is not None
                                                        else "unknown (converted with --citations off)")]
    if r.rows:
        lines.append(f"  {r.measure}{' (judged only)' if r.judged_only else ''}:")
        width = max(len(x["run"]) for x in r.rows)
        lines.append(f"    {'run':<{width}}  {'all':>14}  {'with citations':>18}  {'without':>14}")
        for x in r.rows:
            lines.append(f"    {x['run']:<{width}}  {num(x['all']):>8} ({x['topics']:>4})  "
                         f"{num(x['with_citations']):>12} ({x['n_with']:>4})  {num(x['without']):>8} ({x['n_without']:>4})")
    return "\n".join(lines)
