"""legalir.irds: converted collections through the real ir_datasets (and PyTerrier's irds: provider), on
collections converted in the test under a temporary $LEGALIR_COLLECTIONS."""
from __future__ import annotations

import pytest
from conftest import requires

ir_datasets = requires("ir_datasets")

import legalir.irds as irds  # noqa: E402
from legalir import collections, datasets, trec  # noqa: E402
from legalir.datasets import dataset as base  # noqa: E402
from legalir.datasets.acord import Acord  # noqa: E402
from legalir.datasets.dataset import Dataset, Document, Judgement, Pipeline, Topic  # noqa: E402


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A collections folder holding ACORD, converted from the embedded sample (ACORD's published layout)."""
    out = tmp_path_factory.mktemp("irds") / "collections"
    collections.write(Acord(datasets.sample.PACKAGED), out / "acord", quiet=True)
    return out


@pytest.fixture
def env(root, monkeypatch):
    monkeypatch.setenv(irds.ENV, str(root))
    return root


def test_acord_splits_read_as_the_collection_files(env):
    coll = env / "acord"
    manifest = collections.read_manifest(coll)
    assert {"legalir/acord", "legalir/acord/train", "legalir/acord/valid", "legalir/acord/test",
            "legalir/acord/test/long"} <= set(ir_datasets.registry)
    ds = ir_datasets.load("legalir/acord/test")
    assert ds.has_docs() and ds.has_queries() and ds.has_qrels()
    docs = list(ds.docs_iter())
    assert ds.docs_count() == len(docs) == manifest["documents"]["written"] == 30
    records = list(collections.iter_documents(coll))
    assert [(d.doc_id, d.text) for d in docs] == [(r["id"], r["contents"]) for r in records]
    assert docs[0].default_text() == docs[0].text and ds.docs_cls()._fields[:2] == ("doc_id", "text")
    assert ds.docs_store().get(docs[3].doc_id) == docs[3]
    topics = trec.read_topics(coll / "topics" / "test.jsonl")
    assert [(q.query_id, q.text) for q in ds.queries_iter()] == [(t.qid, t.text) for t in topics.values()]
    assert ds.queries_cls() is ir_datasets.formats.GenericQuery
    qrels = trec.read_qrels(coll / "qrels" / "test.txt")
    got = {}
    for q in ds.qrels_iter():
        assert q.iteration == "0" and isinstance(q.relevance, int)
        got.setdefault(q.query_id, {})[q.doc_id] = q.relevance
    assert got == qrels and sum(map(len, got.values())) == manifest["qrels"]["test"]["judgements"]
    # topic set test.long: its own wording, scored on the test qrels
    long = ir_datasets.load("legalir/acord/test/long")
    wording = trec.read_topics(coll / "topics" / "test.long.jsonl")
    assert {q.query_id: q.text for q in long.queries_iter()} == {t.qid: t.text for t in wording.values()}
    assert {q.text for q in long.queries_iter()}.isdisjoint({t.text for t in topics.values()})
    assert list(long.qrels_iter()) == list(ds.qrels_iter())
    # the corpus alone, and training topics with their own qrels
    assert not ir_datasets.load("legalir/acord").has_queries()
    train = ir_datasets.load("legalir/acord/train")
    assert {q.query_id for q in train.queries_iter()} == set(trec.read_topics(coll / "topics" / "train.jsonl"))


def test_pyterrier_irds_provider_and_experiment(env, sample_index):
    pt = requires("pyterrier")
    from pyterrier.measures import nDCG

    import legalir.pt as lpt
    from legalir import scoring as evaluate
    from legalir.search.bm25 import BM25

    ds = pt.get_dataset("irds:legalir/acord/test")
    topics, qrels = ds.get_topics(), ds.get_qrels()
    assert list(topics.columns) == ["qid", "query"] and len(topics) == 4
    assert {"qid", "docno", "label"} <= set(qrels.columns)
    corpus = list(ds.get_corpus_iter(verbose=False))
    assert len(corpus) == 30 and {"docno", "text"} <= set(corpus[0])
    # the sample's index holds the same documents: BM25 scored by PyTerrier equals legalir's own evaluation
    table = pt.Experiment([lpt.bm25(sample_index, k=10)], topics, qrels, [nDCG @ 10])
    own = BM25(sample_index).search(trec.read_topics(env / "acord" / "topics" / "test.jsonl"), 10)
    expected = evaluate.evaluate(trec.read_qrels(env / "acord" / "qrels" / "test.txt"), own, ["ndcg_cut.10"])
    assert table["nDCG@10"][0] == pytest.approx(expected["all"]["ndcg_cut_10"], abs=1e-9)


def test_collection_not_converted_names_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setenv(irds.ENV, str(tmp_path / "nowhere"))
    ds = ir_datasets.load("legalir/acord/test")
    with pytest.raises(irds.NotConvertedError, match=r"make convert-acord.*legalir convert acord --data-dir data "
                                                     r"--out .*nowhere/acord"):
        next(ds.docs_iter())
    with pytest.raises(irds.NotConvertedError, match="make convert-acord"):
        list(ds.queries_iter())
    crumb = ir_datasets.load("legalir/crumb/legal_qa/test")
    with pytest.raises(irds.NotConvertedError, match=r"make collections/crumb/legal_qa/passage/manifest\.json.*"
                                                     r"--option task=legal_qa --option corpus=passage"):
        list(crumb.qrels_iter())
    monkeypatch.delenv(irds.ENV)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(irds.NotConvertedError, match=r"LEGALIR_COLLECTIONS unset, so \./collections"):
        next(ir_datasets.load("legalir/housing/test").docs_iter())
    with pytest.raises(irds.IrdsError, match="no such legalir collection; known: legalir/acord, legalir/barexam"):
        ir_datasets.load("legalir/nope/test")
    with pytest.raises(irds.IrdsError, match="has no topic set 'dev'"):
        ir_datasets.load("legalir/acord/dev")


class Statutes(Dataset):
    """A dataset module written after legalir.irds: partitioned, with metadata fields of every kind."""

    name = "irds_statutes"
    partition_field = "state"
    pipeline = Pipeline(short="statutes", tune=("train",))

    def documents(self):
        yield Document("ak-1", "security deposit returned in 14 days", {"state": "Alaska", "citation": "AK 34.03"})
        yield Document("oh-1", "security deposit returned in 30 days",
                       {"state": "Ohio", "text": "a field named text", "odd-key": 3, "class": True})

    def topic_sets(self):
        return {"train": [Topic("t1", "deposit deadline", {"state": "Ohio"})],
                "test": [Topic("q1", "when is my deposit due", {"state": "Alaska"})]}

    def qrels_sets(self):
        return {"train": [Judgement("t1", "oh-1", 1)], "test": [Judgement("q1", "ak-1", 2)]}


def test_a_new_dataset_module_gets_its_names_without_an_edit(tmp_path, monkeypatch):
    monkeypatch.setitem(base._REGISTRY, Statutes.name, Statutes)
    monkeypatch.setenv(irds.ENV, str(tmp_path))
    assert "legalir/statutes/test" in irds.dataset_names()
    collections.write(Statutes("/nonexistent"), tmp_path / Statutes.name, quiet=True)
    ds = ir_datasets.load("legalir/statutes/test")  # resolved on first use: registered after the import
    assert ds.docs_cls()._fields == ("doc_id", "text", "state", "citation", "meta_text", "odd_key", "meta_class")
    docs = {d.doc_id: d for d in ds.docs_iter()}
    assert docs["ak-1"].state == "Alaska" and docs["ak-1"].citation == "AK 34.03" and docs["ak-1"].odd_key is None
    assert docs["oh-1"].meta_text == "a field named text" and docs["oh-1"].odd_key == 3 and docs["oh-1"].meta_class
    assert [q.query_id for q in ds.queries_iter()] == ["q1"] and list(ds.qrels_iter())[0].relevance == 2
    assert "legalir/statutes/train" in irds.register() and irds.register() == []
    assert [q.query_id for q in ir_datasets.load("legalir/statutes/train").queries_iter()] == ["t1"]
