"""Measures named as ir_measures names them (``nDCG@10``, ``P(rel=2)@5``, ``R@100``, ``RR@10``, ``AP``).

Values are ir_measures' own: per topic, what its pytrec_eval provider
computes (pytrec_eval with the measure's relevance level and judged-only
flag, through :func:`legalir.scoring.pytrec.compute` like every other
value), ``RR@k`` as its MS MARCO provider (ties by document id ascending) and
``Judged[@k]`` as its judged provider. Aggregation follows ir_measures: the
mean over every qrels topic, a topic missing from the run counting 0
(``skip_missing`` gives trec_eval's convention: the run's topics only).

A spec is read as ir_measures reads it (Python syntax: ``Name(key=value,...)@cutoff``);
the parameters each family takes are the ones ir_measures accepts for it, and the
printed name is ``str(measure)`` as ir_measures prints it: parameters in the
order written, those equal to their defaults left out (``P(rel=1)@5`` is ``P@5``).

A bare name that trec_eval also has (``P``, ``infAP``, ``Rprec``) is trec_eval's
measure; ``Rprec(rel=1)`` or any ``@``/``(`` form is ir_measures'.
"""
from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from legalir.scoring.judged import drop_unjudged
from legalir.scoring.measures import Family, MeasureError, _known_names
from legalir.scoring.pytrec import LONG_MAX
from legalir.trec import MAX_RELEVANCE

#: what the evaluator and the formatter read of a measure's family
IR_FAMILY = Family("ir_measures", "ir_measures", doc="an ir_measures name")


@dataclass(frozen=True)
class _Spec:
    plain: str | None        # pytrec_eval family without a cut-off ("own": computed here; None: needs one)
    cut: str | None          # with a cut-off (None: takes none)
    params: frozenset        # the parameters ir_measures accepts besides the cut-off
    cut_judged: bool = True  # judged_only accepted together with a cut-off (RR@k: no)


_RJ = frozenset({"rel", "judged_only"})
FAMILIES: dict[str, _Spec] = {
    "AP": _Spec("map", "map_cut", _RJ), "P": _Spec(None, "P", _RJ), "R": _Spec(None, "recall", _RJ),
    "nDCG": _Spec("ndcg", "ndcg_cut", frozenset({"judged_only"})),
    "RR": _Spec("recip_rank", "own", _RJ, cut_judged=False), "Success": _Spec(None, "success", _RJ),
    "Judged": _Spec("own", "own", frozenset()), "Bpref": _Spec("bpref", None, frozenset({"rel"})),
    "infAP": _Spec("infAP", None, frozenset({"rel"})), "SetP": _Spec("set_P", None, _RJ),
    "SetR": _Spec("set_recall", None, frozenset({"rel"})), "SetF": _Spec("set_F", None, _RJ),
    "SetAP": _Spec("set_map", None, _RJ), "IPrec": _Spec(None, "iprec_at_recall", _RJ),
    "Rprec": _Spec("Rprec", None, _RJ),
}
_DEFAULTS = {"rel": 1, "judged_only": False}
#: bare names that are trec_eval's measures (same spelling): read as trec_eval's
TREC_EVAL_SPELLING = frozenset({"P", "infAP", "Rprec"})
#: common spellings of ir_measures names, for "did you mean"
_ALIASES = {"map": "AP", "mrr": "RR", "rr": "RR", "recip_rank": "RR", "recall": "R", "r": "R", "ndcg": "nDCG",
            "ndcg_cut": "nDCG", "p": "P", "precision": "P", "success": "Success", "bpref": "Bpref",
            "rprec": "Rprec", "infap": "infAP", "judged": "Judged", "iprec": "IPrec", "ap": "AP",
            "setp": "SetP", "setr": "SetR", "setf": "SetF", "setap": "SetAP", "map_cut": "AP"}


@dataclass(frozen=True)
class IrMeasure:
    """One ir_measures measure: ``name`` (nDCG), ``cutoff`` (int rank, float recall level or None),
    ``rel``, ``judged_only``; ``text`` is its printed name."""

    name: str
    cutoff: object
    rel: int
    judged_only: bool
    text: str

    def __str__(self) -> str:
        return self.text

    family = IR_FAMILY
    provider = "ir_measures"
    params = ()

    def output_names(self) -> list[str]:
        return [str(self)]

    def request(self) -> tuple[str, object] | None:
        """(pytrec_eval family, parameter) for :func:`legalir.scoring.pytrec.compute`, or None when
        computed here."""
        spec = FAMILIES[self.name]
        fam = spec.plain if self.cutoff is None else spec.cut
        if fam == "own":
            return None
        return (fam, self.cutoff)


def _render(name: str, params: list[tuple[str, object]], cutoff) -> str:
    """ir_measures' ``repr``: parameters in the order given, defaults left out, then ``@cutoff``."""
    shown = ",".join(f"{k}={v!r}" for k, v in params if v != _DEFAULTS[k])
    text = name + (f"({shown})" if shown else "")
    return text + (f"@{cutoff}" if cutoff is not None else "")


def _suggest(name: str, rest: str) -> str:
    fix = _ALIASES.get(name.lower()) or next((f for f in FAMILIES if f.lower() == name.lower()), None)
    if fix is None:  # a typo: the closest ir_measures family name (nDGC -> nDCG)
        import difflib

        known = {**{f.lower(): f for f in FAMILIES}, **_ALIASES}
        close = difflib.get_close_matches(name.lower(), list(known), n=1, cutoff=0.6)
        fix = known[close[0]] if close else None
    return f"; did you mean {fix}{rest}?" if fix else ""


_EXPRESSION = object()  # a parameter value that is not a plain constant


