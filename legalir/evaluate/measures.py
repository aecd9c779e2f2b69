"""The one place where evaluation measures are named.

A measure is requested as trec_eval spells it on its command line
(``map``, ``P.5,10``, ``ndcg_cut.10``, ``iprec_at_recall.0.5``) and is
reported under trec_eval's output names (``P_5``, ``ndcg_cut_10``,
``iprec_at_recall_0.50``). Each *family* is named once here, with the
provider that computes it:

* ``trec_eval``: computed by pytrec_eval (trec_eval 9's own C code), then
  aggregated here exactly as trec_eval aggregates (mean, sum, geometric mean,
  ``-c``), because pytrec_eval only returns per-topic values;
* ``legalir``: measures trec_eval lacks, computed in :mod:`legalir.evaluate.custom`
  (``recip_rank_cut``, ``recall_all``, ``starK_P``) or that pytrec_eval cannot
  return (``relstring``, a string).

Output order is trec_eval's (the order of its measure table), then legalir's
own measures in the order they were requested.
"""
from __future__ import annotations
from legalir.errors import LegalirError

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

#: trec_eval's default cutoffs for cutoff families (P, recall, ndcg_cut, ...)
DEFAULT_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


class MeasureError(LegalirError, ValueError):
    """An unknown measure or bad measure parameters."""


@dataclass(frozen=True)
class Family:
    """A measure family: one name, maybe parameters, one provider.

    ``aggregate`` says how the ``all`` value comes from the per-topic ones:
    ``mean`` (sum in topic order / number of topics), ``sum``, ``gm``
    (trec_eval's geometric mean of per-topic logs), ``num_q``, ``num_rel``
    (a sum; with -c recounted over every qrels topic), ``runid``, ``none``
    (per-topic only, like relstring), ``subset_mean`` (mean over the topics
    the measure is defined for: the star measures).
    """

    name: str
    provider: str                 # "trec_eval" | "legalir"
    aggregate: str = "mean"
    value: str = "float"          # "float" | "int" | "str": how values print
    params: str | None = None     # None | "int" (cutoffs) | "float" | "int1" (one int)
    defaults: tuple = ()
    per_topic: bool = True        # printed per topic with -q
    summary: bool = True          # printed on the `all` lines
    doc: str = ""

    def takes_params(self) -> bool:
        return self.params is not None


# trec_eval 9.0.4's measures that pytrec_eval can compute, in trec_eval's table
# order (the order trec_eval prints them in, whatever the order of -m options).
_TREC_EVAL = (
    Family("runid", "trec_eval", "runid", "str", per_topic=False, doc="run tag (last line of the run file)"),
    Family("num_q", "trec_eval", "num_q", "int", per_topic=False, doc="number of topics averaged over"),
    Family("num_ret", "trec_eval", "sum", "int", doc="documents retrieved"),
    Family("num_rel", "trec_eval", "num_rel", "int", doc="relevant documents judged"),
    Family("num_rel_ret", "trec_eval", "sum", "int", doc="relevant documents retrieved"),
    Family("map", "trec_eval", doc="mean average precision"),
    Family("gm_map", "trec_eval", "gm", per_topic=False, doc="geometric mean of average precision"),
    Family("Rprec", "trec_eval", doc="precision after R documents (R = number relevant)"),
    Family("bpref", "trec_eval", doc="binary preference"),
    Family("recip_rank", "trec_eval", doc="reciprocal rank of the first relevant document (whole ranking)"),
    Family("iprec_at_recall", "trec_eval", params="float",
           defaults=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
           doc="interpolated precision at recall levels"),
    Family("P", "trec_eval", params="int", defaults=DEFAULT_CUTOFFS, doc="precision at k"),
    Family("relstring", "legalir", "none", "str", params="int1", defaults=(10,), summary=False,
           doc="trec_eval's relevance string of the top N documents (per topic only)"),
    Family("recall", "trec_eval", params="int", defaults=DEFAULT_CUTOFFS, doc="recall at k"),
    Family("infAP", "trec_eval", doc="inferred AP"),
    Family("gm_bpref", "trec_eval", "gm", per_topic=False, doc="geometric mean of bpref"),
    Family("Rprec_mult", "trec_eval", params="float",
           defaults=(0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0), doc="precision at multiples of R"),
    Family("utility", "trec_eval", doc="set-based utility (trec_eval's default coefficients)"),
    Family("11pt_avg", "trec_eval", doc="11-point interpolated average precision"),
    Family("binG", "trec_eval", doc="binary G"),
    Family("G", "trec_eval", doc="gain"),
    Family("ndcg", "trec_eval", doc="nDCG over the whole ranking (gain = relevance)"),
    Family("ndcg_rel", "trec_eval", doc="nDCG averaged over relevant documents"),
    Family("Rndcg", "trec_eval", doc="nDCG at R"),
    Family("ndcg_cut", "trec_eval", params="int", defaults=DEFAULT_CUTOFFS, doc="nDCG at k"),
    Family("map_cut", "trec_eval", params="int", defaults=DEFAULT_CUTOFFS, doc="average precision at k"),
    Family("relative_P", "trec_eval", params="int", defaults=DEFAULT_CUTOFFS,
           doc="precision at k relative to the best possible"),
    Family("success", "trec_eval", params="int", defaults=(1, 5, 10),
           doc="1 if a relevant document is in the top k (recall upper bound)"),
    Family("set_P", "trec_eval", doc="precision of the retrieved set"),
    Family("set_relative_P", "trec_eval", doc="relative precision of the retrieved set"),
    Family("set_recall", "trec_eval", doc="recall of the retrieved set"),
    Family("set_map", "trec_eval", doc="set precision x set recall"),
    Family("set_F", "trec_eval", doc="F1 of the retrieved set"),
    Family("num_nonrel_judged_ret", "trec_eval", "sum", "int", doc="judged non-relevant documents retrieved"),
)

