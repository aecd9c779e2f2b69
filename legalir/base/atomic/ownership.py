"""Whose file is it: the one rule for replacing an output file (the registry of what legalir wrote, by size,
mtime and hash). (Part of :mod:`legalir.base.atomic`.)"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import fnmatch
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from legalir.base.atomic.common import (
    _ABOUT,
    _REGISTRY_LOCK,
    _TMP,
    MARKER,
    REGISTRY,
    OutputError,
    _digest,
    _ours,
    _tmp_name,
    clean_stale,
    read_marker,
)

_log = logging.getLogger(__name__)


# ------------------------------------------------------------------ output files: the rule
@dataclass(frozen=True)
class Command:
    """What the running command reads (``inputs``) and whether ``--force`` was given."""

    inputs: tuple[str, ...] = ()
    force: bool = False


_command: ContextVar[Command | None] = ContextVar("legalir_command", default=None)


@contextlib.contextmanager
def command(inputs: Iterable[str | os.PathLike] = (), force: bool = False) -> Iterator[Command]:
    """Name the inputs of the command running inside the block (and its ``--force``).

    Every output file checked inside (:func:`check_file`) is refused when it is one of
    ``inputs``; ``force`` lets it replace a file legalir did not write.

    Parameters
    ----------
    inputs : iterable of path
        Files and folders the command reads (``-``, standard input, is skipped).
    force : bool
        The command's ``--force``.

    Yields
    ------
    Command
        The context now in force.
    """
    cmd = Command(tuple(str(p) for p in inputs if p is not None and str(p) != "-"), bool(force))
    token = _command.set(cmd)
    try:
        yield cmd
    finally:
        _command.reset(token)


def _same_file(a: Path, b: str | os.PathLike) -> bool:
    """Whether path ``a`` and input ``b`` name the same file: resolved path, or device and inode."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _in_build(p: Path) -> bool:
    """Whether ``p`` lies in a folder legalir is building (``NAME.tmp-PID``): its marker governs it."""
    return any(_TMP.search(part) for part in p.parent.parts)


class _Unreadable(Exception):
    """A registry that is not one legalir wrote: what is wrong with it."""


def _read_registry(folder: Path) -> dict[str, dict]:
    """The entries of ``folder``'s registry (``{}`` when there is none).

    Raises
    ------
    _Unreadable
        A registry that is a symbolic link, cannot be read, or is not the JSON legalir writes.
    """
    reg = folder / REGISTRY
    try:
        fd = os.open(reg, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return {}
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _Unreadable(f"{reg} is a symbolic link") from None
        raise _Unreadable(f"{reg} cannot be read ({e.strerror})") from None
    try:
        with os.fdopen(fd, "rb") as f:
            raw = f.read(64 << 20)
        doc = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError) as e:
        raise _Unreadable(f"{reg} is not a registry legalir wrote ({type(e).__name__})") from None
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict) or not all(isinstance(e, dict) for e in files.values()):
        raise _Unreadable(f"{reg} is not a registry legalir wrote (no 'files' table)")
    return files


def matches(p: str | os.PathLike, entry: dict) -> bool:
    """Whether the file ``p`` is the one a registry ``entry`` records (a marker's or a change log's entry, as
    :func:`_record` writes it): size and time first, then (only then) its hash. A caller that holds the entry
    already (read once for many files) asks here instead of :func:`written_by_legalir`, which reads the
    registry again for each file.

    An entry of a marked folder recorded while its file was being replaced (``was``: the state before) also
    matches that state: a writer killed between recording and renaming leaves the old file, still legalir's.

    Parameters
    ----------
    p : path
        The file (a symbolic link never matches).
    entry : dict
        ``{"size", "mtime_ns", "sha256"[, "was"]}``.

    Returns
    -------
    bool
        Whether ``p`` is that file, unchanged.
    """
    p = Path(p)
    was = entry.get("was")
    if any(isinstance(w, dict) and matches(p, w) for w in (was if isinstance(was, list) else [was])):
        return True
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if entry.get("size") != st.st_size or entry.get("mtime_ns") != st.st_mtime_ns:
            return False
        want = entry.get("sha256")
        return isinstance(want, str) and _digest(f) == want


