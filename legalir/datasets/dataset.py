"""What every dataset module provides: a corpus of documents, topics, qrels, and its protocol.

A dataset module subclasses :class:`Dataset` and registers itself with
:func:`register`. It reads the *published* files from ``root``
(``$DATA_DIR/<name>``) and yields plain records; everything downstream
(collections, indexes, search, evaluation) is dataset-agnostic.

Everything else legalir needs to know about a dataset is *declared* on the
class, never probed: its files (``required_files``, ``hub_*``), its options
(``options_spec``, validated when the dataset is created), its evaluation
protocol (``measures``, ``judged_only``, ``references``, ``report_scale``)
and how the Makefile runs it (``pipeline``: printed by ``legalir datasets
--make``). A new dataset is one module; no Makefile edit.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

from legalir.errors import LegalirError
from legalir.trec import Topic

__all__ = ["Document", "Topic", "Judgement", "Dataset", "DatasetError", "Reference", "Option", "Pipeline",
           "register"]


class DatasetError(LegalirError, ValueError):
    """Published files missing or not in the expected layout."""


#: Pyserini's ``LuceneSearcher`` BM25 parameters: what an index whose dataset declares no tuned ones is searched
#: with (the one statement of them; :func:`legalir.search.bm25.bm25_params` applies them)
BM25_DEFAULTS: Mapping[str, float] = MappingProxyType({"k1": 0.9, "b": 0.4})


@dataclass(frozen=True)
class Document:
    """One document of a published corpus; ``source`` and ``line``: where it was read (for messages)."""

    id: str
    contents: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    source: str | None = field(default=None, compare=False, repr=False)
    line: int | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Judgement:
    """One published relevance judgement; ``source`` and ``line``: where it was read (for messages)."""

    qid: str
    docid: str
    relevance: int
    source: str | None = field(default=None, compare=False, repr=False)
    line: int | None = field(default=None, compare=False, repr=False)

    @property
    def where(self) -> str | None:
        """``file:line`` of the judgement, when known."""
        return f"{self.source}:{self.line}" if self.source and self.line else self.source


@dataclass(frozen=True)
class Reference:
    """One published row of numbers, to print beside ours."""

    system: str
    source: str  # citation, e.g. "Wang et al. 2024, Table 3"
    values: Mapping[str, float]  # measure name -> value, on the scale the report prints


@dataclass(frozen=True)
class Option:
    """One ``--option KEY=VALUE`` a dataset accepts."""

    help: str
    default: str | None = None
    #: the only values allowed (checked when the dataset is created), if limited
    choices: tuple[str, ...] | None = None
    #: more checks: called with the value, raises :class:`DatasetError`
    check: Callable[[str], Any] | None = None


@dataclass(frozen=True)
class Pipeline:
    """How the Makefile runs a dataset (``legalir datasets --make`` prints it as make variables).

    ``kind``: ``bm25`` (index, search, report), ``pool`` (rank each topic's
    candidates) or ``passages`` (BM25 over passages, then MaxP; one run per
    ``parts`` entry, converted with ``--option <part_option>=<part>``).
    """

    kind: str = "bm25"
    #: folder name under indexes/, runs/, results/ (default: the dataset name)
    short: str | None = None
    #: topic sets searched and reported (a set ``X.variant`` is scored on qrels ``X``)
    topics: tuple[str, ...] = ("test",)
    #: topic sets that BM25 and fusion are tuned on (never test); empty: untuned
    tune: tuple[str, ...] = ()
    #: BM25 parameters chosen on ``tune`` (legalir tune-bm25), empty: Pyserini's defaults (:data:`BM25_DEFAULTS`)
    bm25: Mapping[str, float] = field(default_factory=dict)
    #: globs (relative to $DATA_DIR/<name>) of the published files the collection is made from
    sources: tuple[str, ...] = ()
    #: dense and hybrid runs are defined for it
    dense: bool = False
    #: report title
    title: str = ""
    #: `passages` kind: the option naming a part, the parts, and the options of every conversion
    part_option: str | None = None
    parts: tuple[str, ...] = ()
    convert_options: tuple[str, ...] = ()


class Dataset(ABC):
    #: registry name and folder name under $DATA_DIR
    name: ClassVar[str]
    #: files (relative to root) that must exist; used for clear errors and `legalir download`
    required_files: ClassVar[tuple[str, ...]] = ()
    #: Hugging Face Hub dataset repository holding the published files, if any
    hub_repo: ClassVar[str | None] = None
    #: what `legalir download` fetches (glob patterns in the Hub repository) [default: required_files]
    hub_files: ClassVar[tuple[str, ...]] = ()
    #: (archive in the Hub repository, member prefix) to extract when ``hub_files`` match nothing
    hub_archive: ClassVar[tuple[str, str] | None] = None
    #: a document field whose values partition the corpus (one index per value), if any
    partition_field: ClassVar[str | None] = None
    #: a document field holding the document's own citation (Housing: ``citation``), read with its text
    #: into the collection's ``citations`` field (:mod:`legalir.legal.citations`)
    citation_field: ClassVar[str | None] = None
    #: a document and topic field naming the jurisdiction that a citation without one belongs to
    jurisdiction_field: ClassVar[str | None] = None
    #: document fields made filterable (:mod:`legalir.legal.filters`); ``None``: every short scalar field
    filter_fields: ClassVar[tuple[str, ...] | None] = None
    #: types of filterable fields (``{"year": "integer"}``: keyword, integer, float or date); a field not
    #: named is typed by its values at conversion (:mod:`legalir.legal.filters`)
    filter_types: ClassVar[Mapping[str, str] | None] = None
    #: the ``--option KEY=VALUE`` it accepts; any other key is refused
    options_spec: ClassVar[Mapping[str, Option]] = {}

    # ---- evaluation protocol (legalir report, tune-bm25, tune-fusion, train-ce)
    #: trec_eval-style measure specs of its papers, e.g. ``("ndcg_cut.5", "recall.100,1000")``
    measures: ClassVar[tuple[str, ...]] = ()
    #: drop unjudged documents before scoring (trec_eval -J)
    judged_only: ClassVar[bool] = False
    #: published rows printed beside ours
    references: ClassVar[tuple[Reference, ...]] = ()
    #: words for the qrels grades where the dataset has its own (ACORD: stars), for pages and tables
    grade_names: ClassVar[Mapping[int, str] | None] = None
    #: the measure (output name) report figures plot, e.g. ``ndcg_cut_10`` [default: the first column]
    headline: ClassVar[str | None] = None
    #: 100 when the papers print percentages, 1 for fractions
    report_scale: ClassVar[float] = 100
    #: how the Makefile runs it; ``None``: no pipeline (e.g. the embedded sample)
    pipeline: ClassVar[Pipeline | None] = None

    def __init__(self, root: str | Path, **options: Any):
        self.root = Path(root)
        self.options = self.check_options(options)

    @classmethod
    def part_sources(cls, part: str) -> tuple[str, ...]:
        """Published files (globs under $DATA_DIR/<name>) of one part of a ``passages`` pipeline."""
        return cls.pipeline.sources if cls.pipeline else ()

    @classmethod
    def part_qrels(cls, part: str) -> tuple[str, ...]:
        """Qrels sets one part of a ``passages`` pipeline is scored on."""
        return ("test",)

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        """``options`` validated against ``options_spec`` (unknown keys, choices, checks)."""
        unknown = sorted(set(options) - set(cls.options_spec))
        if unknown:
            known = ", ".join(sorted(cls.options_spec)) or "none"
            raise DatasetError(f"{cls.name}: unknown option(s) {', '.join(unknown)}; known: {known}")
        for key, value in options.items():
            spec = cls.options_spec[key]
            if spec.choices is not None and str(value).strip().lower() not in {c.lower() for c in spec.choices}:
                raise DatasetError(f"{cls.name}: unknown {key} {value!r} (--option {key}={value}); "
                                   f"expected one of: {', '.join(spec.choices)}")
            if spec.check is not None:
                spec.check(str(value))
        return dict(options)

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
