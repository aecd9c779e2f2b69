"""Shared by the writers: temporary names, stale temporaries, signals, the environment's refusals, output
markers. (Part of :mod:`legalir.base.atomic`.)"""
from __future__ import annotations

import contextlib
import errno
import fnmatch
import hashlib
import json
import os
import re
import shutil
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

from legalir.errors import LegalirError
from legalir.version import __version__

MARKER = ".legalir-output.json"
#: registry of the output files legalir wrote in a folder (see the module doc)
REGISTRY = ".legalir-files.json"
_REGISTRY_LOCK = ".legalir-files.lock"
_ABOUT = "files legalir wrote here (a file changed since is the user's again)"
_FOLDER_ABOUT = ("a folder legalir wrote: 'files' records each file as legalir wrote it (a file changed since, or "
                 "one not listed, is the user's, and legalir does not replace the folder without --overwrite)")
_TMP = re.compile(r"\.tmp-(\d+)(?:-[0-9a-z]+)?$")
_VERSION = re.compile(r"\.v(\d+)$")


class OutputError(LegalirError, OSError):
    """An output that cannot be written: it would replace what legalir did not write, or another
    process is writing it."""


# ------------------------------------------------------------------ small helpers
def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - another user's process
        return True
    return True


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def _made_parents(folder: Path) -> list[Path]:
    """Create ``folder`` where it is missing, with its missing parents; those this call created, deepest first
    (a folder another process made meanwhile is not counted)."""
    missing: list[Path] = []
    p = folder
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    made = []
    for p in reversed(missing):
        try:
            p.mkdir()
        except FileExistsError:
            continue
        made.append(p)
    return made[::-1]


def _remove_if_empty(folders: list[Path]) -> None:
    """Remove ``folders`` (deepest first) while each is empty: a folder with anything in it is kept."""
    for f in folders:
        try:
            f.rmdir()
        except OSError:
            return


def clean_stale(target: str | os.PathLike) -> list[Path]:
    """Remove ``TARGET.tmp-PID`` leftovers beside ``target`` whose process is gone; returns them."""
    target = Path(target)
    parent = target.parent
    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    prefix = target.name + ".tmp-"
    for p in parent.iterdir():
        if not p.name.startswith(prefix):
            continue
        m = _TMP.search(p.name)
        if not m or p.name[:m.start()] != target.name:
            continue
        pid = int(m.group(1))
        if pid != os.getpid() and not pid_alive(pid):
            _remove(p)
            removed.append(p)
    return removed


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _fsync_tree(root: Path) -> None:
    for folder, dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(folder, name)
            if os.path.islink(p):
                continue
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(folder))


def _tmp_name(target: Path) -> Path:
    tid = "" if threading.current_thread() is threading.main_thread() else f"-{threading.get_ident()}"
    return target.with_name(f"{target.name}.tmp-{os.getpid()}{tid}")


class _Terminated(SystemExit):
    """SIGTERM turned into an exception, so that ``finally`` blocks clean up."""


#: temporary files and folders this process is writing now (what :func:`abandon` removes)
_in_progress: set[Path] = set()
_in_progress_lock = threading.Lock()


@contextlib.contextmanager
def _tracked(tmp: Path) -> Iterator[None]:
    with _in_progress_lock:
        _in_progress.add(tmp)
    try:
        yield
    finally:
        with _in_progress_lock:
            _in_progress.discard(tmp)


