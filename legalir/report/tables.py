"""Benchmark report tables: runs scored with a dataset's own protocol, printed beside the papers' rows.

A dataset declares its protocol on :class:`legalir.datasets.dataset.Dataset`:

* ``measures``: trec_eval-style measure specs, e.g. ``("ndcg_cut.5", "recall.100,1000")``
* ``judged_only``: drop unjudged documents before scoring (ACORD)
* ``references``: published rows (:class:`legalir.datasets.dataset.Reference`)
* ``report_scale``: 100 when the paper prints percentages (default), 1 for fractions

Results are saved in ``legalir eval --json -q``'s shape:
``{"all": {measure: value}, "per_topic": {qid: {measure: value}}}``.
"""
from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from legalir import trec
from legalir.base import atomic
from legalir.errors import LegalirError, read_json


class ReportError(LegalirError, ValueError):
    pass

_NAMES = [
    (r"ndcg_cut_(\d+)", r"nDCG@\1"),
    (r"recall_all_(\d+)", r"R@\1 (all)"),
    (r"recall_(\d+)", r"R@\1"),
    (r"success_(\d+)", r"R@\1 (any)"),
    (r"recip_rank_cut_(\d+)", r"MRR@\1"),
    (r"star(\d)_P_(\d+)", r"\1-star P@\2 (norm.)"),
    (r"star(\d)_rawP_(\d+)", r"\1-star P@\2"),
    (r"P_(\d+)", r"P@\1"),
    (r"recip_rank", "MRR"),
    (r"map", "MAP"),
]


def display_name(measure: str) -> str:
    """Short column header for a trec_eval output measure name (``ndcg_cut_10`` -> ``nDCG@10``)."""
    for pattern, repl in _NAMES:
        if re.fullmatch(pattern, measure):
            return re.sub(pattern, repl, measure)
    return measure


def protocol(dataset_cls) -> dict:
    return {
        "measures": list(dataset_cls.measures),
        "judged_only": bool(dataset_cls.judged_only),
        "scale": float(dataset_cls.report_scale),
        "references": list(dataset_cls.references),
    }


def score_run(dataset_cls, qrels_path: str | os.PathLike, run_path: str | os.PathLike,
              out_json: str | os.PathLike | None = None) -> dict:
    """Evaluate one run with the dataset's measures (per topic kept) and optionally save the JSON."""
    from legalir.scoring import evaluate, parse_measures

    p = protocol(dataset_cls)
    if not p["measures"]:
        raise ReportError(f"dataset {dataset_cls.name!r} declares no measures; score its runs with legalir eval")
    from legalir.trec.runformats import read_any_run

    qrels = trec.read_qrels(qrels_path)
    run = read_any_run(run_path)
    result = evaluate(qrels, run, parse_measures(p["measures"]), judged_only=p["judged_only"])
    # how many topics the means are over, beside how many the qrels judge (a partial run is flagged)
    result["topics"] = {"evaluated": len(result.topics), "judged": sum(1 for docs in qrels.values() if docs)}
    # whether legalir's own pipeline wrote the run (its rows say "(legalir)"; a user's run keeps its name)
    result["written_by_legalir"] = str(run_path) != "-" and atomic.written_by_legalir(run_path)
    if out_json:
        save_json(result, out_json)
    return result


