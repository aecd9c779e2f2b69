"""The HTTP layer of `legalir serve`: FastAPI routes over :class:`legalir.serve.engine.Engine`.

Every route parses its request, runs the engine's method on a worker thread
(:class:`Workers`: a fixed pool, so at most ``workers`` searches run at once
and each thread is attached to the JVM once and detached when the server
stops) and returns JSON. Errors are JSON too: ``{"error": "..."}`` with the text the CLI prints after
``error:`` (:func:`legalir.errors.user_message`) and the status of
:func:`legalir.errors.http_status`: 400 (a bad parameter: the core's argument
checks, a malformed run, an unknown measure), 404 (unknown index, partition,
collection, document, run or topic), 501 (a feature whose optional package is
not installed), 503 (an index that cannot be opened now), or 405/413 as HTTP
has them. A 500 is a bug.

The page (``/``) and its script and style sheet are package files read from
``legalir/serve/static``; only those names are served.

Around the routes, :class:`legalir.serve.guard.Guard` checks the Host header,
API keys, rate limit, body size and concurrency, adds ``X-Request-ID`` and
security headers, writes the access log and counts ``/metrics``. The MCP
tools (:mod:`legalir.serve.mcpserver`) answer at ``/mcp``.
"""
import errno
import ipaddress
import json
import logging
import math
import socket
import sys
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

from fastapi import Body, Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from legalir.errors import LegalirError, http_status, user_message
from legalir.serve import config, guard, keys, protocol
from legalir.serve import engine as engine_mod
from legalir.serve import keys as keys_mod
from legalir.serve import metrics as metrics_mod
from legalir.serve.config import ConfigError
from legalir.serve.engine import MAX_BATCH, MAX_K, MAX_QUERY_CHARS, METHODS, Engine, ServeError
from legalir.serve.workers import DEFAULT_REQUEST_TIMEOUT, DEFAULT_WORKERS, OverBudget, Refused, Workers  # noqa: F401
from legalir.version import __version__

try:  # the serve extra's JSON writer; json_bytes falls back to json without it
    import orjson
    _ORJSON = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
except ImportError:  # pragma: no cover - an install without the serve extra's orjson
    orjson = None

_log = logging.getLogger(__name__)

#: the page's files, by URL name -> (package file, media type)
STATIC = {
    "index.html": ("index.html", "text/html; charset=utf-8"),
    "app.js": ("app.js", "text/javascript; charset=utf-8"),
    "style.css": ("style.css", "text/css; charset=utf-8"),
}
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


class BatchQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a field the server does not know is refused, never ignored

    q: str | None = Field(None, description="Query text.")
    query: str | None = Field(None, description="Query text (instead of q).")
    id: str | None = Field(None, description="Echoed back [default: the position].")
    partition: str | None = None


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    queries: list[BatchQuery] = Field(description=f"At most {MAX_BATCH} queries.")
    index: str | None = None
    k: int = 10
    method: str | None = None
    filter: str | None = Field(None, description="Metadata filter (BM25), applied to every query: "
                                                    "FIELD=VALUE[,VALUE][;FIELD=...].")
    citations: str | None = Field(None, description="on / off [default: on where the index has the field].")
    as_of: str | None = Field(None, description="A release the index keeps (e.g. 85), or a date YYYY-MM-DD (the "
                                                   "newest release dated on or before it): the code as it stood then "
                                                   "[default: the current].")


def _jsonable(o: Any) -> Any:
    """What ``json`` cannot write itself (a numpy number, a set, a path, a model), as FastAPI would write it."""
    from fastapi.encoders import jsonable_encoder

    return jsonable_encoder(o)


def json_bytes(obj: Any) -> bytes:
    """``obj`` as JSON bytes: UTF-8, compact, no NaN or infinity (``ValueError``, as ``json.dumps(allow_nan=False)``
    raises), what ``json`` cannot write itself through FastAPI's ``jsonable_encoder``.

    Written by orjson (Rust, the ``serve`` extra) where it is installed: a page of hits in about a tenth of the C
    ``json`` encoder's time (docs/serving.md, the profile). orjson writes NaN and infinity as ``null`` without a
    word, so a body holding ``null`` is written by orjson only when :func:`_plain_and_finite` proves that ``obj``
    holds no such number; else (a NaN, a type orjson or the check does not know, an integer over 64 bits) by
    ``json.dumps(allow_nan=False)``, which refuses NaN: a number a user reads is never turned into a missing
    value. Without orjson, ``json.dumps`` writes every body. Both write the same JSON values."""
    if orjson is not None:
        try:
            body = orjson.dumps(obj, default=_jsonable, option=_ORJSON)
        except (orjson.JSONEncodeError, TypeError):
            body = None
        if body is not None and (b"null" not in body or _plain_and_finite(obj)):
            return body
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                      default=_jsonable).encode("utf-8")


