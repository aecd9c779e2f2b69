"""SCALR as candidate-pool retrieval: LegalBench's TSV -> five candidates per question -> BM25 / TF-IDF -> accuracy.

The fixture (tests/fixtures/scalr, written by its make_fixture.py) is
LegalBench's layout: data/scalr/train.tsv (header only) and test.tsv with
columns answer, choice_0..choice_4, index, question.
"""
from __future__ import annotations

import io
import math
import re
import shutil
import tarfile
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from legalir import collections, datasets, trec
from legalir.cli import main
from legalir.datasets.dataset import DatasetError
from legalir.search.pool import PoolBM25, PoolTfidf
from legalir.search.runner import SearchError
from legalir.trec import Topic

FIXTURE = Path(__file__).resolve().parent / "fixtures"
MEASURES = ["P.1", "recip_rank", "success.1"]


@pytest.fixture(scope="session")
def scalr_collection(tmp_path_factory):
    out = tmp_path_factory.mktemp("scalr") / "collection"
    collections.write(datasets.get("scalr", FIXTURE), out, quiet=True)
    return out


@pytest.fixture(scope="session")
def scalr_index(scalr_collection):
    from legalir.indexing import sparse

    out = scalr_collection.parent / "bm25"
    sparse.build(scalr_collection, out, threads=1, quiet=True)
    return out


def scores(collection, run):
    from legalir.scoring import evaluate, parse_measures

    return evaluate(trec.read_qrels(collection / "qrels/test.txt"), run, parse_measures(MEASURES))["all"]


def gold_ranks(collection, run):
    qrels = trec.read_qrels(collection / "qrels/test.txt")
    out = {}
    for q, docs in qrels.items():
        gold = next(d for d, r in docs.items() if r > 0)
        out[q] = [d for d, _ in trec.ranking(run[q])].index(gold) + 1
    return out


def test_each_question_is_a_pool_of_five(scalr_collection):
    m = collections.read_manifest(scalr_collection)
    assert m["documents"]["written"] == 25 and m["topics"] == {"test": 5}  # train.tsv is empty, as published
    topics = trec.read_topics(scalr_collection / "topics/test.jsonl")
    assert topics["test-3"].fields["candidates"] == [f"test-3-c{k}" for k in range(5)]
    qrels = trec.read_qrels(scalr_collection / "qrels/test.txt")
    assert qrels["test-3"] == {"test-3-c0": 0, "test-3-c1": 0, "test-3-c2": 0, "test-3-c3": 0, "test-3-c4": 1}
    docs = {d["id"]: d for d in collections.iter_documents(scalr_collection)}
    assert docs["test-0-c3"]["contents"].startswith("holding that a California law requiring classwide arbitration")


def test_bm25_over_the_pool_equals_hand_computed_accuracy(scalr_collection, scalr_index, tmp_path):
    tops = trec.read_topics(scalr_collection / "topics/test.jsonl")
    ranker = PoolBM25(scalr_index)
    run = ranker.search(tops, 5)
    assert all(set(run[q]) == set(t.fields["candidates"]) for q, t in tops.items())  # only its own candidates
    # the same BM25 as a full search of the index, restricted to the pool (the searcher prints 4 decimals)
    from legalir.search.bm25 import BM25

    full = BM25(scalr_index).search({"test-2": tops["test-2"]}, 25)["test-2"]
    assert run["test-2"] == pytest.approx({d: s for d, s in full.items() if d.startswith("test-2-")}, abs=1e-4)
    assert gold_ranks(scalr_collection, run) == {"test-0": 2, "test-1": 2, "test-2": 1, "test-3": 1, "test-4": 1}
    # By hand: accuracy = 3/5; MRR = (1/2 + 1/2 + 1 + 1 + 1) / 5 = 0.8
    assert scores(scalr_collection, run) == pytest.approx({"P_1": 0.6, "recip_rank": 0.8, "success_1": 0.6})
    ranker.close()


def _tfidf_cosines(docs: dict[str, str], queries: list[str], query: str, pool: list[str]) -> dict[str, float]:
    """Textbook TF-IDF (raw counts, idf = ln((1 + n) / (1 + df)) + 1, l2 norm), written out independently."""
    tok = lambda t: re.findall(r"(?u)\b\w\w+\b", t.lower())
    texts = list(docs.values()) + queries
    df = Counter(w for t in texts for w in set(tok(t)))
    idf = {w: math.log((1 + len(texts)) / (1 + c)) + 1 for w, c in df.items()}

    def vec(t):
        v = {w: c * idf[w] for w, c in Counter(tok(t)).items()}
        norm = math.sqrt(sum(x * x for x in v.values()))
        return {w: x / norm for w, x in v.items()}

    q = vec(query)
    return {d: sum(x * q.get(w, 0.0) for w, x in vec(docs[d]).items()) for d in pool}


def test_tfidf_cosine_is_the_textbook_formula_and_scores_by_hand(scalr_collection, tmp_path):
    tops = trec.read_topics(scalr_collection / "topics/test.jsonl")
    ranker = PoolTfidf.from_collection(scalr_collection)
    run = ranker.search(tops, 5)
    expected = _tfidf_cosines(ranker.documents, [t.text for t in tops.values()], tops["test-0"].text,
                              tops["test-0"].fields["candidates"])
    assert run["test-0"] == pytest.approx(expected, rel=1e-9)
    assert gold_ranks(scalr_collection, run) == {"test-0": 4, "test-1": 3, "test-2": 1, "test-3": 1, "test-4": 1}
    # By hand: accuracy = 3/5; MRR = (1/4 + 1/3 + 1 + 1 + 1) / 5
    assert scores(scalr_collection, run) == pytest.approx({"P_1": 0.6, "recip_rank": (1 / 4 + 1 / 3 + 3) / 5,
                                                           "success_1": 0.6})


