"""The one place where evaluation measures are named.

A measure is requested as trec_eval spells it on its command line
(``map``, ``P.5,10``, ``ndcg_cut.10``, ``iprec_at_recall.0.5``) and is
reported under trec_eval's output names (``P_5``, ``ndcg_cut_10``,
``iprec_at_recall_0.50``). Each *family* is named once here, with the
provider that computes it:

* ``trec_eval``: computed by pytrec_eval (trec_eval 9's own C code), then
  aggregated here exactly as trec_eval aggregates (mean, sum, geometric mean,
  ``-c``), because pytrec_eval only returns per-topic values;
* ``legalir``: measures trec_eval lacks, computed in :mod:`legalir.scoring.custom`
  (``recip_rank_cut``, ``recall_all``, ``starK_P``) or that pytrec_eval cannot
  return (``relstring``, a string).

Output order is trec_eval's (the order of its measure table), then legalir's
own measures in the order they were requested.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from legalir.errors import LegalirError
from legalir.scoring.pytrec import LONG_MAX

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
    params: str | None = None     # None | "int" (cutoffs) | "float" | "int1" (one int) | "raw" (kept as given)
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
    Family("utility", "legalir", params="raw",
           doc="set utility p1*relret + p2*nonrelret + p3*relnotret + p4*nonrelnotret (-N); utility.1,-1,0,0"),
    Family("11pt_avg", "trec_eval", params="raw",
           doc="interpolated precision averaged over recall points (11pt_avg.0.0,0.5,1.0)"),
    Family("binG", "trec_eval", doc="binary G"),
    Family("G", "trec_eval", params="raw", doc="gain (gain map: G.1=3,2=9)"),
    Family("dcg", "trec_eval", params="raw", doc="DCG, trec_eval 10.0 only (gain map: dcg.1=3,2=9)"),
    Family("ideal_dcg", "trec_eval", params="raw", doc="ideal DCG, trec_eval 10.0 only (gain map)"),
    Family("ndcg", "trec_eval", params="raw", doc="nDCG over the whole ranking (gain = relevance; ndcg.1=3,2=9)"),
    Family("ndcg_rel", "trec_eval", params="raw", doc="nDCG averaged over relevant documents (gain map)"),
    Family("Rndcg", "trec_eval", params="raw", doc="nDCG at R (gain map)"),
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
    Family("set_F", "trec_eval", params="raw", doc="F of the retrieved set (set_F.0.5: beta)"),
    Family("num_nonrel_judged_ret", "trec_eval", "sum", "int", doc="judged non-relevant documents retrieved"),
    Family("yaap", "trec_eval", doc="yet another average precision (Robertson)"),
    Family("rbp", "trec_eval", params="raw", doc="rank-biased precision, trec_eval 10.0 only (rbp.p=0.95)"),
    Family("rbp_resid", "trec_eval", params="raw", doc="RBP residual, trec_eval 10.0 only (rbp_resid.p=0.95)"),
    Family("unj", "trec_eval", params="int", defaults=(5, 10, 20),
           doc="fraction of unjudged documents in the top k, trec_eval 10.0 only"),
)

#: families trec_eval 9.0.x does not have
TREC_EVAL_10_ONLY = frozenset({"dcg", "ideal_dcg", "rbp", "rbp_resid", "unj"})
#: families whose trec_eval 10.0 values legalir computes (pytrec_eval is trec_eval 9.0.x)
COMPUTED_FOR_10 = frozenset({"iprec_at_recall", "11pt_avg"}) | TREC_EVAL_10_ONLY
#: trec_eval versions `--compat` accepts
VERSIONS = ("10", "9")

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
        if self.family.params == "raw":
            return f"{self.name}.{self.params[0]}"
        return f"{self.name}." + ",".join(_param_str(p, self.family.params) for p in self.params)

    def output_names(self) -> list[str]:
        """Names of the values, as trec_eval prints them (``P_5``, ``iprec_at_recall_0.10``)."""
        f = self.family
        if not f.takes_params():
            return [f.name]
        if f.params in ("int1", "raw"):  # named plainly unless parameters are given, then name_<as given>
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
        par = {"int": "[.k1,k2,...]", "float": "[.x1,x2,...]", "int1": "[.N]", "raw": "[.params]"}.get(f.params, "")
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
    if fam.params == "raw":
        return (_check_raw(text, fam, spec),)
    out = []
    for tok in text.split(","):
        tok = tok.strip()
        if not tok:
            raise MeasureError(f"empty parameter in measure {spec!r}")
        out.append(_number(tok, fam, spec))
    if fam.params == "int1" and len(out) != 1:
        raise MeasureError(f"measure {fam.name!r} takes one parameter (got {spec!r})")
    return tuple(out)


_NUMBER = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
#: a gain map's entry (relevance level = gain; trec_eval reads the level with atol, so ``x=1`` and ``1.5=2``
#: would silently become other levels: only integers are accepted) and rbp's persistence
_PAIR = re.compile(rf"[-+]?[0-9]+={_NUMBER}")
_RBP = re.compile(rf"p={_NUMBER}")
#: a cut-off as trec_eval reads it (atol): digits, maybe a decimal part, which it drops (``ndcg_cut.23.4``)
_CUTOFF = re.compile(r"[0-9]+(?:\.[0-9]*)?")


def _number(tok: str, fam: Family, spec: str):
    """One cut-off or level of a parameter list, read as trec_eval reads it, or a located refusal."""
    if fam.params == "float":
        try:
            v = float(tok)
        except ValueError:
            v = float("nan")
        if not (v >= 0) or v == float("inf"):
            raise MeasureError(f"parameter {tok!r} of measure {spec!r} must be a number >= 0")
        if fam.name == "iprec_at_recall" and v > 1:
            raise MeasureError(f"recall level {tok!r} of measure {spec!r} is above 1: recall levels are between "
                               f"0 and 1 (trec_eval would print 0 for it)")
        return v
    if not _CUTOFF.fullmatch(tok):
        hint = " (trec_eval would read 1e2 as 1)" if "e" in tok.lower() else ""
        raise MeasureError(f"parameter {tok!r} of measure {spec!r} must be a positive integer{hint}")
    v = int(tok.split(".")[0])
    if v < 1:
        raise MeasureError(f"parameter {tok!r} of measure {spec!r} must be a positive integer")
    # trec_eval reads a larger cut-off as its largest long (and names it so: P_9223372036854775807)
    return min(v, LONG_MAX)


_PAIR_FAMILIES = frozenset({"G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "rbp", "rbp_resid"})


def _check_raw(text: str, fam: Family, spec: str) -> str:
    """Parameters trec_eval keeps as written (and prints in the name): gain maps, coefficients."""
    items = text.split(",")
    if fam.name in _PAIR_FAMILIES:
        pattern = _RBP if fam.name.startswith("rbp") else _PAIR
        bad = [x for x in items if not pattern.fullmatch(x)]
        if bad:
            what = ("p=number (the persistence, e.g. rbp.p=0.95)" if fam.name.startswith("rbp") else
                    f"an integer relevance level = its gain (a gain map such as {fam.name}.1=3,2=9)")
            raise MeasureError(f"parameter {bad[0]!r} of measure {spec!r} must be {what}")
        numbers = [float(x.partition("=")[2]) for x in items]
    else:
        try:
            numbers = [float(x) for x in items]
        except ValueError as e:
            bad = str(e).rpartition(": ")[2]
            raise MeasureError(f"parameter {bad} of measure {spec!r} must be a number") from None
    if not all(math.isfinite(v) for v in numbers):  # trec_eval would print nan or inf
        raise MeasureError(f"the parameters of measure {spec!r} must be finite numbers")
    if fam.name == "11pt_avg" and not all(0 <= v <= 1 for v in numbers):
        raise MeasureError(f"recall points of measure {spec!r} must be between 0 and 1 (trec_eval would print 0)")
    if fam.name.startswith("rbp") and not all(0 <= v <= 1 for v in numbers):
        raise MeasureError(f"the persistence p of measure {spec!r} must be between 0 and 1")
    if fam.name in _PAIR_FAMILIES:
        return text
    if fam.name == "utility" and len(items) != 4:
        raise MeasureError(f"measure 'utility' takes 4 coefficients p1,p2,p3,p4 (got {spec!r})")
    if fam.name in ("set_F", "relstring") and len(items) != 1:
        raise MeasureError(f"measure {fam.name!r} takes one parameter (got {spec!r})")
    return text


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


