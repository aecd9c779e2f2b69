"""Atomic outputs: build under a temporary name, rename when complete.

An interrupted or failed build leaves the previous output (or nothing) in
place, never a half-written one.
"""
from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Iterator


def replace_dir(src: Path, target: Path) -> None:
    """Move folder ``src`` to ``target``, replacing an existing ``target`` (old one removed last)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        old = target.with_name(target.name + f".old-{os.getpid()}")
        os.replace(target, old)
        os.replace(src, target)
        shutil.rmtree(old)
    else:
        os.replace(src, target)


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``target``; it becomes ``target`` if the block
    completes, and is removed if the block raises (KeyboardInterrupt included)."""
    target = Path(target)
    tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
        replace_dir(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def atomic_file(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``target`` to write; it replaces ``target`` if the block
    completes, and is removed if the block raises."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
