"""The releases of a code an index keeps, in time: their dates, ``as_of=`` a date, and a section's history.

An index built from a release of a code (``legalir convert statutes``, then ``legalir index`` and
``legalir index update --to``) keeps the newest version of each release; each version's marker names its
release and, where the collection recorded one, its date as the publisher prints it
(:func:`legalir.collections.release_marker`: ``{"release": "86", "date": "2022-11"}``). This module holds
the rules about them, once, for every face (the API, ``legalir search --as-of``, ``legalir history``,
HTTP, MCP, PyTerrier all reach them through :class:`legalir.Searcher`):

* ``as_of`` is a release (``"85"``, ``85``) or a date (``"2021-09-01"``, a :class:`datetime.date`): a date
  means the newest release dated on or before it (:func:`release_for_date`). A release dated to its month
  (``2022-07``) or year (``2020``) counts from the first day of it. A date before the oldest release kept
  is an error naming that release and its date; a release without a recorded date is an error naming it
  (a date is never invented).
* :func:`history`: one entry per release kept for one section (by id or citation): its release, date,
  status and a hash of its text, and whether the text changed from the release before; a release that
  does not hold the section says so.
"""
from __future__ import annotations

import datetime
import functools
import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from legalir.base import atomic, checks
from legalir.errors import ApiError
from legalir.indexing.changes import release_key


class ReleaseError(ApiError):
    """``as_of=`` a date the index cannot answer: a release of it has no date recorded (400 over HTTP)."""

    status = 400


class NoReleaseThen(ReleaseError, LookupError):
    """``as_of=`` a date before the oldest release the index keeps (404 over HTTP)."""

    status = 404


class NotInAnyRelease(ReleaseError, LookupError):
    """A section that no release the index keeps holds, by id or citation (404 over HTTP)."""

    status = 404


def release_of_folder(folder: Path | None) -> str | None:
    """The release an index version's marker names (``"86"``), else None."""
    if folder is None:
        return None
    release = (atomic.read_marker(folder) or {}).get("release")
    return release if isinstance(release, str) and release else None


class Kept:
    """The releases of a code an index keeps, as one searcher sees them: the release of the versions it holds,
    and the newest version of every other release (:func:`legalir.base.atomic.newest_of_each_release`).

    Parameters
    ----------
    links : mapping
        ``{"sparse"|"dense": the index folder as given}`` (a versioned index: its link).
    held : pathlib.Path
        The version folder held (the Lucene one where there is one): its release is :attr:`release`.
    """

    def __init__(self, links: Mapping[str, Path | None], held: Path):
        self.links = {kind: p for kind, p in links.items() if p is not None}
        self.held = held

    @functools.cached_property
    def release(self) -> str | None:
        """The release the versions held hold, or None (read once: a version held does not change, and a search
        answer names it, so a request must not pay a read of the marker)."""
        return release_of_folder(self.held)

    def versions(self) -> dict[str, dict[str, Path]]:
        """``{release: {"sparse"|"dense": version folder}}`` of every release every index keeps a version of."""
        out: dict[str, dict[str, Path]] = {}
        for kind, link in self.links.items():
            for release, folder in atomic.newest_of_each_release(atomic.versions(link)).items():
                out.setdefault(release, {})[kind] = folder
        return {r: v for r, v in out.items() if all(k in v for k in self.links)}

    def folders(self, release: str) -> Sequence[Path] | None:
        """The version folders of ``release`` (Lucene first), or None when not kept."""
        found = self.versions().get(release)
        return None if found is None else [found[k] for k in ("sparse", "dense") if k in found]

    @property
    def releases(self) -> list[str]:
        """The releases kept, oldest first; [] for an index of no release."""
        held = set(self.versions())
        if self.release:
            held.add(self.release)
        return sorted(held, key=release_key)

    @functools.cached_property
    def date(self) -> str | None:
        """The date of :attr:`release` as recorded, or None (read once, as :attr:`release`)."""
        return date_of(self.held)

    @property
    def dates(self) -> dict[str, str | None]:
        """``{release: date}`` of :attr:`releases`, oldest first; None where no date was recorded."""
        folders = self.versions()
        return {r: date_of(self.held if r == self.release else next(iter(folders[r].values())))
                for r in self.releases}


def date_of(folder: Path | None) -> str | None:
    """The date an index version's marker gives its release (``"2022-11"``), else None."""
    if folder is None:
        return None
    value = (atomic.read_marker(folder) or {}).get("date")
    return value if isinstance(value, str) and value else None


def first_day(date: str) -> datetime.date:
    """The day a release dated ``date`` (``2022-07-15``, ``2022-07``, ``2022``) counts from: its first."""
    parts = [int(p) for p in date.split("-")] + [1, 1]
    return datetime.date(*parts[:3])


def as_of_date(as_of: Any) -> str | None:
    """``as_of`` as a date (``YYYY-MM-DD``) when it is one (a :class:`datetime.date`, or text with a ``-``),
    else None (a release number).

    Raises
    ------
    ReleaseError
        Text with a ``-`` that is not a date of the calendar.
    """
    if isinstance(as_of, datetime.date) or (isinstance(as_of, str) and "-" in as_of):
        try:
            return checks.calendar_date("as_of", as_of.strip() if isinstance(as_of, str) else as_of)
        except ApiError as e:
            raise ReleaseError(f"as_of={as_of!r}: give a release the index keeps (e.g. 85) or a date YYYY-MM-DD "
                               f"(the newest release dated on or before it); {e}") from None
    return None


