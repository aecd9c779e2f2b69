"""What stands between the network and `legalir serve`'s routes: one ASGI middleware, :class:`Guard`.

Every HTTP request, in this order:

1. gets a request id (the client's ``X-Request-ID`` when it sends a sane one:
   1 to 128 of ``A-Za-z0-9._:-``; else a new one), returned in ``X-Request-ID``
   on every response, and security headers (``Content-Security-Policy`` with
   ``frame-ancestors 'none'``, ``X-Content-Type-Options: nosniff``,
   ``X-Frame-Options: DENY``, ``Referrer-Policy: no-referrer``);
2. is refused (421) when its ``Host`` header names a host the server was not
   bound to (DNS-rebinding protection: a web page that rebinds its own name to
   127.0.0.1 still sends its own name), or (403) when it carries an ``Origin``
   of another host;
3. with API keys (:mod:`legalir.serve.keys`): is refused (401) without a known
   ``Authorization: Bearer KEY``, (403) when the key lacks the route's scope;
4. with a rate limit: is refused (429, ``Retry-After``) when its key (or,
   without keys, its client address) has no token left in its bucket; a
   request takes one token, and a route doing more work takes more once it
   knows how much (``request.state.charge(n)``: ``POST /search/batch`` takes
   one per query, into debt if need be, so a batch of 1,000 queries costs what
   1,000 searches do);
5. is refused (413) when its ``Content-Length`` is over the body limit, before
   any of the body is read; a body sent without a length is counted as it is
   read and cut off at the limit;
6. waits for one of ``max_active`` slots (a queue, not more threads); refused
   (503, ``Retry-After``) when ``max_queue`` requests are already waiting.

``/health`` skips 2 to 6 (load balancers probe it by address, without keys), so it names nothing served;
the page's files and the OpenAPI description (``/``, ``/static/*``,
``/docs``, ``/openapi.json``) skip 3 (they hold no data; the page asks for a
key when the API answers 401). After each request one JSON line goes to the
``legalir.serve.access`` logger (id, key id, client, method, route, status,
latency, hits) and the counters of :class:`Metrics` (``GET /metrics``,
Prometheus text format) move.
"""
from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Sequence

from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.routing import Match

from legalir.serve.config import DEFAULT_MAX_BODY, ConfigError
from legalir.serve.keys import KeyRing, parse_rate  # noqa: F401  (parse_rate: re-exported)

access_log = logging.getLogger("legalir.serve.access")

#: rate limit when API keys are on and --rate-limit is not given: per key, requests per second (burst: twice)
DEFAULT_KEYED_RATE = 20.0
#: at most this many client addresses keep a bucket (the least recently seen are forgotten)
MAX_BUCKETS = 10_000
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
#: paths with no checks but the request id and headers
HEALTH = "/health"
#: paths served without a key (no data in them)
OPEN_PATHS = frozenset({"/", "/docs", "/openapi.json"})
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

_CSP_API = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"
_CSP_PAGE = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
             "connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
# the /docs page: Swagger UI's files served by legalir (/static/swagger/, no CDN) and its inline start-up script
_CSP_DOCS = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
             "img-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; "
             "object-src 'none'; frame-ancestors 'none'; base-uri 'none'")


class BodyTooLarge(HTTPException):
    """A request body over the limit (413), raised while it is read."""

    def __init__(self, limit: int):
        super().__init__(status_code=413, detail=f"request body over {limit:,} bytes; send at most {limit:,} "
                                                 f"(split a batch into several requests)")


def required_scope(path: str) -> str | None:
    """The scope a path needs (:data:`legalir.serve.keys.SCOPES`); None: any valid key (MCP checks per tool)."""
    if path == "/runs" or path.startswith("/runs/"):
        return "runs"
    if path == "/metrics":
        return "metrics"
    if path == "/mcp" or path.startswith("/mcp/"):
        return None
    return "search"


