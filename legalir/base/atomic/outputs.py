"""Output folders: built as NAME.tmp-PID/, published in one rename (or as a new version), replaced only when
legalir's. (Part of :mod:`legalir.base.atomic`.)"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from legalir.base.atomic.common import (
    _VERSION,
    MARKER,
    REGISTRY,
    OutputError,
    _describe,
    _fsync_dir,
    _fsync_tree,
    _located,
    _made_parents,
    _remove,
    _remove_if_empty,
    _sigterm_raises,
    _tracked,
    _write_marker,
    clean_stale,
    read_marker,
)
from legalir.base.atomic.locks import lock
from legalir.base.atomic.ownership import audit
from legalir.base.atomic.versioning import _remove_unpinned, _version_of, refuse_version_folder, versions

_log = logging.getLogger(__name__)


def check_target(target: str | os.PathLike, kind: str, *, overwrite: bool = False,
                 legacy: Callable[[Path], bool] | None = None, yes: str | None = "--overwrite") -> None:
    """Refuse (:class:`OutputError`) to replace ``target`` unless legalir may (see the module doc).

    A legalir folder is replaced only when its marker proves every entry in it legalir's and unchanged
    (:func:`legalir.base.atomic.ownership.audit`); otherwise the refusal names each entry that is not, and
    ``overwrite`` (``--overwrite``, the user's explicit yes) lets it go ahead, logging what it replaces.
    A folder that is no legalir output at all is never replaced. ``yes``: the option the refusal offers
    (None for a command that has none, such as ``legalir index update``, which copies the folder).
    """
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
    if marker is None and os.path.lexists(real / MARKER):  # damaged: nothing in the folder can be proven legalir's
        raise OutputError(f"{target}: its marker {real / MARKER} is not one legalir wrote (damaged, or not "
                          f"legalir's), so nothing there can be proven legalir's; legalir never deletes what it "
                          f"did not write: move the folder away, or remove it yourself")
    if marker is None:
        if legacy is not None and legacy(real):
            return  # written by an earlier legalir, before markers
        raise OutputError(f"{target}: exists and is not a legalir {kind} (it holds {_describe(entries)}); "
                          f"legalir never deletes what it did not write: choose a new folder, or move "
                          f"these files away yourself")
    found = audit(real, marker)
    if found and not overwrite:
        raise OutputError(f"{target}: holds what legalir did not write there, or changed since: "
                          f"{_named(found.names())}; legalir replaces only a folder it can prove it wrote: move "
                          f"them away, or choose a new folder" + (f", or pass {yes} to replace them" if yes else ""))
    if marker["kind"] != kind and not overwrite:
        raise OutputError(f"{target}: holds a legalir {marker['kind']}, not a {kind}; pass --overwrite to "
                          f"replace it, or choose another folder")
    if found:
        _log.warning(f"{target}: --overwrite: replacing {len(found.names())} entr"
                     f"{'y' if len(found.names()) == 1 else 'ies'} that legalir did not write there or that "
                     f"changed since: {', '.join(found.names())}")


def _named(names: list[str], most: int = 20) -> str:
    """Entries of a refusal, each named, up to ``most`` (then how many more)."""
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def _release_old(old: Path, target: Path, overwrite: bool) -> bool:
    """Whether legalir may remove ``old`` (what a publish of ``target`` replaces): its marker proves it legalir's
    and unchanged, or ``overwrite`` (logged). Otherwise it is left in place, with a warning naming what is not."""
    marker = read_marker(old)
    if marker is None:
        return overwrite  # (a folder of an earlier legalir, recognised by its files when the build began)
    found = audit(old, marker)
    if not found:
        return True
    if overwrite:
        _log.warning(f"{target}: --overwrite: removed {old.name} with {_named(found.names())}")
        return True
    _log.warning(f"{target}: left {old} in place: it holds what legalir did not write there, or changed since: "
                 f"{_named(found.names())}; move them away and remove {old} yourself")
    return False


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


def _swap_in(new: Path, target: Path, overwrite: bool = False) -> None:
    """Put folder ``new`` at ``target`` in one step; what was at ``target`` is removed afterwards.

    The old folder is checked again first (a file put there during the build): anything its marker does not
    prove legalir's stops the publish (:class:`OutputError`), unless ``overwrite``."""
    if not os.path.lexists(target):
        os.rename(new, target)
        return
    was_pointer = target.is_symlink()
    if not was_pointer and target.is_dir():
        marker = read_marker(target)
        found = audit(target, marker) if marker is not None else None
        if found and not overwrite:
            raise OutputError(f"{target}: something was put there while legalir was building its replacement: "
                              f"{_named(found.names())}; nothing was replaced: move them away and run again, "
                              f"or pass --overwrite")
    if _renameat2_exchange(new, target):
        _remove(new)  # now the old content (or the old pointer)
    else:  # pragma: no cover - kernels without RENAME_EXCHANGE
        old = target.with_name(f"{target.name}.tmp-{os.getpid()}-old")
        os.rename(target, old)
        os.rename(new, target)
        _remove(old)
    if was_pointer:  # replacing a versioned output of another kind (--overwrite): its versions go too
        for p in versions(target):
            if read_marker(p) is not None and _release_old(p, target, overwrite):
                _remove_unpinned(p)


def _publish_versioned(tmp: Path, target: Path, kind: str, overwrite: bool = False) -> None:
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
    # keep the version just replaced (a search may have opened it), pinned ones (a reader holds them) and the
    # newest version of each release (a marker's "release": point-in-time search), remove the other older ones
    newest = newest_of_each_release([*existing, version])
    for p in existing:
        if (p != previous and (read_marker(p) or {}).get("kind") == kind and p not in newest.values()
                and _release_old(p, target, overwrite)):
            _remove_unpinned(p)


def newest_of_each_release(folders: Iterable[Path]) -> dict[str, Path]:
    """``{release: folder}``: the newest of ``folders`` (given oldest first) whose marker names each release.

    A version published with ``marker={"release": R}`` (:func:`atomic_dir`) is kept by later publishes
    while it is the newest version of ``R``: an index holding several releases of a code."""
    out: dict[str, Path] = {}
    for p in folders:
        release = (read_marker(p) or {}).get("release")
        if isinstance(release, str) and release:
            out[release] = p
    return out


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
    made = _made_parents(target.parent)
    try:
        with _atomic_dir_in(target, kind, overwrite, legacy, versioned, marker) as tmp:
            yield tmp
    except BaseException:
        _remove_if_empty(made)  # a write that failed leaves no empty folder of its own making (collections/)
        raise


@contextlib.contextmanager
def _atomic_dir_in(target: Path, kind: str, overwrite: bool, legacy, versioned: bool, marker) -> Iterator[Path]:
    with lock(target), _sigterm_raises():
        check_target(target, kind, overwrite=overwrite, legacy=legacy)
        clean_stale(target)
        clean_stale(target.parent / REGISTRY)  # the folder's file registry, its update killed before its rename
        tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
        _remove(tmp)
        with _tracked(tmp):
            tmp.mkdir()
            try:
                yield tmp
                _write_marker(tmp, kind, marker)
                _fsync_tree(tmp)
                if versioned:
                    _publish_versioned(tmp, target, kind, overwrite)
                else:
                    _swap_in(tmp, target, overwrite)
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
