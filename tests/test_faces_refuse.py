"""Every face refuses what it does not understand (issue 36, item 5).

A real `legalir serve` on loopback answers HTTP and, at /mcp, the MCP tools (the SDK's own streamable HTTP
client). Hypothesis sends every MCP tool and every HTTP endpoint unknown, doubled, missing and mistyped
arguments; each call must be refused, and with the same words on every face: the text of the one check
(:func:`legalir.serve.engine.arguments`, called in-process as the reference), as a 400 ``{"error": ...}``
over HTTP and as a tool error over MCP. And MCP ``search`` takes ``filter``, ``citations``, ``partition`` and
``as_of`` as GET /search does, with the same hits as the searcher core.
"""
from __future__ import annotations

import asyncio
import http.client
import json
import string
import urllib.parse

import pytest
from conftest import WAIT_S, examples, requires
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from serve_helpers import start_server, stop_server

import legalir
from legalir import trec
from legalir.errors import ApiError
from legalir.serve import engine as engine_mod

requires("mcp")

EXAMPLES = examples(6, deep=0.01)  # tests/conftest.py's profile
MCP_TOOLS = {"list_indexes", "search", "get_document", "history", "evaluate", "fuse"}


@pytest.fixture(scope="module")
def served(cq, sample_collection, sample_index, tmp_path_factory):
    """`legalir serve` of the sample's index (acord), the citation-query fixture's pooled index (state filters,
    citations, partitions), a BM25 run of the sample with its qrels."""
    from legalir.search import bm25 as lucene

    root = tmp_path_factory.mktemp("faces")
    topics = trec.read_topics(sample_collection / "topics" / "test.jsonl")
    bm25 = lucene.BM25(sample_index)
    try:
        run = bm25.search(topics, 20)
    finally:
        bm25.close()
    trec.write_run(root / "bm25.trec", run, tag="bm25")
    server = start_server(root, ["--index", f"acord={sample_index}", "--index", f"pooled={cq / 'pooled'}",
                                 "--run", f"bm25={root / 'bm25.trec'}",
                                 "--qrels", str(sample_collection / "qrels" / "test.txt")], keys=False)
    docid = next(iter(next(iter(run.values()))))
    qid = sorted(run)[0]
    try:
        yield {**server, "run_text": (root / "bm25.trec").read_text(), "docid": docid, "qid": qid, "cq": cq}
    finally:
        stop_server(server)


