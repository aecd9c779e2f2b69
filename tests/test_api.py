"""The public Python API (legalir/api.py) on the real ACORD release, real Lucene, real pytrec_eval."""
from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
from conftest import WAIT_S

import legalir
from legalir.errors import LegalirError


@pytest.fixture(scope="module")
def acord(acord_built):
    """ACORD's test split by name, from the collections folder of the pipeline built once per test run (load
    converts on first use: the README's Python quick start runs that, tests/test_readme.py)."""
    return legalir.load("acord", split="test", collections_dir=acord_built.root / "collections")


@pytest.fixture(scope="module")
def searcher(acord, acord_built):
    """A Searcher over the shared ACORD index (``legalir.index`` builds one in the README's Python quick start and
    in test_index_an_iterable_of_dicts)."""
    with legalir.Searcher(acord_built.index) as s:
        yield s


@pytest.fixture(scope="module")
def run(searcher, acord):
    return searcher.batch_search(acord, k=1000)


@pytest.fixture(scope="module")
def pyserini_run(searcher, acord):
    """The run of an explicit k1=0.9 b=0.4 (Pyserini's defaults) over the same index; the Searcher's values."""
    with legalir.Searcher(searcher.sparse, k1=0.9, b=0.4) as s:
        return (s.k1, s.b), s.batch_search(acord, k=1000)


# ------------------------------------------------------------------ load
def test_load_gives_beir_shaped_mappings(acord):
    assert (len(acord.corpus), len(acord.topics)) == (3931, 57)
    assert acord.split == "test" and "train" in acord.splits and acord.judged_only
    qid = sorted(acord.topics)[0]
    assert isinstance(acord.topics[qid], str) and acord.topics[qid].strip()
    assert set(acord.qrels) <= set(acord.topics) and all(isinstance(g, int) for d in acord.qrels.values()
                                                          for g in d.values())
    assert "category" in acord.topic_fields[qid]
    docid = next(iter(acord.corpus))
    assert acord.corpus[docid]["id"] == docid and docid in acord.corpus and "nope" not in acord.corpus
    with pytest.raises(KeyError):
        acord.corpus["nope"]
    assert sum(1 for _ in acord.corpus.items()) == len(acord.corpus)
    # a converted collection folder loads as itself; another split of the same collection
    again = legalir.load(acord.path, split="valid")
    assert again.name == "acord" and again.split == "valid" and set(again.topics).isdisjoint(acord.topics)


def test_load_errors_name_what_exists(acord):
    with pytest.raises(LegalirError, match="no topic set 'tets'; known: .*test"):
        legalir.load(acord.path, split="tets")
    with pytest.raises(LegalirError, match="unknown dataset 'acrod'; known: .*acord"):
        legalir.load("acrod")


# ------------------------------------------------------------------ index and search
def test_searcher_uses_acords_tuned_bm25_and_reproduces_the_demo(searcher, run, acord):
    assert (searcher.k1, searcher.b) == (1.0, 0.5)
    values = legalir.evaluate(acord.qrels, run, ["nDCG@10", "ndcg_cut.5"], judged_only=acord.judged_only)
    # the README's demo row: BM25 k1=1.0 b=0.5, ACORD test, judged-only
    assert (round(values["nDCG@10"] * 100, 1), round(values["ndcg_cut.5"] * 100, 1)) == (50.2, 48.1)


def test_search_one_string_returns_hits_with_text(searcher, acord):
    hits = searcher.search("limitation of liability", k=5)
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
    for h in hits:
        assert h.text == acord.corpus[h.docid]["contents"] and h.text
    assert searcher.doc(hits[0].docid)["contents"] == hits[0].text and searcher.doc("no-such-doc") is None
    # the same ranking as a batch search of the same text
    batch = searcher.batch_search({"q": "limitation of liability"}, k=5)
    assert list(batch["q"]) == [h.docid for h in hits]


def test_searcher_arguments_are_checked(searcher, acord, tmp_path):
    with pytest.raises(LegalirError, match="non-empty string"):
        searcher.search("   ")
    with pytest.raises(LegalirError, match="k must be an integer from 1 to"):
        searcher.search("rent", k=0)
    with pytest.raises(LegalirError, match="needs a FAISS"):
        searcher.search("rent", method="dense")
    with pytest.raises(LegalirError, match="not partitioned"):
        searcher.search("rent", partition="california")
    with pytest.raises(LegalirError, match="expected a string"):
        searcher.batch_search({"q1": 3})
    with pytest.raises(LegalirError, match="a collection folder, not an index"):
        legalir.Searcher(acord.path)
    with pytest.raises(LegalirError, match="no such folder"):
        legalir.Searcher(tmp_path / "missing")


