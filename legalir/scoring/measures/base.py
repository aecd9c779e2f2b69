"""What a measure is: the typed values every family module declares (ir_measures' measure/provider split).

* :class:`Family`: a trec_eval-named (or legalir-named) family: its name, the parameters it takes
  (:attr:`Family.params` and :attr:`Family.check`), how its per-topic values are summarised
  (:attr:`Family.aggregate`) and who computes them: pytrec_eval (``compute`` is ``None``: trec_eval's
  own C code, through :mod:`legalir.scoring.pytrec`) or the family's ``compute`` function;
* :class:`IrFamily`: an ir_measures-named family: its parameters (:class:`IrParam`), its cut-off and
  the pytrec_eval family it delegates to, or its ``compute`` function;
* :class:`Measure`: one requested family with its parameters.

A ``compute`` function sees a :class:`legalir.scoring.prepare.Topic`: the topic's run after ``-M`` and
judged-only, ranked in one place, never the raw run.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from legalir.errors import LegalirError

if TYPE_CHECKING:
    from legalir.scoring.prepare import Topic

#: trec_eval's default cutoffs for cutoff families (P, recall, ndcg_cut, ...)
DEFAULT_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
#: trec_eval versions `--compat` accepts
VERSIONS = ("10", "9")
ALL_VERSIONS = frozenset(VERSIONS)

Aggregate = Literal["mean", "sum", "gm", "num_q", "num_rel", "runid", "none", "subset_mean"]
ParamKind = Literal["int", "float", "int1", "raw"]
Value = float | int | str


class MeasureError(LegalirError, ValueError):
    """An unknown measure or bad measure parameters."""


@dataclass(frozen=True)
class Context:
    """What a family's ``compute`` may read besides the topic: trec_eval's ``-l`` and ``-N``."""

    level: int = 1
    num_docs: int = 0


#: per-topic values of one measure: ``{output name: value}``; a name left out is undefined for the topic
Compute = Callable[["Measure", "Topic", Context], Mapping[str, Value]]
#: extra checks of a family's parameters: (family, parameters as written, spec) -> raise MeasureError
Check = Callable[["Family", list[str], str], None]


@dataclass(frozen=True)
class Family:
    """A measure family: one name, its parameters, its summary, and what computes it.

    ``aggregate`` says how the ``all`` value comes from the per-topic ones: ``mean`` (sum in
    topic order / number of topics), ``sum``, ``gm`` (trec_eval's geometric mean of per-topic
    logs), ``num_q``, ``num_rel`` (a sum; with -c recounted over every qrels topic), ``runid``,
    ``none`` (per-topic only, like relstring), ``subset_mean`` (mean over the topics the measure
    is defined for: the star measures).

    ``params``: ``None`` (none), ``"int"`` (cut-offs), ``"float"`` (levels), ``"int1"`` (one int),
    ``"raw"`` (kept as written: gain maps, coefficients; ``check`` validates them).
    ``compute``: the per-topic values in ``computed_in`` versions of trec_eval; elsewhere (or when
    ``None``) pytrec_eval computes the family. ``reset``: the value trec_eval 10.0 gives it on the
    one-document placeholder ranking of a qrels topic missing from the run under ``-c`` (10.0 resets
    by value name: the plain name only, or every cut-off of a cut-off family, as it matches ``unj*``).
    """

    name: str
    provider: Literal["trec_eval", "legalir", "ir_measures"]
    aggregate: Aggregate = "mean"
    value: Literal["float", "int", "str"] = "float"
    params: ParamKind | None = None
    defaults: tuple = ()
    per_topic: bool = True        # printed per topic with -q
    summary: bool = True          # printed on the `all` lines
    doc: str = ""
    compute: Compute | None = None
    computed_in: frozenset[str] = ALL_VERSIONS
    versions: frozenset[str] = ALL_VERSIONS
    check: Check | None = None
    reset: Value | None = None
    subset: str = ""              # subset_mean: the topics it is defined for ("a document rated >= 3 stars")

    def takes_params(self) -> bool:
        return self.params is not None

    def computed(self, version: str) -> bool:
        """True when legalir computes the family's values for trec_eval ``version`` (else pytrec_eval)."""
        return self.compute is not None and version in self.computed_in