def converted_qrels(dataset_cls, inputs: Sequence[str], split: str | None = None) -> tuple[str, str]:
    """The qrels and topics files of ``split`` in the dataset's converted collection
    (``$LEGALIR_COLLECTIONS/<dataset>``, default ``collections/<dataset>``); without ``split``, the
    topic set the run files' names name (``bm25.test.trec`` -> ``test``)."""
    from legalir import collections

    root = collections.root() / dataset_cls.name
    if not collections.is_collection(root):
        raise ReportError(f"{root}: no converted {dataset_cls.name} collection to take qrels from; convert it "
                          f"(legalir convert {dataset_cls.name}, or make convert-{dataset_cls.name}) or give --qrels")
    sets = sorted(p.stem for p in (root / "topics").glob("*.jsonl"))
    if split is None:
        runs = [p for p in inputs if not str(p).endswith(".json")]
        found = {p: collections.split_of(p, sets) for p in runs}
        unnamed = [p for p, s in found.items() if s is None]
        if unnamed:
            raise ReportError(f"{unnamed[0]}: its name names no topic set of {root} ({', '.join(sets)}); "
                              f"give --split or --qrels")
        bases = {collections.base_set(s) for s in found.values()}  # test and test.long share test's qrels
        if len(bases) > 1:
            raise ReportError(f"the runs name topic sets with different qrels ({', '.join(sorted(bases))}); "
                              f"report one at a time, or give --split or --qrels")
        split = bases.pop() if len(set(found.values())) > 1 else next(iter(found.values()))
    elif split not in sets:
        raise ReportError(f"{root}: no topic set {split!r}; known: {', '.join(sets)}")
    return str(collections.qrels_path(root, split)), str(collections.topics_path(root, split))


def score_inputs(dataset_cls, inputs: Sequence[str], qrels: str | None = None, results_dir: str | None = None,
                 labels: Sequence[str] = (), keep_per_topic: bool = False) -> list[tuple[str, Mapping]]:
    """Table rows for ``inputs``: TREC/CRUMB runs scored with the dataset's protocol (saved as
    ``results_dir/<run name>.json``), or results .json files saved earlier. ``keep_per_topic``: each
    row holds the whole result (``{"all", "per_topic"}``) instead of the means."""
    if labels and len(labels) != len(inputs):
        raise ReportError(f"{len(labels)} --label(s) for {len(inputs)} inputs; give one per input, in order")
    if not qrels and any(not str(p).endswith(".json") for p in inputs):
        raise ReportError("--qrels is needed to score a run (only results .json files need none)")
    rows = []
    for i, path in enumerate(inputs):
        name = Path(path).name.removesuffix(".trec").removesuffix(".json")
        if str(path).endswith(".json"):
            result = read_json(path, "results file")
            if not isinstance(result, dict) or not isinstance(result.get("all"), dict):
                raise ReportError(f"{path}: not a results file (expected {{\"all\": {{measure: value}}, ...}}, "
                                  f"as legalir report --results-dir or legalir eval --json -q write)")
        else:
            out = Path(results_dir) / f"{name}.json" if results_dir else None
            result = score_run(dataset_cls, qrels, path, out)
        label = labels[i] if labels else name
        if result.get("written_by_legalir"):
            label = f"{label} (legalir)"
        rows.append((label, result if keep_per_topic else result["all"]))
    return rows


def save_json(result: Mapping, path: str | os.PathLike) -> None:
    """``result`` as a results JSON file, written under the output rule (:func:`legalir.base.atomic.check_file`)."""

    atomic.write_json(path, result, indent=1, ensure_ascii=True, output=True)


def measure_columns(dataset_cls) -> list[str]:
    """Output measure names in the order the dataset declares its measures."""
    from legalir.scoring import parse_measures

    specs = protocol(dataset_cls)["measures"]
    return [name for m in parse_measures(specs) for name in m.output_names()] if specs else []


