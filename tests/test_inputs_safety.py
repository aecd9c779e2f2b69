"""Inputs are never clobbered and every file legalir writes reads back (issue 23): the output rule for files
(never onto an input, never over a file legalir did not write without --force), ids checked where they enter,
``-`` for standard input, types checked rather than stringified, user files never replaced by built-in copies,
and located errors from the published-files readers. One test per case an outside tester found."""
from __future__ import annotations

import gzip
import json
import os
import shutil

import pytest
from helpers import cli

from legalir import collections, datasets, trec
from legalir.base import atomic
from legalir.datasets.dataset import DatasetError
from legalir.datasets.sample import PACKAGED


@pytest.fixture()
def topics(sample_collection, tmp_path):
    p = tmp_path / "topics.tsv"
    shutil.copy(sample_collection / "topics" / "test.tsv", p)
    return p


# ------------------------------------------------------------------ never onto an input
def test_search_refuses_to_write_its_run_onto_its_topics(sample_index, topics):
    before = topics.read_bytes()
    code, out = cli("search", sample_index, topics, topics)
    assert code == 2
    assert f"{topics}: is also an input of this command" in out
    assert topics.read_bytes() == before
    assert sorted(p.name for p in topics.parent.iterdir()) == ["topics.tsv"]  # nothing written beside it


def test_fuse_refuses_to_write_onto_one_of_its_runs_even_with_force(tmp_path):
    r1, r2 = tmp_path / "r1.trec", tmp_path / "r2.trec"
    trec.write_run(r1, {"q1": {"a": 2.0, "b": 1.0}}, tag="one")
    trec.write_run(r2, {"q1": {"b": 3.0, "c": 1.0}}, tag="two")
    before = r1.read_bytes()
    for extra in ([], ["--force"]):
        code, out = cli("fuse", "-o", r1, r1, r2, *extra)
        assert code == 2 and f"{r1}: is also an input of this command" in out
        assert r1.read_bytes() == before
    link = tmp_path / "hard.trec"  # the same file under another name (same inode)
    os.link(r1, link)
    code, out = cli("fuse", "-o", link, r1, r2)
    assert code == 2 and "is also an input" in out and r1.read_bytes() == before
    sym = tmp_path / "sym.trec"
    sym.symlink_to(r2)
    code, out = cli("fuse", "-o", sym, r1, r2)
    assert code == 2 and "is also an input" in out
    assert cli("fuse", "-o", tmp_path / "f.trec", r1, r2)[0] == 0
    assert set(trec.read_run(tmp_path / "f.trec")["q1"]) == {"a", "b", "c"}


def test_other_commands_refuse_their_inputs_too(sample_collection, tmp_path):
    run = tmp_path / "r.trec"
    trec.write_run(run, {"q1": {"a": 2.0}, "q2": {"b": 1.0}})
    before = run.read_bytes()
    assert cli("convert-run", run, run, "--to", "crumb")[0] == 2
    assert cli("maxp", run, run)[0] == 2
    assert cli("chunk", sample_collection / "topics" / "test.jsonl", sample_collection / "topics" / "test.jsonl")[0] == 2
    assert run.read_bytes() == before
    with pytest.raises(atomic.OutputError, match="is also an input"):  # the API: the library functions themselves
        from legalir.trec import runformats

        runformats.convert_run(run, run, "trec")


# ------------------------------------------------------------------ never over a file legalir did not write
def test_search_never_replaces_a_users_file_without_force(sample_index, topics, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    code, out = cli("search", sample_index, topics, notes, "-k", "3")
    assert code == 2 and f"{notes}: exists and legalir did not write it" in out and "--force" in out
    assert notes.read_text() == "my notes\n"
    assert cli("search", sample_index, topics, notes, "-k", "3", "--force")[0] == 0
    assert len(trec.read_run(notes)) == 4

    run = tmp_path / "run.trec"  # legalir's own output: replaced without --force, run after run
    assert cli("search", sample_index, topics, run, "-k", "3")[0] == 0
    assert (tmp_path / atomic.REGISTRY).exists()
    assert cli("search", sample_index, topics, run, "-k", "2")[0] == 0
    assert max(len(d) for d in trec.read_run(run).values()) == 2
    with open(run, "a") as f:  # the user edits it: it is theirs now
        f.write("# my comment\n")
    code, out = cli("search", sample_index, topics, run, "-k", "2")
    assert code == 2 and "legalir did not write it (or it changed since)" in out
    empty = tmp_path / "empty.trec"  # an empty file holds nothing to lose
    empty.write_text("")
    assert cli("search", sample_index, topics, empty, "-k", "1")[0] == 0


def test_a_run_in_legalirs_shape_but_no_registry_is_the_users(tmp_path):
    run = tmp_path / "old.trec"
    trec.write_run(run, {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 0.5}}, tag="bm25")
    atomic.check_file(run)  # recorded: no error
    (tmp_path / atomic.REGISTRY).unlink()
    assert not atomic.written_by_legalir(run)  # nothing is guessed from the content
    with pytest.raises(atomic.OutputError, match="pass --force"):
        trec.write_run(run, {"q1": {"a": 1.0}})
    trec.write_run(run, {"q1": {"a": 1.0}}, force=True)
    assert trec.read_run(run) == {"q1": {"a": 1.0}} and atomic.written_by_legalir(run)


