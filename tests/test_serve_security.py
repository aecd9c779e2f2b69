"""`legalir serve` facing a network: API keys and scopes, rate limits, Host/Origin checks, body limits, request ids,
security headers, the JSON access log and /metrics, over real HTTP to a real server (sample Lucene index); the
guard's queue and token buckets in-process; the command line's refusals (non-loopback without keys, busy port)."""
from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.parse

import pytest
from conftest import WAIT_S, reference_module
from helpers import request
from serve_helpers import BATCH_KEY, FULL_KEY, SEARCH_KEY, SLOW_KEY, env, start_server, stop_server

MAX_BODY = 65536


@pytest.fixture(scope="module")
def server(sample_collection, sample_index, tmp_path_factory):
    from legalir import trec
    from legalir.search import bm25 as lucene

    root = tmp_path_factory.mktemp("serve-security")
    bm25 = lucene.BM25(sample_index)
    try:
        trec.write_run(root / "bm25.trec", bm25.search(trec.read_topics(sample_collection / "topics" / "test.jsonl"),
                                                       20), tag="bm25")
    finally:
        bm25.close()
    s = start_server(root, ["--index", f"acord={sample_index}", "--run", f"bm25={root / 'bm25.trec'}",
                            "--qrels", str(sample_collection / "qrels" / "test.txt")],
                     ["--max-body", str(MAX_BODY), "--rate-limit", "500/s"])
    yield s
    stop_server(s)



