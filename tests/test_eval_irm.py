"""ir_measures names in `legalir eval`: hand-computed values, and ir_measures itself on generated cases."""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import reference_module

from legalir import scoring as evaluate
from legalir.cli import main
from legalir.scoring import MeasureError, parse_measures

NAMES = ["nDCG@10", "P(rel=2)@5", "R@100", "RR@10", "AP", "Judged@10", "Success@10", "nDCG", "AP@5", "RR",
         "P@3", "Bpref", "SetP", "SetR", "IPrec@0.5", "RR(rel=2)@5", "P(judged_only=True)@5"]


def test_hand_computed_and_missing_topics_count_zero():
    qrels = {"q1": {"a": 2, "b": 1, "c": 0}, "q2": {"d": 1}}
    run = {"q1": {"x": 3.0, "b": 2.0, "a": 1.0}}                    # q2 missing from the run
    res = evaluate.evaluate(qrels, run, ["RR@10", "P(rel=2)@5", "Judged@2", "AP"])
    t = res["per_topic"]["q1"]
    assert t == {"RR@10": 0.5, "P(rel=2)@5": 0.2, "Judged@2": 0.5, "AP": pytest.approx((1 / 2 + 2 / 3) / 2)}
    # ir_measures' convention: q2 (in the qrels, not in the run) counts 0
    assert res["all"]["RR@10"] == 0.25 and res["all"]["P(rel=2)@5"] == pytest.approx(0.1)
    skip = evaluate.evaluate(qrels, run, ["RR@10"], skip_missing=True)
    assert skip["all"]["RR@10"] == 0.5                               # trec_eval's convention


def test_names_print_as_ir_measures_prints_them(tmp_path):
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("q1 0 a 2\nq1 0 b 1\n")
    r.write_text("q1 Q0 a 1 2 t\nq1 Q0 z 2 1 t\n")
    res = CliRunner().invoke(main, ["eval", "-q", "--json", "-m", "nDCG@10", "-m", "P(rel=2)@5", "-m", "map",
                                    str(q), str(r)])
    assert res.exit_code == 0, res.output
    import json

    out = json.loads(res.stdout)
    assert list(out["all"]) == ["map", "nDCG@10", "P(rel=2)@5"]
    with pytest.raises(MeasureError, match="needs a cut-off"):
        parse_measures(["Success"])
    with pytest.raises(MeasureError, match="not supported"):
        parse_measures(["nDCG(dcg=exp-log2)@10"])


def test_equal_to_ir_measures_on_generated_cases(tmp_path):
    ir_measures = reference_module("ir_measures", "ir_measures is not installed (pip install ir_measures)")
    from test_eval_parity import generate

    from legalir import trec

    measures = [ir_measures.parse_measure(n) for n in NAMES]
    assert [str(m) for m in measures] == NAMES                        # legalir names = str(measure)
    compared = 0
    for seed in range(25):
        q, r = tmp_path / f"{seed}.q", tmp_path / f"{seed}.r"
        generate(seed, q, r)
        qrels, run = trec.read_qrels(q), trec.read_run(r)
        if any(all(v < 0 for v in docs.values()) for t, docs in qrels.items() if t in run):
            continue
        ours = evaluate.evaluate(qrels, run, NAMES)["all"]
        theirs = ir_measures.calc_aggregate(measures, qrels, run)
        for m in measures:
            assert ours[str(m)] == pytest.approx(theirs[m], abs=1e-9), (seed, str(m))
        compared += 1
    assert compared >= 15
