"""One regression test per class of wrong scoring found by the differential check (issue 19).

Each test is named for its class; the property tests (test_eval_properties.py)
compare the same paths with trec_eval 10.0 and ir_measures on generated inputs.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import invoke as cli

from legalir.scoring import MeasureError, parse_measures

QRELS = "q1 0 a 2\nq1 0 b 1\nq1 0 c 0\nq2 0 d 1\nq2 0 e 0\nq3 0 f 1\nq3 0 g 3\nq4 0 h 1\n"
RUN = "".join(f"{q} Q0 {d} {i} {10 - i} tag\n" for q, docs in
              {"q1": "xaybczw", "q2": "edqrs", "q3": "gkmf"}.items() for i, d in enumerate(docs, 1))


@pytest.fixture
def files(tmp_path):
    q, r = tmp_path / "qrels.txt", tmp_path / "run.trec"
    q.write_text(QRELS)
    r.write_text(RUN)
    return str(q), str(r)



def eval_json(files, *args):
    res = cli("eval", "--json", "--quiet", *args, *files)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


FAMILIES_AT_TWO_CUTOFFS = [("nDCG@5", "nDCG@10"), ("P@5", "P@10"), ("R@2", "R@1000"), ("AP@3", "AP@10"),
                           ("Success@1", "Success@5"), ("P(rel=2)@1", "P(rel=2)@5"),
                           ("nDCG(judged_only=True)@3", "nDCG(judged_only=True)@10"),
                           ("R(rel=2,judged_only=True)@2", "R(rel=2,judged_only=True)@4"), ("RR@2", "RR@10")]


@pytest.mark.parametrize("pair", FAMILIES_AT_TWO_CUTOFFS, ids=lambda p: "+".join(p))
def test_two_cutoffs_of_one_ir_measures_family_are_both_scored(files, pair):
    together = eval_json(files, "-q", *[x for m in pair for x in ("-m", m)])
    for m in pair:
        alone = eval_json(files, "-q", "-m", m)
        assert together["all"][m] == alone["all"][m], m
        for t, row in alone["per_topic"].items():
            assert together["per_topic"][t][m] == row[m], (m, t)
    assert together["all"][pair[0]] != 0 or together["all"][pair[1]] != 0


def test_compare_with_two_cutoffs_of_one_family_tests_real_values(files, tmp_path):
    other = tmp_path / "other.trec"
    other.write_text("".join(f"{q} Q0 {d} {i} {10 - i} tag\n" for q, docs in
                             {"q1": "abxyczw", "q2": "dersq", "q3": "fgkm"}.items() for i, d in enumerate(docs, 1)))
    res = cli("compare", "--json", "--bootstrap", "0", "-m", "nDCG@5", "-m", "nDCG@10", files[0], files[1], str(other))
    assert res.exit_code == 0, res.output
    rows = {c["measure"]: c["runs"] for c in json.loads(res.stdout)}
    for m in ("nDCG@5", "nDCG@10"):
        assert rows[m][0]["mean"] != rows[m][1]["mean"], m
        assert rows[m][1]["p"] < 1.0, m


def test_J_applies_to_ir_measures_names(files):
    # every qrels topic is in this run, so -c changes nothing: the two spellings must agree
    q, r = files
    Path(r).write_text(RUN + "q4 Q0 h 1 1 tag\nq4 Q0 unjudged 2 3 tag\n")
    out = eval_json(files, "-J", "-m", "ndcg_cut.10", "-m", "nDCG@10")
    assert out["all"]["ndcg_cut_10"] == pytest.approx(out["all"]["nDCG@10"])
    plain = eval_json(files, "-m", "nDCG@10")
    judged = eval_json(files, "-m", "nDCG(judged_only=True)@10")
    assert out["all"]["nDCG@10"] == pytest.approx(judged["all"]["nDCG(judged_only=True)@10"])
    assert out["all"]["nDCG@10"] != pytest.approx(plain["all"]["nDCG@10"])


def test_RR_with_judged_only_and_a_cutoff_and_Judged_with_judged_only_are_refused(files):
    for spec in ("RR(judged_only=True)@5", "Judged(judged_only=True)@5"):
        res = cli("eval", "-m", spec, *files)
        assert res.exit_code == 2 and res.stderr.startswith("error: ") and "Traceback" not in res.output, spec


def test_bare_infAP_Rprec_and_P_are_trec_eval_names(files):
    ms = parse_measures(["infAP", "Rprec", "P"])
    assert [m.provider for m in ms] == ["trec_eval"] * 3
    assert next(m for m in ms if m.name == "P").output_names()[:2] == ["P_5", "P_10"]
    # -c -q: the qrels topic missing from the run gets its per-topic line (trec_eval 10.0), averaged over 4
    out = eval_json(files, "-c", "-q", "-m", "infAP", "-m", "Rprec")
    assert "q4" in out["per_topic"] and out["per_topic"]["q4"]["infAP"] == 0
    assert out["all"]["Rprec"] == pytest.approx(sum(r["Rprec"] for r in out["per_topic"].values()) / 4)


def test_float_cutoffs_are_truncated_as_trec_eval_reads_them(files):
    out = eval_json(files, "-m", "ndcg_cut.10,2.4")
    assert list(out["all"]) == ["ndcg_cut_2", "ndcg_cut_10"]
    for bad in ("P.1e2", "P.0", "P.-3", "P.abc"):
        res = cli("eval", "-m", bad, *files)
        assert res.exit_code == 2 and "error:" in res.stderr, bad


def test_topic_with_only_negative_or_zero_grades_is_scored(tmp_path):
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("a 0 d1 1\nz 0 d1 -1\nz 0 d2 -1\ny 0 d3 0\n")
    r.write_text("a Q0 d1 1 2 t\nz Q0 d1 1 2 t\nz Q0 d9 2 1 t\ny Q0 d3 1 1 t\n")
    out = eval_json((str(q), str(r)), "-q", "-m", "map", "-m", "nDCG@10", "-m", "P.1")
    assert out["per_topic"]["z"] == {"map": 0.0, "P_1": 0.0, "nDCG@10": 0.0}
    assert out["all"]["map"] == pytest.approx(1 / 3)


def test_no_common_topic_is_refused_naming_both_files(files, tmp_path):
    other = tmp_path / "elsewhere.trec"
    other.write_text("zz Q0 a 1 1 t\n")
    res = cli("eval", "-m", "nDCG@10", files[0], str(other))
    assert res.exit_code == 2
    assert "elsewhere.trec" in res.stderr and "qrels.txt" in res.stderr and "no topic has both" in res.stderr


def test_coverage_note_names_the_measures_that_count_missing_topics_as_zero(files):
    res = cli("eval", "-m", "ndcg_cut.10", "-m", "nDCG@10", *files)
    assert res.exit_code == 0
    zero = next(l for l in res.stderr.splitlines() if "count them as 0" in l)
    assert "nDCG@10" in zero and "ndcg_cut" not in zero
    without = next(l for l in res.stderr.splitlines() if "average without them" in l)
    assert "ndcg_cut" in without and "nDCG@10" not in without


@pytest.mark.parametrize("typo,fix", [("ndcg@10", "nDCG@10"), ("map@10", "AP@10"), ("mrr@10", "RR@10"),
                                      ("recall@100", "R@100")])
def test_common_measure_typos_get_a_suggestion(files, typo, fix):
    res = cli("eval", "-m", typo, *files)
    assert res.exit_code == 2 and f"did you mean {fix}?" in res.stderr


def test_swapped_qrels_and_run_are_named(files):
    res = cli("eval", files[1], files[0])
    assert res.exit_code == 2 and "wrong order" in res.stderr


@pytest.mark.parametrize("spec", ["R@99999999999999999999", "nDCG@5.5", "IPrec@1.5", "IPrec@1", "ndcg.x=1",
                                  "ndcg.1.5=2", "iprec_at_recall.1.5", "P(rel=0)@5", "nDCG(rel=2)@5", "P@010",
                                  "P(rel=99999999999)@5", "11pt_avg.nan", "11pt_avg.2", "utility.1e400,0,0,0",
                                  "set_F.nan", "rbp.p=5", "ndcg.1=1e400"])
def test_out_of_range_parameters_are_refused_not_scored(files, spec):
    res = cli("eval", "-m", spec, *files)
    assert res.exit_code == 2 and res.stderr.startswith("error: ") and "Traceback" not in res.output, spec


def test_huge_trec_eval_cutoff_is_read_as_trec_eval_reads_it(files):
    out = eval_json(files, "-m", "recall.99999999999999999999")
    assert out["all"] == {"recall_9223372036854775807": pytest.approx(eval_json(files, "-m", "recall.1000")["all"]
                                                                      ["recall_1000"])}


def test_Rprec_bare_is_averaged_as_trec_eval(files):
    te = eval_json(files, "-m", "Rprec")["all"]["Rprec"]
    ir = eval_json(files, "-m", "Rprec(judged_only=False,rel=2)")  # ir_measures' (missing topics count 0)
    assert te == pytest.approx(eval_json(files, "--skip-missing", "-m", "Rprec")["all"]["Rprec"])
    assert "Rprec(rel=2)" in ir["all"]
    res = cli("eval", "-m", "Rprec(rel=1)", *files)  # prints as trec_eval's name: refused
    assert res.exit_code == 2 and "trec_eval's measure" in res.stderr


def test_ir_measures_names_print_as_written(files):
    out = eval_json(files, "-m", "P(rel=2,judged_only=True)@5", "-m", "P(judged_only=True,rel=2)@3",
                    "-m", "P(rel=1)@2", "-m", "RR(judged_only=False)@4")
    assert list(out["all"]) == ["P(rel=2,judged_only=True)@5", "P(judged_only=True,rel=2)@3", "P@2", "RR@4"]


def test_raw_parameter_sets_of_one_family_are_each_computed(files):
    out = eval_json(files, "-m", "11pt_avg", "-m", "11pt_avg.0.25,0.5", "-m", "relstring")
    assert set(out["all"]) == {"11pt_avg", "11pt_avg_0.25,0.5"}
    with pytest.raises(MeasureError, match="printed as"):
        parse_measures(["Rprec_mult.0.251,0.252"])


SCORING = ["legalir/scoring", "legalir/report"]
# a defaulted lookup or a zero fallback: the shape that once printed 0.0000 for a value never computed
DEFAULTED = re.compile(r"\.get\([^()]*,\s*0(\.0)?\s*\)|\belse\s+\(?0(\.0)?\s*($|\)|,|#)")


def test_no_scoring_code_defaults_a_missing_value():
    """Zeros that are a measure's definition (precision of an empty ranking, a recall-all miss) are written
    as explicit branches with a ``# defined:`` comment; nothing on a scoring path falls back to 0."""
    root = Path(__file__).resolve().parents[1]
    hits = []
    for folder in SCORING:
        for path in sorted((root / folder).rglob("*.py")):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if DEFAULTED.search(line) and "# defined:" not in line:
                    hits.append(f"{path.relative_to(root)}:{n}: {line.strip()}")
    assert not hits, "\n".join(hits)