def abandon() -> list[Path]:
    """Remove the temporary files and folders this process is writing now; returns them.

    For a process about to end without unwinding (``legalir``'s signal watchdog, when a command blocked in
    Java or in Ray does not stop within its grace time): nothing was published from them, and removing them
    spares the next writer the clean-up of a dead process's leftovers. Best effort; never raises.
    """
    with _in_progress_lock:
        paths = sorted(_in_progress)
    gone = []
    for p in paths:
        # renamed first: one published meanwhile (renamed into place by the main thread) is left alone
        dead = p.with_name(p.name + "-gone")
        try:
            os.rename(p, dead)
        except OSError:
            continue
        with contextlib.suppress(Exception):
            _remove(dead)
        gone.append(p)
    return gone


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """While the block runs (main thread only), SIGTERM raises instead of killing the process."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        previous = signal.getsignal(signal.SIGTERM)
    except (ValueError, OSError):  # pragma: no cover - signals unusable here (a non-main interpreter)
        yield
        return
    if previous not in (signal.SIG_DFL, None):
        yield  # someone else handles SIGTERM (or an outer block already does)
        return

    def handler(signum, frame):
        raise _Terminated(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# ------------------------------------------------------------------ the environment refusing a write
#: errors of the machine, not of legalir nor of the input: each one becomes an OutputError naming the output
_ENVIRONMENT = {
    errno.ENOSPC: "the disk is full: free some space there, or write somewhere else",
    errno.EDQUOT: "the disk quota is used up: free some space, or write somewhere else",
    errno.EROFS: "the file system is read-only: write somewhere else",
    errno.EFBIG: "the file is too large for that file system: write somewhere else",
    errno.EACCES: "no permission to write there: write somewhere else, or change the folder's permissions",
    errno.EPERM: "no permission to write there: write somewhere else, or change the folder's permissions",
    errno.EIO: "the disk reported an input/output error: check it, or write somewhere else",
}


@contextlib.contextmanager
def _located(target: Path, what: str) -> Iterator[None]:
    """Turn an error of the machine (disk full, read-only, no permission) while writing ``target`` into a located
    :class:`OutputError`: one line, exit status 2. Permission errors count only on ``target``'s own paths (one
    reading an input inside the block stays what it is)."""
    try:
        yield
    except OutputError:
        raise
    except OSError as e:
        advice = _ENVIRONMENT.get(e.errno)
        folder = os.path.abspath(target.parent)
        where = None if e.filename is None else os.path.abspath(e.filename)
        if advice is None or not (where is None or where == folder or where.startswith(folder + os.sep)):
            raise  # not the output's own folder: an input, or a cache elsewhere
        raise OutputError(f"{target}: could not be written ({e.strerror or e}): {advice}; {what}") from e


# ------------------------------------------------------------------ folders
def read_marker(folder: str | os.PathLike) -> dict | None:
    """The marker of a folder legalir wrote, or None."""
    p = Path(folder) / MARKER
    try:
        with open(p, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if _marker_shape(doc) else None


def _marker_shape(doc) -> bool:
    """Whether ``doc`` has the shape of a marker legalir writes (a damaged one proves nothing)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str) or not doc["kind"]:
        return False
    lists = all(isinstance(doc.get(k, []), list) and all(isinstance(x, str) for x in doc.get(k, []))
                for k in ("entries", "dirs", "patterns"))
    tables = all(isinstance(doc.get(k, {}), dict) for k in ("files", "links"))
    return lists and tables and all(isinstance(e, dict) for e in (doc.get("files") or {}).values())


def _ours(name: str, marker: dict) -> bool:
    """Whether entry ``name`` of a marked folder is legalir's: listed, matching one of its patterns
    (folders that grow, e.g. embedding shards), or a temporary file of one of those."""
    m = _TMP.search(name)
    if m:
        name = name[:m.start()]
    if name == MARKER or name in set(marker.get("entries") or ()):
        return True
    return any(fnmatch.fnmatchcase(name, pat) for pat in marker.get("patterns") or ())


def _describe(entries: list[str]) -> str:
    return ", ".join(entries[:5]) + (" ..." if len(entries) > 5 else "")


def _digest(f) -> str:
    """SHA-256 of an open binary file, read from where it stands (the start, for a file just opened)."""
    return hashlib.file_digest(f, "sha256").hexdigest()


def _state(path: str | os.PathLike) -> dict:
    """What the folder registry records of a regular file: ``{"size", "mtime_ns", "sha256"}`` (not following a link)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": _digest(f)}


def _inventory(folder: Path) -> dict:
    """Everything under ``folder`` (its marker aside), as a marker records it: ``files`` (relative path, with
    ``/`` -> :func:`_state`), ``dirs`` (relative paths) and ``links`` (relative path -> where it points)."""
    files: dict[str, dict] = {}
    dirs: list[str] = []
    links: dict[str, str] = {}
    stack = [""]
    while stack:
        sub = stack.pop()
        with os.scandir(folder / sub if sub else folder) as it:
            for e in it:
                rel = f"{sub}/{e.name}" if sub else e.name
                if rel == MARKER:
                    continue
                if e.is_symlink():
                    links[rel] = os.readlink(e.path)
                elif e.is_dir():
                    dirs.append(rel)
                    stack.append(rel)
                elif e.is_file():
                    files[rel] = _state(e.path)
    return {"files": dict(sorted(files.items())), "dirs": sorted(dirs), "links": dict(sorted(links.items()))}


def _write_marker(folder: Path, kind: str, extra: dict | None) -> None:
    """The marker of a folder about to be published: its kind, its top-level entries and the registry of every
    file, folder and link in it (:func:`_inventory`: what proves later that legalir wrote them, unchanged)."""
    entries = sorted(p.name for p in folder.iterdir() if p.name != MARKER)
    doc = {"kind": kind, "entries": entries, "writer": f"legalir {_version()}", **(extra or {}),
           "about": _FOLDER_ABOUT, **_inventory(folder)}
    with open(folder / MARKER, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


def _version() -> str:
    return __version__
