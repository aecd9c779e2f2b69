"""Run fusion: reciprocal rank fusion and linear fusion of normalised scores.

Every function here maps runs to a run (``{qid: {docid: score}}``), so fusion
composes with any other run -> run step (MaxP, re-ranking). Ranks are read in
trec_eval's order (score descending, ties by docid descending, see
:func:`legalir.trec.ranking`); the result depends only on the runs'
contents, never on dict or file order, so the same inputs give the same bytes.

* RRF (Cormack et al. 2009): ``score(d) = sum_i w_i / (k + rank_i(d))``, rank
  from 1; a run that did not retrieve ``d`` adds nothing. ``k`` defaults to 60.
* Linear: ``score(d) = sum_i w_i * norm_i(d)`` with per-topic normalisation

  - ``minmax``: ``(s - min) / (max - min)``; a run whose scores are all equal
    gives 1.0; a document the run did not retrieve counts 0.0 (its floor);
  - ``zscore``: ``(s - mean) / std`` (population std); all-equal scores give
    0.0; a document the run did not retrieve counts as the run's lowest
    normalised score for that topic (never above a document it retrieved).

Weights default to equal (1 each). ``depth`` keeps only each run's top
``depth`` documents before fusing.
"""
from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Mapping, Sequence

from legalir import trec
from legalir.errors import LegalirError, read_json
from legalir.trec import Run, ranking

METHODS = ("rrf", "linear")
NORMS = ("minmax", "zscore")
DEFAULT_RRF_K = 60
#: hybrid search (BM25 + dense) fuses each retriever's top max(k, HYBRID_DEPTH) documents with RRF
HYBRID_DEPTH = 100


class FusionError(LegalirError, ValueError):
    pass


def _weights(runs: Sequence[Run], weights: Sequence[float] | None) -> list[float]:
    if not runs:
        raise FusionError("no runs to fuse")
    if weights is None:
        return [1.0] * len(runs)
    if len(weights) != len(runs):
        raise FusionError(f"{len(weights)} weight(s) for {len(runs)} run(s)")
    w = [float(x) for x in weights]
    if any(math.isnan(x) or x < 0 for x in w):
        raise FusionError(f"weights must be non-negative numbers, got {list(weights)}")
    return w


def _top(docs: Mapping[str, float], depth: int | None) -> list[tuple[str, float]]:
    return ranking(docs, depth)


def _qids(runs: Sequence[Run]) -> list[str]:
    return sorted(set().union(*[set(r) for r in runs]))


def rrf(runs: Sequence[Run], k: float = DEFAULT_RRF_K, weights: Sequence[float] | None = None,
        depth: int | None = None) -> Run:
    """Reciprocal rank fusion."""
    w = _weights(runs, weights)
    if k < 0:
        raise FusionError(f"RRF k must be >= 0, got {k}")
    out: Run = {}
    for qid in _qids(runs):
        fused: dict[str, float] = {}
        for wi, run in zip(w, runs):
            for rank, (docid, _) in enumerate(_top(run.get(qid, {}), depth), 1):
                fused[docid] = fused.get(docid, 0.0) + wi / (k + rank)
        out[qid] = fused
    return out


def hybrid_depth(k: int) -> int:
    """How deep each leg of a hybrid search of depth ``k`` is searched: ``max(k, HYBRID_DEPTH)``."""
    return max(k, HYBRID_DEPTH)


def hybrid(sparse: Run, dense: Run, k: int) -> Run:
    """Hybrid search's one rule: RRF of the two legs (each searched to :func:`hybrid_depth`), each
    topic's fused documents ranked in trec_eval's order, *then* cut at ``k``.

    Parameters
    ----------
    sparse, dense : Run
        The BM25 and dense runs of the same topics.
    k : int
        Documents kept per topic.

    Returns
    -------
    Run
        ``{qid: {docid: fused score}}`` for every topic of either run, best first.
    """
    fused = rrf([sparse, dense])
    return {q: dict(ranking(fused.get(q, {}), k)) for q in _qids([sparse, dense])}


def normalize(docs: Mapping[str, float], method: str = "minmax") -> tuple[dict[str, float], float]:
    """Normalised scores of one topic's documents, and the value a missing document counts."""
    if method not in NORMS:
        raise FusionError(f"normalisation must be one of {', '.join(NORMS)}, got {method!r}")
    if not docs:
        return {}, 0.0
    items = sorted(docs.items())  # fixed summation order: identical floats run to run
    values = [s for _, s in items]
    bad = next((s for s in values if not math.isfinite(s)), None)
    if bad is not None:
        raise FusionError(f"linear fusion normalises scores and cannot normalise a score of {bad}; give finite "
                          f"scores, or fuse with --method rrf (ranks only)")
    if method == "minmax":
        lo, hi = min(values), max(values)
        if hi == lo:
            return {d: 1.0 for d, _ in items}, 0.0
        if math.isinf(hi - lo):  # finite scores whose range overflows (1e308 and -1e308): the same ratios, halved
            return {d: (s / 2 - lo / 2) / (hi / 2 - lo / 2) for d, s in items}, 0.0
        return {d: (s - lo) / (hi - lo) for d, s in items}, 0.0
    scale = max(abs(s) for s in values)
    if scale > 1e150:  # squares would overflow: z-scores do not change when every score is divided by one number
        values = [s / scale for s in values]
        items = [(d, s / scale) for d, s in items]
    mean = math.fsum(values) / len(values)
    std = math.sqrt(math.fsum((s - mean) ** 2 for s in values) / len(values))
    if std == 0:
        return {d: 0.0 for d, _ in items}, 0.0
    normed = {d: (s - mean) / std for d, s in items}
    return normed, min(normed.values())


