"""ir_datasets provider: legalir's converted collections as ``legalir/...`` datasets.

Importing this module registers, with `ir_datasets <https://ir-datasets.com>`_,
one dataset per converted collection that a dataset pipeline makes
(:func:`legalir.datasets.catalogue.collection_entries`: a new dataset module
gets its names without an edit here) and one per topic set::
    legalir/acord                       the corpus (docs only)
    legalir/acord/test                  docs, queries (topics/test.jsonl), qrels (qrels/test.txt)
    legalir/acord/test/long             topic set ``test.long``, scored on qrels ``test``
    legalir/housing/test, legalir/barexam/train, legalir/scalr/test
    legalir/crumb/<task>/test           CRUMB, one passage collection per task
    legalir/crumb/paper_retrieval/test/binary   qrels ``test.binary`` over the ``test`` topics

A topic set ``X.variant`` is the name ``.../X/variant``: its topics are
``topics/X.variant.jsonl`` where the collection has them (else ``topics/X``), its qrels
``qrels/X.variant.txt`` where it has them (else ``qrels/X``). The names are those the
pipelines declare plus every set found in a converted collection's manifest;
a name registered later (a dataset module imported after this one, a
collection converted since) is resolved when it is first loaded.

Where the collections are: ``$LEGALIR_COLLECTIONS`` (default ``./collections``,
the folder legalir's Makefile writes), read each time a collection is opened.
A collection that is not converted yet is a :class:`NotConvertedError`
naming the ``make`` target (``make convert-acord``) and the ``legalir convert``
command that writes it where it is looked for.

Records are ir_datasets' standard namedtuples: documents ``(doc_id, text, ...)``
with every metadata field of the collection's JSONL records as a further
field (``None`` where a document lacks it), queries ``GenericQuery(query_id,
text)`` (topic metadata such as HousingQA's ``state`` is in the collection's
``topics/<set>.jsonl``: :func:`legalir.pt.topics` reads it), qrels
``TrecQrel(query_id, doc_id, relevance, iteration)``.
"""
from __future__ import annotations

import keyword
import logging
import os
import re
import threading
from collections import namedtuple
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from legalir import collections, trec
from legalir.collections import DEFAULT_ROOT
from legalir.collections import ROOT_ENV as ENV
from legalir.datasets import dataset_class
from legalir.errors import LegalirError
from legalir.legal import filters

try:
    import ir_datasets
    from ir_datasets.formats import BaseDocs, BaseQrels, BaseQueries, GenericQuery, TrecQrel
    from ir_datasets.indices import Docstore
except ImportError as _e:  # pragma: no cover - the extra is not installed
    raise LegalirError(f"legalir.irds needs the ir_datasets package ({_e}): pip install 'legalir[irds]'") from None

_log = logging.getLogger(__name__)

#: ENV (environment variable naming the folder that holds converted collections) and DEFAULT_ROOT, its default
#: (the folder legalir's Makefile writes, relative to the working directory): legalir.collections' own

PREFIX = "legalir"
LANG = "en"

__all__ = ["ENV", "PREFIX", "IrdsError", "NotConvertedError", "collections_root", "dataset_names", "register",
           "collection_dir"]


class IrdsError(LegalirError, ValueError):
    """A ``legalir/...`` name that names no collection or topic set."""


class NotConvertedError(LegalirError, FileNotFoundError):
    """The collection behind a ``legalir/...`` dataset is not converted (no ``manifest.json``)."""


def collections_root() -> Path:
    """The folder holding converted collections: ``$LEGALIR_COLLECTIONS``, default ``./collections``.

    Returns
    -------
    pathlib.Path
        The folder (relative paths are relative to the working directory); it need not exist.

    Examples
    --------
    >>> import os
    >>> os.environ["LEGALIR_COLLECTIONS"] = "/data/collections"
    >>> str(collections_root())
    '/data/collections'
    """

    return collections.root()  # the one rule (legalir.load and legalir report use it too)


def _entries() -> dict[str, Any]:
    from legalir.datasets import catalogue

    return {e.name: e for e in catalogue.collection_entries()}


def collection_dir(name: str) -> Path:
    """The folder of a collection under :func:`collections_root`, by its name (``acord``, ``crumb/legal_qa``).

    Parameters
    ----------
    name : str
        The collection's name: ``legalir/<name>`` without the prefix and without a topic set.

    Returns
    -------
    pathlib.Path
        Where the collection is looked for (it need not be converted yet).

    Raises
    ------
    IrdsError
        When no dataset pipeline makes a collection of that name.

    Examples
    --------
    >>> collection_dir("crumb/legal_qa").parts[-3:]
    ('crumb', 'legal_qa', 'passage')
    """
    entries = _entries()
    if name not in entries:
        raise IrdsError(f"no legalir collection {name!r}; known: {', '.join(sorted(entries))}")
    return collections_root() / entries[name].path