def _plain_and_finite(obj: Any) -> bool:
    """Whether ``obj`` is made of dicts, lists, tuples, strings, integers, booleans, None and finite floats only (a
    loop over its values, no recursion): False for a NaN or an infinity, and for any other type (a numpy number,
    an object FastAPI's encoder writes), which :func:`json_bytes` leaves to ``json``."""
    isfinite, todo = math.isfinite, [obj]
    while todo:
        o = todo.pop()
        t = type(o)
        if t is str or t is int or o is None or t is bool:
            continue
        if t is float:
            if not isfinite(o):
                return False
        elif t is dict:
            todo.extend(o.values())
        elif t is list or t is tuple:
            todo.extend(o)
        else:
            return False
    return True


def json_response(obj: Any, status: int = 200) -> Response:
    """``obj`` as a JSON response (:func:`json_bytes`), as ``JSONResponse`` writes it (UTF-8, no NaN, compact). A
    route that returns a plain dict goes through FastAPI's ``jsonable_encoder`` first, a Python walk over every
    value: for a page of hits it cost more than the encoding itself (docs/serving.md, the profile)."""
    return Response(json_bytes(obj), status_code=status, media_type="application/json")


def _arguments(operation: str, path: dict[str, str] | None = None, body: bool = False) -> Any:
    """A route's arguments, checked against the one table (:func:`legalir.serve.engine.arguments`, as the MCP
    tools' are) before FastAPI parses any: the query string's names and values, the path's (``path``: a path
    parameter's name in the table, where it differs) and, with ``body``, a JSON object body's fields. An unknown
    name, a name given twice, a missing or mistyped value is a 400 in the words the MCP tool error has.

    Returns
    -------
    fastapi.params.Depends
        The dependency, whose value is the checked arguments under their own names.
    """
    async def check(request: Request) -> dict[str, Any]:
        given: dict[str, Any] = {}
        for name in request.query_params:
            values = request.query_params.getlist(name)
            if len(values) > 1:
                raise ServeError(f"{operation}: {name!r} is given {len(values)} times; give it once")
            given[name] = values[0]
        if body:
            data = await request.json()  # the body FastAPI read (valid JSON: it refused any other already)
            if isinstance(data, dict):
                for name, value in data.items():
                    if name in given:
                        raise ServeError(f"{operation}: {name!r} is given twice (in the query string and the body); "
                                         f"give it once")
                    given[name] = value
        for name, value in request.path_params.items():
            given[(path or {}).get(name, name)] = value
        return engine_mod.arguments(operation, given)

    check.operation = operation
    return Depends(check)


def static_file(name: str) -> bytes:
    return resources.files("legalir.serve").joinpath("static", STATIC[name][0]).read_bytes()


def _offline_docs(app) -> None:
    """``/docs`` from Swagger UI's files shipped in a Python package (``fastapi-offline``'s copy of Swagger UI 5),
    not a CDN: the page works on a machine without internet, as the rest of legalir does."""
    from importlib import resources

    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles

    app.mount("/static/swagger", StaticFiles(directory=str(resources.files("fastapi_offline") / "static")),
              name="swagger")

    @app.get("/docs", include_in_schema=False)
    async def docs():
        return get_swagger_ui_html(openapi_url=app.openapi_url, title="legalir API",
                                   swagger_js_url="/static/swagger/swagger-ui-bundle.js",
                                   swagger_css_url="/static/swagger/swagger-ui.css", swagger_favicon_url="data:,")


