"""API keys of `legalir serve`: who may call it, and what each key may do.

Keys come from a file (``--api-keys FILE``) or the ``LEGALIR_API_KEYS``
environment variable, one key per line (in the variable, ``;`` also ends a
line)::

    # comment lines and blank lines are skipped
    Zq3o0kS1c0yB2Ykq3Q9qMZ5rX2bX7mQp                     every scope
    h3T5n1VvJx8sQ0kLr7a2Yw6eP4uC9dGz  scopes=search      search and documents only
    sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  id=ci  scopes=runs

A line is the key itself (at least 16 characters: letters, digits and
``-._~+/=``), or ``sha256:`` and the hex SHA-256 of the key (so the file need
not hold the secret), then optional ``id=NAME`` (the name access logs and
metrics show; default: the first 8 hex digits of the key's SHA-256),
``scopes=A,B`` (default: all of :data:`SCOPES`) and ``rate=N/s`` (this key's
own rate limit, e.g. ``rate=2/s`` or ``rate=600/min``, in bursts of two
seconds' worth, at least 1; default: ``--rate-limit``). Clients send the key as
``Authorization: Bearer KEY``. A new key:
``python -c "import secrets; print(secrets.token_urlsafe(32))"``.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from legalir.serve.config import ConfigError


def parse_rate(value: str | None) -> float | None:
    """``"N/s"``, ``"N/min"`` (or a bare number: per second) -> requests per second; ``"off"``/``"0"`` -> None."""
    if value is None:
        return None
    v = value.strip().lower()
    if v in ("off", "none", "0", "0/s", "0/min"):
        return None
    m = re.fullmatch(r"(\d+(?:\.\d*)?)\s*(?:/\s*(s|sec|second|m|min|minute))?", v)
    if not m or float(m.group(1)) <= 0:
        raise ConfigError(f"--rate-limit {value!r}: expected N/s or N/min (e.g. 20/s, 600/min) or off")
    n = float(m.group(1))
    return n / 60 if (m.group(2) or "s").startswith("m") else n


_log = logging.getLogger(__name__)

#: environment variable holding key lines (as in a --api-keys file)
ENV = "LEGALIR_API_KEYS"
#: what a key may be allowed: ``search`` (search, documents, a section's history, the index and collection
#: lists, MCP's search, get_document, history and list_indexes), ``runs`` (the run explorer; MCP's evaluate and fuse), ``metrics`` (/metrics)
SCOPES = ("search", "runs", "metrics")
#: THE scope table, read by both faces (:class:`legalir.serve.guard.Guard` over HTTP, :mod:`legalir.serve.mcpserver`
#: over MCP): what each scope opens. HTTP routes by their template; ``OPEN`` needs no key (no data in it);
#: ``ANY_KEY`` needs a valid key and checks per tool (``/mcp``). A route or tool missing here is refused at
#: start-up (:func:`check_table`), so none can be added without saying who may use it.
ROUTE_SCOPES: dict[str, str] = {
    "/search": "search", "/search/batch": "search", "/doc/{collection}/{docid:path}": "search",
    "/indexes": "search", "/collections": "search", "/history": "search",
    "/runs": "runs", "/runs/evaluate": "runs", "/runs/{run}/topics": "runs", "/runs/{run}/topics/{qid:path}": "runs",
    "/metrics": "metrics",
}
OPEN = "open"
ANY_KEY = "any key"
ROUTE_ACCESS: dict[str, str] = {"/health": OPEN, "/": OPEN, "/static/{name}": OPEN, "/static/swagger": OPEN,
                                "/docs": OPEN, "/openapi.json": OPEN, "/mcp": ANY_KEY}
#: MCP tool -> the scope it needs
TOOL_SCOPES: dict[str, str] = {"list_indexes": "search", "search": "search", "get_document": "search",
                               "history": "search", "evaluate": "runs", "fuse": "runs"}
#: parts of a tool's answer shown only to a key with a further scope (what HTTP puts behind that scope):
#: ``list_indexes``' runs (names, files, qrels, scores) and qrels names are the run explorer's (``GET /runs``)
TOOL_PART_SCOPES: dict[str, dict[str, str]] = {"list_indexes": {"runs": "runs", "qrels": "runs"}}


def route_scope(route: str) -> str | None:
    """The scope a route (its template, e.g. ``/runs/{run}/topics``) needs; None: any valid key (``/mcp``,
    whose tools check their own, and a path no route matches, answered 404)."""
    return ROUTE_SCOPES.get(route)


def check_table(routes: Iterable[str], tools: Iterable[str]) -> None:
    """Refuse (``RuntimeError``: a programming error) a served route or tool that the scope table omits."""
    missing = sorted(r for r in routes if r not in ROUTE_SCOPES and r not in ROUTE_ACCESS)
    missing += sorted(f"MCP tool {t}" for t in tools if t not in TOOL_SCOPES)
    if missing:
        raise RuntimeError(f"legalir.serve.keys: no scope for {', '.join(missing)}; add them to ROUTE_SCOPES, "
                           f"ROUTE_ACCESS or TOOL_SCOPES")
MIN_KEY_CHARS = 16
_KEY = re.compile(r"^[A-Za-z0-9._~+/=-]+$")
_HEX = re.compile(r"^[0-9a-fA-F]{64}$")


def digest(key: str) -> str:
    """The hex SHA-256 of ``key`` (what a ``sha256:`` line holds)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ApiKey:
    """One key: its SHA-256, the name logs show, and its scopes."""

    sha256: str
    id: str
    scopes: frozenset[str]
    rate: float | None = None  # requests per second; None: the server's --rate-limit
    where: str = field(default="", compare=False)  # FILE:LINE (or "LEGALIR_API_KEYS: key N") it was read from

    def allows(self, scope: str) -> bool:
        """Whether this key may use ``scope`` (one of :data:`SCOPES`)."""
        return scope in self.scopes