def _set_name(path: str) -> str:
    return path.replace("/", ".")


def _set_path(set_name: str) -> str:
    return set_name.replace(".", "/")


def _converted_sets(entry) -> set[str]:
    """Topic and qrels sets of the collection's manifest, if it is converted (else none)."""
    manifest = collections_root() / entry.path / "manifest.json"
    if not manifest.exists():
        return set()

    try:
        m = collections.read_manifest(manifest.parent)
    except LegalirError as e:
        _log.warning(f"{ENV}: {e}")
        return set()
    return set(m.get("topics") or {}) | set(m.get("qrels") or {})


def _names_of(entry) -> list[str]:
    base = f"{PREFIX}/{entry.name}"
    sets = {*entry.topic_sets, *entry.qrels_sets, *_converted_sets(entry)}
    return [base] + [f"{base}/{_set_path(s)}" for s in sorted(sets)]


def dataset_names() -> list[str]:
    """Every ``legalir/...`` dataset name known now (declared by the pipelines, or in converted manifests).

    Returns
    -------
    list of str
        Names for :func:`ir_datasets.load`, e.g. ``legalir/acord/test``.

    Examples
    --------
    >>> "legalir/acord/test" in dataset_names()
    True
    """
    return [n for e in _entries().values() for n in _names_of(e)]


# ------------------------------------------------------------------ the collection behind a name

class _Collection:
    """A collection, opened lazily: the root is read from the environment when it is first used."""

    def __init__(self, entry):
        self.entry = entry

    @property
    def irds_name(self) -> str:
        return f"{PREFIX}/{self.entry.name}"

    def path(self) -> Path:
        path = collections_root() / self.entry.path
        if not (path / "manifest.json").exists():
            raise NotConvertedError(self._missing(path))
        return path

    def _missing(self, path: Path) -> str:
        e = self.entry
        p = dataset_class(e.dataset).pipeline
        options = ""
        if e.part is not None and p is not None:
            options = f" --option {p.part_option}={e.part}" + "".join(f" --option {o}" for o in p.convert_options)
        where = f"{ENV}={os.environ[ENV]}" if os.environ.get(ENV, "").strip() else f"{ENV} unset, so ./{DEFAULT_ROOT}"
        return (f"{self.irds_name}: the collection is not converted yet: no {path / 'manifest.json'} ({where}). "
                f"Run `make {e.make_target}` in the legalir checkout (it writes {DEFAULT_ROOT}/{e.path}; point {ENV} "
                f"at that {DEFAULT_ROOT} folder), or `legalir convert {e.dataset} --data-dir data{options} --out {path}`")

    def manifest(self) -> dict:
        return collections.read_manifest(self.path())


_lock = threading.Lock()
_doc_classes: dict[tuple[str, int], tuple[type, dict[str, str]]] = {}


def _field_names(keys: list[str]) -> dict[str, str]:
    """Record key -> namedtuple field name (identifiers; ``doc_id``/``text`` and clashes prefixed ``meta_``)."""
    out: dict[str, str] = {}
    taken = {"doc_id", "text"}
    for key in keys:
        name = re.sub(r"\W", "_", key)
        if not name or name[0].isdigit() or name.startswith("_") or keyword.iskeyword(name) or name in taken:
            name = "meta_" + name.lstrip("_")
        base, n = name, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        out[key] = name
    return out


def _doc_class(path: Path) -> tuple[type, dict[str, str]]:
    """The namedtuple class of a collection's documents: ``doc_id, text`` and every metadata key, in first-seen
    order (one pass over the corpus, cached per collection and manifest version)."""


    stamp = (str(path.resolve()), (path / "manifest.json").stat().st_mtime_ns)
    with _lock:
        if stamp not in _doc_classes:
            keys: dict[str, None] = {}
            for rec in collections.iter_documents(path):
                for k in rec:
                    if k not in ("id", "contents", filters.FIELD) and k not in keys:  # filters: index-only tokens
                        keys[k] = None
            fields = _field_names(list(keys))
            cls = namedtuple("LegalirDoc", ["doc_id", "text", *fields.values()])
            cls.default_text = lambda self: self.text
            cls.__doc__ = f"A document of {path}: doc_id, text, and the collection's metadata fields."
            _doc_classes[stamp] = (cls, fields)
        return _doc_classes[stamp]


class _Docs(BaseDocs):
    def __init__(self, coll: _Collection):
        self._coll = coll

    def docs_iter(self) -> Iterator[tuple]:
        path = self._coll.path()
        cls, fields = _doc_class(path)
        for rec in collections.iter_documents(path):
            yield cls(rec["id"], rec["contents"], *(rec.get(k) for k in fields))

    def docs_cls(self):
        return _doc_class(self._coll.path())[0]

    def docs_count(self) -> int:
        return int(self._coll.manifest()["documents"]["written"])

    def docs_store(self, field: str = "doc_id") -> Docstore:
        return _Store(self, field)

    def docs_namespace(self) -> str:
        return self._coll.irds_name

    def docs_lang(self) -> str:
        return LANG


