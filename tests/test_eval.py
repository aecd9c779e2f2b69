"""legalir's own measures against hand-computed values, -J/-c/-q/--json, and the measure names.

The fixture (relevance = ACORD's stars - 1):

    topic t1  qrels: a=3 b=0 c=2 d=4 e=1
              run:   x 9 (unjudged), a 8, b 7, y 6 (unjudged), c 5, e 4, d 1
              ranking: x a b y c e d; judged-only (-J): a b c e d
    topic t2  qrels: f=0 g=1          run: g 2, f 1, h 0.5
    topic t3  qrels: k=4              (not in the run)
    topic t4  (run only)              run: a 1
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from legalir import scoring as evaluate
from legalir import trec
from legalir.cli import main
from legalir.scoring import EvaluationError, MeasureError, parse_measures

QRELS = {"t1": {"a": 3, "b": 0, "c": 2, "d": 4, "e": 1}, "t2": {"f": 0, "g": 1}, "t3": {"k": 4}}
RUN = {"t1": {"x": 9, "a": 8, "b": 7, "y": 6, "c": 5, "e": 4, "d": 1}, "t2": {"g": 2, "f": 1, "h": 0.5},
       "t4": {"a": 1}}
CUSTOM = ["recip_rank_cut.1,2,10", "recall_all.5,7", "star1_P.5", "star3_P.5", "star4_P.5", "star5_P.5"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval")
    q, r = root / "qrels.txt", root / "run.trec"
    trec.write_qrels(q, QRELS)
    trec.write_run(r, RUN, tag="hand")
    return str(q), str(r)


def test_custom_measures_per_topic_hand_computed():
    pt = evaluate.evaluate(QRELS, RUN, CUSTOM)["per_topic"]
    assert set(pt) == {"t1", "t2"}  # t3 has no run, t4 no qrels
    t1, t2 = pt["t1"], pt["t2"]
    # MRR@k: x (unjudged) is first, a (relevant) second
    assert (t1["recip_rank_cut_1"], t1["recip_rank_cut_2"], t1["recip_rank_cut_10"]) == (0.0, 0.5, 0.5)
    assert t2["recip_rank_cut_1"] == 1.0
    # all of a, c, d, e (relevance >= 1) in the top k? d is 7th
    assert (t1["recall_all_5"], t1["recall_all_7"]) == (0.0, 1.0)
    assert t2["recall_all_5"] == 1.0
    # K stars = relevance >= K-1; top 5 = x a b y c
    assert t1["star1_P_5"] == pytest.approx(3 / 5)      # a b c of the 5 judged
    assert t1["star3_P_5"] == pytest.approx(2 / 3)      # a c of {a, c, d}
    assert t1["star4_P_5"] == pytest.approx(1 / 2)      # a of {a, d}
    assert t1["star5_P_5"] == 0.0                       # d is 7th
    assert t2["star1_P_5"] == 1.0                       # f g of {f, g}: / min(5, 2)
    # t2 has no document rated >= 3 stars: left out of star3/4/5, not scored 0
    assert not {"star3_P_5", "star4_P_5", "star5_P_5"} & set(t2)


def test_judged_only_drops_unjudged_documents_first():
    res = evaluate.evaluate(QRELS, RUN, CUSTOM + ["num_ret"], judged_only=True)
    t1 = res["per_topic"]["t1"]
    assert t1["num_ret"] == 5                            # x, y dropped
    assert t1["recip_rank_cut_1"] == 1.0                 # a is now first
    assert t1["recall_all_5"] == 1.0                     # a b c e d
    assert t1["star3_P_5"] == t1["star4_P_5"] == t1["star5_P_5"] == t1["star1_P_5"] == 1.0
    assert res["all"]["star5_P_5"] == 1.0


def test_star_average_is_over_topics_with_k_star_documents_and_c_keeps_it_so():
    plain = evaluate.evaluate(QRELS, RUN, CUSTOM)
    assert plain["all"]["star3_P_5"] == pytest.approx(2 / 3)          # t1 only
    assert plain["all"]["star1_P_5"] == pytest.approx((3 / 5 + 1) / 2)
    assert plain.subset_sizes["star3_P_5"] == 1
    comp = evaluate.evaluate(QRELS, RUN, CUSTOM, judged_only=True, complete=True)
    # -c: t3 (missing from the run, has a 5-star document) counts 0; t2 (no 3-star document) stays out
    assert comp.subset_sizes["star3_P_5"] == 2 and comp.subset_sizes["star5_P_5"] == 2
    assert comp["all"]["star3_P_5"] == pytest.approx(0.5)
    assert comp["all"]["star5_P_5"] == pytest.approx(0.5)
    assert comp["all"]["star1_P_5"] == pytest.approx(2 / 3)            # t1, t2 = 1, t3 = 0
    # other measures under -c: every qrels topic counts, t3 as 0
    assert comp["all"]["recip_rank_cut_10"] == pytest.approx(2 / 3)    # (1 + 1 + 0) / 3
    assert plain["all"]["recip_rank_cut_10"] == pytest.approx(0.75)    # (0.5 + 1) / 2
    assert plain["all"]["recall_all_5"] == pytest.approx(0.5)


def test_measure_no_topic_defines_is_left_out_with_a_note():
    res = evaluate.evaluate({"q": {"a": 0, "b": 1}}, {"q": {"a": 1.0}}, ["star5_P.5", "map"])
    assert "star5_P_5" not in res["all"] and "map" in res["all"]
    assert any("star5_P_5" in n and "undefined" in n for n in res.notes)


def test_recall_all_is_zero_without_relevant_documents_and_ties_follow_trec_eval():
    # no relevant document: 0, as trec_eval's recall
    assert evaluate.evaluate({"q": {"a": 0}}, {"q": {"a": 1.0}}, ["recall_all.10"])["all"]["recall_all_10"] == 0
    # equal scores: docid descending (trec_eval), so "b" ranks before "a"
    res = evaluate.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0, "b": 1.0}}, ["recip_rank_cut.1,2", "relstring"])
    assert res["per_topic"]["q"] == {"relstring": "-1", "recip_rank_cut_1": 0.0, "recip_rank_cut_2": 0.5}


def test_relevance_level_applies_to_own_measures():
    res = evaluate.evaluate(QRELS, RUN, ["recip_rank_cut.10", "recall_all.5"], relevance_level=3)
    assert res["per_topic"]["t1"]["recip_rank_cut_10"] == 0.5         # a (3) is second
    assert res["per_topic"]["t1"]["recall_all_5"] == 0.0              # d (4) is 7th
    assert res["per_topic"]["t2"]["recip_rank_cut_10"] == 0.0         # nothing >= 3


def test_own_measures_agree_with_trec_eval_where_they_coincide(tmp_path):
    """MRR@k with k >= depth is recip_rank; recall_all.k with one relevant document is success.k."""
    from test_eval_parity import generate

    for seed in range(8):
        q, r = tmp_path / f"{seed}.q", tmp_path / f"{seed}.r"
        generate(seed, q, r)
        res = evaluate.evaluate_files(q, r, ["recip_rank", "recip_rank_cut.1000", "success.3", "recall_all.3",
                                             "num_rel"])
        for row in res["per_topic"].values():
            assert row["recip_rank_cut_1000"] == row["recip_rank"]
            if row["num_rel"] == 1:
                assert row["recall_all_3"] == row["success_3"]
            assert row["recall_all_3"] <= row["success_3"]


def test_cli_custom_measures_compose_with_q_c_J_json(files):
    q, r = files
    res = CliRunner().invoke(main, ["eval", "-q", "-c", "-J", "--json", "-m", "star3_P.5", "-m", "ndcg_cut.5",
                                    "-m", "recip_rank_cut.10", "-m", "runid", q, r])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    # trec_eval 10.0 -c -q: the qrels topic missing from the run (t3) has per-topic values too
    assert set(out) == {"all", "per_topic"} and set(out["per_topic"]) == {"t1", "t2", "t3"}
    assert out["per_topic"]["t3"]["star3_P_5"] == 0.0 and out["per_topic"]["t3"]["recip_rank_cut_10"] == 0.0
    assert out["all"]["runid"] == "hand"
    assert out["all"]["star3_P_5"] == pytest.approx(0.5)
    assert out["all"]["recip_rank_cut_10"] == pytest.approx(2 / 3)
    assert out["per_topic"]["t1"]["star3_P_5"] == 1.0 and "star3_P_5" not in out["per_topic"]["t2"]
    assert "runid" not in out["per_topic"]["t1"]
    # the warning names the qrels topic missing from the run; the run-only topic is counted
    assert "'t3'" in res.stderr and "count them as 0" in res.stderr
    assert "1 run topics have no judgements" in res.stderr
    # without -q: no per_topic
    res = CliRunner().invoke(main, ["eval", "--json", "-m", "map", q, r])
    assert set(json.loads(res.stdout)) == {"all"}


def test_cli_trec_eval_layout_for_own_measures(files):
    q, r = files
    res = CliRunner().invoke(main, ["eval", "-q", "-m", "map", "-m", "star3_P.5", "-m", "relstring.3", q, r])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[:5] == [
        "map                   \tt1\t0.4929",  # (1/2 + 2/5 + 3/6 + 4/7) / 4
        "relstring_3           \tt1\t'-30'",
        "star3_P_5             \tt1\t0.6667",
        "map                   \tt2\t1.0000",
        "relstring_3           \tt2\t'10-'",
    ]
    assert lines[5:] == ["map                   \tall\t0.7464", "star3_P_5             \tall\t0.6667"]


def test_parse_measures_spellings_merge_and_order():
    names = lambda specs: [n for m in parse_measures(specs) for n in m.output_names()]
    # trec_eval's output order whatever the request order; own measures after, in request order
    assert names(["star3_P.5", "ndcg_cut.10", "P.10,5", "map", "recip_rank_cut.10"]) == \
        ["map", "P_5", "P_10", "ndcg_cut_10", "star3_P_5", "recip_rank_cut_10"]
    # output names are accepted as specs; the same family twice merges its cutoffs
    assert names(["ndcg_cut_10", "ndcg_cut.5", "star4_P_5", "recall_all_10"]) == \
        ["ndcg_cut_5", "ndcg_cut_10", "star4_P_5", "recall_all_10"]
    assert names(["success"]) == ["success_1", "success_5", "success_10"]
    assert names(["iprec_at_recall.0.5"]) == ["iprec_at_recall_0.50"]
    assert names(["official"])[:6] == ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map"]
    # trec_eval 10.0 -m all_trec prints 99 summary values (9.0.4: 94); + relstring
    assert len(names(["all_trec"])) == 99 + 1
    assert len([n for m in parse_measures(["all_trec"], "9") for n in m.output_names()]) == 94 + 1


@pytest.mark.parametrize("spec,fragment", [
    ("ndcg_cutt.10", "unknown measure 'ndcg_cutt.10'"),
    ("P.0", "must be a positive integer"),
    ("P.x", "must be a positive integer"),
    ("map.10", "takes no parameters"),
    ("star0_P.5", "unknown measure"),
])
def test_bad_measures_are_clear_errors(spec, fragment):
    with pytest.raises(MeasureError) as e:
        parse_measures([spec])
    assert fragment in str(e.value)


def test_cli_unknown_measure_lists_supported_ones(files):
    res = CliRunner().invoke(main, ["eval", "-m", "mrr@10", *files])
    assert res.exit_code == 2
    assert "unknown measure 'mrr@10'" in res.stderr
    for name in ("ndcg_cut", "recip_rank_cut", "starK_P", "recall_all", "success"):
        assert name in res.stderr
    listing = CliRunner().invoke(main, ["eval", "--list-measures"])
    assert listing.exit_code == 0 and "star3_P.5" in listing.stdout and "recip_rank_cut" in listing.stdout


def test_nothing_to_evaluate_is_an_error():
    with pytest.raises(EvaluationError, match="no topic has both"):
        evaluate.evaluate({"q1": {"a": 1}}, {"q2": {"a": 1.0}}, ["map"])


def test_raw_star_precision_divides_by_n_as_the_acord_paper():
    # t1 top 5 = x a b y c: 3-star docs {a, c, d}, hits a, c; t2 top 5 = g f h: >=1-star docs {f, g}
    res = evaluate.evaluate(QRELS, RUN, ["star1_rawP.5", "star3_rawP.5", "star3_P.5", "star5_rawP.5"])
    t1 = res["per_topic"]["t1"]
    assert t1["star3_rawP_5"] == pytest.approx(2 / 5) and t1["star3_P_5"] == pytest.approx(2 / 3)
    assert t1["star5_rawP_5"] == 0.0
    assert res["per_topic"]["t2"]["star1_rawP_5"] == pytest.approx(2 / 5)
    assert res["all"]["star1_rawP_5"] == pytest.approx((3 / 5 + 2 / 5) / 2)
    assert res.subset_sizes["star3_rawP_5"] == 1                      # t2 has no 3-star document
    assert [m.output_names() for m in parse_measures(["star4_rawP.5,10"])] == [["star4_rawP_5", "star4_rawP_10"]]
