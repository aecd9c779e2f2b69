"""Conversion to collections: counts checked, problems reported, nothing silently dropped."""
from __future__ import annotations

import json

import pytest
from conftest import marker_without_mtimes

from legalir import collections, trec
from legalir.base import atomic
from legalir.datasets.dataset import Dataset, Document, Judgement
from legalir.errors import LegalirError
from legalir.legal import filters
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
    # metadata is also written as filter tokens (legalir.legal.filters)
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
    assert filters.partition_key("New York") == filters.partition_key("new york") == "new_york"
    assert filters.partition_key(" DC ") == "dc"
    with pytest.raises(LegalirError, match="no letters or digits"):
        filters.partition_key("--")


def test_unknown_topic_set_lists_known_ones(sample_collection):
    with pytest.raises(collections.CollectionError, match="known: .*test"):
        collections.topics_path(sample_collection, "dev")
    assert collections.qrels_path(sample_collection, "test.long").name == "test.txt"


def test_an_open_corpus_reads_a_collection_written_anew(tmp_path):
    """A long-lived reader (`legalir serve`'s documents) of a collection converted again in place: lookups
    read the new files (their own offsets), never a line of the old file's offsets in the new one."""
    from conftest import Jurisdictions

    class Changed(Jurisdictions):
        def documents(self):
            for d in super().documents():
                if d.id == "al-0":
                    continue  # deleted
                if d.id == "ne-1":
                    d = Document(d.id, "a much longer text than before, so every offset after it moves " * 3,
                                 d.fields)
                yield d
            yield Document("ut-0", "utah, a new jurisdiction", {"state": "utah"})

    collections.write(Jurisdictions(tmp_path), tmp_path / "c", quiet=True)
    corpus = collections.Corpus(tmp_path / "c")
    corpus.warm()
    assert corpus.record("ne-2")["contents"].endswith("new york rule 2") and len(corpus) == 9
    collections.write(Changed(tmp_path), tmp_path / "c", quiet=True)
    assert corpus.record("ut-0")["contents"] == "utah, a new jurisdiction"  # a partition it did not have
    assert corpus.record("al-0") is None
    assert corpus.record("ne-1")["contents"].startswith("a much longer text")
    assert corpus.record("ne-2")["contents"].endswith("new york rule 2")
    assert corpus.record("ut-0", "utah")["contents"] == "utah, a new jurisdiction"
    assert corpus.partitions == ["alaska", "new_york", "ohio", "utah"] and len(corpus) == 9


def test_an_open_corpus_reads_a_file_changed_in_place_and_many_threads_at_once(tmp_path):
    """The descriptor a corpus keeps per partition is used only while the file is the one it opened: a file
    rewritten in place (same inode, another size) is opened and its offsets read anew; threads reading at once
    (``pread``) each get their own record."""
    import json
    import threading

    from conftest import Jurisdictions

    collections.write(Jurisdictions(tmp_path), tmp_path / "c", quiet=True)
    corpus = collections.Corpus(tmp_path / "c")
    expected = {d: corpus.record(d) for d in corpus}
    got: dict[str, list] = {d: [] for d in expected}

    def read():
        for _ in range(20):
            for d in expected:
                got[d].append(corpus.record(d))
    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(recs == [expected[d]] * 80 for d, recs in got.items())
    path = tmp_path / "c" / "corpus" / "new_york" / "docs.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    with open(path, "r+", encoding="utf-8") as f:  # in place: the same file, its first record longer
        f.write("\n".join([json.dumps({**first, "contents": "rewritten in place " * 5}), *lines[1:]]) + "\n")
    assert corpus.record(first["id"])["contents"] == "rewritten in place " * 5
    assert corpus.record(json.loads(lines[1])["id"]) == expected[json.loads(lines[1])["id"]]


