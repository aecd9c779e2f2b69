"""Rerankers: the LLM judge's answer parsers, rerank ordering, a real cross-encoder (MiniLM weights),
the pointwise judge through a real loopback chat server, and `legalir rerank`."""
from __future__ import annotations

import pytest
from chat_server import ChatServer
from click.testing import CliRunner

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
def bm25_run(sample_index, sample_collection, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "bm25.test.trec"
    r = _cli("search", sample_index, sample_collection / "topics" / "test.jsonl", out, "-k", 10)
    assert r.exit_code == 0, r.output
    return out


def test_cross_encoder_rerank_cli(ce_dir, bm25_run, sample_collection, sample_index, tmp_path):
    import torch

    out = tmp_path / "ce.trec"
    caller = torch.get_num_threads()
    r = _cli("rerank", out, "--run", bm25_run, "--topics", sample_collection / "topics" / "test.jsonl",
             "--collection", sample_collection, "-k", 3, "--model", ce_dir, "--precision", "fp32",
             "--threads", caller + 1)
    assert r.exit_code == 0, r.output
    assert torch.get_num_threads() == caller  # --threads held for the rerank only (issue 37)
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


# ---------------------------------------------------------------- listwise / pairwise LLM reranking

def test_windows_bottom_up():
    assert rr.windows(100) == [(80 - 10 * i, 100 - 10 * i) for i in range(9)]
    assert rr.windows(25) == [(5, 25), (0, 15)]          # the top is always reached (rank_llm's fix)
    assert rr.windows(7) == [(0, 7)] and rr.windows(1) == [] and rr.windows(6, 4, 2) == [(2, 6), (0, 4)]
    with pytest.raises(rr.RerankError, match="window"):
        rr.windows(10, 5, 5)


@pytest.mark.parametrize("answer, n, order, problems", [
    ("[3] > [1] > [2]", 3, [2, 0, 1], set()),
    ("[2] > [2] > [1] > [3]", 3, [1, 0, 2], {"repeated"}),
    ("[2] > [9] > [0]", 3, [1, 0, 2], {"out-of-range", "missing"}),
    ("[4] > [1]", 5, [3, 0, 1, 2, 4], {"missing"}),
    ("<think>[1] first?</think> 3 > 2 > 1", 3, [2, 1, 0], set()),
    ("I cannot rank these passages.", 3, [0, 1, 2], {"unparsable"}),
    ("", 2, [0, 1], {"unparsable"}), (None, 2, [0, 1], {"unparsable"}),
])
def test_parse_permutation(answer, n, order, problems):
    assert rr.parse_permutation(answer, n) == (order, problems)


@pytest.mark.parametrize("answer, pref", [
    ("Passage A", "A"), ("passage b.", "B"), ("B", "B"), ("Output: Passage A", "A"),
    ("I prefer Passage B because it names the venue.", "B"), ("<think>Passage A?</think>Passage B", "B"),
    ("Both Passage A and Passage B are relevant", None), ("neither", None), ("", None), (None, None),
])
def test_parse_preference(answer, pref):
    assert rr.parse_preference(answer) == pref


def _truth(query: str, text: str) -> int:
    """The hidden true relevance of a passage (as shown in the prompt) to a query."""
    import hashlib

    return int(hashlib.sha256(f"{query}\x00{' '.join(text.split())}".encode()).hexdigest()[:12], 16)


def oracle(messages) -> str:
    """A deterministic 'LLM' answering listwise and pairwise prompts from the hidden true ranking."""
    import re

    user = messages[-1]["content"]
    m = re.search(r'Given a query "(.*)", which of', user)
    if m:
        a = re.search(r'Passage A: "(.*)"\n\nPassage B', user, re.S).group(1)
        b = re.search(r'Passage B: "(.*)"\n\nOutput', user, re.S).group(1)
        return "Passage A" if _truth(m.group(1), a) > _truth(m.group(1), b) else "Passage B"
    query = re.search(r"Search Query: (.*)\.\nRank the", user).group(1)
    passages = dict(re.findall(r"^\[(\d+)\] (.*)$", user, re.M))
    ranked = sorted(passages, key=lambda i: -_truth(query, passages[i]))
    return " > ".join(f"[{i}]" for i in ranked)


def _synthetic(n_topics=3, n_docs=35, seed=5):
    import random

    rng = random.Random(seed)
    topics, run, texts = {}, {}, {}
    for t in range(n_topics):
        q = f"topic{t}"
        topics[q] = Topic(q, f"which clause fits request number {t}")
        docs = [f"{q}-d{j:02d}" for j in range(n_docs)]
        for d in docs:
            texts[d] = f"clause {d} on {rng.choice(['liability', 'venue', 'notice', 'assignment'])} terms"
        scores = rng.sample(range(1000), n_docs)
        run[q] = {d: float(s) for d, s in zip(docs, scores)}
    return topics, run, texts


def _ideal(topics, run, texts, k):
    return {q: sorted([d for d, _ in trec.ranking(run[q])[:k]], key=lambda d: -_truth(topics[q].text, texts[d]))
            for q in run}


def _api(server, cache=None):
    from legalir.datasets import generate

    return generate.make("api", model="oracle", base_url=server.url, cache=cache or None, max_retries=0)


@pytest.mark.parametrize("passes", [1, 2])
def test_listwise_oracle_gives_the_ideal_order(passes):
    topics, run, texts = _synthetic()
    ideal = _ideal(topics, run, texts, 30)
    with ChatServer(oracle, max_requests=100) as server:
        ranker = rr.ListwiseReranker(_api(server), window=20, step=10, passes=passes)
        out = ranker.rerank(run, topics, texts, k=30, progress=False)
        assert server.count == 3 * passes * 2 == 3 * ranker.requests_per_topic(30)   # windows (10,30), (0,20)
    for q in run:
        got = [d for d, _ in trec.ranking(out[q])]
        top = 10 * passes          # one pass fixes the best window - step = 10, two passes all 30
        assert got[:top] == ideal[q][:top]
        assert sorted(got[:30]) == sorted(ideal[q]) and got[30:] == [d for d, _ in trec.ranking(run[q])[30:]]
    assert not ranker.problems


@pytest.mark.parametrize("variant, passes, k, top", [("allpairs", 1, 8, 8), ("sliding", 3, 10, 3)])
def test_pairwise_oracle_gives_the_ideal_order(variant, passes, k, top):
    topics, run, texts = _synthetic(n_docs=12)
    ideal = _ideal(topics, run, texts, k)
    with ChatServer(oracle, max_requests=400) as server:
        ranker = rr.PairwiseReranker(_api(server), variant=variant, passes=passes)
        out = ranker.rerank(run, topics, texts, k=k, progress=False)
        expected = k * (k - 1) if variant == "allpairs" else 2 * ((k - 1) + (k - 2) + (k - 3))
        assert server.count == 3 * expected == 3 * ranker.requests_per_topic(k)
    for q in run:
        got = [d for d, _ in trec.ranking(out[q])]
        assert got[:top] == ideal[q][:top] and sorted(got[:k]) == sorted(ideal[q])
        assert got[k:] == [d for d, _ in trec.ranking(run[q])[k:]]


def test_malformed_llm_answers_degrade_as_documented(capsys):
    topics, run, texts = _synthetic(n_docs=5)
    answers = {"which clause fits request number 0": "[2] > [2] > [9] > [1]",     # repeated, out of range
               "which clause fits request number 1": "I think they are all relevant.",   # unparsable
               "which clause fits request number 2": "<think>[5]</think> 3 > 1"}       # bare numbers, missing

    def bad(messages):
        user = messages[-1]["content"]
        if "Given a query" in user:
            return "Both passages are fine."
        return next(a for q, a in answers.items() if f"Search Query: {q}." in user)

    first = {q: [d for d, _ in trec.ranking(run[q])] for q in run}
    with ChatServer(bad, max_requests=200) as server:
        out = rr.ListwiseReranker(_api(server)).rerank(run, topics, texts, k=5, progress=False)
        err = capsys.readouterr().err
        assert "3 of 3 listwise answer(s) were malformed" in err and "out-of-range: 1" in err
        f0, f2 = first["topic0"], first["topic2"]
        assert [d for d, _ in trec.ranking(out["topic0"])] == [f0[1], f0[0], f0[2], f0[3], f0[4]]
        assert [d for d, _ in trec.ranking(out["topic1"])] == first["topic1"]
        assert [d for d, _ in trec.ranking(out["topic2"])] == [f2[2], f2[0], f2[1], f2[3], f2[4]]
        for variant in ("allpairs", "sliding"):      # no preference anywhere: ties keep the first-stage order
            out = rr.PairwiseReranker(_api(server), variant=variant).rerank(run, topics, texts, k=5, progress=False)
            assert {q: [d for d, _ in trec.ranking(out[q])] for q in out} == first
        assert "named neither passage" in capsys.readouterr().err


def test_llm_rerank_cli_listwise_and_pairwise(bm25_run, sample_collection, tmp_path):
    topics_path = sample_collection / "topics" / "test.jsonl"
    topics = trec.read_topics(topics_path)
    first = trec.read_run(bm25_run)
    texts = rr.collection_texts(sample_collection)
    k = 6
    ideal = _ideal(topics, first, texts, k)
    base = ["--run", bm25_run, "--topics", topics_path, "--collection", sample_collection, "-k", k,
            "--backend", "api", "--llm", "oracle", "--cache-dir", tmp_path / "cache"]
    with ChatServer(oracle, max_requests=1000) as server:
        for method, extra in (("listwise", ["--window", 4, "--step", 2, "--passes", 3]), ("pairwise", [])):
            out = tmp_path / f"{method}.trec"
            gens = tmp_path / f"{method}.jsonl"
            r = _cli("rerank", out, "--method", method, *base, *extra, "--base-url", server.url,
                     "--save-generations", gens)
            assert r.exit_code == 0, r.output
            new = trec.read_run(out)
            for q, docs in first.items():
                got = [d for d, _ in trec.ranking(new[q])]
                assert got[:k] == ideal[q][:len(got[:k])]
                assert got[k:] == [d for d, _ in trec.ranking(docs)[k:]]
            n = server.count
            r = _cli("rerank", tmp_path / "again.trec", "--method", method, *base, *extra, "--base-url", server.url)
            assert r.exit_code == 0 and server.count == n                    # every window/pair from the cache
            assert (tmp_path / "again.trec").read_bytes() == out.read_bytes()
            r = _cli("rerank", tmp_path / "replay.trec", "--method", method, *base[:-6], *extra,
                     "--backend", "precomputed", "--generations", gens)
            assert r.exit_code == 0, r.output
            assert (tmp_path / "replay.trec").read_bytes() == out.read_bytes()
    r = _cli("rerank", tmp_path / "x.trec", "--method", "listwise", *base, "--model", "minilm")
    assert r.exit_code == 2 and "--model goes with --method cross-encoder" in r.output


def test_cross_encoder_scorer_matches_sentence_transformers_predict(ce_dir):
    import numpy as np
    import torch
    from sentence_transformers import CrossEncoder

    queries = ["governing law", "which state's law governs the contract?", "notice", "termination for cause"] * 5
    docs = ["This Agreement shall be governed by the laws of New York.", "The supplier shall deliver the goods.",
            "Notices shall be in writing. " * 40, "Either party may terminate."] * 5
    docs = [d + f" ({i})" * (i % 4) for i, d in enumerate(docs)]          # varied lengths, some truncated
    ours = rr.CrossEncoderScorer(str(ce_dir), max_length=64, batch_size=3, precision="fp32", device="cpu")
    ref = CrossEncoder(str(ce_dir), max_length=64, device="cpu")
    want = ref.predict(list(zip(queries, docs)), batch_size=7, activation_fn=torch.nn.Identity())
    got = ours.score(queries, docs, progress=False)
    np.testing.assert_allclose(got, np.asarray(want, dtype=float), rtol=1e-4, atol=1e-5)
