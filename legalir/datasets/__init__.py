"""Dataset modules: each turns one benchmark's published files into documents, topics and qrels.

Importing this package registers every dataset module listed here.
"""
import os
from pathlib import Path
from typing import Any

from legalir.datasets import (  # noqa: F401  (registration)  # noqa: E402,F401  (registration)
    acord,
    barexam,
    crumb,
    housing,
    sample,
    scalr,
    statutes,
)
from legalir.datasets.dataset import (
    _REGISTRY,
    Dataset,
    DatasetError,
    Document,
    Judgement,
    Option,
    Pipeline,
    Reference,
    Topic,
    register,
)

__all__ = ["Dataset", "DatasetError", "Document", "Judgement", "Option", "Pipeline", "Reference", "Topic",
           "dataset_class", "get", "names", "register"]


def names() -> list[str]:
    """The registered datasets' names (every module imported above registered itself)."""
    return sorted(_REGISTRY)


def dataset_class(name: str) -> type[Dataset]:
    """The class registered as ``name`` (its declared protocol, without reading any file)."""
    if name not in _REGISTRY:
        raise DatasetError(f"unknown dataset {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def get(name: str, data_dir: str | os.PathLike, **options: Any) -> Dataset:
    """The dataset ``name`` reading from ``data_dir/<name>``."""
    cls = dataset_class(name)
    return cls(Path(data_dir) / name, **options)
