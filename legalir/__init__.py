"""legalir: legal information retrieval benchmarks, from published files to scored TREC runs.

The public Python API (:mod:`legalir.api`)::

    import legalir
    ds = legalir.load("acord", split="test")                # corpus, topics, qrels
    searcher = legalir.index(ds, "indexes/acord/bm25")      # or legalir.Searcher(path)
    searcher.search("cap on liability", k=5)                # [Hit(docid, score, rank, text, fields)]
    legalir.update("indexes/acord/bm25", add=[...], delete=[...])  # a new version, as a rebuild would search
    run = searcher.batch_search(ds, k=1000)                 # {qid: {docid: score}}
    legalir.evaluate(ds.qrels, run, ["nDCG@10"], judged_only=ds.judged_only)
    legalir.compare({"bm25": run, "other": run2}, ds.qrels, ["nDCG@10"], correction="holm")

Names load on first use, so ``import legalir`` stays cheap (the CLI's ``eval`` imports none of them).
"""
import logging as _logging

from legalir.version import __version__  # noqa: F401

__all__ = ["ApiError", "Benchmark", "Hit", "Searcher", "as_qrels", "as_run", "compare", "evaluate", "index",
           "load", "update", "write_run"]

# a library: records go wherever the application sends them (the CLI adds its own handler)
_logging.getLogger(__name__).addHandler(_logging.NullHandler())


def __getattr__(name: str):
    if name in __all__:
        from legalir import api

        return getattr(api, name)
    raise AttributeError(f"module 'legalir' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *__all__])
