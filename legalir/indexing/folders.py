"""Index folders: partitions (one index per partition) and the collection an index records, the rules every
index kind (Lucene, FAISS) shares."""
from __future__ import annotations

import os
from pathlib import Path

from legalir.base import atomic
from legalir.base.atomic.common import _TMP


def partition_keys(index_dir: str | os.PathLike, marker: str) -> list[str]:
    """Partition keys of a partitioned index folder: its sub-folders holding ``marker``;
    ``[]`` when ``index_dir`` is itself one index (or does not exist)."""
    root = Path(index_dir)
    if (root / marker).exists() or not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / marker).exists())


def keep_partitions(index_dir: str | os.PathLike, new_dir: Path, marker: str, rebuilt) -> None:
    """Into ``new_dir`` (a build of only some partitions), hard-link the current index's other partitions."""
    old = atomic.current(index_dir)
    for key in partition_keys(old, marker) if old.is_dir() else []:
        if key not in rebuilt:
            atomic.copy_linked(old / key, new_dir / key)


def recorded_path(key: str, path: str | os.PathLike, meta_folder: str | os.PathLike) -> dict[str, str]:
    """``path`` (a collection folder) as an index's metadata in ``meta_folder`` records it, under ``key``.

    Relative to ``meta_folder`` when ``path`` sits beside the index, that is, inside the folder that holds
    the index (the parent of the ``NAME.tmp-PID`` folder being built), so that moving the folder holding
    both keeps the index pointing at its collection, with the absolute path beside it (``KEY_absolute``:
    an index copied elsewhere alone still finds it); absolute otherwise (found from any working
    directory). :func:`recorded_location` reads it back.

    Parameters
    ----------
    key : str
        The metadata field (``input``, ``collection``).
    path : str or PathLike
        The folder to record.
    meta_folder : str or PathLike
        The folder the metadata file is written into (inside the build folder of
        :func:`legalir.base.atomic.atomic_dir`).

    Returns
    -------
    dict
        The fields to put in the metadata.
    """
    target = Path(path).resolve()
    here = Path(meta_folder).resolve()
    build = next((p for p in (here, *here.parents) if _TMP.search(p.name)), None)
    if build is not None and target.is_relative_to(build.parent) and not target.is_relative_to(build):
        return {key: os.path.relpath(target, here), f"{key}_absolute": str(target)}
    return {key: str(target)}


def recorded_location(meta: dict, key: str, meta_folder: str | os.PathLike) -> Path | None:
    """The folder an index's metadata (``meta``, read from ``meta_folder``) records under ``key``
    (:func:`recorded_path`): the relative one when it exists, else the absolute one; None when neither is
    recorded."""
    value = meta.get(key)
    if not value:
        return None
    p = Path(value)
    if p.is_absolute():
        return p
    p = Path(os.path.realpath(meta_folder)) / p
    fallback = meta.get(f"{key}_absolute")
    return Path(fallback) if not p.exists() and fallback else p
