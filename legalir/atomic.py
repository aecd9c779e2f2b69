"""The one writer: every file and folder legalir writes goes through here.

Files (:func:`open_file`, :func:`write_text`, :func:`write_json`): written to
``NAME.tmp-PID[-THREAD]`` in the same folder, flushed and fsynced, then
renamed over ``NAME`` (and the folder fsynced). A reader sees the old file or
the complete new one, never a part. On an error, Ctrl-C or SIGTERM the
temporary file is removed; one left by a killed process (its PID no longer
running) is removed by the next write of the same file.

Folders (:func:`atomic_dir`): built under ``NAME.tmp-PID`` beside the target,
every file fsynced, then published in one rename. Rules:

* **Never delete what legalir did not write.** Every folder legalir publishes
  holds a marker, ``.legalir-output.json`` (its kind and its entries). An
  existing target is replaced only when it is empty, or a legalir output of
  the same kind holding nothing but what legalir wrote there. A legalir output
  of another kind needs ``overwrite=True`` (``--overwrite``); a folder with
  anything else in it (a user's files, or a folder legalir did not write) is
  refused with an :class:`OutputError` (exit status 2) and left untouched, even
  with ``--overwrite``. Outputs written before markers existed are recognised
  by their own files (``legacy=``). A symbolic link that legalir did not make
  is refused as a target too.
* **One writer at a time.** An exclusive ``flock`` on ``.NAME.lock`` beside the
  target is held while building: a second process writing the same output
  stops at once with an :class:`OutputError` naming the first one's PID (it
  does not wait: exit status 2). The lock file is removed on release; one
  left by a killed process holds no lock (the kernel drops it) and is reused.
* **Leftovers are cleaned.** ``NAME.tmp-PID`` folders and files whose PID is
  no longer running (a killed build) are removed by the next write of
  ``NAME``; those of a live process are left alone.
* **Readers keep a consistent view** (``versioned=True``, used for Lucene and
  FAISS indexes). ``NAME`` is then a symbolic link to ``NAME.vN``; a build
  writes ``NAME.v(N+1)`` and switches the link in one rename. A search that
  opened ``NAME`` before or during the build keeps reading version N (Lucene
  and FAISS resolve the link when they open the index, and search a
  partitioned index through the resolved path), so it never sees a half
  index nor a mix of old and new partitions. Version N is kept until the
  next build publishes, then removed; older ones are removed at once, except
  a **pinned** one (:func:`pin`: a shared ``flock`` on the version folder
  itself, held by a reader such as `legalir serve` for as long as it reads
  that version, from any process): a publish leaves it, and the first
  publish after it is unpinned removes it. Other
  outputs are replaced by an atomic exchange (``renameat2(RENAME_EXCHANGE)``,
  two renames where the kernel lacks it) and the old copy removed.

Output files (:func:`check_file`; :func:`open_file` with ``output=True``, which
every writer of a file a user names uses: runs, topics, qrels, fusion
settings, reports). The same two rules as folders, for files:

* **Never write onto an input.** A command's output file may not be one of
  its own inputs: same resolved path (links followed) or same file (device
  and inode: a hard link). Refused even with ``--force``: the input would be
  gone before it was read whole. The command line names a command's inputs
  once (:func:`command`, set by the shared ``--force`` option from the
  command's existing-path arguments); library functions pass ``inputs=``.
* **Never replace a file legalir did not write.** An existing file is
  replaced only when it is empty, or legalir wrote it and it is unchanged
  since; anything else (a user's ``notes.txt``, a run a user edited, a run
  another tool wrote in the same format) needs ``force=True`` (``--force``).
  How a file is known to be legalir's, without changing any format a user
  reads (a TREC run stays a plain TREC run): each folder holding output files
  has a small registry, ``.legalir-files.json`` (name -> size, modification
  time in nanoseconds and SHA-256 of the file as legalir published it; the
  hash is taken from the temporary file before it is renamed into place). A
  file is legalir's only while its registry entry says so and its size, time
  and hash all match (the hash is read only when size and time match), so an
  edit, a copy over it, a ``touch`` or a file put there by hand makes it the
  user's again. Nothing is guessed from a file's content: a file in no
  registry is the user's. A registry that is not one legalir wrote (not JSON,
  unreadable, a symbolic link) counts as naming no file, is never written
  (through a link or over its content) and the refusal says so. The registry
  is itself written atomically (temporary file and rename, under a ``flock``
  on ``.legalir-files.lock`` beside it). Files inside a folder that legalir
  builds (``NAME.tmp-PID``) or a marked legalir folder are governed by that
  folder's marker, not by a registry.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import fnmatch
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import threading
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator

from legalir.errors import LegalirError

MARKER = ".legalir-output.json"
#: registry of the output files legalir wrote in a folder (see the module doc)
REGISTRY = ".legalir-files.json"
_REGISTRY_LOCK = ".legalir-files.lock"
_ABOUT = "files legalir wrote here (a file changed since is the user's again)"

_log = logging.getLogger(__name__)
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
    except (ValueError, OSError):  # pragma: no cover
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


def _digest(f: IO[bytes]) -> str:
    return hashlib.file_digest(f, "sha256").hexdigest()


def _matches(p: Path, entry: dict) -> bool:
    """Whether the file ``p`` is the one ``entry`` records: size and time first, then (only then) its hash."""
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
    marker = read_marker(p.parent)
    if marker is not None and _ours(p.name, marker):
        return True
    try:
        entry = _read_registry(p.parent).get(p.name)
    except _Unreadable:
        entry = None
    if entry is not None and not p.is_symlink() and _matches(p, entry):
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
    if _in_build(p) or read_marker(p.parent) is not None:
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


# ------------------------------------------------------------------ files
@contextlib.contextmanager
def open_file(path: str | os.PathLike, mode: str = "w", *, encoding: str | None = "utf-8",
              newline: str | None = None, output: bool = False, inputs: Iterable[str | os.PathLike] = (),
              force: bool = False, legacy: Callable[[Path], bool] | None = None) -> Iterator[IO[Any]]:
    """Open ``path`` for writing under a temporary name; it replaces ``path`` when the block completes.

    Parameters
    ----------
    path : path
        The file to write (written through a symbolic link to a file, as editors do).
    mode : {"w", "wb"}
        Text or bytes.
    encoding, newline : str, optional
        As :func:`open` takes them (text mode).
    output : bool
        ``path`` is a file the user named (a run, topics, a report): the output rule applies
        (:func:`check_file` with ``inputs``, ``force`` and ``legacy``) and the published file is
        recorded as legalir's. False: a file inside legalir's own folders or caches.
    inputs, force, legacy
        See :func:`check_file`.

    Yields
    ------
    file object
        Open on the temporary file.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic.open_file writes whole files (mode 'w' or 'wb'), got {mode!r}")
    with _located(Path(path), "nothing was written (the file there before, if any, is as it was)"):
        with _open_file(path, mode, encoding=encoding, newline=newline, output=output, inputs=inputs, force=force,
                        legacy=legacy) as f:
            yield f


