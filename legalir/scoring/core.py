"""The scoring core: every face scores and compares runs through these functions.

One of each, owned here and called by :func:`legalir.evaluate` / :func:`legalir.compare` (the
Python API), `legalir eval` / `legalir compare` (the CLI), `legalir serve`'s run scores and the MCP
``evaluate`` / ``fuse`` tools; the faces keep only their parsing and formatting:

* **one measure parser**: :func:`measure_requests` (what a caller may give as measures) then
  :func:`legalir.scoring.parse_measures` (what a measure name means);
* **one default measure set**: :data:`legalir.scoring.measures.DEFAULT_MEASURES` (``map``,
  ``ndcg_cut.10``) when neither the caller nor the dataset names measures; `legalir eval` alone
  prints trec_eval's default (``official``), as the trec_eval it replaces;
* **one judged-only rule**: :func:`legalir.scoring.judged.is_judged` (a grade 0 or higher), applied with
  ``-M`` and the ranking in one pass, :func:`legalir.scoring.prepare.cut`;
* **one evaluate path**: :func:`legalir.evaluate` -> :func:`score` -> :func:`legalir.scoring.evaluator.evaluate_batches`
  (a run file through :func:`legalir.scoring.runfiles.evaluate_files`) -> :func:`legalir.scoring.pytrec.compute`;
* **every run format legalir reads**: :func:`to_run` (a TREC or CRUMB JSONL file, sniffed; a
  mapping; a DataFrame) and :func:`to_qrels`;
* **one comparison with one set of defaults**: :func:`compare` (paired t-test, Holm's correction,
  alpha 0.05, 1,000 bootstrap resamples at 95 %, seed 0).

Every argument is checked at the door (:mod:`legalir.base.checks`): a bad one is an
:class:`~legalir.errors.ApiError` naming it and what is accepted, the same through every face.
"""
from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from legalir import trec
from legalir.base import checks
from legalir.errors import ApiError
from legalir.scoring.evaluator import Evaluation, evaluate_batches
from legalir.scoring.exceptions import NoCommonTopics
from legalir.scoring.measures import DEFAULT_MEASURES, VERSIONS
from legalir.scoring.parsing import parse_measures
from legalir.scoring.runfiles import evaluate_files
from legalir.trec import runformats

#: the defaults of every comparison (legalir.compare and `legalir compare` alike)
CORRECTION = "holm"
TEST = "t"
ALPHA = 0.05
PERMUTATIONS = 10_000
BOOTSTRAP = 1_000
LEVEL = 0.95
SEED = 0
#: upper bounds of the resampling counts (beyond them a comparison takes hours, or all memory)
MAX_PERMUTATIONS = 10_000_000
MAX_BOOTSTRAP = 1_000_000


# ------------------------------------------------------------------ measures
def _is_ir_measure(m: Any) -> bool:
    return type(m).__module__.startswith("ir_measures")


def measure_requests(measures: Any, default: Sequence[str] = DEFAULT_MEASURES) -> list[str]:
    """The measures asked for, as names (``None``: ``default``); checked, not yet parsed.

    Accepts a name (``"nDCG@10"``, ``"P.5,10"``), an ir_measures measure, or a list of them; an empty
    list, a mapping, bytes or anything else is an :class:`~legalir.errors.ApiError`.
    """
    if measures is None:
        return list(default)
    if isinstance(measures, str) or _is_ir_measure(measures):
        measures = [measures]
    elif isinstance(measures, (bytes, bytearray, Mapping)) or not isinstance(measures, Iterable):
        raise ApiError(f"measures must be a list of measure names (e.g. ['nDCG@10', 'map']) or ir_measures "
                       f"measures, not {checks.shown(measures)}")
    out = []
    for i, m in enumerate(measures):
        if isinstance(m, str):
            checks.text(f"measures[{i}]", m)
            out.append(m)
        elif _is_ir_measure(m):
            out.append(str(m))
        else:
            raise ApiError(f"measures[{i}] must be a measure name (nDCG@10, ndcg_cut.10) or an ir_measures "
                           f"measure, not {checks.shown(m)}")
    if not out:
        raise ApiError(f"measures is an empty list; name at least one (e.g. ['nDCG@10', 'map']), or leave it out "
                       f"for the default: {', '.join(DEFAULT_MEASURES)}")
    return out


def _keys(requests: list[str], version: str = "10") -> list[tuple[str, list[str]]]:
    """Each request with the output names it yields (one name: keyed as requested)."""
    return [(r, [n for m in parse_measures([r], version) for n in m.output_names()]) for r in requests]


