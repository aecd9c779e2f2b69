"""End to end: the CLI pipeline on the embedded sample, and ACORD on the real release."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import WAIT_S

from legalir import collections, report, trec
from legalir.datasets.acord import Acord
from legalir.indexing import sparse

LEGALIR = [sys.executable, "-m", "legalir.cli"]


def run_cli(args, cwd):
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run(LEGALIR + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=WAIT_S)


def test_demo_pipeline_through_the_cli(tmp_path):
    """convert -> index -> search -> eval -> report, as `make demo` runs them."""
    steps = [
        ["convert", "sample", "--quiet"],
        ["index", "collections/sample", "indexes/sample/bm25", "--threads", "1"],
        ["search", "indexes/sample/bm25", "collections/sample/topics/test.jsonl", "runs/sample/bm25.test.trec",
         "-k", "100"],
        ["eval", "-J", "-m", "ndcg_cut.5,10", "-m", "star3_P.5", "collections/sample/qrels/test.txt",
         "runs/sample/bm25.test.trec"],
        ["report", "sample", "runs/sample/bm25.test.trec", "--qrels", "collections/sample/qrels/test.txt",
         "--results-dir", "results/sample"],
    ]
    outs = []
    for step in steps:
        p = run_cli(step, tmp_path)
        assert p.returncode == 0, f"{step}: {p.stderr}"
        outs.append(p.stdout)
    eval_lines = dict((l.split()[0], float(l.split()[2])) for l in outs[3].splitlines())
    saved = json.loads((tmp_path / "results/sample/bm25.test.json").read_text())
    assert set(saved) == {"all", "per_topic", "topics", "written_by_legalir"} and saved["written_by_legalir"]
    assert saved["topics"]["evaluated"] == len(saved["per_topic"]) <= saved["topics"]["judged"]
    assert round(saved["all"]["ndcg_cut_10"], 4) == eval_lines["ndcg_cut_10"]
    assert "BM25" not in outs[4] or "(paper)" not in outs[4]  # the sample has no published rows
    assert "bm25.test (legalir)" in outs[4]
    # by hand from the run: 3 topics find all their >=3-star clauses in the top 5; for
    # ip-infringement-indemnification only ind-ip of {ind-ip, ind-general} is retrieved: (1+1+1+0.5)/4
    assert eval_lines["star3_P_5"] == 0.875


def test_cli_bad_run_exits_2_with_file_and_line(tmp_path, sample_collection):
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 notanumber tag\n")
    p = run_cli(["eval", str(sample_collection / "qrels" / "test.txt"), str(bad)], tmp_path)
    assert p.returncode == 2
    assert f"{bad}:2" in p.stderr and "score" in p.stderr


def test_cli_unknown_dataset_and_missing_index(tmp_path):
    p = run_cli(["convert", "nosuch"], tmp_path)
    assert p.returncode == 2 and "unknown dataset 'nosuch'" in p.stderr
    (tmp_path / "t.tsv").write_text("q1\tsome query\n")
    p = run_cli(["search", str(tmp_path), str(tmp_path / "t.tsv"), str(tmp_path / "r.trec")], tmp_path)
    assert p.returncode == 2 and not (tmp_path / "r.trec").exists()
    assert f"error: {tmp_path}: not a Lucene index" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.slow
def test_acord_bm25_end_to_end_on_the_real_release(acord_built, tmp_path, trec_eval_bin):
    """The `make eval-acord` chain (built once per test run: conftest.acord_built): counts, judged-only scores
    equal trec_eval's."""
    coll = acord_built.collection
    m = acord_built.manifest
    assert m["documents"]["written"] == 3931 and not m["problems"]
    assert collections.read_manifest(coll)["documents"]["written"] == 3931
    assert acord_built.built == {"": 3931} and sparse.num_docs(acord_built.index) == 3931
    run_path = acord_built.runs["test"]
    assert len(trec.read_run(run_path)) == len(trec.read_topics(coll / "topics" / "test.jsonl")) == 57
    qrels_path = coll / "qrels" / "test.txt"
    result = report.score_run(Acord, qrels_path, run_path, tmp_path / "bm25.test.json")
    # judged-only by hand, then the real trec_eval on the filtered run
    qrels = trec.read_qrels(qrels_path)
    judged = {q: {d: s for d, s in docs.items() if d in qrels.get(q, {})} for q, docs in trec.read_run(run_path).items()}
    filtered = tmp_path / "judged.trec"
    trec.write_run(filtered, judged, tag="bm25")
    out = subprocess.run([trec_eval_bin, "-m", "ndcg_cut.5,10", str(qrels_path), str(filtered)],
                         capture_output=True, text=True, check=True).stdout
    theirs = {l.split()[0]: float(l.split()[2]) for l in out.splitlines()}
    for m_name in ("ndcg_cut_5", "ndcg_cut_10"):
        assert round(result["all"][m_name], 4) == theirs[m_name]
    # the figures the README reports for this command
    assert round(result["all"]["ndcg_cut_10"], 3) == 0.502
    assert round(result["all"]["star3_P_5"], 3) == 0.458
    assert round(result["all"]["star3_rawP_5"], 3) == 0.456
    assert round(result["all"]["star5_rawP_5"], 3) == 0.076
    assert len(result["per_topic"]) == 57
