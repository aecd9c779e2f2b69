"""Retrievers (BM25, dense), partition routing, fusion, rerankers, query expansion.

A retriever is any object with ``search(topics, k) -> Run`` where ``topics``
is ``{qid: Topic}`` and ``Run`` is ``{qid: {docid: score}}`` (see legalir.trec).
"""