@contextlib.contextmanager
def _open_file(path, mode, *, encoding, newline, output, inputs, force, legacy) -> Iterator[IO[Any]]:
    p = Path(path)
    if output:
        check_file(p, inputs, force=force, legacy=legacy)
    if p.is_symlink():
        p = Path(os.path.realpath(p))  # write through a user's link to a file, as editors do
    if p.is_dir():
        raise OutputError(f"{p}: is a folder; name a file to write")
    p.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(p)
    tmp = _tmp_name(p)
    with _sigterm_raises(), _tracked(tmp):
        try:
            if "b" in mode:
                f = open(tmp, mode)
            else:
                f = open(tmp, mode, encoding=encoding, newline=newline)
            with f:
                yield f
                f.flush()
                os.fsync(f.fileno())
                if output:
                    st = os.fstat(f.fileno())
                    with open(tmp, "rb") as again:
                        seen = (st.st_size, st.st_mtime_ns, _digest(again))
            os.replace(tmp, p)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    _fsync_dir(p.parent)
    if output:
        _remember(p, *seen)


def write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8", **rule: Any) -> None:
    """``text`` written atomically; ``rule``: :func:`open_file`'s ``output``, ``inputs``, ``force``."""
    with open_file(path, "w", encoding=encoding, **rule) as f:
        f.write(text)


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    with open_file(path, "wb") as f:
        f.write(data)


