"""A file is legalir's only when its folder's registry says so and its size, time and SHA-256 match
(issue 30, item 1): nothing is guessed from a file's shape, a registry legalir did not write counts as
naming nothing and is never written over or through."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading

import pytest
from click.testing import CliRunner

from legalir import atomic, trec
from legalir.cli import main


def cli(*args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r.exit_code, r.output


@pytest.fixture()
def topics(sample_collection, tmp_path):
    p = tmp_path / "topics.tsv"
    shutil.copy(sample_collection / "topics" / "test.tsv", p)
    return p


def test_a_pyserini_run_never_written_by_legalir_is_not_overwritten(sample_index, topics, tmp_path):
    theirs = tmp_path / "pyserini.trec"
    text = "q1 Q0 doc1 1 9.900000 Anserini\nq1 Q0 doc2 2 8.100000 Anserini\n"
    theirs.write_text(text)
    code, out = cli("search", sample_index, topics, theirs, "-k", "3")
    assert code == 2 and f"{theirs}: exists and legalir did not write it" in out and "--force" in out
    assert theirs.read_text() == text
    assert len(out.strip().splitlines()) == 1  # one line, no traceback


def test_a_users_sed_edit_of_a_legalir_run_is_not_lost(sample_index, topics, tmp_path):
    run = tmp_path / "run.trec"
    assert cli("search", sample_index, topics, run, "-k", "3")[0] == 0
    assert cli("search", sample_index, topics, run, "-k", "3")[0] == 0  # ours, unchanged: replaced
    subprocess.run(["sed", "-i", "s/ [^ ]*$/ mine/", str(run)], check=True)
    edited = run.read_text()
    assert " mine\n" in edited
    code, out = cli("search", sample_index, topics, run, "-k", "3")
    assert code == 2 and "legalir did not write it (or it changed since)" in out
    assert run.read_text() == edited


def test_an_edit_keeping_size_and_time_is_caught_by_the_hash(tmp_path):
    run = tmp_path / "r.trec"
    trec.write_run(run, {"q1": {"a": 2.0, "b": 1.0}}, tag="aaaa")
    st = run.stat()
    run.write_text(run.read_text().replace("aaaa", "bbbb"))  # same size
    os.utime(run, ns=(st.st_atime_ns, st.st_mtime_ns))  # same time (as cp -p or rsync -t would leave it)
    assert run.stat().st_size == st.st_size and run.stat().st_mtime_ns == st.st_mtime_ns
    assert not atomic.written_by_legalir(run)
    with pytest.raises(atomic.OutputError, match="pass --force"):
        trec.write_run(run, {"q1": {"a": 1.0}})
    assert "bbbb" in run.read_text()


def test_a_corrupt_or_unreadable_registry_is_the_safe_side_and_left_alone(tmp_path, caplog):
    run = tmp_path / "r.trec"
    trec.write_run(run, {"q1": {"a": 2.0}})
    reg = tmp_path / atomic.REGISTRY
    reg.write_text("{garbage")
    assert not atomic.written_by_legalir(run)
    with pytest.raises(atomic.OutputError, match=r"is not a registry legalir wrote.*pass --force"):
        trec.write_run(run, {"q1": {"a": 1.0}})
    with caplog.at_level("WARNING", logger="legalir.atomic"):
        trec.write_run(run, {"q1": {"a": 1.0}}, force=True)
    assert reg.read_text() == "{garbage"  # never written over
    assert "not a registry legalir wrote" in caplog.text
    reg.write_text(json.dumps({"files": {"r.trec": "not a table"}}))
    assert not atomic.written_by_legalir(run)
    if os.geteuid() != 0:  # root reads any file
        reg.write_text(json.dumps({"files": {}}))
        reg.chmod(0)
        try:
            with pytest.raises(atomic.OutputError, match="cannot be read"):
                trec.write_run(run, {"q1": {"a": 3.0}})
        finally:
            reg.chmod(0o644)


def test_a_symlinked_registry_is_never_written_through(tmp_path):
    precious = tmp_path / "precious.json"
    precious.write_text('{"mine": true}\n')
    out = tmp_path / "out"
    out.mkdir()
    (out / atomic.REGISTRY).symlink_to(precious)
    run = out / "r.trec"
    trec.write_run(run, {"q1": {"a": 2.0}})
    assert precious.read_text() == '{"mine": true}\n' and (out / atomic.REGISTRY).is_symlink()
    # even a link to a registry that names the file: a link is not legalir's
    shutil.copy(tmp_path / "out" / "r.trec", tmp_path / "r.trec")
    other = tmp_path / "other"
    other.mkdir()
    trec.write_run(other / "r.trec", {"q1": {"a": 2.0}})
    (out / atomic.REGISTRY).unlink()
    (out / atomic.REGISTRY).symlink_to(other / atomic.REGISTRY)
    shutil.copy2(other / "r.trec", run)
    assert not atomic.written_by_legalir(run)
    with pytest.raises(atomic.OutputError, match="is a symbolic link"):
        trec.write_run(run, {"q1": {"a": 1.0}})


def test_the_registry_is_replaced_whole_and_records_concurrent_writers(tmp_path):
    errors = []

    def write(i):
        try:
            for _ in range(5):
                trec.write_run(tmp_path / f"r{i}.trec", {"q1": {f"d{i}": float(i)}})
        except Exception as e:  # pragma: no cover - the assertion below reports it
            errors.append(e)

    inode = None
    threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    doc = json.loads((tmp_path / atomic.REGISTRY).read_text())
    assert sorted(doc["files"]) == [f"r{i}.trec" for i in range(6)]
    assert all(atomic.written_by_legalir(tmp_path / f"r{i}.trec") for i in range(6))
    inode = (tmp_path / atomic.REGISTRY).stat().st_ino
    trec.write_run(tmp_path / "r0.trec", {"q1": {"x": 1.0}})
    assert (tmp_path / atomic.REGISTRY).stat().st_ino != inode  # a new file renamed into place
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([atomic.REGISTRY, *(f"r{i}.trec" for i in range(6))])