def test_records_of_a_search_are_each_one_record_and_read_a_file_changed_in_place(tmp_path):
    """``Corpus.records`` (a search's hits, one ``stat`` for them all) gives :meth:`Corpus.record` of each id, in
    order, in a partition or across all, an id it lacks or repeats included; after a file is rewritten in place
    (another size) it reads the new one; ``Documents.records`` gives ``Documents.record`` of each, changes and
    the release included."""
    import json

    from conftest import Jurisdictions

    from legalir.indexing.changes import Documents

    collections.write(Jurisdictions(tmp_path), tmp_path / "c", quiet=True)
    corpus = collections.Corpus(tmp_path / "c")
    ids = sorted(corpus)
    part = corpus.record(ids[0])["_partition"]
    asked = [ids[-1], "no-such-id", *ids, ids[0]]
    for partition in (None, part, "no-such-partition"):
        assert corpus.records(asked, partition) == [corpus.record(d, partition) for d in asked]
    assert any(r is not None for r in corpus.records(asked, part))
    docs = Documents(corpus, release="85")
    docs.changed = {ids[1]: {"id": ids[1], "contents": "new", "_partition": part}, ids[2]: None}
    assert docs.records(asked, part) == [docs.record(d, part) for d in asked]
    assert docs.records([ids[1], ids[2]], part)[1] is None
    path = tmp_path / "c" / "corpus" / part / "docs.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    with open(path, "r+", encoding="utf-8") as f:  # in place: the same file, its first record longer
        f.write("\n".join([json.dumps({**first, "contents": "rewritten in place " * 5}), *lines[1:]]) + "\n")
    assert corpus.records([first["id"]], part)[0]["contents"] == "rewritten in place " * 5


def test_records_made_in_worker_processes_are_the_ones_made_here(tmp_path, monkeypatch):
    """Past PARALLEL_AFTER documents, convert makes records (citations: most of its time) in forked worker
    processes, batch by batch; the collection is byte-for-byte the one made in one process. (The workers'
    conversion runs in a fresh interpreter: a process where the JVM runs makes its records itself.)"""
    import filecmp
    import subprocess
    import sys
    from pathlib import Path

    from legalir import datasets

    fixtures = Path(__file__).resolve().parent / "fixtures"
    monkeypatch.setattr(collections, "RECORD_WORKERS", 1)
    collections.write(datasets.get("housing_qa", fixtures), tmp_path / "here", quiet=True)
    code = (
        "import concurrent.futures as cf, sys\n"
        "from pathlib import Path\n"
        "from legalir import collections, datasets\n"
        "collections.RECORD_WORKERS, collections.PARALLEL_AFTER, collections.RECORDS_BATCH = 2, 0, 3\n"
        "assert collections._can_fork()\n"
        "made = []\n"
        "real = cf.ProcessPoolExecutor\n"
        "cf.ProcessPoolExecutor = lambda *a, **k: made.append(1) or real(*a, **k)\n"
        f"collections.write(datasets.get('housing_qa', Path({str(fixtures)!r})), Path({str(tmp_path / 'workers')!r}), "
        "quiet=True)\n"
        "assert made == [1], made\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]

    def files(root):
        return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())

    assert files(tmp_path / "here") == files(tmp_path / "workers")
    for rel in files(tmp_path / "here"):
        if rel.name == atomic.MARKER:  # records each file's modification time: the same but for those
            assert marker_without_mtimes(tmp_path / "here" / rel.parent) == \
                marker_without_mtimes(tmp_path / "workers" / rel.parent)
            continue
        assert filecmp.cmp(tmp_path / "here" / rel, tmp_path / "workers" / rel, shallow=False), rel


def test_a_corpus_file_handle_freed_in_the_interpreters_teardown_closes_quietly(tmp_path, monkeypatch):
    """A corpus file handle freed while the interpreter tears its modules down (their globals set to None, ``os``
    among them) still closes its descriptor and says nothing: it once printed "Exception ignored in _Handle.__del__
    ... 'NoneType' object has no attribute 'close'" at the exit of a program that died holding a corpus."""
    import os
    import sys

    from legalir import collections as c

    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "a", "contents": "x"}\n')
    handle = c._Handle(str(path))
    fd = handle.fd
    unraisable: list = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    monkeypatch.setattr(c, "os", None)  # what the teardown does to the module's globals
    del handle
    monkeypatch.undo()
    assert unraisable == []
    with pytest.raises(OSError):
        os.fstat(fd)