@dataclass(frozen=True)
class Measure:
    """One requested family with its parameters (``()`` = the family's defaults)."""

    family: Family
    params: tuple = ()

    @property
    def name(self) -> str:
        return self.family.name

    @property
    def provider(self) -> str:
        return self.family.provider

    def effective_params(self) -> tuple:
        return self.params or self.family.defaults

    def raw(self) -> str | None:
        """The parameters of a ``raw`` family as written (``None``: its defaults)."""
        return str(self.params[0]) if self.family.params == "raw" and self.params else None

    def spec(self) -> str:
        """The trec_eval -m spelling: ``P.5,10``."""
        kind = self.family.params
        if kind is None or not self.params:
            return self.name
        if kind == "raw":
            return f"{self.name}.{self.params[0]}"
        return f"{self.name}." + ",".join(_param_str(p, kind) for p in self.params)

    def output_names(self) -> list[str]:
        """Names of the values, as trec_eval prints them (``P_5``, ``iprec_at_recall_0.10``)."""
        f = self.family
        if f.params is None:
            return [f.name]
        if f.params in ("int1", "raw"):  # named plainly unless parameters are given, then name_<as given>
            return [f.name] if not self.params else [f"{f.name}_{self.params[0]}"]
        kind = f.params
        return [f"{f.name}_{_param_name(p, kind)}" for p in self.effective_params()]


def _param_str(p: object, kind: str) -> str:
    if kind != "float" or not isinstance(p, float):
        return str(p)
    text = f"{p:.10f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _param_name(p: object, kind: str) -> str:
    return f"{p:.2f}" if kind == "float" and isinstance(p, float) else str(p)


# ---------------------------------------------------------------- ir_measures-named families

@dataclass(frozen=True)
class IrParam:
    """A parameter an ir_measures family takes (besides its cut-off): its default and what it accepts."""

    default: object
    accepts: Callable[[object], bool]
    expected: str  # what `accepts` wants, for the error: "an integer from 1 to 2147483647"


@dataclass(frozen=True)
class IrFamily:
    """An ir_measures family as ir_measures declares it: its parameters and its cut-off.

    ``cutoff``: ``"no"``, ``"optional"`` or ``"required"``; ``float_cutoff``: a recall level (IPrec)
    instead of a rank. Values: pytrec_eval's ``plain`` (no cut-off) or ``cut`` family, or, where that
    is ``None``, ``compute`` (the topic at the measure's judged-only flag) -> one value.
    ``cut_judged``: judged_only accepted together with a cut-off (ir_measures' RR@k: no).
    """

    name: str
    params: Mapping[str, IrParam]
    cutoff: Literal["no", "optional", "required"]
    plain: str | None = None
    cut: str | None = None
    compute: Callable[[IrMeasure, Topic], float] | None = None
    float_cutoff: bool = False
    cut_judged: bool = True
    doc: str = ""


#: what the evaluator and the formatter read of an ir_measures measure's family
IR_FAMILY = Family("ir_measures", "ir_measures", doc="an ir_measures name")


