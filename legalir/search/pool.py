"""Ranking each topic's own candidate pool (multiple-choice tasks as retrieval, e.g. SCALR).

A topic lists its candidates in its ``candidates`` field (document ids of
the collection); a pool ranker scores exactly those documents and nothing
else, and returns an ordinary run, so ``legalir eval`` scores it (top-1
accuracy = ``P.1`` = ``success.1`` when each pool holds one relevant
document).

* :class:`PoolBM25`: Lucene's BM25 score of each candidate for the query,
  computed by Anserini over the collection's index (term statistics from the
  whole collection, the same analyzer as ``legalir search``).
* :class:`PoolTfidf`: cosine between TF-IDF vectors of the query and each
  candidate, as SCALR's "TF-IDF bag of words" baseline: one vectorizer fit
  over every document of the collection plus the topics being ranked
  (scikit-learn's ``TfidfVectorizer`` defaults: lower case, tokens of 2+ word
  characters, smoothed idf, l2 norm, no stop list).

Ties keep trec_eval's order (document id descending), so a run file and the
scores computed from it agree.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from legalir import collections, trec
from legalir.base import atomic
from legalir.indexing.lucene import LuceneIndex
from legalir.search.bm25 import DEFAULT_B, DEFAULT_K1, bm25_params, check_bm25
from legalir.search.runner import SearchError, check_topics, search_to_run
from legalir.trec import Run, Topic, clean_text, ranking

_log = logging.getLogger(__name__)

FIELD = "candidates"


def candidate_pools(topics: Mapping[str, Topic]) -> dict[str, list[str]]:
    """Each topic's candidate document ids, validated."""
    pools = {}
    for qid, t in topics.items():
        pool = t.fields.get(FIELD)
        if not isinstance(pool, (list, tuple)) or not pool or not all(isinstance(d, str) and d for d in pool):
            raise SearchError(f"topic {qid!r} has no {FIELD!r} list of document ids; pool ranking needs topics "
                              f"written with their candidates (the collection's topics/<set>.jsonl)")
        if len(set(pool)) != len(pool):
            raise SearchError(f"topic {qid!r} lists a candidate twice: {pool}")
        pools[qid] = list(pool)
    return pools


def _top(scores: Mapping[str, float], k: int) -> dict[str, float]:
    return dict(ranking(scores, k))


class PoolBM25:
    """BM25 (Lucene, via Anserini) of each topic's candidates in the index at ``index_dir``."""

    def __init__(self, index_dir: str | os.PathLike, k1: float = DEFAULT_K1, b: float = DEFAULT_B):
        check_bm25(k1, b)
        self.index = LuceneIndex(index_dir)
        self.index_dir = str(self.index.path)
        self.k1, self.b = k1, b

    def search(self, topics: Mapping[str, Topic], k: int) -> Run:
        check_topics(topics)
        pools = candidate_pools(topics)
        missing = sorted({d for pool in pools.values() for d in pool if not self.index.has_doc(d)})
        if missing:
            raise SearchError(f"{self.index_dir}: {len(missing)} candidate document(s) are not in the index: "
                              + ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
        run: Run = {}
        for qid, pool in pools.items():
            text = clean_text(topics[qid].text)
            run[qid] = _top({d: self.index.score(d, text, self.k1, self.b) for d in pool}, k)
        return run

    def close(self) -> None:
        self.index.close()


class PoolTfidf:
    """TF-IDF cosine of each topic's candidates; ``documents`` maps every collection docid to its text."""

    def __init__(self, documents: Mapping[str, str]):
        if not documents:
            raise SearchError("no documents to fit TF-IDF on")
        self.documents = dict(documents)

    @classmethod
    def from_collection(cls, collection_dir: str | os.PathLike) -> PoolTfidf:
        return cls({d["id"]: d["contents"] for d in collections.iter_documents(Path(collection_dir))})

    def search(self, topics: Mapping[str, Topic], k: int) -> Run:
        from sklearn.feature_extraction.text import TfidfVectorizer

        check_topics(topics)
        pools = candidate_pools(topics)
        missing = sorted({d for pool in pools.values() for d in pool if d not in self.documents})
        if missing:
            raise SearchError(f"{len(missing)} candidate document(s) are not in the collection: "
                              + ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
        docids = sorted(self.documents)
        qids = list(topics)
        vectorizer = TfidfVectorizer()
        matrix = vectorizer.fit_transform([self.documents[d] for d in docids] + [topics[q].text for q in qids])
        row = {d: i for i, d in enumerate(docids)}
        run: Run = {}
        for j, qid in enumerate(qids):
            qvec = matrix[len(docids) + j]
            cand = matrix[[row[d] for d in pools[qid]]]
            sims = (cand @ qvec.T).toarray().ravel()
            run[qid] = _top({d: float(s) for d, s in zip(pools[qid], sims)}, k)
        return run

    def close(self) -> None:
        """Nothing held open."""


def rank_file(topics_path: str | os.PathLike, run_path: str | os.PathLike, ranker: str = "bm25", *,
              index_dir: str | os.PathLike | None = None, collection: str | os.PathLike | None = None,
              k1: float | None = None, b: float | None = None, tag: str | None = None,
              force: bool = False) -> tuple[int, int]:
    """Rank every topic's candidates of ``topics_path`` (``-``: standard input) with ``ranker`` (``bm25``
    over ``index_dir``, ``tfidf`` fit on ``collection``) into ``run_path``; returns (lines, topics).
    ``force``: see :func:`legalir.search.runner.search_to_run`."""

    if ranker not in ("bm25", "tfidf"):
        raise SearchError(f"unknown pool ranker {ranker!r}; choose bm25 or tfidf")
    if ranker == "bm25" and not index_dir:
        raise SearchError("--ranker bm25 needs --index (the collection's Lucene index)")
    if ranker == "tfidf" and not collection:
        raise SearchError("--ranker tfidf needs --collection")

    atomic.check_file(run_path, [topics_path], force=force)
    topics = trec.read_topics(topics_path)
    depth = max(len(v) for v in candidate_pools(topics).values())

    def make() -> PoolBM25 | PoolTfidf:
        if ranker == "bm25":
            assert index_dir is not None  # refused above without it
            k1_, b_, source = bm25_params(index_dir, k1, b)
            _log.info(f"BM25 k1={k1_:g} b={b_:g} ({source})")
            return PoolBM25(index_dir, k1=k1_, b=b_)
        assert collection is not None  # refused above without it
        return PoolTfidf.from_collection(collection)

    return search_to_run(make, topics_path, run_path, k=depth, tag=tag or ranker, depth=None, force=force,
                         topics=topics)