def test_keys_and_scopes(server):
    status, headers, body = request(server, "GET", "/search?q=governing+law")
    assert status == 401 and "Authorization: Bearer" in body["error"] and headers["WWW-Authenticate"].startswith("Bearer")
    status, _, body = request(server, "GET", "/search?q=governing+law", key="not-a-key-0123456789")
    assert status == 401 and "unknown API key" in body["error"]
    status, _, body = request(server, "GET", "/search?q=governing+law&k=3", key=SEARCH_KEY)
    assert status == 200 and len(body["hits"]) == 3
    status, _, body = request(server, "GET", "/runs", key=SEARCH_KEY)
    assert status == 403 and "scope runs" in body["error"]
    status, _, body = request(server, "GET", "/runs", key=FULL_KEY)
    assert status == 200 and body[0]["name"] == "bm25"
    status, _, body = request(server, "GET", "/search?q=law", headers={"Authorization": f"Basic {FULL_KEY}"})
    assert status == 401
    # no key needed: the health probe, the page's files and the API description (which names the scheme)
    for path in ("/health", "/", "/static/app.js", "/docs"):
        assert request(server, "GET", path)[0] == 200, path
    status, _, openapi = request(server, "GET", "/openapi.json")
    assert status == 200 and openapi["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert f"{MAX_BODY:,} bytes" in openapi["info"]["description"]  # limits stated in /docs
    assert "10,000 characters" in openapi["info"]["description"]


def test_rate_limit(server):
    """The slow key may send 1 request a minute (a bucket of 2 seconds' worth, at least 1): the second gets 429
    with Retry-After, and so does the next."""
    got = [request(server, "GET", "/indexes", key=SLOW_KEY) for _ in range(3)]
    assert [g[0] for g in got] == [200, 429, 429]
    status, headers, body = got[1]
    assert "rate limit of 1/min" in body["error"] and 55 <= int(headers["Retry-After"]) <= 60
    assert request(server, "GET", "/health")[0] == 200  # exempt
    assert request(server, "GET", "/indexes", key=FULL_KEY)[0] == 200  # buckets are per key


def test_a_batch_costs_one_token_per_query(server):
    """The batch key may send 1 query a second (bursts of 2): a batch of 10 queries is answered, then its
    requests wait until the 9 tokens it owes are paid back."""
    queries = [{"q": f"governing law {i}"} for i in range(10)]
    status, _, body = request(server, "POST", "/search/batch", key=BATCH_KEY, headers={"Content-Type": "application/json"},
                              body=json.dumps({"queries": queries, "k": 2}).encode())
    assert status == 200 and len(body["results"]) == 10
    status, headers, body = request(server, "GET", "/indexes", key=BATCH_KEY)
    assert status == 429 and 7 <= int(headers["Retry-After"]) <= 10, (status, headers.get("Retry-After"))


def test_request_ids_and_security_headers(server):
    status, headers, _ = request(server, "GET", "/indexes", key=FULL_KEY, headers={"X-Request-ID": "trace-42.a:b"})
    assert status == 200 and headers["X-Request-ID"] == "trace-42.a:b"
    status, headers, _ = request(server, "GET", "/indexes", key=FULL_KEY, headers={"X-Request-ID": "bad id\t!"})
    assert status == 200 and headers["X-Request-ID"] != "bad id\t!" and len(headers["X-Request-ID"]) == 32
    ids = set()
    for method, path, key in [("GET", "/health", None), ("GET", "/search?q=law", None), ("GET", "/nowhere", FULL_KEY),
                              ("GET", "/search?q=", FULL_KEY), ("GET", "/runs", SEARCH_KEY), ("GET", "/", None),
                              ("POST", "/search/batch", FULL_KEY)]:
        status, headers, _ = request(server, method, path, key=key)
        assert headers.get("X-Request-ID"), (method, path, status)
        ids.add(headers["X-Request-ID"])
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert len(ids) == 7
    assert "script-src 'self'" in request(server, "GET", "/")[1]["Content-Security-Policy"]


def test_host_and_origin_checks(server):
    """DNS rebinding: a page on evil.example rebinding its name to 127.0.0.1 still sends Host: evil.example."""
    port = server["port"]
    status, _, body = request(server, "GET", "/indexes", key=FULL_KEY, headers={"Host": f"evil.example:{port}"})
    assert status == 421 and "--allowed-host evil.example" in body["error"]
    assert request(server, "GET", "/indexes", key=FULL_KEY, headers={"Host": f"localhost:{port}"})[0] == 200
    assert request(server, "GET", "/indexes", key=FULL_KEY, headers={"Host": f"[::1]:{port}"})[0] == 200
    status, _, body = request(server, "GET", "/indexes", key=FULL_KEY, headers={"Origin": "http://evil.example"})
    assert status == 403 and "cross-origin" in body["error"]
    assert request(server, "GET", "/indexes", key=FULL_KEY,
                   headers={"Origin": f"http://127.0.0.1:{port}"})[0] == 200
    # /health answers any Host (load balancers probe by address) but names nothing served
    status, _, body = request(server, "GET", "/health", headers={"Host": f"evil.example:{port}"})
    assert status == 200 and set(body) == {"status", "version"}


def test_body_limits(server):
    # a huge Content-Length is refused at once, before any of the body is sent
    with socket.create_connection(("127.0.0.1", server["port"]), timeout=WAIT_S) as s:
        s.sendall((f"POST /search/batch HTTP/1.1\r\nHost: 127.0.0.1:{server['port']}\r\n"
                   f"Authorization: Bearer {FULL_KEY}\r\nContent-Type: application/json\r\n"
                   f"Content-Length: 500000000\r\n\r\n").encode())
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):  # headers and the JSON body: one
            chunk = s.recv(65536)                                              # recv may bring only the headers
            if not chunk:
                break
            reply += chunk
        reply = reply.decode()  # answered before the body (a 500 MB one, never sent): s's timeout bounds a hang
    assert reply.startswith("HTTP/1.1 413") and "500,000,000 bytes" in reply and "x-request-id" in reply.lower()
    # a body sent without a length (chunked) is cut off at the limit
    big = json.dumps({"index": "acord", "queries": [{"q": "law " * 2000}] * 10}).encode()
    assert len(big) > MAX_BODY
    # the server may answer and close while the rest is still being sent: the client reads its reply whatever
    # part of the body went out (a real socket, so a refused send is not the test's failure)
    with socket.create_connection(("127.0.0.1", server["port"]), timeout=WAIT_S) as s:
        s.sendall((f"POST /search/batch HTTP/1.1\r\nHost: 127.0.0.1:{server['port']}\r\n"
                   f"Authorization: Bearer {FULL_KEY}\r\nContent-Type: application/json\r\n"
                   f"Transfer-Encoding: chunked\r\n\r\n").encode())
        try:
            for i in range(0, len(big), 8192):
                part = big[i:i + 8192]
                s.sendall(b"%x\r\n" % len(part) + part + b"\r\n")
            s.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        reply = b""
        try:
            while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                reply += chunk
        except ConnectionResetError:
            pass
    head, _, body = reply.decode().partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 413") and "at most 65,536" in body, reply[:500]
    # under the limit: answered
    ok = json.dumps({"index": "acord", "k": 2, "queries": [{"q": "governing law"}, {"q": "indemnification"}]})
    status, _, body = request(server, "POST", "/search/batch", key=FULL_KEY, body=ok.encode(),
                              headers={"Content-Type": "application/json"})
    assert status == 200 and [r["query"] for r in body["results"]] == ["governing law", "indemnification"]
    assert len(body["results"][0]["hits"]) == 2