@dataclass(frozen=True)
class IrMeasure:
    """One ir_measures measure: its family, ``cutoff`` (int rank, float recall level or None), its
    parameters (defaults filled in) and ``text``, its name as ir_measures prints it."""

    ir: IrFamily
    cutoff: int | float | None
    values: tuple[tuple[str, object], ...]
    text: str

    family = IR_FAMILY
    provider = "ir_measures"
    params: tuple = ()

    def __str__(self) -> str:
        return self.text

    @property
    def name(self) -> str:
        return self.ir.name

    def param(self, key: str) -> object:
        return dict(self.values)[key]

    @property
    def rel(self) -> int:
        v = dict(self.values).get("rel", 1)
        return v if isinstance(v, int) else 1

    @property
    def judged_only(self) -> bool:
        return dict(self.values).get("judged_only") is True

    def output_names(self) -> list[str]:
        return [self.text]

    def request(self) -> tuple[str, object] | None:
        """(pytrec_eval family, parameter) for :func:`legalir.scoring.pytrec.compute`, or None when the
        family computes the value itself."""
        fam = self.ir.plain if self.cutoff is None else self.ir.cut
        return None if fam is None else (fam, self.cutoff)


AnyMeasure = Measure | IrMeasure


def names(measures: Iterable[AnyMeasure]) -> list[str]:
    """Every output name of ``measures``, in order."""
    return [n for m in measures for n in m.output_names()]


__all__ = ["ALL_VERSIONS", "AnyMeasure", "Context", "DEFAULT_CUTOFFS", "Family", "IR_FAMILY", "IrFamily",
           "IrMeasure", "IrParam", "Measure", "MeasureError", "VERSIONS"]


# ---------------------------------------------------------------- parameter checks a family declares

_NUMBER = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
#: a gain map's entry (relevance level = gain; trec_eval reads the level with atol, so ``x=1`` and ``1.5=2``
#: would silently become other levels: only integers are accepted) and rbp's persistence
_PAIR = re.compile(rf"[-+]?[0-9]+={_NUMBER}")
_P = re.compile(rf"p={_NUMBER}")


def _finite(values: list[float], spec: str) -> None:
    if not all(math.isfinite(v) for v in values):  # trec_eval would print nan or inf
        raise MeasureError(f"the parameters of measure {spec!r} must be finite numbers")


def gain_map(fam: Family, items: list[str], spec: str) -> None:
    """A gain map, ``level=gain,...`` (G, ndcg, dcg ...)."""
    bad = [x for x in items if not _PAIR.fullmatch(x)]
    if bad:
        raise MeasureError(f"parameter {bad[0]!r} of measure {spec!r} must be an integer relevance level = its "
                           f"gain (a gain map such as {fam.name}.1=3,2=9)")
    _finite([float(x.partition("=")[2]) for x in items], spec)


def persistence(fam: Family, items: list[str], spec: str) -> None:
    """rbp's ``p=number``, between 0 and 1."""
    bad = [x for x in items if not _P.fullmatch(x)]
    if bad:
        raise MeasureError(f"parameter {bad[0]!r} of measure {spec!r} must be p=number (the persistence, e.g. "
                           f"rbp.p=0.95)")
    values = [float(x.partition("=")[2]) for x in items]
    _finite(values, spec)
    if not all(0 <= v <= 1 for v in values):
        raise MeasureError(f"the persistence p of measure {spec!r} must be between 0 and 1")


def numbers(count: int | None = None, unit: bool = False, what: str = "") -> Check:
    """Plain numbers: exactly ``count`` of them (if given), each between 0 and 1 (``unit``);
    ``what`` names them in the error."""
    def check(fam: Family, items: list[str], spec: str) -> None:
        values = floats(items, spec)
        if unit and not all(0 <= v <= 1 for v in values):
            raise MeasureError(f"{what} of measure {spec!r} must be between 0 and 1 (trec_eval would print 0)")
        if count is not None and len(items) != count:
            raise MeasureError(f"measure {fam.name!r} takes {what or 'one parameter'} (got {spec!r})")
    return check


def floats(items: list[str], spec: str) -> list[float]:
    """``items`` as finite numbers, or a located refusal."""
    try:
        values = [float(x) for x in items]
    except ValueError as e:
        bad = str(e).rpartition(": ")[2]
        raise MeasureError(f"parameter {bad} of measure {spec!r} must be a number") from None
    _finite(values, spec)
    return values
