"""Argument checks at the door: one function per kind of value, one message shape.

Every public function of the core (:func:`legalir.evaluate`, :func:`legalir.compare`,
:func:`legalir.load`, :func:`legalir.index`, :func:`legalir.write_run`, :func:`legalir.as_run`,
:func:`legalir.as_qrels`) checks its arguments with these before any work starts, so a bad value
gets the same :class:`legalir.errors.ApiError` through the Python API, the CLI (``error: ...``,
exit status 2), HTTP (400, ``{"error": ...}``) and MCP (a tool error): the argument's name, the
value given and the values accepted, e.g. ``alpha must be a number between 0 and 1 (exclusive),
not 2``.
"""
from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable
from typing import Any

from legalir.errors import ApiError


def shown(value: Any) -> str:
    """A value as a message shows it: its repr, cut at 60 characters, with its type when not obvious."""
    try:
        text = repr(value)
    except Exception:  # pragma: no cover - a repr that raises
        text = f"<{type(value).__name__}>"
    if len(text) > 60:
        text = text[:57] + "..."
    if isinstance(value, (str, int, float, bool, type(None))):
        return text
    return f"{text} ({type(value).__name__})"


def boolean(name: str, value: Any) -> bool:
    """``True`` or ``False`` (also numpy's booleans); not 0/1, not strings."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise ApiError(f"{name} must be True or False, not {shown(value)}")


def integer(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """An integer (not a bool, not a float) within ``low``..``high`` (either bound may be open: None)."""
    accepted = ("an integer" + (f" from {low:,}" if low is not None else "")
                + (f" to {high:,}" if high is not None else (" or more" if low is not None else "")))
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ApiError(f"{name} must be {accepted}, not {shown(value)}")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        raise ApiError(f"{name} must be {accepted}, not {v}")
    return v


def optional_integer(name: str, value: Any, low: int | None = None, high: int | None = None) -> int | None:
    return None if value is None else integer(name, value, low, high)


def fraction(name: str, value: Any) -> float:
    """A real number strictly between 0 and 1 (a significance level, a coverage)."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value))
            or not 0 < float(value) < 1):
        raise ApiError(f"{name} must be a number between 0 and 1 (exclusive), not {shown(value)}")
    return float(value)


def choice(name: str, value: Any, accepted: Iterable[str]) -> str:
    """One of ``accepted`` (strings, compared exactly)."""
    accepted = list(accepted)
    if not isinstance(value, str) or value not in accepted:
        raise ApiError(f"{name} must be one of {', '.join(map(repr, accepted))}, not {shown(value)}")
    return value


def text(name: str, value: Any, *, empty: bool = False) -> str:
    """A string (non-empty unless ``empty``), without lone surrogates (which no file or JSON can hold)."""
    if not isinstance(value, str):
        raise ApiError(f"{name} must be a string, not {shown(value)}")
    if not empty and not value.strip():
        raise ApiError(f"{name} must be a non-empty string, not {shown(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ApiError(f"{name} holds a lone surrogate (character {e.start}), which is not text; "
                       f"give valid Unicode") from None
    return value


def optional_text(name: str, value: Any) -> str | None:
    return None if value is None else text(name, value)


def path(name: str, value: Any) -> str | os.PathLike:
    """A file or folder path: a non-empty string or an ``os.PathLike``."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
        if isinstance(value, bytes):
            raise ApiError(f"{name} must be a text path (a str or pathlib.Path), not bytes")
    if not isinstance(value, str) or not value.strip():
        raise ApiError(f"{name} must be a path (a non-empty str or pathlib.Path), not {shown(value)}")
    if "\0" in value:
        raise ApiError(f"{name} must be a path without NUL characters, not {shown(value)}")
    text(name, value)
    return value


def optional_path(name: str, value: Any) -> str | os.PathLike | None:
    return None if value is None else path(name, value)


def identifier(name: str, value: Any) -> str:
    """A topic or document id: a non-empty string, or an integer (taken as its decimal string)."""
    if isinstance(value, bool) or not isinstance(value, (str, numbers.Integral)):
        raise ApiError(f"{name} must be a string (or an integer), not {shown(value)}")
    s = str(value)
    if not s:
        raise ApiError(f"{name} must not be empty")
    text(name, s)
    return s


def calendar_date(name: str, value: Any, *, partial: bool = False) -> str:
    """A calendar date as ISO text, ``YYYY-MM-DD`` (a :class:`datetime.date` too: its day); with ``partial``,
    also a date known only to its month (``YYYY-MM``) or year (``YYYY``), kept at that precision.

    Read without a regular expression: the parts split on ``-``, each of its exact width, the whole a real
    day of the calendar (``2021-02-30`` is refused)."""
    import datetime

    if isinstance(value, datetime.datetime):
        raise ApiError(f"{name} must be a date (YYYY-MM-DD or a datetime.date), not a datetime {shown(value)}")
    if isinstance(value, datetime.date):
        return value.isoformat()
    accepted = "a date YYYY-MM-DD" + (", YYYY-MM or YYYY" if partial else "")
    if not isinstance(value, str):
        raise ApiError(f"{name} must be {accepted}, not {shown(value)}")
    parts = value.strip().split("-")
    widths = [4, 2, 2][:len(parts)]
    if (len(parts) > 3 or (len(parts) < 3 and not partial)
            or any(len(p) != w or not (p.isascii() and p.isdigit()) for p, w in zip(parts, widths))):
        raise ApiError(f"{name} must be {accepted}, not {shown(value)}")
    numbers_ = [int(p) for p in parts] + [1] * (3 - len(parts))
    try:
        datetime.date(*numbers_)
    except ValueError as e:
        raise ApiError(f"{name} must be {accepted} of the calendar, not {shown(value)} ({e})") from None
    return "-".join(parts)


# ------------------------------------------------------------------ the arguments of an operation
def integer_or_text(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """:func:`integer`, also given as its decimal text (``"10"``: what a URL's query string holds, and what a
    JSON client may send); anything else is refused in :func:`integer`'s words, showing the value as given."""
    if isinstance(value, str):
        s = value.strip()
        digits = s[1:] if s[:1] in "+-" else s
        if digits.isascii() and digits.isdigit() and len(digits) <= 18:
            return integer(name, int(s), low, high)
        accepted = ("an integer" + (f" from {low:,}" if low is not None else "")
                    + (f" to {high:,}" if high is not None else (" or more" if low is not None else "")))
        raise ApiError(f"{name} must be {accepted}, not {shown(value)}")
    return integer(name, value, low, high)


