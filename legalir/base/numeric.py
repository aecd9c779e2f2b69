"""Process-wide numeric settings, changed only for the length of a call.

torch's intra-op thread count and OpenMP's (FAISS's) are settings of the whole
process. A different thread count can change the order in which a float
reduction is summed, and with it the last bit of a vector or a score. So a
library call that set them and left them set would change its caller's later
results, and two processes (a server and a notebook, say) could answer the same
query with different bits.

Every legalir call that needs a thread count goes through :func:`threads`, which
sets it for the block and restores what it found when the block ends, whatever
way it ends. Query encoding uses it with :data:`QUERY_THREADS`, so that a query's
vector is the same in every process, whatever thread count its caller chose.
"""
from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["QUERY_THREADS", "LazyModule", "current", "threads"]

#: torch threads a query is encoded with: one, so that the float operations (and so the bits) of a query's
#: vector do not depend on the machine's core count or on what the calling process set
QUERY_THREADS = 1

# one block at a time may set the counts: two interleaved blocks would restore each other's values
_LOCK = threading.RLock()


def current() -> dict[str, int]:
    """The process's thread counts now: ``torch`` (intra-op) and ``faiss`` (OpenMP), where loaded."""
    out = {}
    # each function as far as its module is imported: another thread may be importing it right now
    torch_threads = getattr(sys.modules.get("torch"), "get_num_threads", None)
    if torch_threads is not None:
        out["torch"] = int(torch_threads())
    faiss_threads = getattr(sys.modules.get("faiss"), "omp_get_max_threads", None)
    if faiss_threads is not None:
        out["faiss"] = int(faiss_threads())
    return out


@contextmanager
def threads(n: int | None, *, torch: bool = True, faiss: bool = True) -> Iterator[None]:
    """Run the block with ``n`` torch and OpenMP (FAISS) threads, then restore the counts found.

    Parameters
    ----------
    n : int or None
        Threads for the block; ``None`` or ``0`` leaves the counts as they are.
    torch, faiss : bool
        Which libraries' counts to set (each imported here if it is installed
        and not yet loaded; one that is not installed is left alone).

    Notes
    -----
    torch's count is global to the process and OpenMP's belongs to the calling
    thread; blocks are serialised by one lock so that two threads' blocks
    cannot restore each other's values.
    """
    if not n:
        yield
        return
    n = int(n)
    with _LOCK:
        mod_torch = _load("torch") if torch else None
        mod_faiss = _load("faiss") if faiss else None
        if mod_faiss is not None and not hasattr(mod_faiss, "omp_set_num_threads"):
            mod_faiss = None
        saved_torch = mod_torch.get_num_threads() if mod_torch is not None else None
        saved_faiss = mod_faiss.omp_get_max_threads() if mod_faiss is not None else None
        try:
            if mod_torch is not None and saved_torch != n:
                mod_torch.set_num_threads(n)
            if mod_faiss is not None and saved_faiss != n:
                mod_faiss.omp_set_num_threads(n)
            yield
        finally:
            # torch first: where both share one OpenMP runtime, torch's setter sets OpenMP's count too
            if mod_torch is not None and mod_torch.get_num_threads() != saved_torch:
                mod_torch.set_num_threads(int(saved_torch))
            if mod_faiss is not None and mod_faiss.omp_get_max_threads() != saved_faiss:
                mod_faiss.omp_set_num_threads(int(saved_faiss))


class LazyModule:
    """A module imported on the first use of one of its names: ``np = LazyModule("numpy")`` at the top of a module
    whose callers may never need numpy (``legalir index update`` of a Lucene index reads
    :mod:`legalir.indexing.dense`'s names, never numpy's: about 15 MB of the process's peak memory). Each name is
    looked up once, then kept on the object."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        value = getattr(importlib.import_module(self._name), attr)
        setattr(self, attr, value)
        return value

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on first use>"


def _load(name: str):
    """The module ``name``, imported if needed; ``None`` where it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