def test_explicit_bm25_parameters_win(pyserini_run, acord):
    params, run = pyserini_run
    assert params == (0.9, 0.4)
    # Pyserini's defaults give ACORD a lower nDCG@10 than its tuned values (0.490 vs 0.502)
    assert round(legalir.evaluate(acord.qrels, run, ["nDCG@10"], judged_only=True)["nDCG@10"], 3) == 0.490


def test_index_an_iterable_of_dicts(tmp_path):
    docs = [{"id": "d1", "contents": "The tenant pays rent monthly.", "state": "ca"},
            {"id": "d2", "contents": "The landlord repairs the roof.", "state": "ny"}]
    with legalir.index(iter(docs), tmp_path / "idx") as s:
        (hit,) = s.search("rent", k=5)
        assert (hit.docid, hit.text, hit.fields) == ("d1", docs[0]["contents"], {"state": "ca"})
        assert (s.k1, s.b) == (0.9, 0.4)  # no dataset recorded: Pyserini's defaults
    assert (tmp_path / "idx.collection" / "manifest.json").exists()
    with pytest.raises(LegalirError, match=r"document #2: field 'id' is a int; expected a string"):
        legalir.index([docs[0], {"id": 7, "contents": "x"}], tmp_path / "bad")
    with pytest.raises(LegalirError, match=r"document #1 has no 'contents'"):
        legalir.index([{"id": "a", "text": "x"}], tmp_path / "bad2")
    with pytest.raises(LegalirError, match="not a converted collection"):
        legalir.index(str(tmp_path), tmp_path / "bad3")


# ------------------------------------------------------------------ evaluate and compare
QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d4": 1, "d5": 0}}
RUN_A = {"q1": {"d1": 3.0, "d2": 2.0, "d9": 1.0}, "q2": {"d5": 2.0, "d4": 1.0}}


def test_evaluate_keys_values_by_the_names_requested():
    got = legalir.evaluate(QRELS, RUN_A, ["nDCG@10", "ndcg_cut.10", "P.1,2", "AP", "map"])
    assert list(got) == ["nDCG@10", "ndcg_cut.10", "P_1", "P_2", "AP", "map"]
    assert got["nDCG@10"] == pytest.approx(got["ndcg_cut.10"]) and got["AP"] == pytest.approx(got["map"])
    assert got["P_1"] == pytest.approx(0.5)


def test_evaluate_reads_ir_measures_objects_frames_and_files(tmp_path):
    import ir_measures
    import pandas as pd

    from legalir import trec

    want = legalir.evaluate(QRELS, RUN_A, ["nDCG@10", "P@1"])
    assert legalir.evaluate(QRELS, RUN_A, [ir_measures.nDCG @ 10, ir_measures.P @ 1]) == want
    qdf = pd.DataFrame([(q, d, r) for q, ds in QRELS.items() for d, r in ds.items()],
                       columns=["query_id", "doc_id", "relevance"])
    rdf = pd.DataFrame([(q, d, s) for q, ds in RUN_A.items() for d, s in ds.items()], columns=["qid", "docno", "score"])
    assert legalir.evaluate(qdf, rdf, ["nDCG@10", "P@1"]) == want
    trec.write_qrels(tmp_path / "q.txt", QRELS)
    legalir.write_run(tmp_path / "r.trec", RUN_A)
    assert legalir.evaluate(tmp_path / "q.txt", str(tmp_path / "r.trec"), ["nDCG@10", "P@1"]) == want
    per = legalir.evaluate(QRELS, RUN_A, ["P@1"], per_topic=True)
    assert per["per_topic"] == {"q1": {"P@1": 1.0}, "q2": {"P@1": 0.0}}
    with pytest.raises(LegalirError, match="did you mean"):
        legalir.evaluate(QRELS, RUN_A, ["nDGC@10"])
    # no measures named: the one default set (legalir.scoring.DEFAULT_MEASURES); an empty list is refused
    assert list(legalir.evaluate(QRELS, RUN_A, None)) == ["map", "ndcg_cut.10"]
    with pytest.raises(LegalirError, match="measures is an empty list"):
        legalir.evaluate(QRELS, RUN_A, [])


