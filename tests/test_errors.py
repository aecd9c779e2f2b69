"""The one error path: every failure a user can cause ends with exit status 2 and one located `error:` line.

Most cases run the CLI in process (click's CliRunner, the JVM already up for
the session); one runs the real `python -m legalir.cli` to check what a user
sees: no traceback unless --debug.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from conftest import WAIT_S
from legalir.cli import main


def _cli(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def _error(r, *fragments):
    """Exit 2, one `error:` line naming what is wrong, no traceback."""
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    assert "error: " in r.stderr and "Traceback" not in r.output, r.output
    for f in fragments:
        assert f in r.stderr, (f, r.stderr)


@pytest.fixture()
def topics(tmp_path):
    p = tmp_path / "t.tsv"
    p.write_text("q1\tgoverning law\n")
    return p


def test_lucene_folders_that_are_not_one_index(sample_collection, sample_index, topics, tmp_path):
    run = tmp_path / "r.trec"
    empty = tmp_path / "empty"
    empty.mkdir()
    _error(_cli("search", empty, topics, run), f"{empty}: not a Lucene index")
    _error(_cli("search", sample_collection, topics, run), f"{sample_collection}: a collection folder, not an index")
    parts = tmp_path / "parts"  # a partitioned index folder where one index is needed
    shutil.copytree(sample_index, parts / "alaska")
    _error(_cli("tune-bm25", "sample", parts, "--collection", sample_collection, "--topics", "train"),
           "holds one index per partition (alaska)")
    _error(_cli("rerank", run, "--run", topics, "--topics", topics, "--index", empty, "--model", "minilm"))
    assert not run.exists()


def test_bad_option_values_are_refused_before_any_search(sample_index, topics, tmp_path):
    run = tmp_path / "r.trec"
    _error(_cli("search", sample_index, topics, run, "-k", "0"), "legalir search", "0 is not in the range x>=1")
    _error(_cli("search", sample_index, topics, run, "--tag", "two words"), "one word", "'two words'")
    _error(_cli("search", sample_index, topics, run, "--b", "1.5"), "--b")
    _error(_cli("maxp", topics, run, "--auto"), "--auto needs --collection")
    _error(_cli("convert", "sample", "--option", "nokey"), "expected KEY=VALUE")
    _error(_cli("convert", "sample", "--option", "foo=bar", "--out", tmp_path / "c"), "sample: unknown option(s) foo")
    assert not run.exists() and not (tmp_path / "c").exists()


def test_measure_names_are_mapped_or_refused_up_front(sample_collection, sample_index, tmp_path):
    from legalir import trec
    from legalir.search import bm25 as lucene
    from legalir.search.tuning import objective

    assert objective("ndcg_cut.10")[1] == objective("ndcg_cut_10")[1] == "ndcg_cut_10"
    for s in ("train", "valid"):  # runs of the training sets, for tune-fusion
        tops = trec.read_topics(sample_collection / "topics" / f"{s}.jsonl")
        run = lucene.BM25(sample_index).search(tops, 10)
        trec.write_run(tmp_path / f"bm25.{s}.trec", run, tag="bm25")
    out = tmp_path / "fusion.json"
    args = ["tune-fusion", "sample", "--collection", sample_collection, "--topics", "train", "--topics", "valid",
            "--run", tmp_path / "bm25.{set}.trec", "--run", tmp_path / "bm25.{set}.trec", "--step", "0.5", "-o", out]
    _error(_cli(*args, "--measure", "ndcg_cut"), "--measure 'ndcg_cut' names 9 values")
    _error(_cli(*args, "--measure", "mrr@10"), "unknown measure 'mrr@10'")
    assert not out.exists()
    r = _cli(*args, "--measure", "ndcg_cut.10")  # trec_eval's spelling: mapped to ndcg_cut_10
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["measure"] == "ndcg_cut_10"
    _error(_cli("train-ce", sample_collection, tmp_path / "m", "--valid-run", tmp_path / "bm25.valid.trec",
                "--measure", "P"), "--measure 'P'")
    assert not (tmp_path / "m").exists()


def test_malformed_json_csv_and_encodings_name_the_file(sample_collection, sample_index, tmp_path):
    from legalir.datasets import DatasetError, get

    params = tmp_path / "params.json"
    params.write_text('{"best": {"method": "rrf",\n "k": }}\n')
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 d1 1 1.0 x\n")
    _error(_cli("fuse", run, run, "-o", tmp_path / "f.trec", "--params", params), f"{params}:2: fusion parameters")
    coll = tmp_path / "coll"
    shutil.copytree(sample_collection, coll)
    (coll / "manifest.json").write_text("{not json")
    _error(_cli("index", coll, tmp_path / "idx"), f"{coll / 'manifest.json'}:1: collection manifest is not valid JSON")
    coll2 = tmp_path / "coll2"
    shutil.copytree(sample_collection, coll2)
    docs = coll2 / "corpus" / "docs.jsonl"
    lines = docs.read_text().splitlines()
    docs.write_text("\n".join(lines[:3] + ['{"id": "x", "contents": "cut'] + lines[3:]) + "\n")
    _error(_cli("encode", coll2, tmp_path / "emb", "--encoder", "minilm", "--quiet"), f"{docs}:4: invalid JSON")
    # ACORD-layout readers: a qrels file that is not UTF-8, broken CSV quoting
    from legalir.datasets.sample import PACKAGED

    root = tmp_path / "data" / "sample"
    shutil.copytree(PACKAGED, root)
    qrels = root / "qrels" / "test.tsv"
    qrels.write_bytes(qrels.read_bytes() + b"caf\xe9\tx\t1\n")
    with pytest.raises(DatasetError, match=r"test\.tsv: not UTF-8 text"):
        get("sample", tmp_path / "data").qrels_sets()
    _error(_cli("convert", "sample", "--data-dir", tmp_path / "data", "--out", tmp_path / "c", "--quiet"),
           "test.tsv: not UTF-8 text")
    (root / "query_formats.tsv").write_text('short\tmedium\tlong\n"unclosed\tquote\n', encoding="utf-8")
    formats = get("sample", tmp_path / "data")
    try:
        formats.query_formats()
    except DatasetError as e:  # csv reads an unclosed quote to the end of the file: either an error or no match
        assert "query_formats.tsv" in str(e)


def test_classification_of_errors_from_below_legalir():
    from legalir.errors import user_message

    assert "pyyaml" in user_message(ModuleNotFoundError("No module named 'yaml'", name="yaml"))
    assert "faiss-cpu" in user_message(ModuleNotFoundError("No module named 'faiss'", name="faiss"))
    assert user_message(ModuleNotFoundError("No module named 'nosuch'", name="nosuch")) is None  # a bug
    assert user_message(KeyError("x")) is None  # a bug keeps its traceback
    err = FileNotFoundError(2, "No such file or directory")
    err.filename = "runs/x.trec"
    assert user_message(err) == "runs/x.trec: No such file or directory"


def test_debug_shows_the_traceback_and_the_real_cli_does_not(tmp_path, topics):
    empty = tmp_path / "empty"
    empty.mkdir()
    r = CliRunner().invoke(main, ["--debug", "search", str(empty), str(topics), str(tmp_path / "r.trec")])
    assert r.exit_code != 2 and type(r.exception).__name__ == "NotAnIndex"  # raised, not turned into exit 2
    r = CliRunner().invoke(main, ["search", str(empty), str(topics), str(tmp_path / "r.trec")],
                           env={"LEGALIR_DEBUG": "1"})
    assert type(r.exception).__name__ == "NotAnIndex"
    # what a user sees from the real command: one line, exit 2, nothing written
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("LEGALIR_DEBUG", None)
    p = subprocess.run([sys.executable, "-m", "legalir.cli", "search", str(empty), str(topics), str(tmp_path / "r.trec"),
                        "-k", "0"], capture_output=True, text=True, env=env, timeout=WAIT_S)
    assert p.returncode == 2 and p.stderr.startswith("error: legalir search:") and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "legalir.cli", "tune-fusion", "sample", "--collection", str(tmp_path),
                        "--topics", "test", "--run", "x.{set}.trec", "-o", str(tmp_path / "f.json")],
                       capture_output=True, text=True, env=env, timeout=WAIT_S)
    assert p.returncode == 2 and "error: --topics test: tuning on test topics is not allowed" in p.stderr


def test_library_warnings_go_through_logging(tmp_path, topics):
    """A library warning (expansion's empty generation) is on stderr by default; LEGALIR_LOG_LEVEL=ERROR silences it."""
    gens = tmp_path / "g.jsonl"
    gens.write_text(json.dumps({"qid": "q1", "text": ""}) + "\n")
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("LEGALIR_LOG_LEVEL", None)
    warning = "warning: 1 topic(s) got an empty generation and keep their original query: q1"
    cmd = [sys.executable, "-m", "legalir.cli", "expand", str(topics), str(tmp_path / "x.tsv"),
           "--backend", "precomputed", "--generations", str(gens)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=WAIT_S)
    assert p.returncode == 0 and p.stderr.startswith(warning + "\n") and not p.stdout, p.stderr
    p = subprocess.run(cmd, capture_output=True, text=True, env={**env, "LEGALIR_LOG_LEVEL": "ERROR"}, timeout=WAIT_S)
    assert p.returncode == 0 and "empty generation" not in p.stderr and "1 expanded topics" in p.stderr, p.stderr
    assert (tmp_path / "x.tsv").read_text() == "q1\tgoverning law\n"  # the original query kept
