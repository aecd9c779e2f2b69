"""Dataset modules: each turns one benchmark's published files into documents, topics and qrels.

Importing this package registers every dataset module listed here.
"""
from legalir.datasets.base import (Dataset, DatasetError, Document, Judgement, Option, Pipeline, Reference, Topic,
                                   dataset_class, get, names, register)

from legalir.datasets import acord, sample  # noqa: E402,F401  (registration)
from legalir.datasets import barexam, housing, scalr  # noqa: E402,F401  (registration)
from legalir.datasets import crumb  # noqa: E402,F401  (registration)
from legalir.datasets import statutes  # noqa: E402,F401  (registration)

__all__ = ["Dataset", "DatasetError", "Document", "Judgement", "Option", "Pipeline", "Reference", "Topic",
           "dataset_class", "get", "names", "register"]
