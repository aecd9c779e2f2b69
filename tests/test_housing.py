"""Housing Statute QA: published zips -> one corpus and one Lucene index per jurisdiction -> BM25 -> scores.

The fixture (tests/fixtures/housing_qa, written by its make_fixture.py) has
38 statutes in three jurisdictions, "new york" among them, and 13 questions.
"""
from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from legalir import collections, datasets, trec
from legalir.cli import main
from legalir.datasets.dataset import DatasetError
from legalir.legal import filters
from legalir.trec import Topic

FIXTURE = Path(__file__).resolve().parent / "fixtures"
MEASURES = ["success.1,10,100,1000", "recall_all.10,100,1000", "recip_rank_cut.10"]


@pytest.fixture(scope="session")
def housing_collection(tmp_path_factory):
    out = tmp_path_factory.mktemp("housing") / "collection"
    collections.write(datasets.get("housing_qa", FIXTURE), out, quiet=True)
    return out


@pytest.fixture(scope="session")
def housing_index(housing_collection):
    from legalir.indexing import sparse

    out = housing_collection.parent / "bm25"
    sparse.build(housing_collection, out, threads=1, quiet=True)
    return out


@pytest.fixture(scope="session")
def housing_run(housing_collection, housing_index):
    run = housing_collection.parent / "bm25.trec"
    result = CliRunner().invoke(main, ["search", str(housing_index), str(housing_collection / "topics/test.jsonl"),
                                       str(run), "-k", "1000", "--threads", "1"])
    assert result.exit_code == 0, result.output
    return run


def copy_fixture(tmp_path) -> Path:
    shutil.copytree(FIXTURE / "housing_qa", tmp_path / "housing_qa")
    return tmp_path / "housing_qa" / "data"


def rewrite_member(zip_path: Path, member: str, edit) -> None:
    with zipfile.ZipFile(zip_path) as zf:
        text = zf.read(member).decode()
    with zipfile.ZipFile(zip_path, "w") as zf:
        zf.writestr(member, edit(text))


def edit_questions(data: Path, edit) -> None:
    rewrite_member(data / "questions.json.zip", "questions.json",
                   lambda t: json.dumps(edit(json.loads(t))))


# ------------------------------------------------------------ conversion
def test_one_corpus_per_jurisdiction_case_insensitive(housing_collection):
    m = collections.read_manifest(housing_collection)
    assert m["partition_field"] == "state"
    assert m["partitions"] == {"alaska": 12, "new_york": 13, "texas": 13}
    assert m["documents"]["read"] == m["documents"]["written"] == 38
    assert m["qrels"]["test"] == {"topics": 13, "judgements": 16, "relevant": 16}
    assert m["options"] == {"text": "citation+path+text"}
    topics = trec.read_topics(housing_collection / "topics/test.jsonl")
    assert topics["4"].fields["state"] == "New York"  # capitalised in questions.json, lower case in statutes.tsv
    ny = [json.loads(x) for x in (housing_collection / "corpus/new_york/docs.jsonl").read_text().splitlines()]
    assert {d["state"] for d in ny} == {"new york"}
    doc10 = next(d for d in ny if d["id"] == "10")
    # default indexed text: citation, heading path, statute text
    assert doc10["contents"].splitlines()[0] == "NY Gen Oblig L § 7-108 (2021)"
    assert "Obligations Relating to Property Received as Security" in doc10["contents"]
    assert doc10["contents"].endswith("after the tenant vacates the premises.")
    assert trec.read_qrels(housing_collection / "qrels/test.txt")["6"] == {"22": 1, "25": 1}


def test_text_option_and_its_errors():
    ds = datasets.get("housing_qa", FIXTURE, text="text")
    doc = next(d for d in ds.documents() if d.id == "1")
    assert doc.contents.startswith("A landlord may not demand") and "§" not in doc.contents
    assert doc.fields == {"state": "alaska", "citation": "AK Stat § 34.03.070 (2021)"}
    with pytest.raises(DatasetError, match="option text='heading'"):
        datasets.get("housing_qa", FIXTURE, text="heading")
    with pytest.raises(DatasetError, match="unknown option"):
        datasets.get("housing_qa", FIXTURE, txt="text")


def test_questions_aux_is_loadable_but_not_a_topic_set():
    ds = datasets.get("housing_qa", FIXTURE)
    aux = ds.questions_aux()
    assert [q["question"] for q in aux] == ["Can a landlord charge a pet deposit?",
                                            "Must a landlord provide smoke detectors?"]
    assert list(ds.topic_sets()) == ["test"] and list(ds.qrels_sets()) == ["test"]


# ------------------------------------------------------------ end to end
def test_bm25_scores_equal_hand_computed_values(housing_collection, housing_run):
    from legalir.scoring import evaluate, parse_measures

    run = trec.read_run(housing_run)
    qrels = trec.read_qrels(housing_collection / "qrels/test.txt")
    ranks = {}
    for q, golds in qrels.items():
        order = [d for d, _ in trec.ranking(run[q])]
        ranks[q] = sorted((order.index(g) + 1 if g in order else None for g in golds),
                          key=lambda r: (r is None, r or 0))
    # Where BM25 put each topic's gold statutes (None: not retrieved at all).
    assert ranks == {"0": [1], "1": [1], "2": [1, 7], "3": [1], "4": [1], "5": [1], "6": [1, 8], "7": [1],
                     "8": [1], "9": [2], "10": [1, None], "11": [1], "12": [5]}
    # By hand from those ranks, 13 topics:
    #   any gold at rank 1: all but 9 and 12 -> 11/13; any gold in the top 10/100/1000: 13/13
    #   all golds in the top 10/100/1000: all but 10 (statute 34 shares no word with it) -> 12/13
    #   MRR@10: (11 * 1 + 1/2 + 1/5) / 13 = 0.9
    scores = evaluate(qrels, run, parse_measures(MEASURES))["all"]
    expected = {"success_1": 11 / 13, "success_10": 1.0, "success_100": 1.0, "success_1000": 1.0,
                "recall_all_10": 12 / 13, "recall_all_100": 12 / 13, "recall_all_1000": 12 / 13,
                "recip_rank_cut_10": 0.9}
    assert scores == pytest.approx(expected, abs=1e-9)
    cls = type(datasets.get("housing_qa", FIXTURE))
    assert set(expected) == {m for spec in cls.measures for m in [spec.replace(".", "_")]}


