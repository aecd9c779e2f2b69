"""The one way into pytrec_eval.

Every value legalir takes from pytrec_eval (trec_eval names and ir_measures
names alike) comes through :func:`compute`. pytrec_eval keeps *one* parameter
set per measure family: asked for ``{"P.5", "P.10"}`` it returns ``P_10``
only, and which one survives depends on set order. :func:`compute` therefore
merges the cut-offs of one family into one spec (``P.5,10``), puts parameter
sets that cannot share a spec (two gain maps, two recall levels that print
alike) into separate evaluator calls, and raises if any requested
(value, topic) did not come back: no value is ever defaulted.

pytrec_eval's own ``-J`` and ``-M`` are never used: the run it is given is already cut and
judged-only filtered, once, by :mod:`legalir.scoring.prepare` (its ranks close up as trec_eval's do).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from legalir.errors import LegalirError

#: the largest cut-off trec_eval and pytrec_eval read (``strtol`` saturates there: ``P.1e30`` is
#: ``P_9223372036854775807``)
LONG_MAX = 2**63 - 1


#: a judged non-relevant document no run file can hold (TREC docids have no spaces), added to a topic whose grades
#: are all negative: trec_eval's C code (form_res_rels.c) sizes its relevance-level buffer from the topic's
#: largest grade, so for such a topic it reads the previous topic's levels (10.0's ideal_dcg) or, inside
#: pytrec_eval, memory left by earlier evaluations (seen: ndcg with a gain map looping without end). With
#: this judgement every value is unchanged (no document is relevant, it is never retrieved) and the buffer
#: is the topic's own.
NOT_RETRIEVED = "legalir: no document of this topic is graded 0 or more"


class PytrecError(LegalirError, RuntimeError):
    """pytrec_eval did not return a value it was asked for (a bug, never a number)."""


def key(family: str, param=None) -> str:
    """pytrec_eval's name of one value: ``P_5``, ``iprec_at_recall_0.50``, ``ndcg`` (plain or gain map)."""
    if param is None or isinstance(param, str):
        return family
    if isinstance(param, float):
        return f"{family}_{param:.2f}"
    return f"{family}_{param}"


def _param_text(p) -> str:
    if isinstance(p, float):
        text = f"{p:.10f}".rstrip("0")
        return text + "0" if text.endswith(".") else text
    return str(p)


def _rounds(wants: Iterable[tuple[str, object]]) -> list[dict[str, list]]:
    """Split (family, param) requests into evaluator calls whose specs and value names do not collide."""
    rounds: list[dict[str, list]] = []
    taken: list[set[str]] = []
    for family, param in dict.fromkeys(wants):
        k = key(family, param)
        shares = not (param is None or isinstance(param, str))  # cut-offs share one spec
        for i, r in enumerate(rounds):
            cur = r.get(family)
            if k in taken[i]:
                continue
            if cur is None or (shares and all(not (p is None or isinstance(p, str)) for p in cur)):
                r.setdefault(family, []).append(param)
                taken[i].add(k)
                break
        else:
            rounds.append({family: [param]})
            taken.append({k})
    return rounds


def _spec(family: str, params: list) -> str:
    (first,) = params[:1]
    if first is None:
        return family
    if isinstance(first, str):
        return f"{family}.{first}"
    return f"{family}." + ",".join(_param_text(p) for p in sorted(params))


def compute(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]], topics: list[str],
            wants: Iterable[tuple[str, object]], level: int = 1,
            nan: float | None = 0.0) -> dict[str, dict[tuple[str, object], float]]:
    """pytrec_eval's per-topic values of ``wants`` for ``topics`` (each in both ``run`` and ``qrels``).

    Parameters
    ----------
    qrels, run
        ``{qid: {docid: grade}}`` and ``{qid: {docid: score}}`` (the run after ``-M`` and judged-only:
        :class:`legalir.scoring.prepare.Prepared`).
    topics
        The topics to score; each must have judgements.
    wants
        ``(family, param)`` pairs in pytrec_eval's spelling: ``("map", None)``, ``("P", 5)`` (a cut-off),
        ``("iprec_at_recall", 0.5)`` (a float parameter), ``("ndcg", "1=3,2=9")`` (a parameter string kept
        as written: gain maps, coefficients).
    level
        trec_eval's ``-l``: the lowest grade counted relevant.
    nan
        What a NaN becomes (trec_eval prints ``-nan`` for ``iprec_at_recall`` of a ranking that ``-J``
        left empty; its precision is 0). ``None`` keeps NaN.

    Returns
    -------
    dict
        ``{qid: {(family, param): value}}`` for every topic and every request.

    Raises
    ------
    PytrecError
        If pytrec_eval did not return a requested value for a topic.
    """
    from pytrec_eval_ext import RelevanceEvaluator  # the C core: the wrapper imports numpy

    out: dict[str, dict[tuple[str, object], float]] = {t: {} for t in topics}
    if not topics:
        return out
    judgements = {t: qrels[t] if max(qrels[t].values()) >= 0 else {**qrels[t], NOT_RETRIEVED: 0} for t in topics}
    ranked = {t: run[t] if type(run[t]) is dict else dict(run[t]) for t in topics}
    for r in _rounds(wants):
        evaluator = RelevanceEvaluator(query_relevance=judgements, measures={_spec(f, ps) for f, ps in r.items()},
                                       relevance_level=level, judged_docs_only_flag=False)
        try:  # the run's own dicts when pytrec_eval takes them as they are (no copy of a large run)
            scored = evaluator.evaluate(ranked)
        except TypeError:  # scores of other numeric types (numpy float32, Decimal ...)
            ranked = {t: {d: float(s) for d, s in docs.items()} for t, docs in ranked.items()}
            scored = evaluator.evaluate(ranked)
        names = [((f, p), key(f, p)) for f, ps in r.items() for p in ps]
        for t in topics:
            got = scored.get(t)
            if got is None:
                raise PytrecError(f"pytrec_eval returned no values for topic {t!r}")
            row = out[t]
            for request, name in names:
                v = got.get(name)
                if v is None:
                    raise PytrecError(f"pytrec_eval did not return {name!r} for topic {t!r}")
                row[request] = nan if v != v and nan is not None else v
    return out
