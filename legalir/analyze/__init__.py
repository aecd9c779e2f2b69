"""Analyses of collections and runs beyond retrieval scores (``legalir analyze ...``).

* :mod:`legalir.analyze.lexical`: TF-IDF similarity of queries, gold documents and answers; tests between
  datasets; a retrieval measure per similarity bucket (Zheng et al. 2025, Section 4).
* :mod:`legalir.analyze.citing`: topics and gold documents carrying citations; a run's measure split by
  topics with and without them.
"""