# ------------------------------------------------------------------ the faces, as a client calls them
def http_call(base: str, method: str, path: str, query: list[tuple[str, str]] = (), body=None) -> tuple[int, dict]:
    u = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=WAIT_S)
    try:
        target = path + ("?" + urllib.parse.urlencode(list(query)) if query else "")
        if body is None:
            conn.request(method, target)
        else:
            conn.request(method, target, body=json.dumps(body), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def mcp_calls(base: str, calls: list[tuple[str, dict]]) -> list:
    """Each (tool, arguments) through the MCP SDK's streamable HTTP client, in one session: the results."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def main():
        out = []
        async with httpx2.AsyncClient(timeout=WAIT_S) as http:
            async with Client(streamable_http_client(base + "/mcp", http_client=http)) as client:
                for tool, arguments in calls:
                    out.append(await client.call_tool(tool, arguments))
        return out

    return asyncio.run(main())


def mcp_error(result) -> str:
    assert result.is_error, result.content
    text = result.content[0].text
    return text


def mcp_json(result) -> dict:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def reference(operation: str, given: dict) -> str | None:
    """What the one check says of ``given`` (None: it accepts it)."""
    try:
        engine_mod.arguments(operation, given)
    except ApiError as e:
        return str(e)
    return None


# ------------------------------------------------------------------ the endpoints, each with a call it accepts
#: endpoint -> (its operation in the table, the MCP tool doing the same or None, the HTTP request of ``args``:
#: (method, path, query pairs, JSON body), the arguments of a call it accepts)
def endpoints(s: dict) -> dict:
    def get(path, fixed=()):
        return lambda args: ("GET", path, [(k, v) for k, v in args.items() if k not in fixed], None)

    def post(path):
        return lambda args: ("POST", path, [], args)

    doc = f"/doc/acord/{urllib.parse.quote(s['docid'], safe='')}"
    topic = f"/runs/bm25/topics/{urllib.parse.quote(s['qid'], safe='')}"
    return {
        "list_indexes": ("list_indexes", "list_indexes", get("/indexes"), {}),
        "search": ("search", "search", get("/search"), {"query": "security deposit", "index": "acord"}),
        "get_document": ("get_document", "get_document", get(doc, ("id", "collection")),
                         {"id": s["docid"], "collection": "acord"}),
        "history": ("history", "history", get("/history"), {"id": s["docid"], "index": "acord"}),
        "evaluate": ("evaluate", "evaluate", post("/runs/evaluate"), {"run": "bm25"}),
        "fuse": ("fuse", "fuse", None, {"runs": ["bm25"], "run_texts": [s["run_text"]]}),
        "search_batch": ("search_batch", None, post("/search/batch"), {"queries": [{"q": "lease"}], "index": "acord"}),
        "list_collections": ("list_collections", None, get("/collections"), {}),
        "list_runs": ("list_runs", None, get("/runs"), {}),
        "run_topics": ("run_topics", None, get("/runs/bm25/topics", ("run",)), {"run": "bm25"}),
        "run_topic": ("run_topic", None, get(topic, ("run", "qid")), {"run": "bm25", "qid": s["qid"]}),
        "metrics": ("metrics", None, get("/metrics"), {}),
    }


#: the path's own arguments: a call gives them last (HTTP adds them after the query string), so the first
#: mistyped value a check meets is the same one on every face
PATH_ARGS = {"get_document": ("collection", "id"), "run_topics": ("run",), "run_topic": ("run", "qid")}

ALL_NAMES = {n for params in engine_mod.ARGUMENTS.values() for n, p in params.items() for n in (n, *p.aliases)}
names = st.text(st.characters(codec="utf-8", categories=("L", "N", "P", "S"), exclude_characters="\\"),
                min_size=1, max_size=16).filter(lambda n: n not in ALL_NAMES)
json_values = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=12),
                        st.lists(st.integers(0, 5), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(),
                                                                                  max_size=1))
not_integer_text = st.one_of(st.text(string.ascii_letters + " .-", min_size=1, max_size=8),
                             st.integers().filter(lambda i: not 1 <= i <= 1000).map(str),
                             st.floats(allow_nan=True).map(repr))
finite = st.floats(allow_nan=False, allow_infinity=False)
#: (endpoint, argument, values it refuses): sent as text over a query string, as JSON in a body
MISTYPED = [
    ("search", "k", not_integer_text),
    ("search", "method", st.text(min_size=1, max_size=8).filter(lambda m: m not in engine_mod.METHODS)),
    ("search", "citations", st.text(min_size=1, max_size=8).filter(lambda c: c not in ("on", "off"))),
    ("search", "query", st.just("   ")),
    ("run_topic", "k", not_integer_text),
    ("evaluate", "judged_only", json_values.filter(lambda v: not isinstance(v, bool) and v is not None)),
    ("evaluate", "per_topic", json_values.filter(lambda v: not isinstance(v, bool))),
    ("evaluate", "measures", st.one_of(st.just([]), st.integers(), st.lists(st.integers(), min_size=1, max_size=2),
                                       st.dictionaries(st.text(max_size=3), st.integers(), min_size=1, max_size=1))),
    ("evaluate", "run", st.one_of(st.integers(), st.just(""), st.lists(st.text(max_size=3), max_size=2))),
    ("search_batch", "queries", st.one_of(st.just([]), st.integers(), st.lists(st.integers(), min_size=1, max_size=2),
                                          st.just([{"q": "lease", "colour": "red"}]), st.just([{}]))),
    ("search_batch", "k", st.one_of(st.integers().filter(lambda i: not 1 <= i <= 1000), finite, st.booleans())),
    ("fuse", "k", st.one_of(st.integers().filter(lambda i: not 1 <= i <= 1000), finite, st.lists(st.integers()))),
    ("fuse", "depth", st.one_of(st.integers(max_value=0), st.text(string.ascii_letters, min_size=1, max_size=4))),
    ("fuse", "rrf_k", st.one_of(st.just("nan"), st.just("inf"), st.booleans(), st.lists(st.integers()))),
    ("fuse", "weights", st.one_of(st.just("1,2"), st.lists(st.just("x"), min_size=1, max_size=2))),
    ("fuse", "method", st.text(max_size=8).filter(lambda m: m not in ("rrf", "linear"))),
    ("fuse", "norm", st.text(max_size=8).filter(lambda m: m not in ("minmax", "zscore"))),
]
GET_ENDPOINTS = {"list_indexes", "search", "get_document", "history", "list_collections", "list_runs", "run_topics",
                 "run_topic", "metrics"}


@st.composite
def bad_call(draw, endpoint_names):
    """(endpoint, arguments): a call the one check refuses: unknown names, a mistyped value, a required
    argument left out, or one given twice (by its name and its alias)."""
    kind = draw(st.sampled_from(["unknown", "unknown", "mistyped", "missing", "twice"]))
    if kind == "mistyped":
        endpoint, arg, values = draw(st.sampled_from(MISTYPED))
        extra = {arg: draw(values)}
    else:
        endpoint = draw(st.sampled_from(endpoint_names))
        extra = {}
    unknown = draw(st.lists(names, min_size=1, max_size=3, unique=True)) if kind == "unknown" else []
    return kind, endpoint, extra, unknown, draw(st.lists(json_values, min_size=3, max_size=3))


def build(s: dict, kind: str, endpoint: str, extra: dict, unknown: list[str], values: list) -> dict:
    operation, _, _, accepted = endpoints(s)[endpoint]
    get = endpoint in GET_ENDPOINTS
    args = {k: v for k, v in accepted.items() if k not in PATH_ARGS.get(endpoint, ())}
    if kind == "missing":
        required = [n for n, p in engine_mod.ARGUMENTS[operation].items() if p.required
                    and n not in PATH_ARGS.get(endpoint, ())]
        assume(required)
        args.pop(required[0], None)
    if kind == "twice":
        aliased = [(n, p.aliases[0]) for n, p in engine_mod.ARGUMENTS[operation].items() if p.aliases]
        assume(aliased)
        name, alias = aliased[0]
        args = {alias: "lease", name: "lease", **{k: v for k, v in args.items() if k != name}}
    for name, value in zip(unknown, values):
        args[name] = str(value) if get else value  # a query string holds text
    for name, value in extra.items():
        args[name] = value if not get or isinstance(value, str) else str(value)
    args.update({k: v for k, v in accepted.items() if k in PATH_ARGS.get(endpoint, ())})  # the path's, last
    return args


def check_parity(s: dict, cases: list[tuple]) -> int:
    """Send each case to every face that has its endpoint; every answer must be the reference refusal."""
    table = endpoints(s)
    mcp, expected, checked = [], [], 0
    for kind, endpoint, extra, unknown, values in cases:
        args = build(s, kind, endpoint, extra, unknown, values)
        operation, tool, request, _ = table[endpoint]
        want = reference(operation, args)
        assert want is not None, (endpoint, args)  # the generator makes calls the check refuses
        if kind == "unknown":
            assert all(repr(n) in want for n in unknown), want
        if request is not None:
            method, path, query, body = request(args)
            status, reply = http_call(s["base"], method, path, query, body)
            assert (status, reply.get("error")) == (400, want), (endpoint, args)
            checked += 1
        if tool is not None:
            mcp.append((tool, args))
            expected.append(f"Error executing tool {tool}: {want}")
    for (tool, args), want, result in zip(mcp, expected, mcp_calls(s["base"], mcp)):
        assert mcp_error(result) == want, (tool, args)
        checked += 1
    return checked


@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@given(cases=st.lists(bad_call(sorted(["list_indexes", "search", "get_document", "history", "evaluate", "fuse",
                                       "search_batch",
                                       "list_collections", "list_runs", "run_topics", "run_topic", "metrics"])),
                      min_size=8, max_size=20))
def test_every_face_refuses_alike(served, cases):
    assert check_parity(served, cases) >= len(cases)


def test_every_tool_and_endpoint_refuses_an_unknown_argument(served):
    """Not left to chance: each MCP tool and each HTTP endpoint once, with one unknown name."""
    table = endpoints(served)
    cases = [("unknown", e, {}, ["bogus_arg"], [1]) for e in table]
    faces = sum(request is not None for _, _, request, _ in table.values()) + \
        sum(tool is not None for _, tool, _, _ in table.values())
    assert faces == 11 + len(MCP_TOOLS) and check_parity(served, cases) == faces
    assert set(endpoints(served)) - {"fuse"} == set(engine_mod.ARGUMENTS) - {"health", "fuse"}


def test_the_reported_calls(served):
    """The outside test's calls: MCP search with filter= (which it ignored) and with bogus_arg=1 (which it
    answered); now filter is applied (the same filter error as HTTP) and bogus_arg refused, naming it."""
    base = served["base"]
    got = mcp_calls(base, [("search", {"index": "pooled", "query": "rent", "filter": "status=repealed"}),
                           ("search", {"index": "acord", "query": "rent", "bogus_arg": 1})])
    status, reply = http_call(base, "GET", "/search", [("index", "pooled"), ("q", "rent"), ("filter", "status=repealed")])
    assert status == 400 and "unknown field 'status'" in reply["error"]
    assert mcp_error(got[0]) == f"Error executing tool search: {reply['error']}"
    assert mcp_error(got[1]) == ("Error executing tool search: search has no argument 'bogus_arg'; its arguments are: "
                                 "query (or q), index, k, method, partition, filter, citations, as_of")
    status, reply = http_call(base, "GET", "/search", [("index", "acord"), ("q", "rent"), ("bogus_arg", "1")])
    assert (status, reply["error"]) == (400, mcp_error(got[1]).split(": ", 1)[1])


def test_mcp_search_takes_what_http_search_takes(served):
    """filter, citations, partition and as_of over MCP: the hits GET /search and the searcher core give."""
    base, cq = served["base"], served["cq"]
    cases = [{"query": "rent tenant premises", "partition": "California", "filter": "state=california,nevada"},
             {"query": "What does Cal. Civ. Code § 1942 allow", "citations": "off"},
             {"query": "What does Cal. Civ. Code § 1942 allow", "citations": "on", "k": 3},
             {"query": "security deposit", "filter": "state=nevada", "k": 5}]
    results = mcp_calls(base, [("search", {"index": "pooled", **c}) for c in cases])
    with legalir.Searcher(cq / "pooled") as searcher:
        for case, result in zip(cases, results):
            got = mcp_json(result)
            status, reply = http_call(base, "GET", "/search", [("index", "pooled"), *((k, str(v)) for k, v in case.items())])
            assert status == 200
            want = searcher.search(case["query"], k=case.get("k", 10), partition=case.get("partition"),
                                   filter=case.get("filter"), citations={"on": True, "off": False}.get(case.get("citations")))
            assert want, case
            assert [(h["id"], h["score"]) for h in got["hits"]] == [(h["id"], h["score"]) for h in reply["hits"]]
            assert [h["id"] for h in got["hits"]] == [h.docid for h in want]
            assert [h["score"] for h in got["hits"]] == pytest.approx([h.score for h in want], rel=1e-5)
    on, off = (mcp_json(r)["hits"][0]["id"] for r in results[2:0:-1])
    assert on == "102" and off != on  # citations on ranks the cited statute first (tests/test_legal_structure.py)
    # as_of on an index that keeps no releases: the core's refusal, the same on both faces
    [result] = mcp_calls(base, [("search", {"index": "pooled", "query": "rent", "as_of": "85"})])
    status, reply = http_call(base, "GET", "/search", [("index", "pooled"), ("q", "rent"), ("as_of", "85")])
    assert status in (400, 404) and mcp_error(result) == f"Error executing tool search: {reply['error']}"


def test_tool_schemas_say_what_they_take():
    """Each tool's input schema lists exactly the table's arguments and accepts nothing else."""
    from legalir.serve import mcpserver

    class Nothing:
        indexes, collections = {}, {}

    server = mcpserver.create(Nothing(), None)
    tools = {t.name: t for t in server._tool_manager.list_tools()}
    assert set(tools) == MCP_TOOLS
    for name, tool in tools.items():
        assert tool.parameters["additionalProperties"] is False
        assert list(tool.parameters["properties"]) == list(engine_mod.ARGUMENTS[name]), name
    assert {"filter", "citations", "partition", "as_of"} <= set(tools["search"].parameters["properties"])
