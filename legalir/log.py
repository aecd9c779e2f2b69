"""Logging as a library should: records go through :mod:`logging`; only the CLI adds a handler.

Library modules log with ``logging.getLogger(__name__)`` (``info`` for progress and
counts, ``warning`` for what a user must know; no "warning:" text in the message).
The ``legalir`` package logger has only a ``NullHandler``, so an application's own
configuration (``logging.basicConfig()``, pytest's ``caplog``) sees every record
and nothing is printed unless the application asks.

The ``legalir`` command line calls :func:`configure`: the bare message on the
*current* ``sys.stderr`` (``warning: `` before warnings), at level INFO, or what
``-v``/``--quiet`` or ``LEGALIR_LOG_LEVEL`` (``WARNING``, ``ERROR``, ``DEBUG``) say.
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


class _Formatter(logging.Formatter):
    """The message as the command line shows it: warnings and errors say so."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if record.levelno >= logging.ERROR:
            return f"error: {text}"
        if record.levelno >= logging.WARNING:
            return f"warning: {text}"
        return text


def get(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` under ``legalir`` (kept for scripts written against it)."""
    return logging.getLogger(name if name.startswith(ROOT) else f"{ROOT}.{name}")


def configure(level: int | str | None = None) -> logging.Logger:
    """The command line's handler: messages on stderr at ``level`` (default: ``$LEGALIR_LOG_LEVEL`` or INFO).

    Idempotent: called again, it only changes the level.
    """
    root = logging.getLogger(ROOT)
    handler = next((h for h in root.handlers if isinstance(h, _CurrentStderr)), None)
    if handler is None:
        handler = _CurrentStderr()
        handler.setFormatter(_Formatter("%(message)s"))
        root.addHandler(handler)
    if level is None:
        level = os.environ.get(LEVEL_ENV, "INFO").strip().upper() or "INFO"
    if isinstance(level, str) and not isinstance(logging.getLevelName(level), int):
        level = "INFO"
    root.setLevel(level)
    return root


def set_level(level: int | str) -> None:
    """Set the ``legalir`` logger's level (what the CLI's handler prints)."""
    logging.getLogger(ROOT).setLevel(level)