def linear(runs: Sequence[Run], weights: Sequence[float] | None = None, norm: str = "minmax",
           depth: int | None = None) -> Run:
    """Weighted sum of per-topic normalised scores (see module doc for missing documents)."""
    w = _weights(runs, weights)
    if norm not in NORMS:
        raise FusionError(f"normalisation must be one of {', '.join(NORMS)}, got {norm!r}")
    out: Run = {}
    for qid in _qids(runs):
        try:
            parts = [normalize(dict(_top(run.get(qid, {}), depth)), norm) for run in runs]
        except FusionError as e:
            raise FusionError(f"topic {qid!r}: {e}") from None
        docids = sorted(set().union(*[set(p[0]) for p in parts]))
        out[qid] = {d: sum(wi * p[0].get(d, p[1]) for wi, p in zip(w, parts)) for d in docids}
    return out


def fuse(runs: Sequence[Run], method: str = "rrf", weights: Sequence[float] | None = None,
         k: float = DEFAULT_RRF_K, norm: str = "minmax", depth: int | None = None) -> Run:
    if method == "rrf":
        return rrf(runs, k=k, weights=weights, depth=depth)
    if method == "linear":
        return linear(runs, weights=weights, norm=norm, depth=depth)
    raise FusionError(f"fusion method must be one of {', '.join(METHODS)}, got {method!r}")


def weight_grid(n_runs: int, step: float = 0.05) -> list[tuple[float, ...]]:
    """Weight vectors on the simplex (non-negative, summing to 1) in steps of ``step``."""
    if not 0 < step <= 1:
        raise FusionError(f"grid step must be in (0, 1], got {step}")
    m = round(1 / step)
    if abs(m * step - 1) > 1e-9:
        raise FusionError(f"grid step must divide 1, got {step}")
    grid = [c for c in itertools.product(range(m + 1), repeat=n_runs) if sum(c) == m]
    return [tuple(round(x / m, 10) for x in c) for c in sorted(grid, reverse=True)]


def tune(runs: Sequence[Run], score: Callable[[Run], float], *, methods: Sequence[str] = ("linear", "rrf"),
         norms: Sequence[str] = NORMS, rrf_ks: Sequence[float] = (DEFAULT_RRF_K,), step: float = 0.05,
         depth: int | None = None) -> dict:
    """Grid search of fusion parameters; ``score(run)`` is the mean measure on *training* topics.

    Returns ``{"best": {method, weights, norm|k, score}, "grid": [every point tried]}``.
    The first point with the best score wins (grid order is fixed), so the
    choice is reproducible.
    """
    tried: list[dict] = []
    for method in methods:
        settings = ([{"norm": n} for n in norms] if method == "linear" else [{"k": k} for k in rrf_ks])
        for extra in settings:
            for w in weight_grid(len(runs), step):
                fused = fuse(runs, method=method, weights=w, depth=depth, **extra)
                tried.append({"method": method, "weights": list(w), **extra, "score": float(score(fused))})
    if not tried:
        raise FusionError("nothing to tune: no methods given")
    best = max(enumerate(tried), key=lambda iv: (iv[1]["score"], -iv[0]))[1]
    return {"best": best, "grid": tried}


def params(params_file: str | os.PathLike | None = None, *, method: str | None = None, weights: str | None = None,
           rrf_k: float | None = None, norm: str | None = None) -> dict:
    """Fusion settings: the best of a ``tune-fusion`` result file first, then the options given explicitly
    (``weights`` as comma-separated text)."""

    chosen: dict = {}
    if params_file:
        data = read_json(params_file, "fusion parameters")
        best = data.get("best", data) if isinstance(data, dict) else None
        if not isinstance(best, dict):
            raise FusionError(f"{params_file}: not a tune-fusion result (expected a JSON object with 'best')")
        chosen = dict(best)
    if method is not None:
        chosen["method"] = method
    if weights is not None:
        try:
            chosen["weights"] = [float(x) for x in weights.split(",")]
        except ValueError:
            raise FusionError(f"--weights: expected comma-separated numbers, got {weights!r}") from None
    if rrf_k is not None:
        chosen["k"] = rrf_k
    if norm is not None:
        chosen["norm"] = norm
    chosen.setdefault("method", "rrf")
    if chosen["method"] not in ("rrf", "linear"):
        raise FusionError(f"{params_file or '--method'}: fusion method {chosen['method']!r} is not rrf or linear")
    return {k: chosen[k] for k in ("method", "weights", "k", "norm") if k in chosen}


def fuse_files(run_paths: Sequence[str | os.PathLike], out: str | os.PathLike, params: Mapping, *,
               depth: int | None = None, keep: int | None = None, tag: str = "fused",
               force: bool = False) -> tuple[int, int]:
    """Fuse run files into ``out`` (``keep`` documents per topic) with ``params`` (see :func:`params`).

    One of ``run_paths`` may be ``-`` (standard input, read whole). ``out`` may not be one of the runs,
    nor a file legalir did not write unless ``force`` (:func:`legalir.base.atomic.check_file`).
    """
    from legalir.base import atomic

    trec.check_tag(tag)
    if sum(str(r) == trec.STDIN for r in run_paths) > 1:
        raise FusionError("standard input ('-') can be read once: give it as one run only")
    atomic.check_file(out, run_paths, force=force)
    fused = fuse([trec.read_run(r) for r in run_paths], depth=depth, **params)
    return trec.write_run(out, fused, tag=tag, depth=keep, inputs=run_paths, force=force), len(fused)