def by_request(result: Evaluation, requests: list[str], per_topic: bool = False, version: str = "10") -> dict:
    """``result`` keyed by the measures as requested (``"ndcg_cut.10"`` stays ``"ndcg_cut.10"``); a request
    naming several values (``"P.5,10"``) gives one key per value, named as trec_eval prints it (``P_5``)."""
    keys = _keys(requests, version)

    def keyed(values: Mapping[str, Any]) -> dict:
        return {(r if len(names) == 1 else n): values[n] for r, names in keys for n in names if n in values}

    missing = [n for _, names in keys for n in names if n not in result["all"]]
    if missing:
        raise ApiError(f"no value for {', '.join(missing)}: no evaluated topic defines it")
    summary = keyed(result["all"])
    if not per_topic:
        return summary
    return {"all": summary, "per_topic": {q: keyed(v) for q, v in result["per_topic"].items()}}


# ------------------------------------------------------------------ runs and qrels
def is_frame(x: Any) -> bool:
    """A pandas DataFrame (without importing pandas)."""
    return type(x).__name__ == "DataFrame" and hasattr(x, "itertuples")


def _is_path(x: Any) -> bool:
    return isinstance(x, (str, os.PathLike))


def _existing(name: str, value: Any) -> str | os.PathLike:
    p = checks.path(name, value)
    if str(p) != trec.STDIN and not os.path.exists(p):
        raise ApiError(f"{p}: file not found (the {name})")
    return p


