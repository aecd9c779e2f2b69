"""`legalir serve` under hostile clients, over real sockets to a real server on loopback: stalled uploads and
idle connections (a body and header deadline, a per-client connection cap), the Origin check with
``--allowed-host '*'``, a flood of wrong keys (429), the key file's repeated keys and names, ids with ``/`` and
other characters, and the per-request time budget (503 / a tool error, the worker freed).

Attackers connect from other loopback addresses (127.0.0.2, 127.0.0.3: the whole of 127/8 is this machine) so
that what is done to their address does not touch the well-behaved client at 127.0.0.1."""
from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.parse

import pytest
from conftest import WAIT_S, examples, requires
from helpers import request, wait_for
from serve_helpers import FULL_KEY, SEARCH_KEY, start_server, stop_server

CLIENT_TIMEOUT = 3.0
MAX_CONN = 24
#: ids a run may hold (no whitespace: TREC lines are split on it), each a path-hostile character or two
#: a key per scope, and one with all of them (id -> (key, scopes))
SCOPE_KEYS = {"all": (FULL_KEY, ("search", "runs", "metrics")), "search": (SEARCH_KEY, ("search",)),
              "runs": ("runs-key-0123456789abcdefghijklmnopq", ("runs",)),
              "metrics": ("metrics-key-0123456789abcdefghijklmn", ("metrics",))}
ODD_IDS = ["sec/1.2", "a/../b", "../etc/passwd", "50%", "q?x=1", "frag#1", "semi;colon", "plus+sign", "back\\slash",
           "Tex.Prop.Code§92.103", "ünï/cödé", "/lead", "trail/", "a//b", "%2F", "&amp"]


@pytest.fixture(scope="module")
def server(sample_collection, sample_index, tmp_path_factory):
    from legalir import trec
    from legalir.search import bm25 as lucene

    root = tmp_path_factory.mktemp("serve-hostile")
    bm25 = lucene.BM25(sample_index)
    try:
        run = bm25.search(trec.read_topics(sample_collection / "topics" / "test.jsonl"), 10)
    finally:
        bm25.close()
    trec.write_run(root / "bm25.trec", run, tag="bm25")
    ranking = next(iter(run.values()))
    trec.write_run(root / "odd.trec", {qid: ranking for qid in ODD_IDS}, tag="odd")
    best = trec.ranking(ranking)[0][0]
    (root / "odd.qrels").write_text("".join(f"{qid} 0 {best} 1\n" for qid in ODD_IDS))
    (root / "scoped-keys.txt").write_text("".join(f"{key} id={name} scopes={','.join(scopes)}\n"
                                                  for name, (key, scopes) in SCOPE_KEYS.items()))
    s = start_server(root, ["--index", f"acord={sample_index}", "--run", f"bm25={root / 'bm25.trec'}",
                            "--run", f"odd={root / 'odd.trec'}", "--qrels", f"bm25={sample_collection / 'qrels' / 'test.txt'}",
                            "--qrels", f"odd={root / 'odd.qrels'}"],
                     ["--api-keys", str(root / "scoped-keys.txt"), "--rate-limit", "1000/s", "--allowed-host", "*", "--client-timeout", str(CLIENT_TIMEOUT),
                      "--max-connections-per-client", str(MAX_CONN)], keys=False)
    yield s
    stop_server(s)



def _read_reply(s: socket.socket) -> bytes:
    """Everything the server sends on ``s`` until it closes it (or the socket's timeout)."""
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except (TimeoutError, ConnectionResetError):
            return out
        if not chunk:
            return out
        out += chunk


def _peek(s: socket.socket) -> bytes | None:
    """What the server has sent on ``s`` so far, without waiting or consuming it: None while nothing came and the
    connection is open, b"" once the server closed it."""
    timeout = s.gettimeout()
    s.setblocking(False)  # (with a timeout set, Python waits for data before recv whatever its flags)
    try:
        return s.recv(64, socket.MSG_PEEK)
    except BlockingIOError:
        return None
    finally:
        s.settimeout(timeout)


#: the metric of connections closed for a request header not sent within the client timeout
HEADER_TIMEOUTS = 'legalir_client_timeouts_total{stage="header"}'


