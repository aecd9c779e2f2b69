"""trec_eval 10.0's families that pytrec_eval (trec_eval 9.0.x's code) cannot give as 10.0 does.

* ``iprec_at_recall`` and ``11pt_avg``: 10.0 rounds the recall cut-offs
  (``lround(percent * num_rel)``) where 9.0.x truncated after adding 0.9 (``--compat 9``: pytrec_eval's);
* ``rbp``, ``rbp_resid``, ``unj``, ``dcg``, ``ideal_dcg``: new in 10.0;
* ``utility``: needs ``-N`` (documents in the collection), which pytrec_eval lacks.

Each function follows the C code of trec_eval 10.0 (``m_<name>.c``) step by
step, on a :class:`Ranked` topic: the relevance of each retrieved document in
trec_eval's order (-1 = not in the qrels, -2 = in the qrels with a negative
grade), after ``-M`` and ``-J`` (:mod:`legalir.scoring.prepare`), with the topic's counts per grade.
"""
from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, count, repeat

from legalir.scoring.measures.base import (
    Context,
    Family,
    MeasureError,
    Value,
    gain_map,
    numbers,
    persistence,
)
from legalir.scoring.prepare import Topic

NONPOOL, UNJUDGED = -1, -2


@dataclass
class Ranked:
    rels: list[int]              # relevance of each retrieved document, in rank order
    num_rel: int                 # judged documents with relevance >= level
    num_rel_ret: int             # retrieved ones among them
    rel_levels: dict[int, int]   # grade (>= 0) -> number of the topic's judgements with it
    level: int

    @property
    def num_ret(self) -> int:
        return len(self.rels)

    @property
    def num_rel_levels(self) -> int:
        return max((g for g, c in self.rel_levels.items() if c), default=-1) + 1


def ranked(topic: Topic, level: int) -> Ranked:
    """trec_eval's form_res_rels on a topic already ranked, cut (-M) and judged-only filtered (-J)."""
    grades: Mapping[str, int] = topic.judgements
    levels = Counter(grades.values())
    if any(g < 0 for g in levels):  # judged with a negative grade: in the pool, not judged
        grades = {d: (r if r >= 0 else UNJUDGED) for d, r in grades.items()}
        levels = Counter({g: c for g, c in levels.items() if g >= 0})
    rels = list(map(grades.get, topic.ranking, repeat(NONPOOL)))
    num_rel = sum(c for g, c in levels.items() if g >= level)
    return Ranked(rels, num_rel, sum(map(level.__le__, rels)), dict(levels), level)


def _lround(x: float) -> int:
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def _interpolated(rr: Ranked, percents) -> list[float]:
    """Interpolated precision at each recall cut-off (m_iprec_at_recall.c / m_11pt_avg.c, 10.0).

    trec_eval walks the ranking from the bottom, keeping the highest precision seen; a precision
    below a relevant document is never above the one at that document (same count, deeper rank), so
    the walk visits the relevant documents only: the same values, in the same order."""
    cutoffs = [_lround(p * rr.num_rel) for p in percents]
    out = [0.0] * len(cutoffs)
    cur = len(cutoffs) - 1
    while cur >= 0 and cutoffs[cur] > rr.num_rel_ret:
        cur -= 1
    # 0/0 when nothing is retrieved: trec_eval prints -nan; legalir reports 0 (see the README)
    int_precis = rr.num_rel_ret / rr.num_ret if rr.num_ret else 0.0  # defined: m_iprec_at_recall.c
    ranks = list(compress(count(1), map(rr.level.__le__, rr.rels)))  # ranks of the relevant documents
    for rel_so_far in range(len(ranks), 0, -1):
        precis = rel_so_far / ranks[rel_so_far - 1]
        if int_precis < precis:
            int_precis = precis
        while cur >= 0 and rel_so_far == cutoffs[cur]:
            out[cur] = int_precis
            cur -= 1
    while cur >= 0:
        out[cur] = int_precis
        cur -= 1
    return out


def iprec_at_recall(rr: Ranked, percents) -> list[float]:
    return _interpolated(rr, percents)


ELEVEN_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def eleven_pt_avg(rr: Ranked, percents=ELEVEN_POINTS) -> float:
    values = _interpolated(rr, percents)
    return sum(values) / len(values)


