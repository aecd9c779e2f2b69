"""Run fusion on hand-computed examples."""
from __future__ import annotations

import json
import math
import random

import pytest
from click.testing import CliRunner

from legalir import trec
from legalir.search import fusion

A = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}}
B = {"q1": {"d3": 0.9, "d1": 0.5, "d4": 0.1}, "q2": {"d9": 1.0}}


def test_rrf_hand_computed():
    fused = fusion.rrf([A, B])  # k = 60; ranks A: d1 1, d2 2, d3 3; B: d3 1, d1 2, d4 3
    assert fused["q1"] == pytest.approx({"d1": 1 / 61 + 1 / 62, "d2": 1 / 62, "d3": 1 / 63 + 1 / 61, "d4": 1 / 63})
    assert [d for d, _ in trec.ranking(fused["q1"])] == ["d1", "d3", "d2", "d4"]
    assert fused["q2"] == pytest.approx({"d9": 1 / 61})  # a topic only one run has
    weighted = fusion.rrf([A, B], k=0, weights=[2, 1])
    assert weighted["q1"] == pytest.approx({"d1": 2 + 1 / 2, "d2": 2 / 2, "d3": 2 / 3 + 1, "d4": 1 / 3})
    top2 = fusion.rrf([A, B], depth=2)
    assert top2["q1"] == pytest.approx({"d1": 1 / 61 + 1 / 62, "d2": 1 / 62, "d3": 1 / 61})


def test_rrf_ranks_ties_as_trec_eval_does():
    tied = {"q1": {"d2": 2.0, "d3": 2.0, "d1": 5.0}}  # trec_eval order: d1, then d3 before d2 (docid descending)
    assert fusion.rrf([tied], k=0)["q1"] == pytest.approx({"d1": 1.0, "d3": 1 / 2, "d2": 1 / 3})


def test_linear_minmax_hand_computed():
    fused = fusion.linear([A, B], norm="minmax")
    # A -> d1 1, d2 .5, d3 0; B -> d3 1, d1 .5, d4 0; a document a run did not retrieve counts 0
    assert fused["q1"] == pytest.approx({"d1": 1.5, "d2": 0.5, "d3": 1.0, "d4": 0.0})
    fused = fusion.linear([A, B], weights=[0.25, 0.75], norm="minmax")
    assert fused["q1"] == pytest.approx({"d1": 0.25 + 0.375, "d2": 0.125, "d3": 0.75, "d4": 0.0})
    const = fusion.linear([{"q": {"a": 2.0, "b": 2.0}}, {"q": {"c": 5.0, "a": 1.0}}])
    assert const["q"] == pytest.approx({"a": 1.0, "b": 1.0, "c": 1.0})  # all-equal scores normalise to 1


def test_linear_zscore_hand_computed():
    fused = fusion.linear([A, B], norm="zscore")
    z = 1 / math.sqrt(2 / 3)  # A: mean 2, population std sqrt(2/3); B is A scaled: same z-scores
    # missing documents count as the run's lowest z-score for the topic (-z)
    assert fused["q1"] == pytest.approx({"d1": z + 0, "d2": 0 - z, "d3": -z + z, "d4": -z - z})
    assert fusion.normalize({"a": 1.0, "b": 1.0}, "zscore") == ({"a": 0.0, "b": 0.0}, 0.0)


def test_fusion_is_deterministic_whatever_the_input_order():
    rng = random.Random(7)
    run1 = {f"q{i}": {f"d{j}": rng.random() for j in range(50)} for i in range(5)}
    run2 = {f"q{i}": {f"d{j}": rng.gauss(0, 3) for j in range(25, 80)} for i in range(5)}

    def shuffled(run):
        out = {}
        for q in rng.sample(list(run), len(run)):
            items = list(run[q].items())
            rng.shuffle(items)
            out[q] = dict(items)
        return out

    for method, kw in (("rrf", {}), ("linear", {"norm": "minmax"}), ("linear", {"norm": "zscore"})):
        a = fusion.fuse([run1, run2], method=method, **kw)
        b = fusion.fuse([shuffled(run1), shuffled(run2)], method=method, **kw)
        assert {q: sorted(d.items()) for q, d in a.items()} == {q: sorted(d.items()) for q, d in b.items()}


def test_bad_fusion_settings():
    with pytest.raises(fusion.FusionError, match="1 weight"):
        fusion.rrf([A, B], weights=[1])
    with pytest.raises(fusion.FusionError, match="non-negative"):
        fusion.linear([A, B], weights=[1, -1])
    with pytest.raises(fusion.FusionError, match="normalisation"):
        fusion.linear([A, B], norm="softmax")
    with pytest.raises(fusion.FusionError, match="no runs"):
        fusion.fuse([])