def test_compare_returns_a_corrected_table(run, pyserini_run, acord, searcher):
    from legalir.scoring import stats

    default = pyserini_run[1]
    with legalir.Searcher(searcher.sparse, k1=1.5, b=0.9) as s:
        third = s.batch_search(acord, k=1000)
    runs = {"default": default, "tuned": run, "k1=1.5": third}
    df = legalir.compare(runs, acord.qrels, ["nDCG@10", "P@5"], baseline="tuned", correction="holm",
                         judged_only=True)
    assert list(df.columns) == ["measure", "run", "topics", "mean", "ci_low", "ci_high", "delta", "delta_ci_low",
                                "delta_ci_high", "p", "p_corrected", "significant"]
    assert list(df["run"][:3]) == ["tuned", "default", "k1=1.5"] and set(df["measure"]) == {"nDCG@10", "P@5"}
    nd = df[df["measure"] == "nDCG@10"].reset_index(drop=True)
    assert nd["topics"][0] == 57 and nd["mean"][0] == pytest.approx(0.50196, abs=1e-5)
    assert nd["delta"][1] == pytest.approx(nd["mean"][1] - nd["mean"][0])
    assert list(nd["p_corrected"][1:]) == pytest.approx(stats.adjust(list(nd["p"][1:]), "holm"))
    fdr = legalir.compare(runs, acord.qrels, ["nDCG@10"], baseline=1, correction="fdr_bh", judged_only=True)
    assert list(fdr["p_corrected"][1:]) == pytest.approx(stats.adjust(list(fdr["p"][1:]), "fdr_bh"))
    assert "nDCG@10" in df.to_markdown() and "tabular" in df.to_latex()
    with pytest.raises(LegalirError, match="baseline must be a run's name or position; 'bm25' is not one of"):
        legalir.compare(runs, acord.qrels, ["nDCG@10"], baseline="bm25")
    with pytest.raises(LegalirError, match="correction must be one of .none., .bonferroni., .holm., .fdr_bh., not .sidak."):
        legalir.compare(runs, acord.qrels, ["nDCG@10"], correction="sidak")


def test_benjamini_hochberg_by_hand():
    from legalir.scoring import stats

    assert stats.adjust([0.01, 0.04, 0.03], "fdr_bh") == pytest.approx([0.03, 0.04, 0.04])
    assert stats.adjust([0.02, float("nan"), 0.5], "fdr_bh")[0] == pytest.approx(0.04)


# ------------------------------------------------------------------ the package as a library
def test_package_names_work_whatever_was_imported_first():
    import legalir.indexing.sparse
    import legalir.scoring.evaluator

    assert legalir.evaluate(QRELS, RUN_A, ["P@1"]) == {"P@1": 0.5}
    assert callable(legalir.index) and legalir.scoring.evaluate_files is not None


def test_library_logs_reach_the_applications_logging(searcher, caplog):
    with caplog.at_level(logging.INFO, logger="legalir"):
        legalir.Searcher(searcher.sparse).close()
    assert any("BM25 k1=1 b=0.5 (acord's tuned parameters)" in r.getMessage() for r in caplog.records)
    assert not any(r.getMessage().startswith("warning:") for r in caplog.records)