def written_by_legalir(path: str | os.PathLike, legacy: Callable[[Path], bool] | None = None) -> bool:
    """Whether the file ``path`` is one legalir wrote and nobody changed since (see the module doc).

    Parameters
    ----------
    path : path
        An existing file.
    legacy : callable, optional
        Recognises a file by its content as one legalir wrote; nothing does by default (a file that
        no registry names is the user's).

    Returns
    -------
    bool
        True when the folder's registry names the file and its size, modification time and
        SHA-256 all match; False for anything else, a registry that legalir did not write included.
    """
    p = Path(path)
    marked = marked_folder(p)
    if marked is not None:
        root, marker = marked
        rel = Path(os.path.abspath(p)).relative_to(root).as_posix()
        recorded = marker.get("files")
        if isinstance(recorded, dict):  # the marker records each file as legalir wrote it
            entry = recorded.get(rel)
            if isinstance(entry, dict) and not p.is_symlink() and matches(p, entry):
                return True
        elif root == p.parent and _ours(p.name, marker):  # a marker of an earlier legalir: its entries
            return True
    try:
        entry = _read_registry(p.parent).get(p.name)
    except _Unreadable:
        entry = None
    if entry is not None and not p.is_symlink() and matches(p, entry):
        return True
    return bool(legacy is not None and legacy(p))


def check_file(path: str | os.PathLike, inputs: Iterable[str | os.PathLike] = (), *, force: bool = False,
               legacy: Callable[[Path], bool] | None = None) -> None:
    """Refuse (:class:`OutputError`, exit status 2) to write the output file ``path`` where the rule forbids.

    The rule (module doc): never onto an input of the command (``inputs``, and those named by the
    running :func:`command`), even with ``force``; never over an existing file legalir did not write
    (:func:`written_by_legalir`) unless ``force`` (or the running command's ``--force``); never over
    a folder. An empty file may always be replaced.

    Parameters
    ----------
    path : path
        The output file.
    inputs : iterable of path
        What the caller reads (``-`` is skipped).
    force : bool
        Replace an existing file legalir did not write.
    legacy : callable, optional
        Recognises a file legalir wrote by its content [default: none].

    Raises
    ------
    OutputError
        With the file, what is wrong and what to do.
    """
    p = Path(path)
    if str(p) == "-":
        return
    target = Path(os.path.realpath(p)) if p.is_symlink() else p
    cmd = _command.get() or Command()
    every = [*(str(i) for i in inputs if i is not None and str(i) != "-"), *cmd.inputs]
    for i in every:
        if _same_file(target, i):
            shown = f" (as {i})" if os.path.realpath(i) != os.path.realpath(p) or str(i) != str(p) else ""
            raise OutputError(f"{p}: is also an input of this command{shown}; legalir never writes onto its own "
                              f"input (it would be lost before it was read): name another output file")
    if target.is_dir():
        raise OutputError(f"{p}: is a folder; name a file to write")
    if _in_build(target):
        return
    try:
        st = target.stat()
    except FileNotFoundError:
        return
    if st.st_size == 0 or force or cmd.force:
        return
    if not written_by_legalir(target, legacy):
        why = ""
        try:
            _read_registry(target.parent)
        except _Unreadable as e:
            why = f" ({e}: legalir counts none of the files there as its own)"
        raise OutputError(f"{p}: exists and legalir did not write it (or it changed since){why}; legalir never "
                          f"replaces a file it did not write: pass --force to replace it, or name another file")


@contextlib.contextmanager
def _registry_lock(folder: Path) -> Iterator[bool]:
    """Hold the lock of ``folder``'s registry (waiting for other writers); yields False when it cannot be taken."""
    path = folder / _REGISTRY_LOCK
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError:
            yield False
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # writers of other files in the folder wait a moment, never fail
            same = os.fstat(fd).st_ino == os.lstat(path).st_ino
        except OSError:
            same = False
        if same:
            break
        os.close(fd)  # the previous holder removed the file as we locked it: lock the new one
    try:
        yield True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)


