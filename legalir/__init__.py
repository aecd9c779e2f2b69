"""legalir: legal information retrieval benchmarks, from published files to scored TREC runs."""
__version__ = "0.1.0"