def test_stalled_uploads_hold_no_worker(server):
    """100 uploads that send a header, `Content-Length: 1000` and 10 bytes, then nothing, from one address: /search
    and /metrics from another address answer as usual; the stalled uploads are answered 408 after the client
    timeout, and those beyond the per-client connection cap are refused at once."""
    port = server["port"]
    head = (f"POST /search/batch HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {FULL_KEY}\r\n"
            f"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"queries\"").encode()
    stalled = []
    try:
        for _ in range(100):
            s = socket.socket()
            s.settimeout(WAIT_S)
            s.bind(("127.0.0.2", 0))
            s.connect(("127.0.0.1", port))
            s.sendall(head)
            stalled.append(s)
        for _ in range(5):
            status, _, body = request(server, "GET", "/search?q=governing+law&k=3", key=FULL_KEY)
            assert status == 200 and len(body["hits"]) == 3
            status, _, text = request(server, "GET", "/metrics", key=FULL_KEY)
            assert status == 200 and "legalir_requests_total" in text
        # answered while the stalled uploads are still held: none of them has had its 408 yet (an order of events,
        # not a clock: a server that answered only once it dropped them would have sent those first)
        early = [s for s in stalled if (_peek(s) or b"").startswith(b"HTTP/1.1 408")]
        assert not early, f"{len(early)} stalled uploads were dropped before /search and /metrics answered"
        replies = [_read_reply(s) for s in stalled]
    finally:
        for s in stalled:
            s.close()
    timed_out = [r for r in replies if r.startswith(b"HTTP/1.1 408")]
    refused = [r for r in replies if r.startswith(b"HTTP/1.1 429")]
    assert len(timed_out) == MAX_CONN and len(refused) == 100 - MAX_CONN, [r[:40] for r in replies[:3]]
    assert b"within 3 s" in timed_out[0] and b"connections at once" in refused[0]
    assert b"retry-after" in refused[0].lower()
    _, _, text = request(server, "GET", "/metrics", key=FULL_KEY)
    assert f"legalir_connections_refused_total {100 - MAX_CONN}" in text
    assert 'legalir_client_timeouts_total{stage="body"} ' in text


def test_idle_and_slow_header_connections_are_closed(server):
    """A connection that sends nothing, and one that sends half a request line and stops, are closed after the
    client timeout (neither holds anything meanwhile: /health answers)."""
    port = server["port"]
    before = _metric(server, HEADER_TIMEOUTS)
    idle, slow = socket.socket(), socket.socket()
    try:
        for s in (idle, slow):
            s.settimeout(WAIT_S)
            s.bind(("127.0.0.2", 0))
            s.connect(("127.0.0.1", port))
        slow.sendall(b"GET /search?q=law HTTP/1.1\r\nHost: 127.0.")
        assert request(server, "GET", "/health")[0] == 200
        assert _peek(idle) is None and _peek(slow) is None  # both still open once /health answered: not closed at once
        assert _read_reply(idle) == b"" and _read_reply(slow) == b""  # then closed (read until the server closes)
        # both closed by the client timeout (no request header within it), and counted: the count, not a clock
        assert _metric(server, HEADER_TIMEOUTS) == before + 2
    finally:
        idle.close()
        slow.close()


def test_origin_is_checked_with_any_host(server):
    """`--allowed-host '*'` accepts any Host header, not any Origin: a page elsewhere cannot post; `Origin: null`
    (a sandboxed frame, a file: page) may not change anything."""
    batch = json.dumps({"queries": [{"q": "governing law"}], "k": 2}).encode()
    json_h = {"Content-Type": "application/json"}
    status, _, body = request(server, "POST", "/search/batch", FULL_KEY, {**json_h, "Origin": "http://evil.com"}, batch)
    assert status == 403 and "cross-origin" in body["error"]
    status, _, body = request(server, "POST", "/search/batch", FULL_KEY, {**json_h, "Origin": "null"}, batch)
    assert status == 403 and "Origin: null" in body["error"]
    status, _, body = request(server, "POST", "/mcp", FULL_KEY, {**json_h, "Origin": "null"}, b"{}")
    assert status == 403
    assert request(server, "GET", "/indexes", FULL_KEY, {"Origin": "http://evil.com"})[0] == 403
    # the server's own page, and any Host (a proxy's name)
    assert request(server, "POST", "/search/batch", FULL_KEY,
                   {**json_h, "Origin": f"http://127.0.0.1:{server['port']}"}, batch)[0] == 200
    assert request(server, "GET", "/indexes", FULL_KEY, {"Host": "search.example.org"})[0] == 200
    assert request(server, "GET", "/indexes", FULL_KEY, {"Origin": "null"})[0] == 200  # reading: allowed


def test_wrong_keys_are_rate_limited_per_address(server):
    """300 wrong keys in a row from one address: the first few get 401, then 429 with Retry-After, even for the
    right key from that address; another address is not affected."""
    statuses, retry = [], None
    conn = http.client.HTTPConnection("127.0.0.1", server["port"], timeout=WAIT_S, source_address=("127.0.0.3", 0))
    try:
        for i in range(300):
            conn.request("GET", "/indexes", headers={"Authorization": f"Bearer wrong-key-{i:04d}-0123456789abcdef"})
            resp = conn.getresponse()
            resp.read()
            statuses.append(resp.status)
            if resp.status == 429 and retry is None:
                retry = resp.headers["Retry-After"]
    finally:
        conn.close()
    assert set(statuses) == {401, 429} and statuses.count(401) <= 20, statuses.count(401)
    assert statuses[:5] == [401] * 5 and statuses[-1] == 429 and int(retry) >= 1
    assert request(server, "GET", "/indexes", FULL_KEY, source="127.0.0.3")[0] == 429
    assert request(server, "GET", "/indexes", FULL_KEY)[0] == 200


