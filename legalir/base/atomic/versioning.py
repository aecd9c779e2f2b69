"""Index versions: INDEX -> INDEX.vN links, pins that hold a version for its readers, version folders refused as
targets. (Part of :mod:`legalir.base.atomic`.)"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path
from typing import Any

from legalir.base.atomic.common import _VERSION, OutputError, _remove


def _version_of(link: Path) -> Path | None:
    """The version folder a legalir pointer ``NAME -> NAME.vN`` designates, else None."""
    if not link.is_symlink():
        return None
    dest = os.readlink(link)
    if os.sep in dest or not dest.startswith(link.name + ".v") or not _VERSION.search(dest):
        return None
    return link.parent / dest


def versions(target: str | os.PathLike) -> list[Path]:
    """Version folders ``NAME.vN`` of a versioned output, oldest first."""
    target = Path(target)
    if not target.parent.is_dir():
        return []
    found = []
    for p in target.parent.iterdir():
        if p.name.startswith(target.name + ".v"):
            m = _VERSION.search(p.name)
            if m and p.name[:m.start()] == target.name and p.is_dir() and not p.is_symlink():
                found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found)]


def current(target: str | os.PathLike) -> Path:
    """The folder holding ``target``'s content now (its version folder when versioned)."""
    target = Path(target)
    return _version_of(target) or target


class Pin:
    """A version folder held for reading: no publish removes it while the pin is open (see :func:`pin`).

    Attributes
    ----------
    path : pathlib.Path
        The folder the pin holds: a version folder ``NAME.vN``, or the folder itself when the output
        is not versioned (then nothing is locked).
    target : pathlib.Path
        What was pinned, as given.
    version : int or None
        The ``N`` of ``NAME.vN``; None for a folder that is not versioned.
    closed : bool
        Whether :meth:`close` was called.
    """

    def __init__(self, target: Path, path: Path, fd: int | None):
        self.target, self.path, self._fd = target, path, fd
        m = _VERSION.search(path.name)
        self.version: int | None = int(m.group(1)) if m and fd is not None else None
        self.closed = False

    def close(self) -> None:
        """Release the pin (idempotent); a later publish of the output may then remove the folder."""
        fd, self._fd, self.closed = self._fd, None, True
        if fd is not None:
            os.close(fd)  # drops the shared lock

    def __enter__(self) -> Pin:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:  # a pin dropped without close() still releases its folder
        with contextlib.suppress(Exception):
            self.close()

    def __repr__(self) -> str:
        return f"Pin({str(self.path)!r}{', closed' if self.closed else ''})"


def refuse_version_folder(target: str | os.PathLike) -> None:
    """Refuse (:class:`OutputError`) to write into a version folder ``NAME.vN`` of a versioned output, or
    into a folder inside one (or inside the link ``NAME``): a new version is written through the link.

    Parameters
    ----------
    target : path
        The folder about to be written.

    Raises
    ------
    OutputError
        Naming the link to give instead.
    """
    target = Path(target)
    for p in (target, *target.parents):
        if p.name in ("", ".", ".."):
            break
        if _is_version_folder(p):
            link = p.with_name(p.name[:_VERSION.search(p.name).start()])
            inside = "" if p == target else f" is inside {p}, which"
            raise OutputError(f"{target}:{inside} is version {p.name} of {link} (a link, now to "
                              f"{os.readlink(link)}); legalir writes a new version through the link: name {link}")
        if p != target and _version_of(p) is not None:
            raise OutputError(f"{target}: is inside the versioned output {p}; legalir writes a new version of "
                              f"it as a whole: name {p}")


def _is_version_folder(p: Path) -> bool:
    """Whether ``p`` is a version folder ``NAME.vN`` of a versioned output (``NAME`` beside it is our pointer)."""
    m = _VERSION.search(p.name)
    if not m or not p.is_dir() or p.is_symlink():
        return False
    return _version_of(p.with_name(p.name[:m.start()])) is not None


def pin(target: str | os.PathLike) -> Pin:
    """Hold the version of ``target`` that is current now, for reading, until the pin is closed.

    For a versioned output (``NAME -> NAME.vN``) the link is resolved now and a shared ``flock``
    is taken on the version folder itself (an open descriptor of the folder; no file is written):
    :func:`atomic_dir` publishing new versions then leaves that folder in place, whichever process
    holds the pin, and the first publish after the pin is closed removes it. A version folder
    named directly (``NAME.vN``) is pinned the same way. Any other folder (not versioned, written
    before versions existed) is returned as it is, with no lock: nothing of legalir's removes it
    while it is read.

    Parameters
    ----------
    target : str or PathLike
        An output folder: the pointer ``NAME`` of a versioned output, one of its version folders,
        or a plain folder.

    Returns
    -------
    Pin
        ``.path`` is the folder to read (open files and searchers on it, not on ``target``, so that
        every read sees this version); ``.close()`` releases it; also a context manager.

    Raises
    ------
    OutputError
        When ``target`` does not exist (or its pointer designates no folder).

    Examples
    --------
    >>> with atomic.pin("indexes/acord/bm25") as p:     # doctest: +SKIP
    ...     searcher = BM25(p.path)
    """
    target = Path(target)
    for _ in range(100):
        path = _version_of(target)
        if path is None:
            if not _is_version_folder(target):
                if not target.is_dir():
                    raise OutputError(f"{target}: no such folder")
                return Pin(target, target, None)
            path = target
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            if path == target:
                raise OutputError(f"{target}: no such folder") from None
            if _version_of(target) == path:
                raise OutputError(f"{target}: points to {path.name}, which does not exist") from None
            continue  # removed by a publish between reading the link and opening: read the link again
        try:
            # waits only while a publish holds the folder exclusively: checking for pins, or removing it
            fcntl.flock(fd, fcntl.LOCK_SH)
            st = os.fstat(fd)
            same = st.st_nlink > 0 and os.stat(path).st_ino == st.st_ino
        except FileNotFoundError:
            same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            return Pin(target, path, fd)
        os.close(fd)  # removed before our lock: read the link again
        if path == target:
            raise OutputError(f"{target}: no such folder")
    # reached only when a publisher swaps the link on every one of the loop's tries
    raise OutputError(f"{target}: its version changes faster than it can be pinned")  # pragma: no cover - see above


def pinned(folder: str | os.PathLike) -> bool:
    """Whether a reader holds ``folder`` (a version folder) with :func:`pin` now, in any process.

    Parameters
    ----------
    folder : str or PathLike
        A version folder ``NAME.vN``.

    Returns
    -------
    bool
        False too for a folder that does not exist.
    """
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _remove_unpinned(p: Path) -> bool:
    """Remove the version folder ``p`` unless it is pinned (then it stays, for a later publish); whether removed.

    The exclusive lock is held while removing, so a reader pinning it meanwhile waits, then sees it gone.
    """
    try:
        fd = os.open(p, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        _remove(p)
        return True
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            return False
        # renamed first, then removed: a process killed half-way through the removal leaves a `NAME.tmp-PID-...`
        # folder that the next write of NAME cleans (clean_stale), not a version folder without its marker
        # that no publish would recognise as legalir's again
        m = _VERSION.search(p.name)
        gone = p.with_name(f"{p.name[:m.start()]}.tmp-{os.getpid()}-v{m.group(1)}") if m else p
        if gone != p:
            os.rename(p, gone)
        _remove(gone)
        return True
    finally:
        os.close(fd)