def create_app(engine: Engine, workers: Workers | None = None, *, policy: guard.Policy | None = None,
               mcp: bool = True) -> FastAPI:
    """The FastAPI application serving ``engine``.

    Parameters
    ----------
    engine : Engine
        What is served.
    workers : Workers, optional
        The thread pool for the engine's blocking work [default: a new one].
    policy : legalir.serve.guard.Policy, optional
        Host check, API keys, rate limit, body limit and concurrency bound [default: no keys, no rate
        limit, loopback host names only].
    mcp : bool
        Also answer the MCP tools at ``/mcp`` (needs the ``mcp`` package).

    Returns
    -------
    FastAPI
        The app; :class:`legalir.serve.guard.Guard` wraps its whole middleware stack.
    """
    pool = workers or Workers(budget=DEFAULT_REQUEST_TIMEOUT)
    policy = policy or guard.Policy(allowed_hosts=loopback_names(DEFAULT_HOST), max_active=4 * pool.n)
    metrics = metrics_mod.Metrics(index_versions=engine.index_versions, version=__version__, reloads=engine.reload_counts)
    metrics.abandoned, metrics.over_budget = (lambda: pool.abandoned), (lambda: pool.over_budget)
    mcp_endpoint, mcp_manager = _mcp(engine, pool, policy) if mcp else (None, None)
    app = FastAPI(title="legalir", version=__version__, lifespan=_lifespan(engine, pool, mcp_manager), docs_url=None,
                  redoc_url=None, description=_description(policy, pool))
    _offline_docs(app)
    if policy.keys is not None:
        _bearer_in_openapi(app)
    _wire_guard(app, policy, metrics)
    _error_handlers(app, policy)
    _page_routes(app)
    _service_routes(app, engine, metrics)
    _search_routes(app, engine, pool)
    _run_routes(app, engine, pool)
    if mcp_endpoint is not None:
        from starlette.routing import Route

        app.router.routes.append(Route("/mcp", endpoint=mcp_endpoint, include_in_schema=False))
    keys.check_table([getattr(r, "path", "") for r in app.router.routes], ())  # every route has its scope
    _check_routes(app)
    return app


def _mcp(engine: Engine, pool: Workers, policy: guard.Policy) -> tuple[Any, Any]:
    """The MCP tools' ASGI endpoint and its session manager (:mod:`legalir.serve.mcpserver`)."""
    from legalir.serve import mcpserver

    return mcpserver.http_endpoint(mcpserver.create(engine, pool, keys_required=policy.keys is not None),
                                   policy.max_body)


def _lifespan(engine: Engine, pool: Workers, mcp_manager: Any):
    """The app's lifespan: reloading indexes (and the MCP sessions) while it serves; then the pool and the
    engine closed."""

    @asynccontextmanager
    async def lifespan(app):
        engine.start_reloading()  # new versions of the indexes are served as they are published
        async with (mcp_manager.run() if mcp_manager is not None else _nothing()):
            yield
        engine.stop_reloading()
        pool.shutdown()
        engine.close()

    return lifespan


def _description(policy: guard.Policy, pool: Workers) -> str:
    """The API's description in /docs: its limits, keys and rate limit."""
    auth = ("Send an API key as `Authorization: Bearer KEY` (401 without one, 403 when the key lacks the "
            "route's scope: `search` for search, documents, indexes and collections, `runs` for the run "
            "explorer, `metrics` for /metrics). " if policy.keys is not None else "")
    rate = (f"Each key (or client address) may send {policy.rate:g} requests/s, bursts of {policy.burst}; "
            f"beyond that 429 with Retry-After. " if policy.rate else "")
    return ("Search legalir's Lucene and FAISS indexes (BM25, dense, hybrid; per partition), "
            "read documents, and explore scored runs topic by topic. Errors are "
            '`{"error": "..."}` with status 400 or 404.\n\n'
            f"**Limits.** A request body is at most {policy.max_body:,} bytes (413 beyond, "
            f"refused on its Content-Length before it is read); a query at most "
            f"{MAX_QUERY_CHARS:,} characters; k at most {MAX_K:,}; a batch at most "
            f"{MAX_BATCH:,} queries. {policy.max_active} requests are handled at once, "
            f"{policy.max_queue} more wait (503 with Retry-After beyond). "
            + (f"A request's body must arrive within {policy.client_timeout:g} s (408 beyond). "
               if policy.client_timeout else "")
            + (f"A request's work may take {pool.budget:g} s (503 with Retry-After beyond). "
               if pool.budget else "") + rate + auth +
            "Every response carries `X-Request-ID` (the client's own when it sends one). "
            "`GET /metrics`: Prometheus text. MCP tools (search, get_document, list_indexes, "
            "evaluate, fuse): streamable HTTP at `/mcp`.")


def _wire_guard(app: FastAPI, policy: guard.Policy, metrics: metrics_mod.Metrics) -> None:
    """:class:`legalir.serve.guard.Guard` around the whole middleware stack (FastAPI's own error middleware
    included), and the policy and metrics on ``app.state``."""
    build_stack = app.build_middleware_stack
    app.build_middleware_stack = lambda: guard.Guard(build_stack(), policy, routes=app.router.routes,
                                                     metrics=metrics)
    app.state.metrics, app.state.policy = metrics, policy


