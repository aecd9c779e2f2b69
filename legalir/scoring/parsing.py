"""The one measure parser: trec_eval names, legalir's own and ir_measures objects or names, into an ordered,
merged list of measures (above both :mod:`~legalir.scoring.measures`, the registry of families, and
:mod:`~legalir.scoring.irm`, the reader of ir_measures names). A family's parameters are read as its
declaration says (:class:`legalir.scoring.measures.Family`: ``params`` and ``check``)."""
from __future__ import annotations

import re
from collections.abc import Iterable

from legalir.scoring import irm
from legalir.scoring.measures import (
    ALL_TREC_9,
    FAMILIES,
    NICKNAMES,
    ORDER,
    TREC_EVAL_MEASURES,
    VERSIONS,
    AnyMeasure,
    Family,
    IrMeasure,
    Measure,
    MeasureError,
    family,
    known_names,
)
from legalir.scoring.measures.base import floats
from legalir.scoring.pytrec import LONG_MAX


def parse_measures(specs: Iterable[str | AnyMeasure] | str | None = None, version: str = "10") -> list[AnyMeasure]:
    """Parse trec_eval-style measure specs into an ordered, merged list.

    ``["map", "P.5,10", "ndcg_cut.10", "star3_P.5"]``; a comma list inside
    one spec gives several cutoffs; nicknames (``official``, ``all_trec``,
    ``set``) expand to families with trec_eval's default parameters. The same
    family requested twice gets the union of its parameters (trec_eval would
    keep only the first). Unknown names raise :class:`MeasureError` listing
    the supported ones. ``version``: the trec_eval whose measure set applies
    ("10" or "9": 9.0.x has no rbp, rbp_resid, unj, dcg, ideal_dcg, and its
    ``all_trec`` lacks them).
    """
    if version not in VERSIONS:
        raise MeasureError(f"unknown trec_eval version {version!r}; known: {', '.join(VERSIONS)}")
    if specs is None:
        specs = TREC_EVAL_MEASURES  # what trec_eval computes with no -m (legalir eval's default)
    if isinstance(specs, str):
        specs = [specs]
    fams: dict[str, Family] = {}
    explicit: dict[str, list] = {}
    wants_defaults: set[str] = set()
    ir: list[IrMeasure] = []

    def add(fam: Family, params: tuple | None) -> None:
        fams.setdefault(fam.name, fam)
        cur = explicit.setdefault(fam.name, [])
        if not params:
            wants_defaults.add(fam.name)
        elif fam.params in ("int1", "raw"):  # each parameter set is its own measure (trec_eval keeps the last)
            if params[0] not in cur:
                cur.append(params[0])
        else:
            cur.extend(p for p in params if p not in cur)

    for spec in specs:
        if isinstance(spec, Measure):
            add(spec.family, spec.params or None)
            continue
        if irm.is_ir_measure(spec):
            m = spec if isinstance(spec, IrMeasure) else irm.parse(str(spec))
            if str(m) in FAMILIES:
                raise MeasureError(f"{spec!r} prints as {str(m)!r}, the name of trec_eval's measure, whose topics "
                                   f"are averaged another way; write {str(m)} for trec_eval's, or give a "
                                   f"parameter that differs from its default for ir_measures'")
            if m not in ir:
                ir.append(m)
            continue
        spec = str(spec).strip()
        if not spec:
            raise MeasureError("empty measure name")
        if spec in NICKNAMES:
            for n in (ALL_TREC_9 if spec == "all_trec" and version == "9" else NICKNAMES[spec]):
                add(FAMILIES[n], None)
            continue
        fam, params = _split(spec)
        if version not in fam.versions:
            raise MeasureError(f"measure {fam.name!r} is new in trec_eval 10.0; not available with --compat 9")
        add(fam, _parse_params(params, fam, spec) if params is not None else None)

    out: list[Measure] = []
    for name, fam in fams.items():
        ps = list(explicit[name])
        if fam.params in ("int1", "raw"):
            if name in wants_defaults or not ps:
                out.append(Measure(fam, ()))
            out.extend(Measure(fam, (p,)) for p in ps)
            continue
        if fam.takes_params() and (name in wants_defaults or not ps):
            ps.extend(p for p in fam.defaults if p not in ps)
        out.append(Measure(fam, tuple(sorted(ps))))
    trec = sorted((m for m in out if m.name in ORDER), key=lambda m: ORDER[m.name])
    own = [m for m in out if m.name not in ORDER]
    seen: dict[str, str] = {}
    for one in trec + own:
        for name in one.output_names():
            if name in seen:  # two float parameters that print alike (Rprec_mult.0.251,0.252)
                raise MeasureError(f"measure {one.spec()!r} asks for two values both printed as {name!r}; "
                                   f"trec_eval prints parameters to 2 decimals: request one of them")
            seen[name] = one.spec()
    return [*trec, *own, *ir]