@pytest.mark.parametrize("qid", ODD_IDS)
def test_odd_topic_ids_open_in_the_run_explorer(server, qid):
    """A topic id with `/` (or `%`, `?`, `#`, `..`, non-ASCII) is found when the URL carries it percent-encoded as
    the page does (encodeURIComponent; Python's quote with safe='')."""
    status, _, body = request(server, "GET", f"/runs/odd/topics/{urllib.parse.quote(qid, safe='')}?k=3", FULL_KEY)
    assert status == 200, body
    assert body["qid"] == qid and len(body["hits"]) == 3 and body["gold"][0]["rank"] == 1
    listed = request(server, "GET", "/runs/odd/topics", FULL_KEY)[2]
    assert qid in {t["qid"] for t in listed["topic_list"]}


def test_repeated_keys_and_names_are_refused_with_their_line(tmp_path):
    from legalir.serve import keys
    from legalir.serve.config import ConfigError

    f = tmp_path / "keys.txt"
    f.write_text(f"# keys\n{FULL_KEY} id=a\n\n{SEARCH_KEY} id=b\n{FULL_KEY} id=c scopes=search\n")
    with pytest.raises(ConfigError, match=rf"{f}:5: this key is already on line 2"):
        keys.load(f, env={})
    f.write_text(f"{FULL_KEY} id=a\nsha256:{keys.digest(FULL_KEY)} id=b\n")  # the same key, hashed
    with pytest.raises(ConfigError, match=rf"{f}:2: this key is already on line 1"):
        keys.load(f, env={})
    f.write_text(f"{FULL_KEY} id=a\n# note\n{SEARCH_KEY} id=a\n")
    with pytest.raises(ConfigError, match=rf"{f}:3: id 'a' is already on line 1"):
        keys.load(f, env={})
    with pytest.raises(ConfigError, match="LEGALIR_API_KEYS: key 2: this key is already key 1"):
        keys.load(None, env={keys.ENV: f"{FULL_KEY} id=a; {FULL_KEY} id=b"})


def test_page_opens_odd_topic_ids(server):
    """The run explorer in headless chromium: every topic of the run of odd ids opens (the page builds
    /runs/RUN/topics/QID with encodeURIComponent, the server takes the id whole), no request fails."""
    requires("websockets")
    from browser import Chromium

    with Chromium() as b:  # skips when no chromium is installed
        page = b.load(server["base"] + "/")
        deadline = time.time() + WAIT_S
        while True:  # the prompt opens once /indexes has answered 401
            try:
                page.call("Page.handleJavaScriptDialog", {"accept": True, "promptText": FULL_KEY})
                break
            except RuntimeError:
                assert time.time() < deadline, "the page never asked for a key"
                time.sleep(0.1)
        while not page.evaluate("document.body.dataset.ready === '1'"):
            assert time.time() < deadline, "the page did not load with the key"
            time.sleep(0.1)
        shown = page.evaluate("""(async () => {
            document.querySelector('#run').value = 'odd';
            await loadRun();
            const out = [];
            for (let i = 0; i < state.shown.length; i++) {
                await showTopic(i);
                const v = document.querySelector('#topic-view');
                out.push([state.shown[i].qid, v.querySelector('.small') ? v.querySelector('.small').textContent : '',
                          v.querySelectorAll('table.hits tr.doc').length, v.textContent.includes('no such endpoint')]);
            }
            return out;
        })()""")
        assert sorted(q for q, *_ in shown) == sorted(ODD_IDS)
        for qid, line, rows, failed in shown:
            retrieved = int(line.split(" retrieved")[0].split()[-1])  # "topic QID · i of n · N retrieved"
            assert not failed and line.startswith(f"topic {qid} ") and rows == retrieved > 0, (qid, line, rows)
        assert not [e for e in page.errors if " 401 " not in e], page.errors