def test_metrics_and_access_log(server):
    from prometheus_client.parser import text_string_to_metric_families

    for _ in range(3):
        assert request(server, "GET", "/search?" + urllib.parse.urlencode({"q": "governing law", "k": 4}),
                       key=FULL_KEY, headers={"X-Request-ID": "metrics-test"})[0] == 200
    assert request(server, "GET", "/metrics", key=SEARCH_KEY)[0] == 403
    status, headers, text = request(server, "GET", "/metrics", key=FULL_KEY)
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(text)}  # raises on malformed text
    assert {"legalir_requests", "legalir_request_duration_seconds", "legalir_request_errors",
            "legalir_index_info", "legalir_build_info"} <= set(families)
    assert families["legalir_requests"].type == "counter"
    ok = [s for s in families["legalir_requests"].samples
          if s.name == "legalir_requests_total" and s.labels["route"] == "/search" and s.labels["status"] == "200"]
    assert ok and ok[0].value >= 3
    assert any(s.labels["status"] == "401" for s in families["legalir_request_errors"].samples)
    hist = [s for s in families["legalir_request_duration_seconds"].samples if s.labels.get("route") == "/search"]
    buckets = [s.value for s in hist if s.name.endswith("_bucket")]
    count = next(s.value for s in hist if s.name.endswith("_count"))
    assert buckets == sorted(buckets) and buckets[-1] == count >= 3
    info = families["legalir_index_info"].samples[0]
    assert info.labels["index"] == "acord" and info.labels["kind"] == "bm25" and info.labels["version"].isdigit()
    # one JSON access-log line per request, through logging (the CLI writes it to stderr; a line may follow its
    # reply: waited for)
    def access_lines() -> list[dict]:
        return [json.loads(x) for x in server["log"].read_text().splitlines() if x.startswith('{"ts"')]

    deadline = time.monotonic() + WAIT_S
    while len([x for x in access_lines() if x["id"] == "metrics-test"]) < 3:
        assert time.monotonic() < deadline, "the access log never showed the 3 requests"
        time.sleep(0.05)
    lines = access_lines()
    mine = [x for x in lines if x["id"] == "metrics-test"]
    assert len(mine) == 3 and all(x["key"] == "full" and x["route"] == "/search" and x["status"] == 200
                                  and x["hits"] == 4 and x["ms"] > 0 for x in mine)
    assert any(x["status"] == 401 and x["key"] is None for x in lines)


def test_page_asks_for_the_key(server):
    """The page in headless chromium: the API answers 401, the page asks for a key (a prompt), sends it from then
    on; a key without the runs scope gets the search page and no run explorer."""
    reference_module("websockets", "the page test drives chromium with the websockets package")
    from browser import Chromium

    with Chromium() as b:  # no chromium: skips (CI: fails, conftest.REQUIRE_REFERENCES)
        page = b.load(server["base"] + "/")
        deadline = time.time() + WAIT_S
        while True:  # the prompt opens once /indexes has answered 401
            try:
                page.call("Page.handleJavaScriptDialog", {"accept": True, "promptText": SEARCH_KEY})
                break
            except RuntimeError:
                assert time.time() < deadline, "the page never asked for a key"
                time.sleep(0.1)
        while not page.evaluate("document.body.dataset.ready === '1'"):
            assert time.time() < deadline, "the page did not load with the key"
            time.sleep(0.1)
        assert page.evaluate("[...document.querySelectorAll('#index option')].map(o => o.value)") == ["acord"]
        assert page.evaluate("document.querySelectorAll('#run option').length") == 0
        assert page.evaluate("sessionStorage.getItem('legalir-api-key')") == SEARCH_KEY
        # only the refused requests' own errors: no CSP violation, no script error
        assert all(" 401 " in e or " 403 " in e for e in page.errors), page.errors


