"""Versions, moved indexes, silent drops and depths (issue 30, item 2): a version folder given for the link
is refused naming the link; an index finds the collection beside it after both move; legalir.index()
refuses dropped documents (or counts them in a warning when asked to drop them) and leaves nothing behind
when refused; every run writer refuses a negative depth. Real JVM and Lucene."""
from __future__ import annotations

import json
import logging
import os
import shutil

import pytest
from helpers import cli

import legalir
from legalir import trec
from legalir.base import atomic
from legalir.errors import LegalirError
from legalir.indexing import sparse
from legalir.search import fusion
from legalir.trec import runformats


@pytest.fixture()
def work(sample_collection, tmp_path):
    """A folder holding a collection and the Lucene index built from it, side by side."""
    root = tmp_path / "work"
    shutil.copytree(sample_collection, root / "coll")
    assert cli("index", root / "coll", root / "bm25", "--threads", "1")[0] == 0
    return root


def _adds(tmp_path, docid="new-1"):
    p = tmp_path / f"{docid}.jsonl"
    p.write_text(json.dumps({"id": docid, "contents": "the tenant shall pay rent monthly"}) + "\n")
    return p


def test_an_update_or_build_given_a_version_folder_refuses_naming_the_link(work, tmp_path):
    link, version = work / "bm25", work / "bm25.v1"
    assert os.readlink(link) == "bm25.v1"
    code, out = cli("index", "update", version, "--add", _adds(tmp_path))
    assert code == 2 and f"{version}: is version bm25.v1 of {link}" in out and f"name {link}" in out
    assert len(out.strip().splitlines()) == 1
    code, out = cli("index", work / "coll", version, "--threads", "1")
    assert code == 2 and f"name {link}" in out
    assert version.is_dir() and not version.is_symlink() and os.readlink(link) == "bm25.v1"
    assert not (work / "bm25.v1.v1").exists()
    with pytest.raises(atomic.OutputError, match=f"name {link}"):  # inside a version, or through the link
        atomic.check_target(link / "part", sparse.KIND)
    # the link itself: updated as before, and every later update too
    assert cli("index", "update", link, "--add", _adds(tmp_path))[0] == 0
    assert cli("index", "update", link, "--add", _adds(tmp_path, "new-2"))[0] == 0
    assert os.readlink(link) == "bm25.v3"


def test_an_index_finds_the_collection_beside_it_after_both_move(work, tmp_path):
    meta = json.loads((atomic.current(work / "bm25") / sparse.META).read_text())
    assert meta["input"] == "../coll/corpus"  # relative: it sits beside the index (absolute too, for a lone copy)
    assert meta["input_absolute"] == str((work / "coll" / "corpus").resolve())
    alone = tmp_path / "alone"  # the index copied elsewhere without its collection: the absolute path
    shutil.copytree(atomic.current(work / "bm25"), alone / "bm25.v1")
    os.symlink("bm25.v1", alone / "bm25")
    assert cli("index", "update", alone / "bm25", "--add", _adds(tmp_path, "alone-1"))[0] == 0
    moved = tmp_path / "moved"
    os.rename(work, moved)
    code, out = cli("index", "update", moved / "bm25", "--add", _adds(tmp_path))
    assert code == 0, out
    s = legalir.Searcher(moved / "bm25")
    try:
        assert s.doc("new-1")["contents"] == "the tenant shall pay rent monthly"
        assert s.doc(next(iter(trec.read_qrels(moved / "coll" / "qrels" / "test.txt").values())).popitem()[0])
    finally:
        s.close()


def test_a_collection_elsewhere_is_recorded_absolute(sample_collection, tmp_path):
    assert cli("index", sample_collection, tmp_path / "bm25", "--threads", "1")[0] == 0
    meta = json.loads((atomic.current(tmp_path / "bm25") / sparse.META).read_text())
    assert meta["input"] == str((sample_collection / "corpus").resolve())


def test_index_refuses_dropped_documents_unless_asked(tmp_path, caplog):
    docs = [{"id": "a", "contents": "rent is due"}, {"id": "b", "contents": "deposit returned"},
            {"id": "a", "contents": "a second a"}, {"id": "c", "contents": "  "}]
    with pytest.raises(LegalirError, match=r"document #3: id 'a' is also document #1's.*drop_duplicates=True"):
        legalir.index(docs, tmp_path / "idx")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing behind: no idx, no idx.collection
    with pytest.raises(LegalirError, match=r"document #4 \('c'\) has empty text.*skip_empty=True"):
        legalir.index(docs, tmp_path / "idx", drop_duplicates=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    with caplog.at_level(logging.WARNING, logger="legalir.api"):
        s = legalir.index(docs, tmp_path / "idx", drop_duplicates=True, skip_empty=True, threads=1)
    try:
        assert [h.docid for h in s.search("rent", k=5)] == ["a"]
        assert s.doc("a")["contents"] == "rent is due"
    finally:
        s.close()
    msgs = [r.getMessage() for r in caplog.records if r.name == "legalir.api"]
    assert any("2 of 4 documents indexed: 1 with a repeated id dropped" in m and "1 with empty text skipped" in m
               for m in msgs), msgs


def test_a_refused_index_leaves_nothing_behind(tmp_path):
    target = tmp_path / "target"
    target.write_text("a file of mine\n")
    with pytest.raises(atomic.OutputError, match="exists and is a file"):
        legalir.index([{"id": "a", "contents": "rent"}], target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target"] and target.read_text() == "a file of mine\n"


def test_every_run_writer_refuses_a_negative_depth(tmp_path):
    run = {"q1": {"a": 2.0, "b": 1.0}}
    for depth in (-1, 0):
        with pytest.raises(legalir.errors.LegalirError, match="depth must be an integer from 1"):
            legalir.write_run(tmp_path / "r.trec", run, depth=depth)
        with pytest.raises(trec.DepthError):
            trec.write_run(tmp_path / "r.trec", run, depth=depth)
        with pytest.raises(trec.DepthError):
            runformats.write_crumb_run(tmp_path / "r.jsonl", run, depth=depth)
    with pytest.raises(trec.DepthError):
        fusion.fuse([run, run], depth=-1)
    with pytest.raises(trec.DepthError):
        trec.ranking(run["q1"], -1)
    assert not any(tmp_path.iterdir())
    assert legalir.write_run(tmp_path / "r.trec", run, depth=1) == 1
