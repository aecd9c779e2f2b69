"""Bar Exam QA: published CSV/TSV -> collection over the union passage pool -> BM25 -> scores; download offline.

The fixture (tests/fixtures/barexam_qa, written by its make_fixture.py)
follows the published layout: 16-column question CSVs with an empty prompt,
a quoted comma and a quoted newline; passage TSVs with a quoted newline and
doubled quotes.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from legalir import collections, datasets, trec
from legalir.cli import main
from legalir.datasets.dataset import DatasetError

FIXTURE = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def barexam_collection(tmp_path_factory):
    out = tmp_path_factory.mktemp("barexam") / "collection"
    collections.write(datasets.get("barexam_qa", FIXTURE), out, quiet=True)
    return out


@pytest.fixture(scope="session")
def barexam_run(barexam_collection):
    from legalir.indexing import sparse
    from legalir.search.bm25 import BM25

    index = barexam_collection.parent / "bm25"
    sparse.build(barexam_collection, index, threads=1, quiet=True)
    bm25 = BM25(index)
    run = bm25.search(trec.read_topics(barexam_collection / "topics/test.jsonl"), 1000)
    bm25.close()
    return run


def copy_fixture(tmp_path) -> Path:
    shutil.copytree(FIXTURE / "barexam_qa", tmp_path / "barexam_qa")
    return tmp_path / "barexam_qa" / "data"


# ------------------------------------------------------------ conversion
def test_union_pool_splits_and_query_text(barexam_collection):
    m = collections.read_manifest(barexam_collection)
    assert m["documents"]["read"] == m["documents"]["written"] == 6 + 2 + 5  # test + validation + train passages
    assert m["topics"] == {"train": 2, "validation": 1, "test": 4}
    assert m["qrels_missing_documents"] == {}
    topics = trec.read_topics(barexam_collection / "topics/test.jsonl")
    # prompt (fact pattern, here with a quoted comma, quotes and a newline) then the question
    assert topics["mbe_47"].text == ('Seller agreed in writing to sell Blackacre to Buyer for $50,000. Before closing, '
                                     'Seller told Buyer, "I will not go through with it."\nBuyer had already arranged '
                                     'financing.\nIs Seller\'s statement an anticipatory repudiation of the contract?')
    # empty prompt (NaN in pandas): the question alone
    assert topics["mbe_48"].text.startswith("Is voluntary intoxication a defense")
    assert topics["mbe_46"].fields == {"split": "test", "dataset": "mbe", "source": "MBE-1972-78-part2",
                                       "subject": "", "example_id": "0", "prompt_id": "pmbe_46",
                                       "question_number": "46", "answer": "A"}
    assert trec.read_qrels(barexam_collection / "qrels/test.txt") == {
        "mbe_46": {"mbe_2606": 1}, "mbe_47": {"caselaw_1001": 1}, "mbe_48": {"wex_17": 1}, "mbe_49": {"caselaw_1002": 1}}
    docs = {d["id"]: d for d in collections.iter_documents(barexam_collection)}
    assert docs["caselaw_1001"]["contents"].startswith('An anticipatory repudiation is a definite and unequivocal '
                                                       'statement by a party that he "will not" perform\nwhen')
    assert docs["wex_17"]["source"] == "wex"


def test_pool_option_restricts_corpus_and_topic_sets(tmp_path, capsys):
    m = collections.write(datasets.get("barexam_qa", FIXTURE, pool="test"), tmp_path / "c", quiet=True)
    assert m["documents"]["written"] == 6 and m["topics"] == {"test": 4}
    assert "1 of the 3 published passage files" in capsys.readouterr().err
    with pytest.raises(DatasetError, match="option pool='dev'"):
        datasets.get("barexam_qa", FIXTURE, pool="dev").pool_splits()


# ------------------------------------------------------------ end to end
def test_bm25_scores_equal_hand_computed_values(barexam_collection, barexam_run):
    from legalir.scoring import evaluate, parse_measures

    qrels = trec.read_qrels(barexam_collection / "qrels/test.txt")
    ranks = {q: [d for d, _ in trec.ranking(barexam_run[q])].index(next(iter(golds))) + 1
             for q, golds in qrels.items()}
    # mbe_49's gold is second behind a hearsay passage of train.tsv: the union pool matters
    assert ranks == {"mbe_46": 1, "mbe_47": 1, "mbe_48": 1, "mbe_49": 2}
    assert trec.ranking(barexam_run["mbe_49"])[0][0] == "caselaw_2003"
    # By hand: R@1 = 3/4, R@10 = R@100 = R@1000 = 4/4, MRR@10 = (1 + 1 + 1 + 1/2) / 4
    cls = type(datasets.get("barexam_qa", FIXTURE))
    scores = evaluate(qrels, barexam_run, parse_measures(list(cls.measures)))["all"]
    assert scores == pytest.approx({"recall_1": 0.75, "recall_10": 1.0, "recall_100": 1.0, "recall_1000": 1.0,
                                    "recip_rank_cut_10": 0.875}, abs=1e-9)
    assert {k for r in cls.references for k in r.values} <= set(scores)


# ------------------------------------------------------------ bad input
def test_dangling_gold_names_the_csv_line(tmp_path):
    data = copy_fixture(tmp_path)
    csv_path = data / "qa/test.csv"
    # mbe_48 starts on line 6: mbe_47's prompt and gold passage each hold a quoted newline
    csv_path.write_text(csv_path.read_text().replace(",wex_17\n", ",wex_9999\n"))
    with pytest.raises(DatasetError, match=r"qa/test.csv:6: gold_idx 'wex_9999' of question 'mbe_48' is not in the "
                                           r"passage pool .*dangling=warn"):
        collections.write(datasets.get("barexam_qa", tmp_path), tmp_path / "c", quiet=True)
    assert not (tmp_path / "c").exists()


def test_missing_columns_and_broken_rows_name_file_and_line(tmp_path):
    data = copy_fixture(tmp_path)
    qa = data / "qa/test.csv"
    qa.write_text(qa.read_text().replace(",gold_idx\n", ",gold\n", 1))
    with pytest.raises(DatasetError, match=r"qa/test.csv:1: missing column\(s\) gold_idx"):
        datasets.get("barexam_qa", tmp_path).topic_sets()
    shutil.copy(FIXTURE / "barexam_qa/data/qa/test.csv", qa)
    tsv = data / "passages/validation.tsv"
    tsv.write_text(tsv.read_text().replace("owes no duty", "owes\tno duty"))
    result = CliRunner().invoke(main, ["convert", "barexam_qa", "--data-dir", str(tmp_path), "--quiet",
                                       "--out", str(tmp_path / "c")])
    assert result.exit_code == 2
    assert "passages/validation.tsv:2: expected 4 fields as in the header, found 5" in result.output


def test_huge_fields_and_zipped_files_are_read(tmp_path):
    import zipfile

    data = copy_fixture(tmp_path)
    tsv = data / "passages/train.tsv"
    big = "adverse possession " * 20_000  # 380 KB in one field, over csv's default 128 KiB limit
    tsv.write_text(tsv.read_text() + f"huge_1\t9\tcaselaw\t{big}\n")
    with zipfile.ZipFile(str(tsv) + ".zip", "w") as zf:  # the published .tsv.zip form, read in place
        zf.write(tsv, "train.tsv")
    tsv.unlink()
    docs = {d.id: d for d in datasets.get("barexam_qa", tmp_path).documents()}
    assert len(docs["huge_1"].contents) == len(big) and "caselaw_2003" in docs


def test_download_offline_fails_at_once_saying_what_to_place_where(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = CliRunner().invoke(main, ["download", "barexam_qa", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    msg = result.output
    assert "offline (HF_HUB_OFFLINE is set)" in msg and "reglab/barexam_qa" in msg
    assert f"{tmp_path}/barexam_qa/" in msg and "data/qa/test.csv" in msg and "data/passages/test.tsv" in msg
    # already present: nothing to fetch, no network needed
    result = CliRunner().invoke(main, ["download", "barexam_qa", "--data-dir", str(FIXTURE)])
    assert result.exit_code == 0 and "already under" in result.output