def _host_name(host: str) -> str:
    """The name part of a Host header value (``[::1]:8000`` -> ``::1``), lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


@dataclass
class Policy:
    """What :class:`Guard` enforces.

    Parameters
    ----------
    keys : KeyRing or None
        Accepted API keys; None: no authentication.
    allowed_hosts : sequence of str or None
        Host names the ``Host`` header may carry (``*``: any); None: any.
    rate : float or None
        Requests per second per key (or client address); None: no limit.
    burst : int or None
        Bucket size [default: twice ``rate``, at least 1].
    max_body : int
        Request body limit in bytes.
    max_active : int
        Requests handled at once; the rest wait in a queue.
    max_queue : int
        Requests that may wait; beyond, 503.
    """

    keys: KeyRing | None = None
    allowed_hosts: Sequence[str] | None = None
    rate: float | None = None
    burst: int | None = None
    max_body: int = DEFAULT_MAX_BODY
    max_active: int = 8
    max_queue: int = 256
    index_versions: dict[str, dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.rate is not None and self.burst is None:
            self.burst = max(1, int(math.ceil(2 * self.rate)))
        hosts = None if self.allowed_hosts is None else {_host_name(h) for h in self.allowed_hosts}
        self._hosts = None if hosts is None or "*" in hosts else hosts


class TokenBuckets:
    """One token bucket per name: ``rate`` tokens a second up to ``burst``; a request takes one.

    Parameters
    ----------
    max_buckets : int
        At most this many names keep a bucket (the least recently used are forgotten: a full bucket again).
    """

    def __init__(self, max_buckets: int = MAX_BUCKETS):
        self.max_buckets = max_buckets
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, name: str, rate: float, burst: int, now: float | None = None) -> float:
        """Take a token from ``name``'s bucket: 0.0 when there was one, else the seconds until there is."""
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._buckets.pop(name, (float(burst), now))
            tokens = min(float(burst), tokens + (now - last) * rate)
            wait = 0.0
            if tokens >= 1.0:
                tokens -= 1.0
            else:
                wait = (1.0 - tokens) / rate
            self._buckets[name] = (tokens, now)
            while len(self._buckets) > self.max_buckets:
                self._buckets.popitem(last=False)
            return wait

    def charge(self, name: str, n: float, rate: float, burst: int, now: float | None = None) -> None:
        """Take ``n`` more tokens from ``name``'s bucket, into debt if need be: work already admitted (a
        batch of queries, each its own token) is done, and the bucket's next requests wait for the debt
        to be paid at ``rate``."""
        if n <= 0:
            return
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._buckets.pop(name, (float(burst), now))
            tokens = min(float(burst), tokens + (now - last) * rate) - n
            self._buckets[name] = (tokens, now)