# ------------------------------------------------------------------ ids checked where they enter
def test_topic_ids_with_spaces_are_refused_where_they_enter(sample_index, tmp_path):
    tsv = tmp_path / "sp.tsv"
    tsv.write_text("q1\tlandlord deposit\nq 1\tgoverning law\n")
    code, out = cli("search", sample_index, tsv, tmp_path / "sp.trec")
    assert code == 2 and f"{tsv}:2: topic id 'q 1' holds whitespace" in out and "'q_1'" in out
    assert not (tmp_path / "sp.trec").exists()
    jsonl = tmp_path / "sp.jsonl"
    jsonl.write_text(json.dumps({"qid": "#7", "text": "x"}) + "\n")
    with pytest.raises(trec.FormatError, match=r"sp\.jsonl:1: topic id '#7' starts with '#'"):
        trec.read_topics(jsonl)
    # ACORD's raw queries (free-text ids): the message names the field to use instead
    import lzma

    from legalir.datasets.acord import EMBEDDED

    raw = tmp_path / "queries.jsonl"
    raw.write_bytes(lzma.open(EMBEDDED / "queries.jsonl.xz").read())
    with pytest.raises(trec.FormatError, match=r"queries\.jsonl:1: .*BEIR queries file.*'query_id'"):
        trec.read_topics(raw)


def test_writers_refuse_what_they_could_not_read_back(tmp_path):
    run = tmp_path / "r.trec"
    for bad, what in (({"q 1": {"a": 1.0}}, "topic id 'q 1'"), ({"q1": {"a\tb": 1.0}}, "document id 'a\\\\tb'"),
                      ({"q1": {"": 1.0}}, "document id ''"), ({"#q": {"a": 1.0}}, "starts with '#'"),
                      ({"q1": {"a": float("nan")}}, "is NaN"), ({"q1": {7: 1.0}}, "document id 7")):
        with pytest.raises(trec.IdError, match=what):
            trec.write_run(run, bad)
        assert not run.exists()
    with pytest.raises(trec.TagError):
        trec.write_run(run, {"q1": {"a": 1.0}}, tag="a\u00a0b")
    with pytest.raises(trec.IdError, match="topic id 'q 2'"):
        trec.write_topics(tmp_path / "t.tsv", [trec.Topic("q 2", "text")])
    with pytest.raises(trec.IdError, match="query text is empty"):
        trec.write_topics(tmp_path / "t.tsv", [trec.Topic("q2", " \t")])
    with pytest.raises(trec.IdError, match="document id 'd 1'"):
        trec.write_qrels(tmp_path / "q.txt", {"q1": {"d 1": 1}})
    with pytest.raises(trec.IdError, match="grade 1.5"):
        trec.write_qrels(tmp_path / "q.txt", {"q1": {"d1": 1.5}})
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_hand_made_collection_with_a_bad_id_is_a_located_error(sample_collection, tmp_path):
    coll = tmp_path / "coll"
    shutil.copytree(sample_collection, coll)
    docs = coll / "corpus" / "docs.jsonl"
    lines = docs.read_text().splitlines()
    lines[2] = json.dumps({"id": "two words", "contents": "x"})
    docs.write_text("\n".join(lines) + "\n")
    with pytest.raises(collections.CollectionError, match=r"docs\.jsonl:3: document id 'two words' holds whitespace"):
        list(collections.iter_documents(coll))
    lines[2] = json.dumps({"id": "x", "contents": ["a", "b"]})
    docs.write_text("\n".join(lines) + "\n")
    with pytest.raises(collections.CollectionError, match=r"docs\.jsonl:3: field 'contents' is a list"):
        list(collections.iter_documents(coll))


# ------------------------------------------------------------------ '-' reads standard input
def test_dash_reads_topics_and_runs_from_standard_input(sample_index, topics, tmp_path):
    from_file, from_stdin = tmp_path / "file.trec", tmp_path / "stdin.trec"
    assert cli("search", sample_index, topics, from_file, "-k", "5")[0] == 0
    code, out = cli("search", sample_index, "-", from_stdin, "-k", "5", input=topics.read_text())
    assert code == 0, out
    assert from_stdin.read_bytes() == from_file.read_bytes()
    jsonl = topics.with_suffix(".jsonl")  # JSONL on standard input: recognised by its first character
    trec.write_topics_jsonl(jsonl, trec.read_topics(topics).values())
    assert cli("search", sample_index, "-", from_stdin, "-k", "5", input=jsonl.read_text())[0] == 0
    assert from_stdin.read_bytes() == from_file.read_bytes()
    fused = tmp_path / "fused.trec"
    assert cli("fuse", "-o", fused, "-", from_file, input=from_file.read_text())[0] == 0
    assert set(trec.read_run(fused)) == set(trec.read_run(from_file))
    code, out = cli("fuse", "-o", fused, "-", "-", input=from_file.read_text())
    assert code == 2 and "standard input ('-') can be read once" in out
    code, out = cli("convert-run", "-", tmp_path / "r.jsonl", "--to", "crumb", input=from_file.read_text())
    assert code == 0 and len(trec.iter_jsonl(tmp_path / "r.jsonl").__next__()[1]["items"]) == 5


