"""CRUMB: the Hub layout, topics/qrels per task, the whole BM25 -> MaxP -> scores pipeline, JSONL runs, errors."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from legalir import collections, datasets, trec
from legalir.datasets.crumb import Crumb
from legalir.datasets.dataset import DatasetError
from legalir.trec import runformats

FIX = Path(__file__).parent / "fixtures"
CRUMB = FIX / "crumb"
TASKS = ("legal_qa", "set_operation_entity_retrieval", "paper_retrieval")


@pytest.fixture(scope="session")
def crumb_collections(tmp_path_factory):
    root = tmp_path_factory.mktemp("crumb")
    out = {}
    for task in TASKS:
        out[task] = root / task / "passage"
        collections.write(datasets.get("crumb", FIX, task=task), out[task], quiet=True)
    return out


@pytest.fixture(scope="session")
def crumb_runs(crumb_collections, tmp_path_factory):
    """The make run-crumb pipeline through the CLI: index, 2,000 passages per query, maxp --auto."""
    from legalir.cli import main

    root = tmp_path_factory.mktemp("crumb-runs")
    runs = {}
    for task, coll in crumb_collections.items():
        idx, passages, docs = root / task / "bm25", root / task / "bm25.passages.trec", root / task / "bm25.trec"
        for args in (["index", str(coll), str(idx), "--threads", "1"],
                     ["search", str(idx), str(coll / "topics" / "test.jsonl"), str(passages), "-k", "2000"],
                     ["maxp", str(passages), str(docs), "--auto", "--collection", str(coll), "--tag", "bm25"]):
            r = CliRunner().invoke(main, args)
            assert r.exit_code == 0, r.output
        runs[task] = (passages, docs)
    return runs


def test_fixture_is_readable_with_datasets_load_dataset(tmp_path):
    """The fixture is in the Hub layout: datasets.load_dataset(folder, config, split=task) reads it offline,
    and the loader's own streaming reader sees the same rows."""
    import datasets as hf

    ds = Crumb(CRUMB, task="legal_qa")
    for config, key in (("evaluation_queries", "query_id"), ("validation_queries", "query_id"),
                        ("passage_corpus", "document_id"), ("full_document_corpus", "document_id")):
        loaded = hf.load_dataset(str(CRUMB), config, split="legal_qa", cache_dir=str(tmp_path))
        assert [r[key] for r in loaded] == [r[key] for _, r in ds.rows(config)]
    loaded = hf.load_dataset(str(CRUMB), "evaluation_queries", split="paper_retrieval", cache_dir=str(tmp_path))
    assert loaded.features["passage_qrels"].feature["label"].dtype == "float32"  # as published
    assert json.loads(loaded[0]["metadata"]) == {}


def test_topics_and_qrels_per_task(crumb_collections):
    legal = crumb_collections["legal_qa"]
    topics = trec.read_topics(legal / "topics" / "test.jsonl")
    assert list(topics) == ["lqa-1", "lqa-2", "lqa-3"]
    t = topics["lqa-1"]
    assert t.fields["instruction"].startswith("Given a housing law question")
    assert t.fields["use_max_p"] is False and t.fields["metadata"] == {"state": "California"}
    assert list(trec.read_topics(legal / "topics" / "valid.jsonl")) == ["lqa-v1"]
    assert sorted(p.stem for p in (legal / "qrels").glob("*.txt")) == [
        "test", "test.full_document", "valid", "valid.full_document"]
    assert trec.read_qrels(legal / "qrels" / "test.txt")["lqa-1"] == {"ca-civ-1950.5:1": 1, "ca-civ-1950.5:0": 0}
    docs = {d["id"]: d for d in collections.iter_documents(legal)}
    assert docs["ca-civ-1950.5:1"]["parent_id"] == "ca-civ-1950.5"
    assert json.loads(docs["ca-civ-1950.5:1"]["metadata"]) == {"state": "California"}

    # MaxP task: qrels judge whole documents; ids with spaces are percent-encoded for TREC files
    setops = crumb_collections["set_operation_entity_retrieval"]
    assert sorted(p.stem for p in (setops / "qrels").glob("*.txt")) == ["test", "valid"]
    assert trec.read_qrels(setops / "qrels" / "test.txt")["quest-1"] == {
        "Star%20Wars:%20A%20New%20Hope": 1, "Alien%20(film)": 1}
    assert trec.read_topics(setops / "topics" / "test.jsonl")["quest-1"].fields["use_max_p"] is True

    # paper_retrieval: graded and binary qrels, labels cast to int as CRUMB's evaluator does (1.5 -> 1, 0.5 -> 0)
    paper = crumb_collections["paper_retrieval"]
    assert trec.read_qrels(paper / "qrels" / "test.txt")["doris-q1"] == {
        "doris-101": 2, "doris-102": 1, "doris-103": 0, "doris-104": 0}
    assert trec.read_qrels(paper / "qrels" / "test.binary.txt")["doris-q1"] == {
        "doris-101": 1, "doris-102": 0, "doris-103": 0, "doris-104": 0}
    assert "parent_id" not in next(iter(collections.iter_documents(paper)))  # one collection: no parents