def test_rank_pool_cli_writes_identical_runs(scalr_collection, scalr_index, tmp_path):
    topics = str(scalr_collection / "topics/test.jsonl")
    for name in ("a", "b"):
        for ranker, extra in (("bm25", ["--index", str(scalr_index)]), ("tfidf", ["--collection", str(scalr_collection)])):
            result = CliRunner().invoke(main, ["rank-pool", topics, str(tmp_path / f"{ranker}.{name}.trec"),
                                               "--ranker", ranker, *extra])
            assert result.exit_code == 0, result.output
    for ranker in ("bm25", "tfidf"):
        a, b = (tmp_path / f"{ranker}.a.trec").read_bytes(), (tmp_path / f"{ranker}.b.trec").read_bytes()
        assert a == b and len(a.splitlines()) == 25 and a.split()[5] == ranker.encode()
    result = CliRunner().invoke(main, ["rank-pool", str(scalr_collection / "topics/test.tsv"),
                                       str(tmp_path / "x.trec"), "--ranker", "tfidf", "--collection",
                                       str(scalr_collection)])
    assert result.exit_code == 2 and "no 'candidates' list" in result.output


def test_pool_rankers_refuse_unknown_candidates(scalr_collection, scalr_index):
    tops = {"q": Topic("q", "arbitration", {"candidates": ["test-0-c0", "nope-c1"]})}
    with pytest.raises(SearchError, match="not in the index: nope-c1"):
        PoolBM25(scalr_index).search(tops, 5)
    with pytest.raises(SearchError, match="not in the collection: nope-c1"):
        PoolTfidf.from_collection(scalr_collection).search(tops, 5)


# ------------------------------------------------------------ other published forms, bad input
def _rows(path: Path) -> list[list[str]]:
    import csv

    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.reader(f, delimiter="\t"))


def test_parquet_and_scalr_release_columns_are_accepted(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    header, *rows = _rows(FIXTURE / "scalr/data/scalr/test.tsv")
    (tmp_path / "scalr" / "scalr").mkdir(parents=True)
    table = pa.table({h: [int(r[i]) if h in ("answer", "index") else r[i] for r in rows] for i, h in enumerate(header)})
    pq.write_table(table, tmp_path / "scalr/scalr/test-00000-of-00001.parquet")
    from_parquet = datasets.get("scalr", tmp_path).questions()["test"]
    from_tsv = datasets.get("scalr", FIXTURE).questions()["test"]
    assert [(q["qid"], q["answer"], q["choices"]) for q in from_parquet] == \
           [(q["qid"], q["answer"], q["choices"]) for q in from_tsv]
    # the SCALR release's own columns: docket_number, correct_choice_index
    shutil.rmtree(tmp_path / "scalr")
    (tmp_path / "scalr").mkdir()
    lines = ["docket_number\tquestion\t" + "\t".join(f"choice_{k}" for k in range(5)) + "\tcorrect_choice_index"]
    lines += [f"10-{n}\t{r[7]}\t" + "\t".join(r[1:6]) + f"\t{r[0]}" for n, r in enumerate(rows)]
    (tmp_path / "scalr/test.tsv").write_text("\n".join(lines) + "\n")
    qs = datasets.get("scalr", tmp_path).questions()["test"]
    assert [q["qid"] for q in qs] == [f"10-{n}" for n in range(5)] and [q["answer"] for q in qs] == [3, 1, 0, 4, 2]
    assert next(iter(datasets.get("scalr", tmp_path).documents())).id == "10-0-c0"


def test_bad_rows_and_columns_name_file_and_line(tmp_path):
    shutil.copytree(FIXTURE / "scalr", tmp_path / "scalr")
    test = tmp_path / "scalr/data/scalr/test.tsv"
    text = test.read_text()
    lines = text.splitlines()
    lines[3] = "7" + lines[3][1:]  # third question: correct choice 7
    test.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=r"scalr/test.tsv:4: correct choice '7' is not a number from 0 to 4"):
        datasets.get("scalr", tmp_path).questions()
    test.write_text(text.replace("answer\t", "label\t", 1))
    with pytest.raises(DatasetError, match=r"test.tsv:1: missing column\(s\) answer \(or correct_choice_index\)"):
        datasets.get("scalr", tmp_path).questions()
    test.unlink()
    result = CliRunner().invoke(main, ["convert", "scalr", "--data-dir", str(tmp_path), "--quiet"])
    assert result.exit_code == 2 and "data/scalr/test.tsv" in result.output and "legalir download scalr" in result.output


def test_download_takes_only_scalr_from_legalbench_archive(tmp_path, monkeypatch):
    from legalir.datasets import download

    archive = tmp_path / "data.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        for name, body in (("data/scalr/test.tsv", b"answer\tquestion\n"), ("data/scalr/train.tsv", b"x\n"),
                           ("data/abercrombie/test.tsv", b"other task\n")):
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tf.addfile(info, io.BytesIO(body))
    written = download.extract_prefix(archive, "data/scalr/", tmp_path / "scalr")
    assert sorted(p.relative_to(tmp_path / "scalr").as_posix() for p in written) == \
           ["data/scalr/test.tsv", "data/scalr/train.tsv"]
    assert not (tmp_path / "scalr/data/abercrombie").exists()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(download.DownloadError, match=r"offline .*nguha/legalbench.*data/scalr/test.tsv"):
        download.fetch("scalr", tmp_path / "empty")
