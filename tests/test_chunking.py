"""Contextualised markdown chunking: exact boundaries on a hand-made document, the CLI, MaxP back to documents."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from legalir.collections.chunking import Chunker, ChunkingError, split_blocks

DOC = """# Residential Tenancies Act

General provisions apply to every lease.

## Part 1. Deposits

### 1.1 Amount

A landlord may not demand a security deposit greater than two months of rent.

### 1.2 Return

- The landlord shall return the deposit within 21 days.
- Deductions require an itemized statement.
- Normal wear and tear is never deductible.

```
deduction = damage - wear_and_tear

return deposit - deduction
```

| Item | Days |
|------|------|
| Return | 21 |

## Part 2. Repairs

The landlord shall keep the premises fit for habitation, repair heating, plumbing and electrical systems \
promptly, and respond to written requests for repairs within a reasonable time, which is presumed to be \
fourteen days unless the defect threatens the health or safety of the occupants, in which case the landlord \
must act within twenty four hours of notice.
"""

PATH_12 = "# Residential Tenancies Act\n## Part 1. Deposits\n### 1.2 Return\n\n"

# Block sizes in BERT-uncased WordPiece tokens (no [CLS]/[SEP]):
#   0 "# Residential Tenancies Act" 6 | 1 paragraph 7 | 2 "## Part 1. Deposits" 6 | 3 "### 1.1 Amount" 7
#   4 paragraph 15 | 5 "### 1.2 Return" 7 | 6-8 list items 11, 10, 12 | 9 code 21 | 10 table 25
#   11 "## Part 2. Repairs" 6 | 12 paragraph 65
# With max_tokens=48 and 2 special tokens, greedily:
#   [0..4] 2+6+7+6+7+15 = 43; + block 5 (7) = 50 > 48
#   [5..7] prefix 0,2 (12): 2+12+7+11+10 = 42; + block 8 (12) = 54
#   [8]    prefix 0,2,5 (19): 2+19+12 = 33; + code (21) = 54
#   [9]    2+19+21 = 42; + table (25) = 67
#   [10]   2+19+25 = 46; + heading 11 (6) = 52
#   [11]   2+6+6 = 14; + paragraph (65) = 79: heading 11 encloses block 12, so it moves to its prefix
#   [12]   2+6+6+65 = 79 > 48: one block, kept whole
EXPECTED = [
    ("# Residential Tenancies Act\n\nGeneral provisions apply to every lease.\n\n## Part 1. Deposits\n\n"
     "### 1.1 Amount\n\nA landlord may not demand a security deposit greater than two months of rent.", 43),
    ("# Residential Tenancies Act\n## Part 1. Deposits\n\n### 1.2 Return\n\n"
     "- The landlord shall return the deposit within 21 days.\n- Deductions require an itemized statement.", 42),
    (PATH_12 + "- Normal wear and tear is never deductible.", 33),
    (PATH_12 + "```\ndeduction = damage - wear_and_tear\n\nreturn deposit - deduction\n```", 42),
    (PATH_12 + "| Item | Days |\n|------|------|\n| Return | 21 |", 46),
    ("# Residential Tenancies Act\n## Part 2. Repairs\n\nThe landlord shall keep the premises fit for habitation, "
     "repair heating, plumbing and electrical systems promptly, and respond to written requests for repairs "
     "within a reasonable time, which is presumed to be fourteen days unless the defect threatens the health or "
     "safety of the occupants, in which case the landlord must act within twenty four hours of notice.", 79),
]


@pytest.fixture(scope="module")
def chunker():
    return Chunker(max_tokens=48)  # the bundled MiniLM tokenizer (BERT uncased WordPiece)


def test_blocks_and_heading_paths():
    blocks = split_blocks(DOC)
    assert [b.kind for b in blocks] == ["heading", "paragraph", "heading", "heading", "paragraph", "heading",
                                        "list_item", "list_item", "list_item", "code", "table", "heading",
                                        "paragraph"]
    assert [h.text for h in blocks[4].path] == ["# Residential Tenancies Act", "## Part 1. Deposits",
                                                "### 1.1 Amount"]
    # "## Part 2" closes "## Part 1" and its "###" children
    assert [h.text for h in blocks[12].path] == ["# Residential Tenancies Act", "## Part 2. Repairs"]
    assert blocks[9].text.count("\n\n") == 1  # the blank line inside the fence stays inside the block
    assert {blocks[6].list_id, blocks[7].list_id, blocks[8].list_id} == {blocks[6].list_id}


def test_exact_chunk_boundaries(chunker):
    sizes = chunker.count([b.text for b in split_blocks(DOC)])
    assert sizes == [6, 7, 6, 7, 15, 7, 11, 10, 12, 21, 25, 6, 65]
    chunks = chunker.chunk(DOC)
    assert [(c.text, c.tokens) for c in chunks] == EXPECTED
    # the per-block sums are the tokenizer's own count of each chunk as the model sees it
    assert [chunker.count_text(c.text) for c in chunks] == [t for _, t in EXPECTED]
    # only the single over-long block exceeds the limit, and it is not truncated
    assert [c.tokens > 48 for c in chunks] == [False] * 5 + [True]
    assert chunks[-1].text.endswith("twenty four hours of notice.")


def test_nested_list_items_and_loose_lists(chunker):
    md = "- a\n  - a.1\n  - a.2\n- b\n\n- c\n\ntext after"
    blocks = split_blocks(md)
    assert [b.text for b in blocks] == ["- a\n  - a.1\n  - a.2", "- b", "- c", "text after"]
    [chunk] = chunker.chunk(md)
    assert chunk.text == "- a\n  - a.1\n  - a.2\n- b\n\n- c\n\ntext after"  # tight items by \n, loose by \n\n


def test_chunk_cli_jsonl_and_errors(tmp_path):
    from legalir.cli import main

    src = tmp_path / "corpus.jsonl"
    src.write_text(json.dumps({"id": "rta", "contents": DOC, "state": "XX"}) + "\n"
                   + json.dumps({"id": "empty", "contents": "   \n"}) + "\n", encoding="utf-8")
    out = tmp_path / "passages.jsonl"
    r = CliRunner().invoke(main, ["chunk", str(src), str(out), "--max-tokens", "48", "--quiet"])
    assert r.exit_code == 0, r.output
    recs = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [x["id"] for x in recs] == [f"rta:{n}" for n in range(6)]
    assert {x["parent_id"] for x in recs} == {"rta"} and {x["state"] for x in recs} == {"XX"}
    assert [x["contents"] for x in recs] == [t for t, _ in EXPECTED]
    assert "1 documents without text: empty" in r.output and "1 single blocks over 48 tokens" in r.output

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "a", "contents": "x"}) + "\n{not json\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["chunk", str(bad), str(tmp_path / "o.jsonl"), "--quiet"])
    assert r.exit_code == 2 and f"{bad}:2: invalid JSON" in r.output
    r = CliRunner().invoke(main, ["chunk", str(src), str(tmp_path / "o.jsonl"), "--tokenizer", str(tmp_path / "none")])
    assert r.exit_code == 2 and "could not load tokenizer" in r.output
    with pytest.raises(ChunkingError, match="at least 8"):
        Chunker(max_tokens=4)


def test_chunked_collection_searched_and_mapped_back_with_maxp(tmp_path):
    """Chunk a markdown collection (CRUMB fixture's Legal QA statutes, whole), index the passages with
    Lucene, search, and map the passage run back to the source's document ids with MaxP."""
    from legalir import collections, datasets, trec
    from legalir.collections.chunking import chunk_corpus
    from legalir.indexing import sparse
    from legalir.search.bm25 import BM25
    from legalir.search.maxp import MaxP, parents_from_collection

    docs = tmp_path / "docs"
    statutes = datasets.get("crumb", Path(__file__).parent / "fixtures", task="legal_qa", corpus="full_document")
    collections.write(statutes, docs, quiet=True)
    out = tmp_path / "passages"
    stats = chunk_corpus(docs, out, Chunker(max_tokens=40), quiet=True)
    source_ids = {d["id"] for d in collections.iter_documents(docs)}
    passages = list(collections.iter_documents(out))
    assert stats["passages"] == len(passages) > len(source_ids)  # the two-paragraph statutes were split
    assert {p["parent_id"] for p in passages} == source_ids
    assert all(p["contents"].startswith("# ") for p in passages)  # every passage carries its heading path
    assert sorted(p.name for p in (out / "topics").iterdir()) == sorted(p.name for p in (docs / "topics").iterdir())
    sparse.build(out, tmp_path / "idx", threads=1, quiet=True)
    topics = trec.read_topics(collections.topics_path(out, "test"))
    parents = parents_from_collection(out)
    passage_run = BM25(tmp_path / "idx").search(topics, 50)
    doc_run = MaxP(BM25(tmp_path / "idx"), parents).search(topics, 50)
    qrels = trec.read_qrels(collections.qrels_path(docs, "test"))
    for qid, docs_scored in doc_run.items():
        assert set(docs_scored) <= source_ids
        for doc, score in docs_scored.items():  # each document scores as its best passage
            assert score == max(s for p, s in passage_run[qid].items() if parents[p] == doc)
        best = max(docs_scored, key=docs_scored.get)
        assert qrels[qid].get(best) == 1  # the statute that answers the question ranks first
