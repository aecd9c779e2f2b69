"""RM3 over an updated index: the feedback terms and scores of a fresh index of the same documents.

`legalir index update` marks replaced and deleted documents deleted in their segments; Lucene keeps them in
every frequency until a segment is rewritten. ``io.legalir.LiveStatsSearcher`` corrects what a query scores
with; Anserini's RM3 also reads the *reader's* document frequencies (feedback terms held by over a tenth of
the documents are dropped), which ``io.legalir.LiveStatsReader`` corrects. Without it the runs below differed
from a fresh index's on about half the queries."""
from __future__ import annotations

import json

from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

WORDS = [f"w{i}" for i in range(40)]


@st.composite
def histories(draw):
    """A corpus of 20-50 documents over nested vocabularies (so frequencies vary), then replacements and
    deletions of under half of them, and RM3 settings."""
    n = draw(st.integers(20, 50))
    text = lambda top: st.lists(st.sampled_from(WORDS[:top]), min_size=3, max_size=20).map(" ".join)
    docs = {f"d{i}": draw(text(8 + i % 32)) for i in range(n)}
    ids = sorted(docs)
    # under half of the segment changed: an update rewrites a segment whose deleted documents pass half of it
    # (update.DELETES_PCT_ALLOWED), and a rewritten segment holds no deleted document to correct for
    replaced = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=n // 3, unique=True))
    rest = [d for d in ids if d not in replaced]
    deleted = draw(st.lists(st.sampled_from(rest), max_size=min(5, (n - 1) // 2 - len(replaced)), unique=True))
    new = {d: draw(text(40)) for d in replaced}
    rm3 = (draw(st.integers(1, 15)), draw(st.integers(1, 8)), draw(st.sampled_from([0.2, 0.5, 0.8])))
    return docs, new, deleted, rm3


def test_rm3_over_an_updated_index_is_rm3_over_a_fresh_one(tmp_path_factory):
    import legalir
    from legalir.indexing import lucene
    from legalir.search.bm25 import RM3

    queries = {f"q{i}": " ".join(WORDS[j] for j in (i, 2 * i + 1, 3 * i + 2)) for i in range(12)}
    expanded = []

    @settings(max_examples=examples(4, deep=1 / 100))
    @given(history=histories())
    def check(history):
        docs, new, deleted, (fb_terms, fb_docs, weight) = history
        work = tmp_path_factory.mktemp("rm3")
        legalir.index([{"id": d, "contents": t} for d, t in docs.items()], work / "updated")
        (work / "rep.jsonl").write_text("".join(json.dumps({"id": d, "contents": t}) + "\n" for d, t in new.items()))
        legalir.update(work / "updated", replace=work / "rep.jsonl", delete=deleted or None)
        docs.update(new)
        for d in deleted:
            del docs[d]
        legalir.index([{"id": d, "contents": t} for d, t in docs.items()], work / "fresh")
        with lucene.LuceneIndex(work / "updated") as idx:
            assert int(idx.reader.maxDoc()) - int(idx.reader.numDocs()) == len(new) + len(deleted)
        rm3 = RM3(fb_terms, fb_docs, weight)
        with legalir.Searcher(work / "updated", rm3=rm3) as a, legalir.Searcher(work / "fresh", rm3=rm3) as b:
            got, want = a.batch_search(queries, 20), b.batch_search(queries, 20)
        assert got == want
        with legalir.Searcher(work / "fresh") as plain:
            expanded.append(plain.batch_search(queries, 20) != want)

    check()
    assert any(expanded), "RM3 changed no ranking: the comparison above would not see a wrong expansion"
