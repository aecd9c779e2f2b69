"""Index folders of one index per partition: the rule every index kind (Lucene, FAISS) shares."""
from __future__ import annotations

import os
from pathlib import Path

from legalir import atomic


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