def _remember(p: Path, size: int, mtime_ns: int, sha256: str) -> None:
    """Record ``p`` (just published, as ``size``, ``mtime_ns``, ``sha256``) in its folder's registry, written
    atomically; prune entries of files gone. A registry legalir did not write is left as it is."""
    if _in_build(p):
        return
    folder = p.parent
    reg = folder / REGISTRY
    with _registry_lock(folder) as locked:
        if not locked:  # a folder we may write files into but not this one: the file stays the user's to judge
            return
        clean_stale(reg)  # a registry update killed before its rename
        try:
            files = _read_registry(folder)
        except _Unreadable as e:
            _log.warning(f"{e}; legalir leaves it as it is and does not record {p.name} as its own "
                         f"(remove it to let legalir record the files it writes there)")
            return
        files = {n: e for n, e in files.items() if n != p.name and os.path.lexists(folder / n)}
        files[p.name] = {"size": size, "mtime_ns": mtime_ns, "sha256": sha256}
        out = json.dumps({"about": _ABOUT, "files": dict(sorted(files.items()))}, indent=1).encode("utf-8") + b"\n"
        tmp = _tmp_name(reg)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            try:
                os.write(fd, out)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, reg)  # replaces the name itself: never written through a link
        except OSError as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            _log.warning(f"{reg}: could not record {p.name} ({e.strerror or e}); it counts as the user's")


# ------------------------------------------------------------------ folders: the marker records every file
def marked_folder(path: str | os.PathLike) -> tuple[Path, dict] | None:
    """The published legalir folder holding ``path`` (the nearest of its parents with a marker; absolute) and
    its marker, or None. A folder being built (``NAME.tmp-PID``) is governed by the marker written when it is
    published, so a path inside one has none."""
    p = Path(os.path.abspath(path))
    if _in_build(p):
        return None
    for folder in p.parents:
        m = folder / MARKER
        if os.path.lexists(m):
            if m.is_symlink():
                return None
            marker = read_marker(folder)
            return (folder, marker) if marker is not None else None
    return None


@dataclass(frozen=True)
class FolderAudit:
    """What of a legalir folder its marker does not prove to be legalir's, unchanged (:func:`audit`).

    Attributes
    ----------
    foreign : tuple of str
        Entries no record names (a user's file, or a folder: ``name/``), relative to the folder, ``/``-separated.
    changed : tuple of str
        Files (or links) the marker records whose size, time, SHA-256 (or target) differ now: edited since.
    """

    foreign: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.foreign or self.changed)

    def names(self) -> list[str]:
        """Every entry named, with what it is: ``a.txt (not legalir's)``, ``topics/x.jsonl (changed since)``."""
        return ([f"{n} (not legalir's)" for n in self.foreign] + [f"{n} (changed since legalir wrote it)"
                                                                   for n in self.changed])


