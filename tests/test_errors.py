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


# ------------------------------------------------------------------ a collection's bad lines (issue 36, item 4)
def _damaged_collection(sample_collection, tmp_path, how):
    """A copy of the sample collection whose corpus has one bad record; returns (folder, file, line)."""
    coll = tmp_path / f"coll-{how}"
    shutil.copytree(sample_collection, coll)
    (coll / ".legalir-output.json").unlink()  # edited by hand below: the user's now
    docs = coll / "corpus" / "docs.jsonl"
    lines = docs.read_text(encoding="utf-8").splitlines(keepends=True)
    n = {"cut": len(lines), "not-json": 3, "no-id": 5, "empty": 7, "null-contents": 2, "spaced-id": 4}[how]
    rec = json.loads(lines[n - 1])
    if how == "cut":  # the file cut mid-line, as a copy stopped half-way leaves it
        lines[n - 1] = lines[n - 1][: len(lines[n - 1]) // 2]
    elif how == "not-json":
        lines[n - 1] = "this line is not JSON\n"
    elif how == "no-id":
        lines[n - 1] = json.dumps({k: v for k, v in rec.items() if k != "id"}) + "\n"
    elif how == "empty":
        lines[n - 1] = json.dumps({**rec, "contents": "  "}) + "\n"
    elif how == "null-contents":
        lines[n - 1] = json.dumps({**rec, "contents": None}) + "\n"
    else:
        lines[n - 1] = json.dumps({**rec, "id": "two words"}) + "\n"
    docs.write_text("".join(lines), encoding="utf-8")
    return coll, docs, n


_WHAT = {"cut": "invalid JSON", "not-json": "invalid JSON", "no-id": "the document has no 'id'",
         "empty": "has an empty 'contents'", "null-contents": "'contents' is null", "spaced-id": "holds whitespace"}


@pytest.mark.parametrize("how", sorted(_WHAT))
def test_each_bad_collection_line_is_named_by_file_and_line(sample_collection, tmp_path, how):
    import legalir
    from legalir.indexing.sparse import IndexError_

    coll, docs, n = _damaged_collection(sample_collection, tmp_path, how)
    idx = tmp_path / "idx"
    r = _cli("index", coll, idx, "--threads", "1")
    _error(r, f"error: {docs}:{n}: ", _WHAT[how])
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    if how == "cut":
        assert "the file ends there: cut short?" in r.stderr
    with pytest.raises(IndexError_) as e:
        legalir.index(coll, tmp_path / "api-idx")
    assert str(e.value) == r.stderr.strip()[len("error: "):]
    assert not idx.exists() and not (tmp_path / "api-idx").exists()  # nothing published


def test_a_cut_collection_shows_no_java_and_javas_report_goes_to_a_log(sample_collection, tmp_path):
    coll, docs, n = _damaged_collection(sample_collection, tmp_path, "cut")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    p = subprocess.run([sys.executable, "-m", "legalir.cli", "index", str(coll), str(tmp_path / "idx")],
                       capture_output=True, text=True, timeout=WAIT_S, env=env)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [f"error: {docs}:{n}: invalid JSON: Unterminated string starting at "
                                             f"(column {p.stderr.split('(column ')[1].split(')')[0]}), and the file "
                                             f"ends there: cut short?; fix that line, or convert the collection again "
                                             f"(legalir convert)"], p.stderr
    # Lucene reading that corpus itself (what it did before the check): its stack trace goes to a log file of
    # the cache, as JVM crash reports do; stderr and stdout stay clean
    code = ("from pathlib import Path\n"
            "from legalir.indexing import sparse\n"
            f"log = sparse._index_collection(Path({str(coll / 'corpus')!r}), Path({str(tmp_path / 'raw')!r}), 1)\n"
            "print(log)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT_S, env=env)
    assert p.returncode == 0, p.stderr
    for stream in (p.stdout, p.stderr):
        assert "\tat " not in stream and "Exception in thread" not in stream and "at org." not in stream, stream
        assert "ERROR" not in stream, stream
    log = p.stdout.strip().splitlines()[-1]
    assert log.startswith(str(tmp_path / "cache" / "legalir" / "jvm")), log
    report = open(log, encoding="utf-8").read()
    assert "Unexpected end-of-input" in report and "\tat " in report


def test_the_program_collects_less_and_exits_without_the_collectors_passes_and_loses_nothing(tmp_path):
    """The `legalir` program raises the garbage collector's thresholds for its command (legalir.base.collector.collect_less:
    importing torch set off collections worth up to 1 s of CPU) and freezes the collector once its command has ended
    (collector.settle: with torch loaded, the interpreter's teardown collections cost a second). Its output, error
    lines and exit status are what they were, on success and on an error; a command run in process (CliRunner)
    leaves the caller's collector as it was."""
    import gc

    from legalir.base.collector import PROGRAM_GC_THRESHOLDS

    (tmp_path / "q.txt").write_text("q1 0 a 1\nq1 0 b 0\n")
    (tmp_path / "r.trec").write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n")
    probe = ("import atexit, gc, runpy, sys\n"
             "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0, gc.get_threshold(), file=sys.stderr))\n"
             "sys.argv = ['legalir', *sys.argv[1:]]\n"
             "runpy.run_module('legalir.cli', run_name='__main__')\n")
    said = {}
    for args, status in ((["eval", "-m", "P.1", "q.txt", "r.trec"], 0), (["eval", "q.txt", "missing.trec"], 2)):
        p = subprocess.run([sys.executable, "-c", probe, *args], cwd=tmp_path, capture_output=True, text=True,
                           timeout=WAIT_S)
        plain = subprocess.run([sys.executable, "-m", "legalir.cli", *args], cwd=tmp_path, capture_output=True,
                               text=True, timeout=WAIT_S)
        assert p.returncode == plain.returncode == status, p.stderr
        assert p.stdout == plain.stdout and p.stderr.splitlines()[-1] == f"frozen True {PROGRAM_GC_THRESHOLDS}", \
            p.stderr
        assert p.stderr.splitlines()[:-1] == plain.stderr.splitlines()
        said[status] = p
    assert said[0].stdout.split() == ["P_1", "all", "1.0000"]
    assert said[2].stdout == "" and said[2].stderr.startswith("error: ") and "missing.trec" in said[2].stderr
    suites = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # a caller's own (the suite's processes collect as the program does)
    try:
        frozen = gc.get_freeze_count()
        r = _cli("eval", "-m", "P.1", tmp_path / "q.txt", tmp_path / "r.trec")
        assert r.exit_code == 0 and (gc.get_freeze_count(), gc.get_threshold()) == (frozen, (700, 10, 10))
    finally:
        gc.set_threshold(*suites)
