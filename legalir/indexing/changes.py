"""A version's changes, as readers see them: the changes file that ``legalir index update`` writes into a
version folder (``legalir-updates/``, one log per update), the documents of a version (its changes, then its collection),
and the guard that keeps a rebuild from dropping them. Writing changes is :mod:`legalir.indexing.update`'s.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from legalir.base import atomic, log
from legalir.errors import LegalirError

_log = log.get(__name__)

#: the changes applied to a version since its build, all in one file (what versions written before the change
#: logs below hold; still read, and shared by the versions after them)
UPDATES = "legalir-updates.jsonl"
#: the change logs of a version, one per update applied (``000001.jsonl.gz``, the first update's, ...: JSONL,
#: gzip-compressed): each update adds its own changes only and shares (hard-links) the logs of the versions
#: before it
UPDATES_DIR = "legalir-updates"
OPS = ("add", "replace", "delete")


class UpdateError(LegalirError, ValueError):
    """A change set that cannot be applied to an index as given."""


def changed_documents(index_dir: str | os.PathLike) -> dict[str, dict | None]:
    """The documents changed since ``index_dir`` was built: ``{docid: record or None (deleted)}``.

    Parameters
    ----------
    index_dir : str or PathLike
        An index folder (the link ``legalir index`` publishes, or one version folder).

    Returns
    -------
    dict
        Each added or replaced document's record as indexed (``{"id", "contents", ...}``, with
        ``"_partition"``, its partition key, when partitioned: as
        :meth:`legalir.collections.Corpus.record` gives records); ``None`` for a deleted one.
        Empty for an index never updated.
    """
    out: dict[str, dict | None] = {}
    for docid, rec, part in change_rows(index_dir):
        out.pop(docid, None)  # the last change of a document wins, and comes last
        out[docid] = None if rec is None else {**rec, **({"_partition": part} if part else {})}
    return out


def change_rows(index_dir: str | os.PathLike, only: Sequence[Path] | None = None
                ) -> Iterator[tuple[str, dict | None, str]]:
    """Every change applied to ``index_dir`` since its build, oldest first, one at a time (nothing kept):
    ``(docid, record as indexed or None when deleted, partition key or "")``; each row checked.

    ``only``: read these of its change logs alone (:func:`change_logs`' paths) [default: all].

    Raises
    ------
    UpdateError
        A row legalir did not write, or a change log without a change.
    """
    from legalir.trec import FormatError, iter_jsonl

    again = f"restore it, or build the index again (legalir index COLLECTION {index_dir} --overwrite)"
    import gzip
    import zlib

    for path in change_logs(index_dir) if only is None else only:
        found = False
        data = None
        if path.name.endswith(".gz"):
            try:
                data = gzip.decompress(path.read_bytes())
            except (OSError, EOFError, zlib.error) as e:
                raise UpdateError(f"{path}: not the compressed change log legalir wrote ({e}); {again}") from None
        try:
            for n, row in iter_jsonl(path, data=data):
                docid, op, rec = row.get("id"), row.get("op"), row.get("record")
                if (not isinstance(docid, str) or op not in OPS or (op == "delete") != (rec is None)
                        or not (rec is None or isinstance(rec, dict))):
                    raise UpdateError(f"{path}:{n}: not a change legalir wrote ({row!r:.80}); {again}")
                found = True
                yield docid, rec, row.get("partition") or ""
        except FormatError as e:
            raise UpdateError(f"{e}; not the change log legalir wrote: {again}") from None
        if not found:
            raise UpdateError(f"{path}: holds no change, yet `legalir index update` writes it only with changes: "
                              f"the changes applied to this index are lost; {again}")


def change_logs(index_dir: str | os.PathLike) -> list[Path]:
    """The change logs of an index version, oldest first: :data:`UPDATES` (versions written before the logs
    of one update each), then each update's own in :data:`UPDATES_DIR` (``NNNNNN.jsonl.gz``; a plain
    ``.jsonl`` is read too), in the order they were applied."""
    real = Path(os.path.realpath(index_dir))
    out = [real / UPDATES] if (real / UPDATES).is_file() else []
    folder = real / UPDATES_DIR
    if folder.is_dir():
        out += sorted((p for p in folder.iterdir() if p.name.endswith((".jsonl", ".jsonl.gz"))
                       and p.name.split(".")[0].isdigit()), key=lambda p: int(p.name.split(".")[0]))
    return out


def release_key(release: str) -> tuple:
    """Releases in their natural order: ``"9" < "70" < "86"`` (numbers), then any others by their text."""
    return (0, int(release), "") if release.isdigit() else (1, 0, release)


#: the key, in the output markers of a Lucene and a FAISS version published by one update, of that update
TOGETHER = "updated_together"


def half_published(links, targets) -> str | None:
    """Whether one of two indexes updated together waits for its other half to be published.

    ``legalir index update LUCENE FAISS`` publishes two versions, one after the other; both carry the
    same token in their markers (:data:`TOGETHER`). A reader of the pair (``legalir serve``) that sees the
    version of one whose token no version of the other carries yet has caught the moment between the
    two publishes, and should wait for the second rather than serve a mix.

    Parameters
    ----------
    links : mapping
        ``{"sparse"|"dense": the index link}``.
    targets : mapping
        ``{"sparse"|"dense": the version folder each link designates now}``.

    Returns
    -------
    str or None
        What is awaited, in words; ``None`` when nothing is (not a pair, or both halves there).
    """
    if len(targets) < 2:
        return None
    token = {k: (atomic.read_marker(t) or {}).get(TOGETHER) for k, t in targets.items()}
    if len(set(token.values())) == 1:
        return None
    for kind, t in token.items():
        if t is None:
            continue
        (other,) = [k for k in targets if k != kind]
        if not any((atomic.read_marker(v) or {}).get(TOGETHER) == t for v in atomic.versions(links[other])):
            return (f"{targets[kind]} was updated together with {links[other]}, whose new version is not "
                    f"published yet")
    return None


def refuse_rebuild(index_dir: str | os.PathLike, overwrite: bool = False) -> None:
    """Refuse to build ``index_dir`` afresh from its collection while it holds changes applied since its build.

    A build reads the collection, which the changes never touched (:mod:`legalir.indexing.update`): it would
    drop them without a word. ``overwrite`` (``--overwrite``) rebuilds all the same.

    Raises
    ------
    UpdateError
        Naming the changes file and what to do.
    """
    logs = change_logs(index_dir)
    if overwrite or not logs:
        return
    n = len(changed_documents(index_dir))
    where = logs[-1].parent if logs[-1].parent.name == UPDATES_DIR else logs[-1]
    raise UpdateError(f"{index_dir}: holds {n} document change(s) applied by `legalir index update` since it was "
                      f"built ({where}); a build from the collection would drop them: apply them to the collection "
                      f"and convert it again, or pass --overwrite to rebuild without them")


# ------------------------------------------------------------------ reading an updated version's documents
class Documents:
    """The documents of one index version: its changes (:func:`changed_documents`), then its collection.

    What a reader that shows documents uses (``legalir.Searcher.doc``, ``legalir serve``): an added or
    replaced document's record as indexed, ``None`` for a deleted one (never the collection's stale
    copy), every other document from the collection.

    Parameters
    ----------
    corpus : legalir.collections.Corpus or None
        The collection the index was built from.
    index_dirs : sequence of path
        The index folder(s) (links are resolved once, here); their changes are merged, the first
        folder's record of a document winning.
    release : str, optional
        The release of a code the version holds (its marker's): each record shown names it as its
        ``release`` (a record of a code's release does not carry it: the release belongs to the version).
    """

    def __init__(self, corpus, index_dirs: Sequence[str | os.PathLike] = (), release: str | None = None):
        self.corpus = corpus
        self.release = release
        self.changed: dict[str, dict | None] = {}
        self._cited: tuple[dict[str, list[str]], set[str]] | None = None
        for d in index_dirs:  # `legalir index update` changes a Lucene and a FAISS index together: they agree
            for docid, rec in changed_documents(d).items():
                self.changed.setdefault(docid, rec)

    def record(self, docid: str, partition: str | None = None) -> dict | None:
        """The record of ``docid`` (``{"id", "contents", ..., "_partition"}``), or ``None``."""
        if docid in self.changed:
            rec = self.changed[docid]
            if rec is None or (partition not in (None, "") and rec.get("_partition", partition) != partition):
                return None
            rec = dict(rec)
        else:
            rec = self.corpus.record(docid, partition) if self.corpus is not None else None
        if rec is not None and self.release is not None and "release" not in rec:
            rec = {**rec, "release": self.release}
        return rec

    def records(self, docids: Sequence[str], partition: str | None = None) -> list[dict | None]:
        """:meth:`record` of each of ``docids``, in order; the unchanged ones read from the collection together
        (:meth:`legalir.collections.Corpus.records`)."""
        kept = [d for d in docids if d not in self.changed]
        found = dict(zip(kept, self.corpus.records(kept, partition))) if self.corpus is not None and kept else {}
        out: list[dict | None] = []
        for d in docids:
            if d in self.changed:
                out.append(self.record(d, partition))
                continue
            rec = found.get(d)
            if rec is not None and self.release is not None and "release" not in rec:
                rec = {**rec, "release": self.release}
            out.append(rec)
        return out

    def resolve(self, text: str) -> list[str]:
        """The documents of this version that a citation written as a lawyer writes it designates
        (``O.C.G.A. § 37-1-116.1``; the rule of :meth:`legalir.collections.Corpus.resolve`): an added or replaced
        document by its own citation as indexed, a deleted one never, any other from the collection. A bare
        ``§ N`` is read in the jurisdiction every document of the version shares. Returns the ids in order
        (``[]`` when none); an id is returned as it is."""
        from legalir.collections import cited_keys

        if isinstance(text, str) and self.record(text) is not None:
            return [text]
        table, own = self.corpus.citation_table() if self.corpus is not None else ({}, None)
        mine, theirs = self._changed_citations()
        if theirs:  # the changes' jurisdictions: the version's own only when they and the collection's agree
            own = next(iter(theirs)) if len(theirs) == 1 and (self.corpus is None or own in theirs) else None
        found: list[str] = []
        for key in cited_keys(text, own):
            for d in [*mine.get(key, []), *(d for d in table.get(key, []) if d not in self.changed)]:
                if d not in found:
                    found.append(d)
        return found

    def _changed_citations(self) -> tuple[dict[str, list[str]], set[str]]:
        """``({citation key: changed documents whose own citation it is}, the changed documents' jurisdictions)``."""
        from legalir.legal import citations as cite

        if self._cited is None:
            field = (self.corpus.partition_field if self.corpus is not None else None) or "state"
            table: dict[str, list[str]] = {}
            jurs: set[str] = set()
            for docid, rec in self.changed.items():
                if rec is None:
                    continue
                for key in cite.parse_field(rec.get(cite.FIELD))["is"]:
                    table.setdefault(key, []).append(docid)
                if rec.get(field) not in (None, ""):
                    jurs.add(str(rec[field]))
            self._cited = (table, jurs)
        return self._cited