def test_a_query_never_retrieves_another_jurisdictions_statute(housing_collection, housing_run):
    state_of = {d["id"]: filters.partition_key(d["state"]) for d in collections.iter_documents(housing_collection)}
    topics = trec.read_topics(housing_collection / "topics/test.jsonl")
    run = trec.read_run(housing_run)
    assert set(run) == set(topics)
    for qid, docs in run.items():
        want = filters.partition_key(topics[qid].fields["state"])
        assert docs and {state_of[d] for d in docs} == {want}, qid
        # and it ranks its whole jurisdiction's matching statutes, nothing more
        assert len(docs) <= collections.read_manifest(housing_collection)["partitions"][want]


def test_unknown_jurisdiction_at_search_time_lists_known_ones(housing_collection, housing_index, tmp_path):
    import legalir
    from legalir.search.arguments import UnknownPartition

    with legalir.Searcher(housing_index) as s, pytest.raises(UnknownPartition,
                                                             match=r"'Guam'.*known: alaska, new_york, texas"):
        s.batch_search({"q": Topic("q", "security deposit", {"state": "Guam"})}, 10)
    topics = tmp_path / "t.jsonl"
    topics.write_text(json.dumps({"qid": "q", "text": "security deposit", "state": "Guam"}) + "\n")
    result = CliRunner().invoke(main, ["search", str(housing_index), str(topics), str(tmp_path / "r.trec")])
    assert result.exit_code == 2 and "known: alaska, new_york, texas" in result.output


# ------------------------------------------------------------ bad input
def test_unknown_jurisdiction_in_questions_is_an_error(tmp_path):
    data = copy_fixture(tmp_path)
    edit_questions(data, lambda qs: [{**q, "state": "Guam"} if q["idx"] == 3 else q for q in qs])
    with pytest.raises(DatasetError, match=r"questions.json.zip!questions.json: question #4 \(idx 3\): no statute "
                                           r"of jurisdiction 'Guam'.*known: alaska, new_york, texas"):
        list(datasets.get("housing_qa", tmp_path).documents())


def test_dangling_and_cross_jurisdiction_golds_are_errors(tmp_path):
    data = copy_fixture(tmp_path)

    def dangling(qs):
        qs[1]["statutes"].append({"statute_idx": 999, "citation": "?", "excerpt": "?"})
        return qs

    edit_questions(data, dangling)
    with pytest.raises(DatasetError, match=r"questions.json: question #2 \(idx 1\): statute_idx 999 is not in .*"
                                           r"statutes.tsv.zip.*dangling=warn"):
        collections.write(datasets.get("housing_qa", tmp_path), tmp_path / "c", quiet=True)
    assert not (tmp_path / "c").exists()  # atomic: nothing half-written

    edit_questions(data, lambda qs: [{**q, "statutes": [{"statute_idx": 10}]} if q["idx"] == 0 else q
                                     for q in json.loads(json.dumps(qs))])
    with pytest.raises(DatasetError, match=r"statute_idx 10 is a statute of 'new_york', not of 'alaska'"):
        list(datasets.get("housing_qa", tmp_path).documents())
    # kept as unretrievable labels on request, and said so
    m = collections.write(datasets.get("housing_qa", tmp_path, dangling="warn"), tmp_path / "c", quiet=True)
    assert trec.read_qrels(tmp_path / "c/qrels/test.txt")["1"] == {"3": 1, "999": 1}
    assert m["qrels_missing_documents"] == {"test": ["999"]}


def test_missing_or_wrong_columns_name_the_file_and_line(tmp_path):
    data = copy_fixture(tmp_path)
    rewrite_member(data / "statutes.tsv.zip", "statutes.tsv", lambda t: t.replace("\tpath\t", "\theading\t", 1))
    with pytest.raises(DatasetError, match=r"statutes.tsv.zip!statutes.tsv:1: missing column\(s\) path"):
        list(datasets.get("housing_qa", tmp_path).documents())
    rewrite_member(data / "statutes.tsv.zip", "statutes.tsv",
                   lambda t: t.replace("\theading\t", "\tpath\t", 1).replace("hot water,", "hot\twater,"))
    with pytest.raises(DatasetError, match=r"statutes.tsv:13: expected 5 fields as in the header, found 6"):
        list(datasets.get("housing_qa", tmp_path).documents())
    edit_questions(data, lambda qs: [{k: v for k, v in q.items() if k != "statutes"} for q in qs])
    with pytest.raises(DatasetError, match=r"questions.json: question #1: missing field\(s\) statutes"):
        datasets.get("housing_qa", tmp_path).questions()


def test_missing_files_say_what_to_place_where(tmp_path, monkeypatch):
    """Missing published files: exit 2 naming the file and the download; the default output's folder
    (./collections), made for the write, is not left behind empty."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LEGALIR_COLLECTIONS", raising=False)
    result = CliRunner().invoke(main, ["convert", "housing_qa", "--data-dir", str(tmp_path), "--quiet"])
    assert result.exit_code == 2
    assert "data/statutes.tsv.zip" in result.output and "legalir download housing_qa" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == []
