"""The extension point, shown: ir_measures' ``Compat`` added as one module (legalir/scoring/measures/ir_compat.py).

Parity with ``ir_measures`` on generated qrels and runs (tied scores, negative grades, topics on one
side only, documents retrieved but unjudged), for ``p`` and ``normalize`` as written, with -J and -M
applied to the run the reference sees as trec_eval applies them (the top M in trec_eval's order,
then the unjudged dropped). The name prints as ir_measures prints it; what ir_measures refuses, legalir refuses.
"""
from __future__ import annotations

import math

import pytest
from conftest import reference_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legalir.scoring import MeasureError, evaluate, parse_measures

ir_measures = reference_module("ir_measures", "ir_measures is not installed (pip install ir_measures)")

TOPICS = ["1", "2", "a", "q_7"]
DOCS = [f"d{i}" for i in range(8)] + ["D1"]
grade = st.sampled_from([0, 1, 1, 2, 3, -1])
score = st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0, -1.5])
SPECS = ["Compat", "Compat(p=0.8)", "Compat(normalize=False)", "Compat(p=0.5,normalize=False)", "Compat(p=1.0)",
         "Compat(p=0.0)", "Compat(normalize=True,p=0.95)"]


def reference(spec: str, qrels: dict, run: dict, judged_only: bool, max_docs: int | None) -> dict:
    """{qid or "all": value} from ir_measures on the run as -M and -J leave it (legalir's convention for
    ir_measures names: the mean over every qrels topic, a topic missing from the run counting 0)."""
    seen = {}
    for t, docs in run.items():
        order = sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True)  # trec_eval's order
        order = order[:max_docs] if max_docs else order
        if judged_only:
            order = [(d, s) for d, s in order if qrels.get(t, {}).get(d, -1) >= 0]
        if order:
            seen[t] = dict(order)
    m = ir_measures.parse_measure(spec)
    per = {x.query_id: x.value for x in ir_measures.iter_calc([m], qrels, seen)}
    out = {t: per.get(t, 0.0) for t in qrels if t in run}
    out["all"] = sum(per.get(t, 0.0) for t in qrels) / len(qrels)
    return out


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(qrels=st.dictionaries(st.sampled_from(TOPICS), st.dictionaries(st.sampled_from(DOCS), grade, min_size=1,
                                                                       max_size=7), min_size=1, max_size=3),
       run=st.dictionaries(st.sampled_from(TOPICS), st.dictionaries(st.sampled_from(DOCS), score, min_size=1,
                                                                     max_size=8), min_size=1, max_size=3),
       spec=st.sampled_from(SPECS), judged_only=st.booleans(), max_docs=st.sampled_from([None, None, 1, 3]))
def test_compat_equals_ir_measures(qrels, run, spec, judged_only, max_docs):
    if not set(qrels) & set(run):
        with pytest.raises(Exception, match="no topic has both"):
            evaluate(qrels, run, [spec])
        return
    res = evaluate(qrels, run, [spec], judged_only=judged_only, max_docs=max_docs)
    name = str(ir_measures.parse_measure(spec))
    expected = reference(spec, qrels, run, judged_only, max_docs)
    assert [str(m) for m in res.measures] == [name]
    got = {t: row[name] for t, row in res["per_topic"].items()}
    got["all"] = res["all"][name]
    assert set(got) == set(expected), (got, expected)
    for k, v in expected.items():
        assert math.isclose(got[k], v, abs_tol=1e-12), (k, got[k], v, spec, judged_only, max_docs)


@pytest.mark.parametrize("spec", ["Compat@5", "Compat(p=1)", "Compat(normalize=1)", "Compat(rel=2)", "Compat(p='x')"])
def test_compat_refuses_what_ir_measures_refuses(spec):
    with pytest.raises((AssertionError, KeyError, ValueError)):  # how ir_measures refuses (KeyError: Compat(rel=2))
        ir_measures.calc_aggregate([ir_measures.parse_measure(spec)], {"q": {"a": 1}}, {"q": {"a": 1.0}})
    with pytest.raises(MeasureError, match="Compat"):
        parse_measures([spec])


def test_a_persistence_above_1_is_refused_though_ir_measures_answers():
    """p > 1 weighs deeper ranks more than the first: ir_measures returns a number, legalir a located error."""
    with pytest.raises(MeasureError, match=r"p of 'Compat\(p=2.0\)' must be a decimal number between 0 and 1"):
        parse_measures(["Compat(p=2.0)"])
