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
   of another host (checked whatever the Host check is: ``--allowed-host '*'``
   does not turn it off), or ``Origin: null`` on a POST, PUT, PATCH or DELETE;
3. with API keys (:mod:`legalir.serve.keys`): is refused (401) without a known
   ``Authorization: Bearer KEY``, (403) when the key lacks the route's scope (the
   one scope table, :data:`legalir.serve.keys.ROUTE_SCOPES`, which MCP reads too);
   failed keys are counted per client address, and an address over
   ``AUTH_FAIL_BURST`` of them (refilled at ``AUTH_FAIL_RATE`` a second) is refused
   (429, ``Retry-After``) whatever key it sends;
4. with a rate limit: is refused (429, ``Retry-After``) when its key (or,
   without keys, its client address) has no token left in its bucket; a
   request takes one token, and a route doing more work takes more once it
   knows how much (``request.state.charge(n)``: ``POST /search/batch`` takes
   one per query, into debt if need be, so a batch of 1,000 queries costs what
   1,000 searches do);
5. is refused (413) when its ``Content-Length`` is over the body limit, before
   any of the body is read; a body sent without a length is counted as it is
   read and cut off at the limit; the whole body is then read within
   ``client_timeout`` (408 and the connection closed beyond), before step 6, so a
   client that sends its body slowly holds a connection, never a slot;
6. waits for one of ``max_active`` slots (a queue, not more threads); refused
   (503, ``Retry-After``) when ``max_queue`` requests are already waiting. Its work
   then gets the time budget of :class:`legalir.serve.app.Workers` (503 beyond).

Before any of this, :func:`legalir.serve.protocol.protocol_class` guards the connections: at most
``max_connections_per_client`` at once per client address (429 and closed beyond),
and ``client_timeout`` to send each request's headers.

