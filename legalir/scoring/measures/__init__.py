"""The measure registry: every family module of this package, found by discovery.

A measure family is one small module here (the types are in :mod:`.base`):

* ``FAMILIES``: the trec_eval- or legalir-named :class:`~.base.Family` values it declares (a
  ``compute`` function, or none: pytrec_eval computes it);
* ``IR_FAMILIES``: the ir_measures-named :class:`~.base.IrFamily` values it declares;
* ``match(name)``: a family named by pattern (``starK_P``), with ``KNOWN`` and ``PATTERNS`` for the
  listings.

Adding a measure is adding a module (``ir_compat.py`` is the example, with its parity test in
``tests/test_measure_compat.py``); nothing here or in the evaluator names a family. A name declared
twice stops the import. Output order is trec_eval's (:data:`TREC_EVAL_ORDER`, the order of its
measure table), then legalir's own measures in the order they were requested.
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from types import ModuleType

from legalir.scoring.measures.base import (
    DEFAULT_CUTOFFS,
    VERSIONS,
    AnyMeasure,
    Context,
    Family,
    IrFamily,
    IrMeasure,
    Measure,
    MeasureError,
)

__all__ = ["ALL_TREC_9", "AnyMeasure", "Context", "DEFAULT_CUTOFFS", "DEFAULT_MEASURES", "FAMILIES", "Family",
           "IR_FAMILIES", "IrFamily", "IrMeasure", "Measure", "MeasureError", "NICKNAMES", "ORDER",
           "TREC_EVAL_10_ONLY", "TREC_EVAL_MEASURES", "VERSIONS", "family", "known_names", "supported"]

#: trec_eval's measure table: the order it prints measures in, whatever the order of -m options
TREC_EVAL_ORDER = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                   "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult",
                   "utility", "11pt_avg", "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut",
                   "map_cut", "relative_P", "success", "set_P", "set_relative_P", "set_recall", "set_map", "set_F",
                   "num_nonrel_judged_ret", "yaap", "rbp", "rbp_resid", "unj")
ORDER = {name: i for i, name in enumerate(TREC_EVAL_ORDER)}


#: modules of this package that declare no family (the types)
_NOT_FAMILIES = frozenset({"base"})


def _modules() -> list[ModuleType]:
    return [importlib.import_module(f"{__name__}.{info.name}") for info in pkgutil.iter_modules(__path__)
            if info.name not in _NOT_FAMILIES]


def _discover() -> tuple[dict[str, Family], dict[str, IrFamily], list[Callable[[str], Family | None]],
                         list[str], list[str]]:
    fams: dict[str, Family] = {}
    ir: dict[str, IrFamily] = {}
    patterns: list[Callable[[str], Family | None]] = []
    known: list[str] = []
    listed: list[str] = []
    for mod in _modules():
        for f in getattr(mod, "FAMILIES", ()):
            if f.name in fams:
                raise RuntimeError(f"measure family {f.name!r} is declared twice ({mod.__name__})")
            fams[f.name] = f
        for g in getattr(mod, "IR_FAMILIES", ()):
            if g.name in ir:
                raise RuntimeError(f"ir_measures family {g.name!r} is declared twice ({mod.__name__})")
            ir[g.name] = g
        if hasattr(mod, "match"):
            patterns.append(mod.match)
            known.extend(mod.KNOWN)
            listed.extend(mod.PATTERNS)
    # trec_eval's in its table order, then legalir's own in the order of their modules
    ordered = dict(sorted(fams.items(), key=lambda kv: ORDER.get(kv[0], len(ORDER))))
    return ordered, ir, patterns, known, listed


FAMILIES, IR_FAMILIES, _PATTERNS, _KNOWN_PATTERNS, _LISTED_PATTERNS = _discover()


def family(name: str) -> Family | None:
    """The family named ``name`` (``P``, ``star3_P``), or None."""
    found = FAMILIES.get(name)
    if found is not None:
        return found
    for match in _PATTERNS:
        found = match(name)
        if found is not None:
            return found
    return None


#: families trec_eval 9.0.x does not have
TREC_EVAL_10_ONLY = frozenset(f.name for f in FAMILIES.values() if "9" not in f.versions)

# trec_eval's nicknames, in its own spelling.
NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P"),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_relative_P",
            "set_recall", "set_map", "set_F"),
    "all_trec": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP",
                 "gm_bpref", "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut",
                 "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map",
                 "set_F", "num_nonrel_judged_ret"),
}
#: trec_eval 9.0.x's all_trec (without 10.0's additions)
ALL_TREC_9 = tuple(n for n in NICKNAMES["all_trec"] if n not in TREC_EVAL_10_ONLY)

#: what `legalir eval` prints when no -m is given, as trec_eval does: trec_eval's own default set
TREC_EVAL_MEASURES = ("official",)

#: the one default measure set of legalir: what legalir.evaluate, legalir.compare, `legalir compare`,
#: `legalir serve`'s run scores and the MCP evaluate/fuse tools score when neither the caller nor the
#: dataset names measures (a dataset's protocol, e.g. ACORD's, comes first where the dataset is known).
#: `legalir eval` alone prints trec_eval's default (TREC_EVAL_MEASURES) instead, as the trec_eval it replaces.
DEFAULT_MEASURES = ("map", "ndcg_cut.10")

_SHOWN_PARAMS = {"int": "[.k1,k2,...]", "float": "[.x1,x2,...]", "int1": "[.N]", "raw": "[.params]"}


def supported() -> str:
    """One line per family: what `-m` accepts (for help and error messages)."""
    lines = [f"  {f.name}{_SHOWN_PARAMS.get(f.params or '', '')}  ({f.provider}) {f.doc}" for f in FAMILIES.values()]
    lines.extend(_LISTED_PATTERNS)
    lines.append("  nicknames: " + ", ".join(NICKNAMES))
    lines.append("  ir_measures names: " + ", ".join(IR_FAMILIES) + " (e.g. nDCG@10, P(rel=2)@5, RR@10)")
    return "\n".join(lines)


def known_names() -> str:
    return ", ".join(list(FAMILIES) + _KNOWN_PATTERNS + list(NICKNAMES))
