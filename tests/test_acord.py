"""ACORD: the loader on the real release, and on hand-made files in its exact layout."""
from __future__ import annotations

import shutil

import pytest

from legalir import collections, datasets, trec
from legalir.datasets.acord import Acord, slug
from legalir.datasets.dataset import DatasetError
from legalir.trec import FormatError


def test_real_release_counts(acord_dir):
    ds = Acord(acord_dir)
    assert sum(1 for _ in ds.documents()) == 3931
    sets = ds.topic_sets()
    assert {k: len(v) for k, v in sets.items() if "." not in k} == {"train": 51, "valid": 6, "test": 57}
    # every query has its medium and long wording once the 5 near-miss spellings are matched
    formats, unmatched = ds.query_formats()
    assert unmatched == [] and len(formats) == 114
    assert len(sets["test.long"]) == 57
    qrels = ds.qrels_sets()
    assert {k: len(v) for k, v in qrels.items()} == {"train": 58529, "valid": 6142, "test": 61988}
    # CSV quoting: `"""as is"" clause with carveouts"` is the query `"as is" clause with carveouts`
    carve = [j for j in qrels["train"] if j.qid == slug('"as is" clause with carveouts')]
    assert len(carve) > 0
    assert {j.relevance for js in qrels.values() for j in js} == {0, 1, 2, 3, 4}


def test_loose_matching_of_query_wordings(acord_dir):
    formats, _ = Acord(acord_dir).query_formats()
    qid = slug("indemnification clauses that include hold harmless")
    assert qid in formats and formats[qid]["medium"]


@pytest.fixture
def acord_copy(tmp_path):
    root = tmp_path / "acord"
    shutil.copytree(datasets.sample.PACKAGED, root)
    return root


def test_sample_layout_reads_like_acord(acord_copy, tmp_path):
    m = collections.write(Acord(acord_copy), tmp_path / "coll", quiet=True)
    assert m["documents"]["written"] == 30
    assert m["topics"]["test"] == 4 and m["topics"]["test.medium"] == 4
    assert m["qrels"]["test"]["judgements"] == 19
    topics = trec.read_topics(tmp_path / "coll" / "topics" / "train.long.jsonl")
    assert topics["new-york-governing-law"].text.startswith("A clause stating")
    assert topics["new-york-governing-law"].fields["query_id"] == "New York governing law"


def test_bad_qrels_header_names_file_and_line(acord_copy):
    p = acord_copy / "qrels" / "test.tsv"
    p.write_text("qid\tdocid\trel\n" + p.read_text().split("\n", 1)[1])
    with pytest.raises(DatasetError, match=r"test\.tsv:1: expected header"):
        Acord(acord_copy).qrels_sets()


def test_bad_qrels_score_names_file_and_line(acord_copy):
    p = acord_copy / "qrels" / "valid.tsv"
    lines = p.read_text().splitlines()
    lines[2] = lines[2].rsplit("\t", 1)[0] + "\tthree"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=r"valid\.tsv:3: score 'three'"):
        Acord(acord_copy).qrels_sets()


def test_unknown_query_in_qrels_is_an_error(acord_copy):
    p = acord_copy / "qrels" / "test.tsv"
    p.write_text(p.read_text() + "no such query\tgl-ny\t1\n")
    with pytest.raises(DatasetError, match="'no such query' is not in queries.jsonl"):
        Acord(acord_copy).qrels_sets()


def test_missing_files_say_what_to_place_where(tmp_path):
    """A partial copy under --data-dir is an error naming what is missing (never silently replaced by
    the embedded release, which is read only when the folder holds no ACORD file at all)."""
    root = tmp_path / "acord"
    root.mkdir()
    (root / "queries.jsonl").write_text("")
    with pytest.raises(DatasetError, match="missing published file.*corpus.jsonl.*legalir download acord"):
        list(Acord(root).documents())


def test_no_copy_under_data_dir_reads_the_embedded_release(tmp_path):
    from legalir.datasets.acord import EMBEDDED

    ds = datasets.get("acord", tmp_path)  # no tmp_path/acord at all
    assert ds.root == EMBEDDED
    assert sum(1 for _ in ds.documents()) == 3931
    assert datasets.get("sample", tmp_path).root == datasets.sample.PACKAGED  # the sample keeps its own


def test_null_document_id_is_a_located_error(acord_copy):
    p = acord_copy / "corpus.jsonl"
    p.write_text(p.read_text() + '{"_id": null, "text": "a clause"}\n')
    with pytest.raises(DatasetError, match=r"corpus\.jsonl:31: '_id' must be a non-empty string or number, found None"):
        list(Acord(acord_copy).documents())


def test_bad_json_line_names_file_and_line(acord_copy):
    p = acord_copy / "corpus.jsonl"
    p.write_text(p.read_text() + "{not json\n")
    with pytest.raises(FormatError, match=r"corpus\.jsonl:31: invalid JSON"):
        list(Acord(acord_copy).documents())
