"""lpt.hybrid with default legs against legalir.Searcher's hybrid, on the embedded sample's test topics.

Usage: PYTHONPATH=<tree> python scripts/measure_pt_hybrid.py WORKDIR K
Builds (once, in WORKDIR) the sample collection (or uses WORKDIR/collection when there: a copy of ACORD's), its
Lucene index and a MiniLM FAISS index; then for each
test topic compares the top K of lpt.hybrid(lpt.bm25(idx), lpt.dense(didx)) with
Searcher([idx, didx]).batch_search(topics, K, method="hybrid") (docids and scores, in order).
"""
import inspect
import sys
from pathlib import Path

import legalir
import legalir.pt as lpt
from legalir import collections, datasets, trec
from legalir.indexing import dense, encoders, sparse

work, k = Path(sys.argv[1]), int(sys.argv[2])
coll, idx, didx = work / "collection", work / "bm25", work / "dense"
if not (coll / "manifest.json").exists():
    collections.write(datasets.get("sample", "/nonexistent"), coll, quiet=True)
if not idx.exists():
    sparse.build(coll, idx, threads=1, quiet=True)
if not didx.exists():
    enc = encoders.Encoder.load("minilm", device="cpu")
    encoders.encode_collection(enc, coll, work / "emb", quiet=True)
    dense.build(work / "emb", didx, quiet=True)
topics = trec.read_topics(coll / "topics" / "test.jsonl")
queries = lpt.topics(coll, "test")
new_api = "k" in inspect.signature(lpt.hybrid).parameters
h = lpt.hybrid(lpt.bm25(idx), lpt.dense(didx), k=k) if new_api else lpt.hybrid(lpt.bm25(idx), lpt.dense(didx))
got = lpt.frame_run(h.transform(queries))
with legalir.Searcher([idx, didx]) as s:
    want = s.batch_search(topics, k, method="hybrid")
same = [trec.ranking(got[q], k) == trec.ranking(want[q], k) for q in sorted(want)]
print(f"{legalir.__file__} ({coll.name}: {len(want)} test topics): lpt.hybrid (default legs) == Searcher hybrid at "
      f"k={k}: {sum(same)} of {len(same)} topics; the first 15: {sum(same[:15])} of 15")