def _pairs(raw: str | None) -> list[tuple[str, float]]:
    if not raw:
        return []
    return [(k, float(v)) for k, v in (item.split("=", 1) for item in raw.split(","))]


def _valid_int(name: str) -> bool:
    s = name[1:] if name[:1] in "+-" else name
    return s.isdigit() and s.isascii()


def _gains(rr: Ranked, raw: str | None) -> list[list]:
    """setup_gains (gain_init.c): [level, gain, count] sorted by gain as trec_eval's comparator sorts."""
    gains = [[int(k), v, 0] for k, v in _pairs(raw) if _valid_int(k)]
    for i in range(rr.num_rel_levels):
        for g in gains:
            if g[0] == i:
                g[2] = rr.rel_levels.get(i, 0)  # defined: documents at level i
                break
        else:
            gains.append([i, float(i), rr.rel_levels.get(i, 0)])  # defined: documents at level i
    gains.sort(key=functools.cmp_to_key(_by_gain))
    return gains


def _by_gain(a: list, b: list) -> int:
    """comp_rel_gain: (int)(gain1 - gain2)."""
    return int(a[1] - b[1])


def _gain(rel: int, gains) -> float:
    for level, gain, _ in gains:
        if level == rel:
            return gain
    return 0.0


def rbp(rr: Ranked, raw: str | None) -> float:
    p = 0.9
    for k, v in _pairs(raw):
        if k == "p":
            p = v
    gains = _gains(rr, raw)
    lo = min([0.0] + [g[1] for g in gains])
    hi = max([0.0] + [g[1] for g in gains])
    if lo < 0 or hi > 1:
        for g in gains:
            g[1] = (g[1] - lo) / (hi - lo)
    total, cur_p = 0.0, 1.0
    for r in rr.rels:
        gain = _gain(r, gains)
        if gain != 0:
            total += gain * cur_p
        cur_p *= p
    return (1.0 - p) * total


def rbp_resid(rr: Ranked, raw: str | None) -> float:
    p = 0.9
    for k, v in _pairs(raw):
        if k == "p":
            p = v
    unjudged, total, cur_p = 0, 0.0, 1.0
    for r in rr.rels:
        if r < 0:
            unjudged += 1
            total += cur_p
        cur_p *= p
    return cur_p + (1 - p) * total if unjudged else 0.0  # defined: m_rbp_resid.c


def unj(rr: Ranked, cutoffs) -> list[float]:
    out = [0.0] * len(cutoffs)
    idx, unj_so_far = 0, 0
    for i, r in enumerate(rr.rels):
        if i == cutoffs[idx]:
            out[idx] = unj_so_far / i
            idx += 1
            if idx == len(cutoffs):
                break
        if r < 0:
            unj_so_far += 1
    while idx < len(cutoffs):
        out[idx] = unj_so_far / cutoffs[idx]
        idx += 1
    return out


def dcg_pair(rr: Ranked, raw: str | None) -> tuple[float, float]:
    """(results DCG, ideal DCG) as m_ndcg.c computes them."""
    gains = _gains(rr, raw)
    results_dcg = ideal_dcg = 0.0
    cur = len(gains) - 1
    ideal_gain = gains[cur][1] if cur >= 0 else 0.0  # defined: m_ndcg.c, past the last level
    at_level = 0
    i = 0
    n = rr.num_ret

    def step_ideal():
        nonlocal at_level, cur, ideal_gain
        at_level += 1
        while cur >= 0 and at_level > gains[cur][2]:
            at_level = 1
            cur -= 1
            ideal_gain = gains[cur][1] if cur >= 0 else 0.0  # defined: m_ndcg.c, past the last level

    while i < n and ideal_gain > 0.0:
        g = _gain(rr.rels[i], gains)
        if g != 0:
            results_dcg += g / math.log2(i + 2)
        step_ideal()
        if ideal_gain > 0.0:
            ideal_dcg += ideal_gain / math.log2(i + 2)
        i += 1
    while i < n:
        g = _gain(rr.rels[i], gains)
        if g != 0:
            results_dcg += g / math.log2(i + 2)
        i += 1
    while ideal_gain > 0.0:
        step_ideal()
        if ideal_gain > 0.0:
            ideal_dcg += ideal_gain / math.log2(i + 2)
        i += 1
    return results_dcg, ideal_dcg


