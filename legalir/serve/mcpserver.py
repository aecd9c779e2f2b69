"""legalir's MCP server: the served indexes, documents and runs as tools for a model (the ``mcp`` SDK).

Tools: ``list_indexes``, ``search``, ``get_document``, ``history``, ``evaluate``, ``fuse``. Each calls the
same :class:`legalir.serve.engine.Engine` method as the HTTP API, on the same worker pool.

* ``legalir mcp --index NAME=DIR ...``: over stdio, for desktop agents (:func:`run_stdio`);
* ``legalir serve``: the same tools over streamable HTTP at ``/mcp`` (:func:`http_endpoint`),
  behind the server's host check, API keys (``search`` for the first four tools, ``runs`` for
  ``evaluate`` and ``fuse``), rate limit and body limit.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from legalir.errors import user_message
from legalir.serve import config, keys
from legalir.serve import engine as engine_mod
from legalir.serve.engine import MAX_K, BadRequest, Engine
from legalir.version import __version__

_log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "legalir serves legal retrieval indexes (statutes, contract clauses, case law) built with Lucene BM25 "
    "and FAISS dense embeddings, the documents behind them, and scored TREC runs. Call list_indexes first "
    "to learn the index names, their search methods and partitions (e.g. one index per US jurisdiction), "
    "and the runs and qrels available for scoring. search returns ranked passages with citations and "
    "snippets; get_document returns a whole document by id. An index of a code's releases (list_indexes: "
    "releases, release_dates) is searched as of a release or a date (as_of), and history gives a section's "
    "releases, dates and whether its text changed. evaluate scores a run with trec_eval measures; "
    "fuse combines runs (reciprocal rank fusion or a weighted sum) and scores the result.")

#: tool name -> the API key scope it needs over HTTP (the one table: legalir.serve.keys)
TOOL_SCOPES = keys.TOOL_SCOPES

_HIT_FIELDS = ("rank", "id", "score", "partition", "citation", "heading_path", "state", "category", "snippet")


def create(engine: Engine, workers: Any, *, keys_required: bool = False) -> MCPServer:
    """An :class:`mcp.server.mcpserver.MCPServer` with legalir's tools over ``engine``.

    Parameters
    ----------
    engine : Engine
        What is served.
    workers : legalir.serve.workers.Workers
        The thread pool the engine's blocking calls run on.
    keys_required : bool
        Whether requests carry an API key (HTTP with ``--api-keys``): each tool then checks the key's scope.

    Returns
    -------
    MCPServer
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    server = _Server("legalir", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    # MCPServer configures the root logger (logging.basicConfig with a rich handler): a library must not
    # (the application decides; the CLI logs through legalir.base.log), so undo it
    root.handlers[:] = handlers
    root.setLevel(level)

    def http_state(ctx: Context | None) -> dict | None:
        request = None
        if ctx is not None:
            try:
                request = ctx.request_context.request
            except (ValueError, AttributeError):
                request = None
        scope = getattr(request, "scope", None)
        return scope.get("state") if isinstance(scope, dict) else None

    def allowed(ctx: Context | None, scope: str) -> bool:
        """Whether this call's API key has ``scope`` (always, without keys: stdio, or a server without
        --api-keys)."""
        if not keys_required:
            return True
        key = (http_state(ctx) or {}).get("api_key")
        return key is not None and key.allows(scope)

    async def call(ctx: Context | None, tool: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        state = http_state(ctx)
        if not allowed(ctx, TOOL_SCOPES[tool]):
            raise ToolError(f"this API key may not call {tool} (it needs scope {TOOL_SCOPES[tool]})")
        try:
            out = await workers.call(fn, *args, **kwargs)
        except Exception as e:
            # the one translation (legalir.errors.user_message): bad arguments, a missing optional package,
            # Lucene refusing: a tool error whose text is the CLI's `error:` line and the HTTP error's body
            message = user_message(e)
            if message is None:
                raise
            raise ToolError(message) from None
        if state is not None and isinstance(out, dict) and isinstance(out.get("hits"), list):
            state["hits"] = len(out["hits"])
        return out

    @server.tool(description=(
        "List what this server holds: indexes (name, search methods bm25/dense/hybrid, whether it is split into "
        "partitions such as US jurisdictions and their names, the collection its documents come from), "
        "collections, runs (name, topics, qrels, measures, overall scores) and qrels names (runs and qrels only "
        "for an API key with the runs scope). Call this first; "
        "search needs an index name from it and evaluate/fuse need run or qrels names."))
    async def list_indexes(ctx: Context) -> dict[str, Any]:
        # runs and qrels only for a key that may read them over HTTP too (GET /runs: scope runs)
        shown = {part: allowed(ctx, scope) for part, scope in keys.TOOL_PART_SCOPES["list_indexes"].items()}

        def listing() -> dict:
            out = {"indexes": engine.list_indexes(), "collections": engine.list_collections()}
            if shown["runs"]:
                out["runs"] = engine.list_runs()
            if shown["qrels"]:
                out["qrels"] = sorted(engine.qrels_files)
            return out
        return await call(ctx, "list_indexes", listing)

    @server.tool(description=(
        "Search one index with a natural-language or keyword query and get the top k passages, best first: each "
        "hit has rank, id, score, and where the collection has them citation (e.g. 'Tex. Prop. Code 92.103'), "
        "heading_path, state, category and a snippet around the query terms. method: 'bm25' (exact words; "
        "good for citations and defined terms), 'dense' (meaning; paraphrases) or 'hybrid' (both, fused); "
        "default: the index's first. A partitioned index (list_indexes says partitioned: true, e.g. one per "
        "jurisdiction) needs partition, e.g. 'texas' or 'New York'. Read a whole document with get_document "
        "(collection = the result's collection, id = the hit's id)."))
    async def search(
        ctx: Context,
        query: Annotated[str, Field(description="What to look for, in words (at most 10,000 characters).")],
        index: Annotated[str | None, Field(description="Index name from list_indexes; may be left out when "
                                                          "only one index is served.")] = None,
        k: Annotated[int, Field(description=f"Number of hits, 1 to {MAX_K}.", ge=1, le=MAX_K)] = 10,
        method: Annotated[Literal["bm25", "dense", "hybrid"] | None,
                          Field(description="Retrieval method; must be one the index offers.")] = None,
        partition: Annotated[str | None, Field(description="Partition (e.g. jurisdiction) of a partitioned "
                                                              "index; leave out otherwise.")] = None,
        filter: Annotated[str | None, Field(description="Metadata filter (BM25): FIELD=VALUE[,VALUE] joined "
                                                           "by ';', e.g. 'state=california,nevada' or "
                                                           "'status=current'; list_indexes names the fields.")] = None,
        citations: Annotated[Literal["on", "off"] | None,
                             Field(description="'on': rank first the authority the query cites (e.g. a section "
                                               "number); default: on where the index has citations.")] = None,
        as_of: Annotated[str | None, Field(description="A release of the code the index keeps (list_indexes: "
                                                          "releases, release_dates), e.g. '85', or a date "
                                                          "'2022-09-01' (the newest release dated on or before it): "
                                                          "search the law as it stood then; "
                                                          "leave out for the current one.")] = None,
    ) -> dict[str, Any]:
        def run() -> dict:
            name = index or (next(iter(engine.indexes)) if len(engine.indexes) == 1 else None)
            if name is None:
                raise BadRequest(f"give index, one of: {', '.join(engine.indexes) or 'none'}")
            res = engine.search(name, query, k=k, method=method, partition=partition, filter=filter,
                                citations=citations, as_of=as_of)
            entry = engine.index(name)
            return {"index": name, "method": res["method"], "partition": res["partition"],
                    **{f: res[f] for f in ("release", "release_date") if res.get(f)},
                    "collection": entry.collection.name if entry.collection else None,
                    "hits": [{f: h[f] for f in _HIT_FIELDS if h.get(f) is not None} for h in res["hits"]]}
        return await call(ctx, "search", run)

    @server.tool(description=(
        "Get one whole document (statute section, contract clause, opinion passage) by its id, or by its "
        "citation as a lawyer writes it (O.C.G.A. § 8-2-1, GA Code 8-2-1, or § 8-2-1 within a served Georgia "
        "code), with its citation, heading path and metadata. collection: the 'collection' of a search result (an index name "
        "works too); may be left out when only one collection is served."))
    async def get_document(
        ctx: Context,
        id: Annotated[str, Field(description="Document id, as a search hit gives it, or a citation "
                                             "(O.C.G.A. § 8-2-1).")],
        collection: Annotated[str | None, Field(description="Collection (or index) name.")] = None,
        as_of: Annotated[str | None, Field(description="A release the collection's index keeps, e.g. '85', or a "
                                                          "date '2022-09-01' (the newest release dated on or "
                                                          "before it): the "
                                                          "document as it stood then.")] = None,
        q: Annotated[str | None, Field(description="A query whose terms to list (terms) for highlighting.")] = None,
    ) -> dict[str, Any]:
        def run() -> dict:
            name = collection
            if name in engine.indexes and name not in engine.collections and engine.indexes[name].collection:
                name = engine.indexes[name].collection.name
            if name is None and len(engine.collections) == 1:
                name = next(iter(engine.collections))
            if name is None:
                raise BadRequest(f"give collection, one of: {', '.join(engine.collections) or 'none'}")
            return engine.document(name, id, q, as_of=as_of)
        return await call(ctx, "get_document", run)

    @server.tool(description=(
        "A statute section's history across the releases of the code an index keeps (list_indexes: releases, "
        "release_dates), oldest first: for each release its date, whether it holds the section, its status (in "
        "force, repealed, reserved; 'absent' where that release lacks it), a SHA-256 of its text and whether the "
        "text changed from the release before. Read a version's text with get_document(id, as_of=release)."))
    async def history(
        ctx: Context,
        id: Annotated[str, Field(description="The section: a document id, or a citation (O.C.G.A. § 8-2-1).")],
        index: Annotated[str | None, Field(description="Index name from list_indexes; may be left out when "
                                                          "only one index is served.")] = None,
        partition: Annotated[str | None, Field(description="Partition of a partitioned index; leave out "
                                                              "otherwise.")] = None,
    ) -> dict[str, Any]:
        def run() -> dict:
            name = index or (next(iter(engine.indexes)) if len(engine.indexes) == 1 else None)
            if name is None:
                raise BadRequest(f"give index, one of: {', '.join(engine.indexes) or 'none'}")
            return engine.history(name, id, partition)
        return await call(ctx, "history", run)

    @server.tool(description=(
        "Score a ranking (a TREC run) against relevance judgments (qrels) with trec_eval's measures, exactly as "
        "trec_eval computes them. Give either run (the name of a served run, see list_indexes) or run_text "
        "(TREC run lines: 'qid Q0 docid rank score tag', one per line, or CRUMB JSONL lines). Measures as for "
        "`legalir eval`: trec_eval names (ndcg_cut.10, map, recip_rank, P.5, recall.100) or ir_measures names "
        "(nDCG@10, P@5, R@100, RR); default: the dataset's own, else map and ndcg_cut.10. Returns the mean of each measure over topics "
        "(and each topic's values with per_topic)."))
    async def evaluate(
        ctx: Context,
        run: Annotated[str | None, Field(description="Name of a served run.")] = None,
        run_text: Annotated[str | None, Field(description="A run as TREC lines (instead of run).")] = None,
        qrels: Annotated[str | None, Field(description="Served qrels name [default: the run's own, or the "
                                                          "only one served].")] = None,
        measures: Annotated[list[str] | None, Field(description="Measures, e.g. ['ndcg_cut.10', 'P@5'].")] = None,
        judged_only: Annotated[bool | None, Field(description="Drop unjudged documents first (trec_eval -J) "
                                                                 "[default: the dataset's protocol].")] = None,
        per_topic: Annotated[bool, Field(description="Also return each topic's values.")] = False,
    ) -> dict[str, Any]:
        return await call(ctx, "evaluate", engine.evaluate, run, run_text, qrels=qrels, measures=measures,
                          judged_only=judged_only, per_topic=per_topic)

    @server.tool(description=(
        "Fuse two or more runs into one ranking per topic: 'rrf' (reciprocal rank fusion, score = sum of "
        "weight / (rrf_k + rank)) or 'linear' (weighted sum of per-topic normalised scores). Runs are served "
        "run names (runs) and/or TREC run texts (run_texts). Returns the fused top k for the topics asked "
        "(default: the first five) and, when qrels are known, the fused run's scores beside each input's, "
        "so you can tell whether fusion helped."))
    async def fuse(
        ctx: Context,
        runs: Annotated[list[str] | None, Field(description="Names of served runs.")] = None,
        run_texts: Annotated[list[str] | None, Field(description="Runs as TREC lines.")] = None,
        method: Annotated[Literal["rrf", "linear"], Field(description="Fusion method.")] = "rrf",
        weights: Annotated[list[float] | None, Field(description="One weight per run, in order (runs "
                                                                    "first, then run_texts) [default: 1 each].")] = None,
        rrf_k: Annotated[float | None, Field(description="RRF's k [default: 60].")] = None,
        norm: Annotated[Literal["minmax", "zscore"], Field(description="linear: score normalisation.")] = "minmax",
        depth: Annotated[int | None, Field(description="Use only each run's top depth documents.", ge=1)] = None,
        qrels: Annotated[str | None, Field(description="Served qrels to score with [default: the runs' "
                                                          "own].")] = None,
        measures: Annotated[list[str] | None, Field(description="Measures to score with.")] = None,
        topics: Annotated[list[str] | None, Field(description="Topic ids whose fused rankings to return.")] = None,
        k: Annotated[int, Field(description="Documents per returned ranking.", ge=1, le=MAX_K)] = 10,
    ) -> dict[str, Any]:
        return await call(ctx, "fuse", engine.fuse, runs, run_texts, method=method, weights=weights, rrf_k=rrf_k,
                          norm=norm, depth=depth, qrels=qrels, measures=measures, topics=topics, k=k)

    keys.check_table((), [t.name for t in server._tool_manager.list_tools()])  # every tool has its scope
    for tool in server._tool_manager.list_tools():
        # every tool takes what the one table of arguments says (legalir.serve.engine.ARGUMENTS), no more, no less;
        # its schema says that nothing else is accepted
        taken = set(tool.parameters.get("properties", {}))
        if taken != set(engine_mod.ARGUMENTS[tool.name]):
            raise RuntimeError(f"MCP tool {tool.name} takes {sorted(taken)}; legalir.serve.engine.ARGUMENTS says "
                               f"{sorted(engine_mod.ARGUMENTS[tool.name])}")
        tool.parameters["additionalProperties"] = False
    return server


class _Server(MCPServer):
    """The SDK's server, with every call's arguments checked against legalir's one table first
    (:func:`legalir.serve.engine.arguments`): an unknown name, a name given twice, a missing or mistyped value
    is a tool error in the words HTTP's 400 has for it (the SDK's own check would ignore an unknown name
    and word a wrong type its own way)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if name in engine_mod.ARGUMENTS:
            try:
                arguments = engine_mod.arguments(name, arguments)
            except Exception as e:
                message = user_message(e)
                if message is None:
                    raise
                raise ToolError(f"Error executing tool {name}: {message}") from None
        return await super().call_tool(name, arguments, context)


def http_endpoint(server: Any, max_body: int) -> tuple[Any, Any]:
    """(ASGI endpoint for ``/mcp``, the session manager to run in the app's lifespan).

    Stateless streamable HTTP with JSON responses: every request stands alone (no sessions to keep,
    no long-lived streams), so the server's rate limit, body limit and concurrency bound apply per
    call. The host check is the server's own (:class:`legalir.serve.guard.Guard`).
    """
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
    from mcp.server.transport_security import TransportSecuritySettings

    # builds the session manager (its Starlette app is not used: /mcp is a route of legalir's own app)
    server.streamable_http_app(json_response=True, stateless_http=True, max_request_body_size=max_body,
                               transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    manager = server.session_manager
    return StreamableHTTPASGIApp(manager), manager


@contextlib.contextmanager
def stdout_to_stderr():
    """Point file descriptor 1 at stderr for the block: over stdio, stdout carries the protocol, and
    whatever else would print there (the JVM starting, a library's progress) must not."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def run_stdio(indexes=(), collections=(), runs=(), qrels=(), config_file: str | None = None,
              workers: int = 2, request_timeout: float | None = 30.0, **engine_options: Any) -> None:
    """`legalir mcp`: load what the options name (as `legalir serve` does) and serve the tools over stdio."""
    import anyio

    from legalir.serve.workers import Workers

    with stdout_to_stderr():
        eng = engine_mod.build(config.gather(indexes, collections, runs, qrels, config_file), **engine_options)
    pool = Workers(workers, budget=request_timeout)
    try:
        server = create(eng, pool)
        _log.info(f"mcp: serving {len(eng.indexes)} index(es), {len(eng.runs)} run(s) over stdio")
        eng.start_reloading()  # new index versions are served as they are published (--reload-interval)
        anyio.run(server.run_stdio_async)
    finally:
        eng.stop_reloading()
        pool.shutdown()
        eng.close()
