"""The commands of the `legalir` CLI, one module per pipeline stage; :mod:`legalir.cli` registers them.

Each command only parses its options and calls one library function; the
group in :mod:`legalir.cli` turns user errors into ``error: ...`` and exit 2.
A command's module is imported only when that command runs (``legalir eval``
never imports the retrieval stack): :data:`REGISTRY` names each command's
module, and a test checks it against the modules' own ``COMMANDS`` lists.
"""
from __future__ import annotations

import importlib

#: command name -> the module of legalir.commands that defines it (in that module's COMMANDS)
REGISTRY: dict[str, str] = {
    "download": "data", "datasets": "data", "convert": "data", "index": "data", "chunk": "data", "anchors": "data",
    "search": "retrieve", "history": "retrieve", "rank-pool": "retrieve", "encode": "retrieve", "index-dense": "retrieve",
    "search-dense": "retrieve", "fuse": "retrieve", "tune-bm25": "retrieve", "tune-fusion": "retrieve",
    "maxp": "retrieve", "convert-run": "retrieve",
    "eval": "evaluate", "compare": "evaluate", "report": "evaluate",
    "train-ce": "training", "train-dense": "training", "expand": "training", "rerank": "training",
    "qa": "analysis", "qa-report": "analysis", "analyze": "analysis", "regress": "analysis",
    "serve": "serve", "mcp": "serve",
}
MODULES = tuple(dict.fromkeys(REGISTRY.values()))


def load(name: str):
    """The click command called ``name`` (its module imported now), or None."""
    module = REGISTRY.get(name)
    if module is None:
        return None
    return next(c for c in importlib.import_module(f"legalir.commands.{module}").COMMANDS if c.name == name)


def all_commands() -> list:
    """Every command, each module imported (for documentation and tests)."""
    return [c for m in MODULES for c in importlib.import_module(f"legalir.commands.{m}").COMMANDS]