def audit(folder: str | os.PathLike, marker: dict | None = None) -> FolderAudit:
    """Compare a legalir folder with what its marker records: every file, folder and link, at any depth.

    A file is legalir's while the marker records it and its size, modification time and SHA-256 match
    (the hash is read only when size and time match); an entry the marker does not record is the
    user's, except a temporary (``NAME.tmp-PID``) of a recorded name and, at the top, a name matching
    one of the marker's ``patterns`` (a folder that grows: embedding shards not yet recorded). A file
    recorded but gone is no loss and is not reported. A marker written by an earlier legalir (no
    ``files`` table) is judged as that legalir did: by its top-level names.

    Parameters
    ----------
    folder : path
        A folder legalir published (its marker, ``.legalir-output.json``, inside).
    marker : dict, optional
        Its marker, already read [default: read here].

    Returns
    -------
    FolderAudit
        Empty (false) when everything in ``folder`` is legalir's and unchanged.
    """
    root = Path(folder)
    if marker is None:
        marker = read_marker(root) or {}
    files = marker.get("files")
    if not isinstance(files, dict):
        return FolderAudit(tuple(sorted(e for e in os.listdir(root) if not _ours(e, marker))))
    dirs = set(marker.get("dirs") or ())
    links = marker.get("links") if isinstance(marker.get("links"), dict) else {}
    patterns = [p for p in marker.get("patterns") or () if isinstance(p, str)]

    def known(rel: str) -> bool:
        return (rel == MARKER or rel in files or rel in dirs or rel in links
                or ("/" not in rel and any(fnmatch.fnmatchcase(rel, pat) for pat in patterns)))

    foreign: list[str] = []
    changed: list[str] = []
    stack = [""]
    while stack:
        sub = stack.pop()
        with os.scandir(root / sub if sub else root) as it:
            for e in it:
                rel = f"{sub}/{e.name}" if sub else e.name
                if rel == MARKER:
                    continue
                m = _TMP.search(e.name)
                if m and known(rel[:len(rel) - len(e.name) + m.start()]) and not e.is_symlink():
                    continue  # a temporary of a legalir writer (a killed one leaves it; the next write removes it)
                if e.is_symlink():
                    if rel not in links:
                        foreign.append(rel)
                    elif os.readlink(e.path) != links[rel]:
                        changed.append(rel)
                elif e.is_dir():
                    if rel in dirs:
                        stack.append(rel)
                    else:
                        foreign.append(rel + "/")
                elif rel in files:
                    entry = files[rel]
                    if not (isinstance(entry, dict) and e.is_file() and matches(Path(e.path), entry)):
                        changed.append(rel)
                elif not known(rel) or not e.is_file():
                    foreign.append(rel)
    return FolderAudit(tuple(sorted(foreign)), tuple(sorted(changed)))


_marker_locks: dict[str, threading.Lock] = {}
_marker_locks_lock = threading.Lock()


@contextlib.contextmanager
def _marker_lock(root: Path) -> Iterator[None]:
    """Hold ``root``'s marker for a read-modify-write: a thread lock, and a ``flock`` on the marker file itself
    (other processes); the marker is replaced by rename, so a waiter that locked the old file locks again."""
    key = os.path.realpath(root)
    with _marker_locks_lock:
        tlock = _marker_locks.setdefault(key, threading.Lock())
    path = root / MARKER
    with tlock:
        while True:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                same = os.fstat(fd).st_ino == os.lstat(path).st_ino
            except OSError:
                same = False
            if same:
                break
            os.close(fd)
        try:
            yield
        finally:
            os.close(fd)


def _record(root: Path, rel: str, state: dict | None, pending: bool) -> None:
    """Record file ``rel`` of the published legalir folder ``root`` in its marker, as ``state`` (``{"size",
    "mtime_ns", "sha256"}``); ``pending``: the file is about to be renamed into place, so the state it has
    now stays accepted too (``was``) until the call after the rename. Markers of an earlier legalir (no
    ``files`` table) are left as they are. The marker is replaced atomically."""
    path = root / MARKER
    with _marker_lock(root):
        marker = read_marker(root)
        if marker is None or not isinstance(marker.get("files"), dict):
            return
        files = marker["files"]
        entry = dict(state or {})
        if pending:  # the states the file may still be in: the one recorded, and those of a replacement cut short
            before = files.get(rel)
            states = []
            if isinstance(before, dict):
                earlier = before.get("was")
                states = [{k: v for k, v in before.items() if k != "was"},
                          *[w for w in (earlier if isinstance(earlier, list) else [earlier]) if isinstance(w, dict)]]
            entry["was"] = states[:4]
        elif state is None:
            files.pop(rel, None)
        if state is not None:
            files[rel] = entry
        parts = rel.split("/")[:-1]
        dirs = set(marker.get("dirs") or ())
        dirs.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
        marker["dirs"] = sorted(dirs)
        marker["files"] = dict(sorted(files.items()))
        out = json.dumps(marker, indent=1, sort_keys=True).encode("utf-8") + b"\n"
        tmp = _tmp_name(path)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            try:
                os.write(fd, out)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