def test_every_route_and_tool_against_every_scope(server):
    """One scope table (legalir.serve.keys) decides both faces: every HTTP route and every MCP tool, called with a
    key of each scope, is refused (403 / a tool error) exactly when the table says its scope is missing; MCP
    list_indexes shows runs and qrels exactly to the keys that may GET /runs."""
    import asyncio

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from legalir.serve import keys

    hits = request(server, "GET", "/search?q=governing+law&k=1", FULL_KEY)[2]["hits"]
    docid = hits[0]["id"]
    batch = json.dumps({"queries": [{"q": "governing law"}], "k": 1}).encode()
    calls = {  # route template -> (method, path, body): one request each
        "/search": ("GET", "/search?q=law&k=1", None), "/search/batch": ("POST", "/search/batch", batch),
        "/doc/{collection}/{docid:path}": ("GET", f"/doc/acord/{urllib.parse.quote(docid, safe='')}", None),
        "/indexes": ("GET", "/indexes", None), "/collections": ("GET", "/collections", None),
        "/history": ("GET", f"/history?id={urllib.parse.quote(docid, safe='')}", None),
        "/runs": ("GET", "/runs", None), "/runs/{run}/topics": ("GET", "/runs/bm25/topics", None),
        "/runs/evaluate": ("POST", "/runs/evaluate", json.dumps({"run": "bm25"}).encode()),
        "/runs/{run}/topics/{qid:path}": ("GET", "/runs/odd/topics/sec%2F1.2", None),
        "/metrics": ("GET", "/metrics", None), "/health": ("GET", "/health", None), "/": ("GET", "/", None),
        "/static/{name}": ("GET", "/static/app.js", None),
        "/static/swagger": ("GET", "/static/swagger/swagger-ui.css", None), "/docs": ("GET", "/docs", None),
        "/openapi.json": ("GET", "/openapi.json", None),
    }
    assert set(calls) | {"/mcp"} == set(keys.ROUTE_SCOPES) | set(keys.ROUTE_ACCESS)
    openapi = request(server, "GET", "/openapi.json")[2]
    assert f"must arrive within {CLIENT_TIMEOUT:g} s (408" in openapi["info"]["description"]  # limits in /docs
    assert "work may take 30 s (503" in openapi["info"]["description"]
    assert {p.replace("{docid}", "{docid:path}").replace("{qid}", "{qid:path}") for p in openapi["paths"]} <= set(calls)
    for template, (method, path, body) in calls.items():
        needed = keys.route_scope(template)
        for name, (key, scopes) in SCOPE_KEYS.items():
            status, _, got = request(server, method, path, key, {"Content-Type": "application/json"}, body)
            if needed is None or needed in scopes:
                assert status == 200, (template, name, status, got)
            else:
                assert status == 403 and f"scope {needed}" in got["error"], (template, name, status)
        if keys.ROUTE_ACCESS.get(template) != keys.OPEN:
            assert request(server, method, path, None, {"Content-Type": "application/json"}, body)[0] == 401, template

    tool_args = {"list_indexes": {}, "search": {"index": "acord", "query": "governing law", "k": 1},
                 "get_document": {"id": docid, "collection": "acord"}, "history": {"id": docid, "index": "acord"},
                 "evaluate": {"run": "bm25"},
                 "fuse": {"runs": ["bm25"], "run_texts": [(server["root"] / "bm25.trec").read_text()]}}
    assert set(tool_args) == set(keys.TOOL_SCOPES)

    async def main():
        for name, (key, scopes) in SCOPE_KEYS.items():
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=WAIT_S) as http:
                async with Client(streamable_http_client(server["base"] + "/mcp", http_client=http)) as client:
                    listed = {t.name for t in (await client.list_tools()).tools}
                    assert listed == set(keys.TOOL_SCOPES)
                    for tool, args in tool_args.items():
                        needed = keys.TOOL_SCOPES[tool]
                        result = await client.call_tool(tool, args)
                        text = result.content[0].text if result.content else ""
                        if needed in scopes:
                            assert not result.is_error, (tool, name, text)
                        else:
                            assert result.is_error and f"scope {needed}" in text, (tool, name, text)
                        if tool == "list_indexes" and not result.is_error:
                            got = json.loads(text)
                            runs_shown = "runs" in scopes
                            assert ("runs" in got) == runs_shown and ("qrels" in got) == runs_shown, (name, got.keys())
                            assert runs_shown or "bm25.trec" not in text
                            assert got["indexes"][0]["name"] == "acord"
    asyncio.run(main())


# ------------------------------------------------------------------ the time budget
BUDGET = 0.25