class KeyRing:
    """The accepted keys, looked up by the SHA-256 of what a client sends.

    Parameters
    ----------
    keys : iterable of ApiKey
        The accepted keys: each key once (a key given twice, its scopes or rate would depend on which line
        wins), each id once (logs and metrics would mix two keys).

    Raises
    ------
    ConfigError
        A key or an id given twice, naming both places (``FILE:LINE``).
    """

    def __init__(self, keys: Iterable[ApiKey]):
        self.by_digest: dict[str, ApiKey] = {}
        ids: dict[str, ApiKey] = {}
        for k in keys:
            first = self.by_digest.get(k.sha256)
            if first is not None:
                raise ConfigError(f"{_at(k)}: this key is already {_on(first, k)}; give each key once (delete one "
                                  f"of the two lines)")
            first = ids.get(k.id)
            if first is not None:
                raise ConfigError(f"{_at(k)}: id {k.id!r} is already {_on(first, k)}; give each key its own "
                                  f"id=NAME")
            ids[k.id] = k
            self.by_digest[k.sha256] = k

    def __len__(self) -> int:
        return len(self.by_digest)

    def check(self, presented: str | None) -> ApiKey | None:
        """The key ``presented`` (the Bearer token), or None when it is not one of ours."""
        if not presented:
            return None
        return self.by_digest.get(digest(presented))


def _at(k: ApiKey) -> str:
    return k.where or "API keys"


def _on(first: ApiKey, k: ApiKey) -> str:
    """Where ``first`` was given, as seen from ``k``'s place: ``on line 2`` (same file), ``key 1`` (the
    variable), else its ``FILE:LINE``."""
    a, b = first.where.rpartition(":"), k.where.rpartition(":")
    if a[0] and a[0] == b[0] and a[2].isdigit():
        return f"on line {a[2]}"
    if first.where.startswith(f"{ENV}: key "):
        return first.where[len(ENV) + 2:]
    return f"at {first.where or 'another line'}"


def parse(text: str, where: str) -> list[ApiKey]:
    """The keys of a key file's text (see the module doc); ``where`` names it in errors (``FILE:LINE``; in
    ``$LEGALIR_API_KEYS``, where ``;`` also ends a key, ``LEGALIR_API_KEYS: key N``)."""
    out = []
    for n, raw in enumerate(re.split(r"\r?\n", text), 1):
        for line in raw.split(";") if where == ENV else [raw]:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            out.append(_parse_line(line, f"{where}:{n}" if where != ENV else f"{ENV}: key {len(out) + 1}"))
    return out


def _parse_line(line: str, where: str) -> ApiKey:
    first, *rest = line.split()
    if first.startswith("sha256:"):
        sha = first[len("sha256:"):]
        if not _HEX.match(sha):
            raise ConfigError(f"{where}: sha256: must be followed by the 64 hex digits of the key's SHA-256 "
                              f"(python -c \"import hashlib; print(hashlib.sha256(b'KEY').hexdigest())\")")
        sha = sha.lower()
    else:
        if len(first) < MIN_KEY_CHARS or not _KEY.match(first):
            raise ConfigError(f"{where}: a key is at least {MIN_KEY_CHARS} characters of letters, digits and "
                              f"-._~+/= (make one with: python -c \"import secrets; print(secrets.token_urlsafe(32))\")")
        sha = digest(first)
    key_id, scopes, rate = sha[:8], frozenset(SCOPES), None
    for opt in rest:
        name, eq, value = opt.partition("=")
        if not eq:
            raise ConfigError(f"{where}: expected id=NAME, scopes=A,B or rate=N/s after the key, got {opt!r}")
        if name == "id":
            if not re.match(r"^[A-Za-z0-9_.-]{1,64}$", value):
                raise ConfigError(f"{where}: id must be letters, digits, '_', '-' or '.', got {value!r}")
            key_id = value
        elif name == "scopes":
            asked = [s.strip() for s in value.split(",") if s.strip()]
            unknown = [s for s in asked if s not in SCOPES]
            if unknown or not asked:
                raise ConfigError(f"{where}: unknown scope(s) {', '.join(unknown) or '(none given)'}; known: "
                                  f"{', '.join(SCOPES)}")
            scopes = frozenset(asked)
        elif name == "rate":

            try:
                rate = parse_rate(value)
            except ConfigError as e:
                raise ConfigError(f"{where}: {str(e).replace('--rate-limit', 'rate=')}") from None
            if rate is None:
                raise ConfigError(f"{where}: rate= must be a positive rate such as 2/s or 600/min")
        else:
            raise ConfigError(f"{where}: unknown option {name!r}; known: id=NAME, scopes={','.join(SCOPES)}, rate=N/s")
    return ApiKey(sha, key_id, scopes, rate, where)


def load(path: str | os.PathLike | None = None, env: dict | None = None) -> KeyRing | None:
    """The keys of ``path`` (``--api-keys``), else of ``$LEGALIR_API_KEYS``, else None (no keys: no auth).

    Raises
    ------
    ConfigError
        A malformed line, or a file or variable that holds no key.
    """
    env = os.environ if env is None else env
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"--api-keys {p}: file not found")
        keys, where = parse(p.read_text(encoding="utf-8"), str(p)), str(p)
    elif env.get(ENV, "").strip():
        keys, where = parse(env[ENV], ENV), ENV
    else:
        return None
    if not keys:
        raise ConfigError(f"{where}: holds no key (one key per line; see `legalir serve --help`)")
    ring = KeyRing(keys)
    _log.info(f"serve: {len(ring)} API key(s) from {where}")
    return ring