def _parse_params(text: str, fam: Family, spec: str) -> tuple:
    if not fam.takes_params():
        raise MeasureError(f"measure {fam.name!r} takes no parameters (got {spec!r})")
    if fam.params == "raw":  # kept as written (gain maps, coefficients): the family checks them
        items = text.split(",")
        (fam.check or _plain_numbers)(fam, items, spec)
        return (text,)
    out = []
    for tok in text.split(","):
        tok = tok.strip()
        if not tok:
            raise MeasureError(f"empty parameter in measure {spec!r}")
        out.append(_number(tok, fam, spec))
    if fam.params == "int1" and len(out) != 1:
        raise MeasureError(f"measure {fam.name!r} takes one parameter (got {spec!r})")
    if fam.check is not None:
        fam.check(fam, [t.strip() for t in text.split(",")], spec)
    return tuple(out)


def _plain_numbers(fam: Family, items: list[str], spec: str) -> None:
    floats(items, spec)


#: a cut-off as trec_eval reads it (atol): digits, maybe a decimal part, which it drops (``ndcg_cut.23.4``)
_CUTOFF = re.compile(r"[0-9]+(?:\.[0-9]*)?")


def _number(tok: str, fam: Family, spec: str) -> int | float:
    """One cut-off or level of a parameter list, read as trec_eval reads it, or a located refusal."""
    if fam.params == "float":
        try:
            v = float(tok)
        except ValueError:
            v = float("nan")
        if not (v >= 0) or v == float("inf"):
            raise MeasureError(f"parameter {tok!r} of measure {spec!r} must be a number >= 0")
        return v
    if not _CUTOFF.fullmatch(tok):
        hint = " (trec_eval would read 1e2 as 1)" if "e" in tok.lower() else ""
        raise MeasureError(f"parameter {tok!r} of measure {spec!r} must be a positive integer{hint}")
    v = int(tok.split(".")[0])
    if v < 1:
        raise MeasureError(f"parameter {tok!r} of measure {spec!r} must be a positive integer")
    # trec_eval reads a larger cut-off as its largest long (and names it so: P_9223372036854775807)
    return min(v, LONG_MAX)


_UNDERSCORE = re.compile(r"^(.+?)_([0-9][0-9.,]*)$")


def _split(spec: str) -> tuple[Family, str | None]:
    """``P.5,10`` -> (P, "5,10"); also accepts output names (``P_5``, ``star3_P_5``)."""
    if "." in spec:
        name, _, params = spec.partition(".")
        fam = family(name)
        if fam is not None:
            return fam, params
    fam = family(spec)
    if fam is not None:
        return fam, None
    m = _UNDERSCORE.match(spec)
    if m:
        fam = family(m.group(1))
        if fam is not None and fam.takes_params():
            return fam, m.group(2)
    raise MeasureError(f"unknown measure {spec!r}; supported: {known_names()} "
                       f"(parameters as in trec_eval: P.5,10 ndcg_cut.10 star3_P.5; list: `legalir eval --list-measures`)")


