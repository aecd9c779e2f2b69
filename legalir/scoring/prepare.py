"""The one pass every measure's input goes through: -M, judged-only and ranking, in trec_eval's order.

trec_eval's ``form_res_rels`` ranks a topic's documents by score then docid (both descending),
keeps the first ``-M`` of them, then, with ``-J``, drops the unjudged ones (no qrels line, or a
negative grade: :func:`legalir.scoring.judged.is_judged`); ranks close up. :func:`cut` does exactly
that, once per topic; a :class:`Topic` holds the result, ranks it once on first use, and is all a
measure sees: pytrec_eval is given ``Topic.docs`` (never its own ``-J`` flag), legalir's families
read ``Topic.ranking``. An ir_measures measure with ``judged_only=True`` reads the judged-only
view of the same topics (:meth:`Prepared.view`).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from legalir import trec
from legalir.scoring.exceptions import EvaluationError
from legalir.scoring.judged import drop_unjudged

T = TypeVar("T")


def check_max_docs(max_docs: int | None) -> None:
    """Refuse a ``-M`` below 1 (before any run is read)."""
    if max_docs is not None and max_docs < 1:
        raise EvaluationError(f"-M must be at least 1 (got {max_docs})")


def cut(docs: Mapping[str, float], judgements: Mapping[str, int], max_docs: int | None,
        judged_only: bool) -> Mapping[str, float]:
    """One topic's run as trec_eval scores it: the top ``max_docs`` (-M) in its order, then without the
    unjudged documents (-J). Neither asked: ``docs`` itself (a large run is not copied)."""
    if max_docs is not None and len(docs) > max_docs:
        docs = dict(trec.ranking(docs, max_docs))
    if judged_only:
        docs = drop_unjudged(docs, judgements)
    return docs


@dataclass
class Topic:
    """One topic as every measure sees it: its judgements and its run after -M and judged-only."""

    qid: str
    judgements: Mapping[str, int]
    docs: Mapping[str, float]
    _memo: dict[Any, Any] = field(default_factory=dict, repr=False)

    def memo(self, key: Any, make: Callable[[Topic], T]) -> T:
        """``make(self)``, computed once per ``key`` (what several families derive alike)."""
        if key not in self._memo:
            self._memo[key] = make(self)
        return self._memo[key]

    @cached_property
    def ranking(self) -> list[str]:
        """Docids in trec_eval's order: score descending, ties by docid descending."""
        return [d for d, _ in trec.ranking(self.docs)]

    @cached_property
    def ranking_ir(self) -> list[str]:
        """Docids in the order of ir_measures' own providers (MS MARCO's RR, Compat): score descending, ties
        by docid ascending."""
        return sorted(self.docs, key=lambda d: (-self.docs[d], d))


class Prepared:
    """Topics of one batch of a run, cut once per judged-only flag (:func:`cut`).

    Parameters
    ----------
    qrels, run
        ``{qid: {docid: grade}}`` and ``{qid: {docid: score}}``.
    topics
        The topics to score (each in both).
    max_docs, judged_only
        trec_eval's ``-M`` and ``-J``.
    """

    def __init__(self, qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                 topics: list[str], max_docs: int | None = None, judged_only: bool = False) -> None:
        check_max_docs(max_docs)
        self.qrels, self.run, self.topics = qrels, run, topics
        self._max_docs, self._judged_only = max_docs, judged_only
        self._views: dict[bool, dict[str, Topic]] = {}

    def view(self, judged_only: bool = False) -> dict[str, Topic]:
        """``{qid: Topic}``, judged-only when -J was given or ``judged_only`` (a measure's own flag)."""
        flag = self._judged_only or judged_only
        if flag not in self._views:
            self._views[flag] = {t: Topic(t, self.qrels[t], cut(self.run[t], self.qrels[t], self._max_docs, flag))
                                 for t in self.topics}
        return self._views[flag]


def judged_only(run: Mapping[str, Mapping[str, float]], qrels: Mapping[str, Mapping[str, int]]) -> dict:
    """The run without unjudged documents, as trec_eval -J drops them (:func:`cut` on every topic).

    Parameters
    ----------
    run : mapping
        ``{qid: {docid: score}}``.
    qrels : mapping
        ``{qid: {docid: grade}}``.

    Returns
    -------
    dict
        ``{qid: {docid: score}}``; a topic left with no document keeps an empty ranking.
    """
    empty: dict[str, int] = {}
    return {qid: dict(cut(docs, qrels.get(qid, empty), None, True)) for qid, docs in run.items()}
