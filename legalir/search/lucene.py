"""BM25 (optionally + RM3) over a Lucene index.

This drives the same Java object that Pyserini's ``LuceneSearcher`` wraps
(``io.anserini.search.SimpleSearcher`` from Pyserini's Anserini jar), with the
same ``set_bm25`` / ``set_rm3`` / ``batch_search`` calls. Going to it directly
skips the Python import of ``pyserini.search.lucene``, which pulls in torch and
the encoders and costs ~13 s per command; results are identical.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from legalir import jvm
from legalir.search.base import check_topics
from legalir.trec import Run, Topic, clean_text

#: Pyserini's LuceneSearcher defaults
DEFAULT_K1 = 0.9
DEFAULT_B = 0.4


@dataclass
class RM3:
    fb_terms: int = 10
    fb_docs: int = 10
    original_query_weight: float = 0.5


class BM25:
    """BM25 over one Lucene index. ``search`` is a multi-threaded batch search."""

    def __init__(self, index_dir: str | os.PathLike, k1: float = DEFAULT_K1, b: float = DEFAULT_B,
                 rm3: RM3 | None = None, threads: int = 1, batch_size: int = 64):
        if not os.path.isdir(index_dir):
            raise FileNotFoundError(f"{index_dir}: no Lucene index here; build it first (legalir index)")
        self.index_dir = str(index_dir)
        self.k1, self.b, self.rm3, self.threads = k1, b, rm3, max(1, threads)
        self.batch_size = max(1, batch_size)
        self.searcher = jvm.autoclass("io.anserini.search.SimpleSearcher")(os.path.abspath(self.index_dir))
        self.set_bm25(k1, b)
        if rm3 is not None:
            self.searcher.set_rm3(int(rm3.fb_terms), int(rm3.fb_docs), float(rm3.original_query_weight))

    def set_bm25(self, k1: float, b: float) -> None:
        self.k1, self.b = k1, b
        self.searcher.set_bm25(float(k1), float(b))

    def search(self, topics: Mapping[str, Topic], k: int) -> Run:
        check_topics(topics)
        qids = list(topics)
        texts = [clean_text(topics[q].text) for q in qids]
        jlist = jvm.autoclass("java.util.ArrayList")
        run: Run = {}
        # Batches bound memory: each hit carries its stored document until converted.
        for start in range(0, len(qids), self.batch_size):
            jtexts, jqids = jlist(), jlist()
            for q, t in zip(qids[start:start + self.batch_size], texts[start:start + self.batch_size]):
                jqids.add(q)
                jtexts.add(t)
            results = self.searcher.batch_search(jtexts, jqids, int(k), int(self.threads))
            for e in results.entrySet().toArray():
                run[e.getKey()] = {h.docid: float(h.score) for h in e.getValue()}
            del results
        return {q: run.get(q, {}) for q in qids}

    def close(self) -> None:
        self.searcher.close()