def utility(rr: Ranked, raw: str | None, num_docs: int = 0) -> float:
    p1, p2, p3, p4 = (float(x) for x in raw.split(",")) if raw else (1.0, -1.0, 0.0, 0.0)
    a, ret, rel = rr.num_rel_ret, rr.num_ret, rr.num_rel
    return p1 * a + p2 * (ret - a) + p3 * (rel - a) + p4 * (num_docs + a - ret - rel)


# ---------------------------------------------------------------- the families

def _ranked(topic: Topic, ctx: Context) -> Ranked:
    return topic.memo(("trec10", ctx.level), lambda t: ranked(t, ctx.level))


def _iprec(m, topic: Topic, ctx: Context) -> dict[str, Value]:
    return dict(zip(m.output_names(), iprec_at_recall(_ranked(topic, ctx), m.effective_params())))


def _eleven(m, topic: Topic, ctx: Context) -> dict[str, Value]:
    raw = m.raw()
    points: Sequence[float] = [float(x) for x in raw.split(",")] if raw else ELEVEN_POINTS
    return {m.output_names()[0]: eleven_pt_avg(_ranked(topic, ctx), points)}


def _one(fn):
    """A family of one value computed from the ranked topic and the raw parameters."""
    def compute(m, topic: Topic, ctx: Context) -> dict[str, Value]:
        return {m.output_names()[0]: fn(_ranked(topic, ctx), m.raw())}
    return compute


def _unj(m, topic: Topic, ctx: Context) -> dict[str, Value]:
    return dict(zip(m.output_names(), unj(_ranked(topic, ctx), m.effective_params())))


def _utility(m, topic: Topic, ctx: Context) -> dict[str, Value]:
    return {m.output_names()[0]: utility(_ranked(topic, ctx), m.raw(), ctx.num_docs)}


def _recall_levels(fam: Family, items: list[str], spec: str) -> None:
    for tok in items:
        if float(tok) > 1:
            raise MeasureError(f"recall level {tok!r} of measure {spec!r} is above 1: recall levels are between "
                               f"0 and 1 (trec_eval would print 0 for it)")


TEN = frozenset({"10"})
FAMILIES = (
    Family("iprec_at_recall", "trec_eval", params="float", defaults=ELEVEN_POINTS, compute=_iprec, computed_in=TEN,
           check=_recall_levels, doc="interpolated precision at recall levels"),
    Family("utility", "legalir", params="raw", compute=_utility, check=numbers(4, what="4 coefficients p1,p2,p3,p4"),
           reset=0.0, doc="set utility p1*relret + p2*nonrelret + p3*relnotret + p4*nonrelnotret (-N); "
                          "utility.1,-1,0,0"),
    Family("11pt_avg", "trec_eval", params="raw", compute=_eleven, computed_in=TEN,
           check=numbers(unit=True, what="recall points"),
           doc="interpolated precision averaged over recall points (11pt_avg.0.0,0.5,1.0)"),
    Family("dcg", "trec_eval", params="raw", compute=_one(lambda rr, raw: dcg_pair(rr, raw)[0]), versions=TEN,
           check=gain_map, doc="DCG, trec_eval 10.0 only (gain map: dcg.1=3,2=9)"),
    Family("ideal_dcg", "trec_eval", params="raw", compute=_one(lambda rr, raw: dcg_pair(rr, raw)[1]),
           versions=TEN, check=gain_map, doc="ideal DCG, trec_eval 10.0 only (gain map)"),
    Family("rbp", "trec_eval", params="raw", compute=_one(rbp), versions=TEN, check=persistence,
           doc="rank-biased precision, trec_eval 10.0 only (rbp.p=0.95)"),
    Family("rbp_resid", "trec_eval", params="raw", compute=_one(rbp_resid), versions=TEN, check=persistence,
           reset=0.0, doc="RBP residual, trec_eval 10.0 only (rbp_resid.p=0.95)"),
    Family("unj", "trec_eval", params="int", defaults=(5, 10, 20), compute=_unj, versions=TEN, reset=0.0,
           doc="fraction of unjudged documents in the top k, trec_eval 10.0 only"),
)