def test_full_document_corpus():
    ds = datasets.get("crumb", FIX, task="legal_qa", corpus="full_document")
    assert [d.id for d in ds.documents()] == ["ca-civ-1950.5", "tx-prop-92.0081", "ny-rpl-235-b", "ak-34.03.260"]
    qrels = ds.qrels_sets()
    assert sorted(qrels) == ["test", "valid"]
    assert {(j.qid, j.docid, j.relevance) for j in qrels["test"]} == {
        ("lqa-1", "ca-civ-1950.5", 1), ("lqa-2", "tx-prop-92.0081", 1), ("lqa-3", "ny-rpl-235-b", 1)}


def test_pipeline_end_to_end(crumb_runs, crumb_collections):
    from legalir.report import score_run

    # legal_qa: passages scored directly; each question's statute passage comes first
    passages, docs = crumb_runs["legal_qa"]
    assert trec.read_run(docs) == trec.read_run(passages)  # no MaxP for this task
    run = trec.read_run(docs)
    assert {q: max(d, key=d.get) for q, d in run.items()} == {
        "lqa-1": "ca-civ-1950.5:1", "lqa-2": "tx-prop-92.0081:1", "lqa-3": "ny-rpl-235-b:0"}
    result = score_run(Crumb, crumb_collections["legal_qa"] / "qrels" / "test.txt", docs)
    assert result["all"]["ndcg_cut_10"] == pytest.approx(1.0) and result["all"]["recall_1000"] == pytest.approx(1.0)

    # set operations: MaxP; documents (not passages) scored against full-document qrels
    passages, docs = crumb_runs["set_operation_entity_retrieval"]
    p_run, d_run = trec.read_run(passages), trec.read_run(docs)
    titles = {"Star%20Wars:%20A%20New%20Hope", "Alien%20(film)", "Blade%20Runner", "The%20Thing%20(1982%20film)"}
    assert all(set(ranked) == titles for ranked in d_run.values())  # whole titles, ':' inside kept
    for qid, ranked in d_run.items():
        assert set(ranked) == {p.rsplit(":", 1)[0] for p in p_run[qid]}
        for doc, score in ranked.items():
            assert score == max(s for p, s in p_run[qid].items() if p.rsplit(":", 1)[0] == doc)
    # nDCG@10 by hand from the ranking MaxP produced (gains 1 for relevant, 0 otherwise)
    qrels = trec.read_qrels(crumb_collections["set_operation_entity_retrieval"] / "qrels" / "test.txt")
    import math

    def ndcg10(q):
        ranked = [d for d, _ in trec.ranking(d_run[q])][:10]
        dcg = sum(qrels[q].get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked))
        ideal = sorted(qrels[q].values(), reverse=True)[:10]
        return dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))

    result = score_run(Crumb, crumb_collections["set_operation_entity_retrieval"] / "qrels" / "test.txt", docs)
    assert result["all"]["ndcg_cut_10"] == pytest.approx((ndcg10("quest-1") + ndcg10("quest-2")) / 2, abs=1e-4)
    assert result["all"]["recall_100"] == pytest.approx(1.0)