def _error_handlers(app: FastAPI, policy: guard.Policy) -> None:
    """Every error as ``{"error": ...}`` with its status (:mod:`legalir.errors`' one translation)."""

    @app.exception_handler(Exception)
    async def unexpected(request: Request, e: Exception):
        # the one translation (legalir.errors): what the CLI prints as `error: ...`, with its HTTP status
        # (a missing optional package 501, a Lucene index that cannot be opened 503, other input 400);
        # anything else is a bug: 500, with the details in the server log only
        status = http_status(e)
        if status is not None:
            return JSONResponse({"error": user_message(e)}, status_code=status)
        rid = request.scope.get("state", {}).get("request_id")
        _log.error(f"request {rid} ({request.method} {request.url.path}) failed", exc_info=e)
        return JSONResponse({"error": f"internal error (request id {rid}); the server log has the details"},
                            status_code=500)

    @app.exception_handler(LegalirError)
    async def input_error(request: Request, e: LegalirError):  # ServeError too: its own status (404, 503, ...)
        status = http_status(e)
        return JSONResponse({"error": user_message(e)}, status_code=status,
                            headers={"Retry-After": "1"} if status == 503 else None)  # OverBudget, a busy index

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, e: RequestValidationError):
        parts = []
        for err in e.errors():
            loc = ".".join(str(x) for x in err.get("loc", ()) if x not in ("query", "body", "path"))
            parts.append(f"{loc or 'request'}: {err.get('msg', 'invalid')}")
        return JSONResponse({"error": "; ".join(parts)}, status_code=400)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, e: HTTPException):
        message = (f"no such endpoint: {request.method} {request.url.path} (see /docs)" if e.status_code == 404
                   else str(e.detail))
        if e.status_code == 413 and not isinstance(e, guard.BodyTooLarge):
            message = f"request body too large; at most {policy.max_body:,} bytes"
        return JSONResponse({"error": message}, status_code=e.status_code, headers=getattr(e, "headers", None))


def _page_routes(app: FastAPI) -> None:
    """The page (``/``) and its script and style sheet."""

    @app.get("/", include_in_schema=False)
    async def page():
        return Response(static_file("index.html"), media_type=STATIC["index.html"][1])

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str):
        if name not in STATIC:
            return JSONResponse({"error": f"no static file {name!r}"}, status_code=404)
        return Response(static_file(name), media_type=STATIC[name][1], headers={"Cache-Control": "no-cache"})


def _service_routes(app: FastAPI, engine: Engine, metrics: metrics_mod.Metrics) -> None:
    """``/health``, ``/metrics``, ``/indexes``, ``/collections``."""

    @app.get("/health", summary="Status and version (no key, no rate limit, any Host: for load balancers; "
                                "names nothing served)")
    async def health():
        return engine.health()

    @app.get("/metrics", summary="Prometheus metrics (text format): requests, latencies, errors, index versions "
                                 "served and reloads",
             response_class=PlainTextResponse)
    async def metrics_(_: dict = _arguments("metrics")):
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get("/indexes", summary="Indexes: methods, partitions, collection, version served")
    async def indexes(_: dict = _arguments("list_indexes")):
        return json_response(engine.list_indexes())

    @app.get("/collections", summary="Collections: dataset, partitions, documents")
    async def collections_(_: dict = _arguments("list_collections")):
        return json_response(engine.list_collections())