@pytest.fixture(scope="module")
def budget_server(sample_collection, sample_index, tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-budget")
    s = start_server(root, ["--index", f"acord={sample_index}", "--qrels", str(sample_collection / "qrels" / "test.txt")],
                     ["--request-timeout", str(BUDGET), "--rate-limit", "100000/s", "--max-body", "20000000"])
    s["qrels"] = sample_collection / "qrels" / "test.txt"
    yield s
    stop_server(s)


def _metric(server, name: str) -> float:
    text = request(server, "GET", "/metrics", FULL_KEY)[2]
    return float(next(line.split()[-1] for line in text.splitlines() if line.startswith(name + " ")))


def test_a_request_over_its_budget_is_answered_503_and_frees_its_slot(budget_server):
    """A batch of 200 long queries (seconds of work) against a 0.25 s budget: 503 with Retry-After long before the
    work ends; the work is abandoned (counted while it runs, logged when it ends); an MCP tool call over the
    budget is a tool error; once the abandoned work ended, searches are answered again."""
    import asyncio
    import random

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    s = budget_server
    rnd = random.Random(0)
    words = "governing law indemnification confidentiality termination assignment notice warranty liability".split()
    queries = [{"q": " ".join(rnd.choice(words) + str(rnd.randrange(50)) for _ in range(100)) + " law"}
               for _ in range(200)]
    status, headers, body = request(s, "POST", "/search/batch", FULL_KEY, {"Content-Type": "application/json"},
                                    json.dumps({"queries": queries, "k": 100}).encode())
    assert status == 503 and f"time budget of {BUDGET:g} s" in body["error"] and headers["Retry-After"] == "1"
    assert _metric(s, "legalir_requests_over_budget_total") == 1
    # answered long before the work ends (no clock: the order of events): the batch (seconds of work past the
    # 0.25 s budget) still runs when the 503 is in, so the gauge counts it; an answer that waited for the work
    # would find it 0
    assert _metric(s, "legalir_abandoned_work") == 1

    qids = sorted({line.split()[0] for line in s["qrels"].read_text().splitlines()})
    runs = ["".join(f"{qids[i % len(qids)]} Q0 d{i}-{j} {i // len(qids) + 1} {10 ** 6 - i}.5 r{j}\n" for i in range(45000))
            for j in range(2)]

    async def mcp_fuse():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {FULL_KEY}"}, timeout=WAIT_S) as http:
            async with Client(streamable_http_client(s["base"] + "/mcp", http_client=http)) as client:
                return await client.call_tool("fuse", {"run_texts": runs, "qrels": "qrels"})
    result = asyncio.run(mcp_fuse())
    text = result.content[0].text
    assert result.is_error and ("time budget" in text or "worker threads are finishing" in text), text

    # the abandoned work runs to its end, then lets its thread go
    wait_for(lambda: _metric(s, "legalir_abandoned_work") == 0, "the abandoned work to end")
    status, _, body = request(s, "GET", "/search?q=governing+law&k=2", FULL_KEY)
    assert status == 200 and len(body["hits"]) == 2
    assert "work abandoned over the time budget (Engine.search_many) ended after" in s["log"].read_text()


def test_workers_budget_in_process():
    """Workers.call: past the budget OverBudget at once; a call still queued is cancelled (never runs), a running
    one is abandoned (counted until it ends); while abandoned work holds every thread, calls are refused at once."""
    import asyncio
    import threading

    from legalir.serve.workers import OverBudget, Workers

    pool = Workers(2, budget=0.1)
    release, ran = threading.Event(), []

    def blocked(tag):
        ran.append(tag)
        release.wait(WAIT_S)
        return tag

    async def main():
        got = await asyncio.gather(*(pool.call(blocked, t) for t in ("a", "b", "c")), return_exceptions=True)
        assert all(isinstance(g, OverBudget) for g in got), got
        assert pool.abandoned == 2 and sorted(ran) == ["a", "b"]  # "c" was still queued: cancelled
        with pytest.raises(OverBudget, match="all 2 worker threads are finishing"):
            await pool.call(blocked, "d")
        release.set()
        # the gauge falls in the worker threads (the futures' callbacks run there): nothing on this loop is awaited
        wait_for(lambda: pool.abandoned == 0, "the abandoned-work gauge to fall", interval=0.01)
        assert await pool.call(lambda: "ok") == "ok" and "c" not in ran and pool.over_budget == 3
    try:
        asyncio.run(main())
    finally:
        release.set()
        pool.shutdown()


def test_abandoned_work_frees_its_slot_when_its_log_line_fails():
    """The line that says abandoned work ended is written before the gauge falls, and the gauge falls even when
    writing it raises: a handler that raised (the command line's, while another thread imported tqdm) once left
    ``legalir_abandoned_work`` at 1 and the thread counted as busy for good."""
    import asyncio
    import logging
    import threading

    from legalir.serve import workers as workers_mod
    from legalir.serve.workers import OverBudget, Workers

    class Raising(logging.Handler):
        def emit(self, record):
            raise AttributeError("partially initialized module 'tqdm' has no attribute 'tqdm'")

    handler, logger = Raising(), workers_mod._log
    logger.addHandler(handler)
    pool = Workers(1, budget=0.05)
    release = threading.Event()

    async def main():
        for _ in range(50):  # a call given up before the thread took it is cancelled, not abandoned: call again
            with pytest.raises(OverBudget):
                await pool.call(release.wait, WAIT_S)
            if pool.abandoned:
                break
        assert pool.abandoned == 1
        release.set()
        # the gauge falls in the worker thread (the future's callback runs there): nothing on this loop is awaited
        wait_for(lambda: pool.abandoned == 0, "the abandoned-work gauge to fall", interval=0.01)
        # the slot is free: the next call is answered (a budget a loaded machine meets: 0.05 s was missed once)
        pool.budget = WAIT_S
        assert await pool.call(lambda: "ok") == "ok"
    try:
        asyncio.run(main())
    finally:
        release.set()
        logger.removeHandler(handler)
        pool.shutdown()


# ------------------------------------------------------------------ snippets: the faster one answers as before
def _snippet_reference(text, terms, width):
    """legalir.serve.engine.snippet as it was: every word's offsets and fold, then the same window."""
    from legalir.serve.display import _WORD, norm_term

    words = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]
    if len(words) <= width:
        return " ".join(text.split())
    wanted = set(terms)
    hit = [norm_term(w) in wanted for _, _, w in words]
    cur = sum(hit[:width])
    best, best_at = cur, 0
    for start in range(1, len(words) - width + 1):
        cur += hit[start + width - 1] - hit[start - 1]
        if cur > best:
            best, best_at = cur, start
    if best > 0:
        inside = [i for i in range(best_at, best_at + width) if hit[i]]
        best_at = max(0, min(len(words) - width, (inside[0] + inside[-1]) // 2 - width // 2))
    end = best_at + width
    start_char = 0 if best_at == 0 else words[best_at][0]
    end_char = len(text) if end >= len(words) else words[end - 1][1]
    out = " ".join(text[start_char:end_char].split())
    return ("… " if best_at > 0 else "") + out + (" …" if end < len(words) else "")


def test_snippet_matches_the_reference():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from legalir.serve.engine import query_terms, snippet

    vocab = ["lease", "leases", "leased", "tenant", "Tenants", "deposit", "the", "of", "§", "92.103", "notice",
             "noticing", "landlord's", "ünïcode", "a_b", "x"]
    sep = st.sampled_from([" ", "  ", "\n", ", ", ". ", "-", "_", "/", "\t"])
    text = st.lists(st.tuples(st.sampled_from(vocab), sep), max_size=120).map(
        lambda ws: "".join(w + s for w, s in ws))

    @settings(max_examples=examples(200, deep=0.25))
    @given(text, st.lists(st.sampled_from(vocab), max_size=5), st.integers(1, 50))
    def check(t, q, width):
        terms = query_terms(" ".join(q))
        assert snippet(t, terms, width) == _snippet_reference(t, terms, width)
    check()


def test_snippet_of_legal_text_without_splitting_it_matches_the_reference():
    """The path that never splits a text into words (no word character outside ASCII: ``§``, curly quotes and
    dashes are not ones) answers as the reference and as the path that splits it, for any terms a caller passes
    (upper case, empty, with a hyphen, one letter, a term that is the start of another)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from legalir.serve import display

    vocab = ["lease", "leases", "Leased", "leasing", "LEASE", "tenant", "Tenants", "landlord", "land", "deposit",
             "the", "of", "§", "92.103", "notice", "noticing", "noticed", "landlord's", "x", "xs", "a1", "“quoted”",
             "—", "rent-free", "rent", "rents", "r"]
    sep = st.sampled_from([" ", "  ", "\n", ", ", ". ", "-", "_", "/", "\t", "§ ", "’", "…"])
    text = st.lists(st.tuples(st.sampled_from(vocab), sep), min_size=5, max_size=150).map(
        lambda ws: "".join(w + s for w, s in ws))
    sampled = st.sampled_from(["leas", "lease", "tenant", "land", "landlord", "notic", "notice", "x", "r", "rent",
                               "rent-free", "Lease", "", "a1", "92", "ünï", "§"])
    term = st.one_of(sampled, sampled, sampled, st.text(alphabet="aelnrstx", max_size=6))

    # hits two words apart, after the start: each hit's word position is counted from the one before
    t = " ".join([f"w{i}" for i in range(30)] + ["lease", "v0", "v1", "v2", "lease"] + [f"u{i}" for i in range(30)])
    assert display.snippet(t, ["lease"], 5) == _snippet_reference(t, ["lease"], 5) == "… lease v0 v1 v2 lease …"

    @settings(max_examples=examples(300, deep=0.25))
    @given(text, st.lists(term, min_size=1, max_size=5), st.integers(1, 50))
    def check(t, terms, width):
        expected = _snippet_reference(t, terms, width)
        assert display._snippet_ascii(t, tuple(terms), width) == expected
        assert display._snippet_ascii(t, tuple(terms), width, c_off=True) == expected  # the Python path
        assert display._snippet_words(t, tuple(terms), width) == expected
        assert display.snippet(t, terms, width) == expected
    check()


def test_the_c_word_counting_of_snippets_is_built_and_answers_as_python():
    """``legalir._plain``'s ``hit_words`` and ``ascii_words`` (what :func:`legalir.serve.display.snippet` calls where
    they are built) give what the Python path and the regular expression give, on any text: every character,
    every case, words of any length, terms that are the start of others."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from legalir.serve import display

    if display._hit_words is None or display._word_span is None or display._ascii_words is None:
        from conftest import missing_reference

        # optional for users (no C compiler: the Python path); CI builds it
        missing_reference("legalir._plain is not built here, or built before it had hit_words (`pip install -e .` "
                          "builds it again with a C compiler)")
    words = st.sampled_from(["Lease", "leases", "LEASED", "lease1", "tenant", "Tenants", "rent-free", "x", "R",
                             "ünï", "§", "٣", "Ⅻ", "½", "_", "a_b", "“q”", "\x00", "\x7f", "\xff", "İ", "K"])
    text = st.one_of(st.text(max_size=60), st.lists(st.tuples(words, st.sampled_from([" ", "\n", "-", ""])),
                                                    max_size=40).map(lambda ws: "".join(w + s for w, s in ws)))
    term = st.one_of(st.sampled_from(["leas", "lease", "tenant", "rent", "rent-free", "x", "r", "", "ünï", "1"]),
                     st.text(alphabet="aelnrstx1", max_size=6))

    @settings(max_examples=examples(300, deep=0.25))
    @given(text, st.lists(term, max_size=4), st.integers(0, 30))
    def check(t, terms, width):
        assert display._ascii_words(t) == (not display._NON_ASCII_WORD.search(t))
        raw, terms = t.encode("ascii", "replace"), tuple(terms)
        count, starts, at = display._hit_words(raw, display._hit_prefixes(terms), display._hit_forms(terms))
        expected = display._hit_words_py(raw, terms, width)
        assert count == expected[0]
        if count > width:
            assert (starts, at) == expected[1:]
        if display._ascii_words(t):  # the words of the bytes are the text's
            for start in {0, *starts, len(raw) // 2}:
                after = [(m.start(), m.end()) for m in display._WORD.finditer(t, start)]
                first, last = width // 3, width
                assert display._word_span(raw, start, first, last) == (
                    after[first][0] if first < len(after) else -1, after[last][1] if last < len(after) else -1)
    check()


def _duplicates_reference(texts):
    """legalir.serve.engine's duplicate marking as it was: every text normalised whole."""
    first, out = {}, []
    for i, t in enumerate(texts):
        same = " ".join(t.split()).lower() if t is not None else ""
        out.append(first.get(same) if same else None)
        if same:
            first.setdefault(same, i)
    return out


def test_duplicates_normalise_only_texts_whose_ends_meet_and_answer_as_before():
    """:func:`legalir.serve.display.duplicates` splits a whole text only where its first and last words meet
    another's; it marks exactly what normalising every text marks: long texts equal but for one middle word,
    whitespace of every kind, letters whose lower case reads their context (final sigma) or grows (İ)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from legalir.serve import display

    word = st.sampled_from(["Lease", "lease", "LEASE", "ΟΔΟΣ", "οδος", "οδοσ", "Σ", "σ", "ς", "İ", "i̇", "K", "k",
                            "§", "1", "x'", "", "a"])
    sep = st.sampled_from([" ", "  ", "\n", "\t", "\x1c", "\xa0", "\u2003", "\x85", ""])
    words = st.lists(st.tuples(word, sep), max_size=25).map(lambda ws: "".join(w + s for w, s in ws))
    # texts sharing long ends and differing (or not) in the middle
    ends = " ".join(f"w{i}" for i in range(display._ENDS + 2))
    text = st.one_of(st.none(), words, words.map(lambda m: f"{ends} {m} {ends}"),
                     words.map(lambda m: f" {ends.upper()}\n{m}\t{ends} "))

    @settings(max_examples=examples(300, deep=0.25))
    @given(st.lists(text, max_size=12))
    def check(texts):
        assert display.duplicates(texts) == _duplicates_reference(texts)
    check()
    assert display.duplicates(["A  b", "a b", None, " ", "a\nB", "c"]) == [None, 0, None, None, 0, None]


def _describe_reference(rec):
    """legalir.serve.display.describe as it was: every line of the text split, then joined again."""
    fields = {k: v for k, v in rec.items() if k not in ("id", "contents")}
    text = str(rec.get("contents", ""))
    citation = fields.get("citation") or fields.get("source") or None
    heading = fields.get("heading_path") or fields.get("path") or None
    lines = text.split("\n")
    if citation and lines and lines[0].strip() == str(citation).strip():
        lines = lines[1:]
        if heading is None and lines and " > " in lines[0]:
            heading = lines[0].strip()
            lines = lines[1:]
    return {"citation": citation, "heading_path": heading, "state": fields.get("state"),
            "category": fields.get("category"), "fields": fields, "body": "\n".join(lines).strip()}


def test_describe_reads_only_the_lines_it_shows_and_answers_as_before():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from legalir.serve.display import describe

    line = st.sampled_from(["GA Code § 1-2", " GA Code § 1-2 ", "Title 1 > Chapter 2", "A > B", "", " ", "text",
                            "rent > due", "GA Code § 1-2\t"])
    contents = st.lists(line, max_size=5).map("\n".join)
    meta = st.fixed_dictionaries({}, optional={"citation": st.sampled_from(["GA Code § 1-2", "", "other"]),
                                               "source": st.sampled_from(["GA Code § 1-2", "x"]),
                                               "heading_path": st.sampled_from(["H > I", ""]),
                                               "path": st.sampled_from(["P", ""]), "state": st.just("georgia"),
                                               "category": st.just("c"), "_partition": st.just("ga")})

    @settings(max_examples=examples(300, deep=0.25))
    @given(contents, meta)
    def check(text, fields):
        rec = {"id": "d1", "contents": text, **fields}
        assert describe(rec) == _describe_reference(rec)
    check()


# ------------------------------------------------------------------ JSON bodies: orjson answers as json.dumps did
def test_json_bodies_are_what_json_dumps_wrote_and_refuse_nan_as_it_did():
    """legalir.serve.app.json_bytes (orjson, which writes NaN and infinity as null without a word) against the
    reference it replaced, ``json.dumps(allow_nan=False, ensure_ascii=False)`` encoded as UTF-8, on generated
    values: the same JSON value, or the same refusal (ValueError: a NaN or an infinity, a lone surrogate),
    never a null for a number."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from legalir.serve import app as app_mod

    assert app_mod.orjson is not None  # the serve extra's writer is the one under test
    leaves = (st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70)
              | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8))
    values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                          | st.dictionaries(st.text(max_size=4) | st.integers(-5, 5), inner, max_size=4),
                          max_leaves=24)

    @settings(max_examples=examples(400, deep=0.5))
    @given(values)
    def check(obj):
        try:
            want = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
        except ValueError:
            with pytest.raises(ValueError):
                app_mod.json_bytes(obj)
            return
        got = app_mod.json_bytes(obj)
        assert json.loads(got) == json.loads(want)
    check()
    # a search's answer: nulls in it (a hit without a category), every score finite: written by orjson alone
    answer = {"partition": None, "hits": [{"rank": 1, "score": 4.3818, "category": None, "snippet": "é §"}]}
    assert app_mod.json_bytes(answer) == app_mod.orjson.dumps(answer)
    with pytest.raises(ValueError):
        app_mod.json_bytes({**answer, "hits": [{"rank": 1, "score": float("nan"), "category": None}]})


