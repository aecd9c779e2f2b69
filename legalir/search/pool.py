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

import os
from pathlib import Path
from typing import Mapping

from legalir import jvm
from legalir.search.base import SearchError, check_topics
from legalir.search.lucene import DEFAULT_B, DEFAULT_K1
from legalir.trec import Run, Topic, clean_text

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
    ranked = sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    return dict(ranked[:k])


class PoolBM25:
    """BM25 (Lucene, via Anserini) of each topic's candidates in the index at ``index_dir``."""

    def __init__(self, index_dir: str | os.PathLike, k1: float = DEFAULT_K1, b: float = DEFAULT_B):
        if not os.path.isdir(index_dir):
            raise FileNotFoundError(f"{index_dir}: no Lucene index here; build it first (legalir index)")
        self.index_dir = str(index_dir)
        self.utils = jvm.autoclass("io.anserini.index.IndexReaderUtils")
        self.reader = self.utils.getReader(os.path.abspath(self.index_dir))
        self.similarity = jvm.autoclass("org.apache.lucene.search.similarities.BM25Similarity")(float(k1), float(b))

    def search(self, topics: Mapping[str, Topic], k: int) -> Run:
        check_topics(topics)
        pools = candidate_pools(topics)
        missing = sorted({d for pool in pools.values() for d in pool
                          if self.utils.convertDocidToLuceneDocid(self.reader, d) < 0})
        if missing:
            raise SearchError(f"{self.index_dir}: {len(missing)} candidate document(s) are not in the index: "
                              + ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
        run: Run = {}
        for qid, pool in pools.items():
            text = clean_text(topics[qid].text)
            scores = {d: float(self.utils.computeQueryDocumentScoreWithSimilarity(self.reader, d, text,
                                                                                   self.similarity))
                      for d in pool}
            run[qid] = _top(scores, k)
        return run

    def close(self) -> None:
        self.reader.close()


class PoolTfidf:
    """TF-IDF cosine of each topic's candidates; ``documents`` maps every collection docid to its text."""

    def __init__(self, documents: Mapping[str, str]):
        if not documents:
            raise SearchError("no documents to fit TF-IDF on")
        self.documents = dict(documents)

    @classmethod
    def from_collection(cls, collection_dir: str | os.PathLike) -> "PoolTfidf":
        from legalir import collections

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
