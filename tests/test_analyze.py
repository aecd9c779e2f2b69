"""`legalir analyze lexical` on the Bar Exam / Housing fixtures and the embedded ACORD-layout sample: per-topic
TF-IDF cosines against a direct computation, scipy's KS and Welch tests, buckets with least-squares slopes, figures."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import FIXTURES
from scipy import stats as ss

from legalir import collections, datasets, trec
from legalir.analyze import lexical
from legalir.cli import main


@pytest.fixture(scope="module")
def qa_collections(tmp_path_factory):
    out = tmp_path_factory.mktemp("lex")
    for name in ("barexam_qa", "housing_qa"):
        collections.write(datasets.get(name, FIXTURES), out / name, quiet=True)
    return out


def test_similarities_match_a_direct_tfidf_cosine():
    from sklearn.feature_extraction.text import TfidfVectorizer

    topics = {"q1": "landlord security deposit limit", "q2": "eviction notice period"}
    texts = {"d1": "A landlord may not demand a security deposit above one month of rent.",
             "d2": "Notice to quit: thirty days before eviction.", "d3": "Unrelated text about ships."}
    golds = {"q1": ["d1"], "q2": ["d2", "d3"]}
    qg, ga = lexical.similarities(topics, golds, texts, {"q1": "Yes, one month of rent."})
    vec = TfidfVectorizer(stop_words="english").fit(list(topics.values()) + [texts[d] for d in ("d1", "d2", "d3")]
                                                     + ["Yes, one month of rent."])
    cos = lambda a, b: float((vec.transform([a]) @ vec.transform([b]).T).toarray()[0, 0])
    assert qg["q1"] == pytest.approx(cos(topics["q1"], texts["d1"]))
    assert qg["q2"] == pytest.approx(max(cos(topics["q2"], texts["d2"]), cos(topics["q2"], texts["d3"])))
    assert ga == {"q1": pytest.approx(cos(texts["d1"], "Yes, one month of rent."))}
    b = lexical.buckets({"a": 0.05, "b": 0.15, "c": 0.18, "d": 0.35}, {"a": 0.0, "b": 0.5, "c": 1.0, "d": 1.0})
    assert b["lows"] == [0.0, 0.1, 0.3] and b["means"] == [0.0, 0.75, 1.0] and b["counts"] == [1, 2, 1]
    assert b["slope"] == pytest.approx(np.polyfit([0.05, 0.15, 0.18, 0.35], [0, 0.5, 1, 1], 1)[0])


def test_analyze_lexical_cli_on_the_fixtures(qa_collections, tmp_path):
    bx, hs = qa_collections / "barexam_qa", qa_collections / "housing_qa"
    run = tmp_path / "run.trec"
    qrels = trec.read_qrels(bx / "qrels" / "test.txt")
    # a run that finds the gold at rank 1 for half the topics, nothing relevant for the others
    trec.write_run(run, {q: ({next(iter(d)): 1.0} if i % 2 == 0 else {"wex_17": 1.0}) for i, (q, d) in
                         enumerate(sorted(qrels.items()))}, tag="hand")
    out = tmp_path / "lex"
    r = CliRunner().invoke(main, ["analyze", "lexical", f"Bar Exam={bx}", f"Housing={hs}", "--answers-from",
                                  "barexam_qa", "--data-dir", str(FIXTURES), "--run", f"hand={run}", "--out-dir",
                                  str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    res = json.loads((out / "lexical.json").read_text())
    bar, hou = res["per_topic"]["Bar Exam"], res["per_topic"]["Housing"]
    assert len(bar["query_gold"]) == 4 and len(hou["query_gold"]) == 13 and len(bar["gold_answer"]) == 4
    s = res["samples"]["Bar Exam"]["query_gold"]
    assert s["mean"] == pytest.approx(np.mean(list(bar["query_gold"].values())))
    assert s["ci_low"] <= s["mean"] <= s["ci_high"]
    [t] = [t for t in res["tests"] if t["similarity"] == "query_gold"]
    a, b = list(bar["query_gold"].values()), list(hou["query_gold"].values())
    assert t["ks_p"] == pytest.approx(ss.ks_2samp(a, b).pvalue)
    assert t["welch_p"] == pytest.approx(ss.ttest_ind(a, b, equal_var=False).pvalue)
    bk = res["buckets"]["hand"]
    assert sum(bk["counts"]) == 4 and res["measure"] == "recall_10"
    assert "Kolmogorov-Smirnov" in r.stdout and "slope" in r.stdout
    for name in ("hist_query_gold", "hist_gold_answer", "buckets"):
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert b"<svg" in (out / f"{name}.svg").read_bytes()[:1000]


def test_subsets_by_metadata_on_an_acord_layout_collection(sample_collection, tmp_path):
    r = CliRunner().invoke(main, ["analyze", "lexical", str(sample_collection), "--topics", "train", "--by", "category"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert ": Governing Law" in r.stdout and ": Limitation of Liability" in r.stdout
    r = CliRunner().invoke(main, ["analyze", "lexical", str(tmp_path)])
    assert r.exit_code == 2 and "error:" in r.output
