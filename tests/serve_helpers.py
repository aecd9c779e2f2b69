"""Shared by the `legalir serve` tests: API keys, the Housing fixture's partitioned index, a server subprocess."""
from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, WAIT_S
from helpers import wait_for

REPO = Path(__file__).resolve().parent.parent
FULL_KEY = "full-key-0123456789abcdefghijklmnop"
SEARCH_KEY = "search-key-0123456789abcdefghijklmn"
SLOW_KEY = "slow-key-0123456789abcdefghijklmnop"
BATCH_KEY = "batch-key-0123456789abcdefghijklmno"
#: a key file: every scope; search only; a key of its own rate (1 a minute: bursts of 2), written as its SHA-256;
#: a key of 1 a second (bursts of 2) for batches
KEYS = (f"# test keys\n{FULL_KEY} id=full\n{SEARCH_KEY} id=search scopes=search\n"
        f"sha256:{__import__('hashlib').sha256(SLOW_KEY.encode()).hexdigest()} id=slow rate=1/min\n"
        f"{BATCH_KEY} id=batch rate=1/s\n")


def housing_index(root: Path) -> Path:
    """The Housing fixture's collection and its per-jurisdiction Lucene index under ``root``; the index folder."""
    from legalir import collections, datasets
    from legalir.indexing import sparse

    collections.write(datasets.get("housing_qa", FIXTURES), root / "housing-collection", quiet=True)
    sparse.build(root / "housing-collection", root / "housing-bm25", threads=1, quiet=True)
    return root / "housing-bm25"


def post_json(base: str, path: str, payload) -> tuple[int, dict]:
    """(status, JSON body) of POST ``path`` with ``payload`` as JSON, to the server at ``base``."""
    import json
    import urllib.parse

    u = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=WAIT_S)
    try:
        conn.request("POST", path, body=json.dumps(payload), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "LEGALIR_JVM_HEAP": os.environ.get("LEGALIR_JVM_HEAP", "512m"), "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1"}


def start_server(root: Path, args: list[str], extra: list[str] = (), *, keys: bool = True, workers: int = 2) -> dict:
    """`legalir serve ARGS` (with the test keys unless ``keys=False``) on a free loopback port; waits for /health."""
    return await_server(launch_server(root, args, extra, keys=keys, workers=workers))


def launch_server(root: Path, args: list[str], extra: list[str] = (), *, keys: bool = True, workers: int = 2) -> dict:
    """:func:`start_server` without the wait: the server starts (seconds: a JVM, perhaps a model) while the
    caller builds what else it needs; :func:`await_server` then waits for /health."""
    key_args = []
    if keys:
        (root / "keys.txt").write_text(KEYS)
        key_args = ["--api-keys", str(root / "keys.txt")]
    port = free_port()
    log_path = root / f"serve-{port}.log"
    log = open(log_path, "w")
    proc = subprocess.Popen([sys.executable, "-m", "legalir.cli", "serve", *args, "--port", str(port),
                             *key_args, "--workers", str(workers), *extra],
                            stdout=log, stderr=subprocess.STDOUT, env=env())
    return {"proc": proc, "port": port, "base": f"http://127.0.0.1:{port}", "log": log_path, "logfile": log,
            "root": root}


def await_server(server: dict) -> dict:
    """``server`` (from :func:`launch_server`) once it answers /health; stopped, and the failure raised, when it
    exits or never answers."""
    proc, port, log_path = server["proc"], server["port"], server["log"]

    def healthy():
        if proc.poll() is not None:
            pytest.fail(f"legalir serve exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            try:
                c.request("GET", "/health")
                return c.getresponse().status == 200
            finally:
                c.close()
        except OSError:
            return False

    try:
        wait_for(healthy, "legalir serve to answer /health")
    except BaseException:
        stop_server(server)
        raise
    return server


def stop_server(server: dict) -> None:
    proc = server["proc"]
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    server["logfile"].close()
