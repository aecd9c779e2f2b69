"""Documented figures are regenerated, not typed (scripts/figures.py, `make docs-figures`).

Every block of README.md and docs/*.md between ``<!-- figures: NAME VIEW -->`` and ``<!-- /figures -->`` must be
its results file (docs/figures/NAME.json) rendered; and the benchmarks this machine can rerun (North Carolina
r81's BM25 rows on the shared statute archive; the ACORD demo in tests/test_demo.py) must give what the results
files hold. A figure typed by hand, or a results file left behind by a change to the code, fails here.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, WAIT_S, needs

SCRIPTS = REPO / "scripts"
spec = importlib.util.spec_from_file_location("figures", SCRIPTS / "figures.py")
figures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(figures)

#: ../shared/data/statutes beside the checkout (a git worktree may sit deeper: the nearest one up the tree)
STATUTES = next((p / "shared" / "data" / "statutes" for p in REPO.parents
                 if (p / "shared" / "data" / "statutes" / "cic-code-nc-r80-r81-ch39-47.tar.xz").exists()), None)


def test_every_documented_block_is_its_results_file_rendered():
    stale = figures.check()
    assert not stale, "figures typed or stale (python scripts/figures.py write, or make docs-figures):\n" + "\n".join(stale)
    specs = {spec for p in figures.documents() for *_, spec, _ in figures.blocks(p.read_text(encoding="utf-8"))}
    assert {"demo block", "statutes-nc81 summary", "statutes-nc81 table", "statutes-nc81 boost"} <= specs


def test_a_figure_edited_by_hand_is_named_with_its_line(tmp_path):
    doc = tmp_path / "doc.md"
    good = "# t\n\nhit@1 <!-- figures: statutes-nc81 boost -->" + figures.render("statutes-nc81 boost") + \
           "<!-- /figures --> then\n\n<!-- figures: statutes-nc81 table -->" + figures.render("statutes-nc81 table") + \
           "<!-- /figures -->\n"
    doc.write_text(good)
    assert figures.regenerate(doc) == (good, [])
    table = good.index("| North Carolina r81 |")
    cell = good.index("0.", table)
    typed = good[:cell] + ("1" if good[cell] != "1" else "2") + good[cell + 1:]  # one digit changed by hand
    doc.write_text(typed)
    text, stale = figures.regenerate(doc)
    assert text == good and stale == [f"{doc}:5: statutes-nc81 table"]
    for broken, what in [("<!-- figures: statutes-nc81 boost -->0.1", "no '<!-- /figures -->'"),
                         ("<!-- figures: statutes-nc81 -->x<!-- /figures -->", "names its results file(s) and a view"),
                         ("<!-- figures: nope table -->x<!-- /figures -->", "no such results file"),
                         ("<!-- figures: statutes-nc81 nope -->x<!-- /figures -->", "no view 'nope'"),
                         ("<!-- figures: demo block -->\n<!-- figures: demo block -->\n<!-- /figures -->",
                          "a block opens before")]:
        doc.write_text("a\n" + broken + "\n")
        with pytest.raises(figures.FigureError, match=f"^{re.escape(str(doc))}:2: .*{re.escape(what)}"):
            figures.regenerate(doc)


def test_a_value_missing_from_its_results_file_is_an_error_not_a_default(tmp_path, monkeypatch):
    data = figures.load("statutes-nc81")
    del data["fusion"]  # the hybrid row names its tuned weights
    (tmp_path / "statutes-nc81.json").write_text(json.dumps(data))
    monkeypatch.setattr(figures, "FIGURES", tmp_path)
    with pytest.raises(figures.FigureError, match=re.escape(f"no 'text' in {tmp_path / 'statutes-nc81.json'}")):
        figures.render("statutes-nc81 table")
    assert " -> " in figures.render("statutes-nc81 boost") and "\n" not in figures.render("statutes-nc81 boost")


@needs(STATUTES is not None, "the shared statute archives (../shared/data/statutes) are absent")
def test_nc81_bm25_figures_are_what_the_benchmark_gives(tmp_path):
    """scripts/bench_statutes.sh as `make docs-figures` runs it, BM25 only (DENSE=0: the test topics, citations on
    and off): every value it writes is the documented results file's, to the last digit trec_eval prints."""
    out = tmp_path / "statutes-nc81.json"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]), "DENSE": "0",
           "FIGURES": str(out)}
    p = subprocess.run(["bash", str(SCRIPTS / "bench_statutes.sh"), str(STATUTES), "nc", "81", str(tmp_path / "w")],
                       env=env, capture_output=True, text=True, timeout=WAIT_S)
    assert p.returncode == 0, p.stderr[-3000:]
    fresh, documented = json.loads(out.read_text()), figures.load("statutes-nc81")
    assert fresh["topics"] == documented["topics"] == {"test": 212, "test.masked": 212}
    assert fresh["command"].startswith("DENSE=0 scripts/bench_statutes.sh ")
    for set_, systems in fresh["results"].items():
        assert set(systems) == {"bm25-citoff", "bm25-citon"}
        for system, values in systems.items():
            assert values == documented["results"][set_][system], (set_, system)
    # what the script printed is what it saved: the table rows of docs/statutes.md's measures
    assert f"| test | bm25-citon | 212 | {fresh['results']['test']['bm25-citon']['success_1']:.3f} |" in p.stdout
