"""Significance tests: t-test against scipy, randomization test on known answers, corrections, `compare`."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import ttest_rel

from legalir import trec
from legalir.cli import main
from legalir.scoring import stats


@pytest.mark.parametrize("seed,n", [(0, 5), (1, 30), (2, 200)])
def test_t_test_matches_scipy_ttest_rel(seed, n):
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    b = np.clip(a + rng.normal(0.03, 0.1, n), 0, 1)
    ours = stats.paired_t_test(a, b)
    ref = ttest_rel(a, b)
    assert ours.statistic == pytest.approx(float(ref.statistic), rel=1e-9)
    assert ours.pvalue == pytest.approx(float(ref.pvalue), rel=1e-9)
    assert ours.n == n


def test_t_test_degenerate_cases():
    assert stats.paired_t_test([0.5, 0.2], [0.5, 0.2]).pvalue == 1.0        # identical systems
    assert stats.paired_t_test([0.6, 0.3], [0.5, 0.2]).pvalue == 0.0        # constant difference
    assert np.isnan(stats.paired_t_test([0.6], [0.5]).pvalue)               # one pair: undefined


def test_randomization_exact_known_answer():
    # differences 1, 2, 3: of the 8 sign vectors only +++ and --- reach |sum| >= 6
    r = stats.randomization_test([1, 2, 3], [0, 0, 0])
    assert r.exact and r.permutations == 8 and r.pvalue == 0.25
    # differences 1, 1, 1, 1, 0: the zero difference doubles every sign vector: 4 of 32
    assert stats.randomization_test([1, 1, 1, 1, 0], [0] * 5).pvalue == 4 / 32
    # a brute-force count over all 2^n sign vectors agrees on a random case
    rng = np.random.default_rng(3)
    d = rng.normal(0.1, 1, 10)
    obs = abs(d.sum())
    count = sum(abs(sum(s * x for s, x in zip(signs, d))) >= obs - 1e-12
                for signs in itertools.product((1, -1), repeat=10))
    assert stats.randomization_test(d, np.zeros(10), permutations=2 ** 10).pvalue == count / 2 ** 10


def test_randomization_sampled_is_reproducible_and_close_to_exact():
    rng = np.random.default_rng(4)
    a, b = rng.random(14), rng.random(14)
    exact = stats.randomization_test(a, b, permutations=2 ** 14)
    assert exact.exact
    s1 = stats.randomization_test(a, b, permutations=5000, seed=7)
    s2 = stats.randomization_test(a, b, permutations=5000, seed=7)
    assert not s1.exact and s1 == s2
    assert s1.pvalue == pytest.approx(exact.pvalue, abs=0.02)


def test_corrections():
    p = [0.01, 0.04, 0.03]
    assert stats.adjust(p, "none") == p
    assert stats.adjust(p, "bonferroni") == pytest.approx([0.03, 0.12, 0.09])
    # Holm: sorted 0.01*3, 0.03*2, max(0.06, 0.04*1)
    assert stats.adjust(p, "holm") == pytest.approx([0.03, 0.06, 0.06])
    assert stats.adjust([0.5, 0.9], "bonferroni") == [1.0, 1.0]


def test_compare_cli_t_and_randomization(tmp_path):
    rng = np.random.default_rng(5)
    topics = [f"t{i}" for i in range(25)]
    docs = [f"d{j}" for j in range(20)]
    qrels = {t: {d: int(rng.integers(0, 3)) for d in rng.choice(docs, 8, replace=False)} for t in topics}
    good = {t: {d: float(2 + qrels[t].get(d, 0) + rng.random()) for d in docs} for t in topics}   # relevance-led
    noise = {t: {d: float(rng.random()) for d in docs} for t in topics}
    q, a, b, c = (tmp_path / n for n in ("q", "a.trec", "b.trec", "c.trec"))
    trec.write_qrels(q, qrels)
    trec.write_run(a, noise, tag="noise")
    trec.write_run(b, good, tag="good")
    trec.write_run(c, noise, tag="copy")
    res = CliRunner().invoke(main, ["compare", str(q), str(a), str(b), str(c), "-m", "ndcg_cut.10",
                                    "--correction", "holm", "--json"])
    assert res.exit_code == 0, res.output
    [cmp] = json.loads(res.stdout)
    assert cmp["measure"] == "ndcg_cut_10" and cmp["topics"] == 25
    base, better, same = cmp["runs"]
    assert base["p"] is None and better["mean"] > base["mean"]
    assert better["p"] < 0.001 and same["p"] == 1.0
    # the means are trec_eval's ndcg_cut_10 averages
    from legalir.scoring import evaluate

    assert better["mean"] == pytest.approx(evaluate(qrels, trec.read_run(b), ["ndcg_cut.10"])["all"]["ndcg_cut_10"])
    args = ["compare", str(q), str(a), str(b), "-m", "map", "--test", "randomization", "--permutations", "2000"]
    out1 = CliRunner().invoke(main, args)
    out2 = CliRunner().invoke(main, args)
    assert out1.exit_code == 0 and out1.stdout == out2.stdout  # fixed seed: identical output
    assert "paired randomization test" in out1.stdout and "2000 sign vectors" in out1.stdout


def test_compare_rejects_measures_without_per_topic_values(tmp_path):
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("t1 0 d1 1\n")
    r.write_text("t1 Q0 d1 1 1.0 x\n")
    res = CliRunner().invoke(main, ["compare", str(q), str(r), str(r), "-m", "gm_map"])
    assert res.exit_code == 2 and "cannot be compared" in res.stderr
    res = CliRunner().invoke(main, ["compare", str(q), str(r)])
    assert res.exit_code == 2 and "at least two runs" in res.output
