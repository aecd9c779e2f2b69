"""Serving: `legalir serve` exposes indexes, documents and runs over HTTP (and MCP at /mcp); `legalir mcp`
offers the same MCP tools over stdio (legalir.serve)."""
from __future__ import annotations

import click

from legalir.serve.config import DEFAULT_MAX_BODY, DEFAULT_RELOAD_INTERVAL


def served_options(fn):
    """The options naming what is served, shared by `serve` and `mcp` (parsed once, by
    :func:`legalir.serve.config.gather`)."""
    options = [
        click.option("--index", "indexes", multiple=True, metavar="NAME=DIR",
                     help="Expose a Lucene or FAISS index (or a folder of per-partition ones) as NAME (repeatable); "
                          "the same NAME for a Lucene and a FAISS index offers bm25, dense and hybrid search."),
        click.option("--collection", "collections_", multiple=True, metavar="NAME=DIR",
                     help="Expose a collection's documents as NAME (repeatable) [default: each index's own "
                          "collection]."),
        click.option("--run", "runs", multiple=True, metavar="NAME=FILE",
                     help="A TREC run for the run explorer (repeatable)."),
        click.option("--qrels", "qrels", multiple=True, metavar="[NAME=]FILE",
                     help="Qrels of the run of the same NAME, or of every run when only one is given (repeatable; "
                          "one --qrels needs no NAME)."),
        click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
                     help="TOML or JSON file with [index], [collection], [run], [qrels] tables (and host, port)."),
        click.option("--k1", type=click.FloatRange(min=0), default=None,
                     help="BM25 k1 [default: the tuned value of the dataset the index was built from, else "
                          "Pyserini's 0.9]."),
        click.option("--b", type=click.FloatRange(0, 1), default=None,
                     help="BM25 b [default: the tuned value of the dataset the index was built from, else "
                          "Pyserini's 0.4]."),
        click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE",
                     help="Run scoring measure, repeatable, as for `legalir eval` [default: the dataset's, else "
                          "legalir's one default set: map and ndcg_cut.10]."),
        click.option("--judged-only/--all-documents", "judged_only", default=None,
                     help="Score runs judged-only (trec_eval -J) or not [default: the dataset's protocol]."),
        click.option("--device", default=None, help="torch device of dense query encoders [default: cuda if present]."),
        click.option("--reload-interval", "reload_interval", type=click.FloatRange(min=0),
                     default=DEFAULT_RELOAD_INTERVAL, show_default=True, metavar="SECONDS",
                     help="Every SECONDS, look whether `legalir index` (or `index update`) published a new version "
                          "of a served index, and serve it once it is open (searches under way finish on the old "
                          "one); 0: never reload. Only for indexes given as the link legalir publishes "
                          "(INDEX -> INDEX.vN), not for plain folders."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


@click.command()
@served_options
@click.option("--host", default=None, help="Address to listen on [default: the config's, else 127.0.0.1 (loopback)]; "
                                          "any other address needs API keys or --insecure-no-auth.")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="Port to listen on (0: any free port) [default: the config's, else 8000].")
@click.option("--workers", default=4, show_default=True, type=click.IntRange(min=1),
              help="Worker threads for requests; BM25 searches that arrive together run as one Lucene batch "
                   "over this many Java threads. 4x this many requests are handled at once, the rest queue.")
@click.option("--api-keys", "api_keys", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="API keys, one per line: KEY or sha256:HEX, then optional id=NAME and scopes=search,runs,metrics "
                   "[default: $LEGALIR_API_KEYS, same lines; none: no keys]. Clients send Authorization: Bearer KEY.")
@click.option("--insecure-no-auth", is_flag=True,
              help="Serve a non-loopback --host without API keys (e.g. behind a proxy that authenticates).")
@click.option("--allowed-host", "allowed", multiple=True, metavar="NAME",
              help="Also accept requests whose Host header names NAME (repeatable; '*': any) [default: the "
                   "bound address and its names only: DNS-rebinding protection].")
@click.option("--rate-limit", default=None, metavar="N/s",
              help="Requests per second per API key (per client address without keys), e.g. 20/s or 600/min, "
                   "bursts of twice that; 'off' for none [default: 20/s with keys, off without].")
