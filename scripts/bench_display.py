#!/usr/bin/env python3
"""What showing a hit costs, per hit: ``snippet()``, a collection record's lookup (``Corpus.record``; a search's
hits read together, ``Corpus.records``, where this checkout has it) and the check for duplicate texts
(``display.duplicates`` where this checkout has it, else every text normalised whole, as before it), this
checkout's against another's (``--before``: a folder holding an older ``legalir/``, e.g. ``git archive``'s), in
one process, each swapped in turn, best of ``--rounds``, on the hits of ``scripts/bench_serve.py``'s questions
(the same synthetic Housing; its ``--work`` folder reused). Both give the same answers (asserted first).

    git archive ef37d20 legalir | tar x -C /tmp/before
    python scripts/bench_display.py --before /tmp/before --work /tmp/legalir-bench-serve
"""
import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))
import bench_serve as b  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--before", type=Path, required=True, help="a folder holding the older legalir/")
ap.add_argument("--work", type=Path, default=Path("/tmp/legalir-bench-serve"), help="bench_serve.py's work folder")
ap.add_argument("--scale", type=float, default=0.01)
ap.add_argument("--queries", type=int, default=300)
ap.add_argument("--rounds", type=int, default=5)
args = ap.parse_args()

def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m
    spec.loader.exec_module(m)
    return m

old_display = load("old_display", str(args.before / "legalir" / "serve" / "display.py"))
old_coll = load("old_collections", str(args.before / "legalir" / "collections" / "__init__.py"))
from legalir import collections as new_coll  # noqa: E402
from legalir.search import bm25  # noqa: E402
from legalir.serve import display  # noqa: E402
from legalir.trec import Topic  # noqa: E402

args.work.mkdir(parents=True, exist_ok=True)
built = b.setup(args.work, args.scale, 0, args.work / "bench.log")
qs = b.questions(built["collection"], args.queries)
root = built["bm25"]
idx = {}
hits = []
for text, part in qs:
    if part not in idx:
        idx[part] = bm25.BM25(root / part)
    ranked = idx[part].search({"q": Topic("q", text)}, 10)["q"]
    hits += [(d, part, text) for d in ranked]
newc, oldc = new_coll.Corpus(built["collection"]), old_coll.Corpus(built["collection"])
newc.warm()
oldc.warm()
recs = [newc.record(d, p) for d, p, _ in hits]
assert recs == [oldc.record(d, p) for d, p, _ in hits]
bodies = [(display.describe(r)["body"], display.query_terms(q)) for r, (_, _, q) in zip(recs, hits)]
assert [display.snippet(t, q) for t, q in bodies] == [old_display.snippet(t, q) for t, q in bodies]
# each query's hits together: what a search reads (Corpus.records, where this checkout has it) and the texts whose
# duplicates it marks (display.duplicates, where this checkout has it; before: every text normalised whole)
per_query = [hits[i:i + 10] for i in range(0, len(hits), 10)]
ids_of = [([d for d, _, _ in group], group[0][1]) for group in per_query]
texts_of = [[r["contents"] for r in recs[i:i + 10]] for i in range(0, len(recs), 10)]


def old_duplicates(texts):
    first, out = {}, []
    for i, t in enumerate(texts):
        same = " ".join(t.split()).lower()
        out.append(first.get(same) if same else None)
        if same:
            first.setdefault(same, i)
    return out


new_records = getattr(newc, "records", None)
new_duplicates = getattr(display, "duplicates", None)
if new_records is not None:
    assert [r for ids, p in ids_of for r in new_records(ids, p)] == recs
if new_duplicates is not None:
    assert [new_duplicates(t) for t in texts_of] == [old_duplicates(t) for t in texts_of]
best = {}
for _ in range(args.rounds):
    for name, fn in (("snippet before", lambda: [old_display.snippet(t, q) for t, q in bodies]),
                     ("snippet after", lambda: [display.snippet(t, q) for t, q in bodies]),
                     ("record before", lambda: [oldc.record(d, p) for d, p, _ in hits]),
                     ("record after", lambda: [newc.record(d, p) for d, p, _ in hits]),
                     ("a search's records before", lambda: [oldc.record(d, p) for d, p, _ in hits]),
                     ("a search's records after", lambda: [new_records(ids, p) for ids, p in ids_of] if new_records
                      else [newc.record(d, p) for d, p, _ in hits]),
                     ("duplicate check before", lambda: [old_duplicates(t) for t in texts_of]),
                     ("duplicate check after", lambda: [new_duplicates(t) for t in texts_of] if new_duplicates
                      else [old_duplicates(t) for t in texts_of])):
        t0 = time.perf_counter()
        fn()
        dt = (time.perf_counter() - t0) / len(hits) * 1e6
        best[name] = min(best.get(name, 1e9), dt)
print(f"# command: python scripts/bench_display.py {' '.join(sys.argv[1:])}")
print(f"{len(hits)} hits of {len(qs)} queries; µs a hit, best of {args.rounds}, swapped in turn; load {os.getloadavg()[0]:.1f}")
print("| per hit | before µs | after µs | after / before |\n|---|---|---|---|")
for what in ("snippet", "record", "a search's records", "duplicate check"):
    before, after = best[f"{what} before"], best[f"{what} after"]
    print(f"| {what} | {before:.1f} | {after:.1f} | {after / before:.2f} |")
os._exit(0)
