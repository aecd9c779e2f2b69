"""legalir's MCP tools through the MCP SDK's own client: `legalir mcp` over stdio and `legalir serve`'s /mcp over
streamable HTTP (with an API key), against a real Lucene index, a partitioned one, and a run with its qrels.
Answers are checked against the library called in-process."""
from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from conftest import WAIT_S, requires
from serve_helpers import FULL_KEY, SEARCH_KEY, housing_index, start_server, stop_server

from legalir import collections, trec

requires("mcp")

REPO = Path(__file__).resolve().parent.parent
TOOLS = {"list_indexes", "search", "get_document", "history", "evaluate", "fuse"}


@pytest.fixture(scope="module")
def data(sample_collection, sample_index, tmp_path_factory):
    """The sample index and collection, the Housing fixture's per-jurisdiction index, a BM25 run and its qrels."""
    from legalir.search import bm25 as lucene

    root = tmp_path_factory.mktemp("mcp")
    housing = housing_index(root)
    topics = trec.read_topics(sample_collection / "topics" / "test.jsonl")
    bm25 = lucene.BM25(sample_index)
    try:
        run = bm25.search(topics, 50)
        expected = {qid: trec.ranking(bm25.search({qid: t}, 5)[qid]) for qid, t in topics.items()}
    finally:
        bm25.close()
    trec.write_run(root / "bm25.trec", run, tag="bm25")
    return {"root": root, "sample": sample_collection, "index": sample_index, "housing": housing, "topics": topics,
            "run": run, "expected": expected, "qrels": sample_collection / "qrels" / "test.txt"}


def _args(data) -> list[str]:
    return ["--index", f"acord={data['index']}", "--index", f"housing={data['housing']}",
            "--run", f"bm25={data['root'] / 'bm25.trec'}", "--qrels", str(data["qrels"])]