@click.option("--max-body", type=click.IntRange(min=1), default=DEFAULT_MAX_BODY, show_default=True, metavar="BYTES",
              help="Largest request body accepted (413 beyond).")
@click.option("--max-queue", type=click.IntRange(min=0), default=256, show_default=True,
              help="Requests that may wait for a worker; beyond, 503 with Retry-After.")
@click.option("--client-timeout", type=click.FloatRange(min=0), default=15.0, show_default=True, metavar="SECONDS",
              help="Seconds a client has to send a request's headers, and then its body (408 and the connection "
                   "closed beyond; the body is read before the request takes a worker); 0: no limit.")
@click.option("--max-connections-per-client", "max_connections_per_client", type=click.IntRange(min=0), default=64,
              show_default=True, metavar="N",
              help="Connections one client address may hold open at once (one more: 429 and closed); 0: no cap. "
                   "Behind a proxy every client has the proxy's address: raise it or give 0.")
@click.option("--request-timeout", type=click.FloatRange(min=0), default=30.0, show_default=True, metavar="SECONDS",
              help="Time budget of one request's work (a search, a batch, a tool call): beyond, it is answered "
                   "503 with Retry-After (a tool error over MCP) and its worker slot is freed; 0: no limit.")
@click.option("--mcp/--no-mcp", "mcp", default=True, show_default=True,
              help="Also serve the MCP tools (streamable HTTP) at /mcp.")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info", "debug"]), default="warning",
              show_default=True, help="uvicorn's log level (legalir's own JSON access log goes to stderr unless "
                                      "--quiet).")
def serve(indexes, collections_, runs, qrels, config_file, k1, b, measures, judged_only, device, reload_interval, host,
          port, workers, api_keys, insecure_no_auth, allowed, rate_limit, max_body, max_queue, client_timeout,
          max_connections_per_client, request_timeout, mcp, log_level):
    """Serve indexes, documents and runs over HTTP: a JSON API (/docs), a web page (/) and MCP tools (/mcp).

    \b
      legalir serve --index acord=indexes/acord/bm25 --run bm25=runs/acord/bm25.test.trec \\
                    --qrels bm25=collections/acord/qrels/test.txt
    """
    from legalir.serve import app

    app.serve(indexes, collections_, runs, qrels, config_file, host=host, port=port, workers=workers,
              log_level=log_level, api_keys=api_keys, insecure_no_auth=insecure_no_auth, allowed=allowed,
              rate_limit=rate_limit, max_body=max_body, max_queue=max_queue, mcp=mcp, lucene_threads=workers,
              client_timeout=client_timeout, max_connections_per_client=max_connections_per_client,
              request_timeout=request_timeout,
              k1=k1, b=b, measures=list(measures) or None, judged_only=judged_only, device=device,
              reload_interval=reload_interval)


@click.command()
@served_options
@click.option("--workers", default=2, show_default=True, type=click.IntRange(min=1),
              help="Worker threads (and Lucene batch threads) for tool calls.")
@click.option("--request-timeout", type=click.FloatRange(min=0), default=30.0, show_default=True, metavar="SECONDS",
              help="Time budget of one tool call: beyond, it is answered with a tool error; 0: no limit.")
def mcp(indexes, collections_, runs, qrels, config_file, k1, b, measures, judged_only, device, reload_interval,
        workers, request_timeout):
    """Serve indexes, documents and runs as MCP tools over stdio, for desktop agents (Claude Desktop, ...).

    Tools: list_indexes, search, get_document, evaluate, fuse. The same options as `legalir serve` say what
    is served; stdout carries the protocol, messages go to stderr.

    \b
      legalir mcp --index acord=indexes/acord/bm25 --run bm25=runs/acord/bm25.test.trec \\
                  --qrels collections/acord/qrels/test.txt
    """
    from legalir.serve import mcpserver

    mcpserver.run_stdio(indexes, collections_, runs, qrels, config_file, workers=workers, lucene_threads=workers,
                        request_timeout=request_timeout,
                        k1=k1, b=b, measures=list(measures) or None, judged_only=judged_only, device=device,
                        reload_interval=reload_interval)


COMMANDS = [serve, mcp]
