"""The HTTP layer of `legalir serve`: FastAPI routes over :class:`legalir.serve.engine.Engine`.

Every route parses its request, runs the engine's method on a worker thread
(:class:`Workers`: a fixed pool, so at most ``workers`` searches run at once
and each thread is attached to the JVM once and detached when the server
stops) and returns JSON. Errors are JSON too: ``{"error": "..."}`` with 400
(bad parameter), 404 (unknown index, partition, collection, document, run or
topic) or 405/422 as HTTP has them.

The page (``/``) and its script and style sheet are package files read from
``legalir/serve/static``; only those names are served.
"""
import asyncio
import concurrent.futures
import os
import queue
import sys
import threading
from importlib import resources
from contextlib import asynccontextmanager
from typing import Any, Callable, Optional

from fastapi import Body, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from legalir import __version__
from legalir.errors import LegalirError
from legalir.serve.engine import MAX_BATCH, MAX_K, METHODS, Engine, ServeError

#: the page's files, by URL name -> (package file, media type)
STATIC = {
    "index.html": ("index.html", "text/html; charset=utf-8"),
    "app.js": ("app.js", "text/javascript; charset=utf-8"),
    "style.css": ("style.css", "text/css; charset=utf-8"),
}
DEFAULT_WORKERS = max(2, min(8, os.cpu_count() or 2))
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