def test_a_direct_route_answers_with_its_one_check_and_only_such_a_route_is_made_direct():
    """legalir.serve.app._direct: the endpoint gets the arguments the one table checked (a name it does not know is
    the table's 400, before the endpoint runs); a route that declares anything FastAPI would have to parse (a query
    parameter of its own) is refused at start-up, not served without it."""
    import asyncio

    from fastapi import FastAPI, Query, Request

    from legalir.errors import LegalirError, http_status, user_message
    from legalir.serve import app as app_mod

    app, seen = FastAPI(), []

    @app.exception_handler(LegalirError)
    async def refused(request, e):
        return app_mod.json_response({"error": user_message(e)}, http_status(e))

    async def search(request: Request, args: dict = app_mod._arguments("search")):
        seen.append(args)
        return app_mod.json_response(args)

    async def doc(request: Request, args: dict = app_mod._arguments("search"), q: str | None = Query(None)):
        return app_mod.json_response(args)
    # this file's annotations are strings (from __future__), and Request is not among its globals: the objects
    for fn in (search, doc):
        fn.__annotations__.update(request=Request, args=dict)
    doc.__annotations__["q"] = str | None
    app.add_api_route("/search", search, methods=["GET"])
    app.add_api_route("/doc", doc, methods=["GET"])

    route = next(r for r in app.router.routes if getattr(r, "path", "") == "/search")
    before = route.app
    app_mod._direct(app, "/search", "GET", search)
    assert route.app is not before
    with pytest.raises(RuntimeError, match="more than the request"):
        app_mod._direct(app, "/doc", "GET", doc)

    def get(query: str) -> tuple[int, dict]:  # one request through the app's whole ASGI stack
        sent = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
                 "path": "/search", "raw_path": b"/search", "query_string": query.encode(), "root_path": "",
                 "headers": [(b"host", b"localhost")], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
        asyncio.run(app(scope, receive, send))
        return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]))
    assert get("q=lease&k=3") == (200, {"query": "lease", "k": 3}) and seen == [{"query": "lease", "k": 3}]
    status, body = get("q=lease&colour=red")
    assert status == 400 and "colour" in body["error"] and len(seen) == 1