class _Store(Docstore):
    """Documents by id, read into memory on first use (the corpus is a JSONL file, without an offset index)."""

    def __init__(self, docs: _Docs, field: str = "doc_id"):
        super().__init__(docs.docs_cls(), field)
        self._docs = docs
        self._by_id: dict[str, tuple] | None = None

    def get_many_iter(self, doc_ids):
        if self._by_id is None:
            self._by_id = {getattr(d, self._id_field): d for d in self._docs.docs_iter()}
        for doc_id in doc_ids:
            if doc_id in self._by_id:
                yield self._by_id[doc_id]

    def clear_cache(self):
        self._by_id = None


class _Queries(BaseQueries):
    def __init__(self, coll: _Collection, set_name: str):
        self._coll, self._set = coll, set_name

    def _file(self) -> Path:
        path = self._coll.path()
        if (path / "topics" / f"{self._set}.jsonl").exists():
            return path / "topics" / f"{self._set}.jsonl"
        return collections.topics_path(path, collections.base_set(self._set))

    def queries_iter(self) -> Iterator[GenericQuery]:
        for t in trec.read_topics(self._file()).values():
            yield GenericQuery(t.qid, t.text)

    def queries_cls(self):
        return GenericQuery

    def queries_namespace(self) -> str:
        return self._coll.irds_name

    def queries_lang(self) -> str:
        return LANG


class _Qrels(BaseQrels):
    def __init__(self, coll: _Collection, set_name: str):
        self._coll, self._set = coll, set_name

    def qrels_path(self) -> Path:
        path = self._coll.path()
        if (path / "qrels" / f"{self._set}.txt").exists():
            return path / "qrels" / f"{self._set}.txt"
        return collections.qrels_path(path, self._set)

    def qrels_iter(self) -> Iterator[TrecQrel]:
        for qid, docs in trec.read_qrels(self.qrels_path()).items():
            for docid, rel in docs.items():
                yield TrecQrel(qid, docid, int(rel), "0")

    def qrels_cls(self):
        return TrecQrel

    def qrels_defs(self) -> dict:
        return {}


def _dataset(entry, set_name: str | None):
    coll = _Collection(entry)
    if set_name is None:
        return ir_datasets.Dataset(_Docs(coll))
    return ir_datasets.Dataset(_Docs(coll), _Queries(coll, set_name), _Qrels(coll, set_name))


def _resolve(name: str):
    """The dataset of a ``legalir/...`` name not registered yet (a later dataset module, a newly converted set)."""
    rest = name[len(PREFIX) + 1:]
    entries = _entries()
    matches = [n for n in entries if rest == n or rest.startswith(n + "/")]
    if not matches:
        raise IrdsError(f"{name}: no such legalir collection; known: "
                        + ", ".join(f"{PREFIX}/{n}" for n in sorted(entries)))
    entry = entries[max(matches, key=len)]
    if rest == entry.name:
        return _dataset(entry, None)
    set_name = _set_name(rest[len(entry.name) + 1:])
    known = {*entry.topic_sets, *entry.qrels_sets, *_converted_sets(entry)}
    if set_name not in known:
        raise IrdsError(f"{name}: {PREFIX}/{entry.name} has no topic set {set_name!r}; known: "
                        + ", ".join(f"{PREFIX}/{entry.name}/{_set_path(s)}" for s in sorted(known)))
    return _dataset(entry, set_name)


_pattern_registered = False


def register() -> list[str]:
    """Register every ``legalir/...`` name known now with ir_datasets (idempotent; import does it).

    Names registered before are left as they are; a pattern resolves names that
    appear later (a dataset module imported afterwards, a set of a newly converted
    collection) when they are first loaded.

    Returns
    -------
    list of str
        The names registered by this call.

    Examples
    --------
    >>> import ir_datasets, legalir.irds
    >>> legalir.irds.register()  # already done by the import
    []
    >>> ir_datasets.load("legalir/acord/test").queries_cls().__name__
    'GenericQuery'
    """
    global _pattern_registered
    done = set(ir_datasets.registry)
    new = []
    for entry in _entries().values():
        for name in _names_of(entry):
            if name not in done:
                rest = name[len(PREFIX) + 1:]
                set_name = None if rest == entry.name else _set_name(rest[len(entry.name) + 1:])
                ir_datasets.registry.register(name, _dataset(entry, set_name))
                new.append(name)
    if not _pattern_registered:
        ir_datasets.registry.register_pattern(rf"^{PREFIX}/.+$", lambda name, groups: _resolve(name))
        _pattern_registered = True
    return new


register()
