"""Conversion to collections: counts checked, problems reported, nothing silently dropped."""
from __future__ import annotations

import json

import pytest

from legalir import collections, trec
from legalir.datasets.base import Dataset, Document, Judgement
from legalir.trec import Topic


class Messy(Dataset):
    name = "messy"

    def documents(self):
        yield Document("a", "first clause", {"category": "x"})
        yield Document("b", "second clause")
        yield Document("a", "duplicate of a")
        yield Document("c", "   ")
        yield Document("d", "fourth\tclause\nwith breaks")

    def topic_sets(self):
        return {"test": [Topic("q1", "clause\twith tab", {"category": "x"})]}

    def qrels_sets(self):
        return {"test": [Judgement("q1", "a", 2), Judgement("q1", "zz", 1), Judgement("q1", "b", 0)]}


def test_counts_duplicates_empty_and_dangling_qrels_are_reported(tmp_path, capsys):
    m = collections.write(Messy(tmp_path), tmp_path / "c")
    err = capsys.readouterr().err
    d = m["documents"]
    assert (d["read"], d["written"], d["duplicate_ids"], d["empty_text"]) == (5, 3, 1, 1)
    assert d["duplicate_ids_first"] == ["a"] and d["empty_text_first"] == ["c"]
    assert m["qrels_missing_documents"] == {"test": ["zz"]}
    assert "1 duplicate document id(s)" in err and "empty text" in err and "missing from the corpus" in err
    lines = (tmp_path / "c" / "corpus" / "docs.jsonl").read_text().splitlines()
    recs = [json.loads(x) for x in lines]
    assert [r["id"] for r in recs] == ["a", "b", "d"]
    # metadata is also written as filter tokens (legalir.filters)
    assert recs[0] == {"id": "a", "contents": "first clause", "category": "x", "filters": "category_x"}
    # qrels keep the dangling judgement (a gold that can never be retrieved still counts)
    assert trec.read_qrels(tmp_path / "c" / "qrels" / "test.txt") == {"q1": {"a": 2, "b": 0, "zz": 1}}
    assert (tmp_path / "c" / "topics" / "test.tsv").read_text() == "q1\tclause with tab\n"
    assert trec.read_topics(tmp_path / "c" / "topics" / "test.jsonl")["q1"].fields == {"category": "x"}


def test_strict_mode_fails_and_leaves_nothing(tmp_path):
    with pytest.raises(collections.CollectionError, match="duplicate"):
        collections.write(Messy(tmp_path), tmp_path / "c", quiet=True, strict=True)
    assert not (tmp_path / "c").exists()
    assert list(tmp_path.iterdir()) == []


def test_partition_keys_are_case_insensitive():
    assert collections.partition_key("New York") == collections.partition_key("new york") == "new_york"
    assert collections.partition_key(" DC ") == "dc"
    with pytest.raises(collections.CollectionError):
        collections.partition_key("--")


def test_unknown_topic_set_lists_known_ones(sample_collection):
    with pytest.raises(collections.CollectionError, match="known: .*test"):
        collections.topics_path(sample_collection, "dev")
    assert collections.qrels_path(sample_collection, "test.long").name == "test.txt"