# ------------------------------------------------------------------ in-process: the queue and the buckets
def test_concurrency_is_bounded_with_a_queue():
    """One request at a time, one waiting: a third concurrent request is refused (503, Retry-After). The app
    holds its request until the refusal has been answered (an event, not a delay: a loaded machine cannot let
    the first request end before the third arrives)."""
    from legalir.serve import guard

    active, peak = [0], [0]
    refused = asyncio.Event()

    async def slow_app(scope, receive, send):
        active[0] += 1
        peak[0] = max(peak[0], active[0])
        await asyncio.wait_for(refused.wait(), WAIT_S)  # a guard that refuses nothing times out here
        active[0] -= 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    g = guard.Guard(slow_app, guard.Policy(max_active=1, max_queue=1))

    async def one():
        sent = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(m):
            sent.append(m)
        scope = {"type": "http", "method": "GET", "path": "/search", "headers": [(b"host", b"127.0.0.1")],
                 "query_string": b"", "client": ("127.0.0.1", 1)}
        await g(scope, receive, send)
        start = sent[0]
        if start["status"] == 503:
            refused.set()
        return start["status"], dict((k.decode(), v.decode()) for k, v in start["headers"])

    async def main():
        return await asyncio.gather(one(), one(), one())

    results = asyncio.run(main())
    assert sorted(r[0] for r in results) == [200, 200, 503]
    assert next(h for s, h in results if s == 503)["retry-after"] == "1"
    assert peak[0] == 1 and all(h.get("x-request-id") for _, h in results)


def test_token_buckets():
    from legalir.serve.keys import parse_rate
    from legalir.serve.limits import TokenBuckets

    b = TokenBuckets(max_buckets=2)
    assert [b.take("a", 2.0, 3, now=0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert b.take("a", 2.0, 3, now=0.0) == pytest.approx(0.5)   # empty: one token in half a second
    assert b.take("a", 2.0, 3, now=0.5) == 0.0
    assert b.take("b", 2.0, 3, now=0.5) == 0.0                  # a bucket per name
    b.take("c", 2.0, 3, now=0.5)
    assert "a" not in b._buckets                                # the least recently used is forgotten
    assert parse_rate("20/s") == 20 and parse_rate("600/min") == 10 and parse_rate("off") is None
    with pytest.raises(Exception, match="N/s"):
        parse_rate("fast")


def test_key_lines(tmp_path):
    from legalir.serve import keys
    from legalir.serve.config import ConfigError

    ring = keys.KeyRing(keys.parse(f"{FULL_KEY}\n# note\n\nsha256:{keys.digest(SEARCH_KEY).upper()} id=s "
                                   f"scopes=search rate=5/s\n", "k"))
    full, s = ring.check(FULL_KEY), ring.check(SEARCH_KEY)
    assert full.id == keys.digest(FULL_KEY)[:8] and full.scopes == set(keys.SCOPES) and full.rate is None
    assert s.id == "s" and s.allows("search") and not s.allows("runs") and s.rate == 5
    assert ring.check("nope") is None and ring.check(None) is None
    env_ring = keys.load(env={keys.ENV: f"{FULL_KEY} id=a; {SEARCH_KEY} id=b scopes=runs"})
    assert len(env_ring) == 2 and env_ring.check(SEARCH_KEY).scopes == {"runs"}
    for text, words in [("short", "at least 16"), (f"{FULL_KEY} scopes=admin", "unknown scope"),
                        ("sha256:abc", "64 hex digits"), (f"{FULL_KEY} id=x\n{SEARCH_KEY} id=x", "already on line 1"),
                        (f"{FULL_KEY} colour=red", "unknown option"), (f"{FULL_KEY} rate=fast", "rate=")]:
        with pytest.raises(ConfigError, match=words):
            keys.KeyRing(keys.parse(text, "k"))
    empty = tmp_path / "keys.txt"
    empty.write_text("# nothing\n")
    with pytest.raises(ConfigError, match="holds no key"):
        keys.load(empty, env={})
    assert keys.load(None, env={}) is None


# ------------------------------------------------------------------ the command line
def _serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "legalir.cli", "serve", *args], capture_output=True, text=True,
                          timeout=WAIT_S, env={**env(), "LEGALIR_API_KEYS": ""})


def test_non_loopback_needs_keys(sample_index):
    r = _serve("--index", f"acord={sample_index}", "--host", "0.0.0.0", "--port", "0")
    assert r.returncode == 2 and "every network interface" in r.stderr and "--api-keys" in r.stderr
    assert "--insecure-no-auth" in r.stderr and "legalir serve: http" not in r.stderr


def test_busy_port_reports_the_bind_error_alone(sample_index):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        r = _serve("--index", f"acord={sample_index}", "--port", str(port))
    assert r.returncode == 2 and f"127.0.0.1:{port}: the port is in use" in r.stderr
    assert "legalir serve: http" not in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0  # one line: nothing was loaded before the port was bound