def _tree(spec: str):
    """(name, [(key, value)], cutoff) of ``Name(k=v,...)@c`` read as Python, as ir_measures reads it."""
    bad = MeasureError(f"cannot read measure {spec!r}: an ir_measures name is Name(key=value,...)@cutoff, "
                       f"e.g. nDCG@10, P(rel=2)@5")
    try:
        node = ast.parse(spec.strip(), mode="eval").body
    except SyntaxError:
        raise bad from None
    cutoff = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        if not isinstance(node.right, ast.Constant):
            raise bad
        cutoff = node.right.value
        node = node.left
    params: list[tuple[str, object]] = []
    if isinstance(node, ast.Call):
        if node.args or any(k.arg is None for k in node.keywords):
            raise bad
        for k in node.keywords:
            params.append((k.arg, k.value.value if isinstance(k.value, ast.Constant) else _EXPRESSION))
        node = node.func
    if not isinstance(node, ast.Name):
        raise bad
    return node.id, params, cutoff


def is_ir_measure(spec) -> bool:
    """True when ``spec`` is read as an ir_measures name (see the module's docstring)."""
    if isinstance(spec, IrMeasure):
        return True
    if not isinstance(spec, str):
        return False
    text = spec.strip()
    if "@" in text or "(" in text:
        return True
    return text in FAMILIES and text not in TREC_EVAL_SPELLING


def parse(spec: str) -> IrMeasure:
    """Read one ir_measures name, refusing (:class:`MeasureError`) what ir_measures would refuse or
    could only answer with a meaningless number."""
    name, params, cutoff = _tree(spec)
    fam = FAMILIES.get(name)
    rest = spec.strip()[len(name):] if spec.strip().startswith(name) else ""
    if fam is None:
        raise MeasureError(f"unknown measure {spec!r}{_suggest(name, rest)} (ir_measures names legalir scores: "
                           f"{', '.join(FAMILIES)}; trec_eval and legalir names: {_known_names()}; "
                           f"`legalir eval --list-measures` explains each)")
    seen: dict[str, object] = {}
    for k, v in params:
        if k in seen:
            raise MeasureError(f"parameter {k!r} given twice in {spec!r}")
        if k not in fam.params:
            ok = ", ".join(sorted(fam.params)) or "none"
            raise MeasureError(f"parameter {k!r} of {spec!r} is not supported by legalir's {name} (it takes: {ok})")
        if v is _EXPRESSION:
            raise MeasureError(f"parameter {k!r} of {spec!r} must be a plain value (a number, True, False)")
        if k == "rel" and (type(v) is not int or not 1 <= v <= MAX_RELEVANCE):
            raise MeasureError(f"rel of {spec!r} must be an integer from 1 to {MAX_RELEVANCE} (the grades legalir "
                               f"reads; as for -l)")
        if k == "judged_only" and type(v) is not bool:
            raise MeasureError(f"judged_only of {spec!r} must be True or False")
        seen[k] = v
    if cutoff is None and fam.plain is None:
        raise MeasureError(f"ir_measures measure {name!r} needs a cut-off, e.g. {name}@10"
                           + (" (bare P is trec_eval's: P_5 ... P_1000)" if name == "P" else ""))
    written = cutoff
    if cutoff is not None:
        if fam.cut is None:
            raise MeasureError(f"ir_measures measure {name!r} takes no cut-off (got {spec!r})")
        if name == "IPrec":
            if type(cutoff) is not float or not 0 <= cutoff <= 1:
                raise MeasureError(f"the recall level of {spec!r} must be a decimal number between 0 and 1 "
                                   f"(as ir_measures reads it: IPrec@1.0, IPrec@0.5)")
        elif type(cutoff) is not int or cutoff < 1:
            raise MeasureError(f"the cut-off of {spec!r} must be a positive integer (a rank)")
        elif cutoff > LONG_MAX:
            raise MeasureError(f"the cut-off of {spec!r} is larger than pytrec_eval can read (2^63-1); "
                               f"a cut-off beyond the run's depth scores the whole ranking")
        if seen.get("judged_only") and not fam.cut_judged:
            raise MeasureError(f"ir_measures has no {name} with judged_only and a cut-off ({spec!r}); "
                               f"use -J to drop unjudged documents for every measure")
    text = _render(name, params, written)
    return IrMeasure(name, cutoff, seen.get("rel", 1), seen.get("judged_only", False), text)


def own_values(measures: list[IrMeasure], qrels, run, topics, judged: bool = False) -> dict[str, dict[str, float]]:
    """Per-topic values ``{qid: {str(measure): value}}`` of the measures computed here (``RR@k``,
    ``Judged[@k]``: :meth:`IrMeasure.request` is None) for ``topics`` (run topics with qrels); the others
    come from pytrec_eval with the evaluator's other values.

    ``judged`` (-J) drops unjudged documents before every measure, as ``judged_only=True`` does."""

    out: dict[str, dict[str, float]] = {t: {} for t in topics}
    own = [m for m in measures if m.request() is None]
    for t in topics if own else ():
        j: Mapping[str, int] = qrels[t]
        docs = drop_unjudged(run[t], j) if judged else run[t]
        ranking = [d for d, _ in sorted(docs.items(), key=lambda x: (-x[1], x[0]))]
        for m in own:
            ranked = ranking[: m.cutoff] if m.cutoff is not None else ranking
            if m.name == "RR":
                first = next((i for i, d in enumerate(ranked) if j.get(d, -1) >= m.rel), None)
                out[t][str(m)] = 0.0 if first is None else 1.0 / (first + 1)
            else:  # Judged: the share of the top k with a judgement (ir_measures' judged provider)
                out[t][str(m)] = sum(d in j for d in ranked) / len(ranked) if ranked else 0.0  # defined: none
    return out
