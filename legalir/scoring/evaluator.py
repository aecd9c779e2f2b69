"""Score a run against qrels with trec_eval's semantics.

Per-topic values of trec_eval's measures come from pytrec_eval (trec_eval
9's own C code: same ranking by score then docid, same relevance level,
same -J). What pytrec_eval does *not* do the way trec_eval does is done
here: which topics are evaluated (run topics that have qrels; a topic with an
empty ranking is absent), the summary line of every measure (mean in topic
order, sums for ``num_*``, geometric mean for ``gm_*``, ``-c``), the run tag
(``runid``) and the string measure ``relstring``. legalir's own measures
(the family modules of :mod:`legalir.scoring.measures`) follow the same rules. Every measure sees a
topic only after the one pass of :mod:`legalir.scoring.prepare` (-M, judged-only, ranking).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping

from legalir import trec
from legalir.base import log
from legalir.scoring import pytrec
from legalir.scoring.exceptions import EvaluationError, NoCommonTopics
from legalir.scoring.measures import VERSIONS, AnyMeasure, Context, IrMeasure, Measure
from legalir.scoring.measures.base import Value
from legalir.scoring.parsing import parse_measures
from legalir.scoring.prepare import Prepared, Topic, check_max_docs, judged_only

__all__ = ["BOGUS_DOCNO", "EVAL_BAR_TOPICS", "Evaluation", "EvaluationError", "MIN_GEO_MEAN", "NoCommonTopics",
           "coverage_notes", "evaluate", "evaluate_batches", "format_trec_eval", "judged_only", "to_json",
           "topic_coverage"]

#: trec_eval's floor for geometric means (MIN_GEO_MEAN)
MIN_GEO_MEAN = 0.00001
#: the one document trec_eval 10.0 "retrieves" for a qrels topic missing from the run under -c
BOGUS_DOCNO = "ceci_nest_pas_un_docno"


class Evaluation(dict):
    """``{"all": {name: value}, "per_topic": {qid: {name: value}}}``, plus details.

    Attributes (not part of the dict, so ``json.dumps`` shows only the two keys):
    * ``measures``: the parsed :class:`Measure` list, in output order;
    * ``topics``: the evaluated topics (run topics with judgements), sorted;
    * ``missing_from_run``: qrels topics with no run results (sorted);
    * ``missing_from_qrels``: run topics with no judgements, not evaluated;
    * ``subset_sizes``: for measures averaged over a subset of topics
      (``starK_P``): how many topics the average is over;
    * ``notes``: warnings worth printing (e.g. a measure no topic defines);
    * ``skip_missing``: ir_measures-named measures averaged without the qrels topics missing from the run.
    """

    measures: list[AnyMeasure]
    topics: list[str]
    missing_from_run: list[str]
    missing_from_qrels: list[str]
    subset_sizes: dict[str, int]
    notes: list[str]
    skip_missing: bool
    bogus: list[str]


#: an evaluation of this many judged topics or more shows a progress bar (on a terminal, at INFO)
EVAL_BAR_TOPICS = 1000

def topic_coverage(qrels: Mapping, run: Mapping) -> tuple[list[str], list[str]]:
    """(qrels topics without run results, run topics without judgements), each sorted."""
    q = {t for t, d in qrels.items() if d}
    r = {t for t, d in run.items() if d}
    return sorted(q - r), sorted(r - q)


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    measures: Iterable[str | Measure] | str | None = None,
    judged_only: bool = False,
    complete: bool = False,
    relevance_level: int = 1,
    run_id: str | None = None,
    version: str = "10",
    max_docs: int | None = None,
    num_docs: int = 0,
    skip_missing: bool = False,
) -> Evaluation:
    """Score ``run`` against ``qrels`` as ``trec_eval [-J] [-c] [-l N] -m ...`` would.

    * ``measures``: trec_eval-style specs (``["map", "P.5,10", "star3_P.5"]``)
      or :class:`Measure` objects; default trec_eval's ``official`` set.
    * ``judged_only`` (-J): drop documents without a judgement first.
    * ``complete`` (-c): average over every qrels topic; a topic missing from
      the run counts 0 (``num_rel`` counts its relevant documents, ``num_q``
      its existence). Star measures stay averaged over the topics that have a
      K-star document: -c adds back the missing ones among those only.
    * ``relevance_level`` (-l): the lowest relevance counted as relevant.
    * ``run_id``: what ``runid`` reports (the CLI passes the run's tag).
    * ``version``: the trec_eval whose semantics apply: "10" (default) or "9"
      (9.0.x: pytrec_eval's, Pyserini's). 10.0 rounds the recall cut-offs of
      ``iprec_at_recall``/``11pt_avg``, has ``rbp``, ``rbp_resid``, ``unj``,
      ``dcg``, ``ideal_dcg``, and under -c evaluates each qrels topic missing
      from the run as a ranking of one unjudged document (per-topic lines with
      -q; ``num_ret``, ``utility``, ``relstring``, ``unj``, ``rbp_resid`` reset).
    * ``max_docs`` (-M): only the first N documents of each topic's ranking count.
    * ``num_docs`` (-N): documents in the collection (the 4th ``utility`` coefficient).
    * ``skip_missing``: average ir_measures-named measures over the evaluated topics
      only (trec_eval's convention) instead of every qrels topic (ir_measures').

    Returns an :class:`Evaluation`: ``{"all": ..., "per_topic": ...}``. Per
    topic values exist only for evaluated topics (run topics with qrels);
    summary-only measures (``runid``, ``num_q``, ``gm_*``) appear only in
    ``all``, ``relstring`` only per topic, ``starK_P`` only for topics with
    a K-star document.
    """
    return evaluate_batches(qrels, (run,), measures, judged_only=judged_only, complete=complete,
                            relevance_level=relevance_level, run_id=run_id, version=version, max_docs=max_docs,
                            num_docs=num_docs, skip_missing=skip_missing)


def evaluate_batches(
    qrels: Mapping[str, Mapping[str, int]],
    batches: Iterable[Mapping[str, Mapping[str, float]]],
    measures: Iterable[str | Measure] | str | None = None,
    judged_only: bool = False,
    complete: bool = False,
    relevance_level: int = 1,
    run_id: str | Callable[[], str] | None = None,
    version: str = "10",
    max_docs: int | None = None,
    num_docs: int = 0,
    skip_missing: bool = False,
) -> Evaluation:
    """:func:`evaluate` on a run given as batches of whole topics (each topic in one batch only, as
    :class:`legalir.trec.RunBatches` reads them): every topic's values are computed with its batch,
    so only one batch of the run is in memory at a time. ``run_id`` may be a function, called after
    the last batch (a streamed run's tag is known at its end)."""
    _check_options(relevance_level, version, max_docs)
    parsed = parse_measures(measures, version)
    ir = [m for m in parsed if isinstance(m, IrMeasure)]
    ms = [m for m in parsed if isinstance(m, Measure)]
    ctx = Context(level=relevance_level, num_docs=num_docs)
    qrels_topics = [t for t, d in qrels.items() if d]
    scorer = _Scorer(qrels, ms, ir, ctx, version, max_docs, judged_only)
    run_topics, run_keys = _score_batches(scorer, batches, len(qrels_topics))

    in_run = set(run_topics)
    missing_from_run = sorted(set(qrels_topics) - in_run)
    missing_from_qrels = sorted(in_run.difference(qrels_topics))
    topics, bogus, notes = _evaluated_topics(qrels, in_run, missing_from_run, version, complete)
    if not topics:
        raise NoCommonTopics(
            f"no topic has both run results and judgements ({run_keys} run topics, e.g. "
            f"{_some(sorted(in_run), 3) or 'none'}; {len(qrels_topics)} qrels topics, e.g. "
            f"{_some(sorted(qrels_topics), 3) or 'none'}): is the run scored against its own qrels?")
    if bogus:
        missing = sorted(bogus)
        scorer.score({t: {BOGUS_DOCNO: 1.0} for t in missing}, missing, real=False)
    _reset_bogus(scorer.values, bogus, ms)
    recount_num_rel = complete
    if bogus:
        complete = False  # every qrels topic is evaluated: plain averages are trec_eval 10.0's -c averages
    if callable(run_id):
        run_id = run_id()

    values = scorer.values
    summary, subset_sizes = _summary(ms, values, topics, qrels, qrels_topics, complete=complete,
                                     recount_num_rel=recount_num_rel, run_id=run_id, ctx=ctx, notes=notes)
    ir_topics = [t for t in topics if t not in bogus]
    ir_denom = len(ir_topics) if skip_missing else len(qrels_topics)
    for i in ir:  # ir_measures: the mean over every qrels topic, a missing one counting 0
        name = str(i)
        summary[name] = sum(_value(values, t, name) for t in ir_topics) / ir_denom
    everything: list[AnyMeasure] = [*ms, *ir]
    shown = [name for m in everything if m.family.per_topic for name in m.output_names()]
    per_topic: dict[str, dict[str, object]] = {}
    for t in topics:
        v = values[t]
        per_topic[t] = {name: v[name] for name in shown if name in v}

    result = Evaluation(all=summary, per_topic=per_topic)
    result.measures = everything
    result.topics = topics
    result.missing_from_run = missing_from_run
    result.missing_from_qrels = missing_from_qrels
    result.subset_sizes = subset_sizes
    result.notes = notes
    result.bogus = sorted(bogus)
    result.skip_missing = skip_missing
    return result


def _check_options(relevance_level: int, version: str, max_docs: int | None) -> None:
    """``-l``, the trec_eval version and ``-M``, refused with what is allowed."""
    if relevance_level < 1:
        raise EvaluationError(f"relevance level must be >= 1 (got {relevance_level})")
    if relevance_level > trec.MAX_RELEVANCE:
        raise EvaluationError(f"relevance level {relevance_level} is out of range: at most {trec.MAX_RELEVANCE}")
    if version not in VERSIONS:
        raise EvaluationError(f"unknown trec_eval version {version!r}; known: {', '.join(VERSIONS)}")
    check_max_docs(max_docs)


class _Scorer:
    """Every value of the topics it is given, kept in ``values`` (``{topic: {name: value}}``)."""

    def __init__(self, qrels: Mapping[str, Mapping[str, int]], ms: list[Measure], ir: list[IrMeasure],
                 ctx: Context, version: str, max_docs: int | None, judged_only: bool):
        self.qrels, self.ms, self.ir, self.ctx, self.version = qrels, ms, ir, ctx, version
        #: the one pass (-M, judged-only, ranking) the flags are passed on to
        self.prepare = functools.partial(Prepared, qrels, max_docs=max_docs, judged_only=judged_only)
        self.values: dict[str, dict[str, Value]] = {}    # every computed value, per topic

    def score(self, run: Mapping[str, Mapping[str, float]], topics: list[str], real: bool = True) -> None:
        """Every value of ``topics`` (run topics with judgements) into ``values``: the topics go through
        the one pass (-M, judged-only, ranking) first."""
        for t in topics:
            self.values[t] = {}
        prepared = self.prepare(run, topics)
        _values(self.ms, self.ir if real else [], prepared, self.ctx, self.version, self.values)


def _score_batches(scorer: _Scorer, batches: Iterable[Mapping[str, Mapping[str, float]]],
                   n_qrels_topics: int) -> tuple[list[str], int]:
    """Score each batch's run topics that have judgements; (the run's topics with at least one document, in
    order, the number of run topics)."""
    qrels = scorer.qrels
    run_topics: list[str] = []                  # with at least one document
    run_keys = 0
    # topics scored of the qrels' (a run's topics without judgements are not scored); shown from EVAL_BAR_TOPICS
    # topics only (a count, not a time: the same on every machine): a tuning grid's many small evaluations draw none
    with log.progress(total=n_qrels_topics, desc="eval", unit=" topics",
                      quiet=n_qrels_topics < EVAL_BAR_TOPICS) as bar:
        for batch in batches:
            run_keys += len(batch)
            topics = []
            for t, docs in batch.items():
                if docs:
                    run_topics.append(t)
                    if qrels.get(t):
                        # a topic whose grades are all negative is scored (all values 0), as trec_eval 10.0
                        # and ir_measures score it (10.0 stops only when it is the first topic it meets)
                        topics.append(t)
            if topics:
                scorer.score(batch, topics)
                bar.update(len(topics))
    return run_topics, run_keys


def _evaluated_topics(qrels: Mapping[str, Mapping[str, int]], in_run: set[str], missing_from_run: list[str],
                      version: str, complete: bool) -> tuple[list[str], set[str], list[str]]:
    """(the topics evaluated, sorted; those of them trec_eval 10.0 evaluates on one unjudged document under
    ``-c``; notes)."""
    topics = sorted(t for t in in_run if qrels.get(t))
    bogus: set[str] = set()
    notes: list[str] = []
    if version == "10" and complete and missing_from_run and topics:
        # trec_eval 10.0 evaluates each missing topic on a ranking of one unjudged document
        bogus = set(missing_from_run)
        topics = sorted(set(topics) | bogus)
    elif version == "10" and missing_from_run and topics:
        notes.append(f"{len(missing_from_run)} qrels topics have no run results: the trec_eval 10.0 binary stops "
                     f"there (\"result qid ... not found\", exit 4) unless -c is given; legalir evaluates the "
                     f"other topics as trec_eval 9.0.x does")
    return topics, bogus, notes


def _reset_bogus(values: dict[str, dict[str, Value]], bogus: set[str], ms: list[Measure]) -> None:
    """trec_eval 10.0's clean-up after its one-document ranking: the families' declared resets."""
    for t in bogus:
        row = values[t]
        for m in ms:
            reset = m.family.reset
            if reset is not None:  # 10.0 matches value names: `utility`, not `utility_1,-1,0,0`; `unj*`
                names = m.output_names() if m.family.params == "int" else [m.name]
                row.update((name, reset) for name in names if name in row)


def _summary(ms: list[Measure], values: dict[str, dict[str, Value]], topics: list[str],
             qrels: Mapping[str, Mapping[str, int]], qrels_topics: list[str], *, complete: bool,
             recount_num_rel: bool, run_id: str | None, ctx: Context,
             notes: list[str]) -> tuple[dict[str, object], dict[str, int]]:
    """The summary line of each of ``ms`` by its family's declared aggregate, and the sizes of the subsets
    ``subset_mean`` measures average over (a measure no topic defines: left out, with a note)."""
    n_eval = len(topics)
    denom = len(qrels_topics) if complete else n_eval
    summary: dict[str, object] = {}
    subset_sizes: dict[str, int] = {}
    for m in ms:
        agg = m.family.aggregate
        names = m.output_names()
        if agg == "none":
            continue
        if agg == "runid":
            summary["runid"] = run_id if run_id is not None else "unknown"
            continue
        if agg == "num_q":
            summary["num_q"] = denom
            continue
        for name in names:
            if agg != "subset_mean":
                summary[name] = _aggregate(agg, name, values, topics, qrels, qrels_topics, complete=complete,
                                           recount_num_rel=recount_num_rel, denom=denom)
                continue
            defined = [t for t in topics if name in values[t]]
            s = 0.0
            for t in defined:
                s += _value(values, t, name)
            if complete:  # every qrels topic the measure is defined for (on its judgements alone)
                n = sum(1 for t in qrels_topics if name in _defined(m, qrels[t], ctx))
            else:
                n = len(defined)
            subset_sizes[name] = n
            if n == 0:
                notes.append(f"{name}: no evaluated topic has {m.family.subset}; "
                             f"the measure is undefined and left out")
                continue
            summary[name] = s / n
    return summary, subset_sizes


def _aggregate(agg: str, name: str, values: dict[str, dict[str, Value]], topics: list[str],
               qrels: Mapping[str, Mapping[str, int]], qrels_topics: list[str], *, complete: bool,
               recount_num_rel: bool, denom: int) -> float | int:
    """The summary value of one output name over ``topics`` by ``agg``: ``sum``/``num_rel``, ``mean``, ``gm``."""
    if agg in ("sum", "num_rel"):
        if agg == "num_rel" and recount_num_rel:
            # trec_eval recounts over the whole qrels file, relevance > 0
            return sum(1 for t in qrels_topics for r in qrels[t].values() if r > 0)
        return sum(int(_value(values, t, name)) for t in topics)
    if agg == "mean":
        s = 0.0
        for t in topics:
            s += _value(values, t, name)
        return s / denom
    if agg == "gm":
        s = 0.0
        for t in topics:
            s += _value(values, t, name)
        if complete:
            s += (denom - len(topics)) * math.log(MIN_GEO_MEAN)
        return math.exp(s / denom)
    raise AssertionError(agg)  # pragma: no cover - a family with an unknown aggregate is a bug in measures.py


def _value(values: dict[str, dict[str, Value]], topic: str, name: str) -> float:
    """One computed number; a missing one is a bug, never a 0."""
    try:
        v = values[topic][name]
    except KeyError:
        raise EvaluationError(f"internal error: no value of {name!r} was computed for topic {topic!r}; "
                              f"please report it with the command that gave it") from None
    if isinstance(v, str):  # pragma: no cover - a string family (runid, relstring) is never aggregated
        raise EvaluationError(f"internal error: {name!r} is not a number")
    return v


def _defined(m: Measure, judgements: Mapping[str, int], ctx: Context) -> Mapping[str, Value]:
    """``m``'s values on an empty ranking of a topic: the names the measure is defined for there."""
    compute = m.family.compute
    if compute is None:  # pragma: no cover - a subset_mean family computes its values
        raise EvaluationError(f"internal error: {m.name!r} averages over a subset but computes nothing")
    return compute(m, Topic("", judgements, {}), ctx)


def _some(items: Iterable[str], n: int = 10) -> str:
    items = list(items)
    head = ", ".join(repr(x) for x in items[:n])
    return head + (f" and {len(items) - n} more" if len(items) > n else "")


def _requests(m: Measure) -> list[tuple[str, tuple[str, object]]]:
    """(output name, pytrec_eval request) of each value of a pytrec_eval-provided measure."""
    names = m.output_names()
    f = m.family
    if not f.takes_params():
        return [(names[0], (m.name, None))]
    if f.params == "raw":
        return [(names[0], (m.name, m.raw()))]
    kind = float if f.params == "float" else int
    return [(name, (m.name, kind(p))) for name, p in zip(names, m.effective_params())]


def _values(ms: list[Measure], ir: list[IrMeasure], prepared: Prepared, ctx: Context, version: str,
            values: dict[str, dict[str, Value]]) -> None:
    """Per-topic values of ``ms`` (trec_eval's and legalir's names, at ``-l``) and ``ir`` (ir_measures', at
    their own ``rel`` and ``judged_only``) into ``values``: pytrec_eval's in one evaluation per (relevance
    level, judged-only view), then what the families compute themselves."""
    groups: dict[tuple[int, bool], list[tuple[str, tuple[str, object], bool]]] = {}
    computed: list[Measure] = []
    for m in ms:
        if m.family.computed(version):
            computed.append(m)
        elif m.family.aggregate not in ("runid", "num_q"):
            groups.setdefault((ctx.level, False), []).extend(
                (name, req, m.family.value == "int") for name, req in _requests(m))
    own: list[IrMeasure] = []
    for i in ir:
        req = i.request()
        if req is None:
            own.append(i)
        else:
            groups.setdefault((i.rel, i.judged_only), []).append((str(i), req, False))
    topics = prepared.topics
    for (rel, flag), wanted in groups.items():
        view = prepared.view(flag)
        # trec_eval itself prints -nan for iprec_at_recall_0.00 and 11pt_avg when -J leaves a topic with no
        # document (ir_measures: NaN for IPrec); an empty ranking has precision 0 (documented in --help)
        got = pytrec.compute(prepared.qrels, {t: view[t].docs for t in topics}, topics,
                             [req for _, req, _ in wanted], level=rel, nan=0.0)
        for t in topics:
            row, scored = values[t], got[t]
            for name, req, as_int in wanted:
                v = scored[req]
                row[name] = int(v) if as_int else v
    if computed:
        for t, topic in prepared.view().items():
            row = values[t]
            for m in computed:
                compute = m.family.compute
                assert compute is not None  # Family.computed
                row.update(compute(m, topic, ctx))
    for i in own:
        ir_compute = i.ir.compute
        assert ir_compute is not None  # IrMeasure.request is None: the family computes it
        for t, topic in prepared.view(i.judged_only).items():
            values[t][str(i)] = ir_compute(i, topic)


# ------------------------------------------------------------------ output


def _fmt(value) -> str:
    if isinstance(value, bool):  # pragma: no cover - no measure is boolean
        value = int(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    return f"{value:6.4f}"


def _line(name: str, qid: str, value) -> str:
    return f"{name:<22}\t{qid}\t{value}"


def format_trec_eval(result: Evaluation, per_topic: bool = False, summary: bool = True) -> str:
    """The result in trec_eval's layout: ``name<TAB>qid<TAB>value`` lines.

    Names are left-justified to 22 characters as trec_eval pads them, floats
    have 4 decimals; with ``per_topic`` (-q) every topic's lines come first,
    topics in trec_eval's (byte) order, then the ``all`` lines.
    """
    lines = []
    if per_topic:
        # a string value per topic (relstring) is quoted, as trec_eval quotes it
        shown = [(name, m.family.value == "str") for m in result.measures if m.family.per_topic
                 for name in m.output_names()]
        for t in result.topics:
            row = result["per_topic"][t]
            for name, quoted in shown:
                if name in row:
                    v = row[name]
                    lines.append(_line(name, t, f"'{v}'" if quoted else _fmt(v)))
    for m in result.measures if summary else ():
        for name in m.output_names():
            if name in result["all"]:
                lines.append(_line(name, "all", _fmt(result["all"][name])))
    return "\n".join(lines) + "\n" if lines else ""


def to_json(result: Evaluation, per_topic: bool = False, summary: bool = True) -> dict:
    """The JSON object of `legalir eval --json`: ``all`` (unless -n), and ``per_topic`` with -q."""
    out = {"all": dict(result["all"])} if summary else {}
    if per_topic:
        out["per_topic"] = {t: dict(result["per_topic"][t]) for t in result.topics}
    return out


def _names(names: list[str]) -> str:
    return ", ".join(dict.fromkeys(names))


def coverage_notes(result: Evaluation, complete: bool = False) -> list[str]:
    """Lines for stderr: topics evaluated, topics on one side only, and the measures' own notes."""
    notes = [f"{len(result.topics)} topics evaluated"]
    miss_run, miss_qrels = result.missing_from_run, result.missing_from_qrels
    if miss_run:
        ir_names = [str(m) for m in result.measures if m.provider == "ir_measures"]
        te_names = [m.name for m in result.measures if m.provider != "ir_measures" and m.family.summary
                    and m.family.aggregate not in ("runid", "num_q")]
        zero = [] if result.skip_missing else ir_names
        if complete:
            zero = te_names + zero
        without = [n for n in te_names + ir_names if n not in zero]
        head = f"{len(miss_run)} qrels topics have no results in the run ({_some(miss_run, 10)}):"
        if zero:
            notes.append(f"warning: {head} " + _names(zero) + " count them as 0"
                         + (" (-c)" if complete and not ir_names else "")
                         + ("" if complete or not ir_names else
                            " (ir_measures' convention; --skip-missing leaves them out)"))
            head = "and"
        if without:
            notes.append(f"{head} " + _names(without) + " average without them" + ("" if complete else
                         " (use -c to count them as 0)" if any(n in te_names for n in without) else ""))
    if miss_qrels:
        notes.append(f"{len(miss_qrels)} run topics have no judgements and are not evaluated: {_some(miss_qrels)}")
    subsets = {name: m.family.subset for m in result.measures for name in m.output_names()}
    for name, n in result.subset_sizes.items():
        notes.append(f"{name}: averaged over the {n} topics with {subsets[name]}")
    notes.extend(result.notes)
    return notes