def _search_routes(app: FastAPI, engine: Engine, pool: Workers) -> None:
    """``/search``, ``/search/batch``, ``/doc/{collection}/{id}``, ``/history``."""

    # its query string is checked once, against the one table (_arguments), and described to /docs only: FastAPI
    # declarations would parse and validate every value a second time, on the hottest route
    @app.get("/search", summary="Search one index", openapi_extra=_query_docs(
        q=("string", True, "Query text (or query=)."),
        index=("string", False, "Index name [default: the only one]."),
        k=("integer", False, f"Hits to return, 1 to {MAX_K} [default: 10]."),
        method=("string", False, f"One of {', '.join(METHODS)} [default: the index's first]."),
        partition=("string", False, "Partition (e.g. jurisdiction) of a partitioned index."),
        filter=("string", False, "Metadata filter (BM25): FIELD=VALUE[,VALUE] joined by ';', e.g. "
                                 "state=california,nevada."),
        citations=("string", False, "on / off: rank the authority a query cites first [default: on where indexed]."),
        as_of=("string", False, "A release the index keeps (e.g. 85), or a date YYYY-MM-DD (the newest release "
                                "dated on or before it): search the code as it stood then [default: current].")))
    async def search(request: Request, args: dict = _arguments("search")):
        # the checked arguments
        a = {"k": 10, **args}
        res = await pool.call(engine.search, _index_name(engine, a.get("index")), a["query"], k=a["k"],
                              method=a.get("method"), partition=a.get("partition"), filter=a.get("filter"),
                              citations=a.get("citations"), as_of=a.get("as_of"))
        request.state.hits = len(res["hits"])
        return json_response(res)

    _direct(app, "/search", "GET", search)

    @app.post("/search/batch", summary="Search many queries at once")
    async def search_batch(request: Request, args: dict = _arguments("search_batch", body=True),
                           req: BatchRequest = Body(...)):
        charge = getattr(request.state, "charge", None)
        if charge is not None:  # the rate limit counts queries: the request took one token, each other query one more
            charge(len(req.queries) - 1)
        a = {"k": 10, **args}
        items = [(x["id"] if x.get("id") is not None else str(i), x["query"], x.get("partition"))
                 for i, x in enumerate(a["queries"])]
        results = await pool.call(engine.search_many, _index_name(engine, a.get("index")), items, k=a["k"],
                                  method=a.get("method"), filter=a.get("filter"), citations=a.get("citations"),
                                  as_of=a.get("as_of"))
        request.state.hits = sum(len(r["hits"]) for r in results)
        return json_response({"results": results})

    @app.get("/doc/{collection}/{docid:path}", summary="One document, whole")
    async def document(collection: str, docid: str, args: dict = _arguments("get_document", {"docid": "id"}),
                       q: str | None = Query(None, description="Query whose terms to list for highlighting."),
                       as_of: str | None = Query(None, description="A release an index of the collection keeps, "
                                                                       "or a date YYYY-MM-DD: the document as it "
                                                                       "stood then.")):
        return json_response(await pool.call(engine.document, args["collection"], args["id"], args.get("q"),
                                             args.get("as_of")))

    @app.get("/history", summary="One section in each release the index keeps: release, date, status, text hash, "
                                 "whether it changed (legalir.Searcher.history)")
    async def history(args: dict = _arguments("history"),
                      id: str = Query(..., description="The section: a document id, or a citation as a lawyer "
                                                       "writes it (O.C.G.A. § 8-2-1)."),
                      index: str | None = Query(None, description="Index name [default: the only one]."),
                      partition: str | None = Query(None, description="Partition of a partitioned index.")):
        return json_response(await pool.call(engine.history, _index_name(engine, args.get("index")), args["id"],
                                             args.get("partition")))


def _run_routes(app: FastAPI, engine: Engine, pool: Workers) -> None:
    """The run explorer: ``/runs``, a run's topics, one topic's ranking, ``/runs/evaluate``."""

    @app.get("/runs", summary="Runs with their overall scores")
    async def runs(_: dict = _arguments("list_runs")):
        return json_response(engine.list_runs())

    @app.get("/runs/{run}/topics", summary="A run's topics with their per-topic measures")
    async def run_topics(run: str, _: dict = _arguments("run_topics")):
        return json_response(await pool.call(engine.run_topics, run))

    # {qid:path}: a topic id may hold "/" (sent percent-encoded, as the page does: encodeURIComponent)
    @app.get("/runs/{run}/topics/{qid:path}", summary="A run's ranking for one topic, with qrels labels and gold "
                                                      "documents (the topic id percent-encoded: / as %2F)")
    async def run_topic(run: str, qid: str, args: dict = _arguments("run_topic"),
                        compare: str | None = Query(None, description="Another run whose ranks to add."),
                        k: int = Query(20, description="Ranked documents to return.")):
        return json_response(await pool.call(engine.run_topic, run, qid, compare=args.get("compare"),
                                             k=args.get("k", 20)))

    @app.post("/runs/evaluate", summary="Score a served run, or a run sent as TREC or CRUMB JSONL text, against "
                                        "served qrels (legalir.evaluate; the MCP evaluate tool)")
    async def evaluate(request: Request, args: dict = _arguments("evaluate", body=True),
                       body: Any = Body(..., examples=[{"run": "bm25", "measures": ["nDCG@10"]}])):
        # the body's fields are checked by the core (legalir.base.checks), so a bad value gets the words the Python
        # API, the CLI and the MCP tool give it
        if not isinstance(body, dict):
            raise ServeError(f"the body must be a JSON object {{\"run\" or \"run_text\", \"qrels\", \"measures\", "
                             f"\"judged_only\", \"per_topic\"}}, not {type(body).__name__}")
        return await pool.call(engine.evaluate, args.get("run"), args.get("run_text"), qrels=args.get("qrels"),
                               measures=args.get("measures"), judged_only=args.get("judged_only"),
                               per_topic=args.get("per_topic", False))