class Workers:
    """A fixed pool of threads for the engine's blocking work (Lucene, FAISS, torch, file reads).

    Threads that called Java are detached from the JVM (``jnius.detach``)
    before they end, as pyjnius asks of every thread that used it.
    """

    def __init__(self, n: int = DEFAULT_WORKERS) -> None:
        if n < 1:
            raise ValueError(f"workers must be at least 1, got {n}")
        self.n = n
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._loop, name=f"legalir-serve-{i}", daemon=True)
                         for i in range(n)]
        for t in self._threads:
            t.start()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                break
            fut, fn, args, kwargs = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as e:  # handed to the awaiting request
                fut.set_exception(e)
        if "jnius" in sys.modules:
            try:
                sys.modules["jnius"].detach()
            except Exception:  # pragma: no cover - a thread that never touched Java
                pass

    def submit(self, fn: Callable, *args: Any, **kwargs: Any) -> "concurrent.futures.Future":
        fut: concurrent.futures.Future = concurrent.futures.Future()
        self._queue.put((fut, fn, args, kwargs))
        return fut

    async def call(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.wrap_future(self.submit(fn, *args, **kwargs))

    def shutdown(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            t.join(timeout=30)


class BatchQuery(BaseModel):
    q: str = Field(description="Query text.")
    id: Optional[str] = Field(None, description="Echoed back [default: the position].")
    partition: Optional[str] = None


class BatchRequest(BaseModel):
    queries: list[BatchQuery] = Field(description=f"At most {MAX_BATCH} queries.")
    index: Optional[str] = None
    k: int = 10
    method: Optional[str] = None


def static_file(name: str) -> bytes:
    return resources.files("legalir.serve").joinpath("static", STATIC[name][0]).read_bytes()


def create_app(engine: Engine, workers: Optional[Workers] = None) -> FastAPI:
    """The FastAPI application serving ``engine``."""
    pool = workers or Workers()

    @asynccontextmanager
    async def lifespan(app):
        yield
        pool.shutdown()
        engine.close()

    app = FastAPI(title="legalir", version=__version__, lifespan=lifespan,
                  description="Search legalir's Lucene and FAISS indexes (BM25, dense, hybrid; per partition), "
                              "read documents, and explore scored runs topic by topic. Errors are "
                              '`{"error": "..."}` with status 400 or 404.')

    @app.exception_handler(ServeError)
    async def serve_error(request: Request, e: ServeError):
        return JSONResponse({"error": str(e)}, status_code=e.status)

    @app.exception_handler(LegalirError)
    async def input_error(request: Request, e: LegalirError):
        return JSONResponse({"error": str(e)}, status_code=400)

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
        return JSONResponse({"error": message}, status_code=e.status_code, headers=getattr(e, "headers", None))

    # ---- page
    @app.get("/", include_in_schema=False)
    async def page():
        return Response(static_file("index.html"), media_type=STATIC["index.html"][1])

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str):
        if name not in STATIC:
            return JSONResponse({"error": f"no static file {name!r}"}, status_code=404)
        return Response(static_file(name), media_type=STATIC[name][1], headers={"Cache-Control": "no-cache"})

    # ---- API
    @app.get("/health", summary="Status and what is served")
    async def health():
        return engine.health()

    @app.get("/indexes", summary="Indexes: methods, partitions, collection")
    async def indexes():
        return engine.list_indexes()

    @app.get("/collections", summary="Collections: dataset, partitions, documents")
    async def collections_():
        return engine.list_collections()

    @app.get("/search", summary="Search one index")
    async def search(q: str = Query("", description="Query text."),
                     index: Optional[str] = Query(None, description="Index name [default: the only one]."),
                     k: int = Query(10, description=f"Hits to return, 1 to {MAX_K}."),
                     method: Optional[str] = Query(None, description=f"One of {', '.join(METHODS)} "
                                                                     "[default: the index's first]."),
                     partition: Optional[str] = Query(None, description="Partition (e.g. jurisdiction) of a "
                                                                         "partitioned index."),
                     filter: Optional[str] = Query(None, description="Metadata filter (BM25): FIELD=VALUE[,VALUE] "
                                                                      "joined by ';', e.g. state=california,nevada."),
                     citations: Optional[str] = Query(None, description="on / off: rank the authority a query "
                                                                         "cites first [default: on where indexed].")):
        return await pool.call(engine.search, _index_name(engine, index), q, k=k, method=method, partition=partition,
                               filter=filter, citations=citations)

    @app.post("/search/batch", summary="Search many queries at once")
    async def search_batch(req: BatchRequest = Body(...)):
        if not req.queries:
            raise ServeError("no queries: give {\"queries\": [{\"q\": ...}, ...]}")
        if len(req.queries) > MAX_BATCH:
            raise ServeError(f"{len(req.queries)} queries in one batch; at most {MAX_BATCH}")
        items = [(x.id if x.id is not None else str(i), x.q, x.partition) for i, x in enumerate(req.queries)]
        results = await pool.call(engine.search_many, _index_name(engine, req.index), items, k=req.k,
                                  method=req.method)
        return {"results": results}

    @app.get("/doc/{collection}/{docid:path}", summary="One document, whole")
    async def document(collection: str, docid: str,
                       q: Optional[str] = Query(None, description="Query whose terms to list for highlighting.")):
        return await pool.call(engine.document, collection, docid, q)

    @app.get("/runs", summary="Runs with their overall scores")
    async def runs():
        return engine.list_runs()

    @app.get("/runs/{run}/topics", summary="A run's topics with their per-topic measures")
    async def run_topics(run: str):
        return await pool.call(engine.run_topics, run)

    @app.get("/runs/{run}/topics/{qid}", summary="A run's ranking for one topic, with qrels labels and gold documents")
    async def run_topic(run: str, qid: str,
                        compare: Optional[str] = Query(None, description="Another run whose ranks to add."),
                        k: int = Query(20, description="Ranked documents to return.")):
        return await pool.call(engine.run_topic, run, qid, compare=compare, k=k)

    return app


def _index_name(engine: Engine, index: Optional[str]) -> str:
    if index:
        return index
    if len(engine.indexes) == 1:
        return next(iter(engine.indexes))
    raise ServeError(f"give index=, one of: {', '.join(engine.indexes) or 'none (start with --index)'}")


def run(engine: Engine, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, workers: int = DEFAULT_WORKERS,
        log_level: str = "warning") -> None:
    """Serve ``engine`` until interrupted."""
    import uvicorn

    if not 0 <= port <= 65535:
        raise ServeError(f"port must be from 0 to 65535, got {port}")
    app = create_app(engine, Workers(workers))
    shown = f"[{host}]" if ":" in host else host
    print(f"legalir serve: http://{shown}:{port}/  (API docs: http://{shown}:{port}/docs)", file=sys.stderr,
          flush=True)
    uvicorn.run(app, host=host, port=port, log_level=log_level)


def serve(indexes=(), collections=(), runs=(), qrels=(), config_file: Optional[str] = None,
          host: Optional[str] = None, port: Optional[int] = None, workers: int = DEFAULT_WORKERS,
          log_level: str = "warning", **engine_options: Any) -> None:
    """`legalir serve`: read the configuration (file, then NAME=PATH options), load, serve."""
    from legalir.serve import config, engine as engine_mod

    cfg = config.from_file(config_file) if config_file else config.Config()
    config.from_options(cfg, indexes, collections, runs, qrels)
    eng = engine_mod.build(cfg, **engine_options)
    run(eng, host=host or cfg.host or DEFAULT_HOST, port=port if port is not None else (cfg.port or DEFAULT_PORT),
        workers=workers, log_level=log_level)