def test_basic_config_sees_legalir_records(searcher):
    code = ("import logging, legalir; logging.basicConfig(level=logging.INFO, format='REC %(name)s %(message)s'); "
            f"legalir.Searcher({str(searcher.sparse)!r}).close(); "
            "import legalir.api, legalir.serve.engine, legalir.search.rerank, legalir.indexing.encoders; "
            "print([type(h).__name__ for h in logging.getLogger('legalir').handlers])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT_S)
    assert p.returncode == 0, p.stderr
    assert "REC legalir.search.searcher BM25 k1=1 b=0.5 (acord's tuned parameters)" in p.stderr
    assert p.stdout.strip() == "['NullHandler']"  # importing the library attaches no handler of its own


#: `legalir ARGS` run as the program (``python -m legalir.cli``: argv[0] is legalir/cli.py) or, with ``in-process``
#: first, by a Python program through click's runner; then the log4j context factory its JVM ended with, on stdout
FACTORY_PROBE = """
import sys
import legalir.cli
from legalir.cli import main
if sys.argv[1] == "in-process":
    from click.testing import CliRunner
    r = CliRunner().invoke(main, sys.argv[2:])
    assert r.exit_code == 0, r.output
else:
    sys.argv = [legalir.cli.__file__, *sys.argv[2:]]
    try:
        main()
    except SystemExit as e:
        if e.code:
            raise
import jnius
print("factory", jnius.autoclass("org.apache.logging.log4j.LogManager").getFactory().getClass().getName())
"""


def test_no_java_noise_on_stderr(searcher, acord, tmp_path):
    """SLF4J's provider line and Lucene's MMapDirectory notice are silenced; the command's own lines remain. The
    program running `legalir search` runs log4j's simple logger (jvm.SEARCH_ONLY: log4j-core's start-up was a fifth
    of a short search's CPU), and nothing of Java's reaches stdout. A Python program running the same command in
    process keeps log4j-core: it may index next in the same JVM, which the simple logger breaks."""
    args = ["search", str(searcher.sparse), str(acord.path / "topics" / "test.jsonl"), str(tmp_path / "run.trec")]
    p = subprocess.run([sys.executable, "-c", FACTORY_PROBE, "program", *args], capture_output=True, text=True,
                       timeout=WAIT_S)
    assert p.returncode == 0, p.stderr
    assert "SLF4J" not in p.stderr and "MMapDirectory" not in p.stderr and "WARNING:" not in p.stderr, p.stderr
    assert "BM25 k1=1 b=0.5 (acord's tuned parameters)" in p.stderr and "46350 lines for 57 topics" in p.stderr
    assert p.stdout == "factory org.apache.logging.log4j.simple.SimpleLoggerContextFactory\n", p.stdout
    p = subprocess.run([sys.executable, "-c", FACTORY_PROBE, "in-process", *args[:-1], str(tmp_path / "run2.trec")],
                       capture_output=True, text=True, timeout=WAIT_S)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "factory org.apache.logging.log4j.core.impl.Log4jContextFactory\n", p.stdout


def test_report_takes_the_datasets_converted_qrels(run, acord, tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    legalir.write_run(runs / "bm25.test.trec", run, tag="bm25")
    env = {**os.environ, "LEGALIR_COLLECTIONS": str(acord.path.parent)}
    cmd = [sys.executable, "-m", "legalir.cli", "report", "acord"]
    p = subprocess.run([*cmd, str(runs / "bm25.test.trec")], capture_output=True, text=True, env=env,
                       timeout=WAIT_S)
    assert p.returncode == 0, p.stderr
    assert "50.2" in p.stdout.splitlines()[-2]  # nDCG@10 of our row, judged-only as ACORD's protocol says
    legalir.write_run(runs / "mine.trec", run, tag="bm25")
    p = subprocess.run([*cmd, str(runs / "mine.trec")], capture_output=True, text=True, env=env, timeout=WAIT_S)
    assert p.returncode == 2 and "names no topic set" in p.stderr and "--split" in p.stderr
    p = subprocess.run([*cmd, str(runs / "mine.trec"), "--split", "test"], capture_output=True, text=True, env=env,
                       timeout=WAIT_S)
    assert p.returncode == 0 and "50.2" in p.stdout


def test_partitioned_index_routes_by_partition_or_topic_field(tmp_path):
    from conftest import Jurisdictions

    from legalir import collections

    coll = tmp_path / "coll"
    collections.write(Jurisdictions(tmp_path), coll, quiet=True)
    ds = legalir.load(coll, split="test")
    with legalir.index(ds, tmp_path / "idx") as s:
        assert s.partitions == ["alaska", "new_york", "ohio"] and s.partition_field == "state"
        hits = s.search("security deposit rule", k=5, partition="ohio")
        assert {h.docid for h in hits} == {"oh-0", "oh-1", "oh-2"} and hits[0].fields["state"] == "ohio"
        run = s.batch_search(ds, k=10)  # each question in its own state's index
        assert set(run["q-ny"]) == {"ne-0", "ne-1", "ne-2"} and set(run["q-oh"]) == {"oh-0", "oh-1", "oh-2"}
        with pytest.raises(LegalirError, match="one index per state"):
            s.search("security deposit rule")
