"""Reports: percentile bootstrap intervals (seeded, identical on re-run), breakdowns by topic metadata, and the
self-contained HTML page rendered in real headless Chromium (no console errors, every image drawn)."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from legalir import trec
from legalir.cli import main
from legalir.report import breakdown as bd
from legalir.scoring import stats

REPO = Path(__file__).resolve().parent.parent


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_bootstrap_interval_is_the_percentile_of_resampled_means_and_reproducible():
    rng = np.random.default_rng(0)
    x = rng.random(40)
    ci = stats.bootstrap_ci(x, 1000, 0.95, seed=3)
    # the same computation written out: 1,000 resamples of the topics from the seeded generator
    g = np.random.default_rng(3)
    means = x[g.integers(0, 40, size=(1000, 40))].mean(axis=1)
    assert (ci.low, ci.high) == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))
    assert ci.low < ci.mean < ci.high and ci.mean == pytest.approx(x.mean()) and ci.n == 40
    assert stats.bootstrap_ci(x, 1000, 0.95, seed=3) == ci
    assert stats.bootstrap_ci(x, 1000, 0.95, seed=4) != ci
    assert stats.bootstrap_ci([0.5] * 5) .low == 0.5 == stats.bootstrap_ci([0.5] * 5).high
    assert math.isnan(stats.bootstrap_ci([]).mean)
    d = stats.paired_bootstrap_ci(x + 0.1, x)
    assert d.low == pytest.approx(0.1) and d.high == pytest.approx(0.1)


def test_compare_prints_intervals_identically_on_rerun(tmp_path):
    rng = np.random.default_rng(5)
    topics = [f"t{i}" for i in range(20)]
    docs = [f"d{j}" for j in range(15)]
    qrels = {t: {d: int(rng.integers(0, 3)) for d in rng.choice(docs, 6, replace=False)} for t in topics}
    good = {t: {d: float(2 + qrels[t].get(d, 0) + rng.random()) for d in docs} for t in topics}
    noise = {t: {d: float(rng.random()) for d in docs} for t in topics}
    q, a, b = tmp_path / "q", tmp_path / "a.trec", tmp_path / "b.trec"
    trec.write_qrels(q, qrels)
    trec.write_run(a, noise, tag="noise")
    trec.write_run(b, good, tag="good")
    args = ["compare", q, a, b, "-m", "ndcg_cut.10", "--json"]
    r1, r2 = _cli(*args), _cli(*args)
    assert r1.exit_code == 0 and r1.stdout == r2.stdout
    [c] = json.loads(r1.stdout)
    base, better = c["runs"]
    assert c["bootstrap"]["resamples"] == 1000
    assert base["ci"][0] <= base["mean"] <= base["ci"][1] and "diff" not in base
    assert better["diff"] == pytest.approx(better["mean"] - base["mean"])
    assert 0 < better["diff_ci"][0] <= better["diff"] <= better["diff_ci"][1]
    text = _cli("compare", q, a, b, "-m", "ndcg_cut.10", "--bootstrap", 500, "--seed", 2).stdout
    assert "95% percentile bootstrap over topics (500 resamples)" in text and "diff vs first" in text


def test_breakdown_groups_and_nan():
    per_topic = {"q1": {"m": 1.0, "s5": 0.2}, "q2": {"m": 0.0}, "q3": {"m": 0.5, "s5": 0.4}, "q4": {"m": 0.25}}
    fields = {"q1": {"category": "A"}, "q2": {"category": "B"}, "q3": {"category": "A"}, "q4": {"category": ""}}
    t = bd.breakdown(per_topic, fields, "category", ["m", "s5"])
    assert list(t) == ["A", "B", "NaN"]
    assert t["A"] == {"count": 2, "m": 0.75, "s5": pytest.approx(0.3)}
    assert t["B"]["count"] == 1 and t["B"]["m"] == 0.0 and math.isnan(t["B"]["s5"])
    text = bd.format_breakdown("run", "category", t, ["m", "s5"])
    assert text.splitlines()[4].split()[-1] == "NaN" and text.splitlines()[-1].startswith("NaN")


@pytest.fixture(scope="module")
def two_runs(sample_collection, sample_index, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    topics = sample_collection / "topics" / "test.jsonl"
    for name, extra in (("bm25", []), ("bm25-rm3", ["--rm3", "--fb-docs", "2", "--fb-terms", "5"])):
        r = _cli("search", sample_index, topics, out / f"{name}.trec", "-k", 20, *extra)
        assert r.exit_code == 0, r.output
    return out / "bm25.trec", out / "bm25-rm3.trec"


def test_report_by_category_and_html_page_renders_in_chromium(sample_collection, two_runs, tmp_path):
    from browser import Chromium

    page_path = tmp_path / "report.html"
    r = _cli("report", "sample", *two_runs, "--qrels", sample_collection / "qrels" / "test.txt", "--label", "BM25",
             "--label", "BM25+RM3", "--by", "category", "--topics", sample_collection / "topics" / "test.jsonl",
             "--html", page_path)
    assert r.exit_code == 0, r.output
    assert "BM25 (legalir): by category" in r.stdout and "Governing Law" in r.stdout
    page = page_path.read_text()
    assert "By category" in page and "bootstrap" in page and "src=\"http" not in page
    assert page.count("data:image/png;base64,") >= 4
    with Chromium() as browser:
        pg = browser.load(page_path.as_uri())
        sizes = pg.evaluate("[...document.images].map(i => [i.complete, i.naturalWidth, i.naturalHeight])")
        title = pg.evaluate("document.title")
        shot = pg.screenshot(tmp_path / "report.png")
        errors = list(pg.errors)
    assert not errors, errors
    assert len(sizes) >= 4 and all(c and w > 0 and h > 0 for c, w, h in sizes), sizes
    assert title.startswith("sample")
    assert shot.stat().st_size > 10_000
    screens = REPO / ".screens"
    screens.mkdir(exist_ok=True)
    shutil.copy(shot, screens / "report.png")


def test_html_page_puts_the_papers_rows_beside_ours(tmp_path):
    from legalir import datasets
    from legalir.report import html

    acord = type(datasets.get("acord", "."))
    result = {"all": {"ndcg_cut_5": 0.5, "ndcg_cut_10": 0.55},
              "per_topic": {"a": {"ndcg_cut_5": 0.4, "ndcg_cut_10": 0.5}, "b": {"ndcg_cut_5": 0.6, "ndcg_cut_10": 0.6}}}
    out = html.write_report(tmp_path / "p.html", acord, [("mine", result)], command="legalir report acord x")
    page = out.read_text()
    # the papers' rows and ours in the same decimals; a topics column (the papers' counts are not published)
    assert '<tr class="paper"><td>BM25 (paper)</td><td>-</td><td>52.5</td><td>54.0</td>' in page
    assert "<td>mine</td><td>2</td><td>50.0</td><td>55.0</td>" in page  # not a run legalir wrote
    assert "legalir report acord x" in page and "pytrec-eval-terrier" in page


def test_only_runs_legalir_wrote_are_labelled_legalir(tmp_path):
    from legalir import report, trec
    from legalir.datasets import dataset_class

    trec.write_qrels(tmp_path / "q.txt", {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}})
    trec.write_run(tmp_path / "ours.trec", {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d3": 1.0}}, tag="bm25")
    (tmp_path / "theirs.trec").write_text("q1 Q0 d1 1 2.0 mine\nq1 Q0 d2 2 1.0 mine\nq2  Q0 d3 1 1 mine\n")
    out = report.render(dataset_class("acord"), [str(tmp_path / "ours.trec"), str(tmp_path / "theirs.trec")],
                        qrels=str(tmp_path / "q.txt"))
    rows = {line.split("  ")[0] for line in out.splitlines()}
    assert "ours (legalir)" in rows and "theirs" in rows and "theirs (legalir)" not in rows