``/health`` skips 2 to 6 (load balancers probe it by address, without keys), so it names nothing served;
the page's files and the OpenAPI description (``/``, ``/static/*``,
``/docs``, ``/openapi.json``) skip 3 (they hold no data; the page asks for a
key when the API answers 401). After each request one JSON line goes to the
``legalir.serve.access`` logger (id, key id, client, method, route, status,
latency, hits) and the counters of :class:`legalir.serve.metrics.Metrics` (``GET /metrics``,
Prometheus text format) move.
"""
from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.routing import Match

from legalir.serve import keys as keys_mod
from legalir.serve.config import DEFAULT_MAX_BODY
from legalir.serve.keys import KeyRing
from legalir.serve.limits import TokenBuckets
from legalir.serve.metrics import Metrics

access_log = logging.getLogger("legalir.serve.access")

#: rate limit when API keys are on and --rate-limit is not given: per key, requests per second (burst: twice)
DEFAULT_KEYED_RATE = 20.0
#: failed authentications (an unknown key, a malformed Authorization header) per client address: bursts of
#: AUTH_FAIL_BURST, then AUTH_FAIL_RATE a second; beyond, every request with a key from that address gets 429
AUTH_FAIL_RATE = 1.0
AUTH_FAIL_BURST = 10
#: seconds a client has to send a request's headers, and then its whole body (`legalir serve --client-timeout`)
DEFAULT_CLIENT_TIMEOUT = 15.0
#: connections one client address may hold open at once (`--max-connections-per-client`; 0: no cap)
DEFAULT_MAX_CONNECTIONS_PER_CLIENT = 64
#: methods that change something (or may): an ``Origin: null`` is refused for these
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_ORIGIN = re.compile(r"^[a-z][a-z0-9+.-]{0,30}://(\[[^\]]{1,64}\]|[^/:]{1,255})")
#: paths with no checks but the request id and headers
HEALTH = "/health"

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


class ClientTimeout(Exception):
    """A request body that did not arrive within the client timeout (408)."""


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
    origin_hosts : sequence of str or None
        Host names an ``Origin`` header may carry (the server's own names and ``--allowed-host`` names, never
        ``*``) [default: ``allowed_hosts``]; checked whatever ``allowed_hosts`` is.
    client_timeout : float
        Seconds a client has to send a request's body once its headers are in (408 and the connection closed
        beyond); the body is read before the request takes a worker slot. 0: no limit.
    max_connections_per_client : int
        Connections one client address may hold open at once (0: no cap); enforced by
        :func:`legalir.serve.protocol.protocol_class`, with ``client_timeout`` for the headers.
    """

    keys: KeyRing | None = None
    allowed_hosts: Sequence[str] | None = None
    rate: float | None = None
    burst: int | None = None
    max_body: int = DEFAULT_MAX_BODY
    max_active: int = 8
    max_queue: int = 256
    index_versions: dict[str, dict[str, str]] = field(default_factory=dict)
    origin_hosts: Sequence[str] | None = None
    client_timeout: float = DEFAULT_CLIENT_TIMEOUT
    max_connections_per_client: int = DEFAULT_MAX_CONNECTIONS_PER_CLIENT

    def __post_init__(self) -> None:
        if self.rate is not None and self.burst is None:
            self.burst = max(1, int(math.ceil(2 * self.rate)))
        hosts = None if self.allowed_hosts is None else {_host_name(h) for h in self.allowed_hosts}
        self._hosts = None if hosts is None or "*" in hosts else hosts
        origins = self.origin_hosts if self.origin_hosts is not None else self.allowed_hosts
        # never "any": '*' (a proxy's Host headers) does not let another site's pages in
        self._origins = None if origins is None else {_host_name(h) for h in origins if h.strip() != "*"}


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
        self._route_cache: dict[tuple[str, str], str] = {}

    # ---- helpers
    def _route(self, scope: dict) -> str:
        key = (scope["method"], scope["path"])
        got = self._route_cache.get(key)
        if got is None:
            got = self._match_route(scope)
            if len(self._route_cache) >= 4096:  # paths with ids in them: a bounded cache, emptied when full
                self._route_cache.clear()
            self._route_cache[key] = got
        return got

    def _match_route(self, scope: dict) -> str:
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

    def _check(self, scope: dict, headers: Headers, path: str, route: str) -> tuple[int, str, dict] | None:
        """(status, message, headers) of a refusal, or None to go on."""
        p = self.policy
        if p._hosts is not None:
            host = headers.get("host")
            if host is None or _host_name(host) not in p._hosts:
                return 421, (f"Host {host!r} is not a name this server answers to ({', '.join(sorted(p._hosts))}); "
                             f"if it is yours, start the server with --allowed-host {_host_name(host or '?')}"), {}
        refused = self._origin_refused(headers.get("origin"), scope["method"])
        if refused is not None:
            return 403, refused, {}
        state = scope["state"]
        access = keys_mod.ROUTE_ACCESS.get(route)
        if p.keys is not None and access != keys_mod.OPEN:
            auth = headers.get("authorization", "")
            scheme, _, token = auth.partition(" ")
            challenge = {"WWW-Authenticate": 'Bearer realm="legalir"'}
            if not auth:
                return 401, "this server needs an API key: send it as the header Authorization: Bearer KEY", challenge
            # an address that failed too often is refused before its key is even looked at (else a key
            # guessed right would still show through): bursts of AUTH_FAIL_BURST, then AUTH_FAIL_RATE a second
            addr = f"authfail:{(scope.get('client') or ('?',))[0]}"
            wait = self.buckets.wait(addr, AUTH_FAIL_RATE, AUTH_FAIL_BURST)
            if wait > 0:
                self.metrics.auth_throttled += 1
                return 429, (f"too many failed API keys from this address; retry in {wait:.1f} s"), \
                    {"Retry-After": str(max(1, math.ceil(wait)))}
            key = p.keys.check(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
            if key is None:
                self.buckets.take(addr, AUTH_FAIL_RATE, AUTH_FAIL_BURST)
                if scheme.lower() != "bearer" or not token.strip():
                    return 401, ("this server needs an API key: send it as the header Authorization: Bearer KEY"), \
                        challenge
                return 401, "unknown API key (check the key, or ask for one)", challenge
            state["key_id"], state["api_key"] = key.id, key
            scope_needed = keys_mod.route_scope(route)
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

    def _origin_refused(self, origin: str | None, method: str) -> str | None:
        """Why a request with this ``Origin`` is refused, or None. Browsers send ``Origin`` on cross-origin
        requests and on every POST: it must name one of the server's own hosts (``--allowed-host`` names
        included, whatever ``--allowed-host '*'`` does to the Host check), and ``null`` (a sandboxed frame,
        a ``file:`` page, a redirect across origins) may not change anything."""
        if not origin:
            return None
        if origin.strip() == "null":
            if method in STATE_CHANGING:
                return (f"{method} with Origin: null is not accepted (a sandboxed or file: page); send it from "
                        f"this server's page or without an Origin header")
            return None
        allowed = self.policy._origins
        if allowed is None:
            return None
        m = _ORIGIN.match(origin.lower())
        if not m or _host_name(m.group(1)) not in allowed:
            return (f"requests from pages of {origin} are not accepted (cross-origin); if that site is yours, "
                    f"start the server with --allowed-host {_host_name(m.group(1)) if m else 'NAME'}")
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
            refusal = None if path == HEALTH else self._check(scope, headers, path, route)
            if refusal is not None:
                await self._refuse(scope, receive, send_with_headers, *refusal)
            elif path == HEALTH:
                await self.app(scope, receive, send_with_headers)
            else:
                # the whole body first, within the client timeout, and only then a worker slot: a client that
                # sends its body slowly (or never) holds a connection, not one of the slots
                body_receive = await self._read_body(headers, self._limited(receive), receive)
                await self._bounded(scope, body_receive, send_with_headers)
        except BodyTooLarge as e:
            if started[0]:
                raise
            await self._refuse(scope, receive, send_with_headers, 413, e.detail, {"Connection": "close"})
        except ClientTimeout:
            self.metrics.client_timeouts["body"] += 1
            t = self.policy.client_timeout
            await self._refuse(scope, receive, send_with_headers, 408,
                               f"the request body did not arrive within {t:g} s (--client-timeout); send it at "
                               f"once, or in smaller requests", {"Connection": "close"})
        finally:
            seconds = time.perf_counter() - t0
            self.metrics.observe(route, scope["method"], status[0], seconds)
            if access_log.isEnabledFor(logging.INFO):
                access_log.info(json.dumps({
                    "ts": datetime.now(UTC).isoformat(timespec="milliseconds"), "id": rid,
                    "key": state.get("key_id"), "client": (scope.get("client") or (None,))[0],
                    "method": scope["method"], "route": route, "path": path, "status": status[0],
                    "ms": round(seconds * 1000, 2), "hits": state.get("hits")}))

    async def _read_body(self, headers: Headers, receive: Any, later: Any) -> Any:
        """A ``receive`` replaying the request's whole body, read from ``receive`` within the client timeout
        (:class:`ClientTimeout` beyond); then ``later`` (the server's own: a disconnect). A request without a
        body (no Content-Length, no Transfer-Encoding) is given ``receive`` as it is."""
        length = headers.get("content-length")
        if (length is None or length.strip() == "0") and "transfer-encoding" not in headers:
            return receive
        messages: list[dict] = []

        async def read() -> None:
            while True:
                message = await receive()
                messages.append(message)
                if message["type"] != "http.request" or not message.get("more_body", False):
                    return
        timeout = self.policy.client_timeout
        try:
            if timeout:
                await asyncio.wait_for(read(), timeout)
            else:
                await read()
        except TimeoutError:
            raise ClientTimeout() from None
        if len(messages) > 1 and all(m["type"] == "http.request" for m in messages):
            messages = [{"type": "http.request", "body": b"".join(m.get("body", b"") for m in messages),
                         "more_body": False}]

        async def replay() -> dict:
            return messages.pop(0) if messages else await later()
        return replay

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