def write_json(path: str | os.PathLike, obj: Any, *, indent: int | None = 2, sort_keys: bool = True,
               ensure_ascii: bool = False, **rule: Any) -> None:
    """``obj`` as JSON (plus a final newline), atomically; ``rule``: :func:`open_file`'s ``output``, ``inputs``,
    ``force``."""
    with open_file(path, **rule) as f:
        json.dump(obj, f, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
        f.write("\n")


# ------------------------------------------------------------------ locks
_held: dict[str, int] = {}  # lock path -> depth, for nested locks of one process
_held_lock = threading.Lock()


@contextlib.contextmanager
def lock(target: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock on writing ``target`` (``.NAME.lock`` beside it) or fail at once.

    The lock file holds the owner's PID and is removed on release (while still locked; a process
    that locked a removed file tries again), so nothing is left behind.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    path = target.parent / f".{target.name}.lock"
    key = os.path.join(os.path.realpath(target.parent), path.name)
    with _held_lock:
        nested = key in _held
        if nested:
            _held[key] += 1
    if nested:
        try:
            yield
        finally:
            with _held_lock:
                _held[key] -= 1
        return
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            other = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise OutputError(f"{target}: another legalir process (pid {other}) is writing it now; "
                              f"wait for it to finish, or write to another folder") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the previous owner removed that file as we locked it: lock the new one
    try:
        with contextlib.suppress(OSError):  # the PID only names the holder in messages (a full disk: none)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        with _held_lock:
            _held[key] = 1
        try:
            yield
        finally:
            with _held_lock:
                _held.pop(key, None)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    finally:
        os.close(fd)


# ------------------------------------------------------------------ folders
def read_marker(folder: str | os.PathLike) -> dict | None:
    """The marker of a folder legalir wrote, or None."""
    p = Path(folder) / MARKER
    try:
        with open(p, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and "kind" in doc else None


def _version_of(link: Path) -> Path | None:
    """The version folder a legalir pointer ``NAME -> NAME.vN`` designates, else None."""
    if not link.is_symlink():
        return None
    dest = os.readlink(link)
    if os.sep in dest or not dest.startswith(link.name + ".v") or not _VERSION.search(dest):
        return None
    return link.parent / dest


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


def check_target(target: str | os.PathLike, kind: str, *, overwrite: bool = False,
                 legacy: Callable[[Path], bool] | None = None) -> None:
    """Refuse (:class:`OutputError`) to replace ``target`` unless legalir may (see the module doc)."""
    target = Path(target)
    refuse_version_folder(target)
    real = target
    if target.is_symlink():
        version = _version_of(target)
        if version is None:
            raise OutputError(f"{target}: is a symbolic link that legalir did not make; legalir does not write "
                              f"through links: name the real folder, or remove the link")
        if not version.exists():
            return  # a dangling pointer of ours: the new build replaces it
        real = version
    if not real.exists():
        return
    if not real.is_dir():
        raise OutputError(f"{target}: exists and is a file, not a folder; legalir writes a {kind} folder there "
                          f"only when nothing else is: choose another path")
    entries = sorted(p.name for p in real.iterdir())
    if not entries:
        return
    marker = read_marker(real)
    if marker is None:
        if legacy is not None and legacy(real):
            return  # written by an earlier legalir, before markers
        raise OutputError(f"{target}: exists and is not a legalir {kind} (it holds {_describe(entries)}); "
                          f"legalir never deletes what it did not write: choose a new folder, or move "
                          f"these files away yourself")
    foreign = [e for e in entries if not _ours(e, marker)]
    if foreign:
        raise OutputError(f"{target}: holds file(s) that legalir did not write there: {_describe(foreign)}; "
                          f"move them away (legalir never deletes what it did not write), or choose a new folder")
    if marker["kind"] != kind and not overwrite:
        raise OutputError(f"{target}: holds a legalir {marker['kind']}, not a {kind}; pass --overwrite to "
                          f"replace it, or choose another folder")


def _renameat2_exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):  # pragma: no cover - not glibc/Linux
        return False
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # pragma: no cover - old kernel / fs
        return False
    raise OSError(err, os.strerror(err), str(a))


def _swap_in(new: Path, target: Path) -> None:
    """Put folder ``new`` at ``target`` in one step; what was at ``target`` is removed afterwards."""
    if not os.path.lexists(target):
        os.rename(new, target)
        return
    was_pointer = target.is_symlink()
    if _renameat2_exchange(new, target):
        _remove(new)  # now the old content (or the old pointer)
    else:  # pragma: no cover - kernels without RENAME_EXCHANGE
        old = target.with_name(f"{target.name}.tmp-{os.getpid()}-old")
        os.rename(target, old)
        os.rename(new, target)
        _remove(old)
    if was_pointer:  # replacing a versioned output of another kind (--overwrite): its versions go too
        for p in versions(target):
            if read_marker(p) is not None:
                _remove_unpinned(p)


def _write_marker(folder: Path, kind: str, extra: dict | None) -> None:
    entries = sorted(p.name for p in folder.iterdir() if p.name != MARKER)
    doc = {"kind": kind, "entries": entries, "writer": f"legalir {_version()}", **(extra or {})}
    with open(folder / MARKER, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


def _version() -> str:
    from legalir.version import __version__

    return __version__


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

    def __enter__(self) -> "Pin":
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
    raise OutputError(f"{target}: its version changes faster than it can be pinned")  # pragma: no cover


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


def _publish_versioned(tmp: Path, target: Path, kind: str) -> None:
    previous = _version_of(target)
    existing = versions(target)
    n = max([int(_VERSION.search(p.name).group(1)) for p in existing] + [0]) + 1
    version = target.with_name(f"{target.name}.v{n}")
    os.rename(tmp, version)
    link = target.with_name(f"{target.name}.tmp-{os.getpid()}-link")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(link)
    os.symlink(version.name, link)
    if target.is_symlink() or not target.exists():
        os.replace(link, target)  # atomic switch of the pointer
    else:  # a real folder written before versioning: exchange it for the pointer
        if not _renameat2_exchange(link, target):  # pragma: no cover - fallback
            os.rename(target, link.with_name(link.name + "-old"))
            os.replace(link, target)
            link = link.with_name(link.name + "-old")
        _remove(link)
    _fsync_dir(target.parent)
    # keep the version just replaced (a search may have opened it) and pinned ones (a reader holds them),
    # remove the other older ones we wrote
    for p in existing:
        if p != previous and (read_marker(p) or {}).get("kind") == kind:
            _remove_unpinned(p)


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike, kind: str = "output", *, overwrite: bool = False,
               legacy: Callable[[Path], bool] | None = None, versioned: bool = False,
               marker: dict | None = None) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``target``; it becomes ``target`` when the block completes.

    ``kind`` names what is written ("collection", "lucene-index", ...); see the module doc for when an
    existing ``target`` may be replaced, the lock, the clean-up and ``versioned``. The folder is removed
    if the block raises (KeyboardInterrupt and SIGTERM included).
    """
    target = Path(target)
    if target.name in ("", ".", ".."):
        raise OutputError(f"{target}: name a folder to write")
    refuse_version_folder(target)
    with _located(target, "nothing was published (the folder there before, if any, is as it was)"), \
            _atomic_dir(target, kind, overwrite, legacy, versioned, marker) as tmp:
        yield tmp


@contextlib.contextmanager
def _atomic_dir(target: Path, kind: str, overwrite: bool, legacy, versioned: bool, marker) -> Iterator[Path]:
    target.parent.mkdir(parents=True, exist_ok=True)
    with lock(target), _sigterm_raises():
        check_target(target, kind, overwrite=overwrite, legacy=legacy)
        clean_stale(target)
        tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
        _remove(tmp)
        with _tracked(tmp):
            tmp.mkdir()
            try:
                yield tmp
                _write_marker(tmp, kind, marker)
                _fsync_tree(tmp)
                if versioned:
                    _publish_versioned(tmp, target, kind)
                else:
                    _swap_in(tmp, target)
                    _fsync_dir(target.parent)
            except BaseException:
                _remove(tmp)
                raise


def copy_linked(src: str | os.PathLike, dst: str | os.PathLike, ignore: Iterable[str] = ()) -> None:
    """Copy folder ``src`` to ``dst`` with hard links where possible (files legalir never rewrites), leaving
    out entries named in ``ignore`` (at any depth)."""
    def link(s, d):
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)
    shutil.copytree(src, dst, copy_function=link, symlinks=True, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(*ignore) if ignore else None)