def release_for_date(as_of: str, dates: Mapping[str, str | None]) -> str:
    """The newest release dated on or before the day ``as_of`` (``YYYY-MM-DD``), of ``dates``
    (``{release: date}``, the releases an index keeps); of two dated alike, the higher release.

    Raises
    ------
    ReleaseError
        A release without a date, or none kept.
    NoReleaseThen
        ``as_of`` before the oldest release kept (named, with its date).
    """
    if not dates:
        raise ReleaseError(f"as_of={as_of!r}: this index keeps no release of a code (it was not built from one: "
                           f"legalir convert statutes), so it cannot be searched as of a date")
    undated = sorted((r for r, d in dates.items() if not d), key=release_key)
    if undated:
        raise ReleaseError(f"as_of={as_of!r}: release{'s' if len(undated) > 1 else ''} {', '.join(undated)} of this "
                           f"index {'have' if len(undated) > 1 else 'has'} no date recorded (converted without "
                           f"the publisher's README release line or --option date=YYYY-MM, or indexed before legalir "
                           f"recorded dates): give a release instead (as_of={undated[-1]}), or convert it again with "
                           f"its date and update the index")
    day = datetime.date.fromisoformat(as_of)
    dated = {r: d for r, d in dates.items() if d}  # every one (an undated release was refused above)
    order = sorted(dated, key=lambda r: (first_day(dated[r]), release_key(r)))
    before = [r for r in order if first_day(dated[r]) <= day]
    if not before:
        oldest = order[0]
        raise NoReleaseThen(f"as_of={as_of!r} is before the oldest release this index keeps: release {oldest}, "
                            f"dated {dates[oldest]}; releases: {shown(dates)}")
    return before[-1]


def shown(dates: Mapping[str, str | None]) -> str:
    """``85 (2022-07), 86 (2022-11)``: the releases kept, oldest first, with their dates."""
    return ", ".join(f"{r} ({dates[r] or 'no date'})" for r in sorted(dates, key=release_key))


def release_of(as_of: Any, dates: Callable[[], Mapping[str, str | None]]) -> str:
    """The release ``as_of`` names: itself (a release number, as text), or the one a date designates
    (:func:`release_for_date` over ``dates()``, read only then)."""
    if isinstance(as_of, int) and not isinstance(as_of, bool):
        as_of = str(as_of)
    day = as_of_date(as_of)
    if day is not None:
        return release_for_date(day, dates())
    return checks.text("as_of", as_of).strip()


def text_hash(text: str) -> str:
    """The hash :func:`history` gives a section's text: SHA-256 of its ``contents``, hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def history(searcher: Any, ref: str, partition: str | None = None) -> list[dict]:
    """One entry per release ``searcher``'s index keeps, oldest first, for the section ``ref`` (an id or a
    citation as a lawyer writes it, as :meth:`legalir.Searcher.doc` reads it).

    Each entry: ``release``, ``date`` (as recorded, or None), ``current`` (the release searched by default),
    ``present`` (whether that release holds the section), ``id``, ``status`` (the section's: ``in force``,
    ``repealed``, ``reserved``; ``absent`` where the release does not hold it; None for a document without
    one), ``title``, ``sha256`` (:func:`text_hash` of its text; None where absent) and ``changed``
    (whether its text, or its presence, differs from the entry before; None for the first).

    An index of no release (not built from a code's release) keeps one version: one entry, ``release`` None.

    Raises
    ------
    NotInAnyRelease
        A section no release kept holds (by id or citation).
    """
    ref = checks.text("id", ref)
    dates: dict[str | None, str | None] = dict(searcher.release_dates) or {None: None}  # no release: the one version
    found: dict[str | None, dict | None] = {}
    for release in dates:
        found[release] = searcher.at(release).doc(ref, partition)
    # a citation one release's collection does not resolve: the id another release resolved it to
    ids = list(dict.fromkeys(str(r["id"]) for r in found.values() if r is not None))
    if not ids:
        kept = (f"releases: {shown({r: d for r, d in dates.items() if r is not None})}" if None not in dates
                else "it keeps no release of a code")
        raise NotInAnyRelease(f"{ref!r}: no version of this index holds it (by id or citation); {kept}")
    for release, rec in found.items():
        for docid in ids if rec is None else ():
            rec = found[release] = searcher.at(release).doc(docid, partition)
            if rec is not None:
                break
    out: list[dict] = []
    for release, rec in found.items():
        digest = text_hash(str(rec.get("contents", ""))) if rec is not None else None
        if not out:
            changed = None
        else:
            changed = digest != out[-1]["sha256"]
        status = "absent" if rec is None else rec.get("status")
        out.append({"release": release, "date": dates[release], "current": release == searcher.release,
                    "present": rec is not None, "id": str(rec["id"]) if rec is not None else None,
                    "status": status if status is None or isinstance(status, str) else str(status),
                    "title": rec.get("title") if rec is not None else None, "sha256": digest, "changed": changed})
    return out