class Metrics:
    """Request counters and latency histograms, written in the Prometheus text format (0.0.4).

    Parameters
    ----------
    index_versions : dict or callable, optional
        ``{index: {"bm25"|"dense": N or "-"}}``, or a function returning it when the metrics are read
        (the versions served now: :meth:`legalir.serve.engine.Engine.index_versions`).
    version : str
        legalir's version.
    reloads : callable, optional
        Returns ``{index: {"reloads": n, "failures": n}}`` when the metrics are read
        (:meth:`legalir.serve.engine.Engine.reload_counts`).
    """

    def __init__(self, index_versions: dict[str, dict[str, str]] | Callable[[], dict] | None = None,
                 version: str = "", reloads: Callable[[], dict[str, dict[str, int]]] | None = None):
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str, str], int] = {}
        self.errors: dict[tuple[str, str], int] = {}
        self.latency: dict[str, list[float]] = {}  # route -> bucket counts (+Inf last), then sum
        self.in_flight = 0
        self.queued = 0
        self._index_versions = index_versions or {}
        self._reloads = reloads
        self.version = version
        self.started = time.time()

    @property
    def index_versions(self) -> dict[str, dict[str, str]]:
        """The served indexes' versions now."""
        v = self._index_versions
        return v() if callable(v) else v

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one finished request."""
        with self._lock:
            key = (route, method, str(status))
            self.requests[key] = self.requests.get(key, 0) + 1
            if status >= 400:
                ek = (route, str(status))
                self.errors[ek] = self.errors.get(ek, 0) + 1
            h = self.latency.setdefault(route, [0.0] * (len(LATENCY_BUCKETS) + 2))
            for i, bound in enumerate(LATENCY_BUCKETS):
                if seconds <= bound:
                    h[i] += 1
            h[len(LATENCY_BUCKETS)] += 1
            h[-1] += seconds

    def render(self) -> str:
        """The metrics as Prometheus text."""
        def lbl(**kv: str) -> str:
            return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in kv.items()) + "}"

        out = ["# HELP legalir_build_info legalir version serving.", "# TYPE legalir_build_info gauge",
               f"legalir_build_info{lbl(version=self.version)} 1",
               "# HELP legalir_start_time_seconds When the server started (Unix time).",
               "# TYPE legalir_start_time_seconds gauge", f"legalir_start_time_seconds {self.started:.3f}",
               "# HELP legalir_index_info Served indexes: kind and build version (the N of INDEX.vN).",
               "# TYPE legalir_index_info gauge"]
        versions = self.index_versions
        for name, kinds in sorted(versions.items()):
            for kind, version in sorted(kinds.items()):
                out.append(f"legalir_index_info{lbl(index=name, kind=kind, version=version)} 1")
        numbered = [(name, kind, v) for name, kinds in sorted(versions.items()) for kind, v in sorted(kinds.items())
                    if str(v).isdigit()]
        if numbered:
            out += ["# HELP legalir_index_version Version served now (the N of INDEX.vN) of each versioned index.",
                    "# TYPE legalir_index_version gauge"]
            out += [f"legalir_index_version{lbl(index=name, kind=kind)} {v}" for name, kind, v in numbered]
        counts = self._reloads() if self._reloads is not None else {}
        if counts:
            out += ["# HELP legalir_index_reloads_total New index versions served since the server started.",
                    "# TYPE legalir_index_reloads_total counter"]
            out += [f"legalir_index_reloads_total{lbl(index=name)} {c['reloads']}" for name, c in sorted(counts.items())]
            out += ["# HELP legalir_index_reload_failures_total New index versions that could not be opened (the "
                    "previous one kept being served).",
                    "# TYPE legalir_index_reload_failures_total counter"]
            out += [f"legalir_index_reload_failures_total{lbl(index=name)} {c['failures']}"
                    for name, c in sorted(counts.items())]
        with self._lock:
            out += ["# HELP legalir_requests_total HTTP requests answered, by route, method and status.",
                    "# TYPE legalir_requests_total counter"]
            for (route, method, status), n in sorted(self.requests.items()):
                out.append(f"legalir_requests_total{lbl(route=route, method=method, status=status)} {n}")
            out += ["# HELP legalir_request_errors_total Requests answered with status 400 or above.",
                    "# TYPE legalir_request_errors_total counter"]
            for (route, status), n in sorted(self.errors.items()):
                out.append(f"legalir_request_errors_total{lbl(route=route, status=status)} {n}")
            out += ["# HELP legalir_request_duration_seconds Time from request to the end of the response.",
                    "# TYPE legalir_request_duration_seconds histogram"]
            for route, h in sorted(self.latency.items()):
                for bound, n in zip(LATENCY_BUCKETS, h):
                    out.append(f"legalir_request_duration_seconds_bucket{lbl(route=route, le=repr(bound))} {n:g}")
                count = h[len(LATENCY_BUCKETS)]
                out.append(f"legalir_request_duration_seconds_bucket{lbl(route=route, le='+Inf')} {count:g}")
                out.append(f"legalir_request_duration_seconds_sum{lbl(route=route)} {h[-1]:.6f}")
                out.append(f"legalir_request_duration_seconds_count{lbl(route=route)} {count:g}")
            out += ["# HELP legalir_requests_in_flight Requests being handled now.",
                    "# TYPE legalir_requests_in_flight gauge", f"legalir_requests_in_flight {self.in_flight}",
                    "# HELP legalir_requests_queued Requests waiting for a slot now.",
                    "# TYPE legalir_requests_queued gauge", f"legalir_requests_queued {self.queued}"]
        return "\n".join(out) + "\n"


def _escape(v: str) -> str:
    return str(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Guard:
    """The ASGI middleware enforcing a :class:`Policy` (see the module doc) around ``app``.

    Parameters
    ----------
    app
        The ASGI application (the FastAPI app).
    policy : Policy
        What to enforce.
    routes : sequence, optional
        The app's routes, to name each request's route in logs and metrics (``/doc/{collection}/{docid:path}``,
        not the path itself).
    metrics : Metrics, optional
        Where to count requests.
    """

    def __init__(self, app: Any, policy: Policy, routes: Iterable[Any] = (), metrics: Metrics | None = None):
        self.app = app
        self.policy = policy
        self.routes = list(routes)
        self.metrics = metrics or Metrics()
        self.buckets = TokenBuckets()
        self._slots: asyncio.Semaphore | None = None

    # ---- helpers
    def _route(self, scope: dict) -> str:
        for r in self.routes:
            try:
                match, _ = r.matches(scope)
            except Exception:  # pragma: no cover - a route that cannot match this scope
                continue
            if match == Match.FULL:
                return getattr(r, "path", scope["path"])
        return "unmatched"

    @staticmethod
    def _csp(path: str) -> str:
        if path == "/" or path.startswith("/static/"):
            return _CSP_PAGE
        if path in ("/docs", "/redoc", "/docs/oauth2-redirect"):
            return _CSP_DOCS
        return _CSP_API

    def _check(self, scope: dict, headers: Headers, path: str) -> tuple[int, str, dict] | None:
        """(status, message, headers) of a refusal, or None to go on."""
        p = self.policy
        if p._hosts is not None:
            host = headers.get("host")
            if host is None or _host_name(host) not in p._hosts:
                return 421, (f"Host {host!r} is not a name this server answers to ({', '.join(sorted(p._hosts))}); "
                             f"if it is yours, start the server with --allowed-host {_host_name(host or '?')}"), {}
            origin = headers.get("origin")
            if origin and origin != "null":
                m = re.match(r"^[a-z][a-z0-9+.-]*://(\[[^\]]+\]|[^/:]+)", origin.lower())
                if not m or _host_name(m.group(1)) not in p._hosts:
                    return 403, f"requests from pages of {origin} are not accepted (cross-origin)", {}
        state = scope["state"]
        if p.keys is not None and path not in OPEN_PATHS and not path.startswith("/static/"):
            auth = headers.get("authorization", "")
            scheme, _, token = auth.partition(" ")
            challenge = {"WWW-Authenticate": 'Bearer realm="legalir"'}
            if not auth or scheme.lower() != "bearer" or not token.strip():
                return 401, "this server needs an API key: send it as the header Authorization: Bearer KEY", challenge
            key = p.keys.check(token.strip())
            if key is None:
                return 401, "unknown API key (check the key, or ask for one)", challenge
            state["key_id"], state["api_key"] = key.id, key
            scope_needed = required_scope(path)
            if scope_needed is not None and not key.allows(scope_needed):
                return 403, (f"API key {key.id!r} may not use {path} (it needs scope {scope_needed}; the key has "
                             f"{', '.join(sorted(key.scopes))})"), {}
        key = state.get("api_key")
        rate = (key.rate if key is not None and key.rate else None) or p.rate
        if rate:
            burst = p.burst if rate == p.rate and p.burst else max(1, int(math.ceil(2 * rate)))
            who = f"key:{key.id}" if key is not None else f"addr:{(scope.get('client') or ('?',))[0]}"
            wait = self.buckets.take(who, rate, burst)
            # a route that does more than one query's work takes its other tokens (POST /search/batch)
            state["charge"] = lambda n, who=who, rate=rate, burst=burst: self.buckets.charge(who, n, rate, burst)
            if wait > 0:
                shown = f"{rate:g}/s" if rate >= 1 else f"{rate * 60:g}/min"
                return 429, (f"rate limit of {shown} (bursts of {burst}) reached; retry in {wait:.2f} s"), \
                    {"Retry-After": str(max(1, math.ceil(wait)))}
        length = headers.get("content-length")
        if length is not None:
            try:
                n = int(length)
            except ValueError:
                return 400, f"Content-Length {length!r} is not a number", {}
            if n > p.max_body:
                return 413, (f"request body of {n:,} bytes; at most {p.max_body:,} (split a batch into several "
                             f"requests)"), {"Connection": "close"}
        return None

    # ---- the middleware
    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        headers = Headers(scope=scope)
        given = headers.get("x-request-id")
        rid = given if given and _REQUEST_ID.match(given) else uuid.uuid4().hex
        state = scope.setdefault("state", {})
        state.update(request_id=rid, key_id=None, api_key=None, hits=None, charge=None)
        path = scope["path"]
        route = self._route(scope)
        csp = self._csp(path)
        status = [500]
        started = [False]

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                started[0] = True
                status[0] = message["status"]
                h = MutableHeaders(scope=message)
                h["X-Request-ID"] = rid
                h.setdefault("Content-Security-Policy", csp)
                h["X-Content-Type-Options"] = "nosniff"
                h["X-Frame-Options"] = "DENY"
                h["Referrer-Policy"] = "no-referrer"
            await send(message)

        try:
            refusal = None if path == HEALTH else self._check(scope, headers, path)
            if refusal is not None:
                await self._refuse(scope, receive, send_with_headers, *refusal)
            elif path == HEALTH:
                await self.app(scope, receive, send_with_headers)
            else:
                await self._bounded(scope, self._limited(receive), send_with_headers)
        except BodyTooLarge as e:
            if started[0]:
                raise
            await self._refuse(scope, receive, send_with_headers, 413, e.detail, {"Connection": "close"})
        finally:
            seconds = time.perf_counter() - t0
            self.metrics.observe(route, scope["method"], status[0], seconds)
            if access_log.isEnabledFor(logging.INFO):
                access_log.info(json.dumps({
                    "ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "id": rid,
                    "key": state.get("key_id"), "client": (scope.get("client") or (None,))[0],
                    "method": scope["method"], "route": route, "path": path, "status": status[0],
                    "ms": round(seconds * 1000, 2), "hits": state.get("hits")}))

    def _limited(self, receive: Any) -> Any:
        limit, seen = self.policy.max_body, [0]

        async def receive_limited() -> dict:
            message = await receive()
            if message["type"] == "http.request":
                seen[0] += len(message.get("body", b""))
                if seen[0] > limit:
                    raise BodyTooLarge(limit)
            return message
        return receive_limited

    async def _bounded(self, scope: dict, receive: Any, send: Any) -> None:
        if self._slots is None:  # created here: on the server's event loop
            self._slots = asyncio.Semaphore(self.policy.max_active)
        m = self.metrics
        if self._slots.locked():
            if m.queued >= self.policy.max_queue:
                await self._refuse(scope, receive, send, 503,
                                   f"server busy: {m.queued} requests already waiting; retry shortly",
                                   {"Retry-After": "1"})
                return
        m.queued += 1
        try:
            await self._slots.acquire()
        finally:
            m.queued -= 1
        m.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            m.in_flight -= 1
            self._slots.release()

    @staticmethod
    async def _refuse(scope: dict, receive: Any, send: Any, status: int, message: str, headers: dict) -> None:
        body = json.dumps({"error": message}).encode("utf-8")
        raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        raw += [(k.lower().encode(), str(v).encode()) for k, v in headers.items()]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": body})