def table(dataset_cls, rows: Sequence[tuple[str, Mapping[str, float]]], columns: Sequence[str] | None = None,
          title: str | None = None, topics: Sequence[tuple[int | None, int | None]] | None = None) -> str:
    """A plain-text table: the papers' rows, then ours (scaled as the papers print them).

    ``topics``: per row of ours, (topics evaluated, topics the qrels judge) (:func:`topic_counts`);
    a row over fewer topics than the qrels judge is marked and a warning printed under the table."""
    p = protocol(dataset_cls)
    scale = p["scale"]
    if columns is None:
        columns = measure_columns(dataset_cls)
        for _, values in rows:
            for m in values:
                if m not in columns:
                    columns.append(m)
    fmt = "{:.1f}" if scale == 100 else "{:.3f}"
    body: list[list[str]] = []
    undefined = partial = False
    for ref in p["references"]:
        if any(m in ref.values for m in columns):
            body.append([f"{ref.system} (paper)", "-"] + [fmt.format(ref.values[m]) if m in ref.values else "-"
                                                          for m in columns])
    for i, (label, values) in enumerate(rows):
        cells = []
        for m in columns:
            v = values.get(m)
            if v is None:
                cells.append("-")
            elif isinstance(v, float) and math.isnan(v):
                cells.append("n/a")
                undefined = True
            else:
                cells.append(fmt.format(v * scale))
        n, of = topics[i] if topics else topic_counts(values)
        mark = ""
        if n is not None and of is not None and n < of:
            mark, partial = "*", True
        body.append([label, "-" if n is None else f"{n}{mark}"] + cells)
    header = ["system", "topics"] + [display_name(m) for m in columns]
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r))
    out = []
    if title:
        out.append(title)
    out.append(line(header))
    out.append("  ".join("-" * w for w in widths))
    out.extend(line(r) for r in body)
    if p["judged_only"]:
        out.append("(judged-only: unjudged documents removed before scoring)")
    if partial:
        out.append("* warning: scored on fewer topics than the qrels judge (the others are missing from the run); "
                   "the papers' rows are over the whole topic set, so these are not comparable")
    if undefined:
        out.append("n/a: no evaluated topic defines the measure (e.g. no topic has a 5-star clause)")
    return "\n".join(out)


def headline(dataset_cls, columns: Sequence[str]) -> str:
    """The measure figures plot: the dataset's ``headline`` (ACORD: nDCG@10) where it is a column, else the first."""
    h = getattr(dataset_cls, "headline", None)
    return h if h in columns else columns[0]


def topic_counts(values: Mapping) -> tuple[int | None, int | None]:
    """(topics evaluated, None) from a row's ``num_q`` where it has one, else (None, None)."""
    num_q = values.get("num_q") if isinstance(values, Mapping) else None
    return (int(num_q) if isinstance(num_q, (int, float)) else None), None


def _counts(result: Mapping) -> tuple[int | None, int | None]:
    """(topics evaluated, topics the qrels judge) of a scored run or results file: its ``topics`` record
    (written by :func:`score_run`), else the per-topic values it holds; ``None`` where unknown."""
    rec = result.get("topics")
    if isinstance(rec, Mapping):
        return rec.get("evaluated"), rec.get("judged")
    per_topic = result.get("per_topic")
    if isinstance(per_topic, Mapping) and per_topic:
        return len(per_topic), None
    return topic_counts(result.get("all") or {})


def load_results(paths: Iterable[str | os.PathLike]) -> list[tuple[str, dict]]:
    return [(Path(path).stem, read_json(path, "results file")) for path in paths]


CURVE_CUTOFFS = (1, 5, 10, 20, 50, 100, 1000)


def recall_curve(dataset_cls, qrels_path: str | os.PathLike, run_path: str | os.PathLike,
                 cutoffs: Sequence[int] = CURVE_CUTOFFS) -> dict[int, float]:
    """Mean recall@k at each cutoff, scored with the dataset's protocol (judged-only for ACORD)."""
    from legalir.scoring import evaluate, parse_measures
    from legalir.trec.runformats import read_any_run

    spec = "recall." + ",".join(str(k) for k in cutoffs)
    result = evaluate(trec.read_qrels(qrels_path), read_any_run(run_path), parse_measures([spec]),
                      judged_only=protocol(dataset_cls)["judged_only"])
    return {k: float(result["all"][f"recall_{k}"]) for k in cutoffs}


def topic_fields(path: str | os.PathLike) -> dict[str, dict]:
    """Each topic's metadata (a .jsonl topics file), for breakdowns."""
    return {qid: dict(t.fields) for qid, t in trec.read_topics(path).items()}
