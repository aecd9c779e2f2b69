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

from conftest import WAIT_S
from serve_helpers import FULL_KEY, SEARCH_KEY, start_server, stop_server

CLIENT_TIMEOUT = 3.0
MAX_CONN = 24
#: ids a run may hold (no whitespace: TREC lines are split on it), each a path-hostile character or two
ODD_IDS = ["sec/1.2", "a/../b", "../etc/passwd", "50%", "q?x=1", "frag#1", "semi;colon", "plus+sign", "back\\slash",
           "Tex.Prop.Code§92.103", "ünï/cödé", "/lead", "trail/", "a//b", "%2F", "&amp"]


@pytest.fixture(scope="module")
def server(sample_collection, sample_index, tmp_path_factory):
    from legalir import trec
    from legalir.search import lucene

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
    s = start_server(root, ["--index", f"acord={sample_index}", "--run", f"bm25={root / 'bm25.trec'}",
                            "--run", f"odd={root / 'odd.trec'}", "--qrels", f"bm25={sample_collection / 'qrels' / 'test.txt'}",
                            "--qrels", f"odd={root / 'odd.qrels'}"],
                     ["--rate-limit", "1000/s", "--allowed-host", "*", "--client-timeout", str(CLIENT_TIMEOUT),
                      "--max-connections-per-client", str(MAX_CONN)])
    yield s
    stop_server(s)


def request(server, method: str, path: str, key: str | None = None, headers: dict | None = None,
            body: bytes | None = None, source: str = "127.0.0.1", timeout: float = WAIT_S):
    """(status, headers, JSON or text body) of one request from the loopback address ``source``."""
    conn = http.client.HTTPConnection("127.0.0.1", server["port"], timeout=timeout, source_address=(source, 0))
    try:
        h = dict(headers or {})
        if key:
            h["Authorization"] = f"Bearer {key}"
        conn.request(method, path, body=body, headers=h)
        resp = conn.getresponse()
        raw = resp.read()
        try:
            data = json.loads(raw)
        except ValueError:
            data = raw.decode("utf-8", "replace")
        return resp.status, resp.headers, data
    finally:
        conn.close()


def _read_reply(s: socket.socket) -> bytes:
    """Everything the server sends on ``s`` until it closes it (or the socket's timeout)."""
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            return out
        if not chunk:
            return out
        out += chunk


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
        t0 = time.monotonic()
        for _ in range(5):
            status, _, body = request(server, "GET", "/search?q=governing+law&k=3", key=FULL_KEY, timeout=10)
            assert status == 200 and len(body["hits"]) == 3
            status, _, text = request(server, "GET", "/metrics", key=FULL_KEY, timeout=10)
            assert status == 200 and "legalir_requests_total" in text
        assert time.monotonic() - t0 < CLIENT_TIMEOUT, "answered only once the stalled uploads were dropped"
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
    idle, slow = socket.socket(), socket.socket()
    try:
        for s in (idle, slow):
            s.settimeout(WAIT_S)
            s.bind(("127.0.0.2", 0))
            s.connect(("127.0.0.1", port))
        slow.sendall(b"GET /search?q=law HTTP/1.1\r\nHost: 127.0.")
        t0 = time.monotonic()
        assert request(server, "GET", "/health")[0] == 200
        assert _read_reply(idle) == b"" and _read_reply(slow) == b""
        assert CLIENT_TIMEOUT - 0.5 < time.monotonic() - t0 < CLIENT_TIMEOUT + 10
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
    pytest.importorskip("websockets", reason="the page test drives chromium with the websockets package")
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
