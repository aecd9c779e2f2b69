"""MaxP: passage runs to document runs, against hand-computed values."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from legalir import trec
from legalir.search.maxp import MaxPError, maxp, parent_of, topics_using_maxp
from legalir.trec import Topic

PASSAGES = {
    "q1": {
        "NCT01:0": 3.0, "NCT01:1": 5.0, "NCT01:2": 1.0,          # best passage 5.0
        "Star Wars: A New Hope:0": 4.0,                          # title holding ':' -> cut at the last ':'
        "Star Wars: A New Hope:1": 4.5,
        "plain": 2.0,                                            # no ':' -> its own document
    },
    "q2": {"NCT01:2": 0.5, "NCT02:0": 0.7},
}


def test_parent_by_last_colon():
    assert parent_of("NCT01:3") == "NCT01"
    assert parent_of("Star Wars: A New Hope:2") == "Star Wars: A New Hope"
    assert parent_of("plain") == "plain"
    assert parent_of(":7") == ":7"  # nothing before the ':' is not a document id
    assert maxp(PASSAGES) == {
        "q1": {"NCT01": 5.0, "Star Wars: A New Hope": 4.5, "plain": 2.0},
        "q2": {"NCT01": 0.5, "NCT02": 0.7},
    }


def test_parent_id_mapping_preferred(capsys):
    parents = {"NCT01:0": "NCT01", "NCT01:1": "NCT01", "NCT01:2": "other-trial",
               "Star Wars: A New Hope:0": "sw", "Star Wars: A New Hope:1": "sw", "plain": "", "NCT02:0": "NCT02"}
    assert maxp(PASSAGES, parents) == {
        "q1": {"NCT01": 5.0, "other-trial": 1.0, "sw": 4.5, "plain": 2.0},  # "" parent: a document itself
        "q2": {"other-trial": 0.5, "NCT02": 0.7},
    }
    partial = dict(parents)
    del partial["NCT02:0"]
    assert maxp(PASSAGES, partial)["q2"] == {"other-trial": 0.5, "NCT02": 0.7}  # fell back to the id rule ...
    assert "1 passage id(s) in the run are not in the collection: NCT02:0" in capsys.readouterr().err  # ... loudly
    with pytest.raises(MaxPError, match="NCT02:0"):
        maxp(PASSAGES, partial, strict=True)


def test_maxp_ranking_and_trec_output(tmp_path):
    """The ranking after MaxP, as trec_eval will read it: score desc, ties by docid desc."""
    run = {"q": {"b:0": 2.0, "b:1": 7.0, "a:0": 7.0, "c:0": 6.5, "c:1": 1.0}}
    docs = maxp(run)
    path = tmp_path / "run.trec"
    trec.write_run(path, docs, tag="maxp")
    assert [line.split()[2:5] for line in path.read_text().splitlines()] == [
        ["b", "1", "7.000000"], ["a", "2", "7.000000"], ["c", "3", "6.500000"]]


def test_use_max_p_flag():
    topics = {"a": Topic("a", "x", {"use_max_p": True}), "b": Topic("b", "y", {"use_max_p": False}),
              "c": Topic("c", "z", {}), "d": Topic("d", "w", {"use_max_p": "true"})}
    assert topics_using_maxp(topics) == {"a", "d"}


def test_maxp_cli_auto_only_on_flagged_topics(tmp_path):
    from legalir.cli import main

    coll = tmp_path / "coll"
    (coll / "topics").mkdir(parents=True)
    (coll / "corpus").mkdir()
    (coll / "manifest.json").write_text(json.dumps({"partition_field": None, "documents": {"written": 3}}))
    (coll / "corpus" / "docs.jsonl").write_text(
        "".join(json.dumps(d) + "\n" for d in [{"id": "d1:0", "contents": "x", "parent_id": "d1"},
                                               {"id": "d1:1", "contents": "y", "parent_id": "d1"},
                                               {"id": "d2:0", "contents": "z", "parent_id": "d2"}]))
    trec.write_topics_jsonl(coll / "topics" / "test.jsonl", [Topic("m", "q", {"use_max_p": True}),
                                                             Topic("p", "q", {"use_max_p": False})])
    run = tmp_path / "passages.trec"
    trec.write_run(run, {"m": {"d1:0": 1.0, "d1:1": 3.0, "d2:0": 2.0}, "p": {"d1:0": 1.0, "d1:1": 3.0}}, tag="bm25")
    out = tmp_path / "docs.trec"
    r = CliRunner().invoke(main, ["maxp", str(run), str(out), "--auto", "--collection", str(coll), "--tag", "bm25"])
    assert r.exit_code == 0, r.output
    assert trec.read_run(out) == {"m": {"d1": 3.0, "d2": 2.0}, "p": {"d1:0": 1.0, "d1:1": 3.0}}
    first = out.read_bytes()
    CliRunner().invoke(main, ["maxp", str(run), str(out), "--auto", "--collection", str(coll), "--tag", "bm25"])
    assert out.read_bytes() == first  # identical bytes run to run
    r = CliRunner().invoke(main, ["maxp", str(run), str(out), "--auto"])
    assert r.exit_code == 2 and "--auto needs --collection" in r.output
