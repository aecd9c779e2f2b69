"""Measures named as ir_measures names them (``nDCG@10``, ``P(rel=2)@5``, ``R@100``, ``RR@10``, ``AP``).

Values are ir_measures' own: per topic, what its pytrec_eval provider
computes (pytrec_eval with the measure's relevance level and judged-only
flag), ``RR@k`` as its MS MARCO provider (ties by document id ascending) and
``Judged@k`` as its judged provider. Aggregation follows ir_measures: the mean
over every qrels topic, a topic missing from the run counting 0
(``skip_missing`` gives trec_eval's convention: the run's topics only). The
output name is ``str(measure)`` as ir_measures prints it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from legalir.evaluate.measures import Family, MeasureError

#: what the evaluator and the formatter read of a measure's family
IR_FAMILY = Family("ir_measures", "ir_measures", doc="an ir_measures name")

# name -> (trec_eval spec without cut-off, with cut-off) for pytrec_eval; "own" = computed here
_FAMILIES: dict[str, tuple[str | None, str | None]] = {
    "AP": ("map", "map_cut"), "P": (None, "P"), "R": (None, "recall"), "nDCG": ("ndcg", "ndcg_cut"),
    "RR": ("recip_rank", "own"), "Success": (None, "success"), "Judged": (None, "own"), "Bpref": ("bpref", None),
    "infAP": ("infAP", None), "SetP": ("set_P", None), "SetR": ("set_recall", None), "SetF": ("set_F", None),
    "SetAP": ("set_map", None), "IPrec": (None, "iprec_at_recall"), "Rprec": ("Rprec", None),
}
_PARAMS = {"rel": int, "judged_only": lambda v: {"True": True, "False": False}[v]}
_SPEC = re.compile(r"^(?P<name>[A-Za-z]+)(?:\((?P<params>[^()]*)\))?(?:@(?P<cutoff>[0-9]+(?:\.[0-9]+)?))?$")
#: names trec_eval also has: a bare one is trec_eval's measure (same per-topic value)
_TREC_EVAL_SPELLING = {"Rprec"}


@dataclass(frozen=True)
class IrMeasure:
    name: str                       # ir_measures' family name (nDCG)
    cutoff: object = None           # int (rank), float (IPrec recall) or None
    rel: int = 1
    judged_only: bool = False
    extra: tuple = field(default=())

    def __str__(self) -> str:
        params = []
        if self.judged_only:
            params.append("judged_only=True")
        if self.rel != 1:
            params.append(f"rel={self.rel}")
        text = self.name + (f"({','.join(params)})" if params else "")
        return text + (f"@{self.cutoff}" if self.cutoff is not None else "")

    family = IR_FAMILY
    provider = "ir_measures"
    params = ()

    def output_names(self) -> list[str]:
        return [str(self)]

    def spec(self) -> tuple[str, str] | None:
        """(pytrec_eval spec, output key), or None when computed here."""
        plain, cut = _FAMILIES[self.name]
        if self.cutoff is None:
            return (plain, plain)
        if cut == "own":
            return None
        if cut == "iprec_at_recall":
            return (f"{cut}.{self.cutoff}", f"{cut}_{float(self.cutoff):.2f}")
        return (f"{cut}.{self.cutoff}", f"{cut}_{self.cutoff}")


def is_ir_measure(spec) -> bool:
    if not isinstance(spec, str):
        return isinstance(spec, IrMeasure)
    m = _SPEC.match(spec.strip())
    if not m or m.group("name") not in _FAMILIES:
        return False
    return not (spec.strip() in _TREC_EVAL_SPELLING)


def parse(spec: str) -> IrMeasure:
    m = _SPEC.match(spec.strip())
    name = m.group("name")
    kwargs: dict = {}
    for item in filter(None, (m.group("params") or "").split(",")):
        key, _, value = item.partition("=")
        key = key.strip()
        if key not in _PARAMS:
            raise MeasureError(f"ir_measures parameter {key!r} of {spec!r} is not supported by legalir "
                               f"(supported: {', '.join(_PARAMS)})")
        try:
            kwargs[key] = _PARAMS[key](value.strip())
        except (KeyError, ValueError):
            raise MeasureError(f"bad value {value!r} for {key!r} in {spec!r}") from None
    cut = m.group("cutoff")
    plain, with_cut = _FAMILIES[name]
    if cut is None and plain is None:
        raise MeasureError(f"ir_measures measure {name!r} needs a cut-off, e.g. {name}@10")
    if cut is not None and with_cut is None:
        raise MeasureError(f"ir_measures measure {name!r} takes no cut-off (got {spec!r})")
    if cut is not None:
        cut = float(cut) if name == "IPrec" else int(cut)
        if name != "IPrec" and cut < 1:
            raise MeasureError(f"cut-off of {spec!r} must be a positive integer")
    if kwargs.get("rel", 1) < 1 and name not in ("Judged",):
        raise MeasureError(f"rel of {spec!r} must be >= 1")
    return IrMeasure(name, cut, kwargs.get("rel", 1), kwargs.get("judged_only", False))


def values(measures: list[IrMeasure], qrels, run, topics) -> dict[str, dict[str, float]]:
    """Per-topic values ``{qid: {str(measure): value}}`` for the run's topics that have qrels."""
    out: dict[str, dict[str, float]] = {t: {} for t in topics}
    groups: dict[tuple[int, bool], list[IrMeasure]] = {}
    for m in measures:
        if m.spec() is not None:
            groups.setdefault((m.rel, m.judged_only), []).append(m)
    if groups:
        from pytrec_eval_ext import RelevanceEvaluator

        for (rel, judged), ms in groups.items():
            ev = RelevanceEvaluator(query_relevance={t: qrels[t] for t in topics},
                                    measures={m.spec()[0] for m in ms}, relevance_level=rel,
                                    judged_docs_only_flag=judged)
            got = ev.evaluate({t: run[t] for t in topics})
            for t in topics:
                row = got.get(t, {})
                for m in ms:
                    out[t][str(m)] = float(row.get(m.spec()[1], 0.0))
    for m in measures:
        if m.spec() is not None:
            continue
        for t in topics:
            j: Mapping[str, int] = qrels[t]
            ranked = [d for d, _ in sorted(run[t].items(), key=lambda x: (-x[1], x[0]))][: m.cutoff]
            if m.name == "RR":
                out[t][str(m)] = next((1.0 / (i + 1) for i, d in enumerate(ranked) if j.get(d, -1) >= m.rel), 0.0)
            else:  # Judged
                out[t][str(m)] = sum(d in j for d in ranked) / len(ranked) if ranked else 0.0
    return out
