"""Measures named as ir_measures names them (``nDCG@10``, ``P(rel=2)@5``, ``R@100``, ``RR@10``, ``AP``): the reader.

The families are declared in :mod:`legalir.scoring.measures` (``IR_FAMILIES`` of its modules): the
parameters ir_measures accepts for each, its cut-off, and the pytrec_eval family or the ``compute``
function that gives its values. Aggregation follows ir_measures: the mean over every qrels topic, a
topic missing from the run counting 0 (``skip_missing`` gives trec_eval's convention: the run's topics only).

A spec is read as ir_measures reads it (Python syntax: ``Name(key=value,...)@cutoff``);
the printed name is ``str(measure)`` as ir_measures prints it: parameters in the
order written, those equal to their defaults left out (``P(rel=1)@5`` is ``P@5``).

A bare name that trec_eval also has (``P``, ``infAP``, ``Rprec``) is trec_eval's
measure; ``Rprec(rel=1)`` or any ``@``/``(`` form is ir_measures'.
"""
from __future__ import annotations

import ast

from legalir.scoring.measures import IR_FAMILIES, known_names
from legalir.scoring.measures.base import IrFamily, IrMeasure, MeasureError
from legalir.scoring.pytrec import LONG_MAX

#: bare names that are trec_eval's measures (same spelling): read as trec_eval's
TREC_EVAL_SPELLING = frozenset({"P", "infAP", "Rprec"})
#: common spellings of ir_measures names, for "did you mean"
_ALIASES = {"map": "AP", "mrr": "RR", "rr": "RR", "recip_rank": "RR", "recall": "R", "r": "R", "ndcg": "nDCG",
            "ndcg_cut": "nDCG", "p": "P", "precision": "P", "success": "Success", "bpref": "Bpref",
            "rprec": "Rprec", "infap": "infAP", "judged": "Judged", "iprec": "IPrec", "ap": "AP",
            "setp": "SetP", "setr": "SetR", "setf": "SetF", "setap": "SetAP", "map_cut": "AP", "compat": "Compat"}


def _render(fam: IrFamily, params: list[tuple[str, object]], cutoff: object) -> str:
    """ir_measures' ``repr``: parameters in the order given, defaults left out, then ``@cutoff``."""
    name = fam.name
    shown = ",".join(f"{k}={v!r}" for k, v in params if v != fam.params[k].default)
    text = name + (f"({shown})" if shown else "")
    return text + (f"@{cutoff}" if cutoff is not None else "")


def _suggest(name: str, rest: str) -> str:
    fix = _ALIASES.get(name.lower()) or next((f for f in IR_FAMILIES if f.lower() == name.lower()), None)
    if fix is None:  # a typo: the closest ir_measures family name (nDGC -> nDCG)
        import difflib

        known = {**{f.lower(): f for f in IR_FAMILIES}, **_ALIASES}
        close = difflib.get_close_matches(name.lower(), list(known), n=1, cutoff=0.6)
        fix = known[close[0]] if close else None
    return f"; did you mean {fix}{rest}?" if fix else ""


_EXPRESSION = object()  # a parameter value that is not a plain constant


def _tree(spec: str) -> tuple[str, list[tuple[str, object]], object]:
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
            assert k.arg is not None  # **kwargs refused above
            params.append((k.arg, k.value.value if isinstance(k.value, ast.Constant) else _EXPRESSION))
        node = node.func
    if not isinstance(node, ast.Name):
        raise bad
    return node.id, params, cutoff


def is_ir_measure(spec: object) -> bool:
    """True when ``spec`` is read as an ir_measures name (see the module's docstring)."""
    if isinstance(spec, IrMeasure):
        return True
    if not isinstance(spec, str):
        return False
    text = spec.strip()
    if "@" in text or "(" in text:
        return True
    return text in IR_FAMILIES and text not in TREC_EVAL_SPELLING


def parse(spec: str) -> IrMeasure:
    """Read one ir_measures name, refusing (:class:`MeasureError`) what ir_measures would refuse or
    could only answer with a meaningless number."""
    name, params, cutoff = _tree(spec)
    fam = IR_FAMILIES.get(name)
    rest = spec.strip()[len(name):] if spec.strip().startswith(name) else ""
    if fam is None:
        raise MeasureError(f"unknown measure {spec!r}{_suggest(name, rest)} (ir_measures names legalir scores: "
                           f"{', '.join(IR_FAMILIES)}; trec_eval and legalir names: {known_names()}; "
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
        if not fam.params[k].accepts(v):
            raise MeasureError(f"{k} of {spec!r} must be {fam.params[k].expected}")
        seen[k] = v
    if cutoff is None and fam.cutoff == "required":
        raise MeasureError(f"ir_measures measure {name!r} needs a cut-off, e.g. {name}@10"
                           + (" (bare P is trec_eval's: P_5 ... P_1000)" if name == "P" else ""))
    if cutoff is not None:
        if fam.cutoff == "no":
            raise MeasureError(f"ir_measures measure {name!r} takes no cut-off (got {spec!r})")
        if fam.float_cutoff:
            if type(cutoff) is not float or not 0 <= cutoff <= 1:
                raise MeasureError(f"the recall level of {spec!r} must be a decimal number between 0 and 1 "
                                   f"(as ir_measures reads it: {name}@1.0, {name}@0.5)")
        elif type(cutoff) is not int or cutoff < 1:
            raise MeasureError(f"the cut-off of {spec!r} must be a positive integer (a rank)")
        elif cutoff > LONG_MAX:
            raise MeasureError(f"the cut-off of {spec!r} is larger than pytrec_eval can read (2^63-1); "
                               f"a cut-off beyond the run's depth scores the whole ranking")
        if seen.get("judged_only") and not fam.cut_judged:
            raise MeasureError(f"ir_measures has no {name} with judged_only and a cut-off ({spec!r}); "
                               f"use -J to drop unjudged documents for every measure")
    assert cutoff is None or isinstance(cutoff, (int, float))  # the checks above
    values = tuple((k, seen.get(k, p.default)) for k, p in fam.params.items())
    return IrMeasure(fam, cutoff, values, _render(fam, params, cutoff))
