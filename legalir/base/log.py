"""Logging as a library should: records go through :mod:`logging`; only the CLI adds a handler.

Library modules log with ``logging.getLogger(__name__)`` (``info`` for progress and
counts, ``warning`` for what a user must know; no "warning:" text in the message).
The ``legalir`` package logger has only a ``NullHandler``, so an application's own
configuration (``logging.basicConfig()``, pytest's ``caplog``) sees every record
and nothing is printed unless the application asks.

The ``legalir`` command line calls :func:`configure`: the bare message on the
*current* ``sys.stderr`` (``warning: `` before warnings), at level INFO, or what
``-v``/``--quiet`` or ``LEGALIR_LOG_LEVEL`` (``WARNING``, ``ERROR``, ``DEBUG``) say;
under ``-q`` it also calls :func:`quiet_libraries`.

Progress bars: every long job (convert, index, index update, encode, search, eval) draws its bar
through :func:`progress`, the one place that decides whether a bar is shown (:func:`progress_shown`:
stderr is a terminal, legalir's messages at INFO are shown, the main thread, the caller not ``quiet``).
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any

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

    def emit(self, record: logging.LogRecord) -> None:
        # tqdm's class as far as it is imported: another thread may be importing tqdm right now, and a module
        # half initialised has no ``tqdm`` yet (then no bar of it is on the terminal either)
        bar = getattr(sys.modules.get("tqdm"), "tqdm", None)
        if bar is not None and getattr(bar, "_instances", None):
            # a progress bar is on the terminal: clear it, write the message, draw it again below
            with bar.external_write_mode(file=sys.stderr):
                super().emit(record)
        else:
            super().emit(record)


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


def quiet_libraries() -> None:
    """``legalir -q``: no other library's warnings on stderr. Python warnings are ignored, and a record of a
    library logger with no handler of its own is dropped (the root logger gets a ``NullHandler``, so
    :mod:`logging`'s last-resort handler, which prints such records' warnings, is never used). legalir's own
    warnings and errors still print (its handler, :func:`configure`)."""
    import warnings

    warnings.simplefilter("ignore")
    root = logging.getLogger()
    if not any(type(h) is logging.NullHandler for h in root.handlers):
        root.addHandler(logging.NullHandler())


# ------------------------------------------------------------------ progress bars
def progress_shown(quiet: bool = False) -> bool:
    """Whether a progress bar is drawn now: not ``quiet`` (the caller's own option), legalir's messages at INFO
    are shown (not ``legalir -q``, not ``LEGALIR_LOG_LEVEL=WARNING``; a library whose application did not ask
    for them shows none), on the main thread (a server's requests run on worker threads: they draw none), and
    stderr is a terminal (a log file or a pipe gets no bar)."""
    if quiet or not logging.getLogger(ROOT).isEnabledFor(logging.INFO):
        return False
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError, OSError):  # closed or replaced by an object without a terminal
        return False


def progress(iterable: Iterable | None = None, *, total: int | None = None, desc: str | None = None,
             unit: str = " items", quiet: bool = False, **kwargs: Any):
    """A ``tqdm`` progress bar on the current stderr, drawn only where :func:`progress_shown` says (the one
    place that decides): count, rate and, with ``total``, the time left; cleared when done (the job's own
    message says what it did).

    Parameters
    ----------
    iterable : iterable, optional
        What to count (the bar iterates over it), or None (call ``update``).
    total : int, optional
        How many there will be [default: ``len(iterable)`` where it has one]: with it the bar shows the
        time left.
    desc, unit : str
        What the bar says before the count, and after it (``" docs"``).
    quiet : bool
        The caller's own option (``--quiet``, ``progress=False``): no bar.
    **kwargs
        Other ``tqdm`` options (``initial``, ``leave``, ``mininterval``). The bar redraws at most every half
        second unless ``TQDM_MININTERVAL`` (tqdm's own environment setting) says otherwise.

    Returns
    -------
    tqdm.tqdm
        Disabled (drawing nothing, counting nothing) where no bar is shown.
    """
    from tqdm import tqdm

    options = {"leave": False, "dynamic_ncols": True, "mininterval": 0.5, **kwargs}
    if "TQDM_MININTERVAL" in os.environ:  # tqdm's own setting (its environment variable) wins where given
        del options["mininterval"]
    return tqdm(iterable, total=total, desc=desc, unit=unit, file=sys.stderr, disable=not progress_shown(quiet),
                **options)


@contextlib.contextmanager
def ticking(bar) -> Iterator[None]:
    """Redraw ``bar`` every second while the block runs (a step that is one long call, e.g. Lucene indexing a
    partition in Java: the elapsed time still moves)."""
    if getattr(bar, "disable", True):
        yield
        return
    done = threading.Event()

    def tick():
        while not done.wait(1.0):
            bar.refresh()

    thread = threading.Thread(target=tick, name="legalir-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


class _Muted(logging.Filter):
    """Drops a logger's records on the threads inside :func:`muted` (each record passed on at DEBUG)."""

    def __init__(self, into: logging.Logger):
        super().__init__()
        self.into = into
        self.local = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(self.local, "depth", 0) > 0:
            if self.into.isEnabledFor(logging.DEBUG):
                self.into.debug(f"{record.name}: {record.getMessage()}")
            return False
        return True


_muted: dict[str, tuple[_Muted, int]] = {}  # name -> (its filter, loggers there were when it was last attached)
_muted_lock = threading.Lock()


@contextlib.contextmanager
def muted(name: str, into: logging.Logger | None = None) -> Iterator[None]:
    """The records of the library logger ``name`` that this thread makes inside the block are not printed
    (only at DEBUG, ``legalir -v``, through ``into``); other threads' are as before. For a library that logs
    its own bookkeeping as warnings (eyecite's "Unknown overlap case"), wrapped around the one call to it."""
    loggers = logging.Logger.manager.loggerDict
    with _muted_lock:
        f, seen = _muted.get(name) or (_Muted(into or logging.getLogger(ROOT)), -1)
        if seen != len(loggers):
            # a logger's filters see only its own records, not those its children pass up: every logger of
            # the library gets the filter (``eyecite.helpers`` logs eyecite's warnings)
            for other in [logging.getLogger(name), *list(loggers.values())]:
                if isinstance(other, logging.Logger) and (other.name == name or other.name.startswith(name + ".")) \
                        and f not in other.filters:
                    other.addFilter(f)
            _muted[name] = (f, len(loggers))
    f.local.depth = getattr(f.local, "depth", 0) + 1
    try:
        yield
    finally:
        f.local.depth -= 1
