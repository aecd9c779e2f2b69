#!/usr/bin/env python3
"""The HTTP layer's own cost per request, without sockets and without the engine: `legalir serve`'s ASGI app (the
guard, FastAPI, the route, the JSON answer, the hand-off to a worker thread and back) called in process around an
engine whose ``search`` and ``search_many`` return answers computed once (real ones: 10 hits with metadata and
snippets each, synthetic Housing), so that Java and the machine's load leave the figure alone.

    python scripts/bench_http_layer.py --work /tmp/legalir-bench-serve --rounds 7

Reports, per ``GET /search`` and per ``POST /search/batch`` (50 queries), the event loop thread's CPU time
(``time.thread_time``) and wall time, minimum and median over the rounds. To compare two versions, run the script of
each tree (it imports the legalir beside it). The work folder is ``scripts/bench_serve.py``'s (built if missing).
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
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import bench_serve

    from legalir.serve import app as app_mod
    from legalir.serve import config, engine

    args.work.mkdir(parents=True, exist_ok=True)
    built = bench_serve.setup(args.work, 0.01, 0, args.work / "bench.log")
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

    keys = args.work / "http-layer-keys.txt"
    keys.write_text(f"{KEY} id=bench\n")
    policy = app_mod.make_policy("127.0.0.1", 4, api_keys=str(keys), rate_limit="100000/s")
    app = app_mod.create_app(Stored(), app_mod.Workers(4, budget=30), policy=policy, mcp=False)
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


if __name__ == "__main__":
    main()