def _grade(where: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ApiError(f"{where} must be an integer grade, not {checks.shown(value)}")
    v = float(value)
    if not isinstance(value, numbers.Integral) and not (math.isfinite(v) and v.is_integer()):
        raise ApiError(f"{where} must be an integer grade, not {checks.shown(value)}")
    g = int(value) if isinstance(value, numbers.Integral) else int(v)
    if not trec.MIN_RELEVANCE <= g <= trec.MAX_RELEVANCE:
        raise ApiError(f"{where} must be a grade from {trec.MIN_RELEVANCE:,} to {trec.MAX_RELEVANCE:,}, not {g}")
    return g


def _score(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ApiError(f"{where} must be a number, not {checks.shown(value)}")
    v = float(value)
    if math.isnan(v):
        raise ApiError(f"{where} is NaN; a run cannot rank it (a run file with a NaN score is refused too)")
    return v


def _frame_columns(df: Any, value_cols: Sequence[str], what: str) -> tuple[str, str, str]:
    cols = list(df.columns)
    q = next((c for c in ("query_id", "qid") if c in cols), None)
    d = next((c for c in ("doc_id", "docno") if c in cols), None)
    v = next((c for c in value_cols if c in cols), None)
    if q is None or d is None or v is None:
        raise ApiError(f"{what}: a DataFrame needs columns query_id (or qid), doc_id (or docno) and "
                       f"{' or '.join(value_cols)}; it has {', '.join(map(str, cols)) or 'none'}")
    return q, d, v


def _nested(data: Any, what: str, value) -> dict[str, dict]:
    """``{qid: {docid: value(...)}}`` of a mapping of mappings, every id and value checked."""
    out: dict[str, dict] = {}
    for qid, docs in data.items():
        q = checks.identifier(f"{what}: a topic id", qid)
        if not isinstance(docs, Mapping):
            raise ApiError(f"{what}[{q!r}] must be a mapping {{docid: value}}, not {checks.shown(docs)}")
        row = out.setdefault(q, {})
        for docid, v in docs.items():
            d = checks.identifier(f"{what}[{q!r}]: a document id", docid)
            row[d] = value(f"{what}[{q!r}][{d!r}]", v)
    return out


def to_qrels(qrels: Any, name: str = "qrels") -> trec.Qrels:
    """Qrels from a TREC file path, ``{qid: {docid: grade}}`` or a DataFrame (``relevance`` or ``label``)."""
    if _is_path(qrels):
        return trec.read_qrels(_existing(name, qrels))
    if is_frame(qrels):
        q, d, v = _frame_columns(qrels, ("relevance", "label"), name)
        out: dict[str, dict[str, int]] = {}
        for qid, docid, value in zip(qrels[q], qrels[d], qrels[v]):
            qs = checks.identifier(f"{name}: a topic id", qid)
            ds = checks.identifier(f"{name}[{qs!r}]: a document id", docid)
            out.setdefault(qs, {})[ds] = _grade(f"{name}[{qs!r}][{ds!r}]", value)
        return out
    if isinstance(qrels, Mapping):
        return _nested(qrels, name, _grade)
    raise ApiError(f"{name} must be a file path, a mapping {{qid: {{docid: grade}}}} or a DataFrame, not "
                   f"{checks.shown(qrels)}")


def to_run(run: Any, name: str = "run") -> trec.Run:
    """A run from a file path (a TREC run or a CRUMB JSONL run, whichever the file is), ``{qid: {docid:
    score}}`` or a DataFrame (``score``). A NaN score is refused wherever it comes from."""
    if _is_path(run):
        return runformats.read_any_run(_existing(name, run))
    if is_frame(run):
        q, d, v = _frame_columns(run, ("score",), name)
        out: dict[str, dict[str, float]] = {}
        for qid, docid, value in zip(run[q], run[d], run[v]):
            qs = checks.identifier(f"{name}: a topic id", qid)
            ds = checks.identifier(f"{name}[{qs!r}]: a document id", docid)
            out.setdefault(qs, {})[ds] = _score(f"{name}[{qs!r}][{ds!r}]", value)
        return out
    if isinstance(run, Mapping):
        return _nested(run, name, _score)
    raise ApiError(f"{name} must be a file path (TREC or CRUMB JSONL), a mapping {{qid: {{docid: score}}}} or a "
                   f"DataFrame, not {checks.shown(run)}")


# ------------------------------------------------------------------ scoring
def _options(judged_only, complete, relevance_level, version, max_docs, num_docs, skip_missing) -> dict:
    return dict(judged_only=checks.boolean("judged_only", judged_only),
                complete=checks.boolean("complete", complete),
                relevance_level=checks.integer("relevance_level", relevance_level, 1, trec.MAX_RELEVANCE),
                version=checks.choice("version", version, VERSIONS),
                max_docs=checks.optional_integer("max_docs", max_docs, 1),
                num_docs=checks.integer("num_docs", num_docs, 0),
                skip_missing=checks.boolean("skip_missing", skip_missing))


def score(qrels: Any, run: Any, measures: Any = None, *, judged_only: bool = False, complete: bool = False,
          relevance_level: int = 1, version: str = "10", max_docs: int | None = None, num_docs: int = 0,
          skip_missing: bool = False, default: Sequence[str] = DEFAULT_MEASURES,
          _qrels: trec.Qrels | None = None, run_name: str = "run") -> Evaluation:
    """The one scoring function: ``run`` against ``qrels`` as trec_eval (and ir_measures, for its names) scores it.

    Parameters
    ----------
    qrels, run
        File paths (a run: TREC or CRUMB JSONL, sniffed; ``-``: standard input), mappings or DataFrames.
    measures
        As :func:`measure_requests` takes them; ``None``: ``default``.
    judged_only, complete, relevance_level, version, max_docs, num_docs, skip_missing
        trec_eval's ``-J``, ``-c``, ``-l``, ``--compat``, ``-M``, ``-N`` and ``--skip-missing``
        (:func:`legalir.evaluate`).
    default : sequence of str
        The measures when none are named (`legalir eval`: trec_eval's ``official``).

    Returns
    -------
    Evaluation
        Values keyed by trec_eval's output names (:func:`by_request` keys them as requested), with the
        readers' and the evaluator's notes.
    """
    if _qrels is None and _is_path(qrels) and _is_path(run) and str(qrels) == "-" == str(run):
        raise ApiError("QRELS and RUN are both '-': standard input can be read once; give one of them as a file "
                       "(e.g. `... | legalir eval qrels.txt -`)")
    requests = measure_requests(measures, default)
    options = _options(judged_only, complete, relevance_level, version, max_docs, num_docs, skip_missing)
    parse_measures(requests, options["version"])  # a bad measure fails before any file is read
    notes: list[str] = []
    if _qrels is not None:
        judgements, label = _qrels, str(qrels)
    elif _is_path(qrels):
        judgements, label = trec.read_qrels(_existing("qrels", qrels), notes), trec._display(qrels)
    else:
        judgements, label = to_qrels(qrels), "the qrels given"
    if _is_path(run):
        result = evaluate_files(label, _existing(run_name, run), requests, qrels=judgements, **options)
    else:
        data = to_run(run, run_name)
        try:
            result = evaluate_batches(judgements, (data,), requests, **options)
        except NoCommonTopics as e:
            raise type(e)(f"{run_name} (scored against {label}): {e}") from None
    result.notes[:0] = notes
    return result


# ------------------------------------------------------------------ comparison
@dataclass
class Comparisons:
    """What :func:`compare` found: one :class:`legalir.scoring.stats.Comparison` per measure value, the
    runs' names (the baseline first), the label of each value (as requested) and the settings."""

    comparisons: list  # of legalir.scoring.stats.Comparison
    runs: list[str]
    baseline: str
    labels: dict[str, str]
    test: str
    correction: str
    alpha: float


def named_runs(runs: Any) -> list[tuple[str, Any]]:
    """``[(name, run)]`` of ``{name: run}`` or a list of runs (file paths named by their paths, a path
    given again ``PATH #position``, others ``run1``, ``run2``, ...); at least two, names distinct."""
    if isinstance(runs, Mapping):
        named = [(checks.text("runs: a run's name", n) if isinstance(n, str) else checks.identifier(
            "runs: a run's name", n), r) for n, r in runs.items()]
    elif isinstance(runs, Sequence) and not isinstance(runs, (str, bytes, bytearray)):
        named = []
        for i, r in enumerate(runs, 1):
            n = str(r) if _is_path(r) else f"run{i}"
            if any(n == m for m, _ in named):  # the same file twice (a sanity check): told apart by position
                n = f"{n} #{i}"
            named.append((n, r))
    else:
        raise ApiError(f"runs must be a mapping {{name: run}} or a list of runs (at least two), not "
                       f"{checks.shown(runs)}")
    if len(named) < 2:
        raise ApiError(f"runs: compare needs at least two runs, got {len(named)}")
    seen: set[str] = set()
    for n, _ in named:
        if n in seen:
            raise ApiError(f"runs: two runs are named {n!r}; give them as a mapping {{name: run}}")
        seen.add(n)
    return named


def _baseline(baseline: Any, names: list[str]) -> int:
    if isinstance(baseline, str):
        if baseline not in names:
            raise ApiError(f"baseline must be a run's name or position; {baseline!r} is not one of: "
                           f"{', '.join(names)}")
        return names.index(baseline)
    if isinstance(baseline, bool) or not isinstance(baseline, numbers.Integral) \
            or not -len(names) <= int(baseline) < len(names):
        raise ApiError(f"baseline must be a run's name ({', '.join(names[:5])}{' ...' if len(names) > 5 else ''}) "
                       f"or position (0 to {len(names) - 1}, or -1 for the last), not {checks.shown(baseline)}")
    return int(baseline) % len(names)


def compare(runs: Any, qrels: Any, measures: Any = None, *, baseline: Any = 0, correction: str = CORRECTION,
            test: str = TEST, judged_only: bool = False, relevance_level: int = 1, alpha: float = ALPHA,
            permutations: int = PERMUTATIONS, bootstrap: int = BOOTSTRAP, level: float = LEVEL,
            seed: int = SEED) -> Comparisons:
    """The one comparison: every run against the baseline, per measure, over the topics all runs share.

    Arguments as :func:`legalir.compare` takes them (its defaults are these). Every argument is
    checked before any run is read; runs sharing no evaluated topic are refused (an all-NaN table
    says nothing).
    """
    from legalir.scoring import stats  # numpy: not imported by `legalir eval`

    named = named_runs(runs)
    names = [n for n, _ in named]
    base = _baseline(baseline, names)
    correction = checks.choice("correction", correction, stats.CORRECTIONS)
    test = checks.choice("test", test, stats.TESTS)
    alpha = checks.fraction("alpha", alpha)
    level = checks.fraction("level", level)
    permutations = checks.integer("permutations", permutations, 1, MAX_PERMUTATIONS)
    bootstrap = checks.integer("bootstrap", bootstrap, 0, MAX_BOOTSTRAP)
    seed = checks.integer("seed", seed, 0, 2**63 - 1)
    judged_only = checks.boolean("judged_only", judged_only)
    relevance_level = checks.integer("relevance_level", relevance_level, 1, trec.MAX_RELEVANCE)
    requests = measure_requests(measures)
    keys = _keys(requests)
    stats.comparable_names(parse_measures(requests))  # refuses what has no per-topic value
    if _is_path(qrels):
        judgements, label = trec.read_qrels(_existing("qrels", qrels)), str(qrels)
    else:
        judgements, label = to_qrels(qrels), "the qrels given"
    order = [base] + [i for i in range(len(named)) if i != base]
    per_topic = []
    for i in order:
        name, run = named[i]
        per_topic.append(score(label, run, requests, judged_only=judged_only, relevance_level=relevance_level,
                               _qrels=judgements, run_name=f"runs[{name!r}]")["per_topic"])
    common = set.intersection(*(set(pt) for pt in per_topic))
    if not common:
        some = "; ".join(f"{names[i]}: {len(pt)} topics (e.g. {', '.join(sorted(pt)[:3])})"
                         for i, pt in zip(order, per_topic))
        raise ApiError(f"runs: no evaluated topic is common to every run, so nothing can be compared ({some})")
    out_names = [n for _, ns in keys for n in ns]
    comps = stats.compare(per_topic, [names[i] for i in order], out_names, test=test, correction=correction,
                          permutations=permutations, seed=seed, bootstrap=bootstrap, level=level)
    labels = {n: (r if len(ns) == 1 else n) for r, ns in keys for n in ns}
    return Comparisons(comps, [names[i] for i in order], names[base], labels, test, correction, alpha)