def test_recall_on_binary_qrels_hand_computed(crumb_collections, tmp_path):
    """paper_retrieval: nDCG@10 on graded qrels, Recall@k on the binary ones (CRUMB's protocol)."""
    from legalir.report import score_run

    paper = crumb_collections["paper_retrieval"]
    run = tmp_path / "paper.jsonl"  # a CRUMB JSONL run; scoring reads it like a TREC run
    run.write_text(
        json.dumps({"query": {"id": "doris-q1"}, "items": [{"id": "doris-103", "score": 3.0},
                                                           {"id": "doris-102", "score": 2.0}]}) + "\n"
        + json.dumps({"query": {"id": "doris-q2"}, "items": [{"id": "doris-104"}, {"id": "doris-103"}],
                      "item_scores": [2.0, 1.0]}) + "\n")
    trec_run = tmp_path / "paper.trec"
    runformats.convert_run(run, trec_run, "trec")
    graded = score_run(Crumb, paper / "qrels" / "test.txt", trec_run)["all"]
    binary = score_run(Crumb, paper / "qrels" / "test.binary.txt", trec_run)["all"]
    # q1 relevant (label >= 1 after int cast): 101 (2), 102 (1.5 -> 1); binary: 101 only
    # q2 relevant: 103 (2), 101 (1); binary: 103, 101
    assert graded["recall_100"] == pytest.approx((1 / 2 + 1 / 2) / 2)
    assert binary["recall_100"] == pytest.approx((0 / 1 + 1 / 2) / 2)
    # nDCG@10, linear gains: q1 [103:0, 102:1] / ideal [2, 1, 0, 0]; q2 [104:-, 103:2] / ideal [2, 1]
    idcg = 2 + 1 / 1.5849625007211563
    assert graded["ndcg_cut_10"] == pytest.approx(((1 / 1.5849625007211563) / idcg + (2 / 1.5849625007211563) / idcg)
                                                  / 2, abs=1e-4)


def test_crumb_jsonl_runs(tmp_path):
    run = {"q 1": {"Star Wars: A New Hope": 4.5, "d%2": 1.25, "b": 1.25}, "q2": {"x": -0.5}}
    encoded = {runformats.trec_id(q): {runformats.trec_id(d): s for d, s in docs.items()} for q, docs in run.items()}
    assert "Star%20Wars:%20A%20New%20Hope" in encoded["q%201"] and "d%252" in encoded["q%201"]
    assert {runformats.original_id(x) for x in encoded["q%201"]} == set(run["q 1"])
    path = tmp_path / "run.jsonl"
    runformats.write_crumb_run(path, encoded)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0] == {"query": {"id": "q 1"},
                        "items": [{"id": "Star Wars: A New Hope", "score": 4.5}, {"id": "d%2", "score": 1.25},
                                  {"id": "b", "score": 1.25}],
                        "item_scores": [4.5, 1.25, 1.25]}  # ties by id descending, as trec_eval ranks them
    assert runformats.sniff(path) == "crumb"
    assert runformats.read_any_run(path) == encoded  # ids made TREC-safe again
    # round trip through TREC and back: identical bytes
    runformats.convert_run(path, tmp_path / "run.trec", "trec")
    assert runformats.sniff(tmp_path / "run.trec") == "trec"
    runformats.convert_run(tmp_path / "run.trec", tmp_path / "again.jsonl", "crumb")
    assert (tmp_path / "again.jsonl").read_bytes() == path.read_bytes()