def _direct(app: FastAPI, path: str, method: str, endpoint: Any) -> None:
    """Call the route's ``endpoint(request, args)`` with its one argument check (:func:`_arguments`) and nothing
    else of FastAPI's per-request machinery: the route as declared stays (its matching, its /docs entry,
    :func:`_check_routes`, FastAPI's exception handlers), but its handler no longer goes through
    ``solve_dependencies`` and ``run_endpoint_function``, whose Python cost on the hottest route was larger than
    the check itself (docs/serving.md, the profile). Only for a route whose endpoint takes ``request`` and the
    checked ``args`` alone, and answers a :class:`Response` (nothing for FastAPI to serialise)."""
    from fastapi.routing import APIRoute, request_response

    route = next(r for r in app.router.routes if isinstance(r, APIRoute) and r.path == path and method in r.methods)
    (dep,) = route.dependant.dependencies
    check = dep.call
    names = [p.name for p in route.dependant.query_params + route.dependant.body_params + route.dependant.path_params]
    if (names or route.dependant.request_param_name != "request" or not hasattr(check, "operation")
            or getattr(route, "max_body_size", None) is not None):
        raise RuntimeError(f"route {method} {path} takes more than the request and its checked arguments: {names}")

    async def handler(request: Request) -> Response:
        return await endpoint(request, await check(request))

    route.app = request_response(handler)


def _query_docs(**params: tuple[str, bool, str]) -> dict:
    """OpenAPI ``parameters`` of a route's query string (``name=(type, required, description)``), for /docs: a
    route that checks its query string against the one table alone (:func:`_arguments`) declares it here."""
    return {"parameters": [{"name": name, "in": "query", "required": required, "description": text,
                            "schema": {"type": kind}} for name, (kind, required, text) in params.items()]}


#: API routes that take whatever they are sent: /health answers load balancers, which may add a name of their own
UNCHECKED = {"/health"}


def _check_routes(app: FastAPI) -> None:
    """Every API route checks its arguments against the one table (:func:`_arguments`), and declares (for /docs)
    no argument the table does not know: a route added without its table entry fails here, at start-up."""
    from fastapi.routing import APIRoute

    for route in app.router.routes:
        if not isinstance(route, APIRoute) or not route.include_in_schema or route.path in UNCHECKED:
            continue
        ops = [d.call.operation for d in route.dependant.dependencies if hasattr(d.call, "operation")]
        if len(ops) != 1:
            raise RuntimeError(f"route {route.path} does not check its arguments against legalir.serve.engine.ARGUMENTS")
        table = engine_mod.ARGUMENTS[ops[0]]
        names = set(table) | {a for p in table.values() for a in p.aliases}
        declared = {p.alias for p in route.dependant.query_params}
        declared |= {p["name"] for p in (route.openapi_extra or {}).get("parameters", [])}  # described only
        for f in route.dependant.body_params:  # a model's fields (a body of Any: the table alone says)
            declared |= set(getattr(f.field_info.annotation, "model_fields", {}))
        if declared - names:
            raise RuntimeError(f"route {route.path} declares {sorted(declared - names)}, which "
                               f"legalir.serve.engine.ARGUMENTS[{ops[0]!r}] does not take")


@asynccontextmanager
async def _nothing():
    yield