# the judged-only rule written once, and -M, judged-only and ranking applied in one place: structural checks
# in tests/test_scoring_structure.py (syntax trees, not a grep for one spelling)


def test_topic_with_only_negative_grades_never_reaches_pytrec_eval_s_stale_buffer():
    """trec_eval's C code sizes its relevance-level buffer from a topic's largest grade; a topic whose grades
    are all negative read what earlier evaluations left there, and pytrec_eval then looped without end
    (ndcg with a gain map, found by the deep property run). Many such evaluations in one process must finish
    and score the topic 0."""
    import subprocess
    import sys

    from conftest import WAIT_S

    code = """
import random
from legalir import scoring as evaluate
rng = random.Random(0)
for i in range(3000):
    big = {f"d{j}": rng.choice([0, 1, 2, 3, 7, -1]) for j in range(rng.randint(1, 40))}
    run = {"a": {d: rng.random() for d in list(big)[:10]}, "z": {f"y{j}": rng.random() for j in range(30)}}
    evaluate.evaluate({"a": big, "z": {"x": -1}}, run, ["ndcg.0=1,1=3,2=9", "relative_P.5,10,1000"])
    res = evaluate.evaluate({"z": {"x": -1}}, {"z": run["z"]}, ["ndcg.0=1,1=3,2=9", "Rndcg", "G", "ndcg_rel"])
    assert set(res["all"].values()) == {0.0}, res["all"]
print("finished")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT_S)
    assert proc.returncode == 0 and proc.stdout.strip() == "finished", proc.stderr


def test_run_line_with_a_spaced_query_id_says_why(tmp_path):
    """A free-text query id (ACORD's) splits into several fields: the error says so and names the slug field."""
    from legalir import trec

    (tmp_path / "r.trec").write_text('"as is" clause Q0 cc219e9cfe 1 3.5 mine\n')
    with pytest.raises(trec.FormatError, match=r"r\.trec:1: score 'cc219e9cfe' is not a number.*8 fields, not 6.*"
                                               r"Query ids must be one word.*'qid' holds the slug"):
        trec.read_run(tmp_path / "r.trec")