def _json(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content if isinstance(result.structured_content, dict) and \
        "result" not in result.structured_content else json.loads(result.content[0].text)


async def _exercise(session, data) -> None:
    """The same checks over either transport."""
    from legalir import api

    listed = await session.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == TOOLS
    assert "partition" in tools["search"].input_schema["properties"]
    assert all(len(t.description) > 80 for t in tools.values())  # written for a model to read

    listing = _json(await session.call_tool("list_indexes", {}))
    assert {i["name"] for i in listing["indexes"]} == {"acord", "housing"}
    assert listing["runs"][0]["name"] == "bm25" and listing["qrels"] == ["qrels"]

    # search: the same hits as BM25 in-process
    for qid, t in data["topics"].items():
        got = _json(await session.call_tool("search", {"index": "acord", "query": t.text, "k": 5}))
        assert [(h["rank"], h["id"]) for h in got["hits"]] == [(r, d) for r, (d, _) in enumerate(data["expected"][qid], 1)]
        assert [h["score"] for h in got["hits"]] == pytest.approx([s for _, s in data["expected"][qid]], rel=1e-5)
        assert got["collection"] and all(h["snippet"] for h in got["hits"])
    # a partitioned index: partition routing, any case
    got = _json(await session.call_tool("search", {"index": "housing", "query": "security deposit",
                                                   "partition": "New York", "k": 3}))
    assert got["partition"] == "new_york" and got["hits"] and all(h["state"] == "new york" for h in got["hits"])
    bad = await session.call_tool("search", {"index": "housing", "query": "security deposit"})
    assert bad.is_error and "alaska, new_york, texas" in bad.content[0].text
    bad = await session.call_tool("search", {"index": "nope", "query": "law"})
    assert bad.is_error and "known: acord, housing" in bad.content[0].text
    # an argument the tool does not take is refused, named (issue 36: it used to be dropped without a word)
    bad = await session.call_tool("search", {"index": "acord", "query": "law", "bogus_arg": 1})
    assert bad.is_error and "search has no argument 'bogus_arg'" in bad.content[0].text

    # get_document: the whole record, by the collection (or index) name a search gave
    hit = _json(await session.call_tool("search", {"index": "acord", "query": "governing law", "k": 1}))["hits"][0]
    doc = _json(await session.call_tool("get_document", {"id": hit["id"], "collection": "acord"}))
    record = next(r for r in collections.iter_documents(data["sample"]) if r["id"] == hit["id"])
    assert doc["contents"] == record["contents"]

    # evaluate: by name and inline, as legalir.evaluate scores it
    measures = ["ndcg_cut.10", "P@5"]
    expected = api.evaluate(data["qrels"], data["run"], measures, judged_only=True)  # ACORD's protocol
    by_name = _json(await session.call_tool("evaluate", {"run": "bm25", "measures": measures}))
    assert by_name["judged_only"] is True and by_name["all"] == pytest.approx(expected)
    text = (data["root"] / "bm25.trec").read_text()
    inline = _json(await session.call_tool("evaluate", {"run_text": text, "measures": measures, "qrels": "qrels",
                                                        "judged_only": True, "per_topic": True}))
    assert inline["all"] == pytest.approx(expected) and set(inline["per_topic"]) == set(data["run"])
    bad = await session.call_tool("evaluate", {"run": "bm25", "measures": ["ndcg@ten"]})
    assert bad.is_error

    # fuse: RRF of a run with itself ranks as the run does; scores beside the inputs'
    fused = _json(await session.call_tool("fuse", {"runs": ["bm25"], "run_texts": [text], "k": 3,
                                                   "measures": ["ndcg_cut.10"]}))
    qid = sorted(data["run"])[0]
    assert [h["id"] for h in fused["rankings"][qid]] == [d for d, _ in trec.ranking(data["run"][qid])[:3]]
    assert fused["scores"]["fused"]["ndcg_cut.10"] == pytest.approx(fused["scores"]["inputs"]["bm25"]["ndcg_cut.10"])


def test_stdio(data):
    """`legalir mcp` as a desktop agent starts it: a subprocess speaking MCP on stdin/stdout."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "legalir.cli", "mcp", *_args(data)], cwd=str(data["root"]),
        env={"PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
             "LEGALIR_JVM_HEAP": os.environ.get("LEGALIR_JVM_HEAP", "512m")})

    async def main():
        with open(data["root"] / "mcp-stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await asyncio.wait_for(session.initialize(), WAIT_S)
                    await _exercise(session, data)

    asyncio.run(main())


def test_http_with_key(data):
    """The same tools at `legalir serve`'s /mcp: the SDK's streamable HTTP client, with a Bearer key; a key
    without the runs scope may search but not evaluate."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    server = start_server(data["root"], _args(data))
    try:
        url = server["base"] + "/mcp"

        async def main():
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {FULL_KEY}"}, timeout=WAIT_S) as http:
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    await _exercise(client, data)
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {SEARCH_KEY}"}, timeout=WAIT_S) as http:
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    got = _json(await client.call_tool("search", {"index": "acord", "query": "governing law"}))
                    assert got["hits"]
                    denied = await client.call_tool("evaluate", {"run": "bm25"})
                    assert denied.is_error and "scope runs" in denied.content[0].text
            async with httpx2.AsyncClient(timeout=WAIT_S) as http:  # no key: refused before MCP
                r = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                    headers={"Accept": "application/json, text/event-stream"})
                assert r.status_code == 401 and "Bearer" in r.json()["error"] and r.headers["x-request-id"]

        asyncio.run(main())
        # the tool calls are in the access log, with the key's id and the hit count of searches
        lines = [json.loads(x) for x in server["log"].read_text().splitlines() if x.startswith('{"ts"')]
        mcp_lines = [x for x in lines if x["route"] == "/mcp" and x["status"] == 200]
        assert {x["key"] for x in mcp_lines} == {"full", "search"}
        assert any(x["hits"] == 5 for x in mcp_lines)
    finally:
        stop_server(server)


def test_in_process_tools_match_engine(data):
    """The tool layer adds nothing to the engine's answers: in-process SDK client, no transport."""
    from mcp import Client

    from legalir.serve import app, config, mcpserver
    from legalir.serve import engine as engine_mod

    eng = engine_mod.build(config.gather(indexes=[f"acord={data['index']}"]), quiet=True)
    pool = app.Workers(1)
    try:
        async def main():
            async with Client(mcpserver.create(eng, pool)) as client:
                t = next(iter(data["topics"].values()))
                got = _json(await client.call_tool("search", {"query": t.text, "k": 4}))  # the only index
                direct = eng.search("acord", t.text, k=4)
                assert [h["id"] for h in got["hits"]] == [h["id"] for h in direct["hits"]]
                bad = await client.call_tool("search", {"query": "law", "k": 0})
                assert bad.is_error

        asyncio.run(main())
    finally:
        pool.shutdown()
        eng.close()