def number(name: str, value: Any, low: float | None = None) -> float:
    """A finite real number (not a bool), or its decimal text, at least ``low``."""
    v = value
    if isinstance(value, str):
        try:
            v = float(value)  # "nan" and "inf" too: refused below, as not finite
        except ValueError:
            pass
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)) \
            or (low is not None and float(v) < low):
        raise ApiError(f"{name} must be a finite number{f' of at least {low:g}' if low is not None else ''}, "
                       f"not {shown(value)}")
    return float(v)


def listed(name: str, value: Any, each) -> list:
    """A list (or tuple) whose items pass ``each(f"{name}[i]", item)``; not a string, not a mapping."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ApiError(f"{name} must be a list, not {shown(value)}")
    return [each(f"{name}[{i}]", v) for i, v in enumerate(value)]


class Param:
    """One argument of an operation (:func:`arguments`): its check, whether it must be given, its other names.

    Parameters
    ----------
    check : callable
        ``check(name, value)``: the value to use, or an :class:`~legalir.errors.ApiError` in this module's words.
    required : bool
        The operation cannot run without it.
    aliases : tuple of str
        Other names it may be given by (a face's short name, e.g. ``q`` for ``query``).
    """

    __slots__ = ("check", "required", "aliases")

    def __init__(self, check, required: bool = False, aliases: tuple[str, ...] = ()):
        self.check, self.required, self.aliases = check, required, tuple(aliases)


def optional(check, *, blank: bool = False):
    """``check`` for a value that may be left out: ``None`` (and, with ``blank``, ``""``: an empty form field or
    query-string value) is ``None``."""
    def run(name: str, value: Any) -> Any:
        if value is None or (blank and isinstance(value, str) and value == ""):
            return None
        return check(name, value)
    return run


def arguments(operation: str, given: Any, params: dict[str, Param], *, prefix: str = "") -> dict[str, Any]:
    """``given`` (name -> value, as a face received it) checked against ``operation``'s ``params``: the one
    refusal of an unknown, doubled, missing or mistyped argument, so every face (the MCP tools, the HTTP
    endpoints) refuses the same call with the same words.

    ``prefix``: put before each argument's name in a message (``queries[1].``: an object within an argument).

    Returns
    -------
    dict
        The given arguments under their own names (not their aliases), each as its check returned it.

    Raises
    ------
    ApiError
        A name the operation does not take (with the names it does, and the nearest one), a name given
        twice (by itself and by an alias), a required argument left out, or a value its check refuses.
    """
    import difflib

    if not isinstance(given, dict):
        raise ApiError(f"{operation} takes its arguments as an object of names and values, not {shown(given)}")
    by_name = {n: n for n in params}
    by_name.update({a: n for n, p in params.items() for a in p.aliases})
    unknown = sorted(str(n) for n in given if n not in by_name)
    if unknown:
        listing = ", ".join(n + (f" (or {', '.join(p.aliases)})" if p.aliases else "") for n, p in params.items())
        near = difflib.get_close_matches(unknown[0], list(by_name), n=1, cutoff=0.75) if len(unknown) == 1 else []
        raise ApiError(f"{operation} has no argument{'s' if len(unknown) > 1 else ''} "
                       f"{', '.join(shown(n) for n in unknown)}"
                       + (f" (did you mean {near[0]!r}?)" if near else "")
                       + (f"; its arguments are: {listing}" if params else "; it takes no arguments"))
    out: dict[str, Any] = {}
    for n, value in given.items():
        name = by_name[n]
        if name in out:
            raise ApiError(f"{operation}: {name!r} is given twice (as {', '.join(repr(x) for x in given if by_name[x] == name)}); "
                           f"give it once")
        out[name] = params[name].check(prefix + name, value)
    missing = [n for n, p in params.items() if p.required and n not in out]
    if missing:
        raise ApiError(f"{operation} needs the argument{'s' if len(missing) > 1 else ''} "
                       f"{', '.join(map(repr, missing))}")
    return out