@pytest.mark.parametrize("line, message", [
    ('{"query": {"id": "q"}, "items": [{"id": "a"}]}', "item 0 ('a') has no score"),
    ('{"query": {}, "items": []}', "missing query id"),
    ('{"query": {"id": "q"}, "items": [{"id": "a", "score": 1}], "item_scores": [2]}', "disagrees"),
    ('{"query": {"id": "q"}, "items": [{"id": "a", "score": "x"}]}', "is not a number"),
    ('{"query": {"id": "q"}, "items": [{"id": "a", "score": 1}, {"id": "a", "score": 2}]}', "duplicate item"),
    ('{"query": {"id": "q"}, "items": [', "invalid JSON"),
])
def test_crumb_run_errors_name_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"query": {"id": "ok"}, "items": [{"id": "a", "score": 1}]}\n' + line + "\n")
    import re

    with pytest.raises(trec.FormatError, match=re.escape(message)) as err:
        runformats.read_crumb_run(path)
    assert str(err.value).startswith(f"{path}:2:")


def _copy(tmp_path) -> Path:
    root = tmp_path / "crumb"
    shutil.copytree(CRUMB, root)
    return root


def test_clear_errors(tmp_path):
    from legalir.cli import main

    with pytest.raises(DatasetError, match="choose a task"):
        list(Crumb(CRUMB).documents())
    r = CliRunner().invoke(main, ["convert", "crumb", "--data-dir", str(FIX), "--option", "task=legal",
                                  "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "unknown task 'legal'" in r.output and "legal_qa" in r.output
    with pytest.raises(DatasetError, match="config 'passage_corpus' has no split 'clinical_trial'; splits: legal_qa"):
        list(Crumb(CRUMB, task="clinical_trial").documents())
    with pytest.raises(DatasetError, match="no snapshot of the Hub dataset jfkback/crumb"):
        list(Crumb(tmp_path / "nowhere", task="legal_qa").documents())

    root = _copy(tmp_path)  # a README without the validation config: a missing config is named
    readme = (root / "README.md").read_text()
    (root / "README.md").write_text(readme.replace("config_name: passage_corpus\n    data_files",
                                                   "config_name: passages\n    data_files"))
    with pytest.raises(DatasetError, match=r"no config 'passage_corpus' .*found: evaluation_queries"):
        list(Crumb(root, task="legal_qa").documents())

    root = _copy(tmp_path / "b")  # a missing column and bad metadata are named with file and line
    corpus = root / "legal_qa" / "passage_corpus.jsonl"
    rows = [json.loads(x) for x in corpus.read_text().splitlines()]
    del rows[2]["parent_id"]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DatasetError, match=rf"{corpus}:3: missing column\(s\) parent_id"):
        list(Crumb(root, task="legal_qa").documents())
    rows[2]["parent_id"] = None
    rows[1]["metadata"] = "{state: Texas"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DatasetError, match=rf"{corpus}:2: metadata is not valid JSON"):
        list(Crumb(root, task="legal_qa").documents())
    queries = root / "legal_qa" / "eval" / "query_labels.jsonl"
    q = json.loads(queries.read_text().splitlines()[0])
    q["passage_qrels"] = [{"id": "x"}]
    queries.write_text(json.dumps(q) + "\n")
    with pytest.raises(DatasetError, match=rf"{queries}:1: passage_qrels\[0\] needs 'id' and 'label'"):
        Crumb(root, task="legal_qa").qrels_sets()


def test_hub_parquet_conversion_layout(tmp_path, crumb_collections):
    """The Hub's parquet conversion (<config>/<task>/0000.parquet, no YAML configs) converts to the same collection."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = Crumb(CRUMB, task="legal_qa")
    root = tmp_path / "crumb"
    for config in ("evaluation_queries", "validation_queries", "passage_corpus", "full_document_corpus"):
        (root / config / "legal_qa").mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist([r for _, r in src.rows(config)]),
                       root / config / "legal_qa" / "0000.parquet")
    out = tmp_path / "coll"
    collections.write(Crumb(root, task="legal_qa"), out, quiet=True)
    want = crumb_collections["legal_qa"]
    for rel in ("corpus/docs.jsonl", "topics/test.jsonl", "topics/valid.jsonl", "qrels/test.txt",
                "qrels/test.full_document.txt"):
        assert (out / rel).read_bytes() == (want / rel).read_bytes(), rel
    with pytest.raises(DatasetError, match="no files for split 'tip_of_the_tongue'; found: legal_qa"):
        list(Crumb(root, task="tip_of_the_tongue").documents())
