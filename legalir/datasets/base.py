"""What every dataset module provides: a corpus of documents, topics, qrels.

A dataset module subclasses :class:`Dataset` and registers itself with
:func:`register`. It reads the *published* files from ``root``
(``$DATA_DIR/<name>``) and yields plain records; everything downstream
(collections, indexes, search, evaluation) is dataset-agnostic.
"""
from __future__ import annotations
from legalir.errors import LegalirError

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable, Iterator, Mapping

from legalir.trec import Topic

__all__ = ["Document", "Topic", "Judgement", "Dataset", "DatasetError", "Reference", "register", "get", "names"]


class DatasetError(LegalirError, ValueError):
    """Published files missing or not in the expected layout."""


@dataclass(frozen=True)
class Document:
    id: str
    contents: str
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Judgement:
    qid: str
    docid: str
    relevance: int


@dataclass(frozen=True)
class Reference:
    """One published row of numbers, to print beside ours."""

    system: str
    source: str  # citation, e.g. "Wang et al. 2024, Table 3"
    values: Mapping[str, float]  # measure name -> value, on the scale the report prints


class Dataset(ABC):
    #: registry name and folder name under $DATA_DIR
    name: ClassVar[str]
    #: files (relative to root) that must exist; used for clear errors and `legalir download`
    required_files: ClassVar[tuple[str, ...]] = ()
    #: Hugging Face Hub dataset repository holding the published files, if any
    hub_repo: ClassVar[str | None] = None
    #: a document field whose values partition the corpus (one index per value), if any
    partition_field: ClassVar[str | None] = None

    def __init__(self, root: str | Path, **options: Any):
        self.root = Path(root)
        self.options = options

    # ---- what a dataset yields
    @abstractmethod
    def documents(self) -> Iterator[Document]:
        """Stream the corpus."""

    @abstractmethod
    def topic_sets(self) -> Mapping[str, Iterable[Topic]]:
        """Named topic sets, e.g. ``{"train": ..., "test": ..., "test.long": ...}``."""

    @abstractmethod
    def qrels_sets(self) -> Mapping[str, Iterable[Judgement]]:
        """Named qrels, e.g. ``{"train": ..., "test": ...}``. A topic set ``X.variant`` uses qrels ``X``."""

    # ---- helpers
    def check_files(self) -> None:
        missing = [f for f in self.required_files if not (self.root / f).exists()]
        if missing:
            raise DatasetError(
                f"{self.name}: missing published file(s) under {self.root}: "
                + ", ".join(missing)
                + (f". Run `legalir download {self.name}` when online (Hub: {self.hub_repo}), "
                   f"or place the files there in the published layout." if self.hub_repo else "")
            )


_REGISTRY: dict[str, type[Dataset]] = {}


def register(cls: type[Dataset]) -> type[Dataset]:
    _REGISTRY[cls.name] = cls
    return cls


def names() -> list[str]:
    from legalir import datasets  # noqa: F401  (imports every dataset module)

    return sorted(_REGISTRY)


def get(name: str, data_dir: str | Path, **options: Any) -> Dataset:
    """The dataset ``name`` reading from ``data_dir/<name>``."""
    from legalir import datasets  # noqa: F401

    if name not in _REGISTRY:
        raise DatasetError(f"unknown dataset {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    cls = _REGISTRY[name]
    return cls(Path(data_dir) / name, **options)
