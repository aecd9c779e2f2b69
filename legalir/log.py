"""Messages on stderr go through :mod:`logging`, under the ``legalir`` logger.

Library modules log with ``log = legalir.log.get(__name__)``: ``log.info``
for progress and counts, ``log.warning`` for what a user must know (the
message itself starts with ``warning:`` where it did before). By default the
``legalir`` logger writes the bare message to the *current* ``sys.stderr``
at level INFO, exactly as the command line shows it; ``LEGALIR_LOG_LEVEL``
(``WARNING`` to keep only warnings, ``DEBUG``) changes the level, and a
program embedding legalir can attach its own handlers to ``legalir``.
"""
from __future__ import annotations

import logging
import os
import sys

ROOT = "legalir"
LEVEL_ENV = "LEGALIR_LOG_LEVEL"


class _CurrentStderr(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is at the time of the message (pytest, redirection)."""

    def __init__(self):
        super().__init__()

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):  # StreamHandler.__init__ assigns it; the property always follows sys.stderr
        pass


def _configure() -> logging.Logger:
    root = logging.getLogger(ROOT)
    if not getattr(root, "_legalir_configured", False):
        handler = _CurrentStderr()
        handler.setFormatter(logging.Formatter("%(message)s"))
        root.addHandler(handler)
        root.propagate = False
        level = os.environ.get(LEVEL_ENV, "INFO").strip().upper() or "INFO"
        root.setLevel(level if isinstance(logging.getLevelName(level), int) else "INFO")
        root._legalir_configured = True
    return root


def get(name: str) -> logging.Logger:
    """The logger for module ``name`` (``legalir.x.y``), with the ``legalir`` logger configured."""
    _configure()
    return logging.getLogger(name if name.startswith(ROOT) else f"{ROOT}.{name}")


def set_level(level: int | str) -> None:
    _configure().setLevel(level)