_LEGALIR = (
    Family("recip_rank_cut", "legalir", params="int", defaults=(10,),
           doc="MRR@k: reciprocal rank of the first relevant document within the top k, else 0"),
    Family("recall_all", "legalir", params="int", defaults=DEFAULT_CUTOFFS,
           doc="1 if ALL the topic's relevant documents are in the top k, else 0 (recall lower bound; "
               "0 for a topic with no relevant document)"),
)

FAMILIES: dict[str, Family] = {f.name: f for f in _TREC_EVAL + _LEGALIR}
_ORDER = {f.name: i for i, f in enumerate(_TREC_EVAL)}

_STAR = re.compile(r"^star([1-9][0-9]*)_(P|rawP)$")


def star_family(name: str) -> Family | None:
    """ACORD's K-star precision at N (stars = relevance + 1), in two forms.

    * ``starK_P``: the benchmark documentation's formula, hits / min(N, K-star documents);
    * ``starK_rawP``: hits / N, the form that reproduces the ACORD paper's published
      columns (checked on its MiniLM row: 49.8 / 35.8 / 7.6 exactly).

    Both average over the topics that have a K-star document only.
    """
    m = _STAR.match(name)
    if not m:
        return None
    k = int(m.group(1))
    denominator = "N" if m.group(2) == "rawP" else f"min(N, documents rated >= {k} stars)"
    return Family(name, "legalir", "subset_mean", params="int", defaults=(5,),
                  doc=f"documents rated >= {k} stars in the top N / {denominator}; "
                      f"topics with no such document are left out of the average")


def star_k(name: str) -> int:
    """K of a ``starK_P`` / ``starK_rawP`` family name."""
    return int(_STAR.match(name).group(1))


def star_normalised(name: str) -> bool:
    """True for ``starK_P`` (divide by min(N, K-star documents)), False for ``starK_rawP`` (by N)."""
    return _STAR.match(name).group(2) == "P"


def family(name: str) -> Family | None:
    return FAMILIES.get(name) or star_family(name)


# trec_eval's nicknames, in its own spelling.
NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P"),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_relative_P",
            "set_recall", "set_map", "set_F"),
    "all_trec": tuple(f.name for f in _TREC_EVAL),
}

#: what `legalir eval` computes when no -m is given: trec_eval's own default set
DEFAULT_MEASURES = ("official",)


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

    def spec(self) -> str:
        """The trec_eval -m spelling: ``P.5,10``."""
        if not self.family.takes_params() or not self.params:
            return self.name
        return f"{self.name}." + ",".join(_param_str(p, self.family.params) for p in self.params)

    def output_names(self) -> list[str]:
        """Names of the values, as trec_eval prints them (``P_5``, ``iprec_at_recall_0.10``)."""
        f = self.family
        if not f.takes_params():
            return [f.name]
        if f.params == "int1":  # relstring: named plainly unless a length is given
            return [f.name] if not self.params else [f"{f.name}_{self.params[0]}"]
        return [f"{f.name}_{_param_name(p, f.params)}" for p in self.effective_params()]


