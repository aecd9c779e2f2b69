"""`legalir rerank` reads documents the way its cross-encoder was trained to read them (issue 40).

`legalir train-ce --doc-text` records the template of a document's text (a statute's number and headings before
its text) in the model folder's legalir-train.json; the reranker reads it there, from a collection or from an
index's stored records, so the scores are the model's scores of the texts it was trained on. A real cross-encoder
(MiniLM with a seeded head, conftest's ce_dir) scores; its scores of the templated and of the plain texts are
computed here and compared with the run's.
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from legalir import trec
from legalir.cli import main
from legalir.search import finetune
from legalir.search import rerank as rr

TEMPLATE = "{citation} {title}\n{heading_path}\n{contents}"
DOCS = [("ga_1_1", "O.C.G.A. § 44-7-34", "Security deposits.", "Landlords shall return a deposit within one month."),
        ("ga_1_2", "O.C.G.A. § 44-7-35", "Deposit accounts.", "A landlord shall place the deposit in an escrow account."),
        ("ga_1_3", "O.C.G.A. § 44-7-50", "Dispossessory proceedings.", "The tenant may answer the affidavit."),
        ("ga_1_4", "O.C.G.A. § 44-7-7", "Notice to quit.", "Two months' notice is required to end a tenancy at will.")]


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def statutes(tmp_path_factory):
    """A four-section statutes collection (citation, title, heading path, contents), its Lucene index, a run and
    its topics."""
    from legalir.indexing import sparse

    root = tmp_path_factory.mktemp("rr-doc-text")
    coll = root / "coll"
    (coll / "corpus").mkdir(parents=True)
    with open(coll / "corpus" / "docs.jsonl", "w", encoding="utf-8") as f:
        for i, cit, title, text in DOCS:
            f.write(json.dumps({"id": i, "citation": cit, "title": title, "contents": text,
                                "heading_path": "Title 44 Property > Chapter 7 Landlord and Tenant"}) + "\n")
    (coll / "manifest.json").write_text(json.dumps({"dataset": "statutes", "documents": {"read": 4, "written": 4},
                                                    "partition_field": None, "partitions": None}), encoding="utf-8")
    sparse.build(coll, root / "idx", threads=1, quiet=True)
    topics = root / "topics.tsv"
    topics.write_text("q1\tWhen must a landlord return the deposit under § 44-7-34?\n"
                      "q2\tHow much notice ends a tenancy at will?\n", encoding="utf-8")
    run = root / "first.trec"
    run.write_text("".join(f"{q} Q0 {d} {r} {10 - r} first\n" for q in ("q1", "q2")
                           for r, (d, *_) in enumerate(DOCS, 1)), encoding="utf-8")
    return coll, root / "idx", topics, run


@pytest.fixture(scope="module")
def trained_on_statute_text(ce_dir, tmp_path_factory):
    """The cross-encoder folder as `train-ce --doc-text TEMPLATE` leaves it: weights and legalir-train.json."""
    model = tmp_path_factory.mktemp("ce-doc-text") / "model"
    shutil.copytree(ce_dir, model)
    (model / finetune.TRAIN_CONFIG).write_text(json.dumps({"doc_text": TEMPLATE, "command": "test"}), encoding="utf-8")
    return model


def _expected(model, topics_path, texts) -> dict[str, dict[str, float]]:
    scorer = rr.CrossEncoderScorer(str(model), precision="fp32", device="cpu")
    topics = trec.read_topics(topics_path)
    keys = [(q, d) for q in sorted(topics) for d, *_ in DOCS]
    scores = scorer.score([topics[q].text for q, _ in keys], [texts[d] for _, d in keys], progress=False)
    out: dict[str, dict[str, float]] = {}
    for (q, d), s in zip(keys, scores):
        out.setdefault(q, {})[d] = s
    return out


def _scores(run_path) -> dict[str, dict[str, float]]:
    return {q: dict(docs) for q, docs in trec.read_run(run_path).items()}


def test_rerank_reads_the_documents_as_the_model_was_trained(statutes, trained_on_statute_text, ce_dir, tmp_path):
    coll, idx, topics, run = statutes
    model = trained_on_statute_text
    assert rr.model_doc_text(model) == TEMPLATE and rr.model_doc_text(ce_dir) == "{contents}"
    assert rr.CrossEncoderScorer(str(model), device="cpu").doc_text == TEMPLATE
    recs = [json.loads(x) for x in (coll / "corpus" / "docs.jsonl").read_text().splitlines()]
    templated = {r["id"]: f"{r['citation']} {r['title']}\n{r['heading_path']}\n{r['contents']}" for r in recs}
    plain = {r["id"]: r["contents"] for r in recs}
    want = _expected(model, topics, templated)
    other = _expected(model, topics, plain)
    assert not np.allclose([want[q][d] for q in want for d in want[q]], [other[q][d] for q in other for d in other[q]],
                           atol=1e-4)

    for source in (["--collection", coll], ["--index", idx]):
        out = tmp_path / f"ce-{source[0][2:]}.trec"
        r = _cli("rerank", out, "--run", run, "--topics", topics, *source, "--model", model, "-k", 4,
                 "--precision", "fp32", "--device", "cpu")
        assert r.exit_code == 0, r.output
        assert "documents read as" in r.output and "{citation}" in r.output
        got = _scores(out)
        for q in want:
            assert got[q] == pytest.approx(want[q], abs=1e-4), source
    # the collection's texts by the template are the ones the encoder side of legalir writes (one rule)
    assert rr.collection_texts(coll, doc_text=TEMPLATE) == templated
    assert rr.index_texts(idx, list(templated), doc_text=TEMPLATE) == templated

    # a model trained on contents (no --doc-text, or not trained by legalir) reads contents
    out = tmp_path / "plain.trec"
    r = _cli("rerank", out, "--run", run, "--topics", topics, "--collection", coll, "--model", ce_dir, "-k", 4,
             "--precision", "fp32", "--device", "cpu")
    assert r.exit_code == 0 and "documents read as" not in r.output, r.output
    plain_want = _expected(ce_dir, topics, plain)
    assert _scores(out)["q1"] == pytest.approx(plain_want["q1"], abs=1e-4)

    # --doc-text overrides, with a warning when it is not what the model was trained on
    out = tmp_path / "override.trec"
    r = _cli("rerank", out, "--run", run, "--topics", topics, "--collection", coll, "--model", model, "-k", 4,
             "--precision", "fp32", "--device", "cpu", "--doc-text", "{contents}")
    assert r.exit_code == 0, r.output
    assert "was trained on documents written" in r.output
    assert _scores(out)["q2"] == pytest.approx(other["q2"], abs=1e-4)


def test_rerank_doc_text_errors_are_located(statutes, trained_on_statute_text, tmp_path):
    coll, idx, topics, run = statutes
    # a field the records lack: the document named, nothing written
    out = tmp_path / "x.trec"
    r = _cli("rerank", out, "--run", run, "--topics", topics, "--collection", coll, "--model",
             trained_on_statute_text, "--doc-text", "{chapter} {contents}")
    assert r.exit_code == 2 and "corpus: document 1" in r.output and "'chapter'" in r.output and not out.exists()
    r = _cli("rerank", out, "--run", run, "--topics", topics, "--collection", coll, "--model",
             trained_on_statute_text, "--doc-text", "{title!r}")
    assert r.exit_code == 2 and "--doc-text" in r.output and not out.exists()
    # a model record that cannot be read: the file named (the training text cannot be guessed)
    broken = tmp_path / "broken"
    shutil.copytree(trained_on_statute_text, broken)
    (broken / finetune.TRAIN_CONFIG).write_text("{ not json", encoding="utf-8")
    r = _cli("rerank", out, "--run", run, "--topics", topics, "--collection", coll, "--model", broken)
    assert r.exit_code == 2 and f"{broken / finetune.TRAIN_CONFIG}" in r.output and not out.exists()
    (broken / finetune.TRAIN_CONFIG).write_text(json.dumps({"doc_text": 3}), encoding="utf-8")
    with pytest.raises(rr.RerankError, match="'doc_text' must be a template string"):
        rr.model_doc_text(broken)