# ------------------------------------------------------------------ types checked, not stringified
def test_wrong_types_in_a_published_corpus_are_located_errors(tmp_path):
    root = tmp_path / "data" / "sample"
    shutil.copytree(PACKAGED, root)
    corpus = root / "corpus.jsonl"
    base = corpus.read_text()
    n = base.count("\n") + 1
    corpus.write_text(base + json.dumps({"_id": 12345, "text": ["a", "b"]}) + "\n")
    code, out = cli("convert", "sample", "--data-dir", tmp_path / "data", "--out", tmp_path / "c", "--quiet")
    assert code == 2 and f"corpus.jsonl:{n}: field 'text' is a list; expected a string" in out
    assert not (tmp_path / "c").exists()
    corpus.write_text(base + json.dumps({"_id": 12345, "text": "a numeric id"}) + "\n")  # documented: lossless
    assert cli("convert", "sample", "--data-dir", tmp_path / "data", "--out", tmp_path / "c", "--quiet")[0] == 0
    assert {"id": "12345", "contents": "a numeric id"} in list(collections.iter_documents(tmp_path / "c"))
    corpus.write_text(base + json.dumps({"_id": 1.5, "text": "x"}) + "\n")
    with pytest.raises(DatasetError, match=rf"corpus\.jsonl:{n}: '_id' must be .* found 1\.5 \(a number\)"):
        list(datasets.get("sample", tmp_path / "data").documents())
    t = tmp_path / "t.jsonl"
    t.write_text(json.dumps({"qid": "q1", "text": {"a": 1}}) + "\n")
    with pytest.raises(trec.FormatError, match=r"t\.jsonl:1: field 'text' is an object; expected a string"):
        trec.read_topics(t)
    t.write_text(json.dumps({"qid": True, "text": "x"}) + "\n")
    with pytest.raises(trec.FormatError, match=r"t\.jsonl:1: field 'qid' is a boolean"):
        trec.read_topics(t)
    t.write_text(json.dumps({"qid": 7, "text": "x"}) + "\n")
    assert list(trec.read_topics(t)) == ["7"]


# ------------------------------------------------------------------ user files never replaced by built-ins
def test_a_data_dir_with_unreadable_files_is_never_replaced_by_the_built_in_copy(tmp_path):
    root = tmp_path / "data" / "sample"
    root.mkdir(parents=True)
    (root / "corpus.jsonl.gz").write_bytes(gzip.compress((PACKAGED / "corpus.jsonl").read_bytes()))
    code, out = cli("convert", "sample", "--data-dir", tmp_path / "data", "--out", tmp_path / "c", "--quiet")
    assert code == 2 and f"{root}: holds corpus.jsonl.gz but none of the files legalir reads" in out
    assert not (tmp_path / "c").exists()
    acord = tmp_path / "data" / "acord"
    acord.mkdir()
    (acord / "corpus.json").write_text("{}")  # renamed
    with pytest.raises(DatasetError, match=r"holds corpus\.json but none .*corpus\.jsonl"):
        datasets.get("acord", tmp_path / "data")
    (root / "corpus.jsonl.gz").unlink()  # nothing given (an empty folder): the built-in copy
    assert datasets.get("sample", tmp_path / "data").root == PACKAGED


# ------------------------------------------------------------------ published-file errors name file and line
def test_a_pair_graded_twice_in_published_qrels_names_file_and_lines(tmp_path):
    root = tmp_path / "data" / "sample"
    shutil.copytree(PACKAGED, root)
    qrels = root / "qrels" / "test.tsv"
    text = qrels.read_text()
    last = text.rstrip("\n").split("\n")[-1].split("\t")
    n_first = text.rstrip("\n").count("\n") + 1
    qrels.write_text(text.rstrip("\n") + "\n" + "\t".join([last[0], last[1], str(int(last[2]) + 1)]) + "\n")
    code, out = cli("convert", "sample", "--data-dir", tmp_path / "data", "--out", tmp_path / "c", "--quiet")
    assert code == 2
    assert f"{qrels}:{n_first + 1}:" in out and f"first on {qrels}:{n_first}" in out and "different grades" in out


def test_force_is_one_shared_option_on_every_command_writing_a_named_file():
    from legalir import commands

    writers = {"search", "search-dense", "rank-pool", "fuse", "tune-fusion", "maxp", "convert-run", "chunk", "expand",
               "rerank", "qa", "report"}
    helps = {}
    for c in commands.all_commands():
        opts = [p for p in c.params if "--force" in getattr(p, "opts", ())]
        if opts and c.name != "download":  # download's --force: fetch again (its own, older meaning)
            helps[c.name] = opts[0].help
    assert set(helps) == writers
    assert len(set(helps.values())) == 1 and "never written onto one of the command's inputs" in next(iter(helps.values()))
