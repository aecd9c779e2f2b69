"""Grid search of BM25 k1/b on training topics (never on test topics)."""
from __future__ import annotations

import itertools
from typing import Iterable, Mapping

from legalir.search.lucene import BM25
from legalir.trec import Qrels, Topic

K1_GRID = (0.4, 0.6, 0.8, 0.9, 1.0, 1.2, 1.5, 2.0)
B_GRID = (0.2, 0.3, 0.4, 0.5, 0.6, 0.75, 0.9, 1.0)


def grid_search_bm25(index_dir, topics: Mapping[str, Topic], qrels: Qrels, measure: str, judged_only: bool,
                     k: int = 100, k1s: Iterable[float] = K1_GRID, bs: Iterable[float] = B_GRID,
                     threads: int = 1) -> list[tuple[float, float, float]]:
    """``[(k1, b, mean measure)]`` for every grid point, best first (ties: smaller k1, then b)."""
    from legalir.evaluate import evaluate, parse_measures

    spec = parse_measures([measure])
    bm25 = BM25(index_dir, threads=threads)
    results = []
    for k1, b in itertools.product(k1s, bs):
        bm25.set_bm25(k1, b)
        run = bm25.search(topics, k)
        scores = evaluate(qrels, run, spec, judged_only=judged_only)["all"]
        value = scores[measure] if measure in scores else next(iter(scores.values()))
        results.append((k1, b, value))
    return sorted(results, key=lambda r: (-r[2], r[0], r[1]))
