"""Significance tests for comparing systems, per measure, over the topics they share.

* :func:`paired_t_test`: two-sided paired t-test (Student's t on the
  per-topic differences), as ``scipy.stats.ttest_rel``.
* :func:`randomization_test`: two-sided paired randomization (permutation)
  test: under the null hypothesis each topic's two scores are exchangeable,
  so the sign of each difference is flipped at random. Exact (all 2^n sign
  vectors) when 2^n <= ``permutations``; otherwise ``permutations`` random
  sign vectors from a fixed seed, p = (count + 1) / (permutations + 1).
  Same inputs, same seed: same p-value, run to run.
* :func:`adjust`: Bonferroni, Holm or Benjamini-Hochberg (FDR) correction of a family of
  p-values (as ``statsmodels.stats.multitest.multipletests``).
* :func:`bootstrap_ci`, :func:`paired_bootstrap_ci`: percentile bootstrap
  intervals over topics (default 1,000 resamples, seed 0) for a mean and for
  a paired mean difference. The resample indices come from one seeded
  generator: same inputs, same seed, same interval, run to run.
* :func:`compare`: every run against the first, per measure, with each
  run's bootstrap interval and the interval of its difference to the first.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from legalir.scoring.measures import MeasureError

TESTS = ("t", "randomization")
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_LEVEL = 0.95
CORRECTIONS = ("none", "bonferroni", "holm", "fdr_bh")


@dataclass(frozen=True)
class TestResult:
    test: str
    n: int               # topics (pairs)
    mean_diff: float     # mean of a - b
    statistic: float     # t (t-test) or |mean difference| (randomization)
    pvalue: float
    permutations: int = 0  # randomization: sign vectors drawn (or 2^n when exact)
    exact: bool = False


def _pairs(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    if len(a) != len(b):
        raise ValueError(f"paired samples need the same length ({len(a)} != {len(b)})")
    return np.asarray(a, dtype=float) - np.asarray(b, dtype=float)


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> TestResult:
    """Two-sided paired t-test of ``a`` against ``b`` (statistic on a - b, as scipy's ttest_rel).

    Fewer than 2 pairs: statistic and p-value are NaN. All differences equal:
    p = 1 when they are 0 (identical systems), else p = 0 (t is infinite);
    scipy returns NaN for both.
    """
    from scipy.stats import t as student_t

    d = _pairs(a, b)
    n = len(d)
    if n < 2:
        return TestResult("t", n, float(d.mean()) if n else math.nan, math.nan, math.nan)
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        if mean == 0.0:
            return TestResult("t", n, 0.0, 0.0, 1.0)
        return TestResult("t", n, mean, math.copysign(math.inf, mean), 0.0)
    stat = mean / (sd / math.sqrt(n))
    p = float(2.0 * student_t.sf(abs(stat), n - 1))
    return TestResult("t", n, mean, stat, min(1.0, p))


def randomization_test(a: Sequence[float], b: Sequence[float], permutations: int = 10000,
                       seed: int = 0) -> TestResult:
    """Two-sided paired randomization test on the mean difference (see the module doc)."""
    if permutations < 1:
        raise ValueError("permutations must be >= 1")
    d = _pairs(a, b)
    n = len(d)
    if n == 0:
        return TestResult("randomization", 0, math.nan, math.nan, math.nan)
    observed = abs(float(d.sum()))
    # tolerance for sums that are equal in exact arithmetic but not in floating point
    tol = 1e-9 * max(1.0, float(np.abs(d).sum()))
    if n < 63 and 2 ** n <= permutations:
        total = 2 ** n
        count = 0
        chunk = 1 << 16
        bits = np.arange(n, dtype=np.int64)
        for start in range(0, total, chunk):
            codes = np.arange(start, min(total, start + chunk), dtype=np.int64)
            signs = 1.0 - 2.0 * ((codes[:, None] >> bits) & 1)
            count += int((np.abs(signs @ d) >= observed - tol).sum())
        return TestResult("randomization", n, float(d.mean()), observed / n, count / total, total, True)
    rng = np.random.default_rng(seed)
    count = 0
    chunk = max(1, min(permutations, 2_000_000 // max(1, n)))
    done = 0
    while done < permutations:
        m = min(chunk, permutations - done)
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(m, n))
        count += int((np.abs(signs @ d) >= observed - tol).sum())
        done += m
    return TestResult("randomization", n, float(d.mean()), observed / n, (count + 1) / (permutations + 1),
                      permutations, False)


def adjust(pvalues: Sequence[float], method: str = "none") -> list[float]:
    """Adjusted p-values: ``none``, ``bonferroni`` (p x m, at most 1), ``holm`` (step-down) or
    ``fdr_bh`` (Benjamini-Hochberg step-up: min over j >= i of p_(j) x m / j, at most 1).

    NaN p-values are kept as NaN and not counted in m.
    """
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}; one of {', '.join(CORRECTIONS)}")
    ps = [float(p) for p in pvalues]
    valid = [i for i, p in enumerate(ps) if not math.isnan(p)]
    m = len(valid)
    out = list(ps)
    if method == "none" or m == 0:
        return out
    if method == "bonferroni":
        for i in valid:
            out[i] = min(1.0, ps[i] * m)
        return out
    order = sorted(valid, key=lambda i: ps[i])
    if method == "fdr_bh":
        running = 1.0
        for rank in range(m - 1, -1, -1):
            i = order[rank]
            running = min(running, ps[i] * m / (rank + 1))
            out[i] = running
        return out
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


@dataclass(frozen=True)
class Interval:
    """A percentile-bootstrap interval of a mean: ``low <= mean <= high`` (NaN when there is no data)."""

    mean: float
    low: float
    high: float
    level: float = BOOTSTRAP_LEVEL
    resamples: int = BOOTSTRAP_RESAMPLES
    n: int = 0

    def format(self, fmt: str = "{:.4f}") -> str:
        if math.isnan(self.mean):
            return "n/a"
        return f"{fmt.format(self.mean)} [{fmt.format(self.low)}, {fmt.format(self.high)}]"


def bootstrap_means(values: Sequence[float] | np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> np.ndarray:
    """The means of ``resamples`` resamples (with replacement, same size) of ``values``; seeded."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if resamples < 1:
        raise ValueError("resamples must be >= 1")
    if n == 0:
        return np.full(resamples, math.nan)
    rng = np.random.default_rng(seed)
    out = np.empty(resamples)
    chunk = max(1, min(resamples, 4_000_000 // n))
    for start in range(0, resamples, chunk):
        m = min(chunk, resamples - start)
        out[start:start + m] = x[rng.integers(0, n, size=(m, n))].mean(axis=1)
    return out


def bootstrap_ci(values: Sequence[float] | np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, level: float = BOOTSTRAP_LEVEL,
                 seed: int = 0) -> Interval:
    """Percentile bootstrap interval of the mean of ``values`` (e.g. per-topic scores)."""
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    x = np.asarray(values, dtype=float)
    if len(x) == 0:
        return Interval(math.nan, math.nan, math.nan, level, resamples, 0)
    means = bootstrap_means(x, resamples, seed)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(float(x.mean()), float(low), float(high), level, resamples, len(x))


def paired_bootstrap_ci(a: Sequence[float], b: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES,
                        level: float = BOOTSTRAP_LEVEL, seed: int = 0) -> Interval:
    """Percentile bootstrap interval of the mean paired difference ``a - b`` (topics resampled together)."""
    return bootstrap_ci(_pairs(a, b), resamples, level, seed)


@dataclass
class Comparison:
    """One measure: each run's mean over the common topics and its test against the first run."""

    measure: str
    test: str
    correction: str
    topics: int
    runs: list[str]
    means: list[float]
    results: list[TestResult | None]          # None for the first (baseline) run
    pvalues: list[float | None] = field(default_factory=list)   # adjusted; None for the baseline
    left_out: int = 0                          # evaluated topics not shared by every run
    intervals: list[Interval] = field(default_factory=list)          # bootstrap interval of each run's mean
    diff_intervals: list[Interval | None] = field(default_factory=list)  # of run - first run; None for the first

    def to_dict(self) -> dict:
        """Plain JSON: non-finite numbers (an infinite t, an undefined p) become null."""
        ints: list[Interval | None] = [*self.intervals] or [None] * len(self.runs)
        diffs = self.diff_intervals or [None] * len(self.runs)
        return _finite({
            "measure": self.measure, "test": self.test, "correction": self.correction,
            "topics": self.topics, "left_out": self.left_out,
            "runs": [
                {"run": r, "mean": m, "p": p, **({"detail": asdict(res)} if res else {}),
                 **({"ci": [ci.low, ci.high]} if ci else {}),
                 **({"diff": d.mean, "diff_ci": [d.low, d.high]} if d else {})}
                for r, m, p, res, ci, d in zip(self.runs, self.means, self.pvalues, self.results, ints, diffs)
            ],
            **({"bootstrap": {"resamples": self.intervals[0].resamples, "level": self.intervals[0].level,
                              "method": "percentile, topics resampled"}} if self.intervals else {}),
        })


def _finite(obj):
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def compare(per_topic: Sequence[Mapping[str, Mapping[str, float]]], run_names: Sequence[str],
            measure_names: Sequence[str], test: str = "t", correction: str = "none",
            permutations: int = 10000, seed: int = 0, bootstrap: int = BOOTSTRAP_RESAMPLES,
            level: float = BOOTSTRAP_LEVEL) -> list[Comparison]:
    """Test every run against the first, for each measure, over the topics all runs have.

    ``per_topic``: one ``{qid: {measure: value}}`` per run (an
    :class:`~legalir.scoring.Evaluation`'s ``per_topic``). The correction
    is applied per measure, over the ``len(runs) - 1`` comparisons.
    ``bootstrap``: resamples of the percentile-bootstrap intervals (0: none),
    drawn from ``seed``; every interval of a measure resamples the same topics.
    """
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; one of {', '.join(TESTS)}")
    if len(per_topic) < 2 or len(per_topic) != len(run_names):
        raise ValueError("compare needs at least two runs, each with a name")
    out = []
    for name in measure_names:
        sets = [{q for q, row in pt.items() if name in row} for pt in per_topic]
        common = sorted(set.intersection(*sets))
        union = set.union(*sets)
        cols = [[float(pt[q][name]) for q in common] for pt in per_topic]
        means = [sum(c) / len(c) if c else math.nan for c in cols]
        results: list[TestResult | None] = [None]
        for c in cols[1:]:
            if test == "t":
                results.append(paired_t_test(c, cols[0]))
            else:
                results.append(randomization_test(c, cols[0], permutations, seed))
        adj = adjust([r.pvalue for r in results[1:] if r is not None], correction)
        intervals: list[Interval] = []
        diffs: list[Interval | None] = []
        if bootstrap:
            intervals = [bootstrap_ci(c, bootstrap, level, seed) for c in cols]
            diffs = [None] + [paired_bootstrap_ci(c, cols[0], bootstrap, level, seed) for c in cols[1:]]
        out.append(Comparison(name, test, correction, len(common), list(run_names), means, results,
                              [None, *adj], len(union) - len(common), intervals, diffs))
    return out


def format_comparisons(comparisons: Sequence[Comparison], alpha: float = 0.05) -> str:
    """Plain-text tables: one per measure, each run's mean and p-value against the first run."""
    blocks = []
    names = {"t": "paired t-test", "randomization": "paired randomization test"}
    for c in comparisons:
        head = (f"{c.measure}: {names[c.test]}, two-sided, correction {c.correction}; "
                f"{c.topics} topics common to all runs")
        if c.left_out:
            head += f" ({c.left_out} other topics left out)"
        if c.test == "randomization":
            r = next((x for x in c.results if x is not None), None)
            if r is not None:
                head += f"; {'exact, ' if r.exact else ''}{r.permutations} sign vectors"
        if c.intervals:
            i0 = c.intervals[0]
            head += f"; {i0.level:.0%} percentile bootstrap over topics ({i0.resamples} resamples)"
        width = max(len("run"), *(len(r) for r in c.runs))
        ci_head = f"  {'CI':>17}  {'diff vs first':>13}  {'diff CI':>19}" if c.intervals else ""
        rows = [head, f"{'run':<{width}}  {'mean':>8}{ci_head}  {'p':>8}"]
        for i, (run, mean, p) in enumerate(zip(c.runs, c.means, c.pvalues)):
            if p is None:
                ptxt = f"{'-':>8}"
            elif math.isnan(p):
                ptxt = f"{'n/a':>8}"
            else:
                ptxt = f"{p:8.4f}" + (" *" if p < alpha else "")
            ci_txt = ""
            if c.intervals:
                ci = c.intervals[i]
                d = c.diff_intervals[i]
                ci_txt = f"  {f'[{ci.low:.4f}, {ci.high:.4f}]':>17}"
                ci_txt += (f"  {d.mean:+13.4f}  {f'[{d.low:+.4f}, {d.high:+.4f}]':>19}" if d
                           else f"  {'-':>13}  {'-':>19}")
            rows.append(f"{run:<{width}}  {mean:8.4f}{ci_txt}  {ptxt}")
        blocks.append("\n".join(rows))
    return "\n\n".join(blocks) + f"\n(* p < {alpha} against the first run)\n"


def comparable_names(measures) -> list[str]:
    """Output names of the measures that have a numeric value per topic (what can be tested)."""
    out = []
    for m in measures:
        f = m.family
        if not f.per_topic or f.value == "str":
            raise MeasureError(f"measure {m.name!r} has no numeric per-topic value and cannot be compared")
        out.extend(m.output_names())
    return out