def _param_str(p, kind) -> str:
    if kind != "float":
        return str(p)
    text = f"{p:.10f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _param_name(p, kind) -> str:
    return f"{p:.2f}" if kind == "float" else str(p)


def supported() -> str:
    """One line per family: what `-m` accepts (for help and error messages)."""
    lines = []
    for f in _TREC_EVAL + _LEGALIR:
        par = {"int": "[.k1,k2,...]", "float": "[.x1,x2,...]", "int1": "[.N]"}.get(f.params, "")
        lines.append(f"  {f.name}{par}  ({f.provider}) {f.doc}")
    lines.append("  starK_P[.N]  (legalir) ACORD's K-star precision at N, e.g. star3_P.5 "
                 "(stars = relevance + 1; hits / min(N, K-star documents); topics without a K-star document left out)")
    lines.append("  starK_rawP[.N]  (legalir) the same with hits / N, as the ACORD paper's tables compute it")
    lines.append("  nicknames: " + ", ".join(NICKNAMES))
    return "\n".join(lines)


def _known_names() -> str:
    return ", ".join(list(FAMILIES) + ["starK_P", "starK_rawP", *NICKNAMES])


def _parse_params(text: str, fam: Family, spec: str) -> tuple:
    if not fam.takes_params():
        raise MeasureError(f"measure {fam.name!r} takes no parameters (got {spec!r})")
    out = []
    for tok in text.split(","):
        tok = tok.strip()
        if not tok:
            raise MeasureError(f"empty parameter in measure {spec!r}")
        try:
            if fam.params == "float":
                v = float(tok)
                if not (v >= 0):
                    raise ValueError
            else:
                v = int(tok)
                if v < 1:
                    raise ValueError
        except ValueError:
            kind = "a number >= 0" if fam.params == "float" else "a positive integer"
            raise MeasureError(f"parameter {tok!r} of measure {spec!r} must be {kind}") from None
        out.append(v)
    if fam.params == "int1" and len(out) != 1:
        raise MeasureError(f"measure {fam.name!r} takes one parameter (got {spec!r})")
    return tuple(out)


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
    raise MeasureError(f"unknown measure {spec!r}; supported: {_known_names()} "
                       f"(parameters as in trec_eval: P.5,10 ndcg_cut.10 star3_P.5; list: `legalir eval --list-measures`)")


def parse_measures(specs: Iterable[str | Measure] | str | None = None) -> list[Measure]:
    """Parse trec_eval-style measure specs into an ordered, merged list.

    ``["map", "P.5,10", "ndcg_cut.10", "star3_P.5"]``; a comma list inside
    one spec gives several cutoffs; nicknames (``official``, ``all_trec``,
    ``set``) expand to families with trec_eval's default parameters. The same
    family requested twice gets the union of its parameters (trec_eval would
    keep only the first). Unknown names raise :class:`MeasureError` listing
    the supported ones.
    """
    if specs is None:
        specs = DEFAULT_MEASURES
    if isinstance(specs, str):
        specs = [specs]
    fams: dict[str, Family] = {}
    explicit: dict[str, list] = {}
    wants_defaults: set[str] = set()

    def add(fam: Family, params: tuple | None):
        fams.setdefault(fam.name, fam)
        cur = explicit.setdefault(fam.name, [])
        if not params:
            wants_defaults.add(fam.name)
        elif fam.params == "int1":
            cur[:] = [params[0]]
        else:
            cur.extend(p for p in params if p not in cur)

    for spec in specs:
        if isinstance(spec, Measure):
            add(spec.family, spec.params or None)
            continue
        spec = str(spec).strip()
        if not spec:
            raise MeasureError("empty measure name")
        if spec in NICKNAMES:
            for n in NICKNAMES[spec]:
                add(FAMILIES[n], None)
            continue
        fam, params = _split(spec)
        add(fam, _parse_params(params, fam, spec) if params is not None else None)

    out = []
    for name, fam in fams.items():
        ps = list(explicit[name])
        if fam.params == "int1":
            out.append(Measure(fam, tuple(ps)))
            continue
        if fam.takes_params() and (name in wants_defaults or not ps):
            ps.extend(p for p in fam.defaults if p not in ps)
        out.append(Measure(fam, tuple(sorted(ps))))
    trec = sorted((m for m in out if m.name in _ORDER), key=lambda m: _ORDER[m.name])
    own = [m for m in out if m.name not in _ORDER]
    return trec + own
