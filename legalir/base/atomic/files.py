"""Output files written atomically (a temporary, fsynced, renamed), under the ownership rule. (Part of
:mod:`legalir.base.atomic`.)"""
from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from legalir.base.atomic.common import (
    OutputError,
    _digest,
    _fsync_dir,
    _located,
    _made_parents,
    _remove_if_empty,
    _sigterm_raises,
    _tmp_name,
    _tracked,
    clean_stale,
)
from legalir.base.atomic.ownership import _record, _remember, check_file, marked_folder


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
    # a file legalir writes into a folder it published (embedding shards, their manifest): recorded in the
    # folder's marker, so that the folder stays provably legalir's (legalir.base.atomic.ownership.audit)
    marked = None if output else marked_folder(p)
    made = _made_parents(p.parent)
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
                if output or marked:
                    st = os.fstat(f.fileno())
                    with open(tmp, "rb") as again:
                        seen = (st.st_size, st.st_mtime_ns, _digest(again))
            if marked:  # the new state recorded before the rename, the old one still accepted until after it
                rel = Path(os.path.abspath(p)).relative_to(marked[0]).as_posix()
                state = dict(zip(("size", "mtime_ns", "sha256"), seen))
                _record(marked[0], rel, state, pending=True)
            os.replace(tmp, p)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            _remove_if_empty(made)  # a write that failed leaves no empty folder of its own making (runs/x/)
            raise
    _fsync_dir(p.parent)
    if output:
        _remember(p, *seen)
    if marked:
        _record(marked[0], rel, state, pending=False)


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
