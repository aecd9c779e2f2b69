"""The garbage collector of a process that is legalir's own: the `legalir` program (:mod:`legalir.cli`) and the Ray
actors that encode for it (:class:`legalir.indexing.distributed.ShardEncoder`).

Python's thresholds (700, 10, 10) run a young collection every 700 new container objects; importing torch and
transformers allocates about a million, and the collections this sets off cost 0.7-1.2 s of their 4-5 s of import
CPU (measured with the collector off; docs/figures.md). A process's teardown then runs the collector over all of
it again: a second of CPU with both loaded. A Python program that imports legalir keeps its own collector: only a
process legalir started, for one job, is set here.
"""
from __future__ import annotations

import gc

__all__ = ["PROGRAM_GC_THRESHOLDS", "collect_less", "settle"]

#: the thresholds of legalir's own processes (Python's: 700, 10, 10): a young collection every 50,000 new objects,
#: not every 700. At Python's, the collections during torch's and transformers' imports cost a tiny `legalir
#: encode` 0.2 s of its 5 s of CPU side by side (docs/figures.md). Cyclic garbage waits a little longer to be
#: freed: at most what 50,000 objects hold.
PROGRAM_GC_THRESHOLDS = (50_000, 20, 20)


def collect_less() -> None:
    """Set :data:`PROGRAM_GC_THRESHOLDS` for this process (the program when its command starts; an actor before it
    loads its model)."""
    gc.set_threshold(*PROGRAM_GC_THRESHOLDS)


def settle() -> None:
    """Move every object this process holds now into the collector's permanent generation (:func:`gc.freeze`),
    which no collection visits: what a long job loaded once (a model, torch, the libraries) is not traversed again
    by each full collection of the job, nor by the collections of the interpreter's teardown.

    The program calls it once its command has ended (success, error or signal alike): its outputs are closed and
    published, or removed, and the exit is otherwise the same (threads joined, ``atexit`` handlers run, standard
    streams flushed, each module's objects released as they were, files among them closed). An encoding actor
    calls it once its model is loaded. Garbage that is already unreachable then stays until the process ends."""
    gc.freeze()