def _bearer_in_openapi(app: FastAPI) -> None:
    """Say in the OpenAPI description (and so in /docs' Authorize button) that routes take a Bearer key."""
    from fastapi.openapi.utils import get_openapi

    def openapi():
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            schema.setdefault("components", {})["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer", "description": "an API key (--api-keys)"}}
            schema["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi


def _index_name(engine: Engine, index: str | None) -> str:
    if index:
        return index
    if len(engine.indexes) == 1:
        return next(iter(engine.indexes))
    raise ServeError(f"give index=, one of: {', '.join(engine.indexes) or 'none (start with --index)'}")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) is only reachable from this machine."""
    h = host.strip().strip("[]")
    if h.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(h, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback for i in infos)


def is_wildcard(host: str) -> bool:
    """Whether ``host`` means every interface (``0.0.0.0``, ``::``, empty)."""
    h = host.strip().strip("[]")
    if not h:
        return True
    try:
        return ipaddress.ip_address(h).is_unspecified
    except ValueError:
        return False


def loopback_names(host: str) -> list[str]:
    """Host names a server bound to ``host`` answers to by default (see :func:`allowed_hosts`)."""
    return sorted({"localhost", "127.0.0.1", "::1", host.strip().strip("[]").lower()})


def allowed_hosts(host: str, extra: tuple[str, ...] = ()) -> list[str]:
    """The ``Host`` header names accepted by default: the bound address and its names (for a wildcard
    address: loopback and this machine's name and addresses), plus ``extra`` (``--allowed-host``)."""
    names = set(loopback_names(host)) if is_loopback(host) else {host.strip().strip("[]").lower()}
    if is_wildcard(host) or not is_loopback(host):
        me = {socket.gethostname(), socket.getfqdn()}
        names |= {n.lower() for n in me if n}
        for n in me:
            try:
                names |= {i[4][0].split("%")[0] for i in socket.getaddrinfo(n, None)}
            except OSError:
                pass
    if is_wildcard(host):
        names |= set(loopback_names(host))
        names.discard(host.strip().strip("[]").lower())
    return sorted(names | {e.strip().lower() for e in extra if e.strip()})


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (0: a free port), or a :class:`ServeError` saying why not."""
    if not 0 <= port <= 65535:
        raise ServeError(f"port must be from 0 to 65535, got {port}")
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise ServeError(f"cannot listen on {host!r}: not an address or a name this machine resolves ({e.strerror}); "
                         f"give --host 127.0.0.1 (this machine only) or one of its addresses") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # not a second listener: only TIME_WAIT reuse
        if family == socket.AF_INET6 and is_wildcard(host):
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
    except OSError as e:
        sock.close()
        where = f"{host}:{port}"
        if e.errno == errno.EADDRINUSE:
            raise ServeError(f"cannot listen on {where}: the port is in use (another legalir serve?); stop that "
                             f"server or give another --port (0: any free port)") from None
        if e.errno == errno.EADDRNOTAVAIL:
            raise ServeError(f"cannot listen on {where}: {host} is not an address of this machine") from None
        if e.errno == errno.EACCES:
            raise ServeError(f"cannot listen on {where}: permission denied (ports below 1024 need privileges); "
                             f"give --port 8000") from None
        raise ServeError(f"cannot listen on {where}: {e.strerror or e}") from None
    sock.set_inheritable(True)
    return sock


def run(engine: Engine, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, workers: int = DEFAULT_WORKERS,
        log_level: str = "warning", *, policy: guard.Policy | None = None,
        sock: socket.socket | None = None, mcp: bool = True,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT) -> None:
    """Serve ``engine`` until interrupted, on ``sock`` (else a socket bound to ``host``:``port`` now).

    ``request_timeout``: seconds one request's work may take (503 beyond; 0 or None: no limit).
    """
    import uvicorn

    sock = sock or bind(host, port)
    policy = policy or guard.Policy(allowed_hosts=allowed_hosts(host), max_active=4 * workers)
    app = create_app(engine, Workers(workers, budget=request_timeout), policy=policy, mcp=mcp)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    if is_wildcard(host):
        _log.warning(f"serve: listening on every network interface ({host}); anyone who can reach this machine "
                     f"on port {bound_port} can connect" + (" (API keys required)" if policy.keys else ""))
    print(f"legalir serve: http://{shown}:{bound_port}/  (API docs: http://{shown}:{bound_port}/docs; "
          f"MCP: http://{shown}:{bound_port}/mcp)", file=sys.stderr, flush=True)
    # h11 with the connection guards (per-client cap, header deadline); the body deadline is the Guard's
    config = uvicorn.Config(app, log_level=log_level, access_log=False,
                            http=protocol.protocol_class(policy, app.state.metrics))
    uvicorn.Server(config).run(sockets=[sock])


def make_policy(host: str, workers: int, *, api_keys: str | None = None, insecure_no_auth: bool = False,
                allowed: tuple[str, ...] = (), rate_limit: str | None = None, max_body: int = guard.DEFAULT_MAX_BODY,
                max_queue: int = 256, env: dict | None = None,
                client_timeout: float = guard.DEFAULT_CLIENT_TIMEOUT,
                max_connections_per_client: int = guard.DEFAULT_MAX_CONNECTIONS_PER_CLIENT) -> guard.Policy:
    """The :class:`~legalir.serve.guard.Policy` of `legalir serve`'s options; refuses a non-loopback address
    without API keys (unless ``insecure_no_auth``)."""

    ring = keys_mod.load(api_keys, env)
    if ring is not None and insecure_no_auth:
        raise ConfigError("--insecure-no-auth and API keys (--api-keys or $LEGALIR_API_KEYS) contradict each other; "
                          "give one")
    if ring is None and not insecure_no_auth and not is_loopback(host):
        what = "every network interface" if is_wildcard(host) else f"{host}, which other machines can reach"
        raise ConfigError(f"--host {host} listens on {what}, and no API keys are set: anyone who can reach this "
                          f"machine could use the server. Give --api-keys FILE (or set {keys_mod.ENV}), or "
                          f"--insecure-no-auth to serve without keys anyway (e.g. behind an authenticating proxy)")
    rate = keys_mod.parse_rate(rate_limit) if rate_limit is not None else (
        guard.DEFAULT_KEYED_RATE if ring is not None else None)
    if max_body < 1:
        raise ConfigError(f"--max-body must be at least 1 byte, got {max_body}")
    if client_timeout < 0:
        raise ConfigError(f"--client-timeout must be 0 (none) or more seconds, got {client_timeout:g}")
    if max_connections_per_client < 0:
        raise ConfigError(f"--max-connections-per-client must be 0 (no cap) or more, got {max_connections_per_client}")
    named = tuple(a for a in allowed if a.strip() != "*")
    # '*' turns the Host check off (a proxy's names), never the Origin check: the server's names and the
    # --allowed-host names stay the only origins whose pages may call it
    return guard.Policy(keys=ring, allowed_hosts=None if "*" in allowed else allowed_hosts(host, allowed),
                        origin_hosts=allowed_hosts(host, named), rate=rate, max_body=max_body,
                        max_active=4 * workers, max_queue=max_queue, client_timeout=client_timeout,
                        max_connections_per_client=max_connections_per_client)


def serve(indexes=(), collections=(), runs=(), qrels=(), config_file: str | None = None,
          host: str | None = None, port: int | None = None, workers: int = DEFAULT_WORKERS,
          log_level: str = "warning", api_keys: str | None = None, insecure_no_auth: bool = False,
          allowed: tuple[str, ...] = (), rate_limit: str | None = None, max_body: int = guard.DEFAULT_MAX_BODY,
          max_queue: int = 256, mcp: bool = True, client_timeout: float = guard.DEFAULT_CLIENT_TIMEOUT,
          max_connections_per_client: int = guard.DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
          request_timeout: float = DEFAULT_REQUEST_TIMEOUT, **engine_options: Any) -> None:
    """`legalir serve`: read the configuration and keys, bind the port, load, serve.

    The port is bound before anything is loaded, so a busy port (or a refused address) is reported
    at once, alone.
    """

    cfg = config.gather(indexes, collections, runs, qrels, config_file)
    if cfg.empty():
        raise ConfigError("nothing to serve: give at least one --index, --collection or --run")
    host = host or cfg.host or DEFAULT_HOST
    port = port if port is not None else (cfg.port or DEFAULT_PORT)
    policy = make_policy(host, workers, api_keys=api_keys, insecure_no_auth=insecure_no_auth, allowed=allowed,
                         rate_limit=rate_limit, max_body=max_body, max_queue=max_queue, client_timeout=client_timeout,
                         max_connections_per_client=max_connections_per_client)
    if request_timeout < 0:
        raise ConfigError(f"--request-timeout must be 0 (none) or more seconds, got {request_timeout:g}")
    if mcp:
        try:
            import mcp as _  # noqa: F401
        except ImportError:
            raise ConfigError("/mcp needs the mcp package: pip install 'legalir[serve]' (or give --no-mcp)") from None
    sock = bind(host, port)
    try:
        eng = engine_mod.build(cfg, **engine_options)
    except BaseException:
        sock.close()
        raise
    run(eng, host=host, port=port, workers=workers, log_level=log_level, policy=policy, sock=sock, mcp=mcp,
        request_timeout=request_timeout)
