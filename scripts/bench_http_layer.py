#!/usr/bin/env python3
"""The HTTP layer's own cost per request, without sockets and without the engine: `legalir serve`'s ASGI app (the
guard, FastAPI, the route, the JSON answer, the hand-off to a worker thread and back) called in process around an
engine whose ``search`` and ``search_many`` return answers computed once (real ones: 10 hits with metadata and
snippets each, synthetic Housing), so that Java and the machine's load leave the figure alone.

    python scripts/bench_http_layer.py --work /tmp/legalir-bench-serve --rounds 7
    python scripts/bench_http_layer.py --work /tmp/legalir-bench-serve --over-http   # + sockets, uvicorn, h11

Reports, per ``GET /search`` and per ``POST /search/batch`` (50 queries), the event loop thread's CPU time
(``time.thread_time``) and wall time, minimum and median over the rounds. To compare two versions, run the script of
each tree (it imports the legalir beside it). The work folder is ``scripts/bench_serve.py``'s (built if missing).

``--over-http``: the same app served by uvicorn with the guarded h11 protocol (as ``legalir serve`` runs it, access
log on) in a process of its own, and ``GET /search`` sent from this one over a keep-alive loopback connection: per
request, the p50 wall time, the server's CPU (``/proc``) and this client's CPU, per round. Everything of a request but
the engine. ``--over-http --bare``: the same client against the floor of any answer, a raw ASGI function answering
``{"hits": []}`` under plain uvicorn (h11, no guard, keys, limit or log), measured the same way (docs/serving.md: how
far this machine lets issue 39's targets go).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

KEY = "benchkeybenchkeybenchkey0123"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/legalir-bench-serve"), help="bench_serve.py's work folder")
    ap.add_argument("--rounds", type=int, default=7, help="rounds of 200 GET and 10 batch requests [7]")
    ap.add_argument("--over-http", action="store_true", help="serve the app with uvicorn in a process of its own "
                                                                  "and time GET /search over loopback")
    ap.add_argument("--bare", action="store_true", help="with --over-http: a raw ASGI function under plain uvicorn "
                                                           "instead of legalir's app (the floor of any answer)")
    ap.add_argument("--serve-port", type=int, default=None, help=argparse.SUPPRESS)  # the --over-http server itself
    args = ap.parse_args(argv)
    if args.bare and not args.over_http and args.serve_port is None:
        ap.error("--bare goes with --over-http")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args.work.mkdir(parents=True, exist_ok=True)
    if args.serve_port is not None:
        serve(args.work, args.serve_port, args.bare)
        return
    if args.over_http:
        over_http(args.work, args.rounds, args.bare)
        os._exit(0)
    app, qs = stored_app(args.work)
    stack = app.build_middleware_stack()  # the guard around FastAPI's own stack, as uvicorn calls it

    def scope(path: str, query: str, method: str, body: bytes) -> dict:
        headers = [(b"host", b"127.0.0.1:8000"), (b"authorization", f"Bearer {KEY}".encode())]
        if body:
            headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
                "root_path": "", "headers": headers, "client": ("127.0.0.1", 5555),
                "server": ("127.0.0.1", 8000), "state": {}, "app": app}

    async def call(path: str, query: str = "", method: str = "GET", body: bytes = b"") -> None:
        sent, pending = [], [{"type": "http.request", "body": body, "more_body": False}]

        async def receive():
            return pending.pop(0) if pending else {"type": "http.disconnect"}

        async def send(message):
            sent.append(message)
        await stack(scope(path, query, method, body), receive, send)
        if sent[0]["status"] != 200:
            raise SystemExit(f"{path}: {sent}")

    async def run() -> dict:
        gets = [urllib.parse.urlencode({"q": t, "partition": p, "k": 10, "index": "housing", "method": "bm25"})
                for t, p in qs]
        body = json.dumps({"index": "housing", "k": 10, "method": "bm25",
                           "queries": [{"q": t, "partition": p} for t, p in qs]}).encode()
        for q in gets:  # warm-up
            await call("/search", q)
        out: dict[str, list[float]] = {"GET cpu": [], "GET wall": [], "batch cpu": [], "batch wall": []}
        for _ in range(args.rounds):
            c0, t0 = time.thread_time(), time.perf_counter()
            for q in gets * 4:
                await call("/search", q)
            out["GET wall"].append((time.perf_counter() - t0) / (4 * len(gets)) * 1e6)
            out["GET cpu"].append((time.thread_time() - c0) / (4 * len(gets)) * 1e6)
            c0, t0 = time.thread_time(), time.perf_counter()
            for _ in range(10):
                await call("/search/batch", "", "POST", body)
            out["batch wall"].append((time.perf_counter() - t0) / 10 * 1e6)
            out["batch cpu"].append((time.thread_time() - c0) / 10 * 1e6)
        return out

    out = asyncio.run(run())
    print(f"# {REPO}; load average {os.getloadavg()[0]:.2f}; event loop thread, µs a request (batch: 50 queries)")
    for name, v in out.items():
        print(f"{name}: min {min(v):.0f} median {statistics.median(v):.0f}")
    os._exit(0)  # the JVM's threads


def stored_app(work: Path):
    """`legalir serve`'s app (keys and rate limit on) around the engine with its searches answered from memory, and
    the 50 questions whose answers it holds."""
    import bench_serve

    from legalir.serve import app as app_mod
    from legalir.serve import config, engine

    built = bench_serve.setup(work, 0.01, 0, work / "bench.log")
    qs = bench_serve.questions(built["collection"], 50)
    eng = engine.build(config.gather([f"housing={built['bm25']}"], (), (), (), None), lucene_threads=4)
    answers = {(t, p): eng.search("housing", t, k=10, method="bm25", partition=p) for t, p in qs}
    batch = eng.search_many("housing", [(str(i), t, p) for i, (t, p) in enumerate(qs)], k=10, method="bm25")

    class Stored:
        """The engine, with its two search calls answered from memory."""

        def __getattr__(self, name):
            return getattr(eng, name)

        def search(self, index, q, k=10, method=None, partition=None, **kw):
            return answers[(q, partition)]

        def search_many(self, index, items, **kw):
            return batch

    keys = work / "http-layer-keys.txt"
    keys.write_text(f"{KEY} id=bench\n")
    policy = app_mod.make_policy("127.0.0.1", 4, api_keys=str(keys), rate_limit="100000/s")
    return app_mod.create_app(Stored(), app_mod.Workers(4, budget=30), policy=policy, mcp=False), qs


BARE_BODY = b'{"hits": []}'


async def bare_app(scope, receive, send) -> None:
    """The floor of any answer: an ASGI function that answers every request with the same few bytes."""
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(BARE_BODY))]})
    await send({"type": "http.response.body", "body": BARE_BODY})


def serve(work: Path, port: int, bare: bool = False) -> None:
    """The stored-answer app as `legalir serve` runs it: uvicorn, the guarded h11 protocol, the JSON access log
    (``bare``: :func:`bare_app` under plain uvicorn and h11, no log)."""
    import logging

    import uvicorn

    from legalir.serve import app as app_mod
    from legalir.serve import protocol

    if bare:
        uvicorn.Server(uvicorn.Config(bare_app, log_level="warning", access_log=False, http="h11")).run(
            sockets=[app_mod.bind("127.0.0.1", port)])
        return

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")  # the access log, as the CLI
    app, _ = stored_app(work)
    policy = app.state.policy
    config = uvicorn.Config(app, log_level="warning", access_log=False,
                            http=protocol.protocol_class(policy, app.state.metrics))
    uvicorn.Server(config).run(sockets=[app_mod.bind("127.0.0.1", port)])


def over_http(work: Path, rounds: int, bare: bool = False) -> None:
    """``--over-http``: the server in its own process, GET /search from here over one keep-alive connection
    (``bare``: against :func:`bare_app`)."""
    import http.client
    import socket
    import subprocess

    import bench_serve

    built = bench_serve.setup(work, 0.01, 0, work / "bench.log")
    qs = bench_serve.questions(built["collection"], 50)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(work / "http-layer-server.log", "w")
    proc = subprocess.Popen([sys.executable, __file__, "--work", str(work), "--serve-port", str(port),
                             *(["--bare"] if bare else [])], cwd=REPO, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"the server exited with {proc.returncode}; see {log.name}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                conn.request("GET", "/health")
                conn.getresponse().read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the server did not start within 300 s") from None
                time.sleep(0.3)
        headers = {"Authorization": f"Bearer {KEY}"}
        paths = ["/search?" + urllib.parse.urlencode({"q": t, "partition": p, "k": 10, "index": "housing",
                                                      "method": "bm25"}) for t, p in qs]

        def server_cpu() -> float:
            with open(f"/proc/{proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        def get(path: str) -> None:
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                raise SystemExit(f"GET {path}: {resp.status}")
        for path in paths * 4:  # warm-up
            get(path)
        what = "a raw ASGI function under plain uvicorn (--bare)" if bare else "stored answers"
        print(f"# {REPO}; load average {os.getloadavg()[0]:.2f}; GET /search over loopback, {what}, "
              f"µs a request (p50 wall, server CPU, client CPU), {len(paths) * 6} requests a round")
        for _ in range(rounds):
            lat, c0, p0 = [], server_cpu(), time.process_time()
            for path in paths * 6:
                t0 = time.perf_counter()
                get(path)
                lat.append(time.perf_counter() - t0)
            n = len(lat)
            print(f"p50 {statistics.median(lat) * 1e6:.0f}  server CPU {(server_cpu() - c0) / n * 1e6:.0f}  "
                  f"client CPU {(time.process_time() - p0) / n * 1e6:.0f}", flush=True)
    finally:
        proc.terminate()
        proc.wait()
        log.close()


if __name__ == "__main__":
    main()
