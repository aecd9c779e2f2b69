"""The one measure parser: trec_eval names, legalir's own and ir_measures objects or names, into an ordered,
merged list of :class:`legalir.scoring.measures.Measure` (above both :mod:`~legalir.scoring.measures`, where
families are named once, and :mod:`~legalir.scoring.irm`, the ir_measures names)."""
from __future__ import annotations

from collections.abc import Iterable

from legalir.scoring import irm
from legalir.scoring.measures import (
    _ORDER,
    ALL_TREC_9,
    FAMILIES,
    NICKNAMES,
    TREC_EVAL_10_ONLY,
    TREC_EVAL_MEASURES,
    VERSIONS,
    Family,
    Measure,
    MeasureError,
    _parse_params,
    _split,
)


def parse_measures(specs: Iterable[str | Measure] | str | None = None, version: str = "10") -> list[Measure]:
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
    ir: list = []

    def add(fam: Family, params: tuple | None):
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
            m = spec if isinstance(spec, irm.IrMeasure) else irm.parse(spec)
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
        if version == "9" and fam.name in TREC_EVAL_10_ONLY:
            raise MeasureError(f"measure {fam.name!r} is new in trec_eval 10.0; not available with --compat 9")
        add(fam, _parse_params(params, fam, spec) if params is not None else None)

    out = []
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
    trec = sorted((m for m in out if m.name in _ORDER), key=lambda m: _ORDER[m.name])
    own = [m for m in out if m.name not in _ORDER]
    seen: dict[str, str] = {}
    for m in trec + own:
        for name in m.output_names():
            if name in seen:  # two float parameters that print alike (Rprec_mult.0.251,0.252)
                raise MeasureError(f"measure {m.spec()!r} asks for two values both printed as {name!r}; "
                                   f"trec_eval prints parameters to 2 decimals: request one of them")
            seen[name] = m.spec()
    return trec + own + ir
