"""Filtered and cited queries searched together over Java threads (legalir/indexing/lucene.py, ``_JavaBatch``)
give exactly what the same queries give one at a time.

On the citation query set's pooled index (five states, citations and a ``state`` filter field; real JVM, real
Lucene), hypothesis generates batches of topics: question texts of the fixture and bags of its statutes'
words, each with or without a state of its own (routed to that state's segments and statistics), a filter of
one or more states, and citations on or off. Each batch is searched three ways, and the hits (docids and
float32 scores) must be equal, exactly:

* as one batch over two Java threads (what ``legalir search --threads 2`` runs);
* one topic at a time, one thread;
* one topic at a time through plain Lucene calls made from Python (``IndexSearcher.search`` with Anserini's
  sort, ``ScoredDocs.fromTopDocs``, its score-tie adjustment: what legalir ran before the batch), on the same
  query objects: the reference for the method-handle chain the batch runs.

The per-state parity (pooled + state filter = the per-state index, byte for byte) is
``tests/test_legal_structure.py::test_pooled_index_with_state_filter_gives_the_per_state_run``.
"""
from __future__ import annotations

import json

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from legalir import trec
from legalir.base import jvm
from legalir.search.bm25 import BM25

STATES = ["California", "Massachusetts", "Nevada", "New York", "Texas"]
#: the state of a fixture statute by the first digit of its id
PREFIX = {"1": "California", "2": "New York", "3": "Texas", "4": "Massachusetts", "5": "Nevada"}


@pytest.fixture(scope="module")
def material(cq):
    topics = trec.read_topics(cq / "coll/topics/test.jsonl")
    words = sorted({w for p in (cq / "coll/corpus").glob("*/docs.jsonl") for line in open(p)
                    for w in json.loads(line)["contents"].split() if w.isalpha() and len(w) > 3})
    return [t.text for t in topics.values()], words


@pytest.fixture(scope="module")
def searchers(cq):
    """The pooled index opened twice: searched in batches over two Java threads, and one topic at a time."""
    together = BM25(cq / "pooled", threads=2, filter_by=["state"], filter_by_optional=True)
    alone = BM25(cq / "pooled", threads=1, batch_size=1, filter_by=["state"], filter_by_optional=True)
    yield together, alone
    together.close()
    alone.close()


def _sequential(index, bm25: BM25, topics: dict[str, trec.Topic], k: int) -> dict:
    """Each topic's hits through Lucene calls made one at a time from Python, on the batch's own query."""
    flt, cites = bm25.clauses(topics)
    parts = bm25.partitions_of(topics)
    A = jvm.autoclass
    field, kind = A("org.apache.lucene.search.SortField"), A("org.apache.lucene.search.SortField$Type")
    sort = A("org.apache.lucene.search.Sort")(field.FIELD_SCORE, field("id", kind.STRING_VAL))
    out = {}
    for q, t in topics.items():
        text = trec.clean_text(t.text)
        sub, n_docs = index._partition_searcher(parts.get(q) or (), bm25.k1, bm25.b)
        query, tokens = index.query(text, flt.get(q) or [], cites.get(q) or [], n_docs)
        docs = A("io.anserini.search.ScoredDocs").fromTopDocs(sub.search(query, k, sort, True), sub)
        ctx = A("io.anserini.rerank.RerankerContext")(sub, None, query, None, text, tokens, None,
                                                      A("io.anserini.search.SearchCollection$Args")())
        cascade = A("io.anserini.rerank.RerankerCascade")()
        cascade.add(A("io.anserini.rerank.lib.ScoreTiesAdjusterReranker")())
        docs = cascade.run(docs, ctx)
        out[q] = ([str(d) for d in docs.docids], [float(s) for s in docs.scores])
    return out


def _hits(bm25: BM25, topics: dict[str, trec.Topic], k: int) -> dict:
    return {q: (d, [float(s) for s in sc]) for q, d, sc in bm25.search_hits(topics, k)}


topic = st.fixed_dictionaries({
    "text": st.one_of(st.integers(0, 45), st.lists(st.integers(0, 10_000), min_size=1, max_size=8)),
    "state": st.none() | st.sampled_from(STATES),
    "filter": st.none() | st.lists(st.sampled_from(STATES), min_size=1, max_size=3, unique=True),
    "citations": st.booleans(),
})


@settings(max_examples=examples(25))
@given(batch=st.lists(topic, min_size=1, max_size=12), k=st.sampled_from([1, 5, 50]))
def test_a_batch_of_filtered_queries_equals_them_one_at_a_time(searchers, material, batch, k):
    questions, words = material
    together, alone = searchers
    topics = {}
    for i, g in enumerate(batch):
        text = questions[g["text"]] if isinstance(g["text"], int) else " ".join(
            words[j % len(words)] for j in g["text"])
        fields = {"_citations": g["citations"]}
        if g["state"]:
            fields["state"] = g["state"]
        if g["filter"]:
            fields["_filter"] = [("state", tuple(g["filter"]))]
        topics[f"q{i}"] = trec.Topic(f"q{i}", text, fields)
    together.batch_size = len(topics)  # one batch: every topic in one Java call
    flt, cites = together.clauses(topics)
    got = _hits(together, topics, k)
    assert got == {q: _hits(alone, {q: t}, k)[q] for q, t in topics.items()}
    structured = {q: topics[q] for q in flt.keys() | cites.keys()}
    assert {q: got[q] for q in structured} == _sequential(together.index, together, structured, k)
    for i, g in enumerate(batch):  # the filter holds: every hit of a filtered topic is of its states
        allowed = set(g["filter"] or STATES) & ({g["state"]} if g["state"] else set(STATES))
        assert {PREFIX[d[0]] for d in got[f"q{i}"][0]} <= allowed
