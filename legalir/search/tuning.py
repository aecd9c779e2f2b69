"""Choosing settings on training topics, never on test: BM25 k1/b and run fusion.

Everything a tuning command needs is checked before the grid starts: the
topic sets (a test set is refused, ``X.variant`` sets included), the measure
to maximise (one value: ``ndcg_cut_10`` or trec_eval's ``ndcg_cut.10``), the
run files of every set.
"""
from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence

from legalir import collections, trec
from legalir.base import atomic, log
from legalir.collections import base_set
from legalir.errors import LegalirError
from legalir.indexing.lucene import check_folder
from legalir.search.arguments import check_k
from legalir.search.bm25 import BM25
from legalir.trec import Qrels, Run, Topic

K1_GRID = (0.4, 0.6, 0.8, 0.9, 1.0, 1.2, 1.5, 2.0)
B_GRID = (0.2, 0.3, 0.4, 0.5, 0.6, 0.75, 0.9, 1.0)

_log = log.get(__name__)


class TuningError(LegalirError, ValueError):
    pass


def refuse_test(topic_sets: Iterable[str], option: str = "--topics", what: str = "tuning") -> list[str]:
    """The topic sets, unless one is a test set (``test``, ``test.long`` ...): choosing settings on test is refused."""

    sets = list(topic_sets)
    if not sets:
        raise TuningError(f"{option}: name at least one training topic set, e.g. {option} train")
    bad = [t for t in sets if base_set(t) == "test"]
    if bad:
        raise TuningError(f"{option} {bad[0]}: {what} on test topics is not allowed; use training or "
                          f"validation sets (e.g. train, valid)")
    return sets


def objective(measure: str, option: str = "--measure") -> tuple[list, str]:
    """``(parsed measures, output name)`` of the one value to maximise.

    Accepts the output name (``ndcg_cut_10``) and trec_eval's spelling
    (``ndcg_cut.10``); a spec with several values (``ndcg_cut``, ``P.5,10``)
    or an unknown name is refused before any work starts.
    """
    from legalir.scoring import parse_measures

    try:
        ms = parse_measures([measure])
    except LegalirError as e:
        raise TuningError(f"{option} {measure!r}: {e}") from None
    names = [n for m in ms for n in m.output_names()]
    if len(names) != 1:
        raise TuningError(f"{option} {measure!r} names {len(names)} values ({', '.join(names[:6])}); "
                          f"give one, e.g. ndcg_cut.10")
    return ms, names[0]


def set_key(topic_sets: Sequence[str], topic_set: str) -> Callable[[str], str]:
    """The id a topic of ``topic_set`` has once ``topic_sets`` are merged: its own with one set, else
    ``set/id``. Wordings of one set (the statutes' ``valid`` and ``valid.masked``) share their topic ids;
    merged by id alone, the last set's wording would replace the others' and a tuning would see one only."""

    if len(topic_sets) > 1:
        return lambda q: f"{topic_set}/{q}"
    return lambda q: q


def training_data(collection: str | os.PathLike, topic_sets: Sequence[str]) -> tuple[dict[str, Topic], Qrels]:
    """Topics and qrels of the (non-test) topic sets, merged; each set's topics count once (:func:`set_key`)."""

    topics: dict[str, Topic] = {}
    qrels: Qrels = {}
    for t in refuse_test(topic_sets):
        key = set_key(topic_sets, t)
        topics.update({key(q): v for q, v in trec.read_topics(collections.topics_path(collection, t)).items()})
        qrels.update({key(q): js for q, js in trec.read_qrels(collections.qrels_path(collection, t)).items()})
    return topics, qrels


def grid_search_bm25(index_dir, topics: Mapping[str, Topic], qrels: Qrels, measure: str, judged_only: bool,
                     k: int = 100, k1s: Iterable[float] = K1_GRID, bs: Iterable[float] = B_GRID,
                     threads: int = 1) -> list[tuple[float, float, float]]:
    """``[(k1, b, mean measure)]`` for every grid point, best first (ties: smaller k1, then b)."""
    from legalir.scoring import evaluate

    spec, name = objective(measure)
    bm25 = BM25(index_dir, threads=threads)
    results = []
    try:
        for k1, b in itertools.product(k1s, bs):
            bm25.set_bm25(k1, b)
            run = bm25.search(topics, k)
            results.append((k1, b, evaluate(qrels, run, spec, judged_only=judged_only)["all"][name]))
    finally:
        bm25.close()
    return sorted(results, key=lambda r: (-r[2], r[0], r[1]))


def tune_bm25(dataset_cls, index_dir, collection, topic_sets: Sequence[str], measure: str, k: int = 100,
              threads: int = 1) -> tuple[list[tuple[float, float, float]], int]:
    """BM25 grid on ``topic_sets`` of ``collection`` with the dataset's judged-only rule; (grid, topics)."""

    check_k(k)
    objective(measure)
    check_folder(index_dir)
    topics, qrels = training_data(collection, topic_sets)
    grid = grid_search_bm25(index_dir, topics, qrels, measure, dataset_cls.judged_only, k=k, threads=threads)
    return grid, len(topics)


def tune_fusion(dataset_cls, collection, topic_sets: Sequence[str], run_patterns: Sequence[str], measure: str,
                out: str | os.PathLike, *, step: float = 0.05, rrf_ks: Sequence[float] = (),
                depth: int | None = None) -> dict:
    """Grid-search fusion of the runs ``run_patterns`` (``{set}`` = topic set) on training sets; the best
    settings and the whole grid are written to ``out`` (read by ``legalir fuse --params``) and returned."""
    from legalir.scoring import evaluate
    from legalir.search import fusion

    refuse_test(topic_sets)
    if any("{set}" not in p for p in run_patterns):
        raise TuningError("--run: each run path needs {set} for the topic set, e.g. runs/acord/bm25.{set}.trec")
    if not 0 < step <= 1:
        raise TuningError(f"--step {step}: the weight grid step must be in (0, 1]")
    spec, name = objective(measure)
    judged = bool(dataset_cls.judged_only)
    _, qrels = training_data(collection, topic_sets)
    runs: list[Run] = [dict() for _ in run_patterns]
    for t in topic_sets:
        key = set_key(topic_sets, t)
        for i, p in enumerate(run_patterns):
            runs[i].update({key(q): docs for q, docs in trec.read_run(p.replace("{set}", t)).items()})

    def score(run: Run) -> float:
        return float(evaluate(qrels, run, spec, judged_only=judged)["all"][name])

    result = fusion.tune(runs, score, rrf_ks=tuple(rrf_ks) or (fusion.DEFAULT_RRF_K,), step=step, depth=depth)
    doc = {"dataset": dataset_cls.name, "topics": list(topic_sets), "measure": name, "judged_only": judged,
           "runs": list(run_patterns), "single_runs": {p: score(r) for p, r in zip(run_patterns, runs)}, **result}
    atomic.write_json(out, doc, sort_keys=False, ensure_ascii=True, output=True)
    return doc
