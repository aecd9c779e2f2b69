"""Indexes over collections: sparse (Lucene, via Pyserini) and dense (FAISS)."""