def test_weight_grid_and_tuning():
    assert fusion.weight_grid(2, 0.5) == [(1.0, 0.0), (0.5, 0.5), (0.0, 1.0)]
    assert len(fusion.weight_grid(3, 0.25)) == 15 and all(sum(w) == pytest.approx(1) for w in fusion.weight_grid(3, 0.25))
    # score: 1 when d3 (B's best) ranks first; needs enough weight on B
    result = fusion.tune([A, B], lambda run: float(max(run["q1"], key=run["q1"].get) == "d3"), step=0.25)
    best = result["best"]
    assert best["score"] == 1.0 and best["weights"][1] > best["weights"][0]
    assert best == next(p for p in result["grid"] if p["score"] == 1.0)  # the first best point in grid order
    assert len(result["grid"]) == 5 * 3  # linear minmax, linear zscore, rrf k=60


def test_cli_fuse_with_tuned_params(tmp_path):
    from legalir.cli import main

    a, b = tmp_path / "a.trec", tmp_path / "b.trec"
    trec.write_run(a, A)
    trec.write_run(b, B)
    params = tmp_path / "tuning.json"
    params.write_text(json.dumps({"best": {"method": "linear", "weights": [0.25, 0.75], "norm": "minmax", "score": 1}}))
    out = tmp_path / "f.trec"
    r = CliRunner().invoke(main, ["fuse", str(a), str(b), "-o", str(out), "--params", str(params)])
    assert r.exit_code == 0, r.output
    assert trec.read_run(out)["q1"] == pytest.approx({"d1": 0.625, "d2": 0.125, "d3": 0.75, "d4": 0.0})
    r = CliRunner().invoke(main, ["fuse", str(a), str(b), "-o", str(out), "--weights", "1"])
    assert r.exit_code == 2 and "1 weight(s) for 2 run(s)" in r.output


def test_tune_fusion_counts_each_wording_of_a_set(tmp_path):
    """Two wordings of one set (the statutes' valid and valid.masked) share their topic ids: tuned on both, each
    wording's topics count once (merged by id, the last set's runs would replace the first's and the tuning would
    see one wording only). Run A ranks the section first for the written topic and second for the masked one, B the
    other way round: each scores MRR 0.75 over both (1 and 0.5), where the merged-by-id tuning saw 0.5 and 1.0."""
    from legalir.datasets import dataset_class as get_class
    from legalir.search import tuning

    root = tmp_path / "coll"
    (root / "topics").mkdir(parents=True)
    (root / "qrels").mkdir()
    (root / "manifest.json").write_text(json.dumps({"dataset": "statutes", "partition_field": None,
                                                    "partitions": None}))
    for s in ("valid", "valid.masked"):
        (root / "topics" / f"{s}.jsonl").write_text(json.dumps({"qid": "q1", "text": s}) + "\n")
    (root / "qrels" / "valid.txt").write_text("q1 0 d1 1\n")
    good, bad = {"q1": {"d1": 2.0, "d2": 1.0}}, {"q1": {"d2": 2.0, "d1": 1.0}}
    for name, runs in (("a", {"valid": good, "valid.masked": bad}), ("b", {"valid": bad, "valid.masked": good})):
        for s, run in runs.items():
            trec.write_run(tmp_path / f"{name}.{s}.trec", run)
    doc = tuning.tune_fusion(get_class("statutes"), root, ["valid", "valid.masked"],
                             [str(tmp_path / "a.{set}.trec"), str(tmp_path / "b.{set}.trec")], "recip_rank",
                             tmp_path / "t.json", step=0.5)
    assert list(doc["single_runs"].values()) == [0.75, 0.75]     # (1 + 0.5) / 2: each wording once
    one = tuning.tune_fusion(get_class("statutes"), root, ["valid.masked"], [str(tmp_path / "a.{set}.trec")],
                             "recip_rank", tmp_path / "t1.json", step=0.5)
    assert list(one["single_runs"].values()) == [0.5]


def test_tune_bm25_counts_each_wording_of_a_set(sample_collection, sample_index):
    """The BM25 grid merges topic sets by the same rule as the fusion's (``tuning.set_key``): ``train`` and
    ``train.long`` share their topic ids, and tuned on both, each wording is searched and counts once, so every
    grid point is the mean of the two sets' own values (merged by id, the long wording replaced the short)."""
    from legalir.datasets import dataset_class as get_class
    from legalir.search import tuning

    cls = get_class("sample")
    short, n_short = tuning.tune_bm25(cls, sample_index, sample_collection, ["train"], "ndcg_cut.10")
    long, n_long = tuning.tune_bm25(cls, sample_index, sample_collection, ["train.long"], "ndcg_cut.10")
    both, n_both = tuning.tune_bm25(cls, sample_index, sample_collection, ["train", "train.long"], "ndcg_cut.10")
    assert n_both == n_short + n_long == 6
    one = {(k1, b): v for k1, b, v in short}
    other = {(k1, b): v for k1, b, v in long}
    assert any(one[p] != other[p] for p in one)    # the wordings rank differently: the merge is visible
    for k1, b, value in both:
        assert value == pytest.approx((one[k1, b] + other[k1, b]) / 2)
