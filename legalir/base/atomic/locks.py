"""One writer per output: a lock file beside it (flock), the second writer stopped at once. (Part of
:mod:`legalir.base.atomic`.)"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from legalir.base.atomic.common import OutputError

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
