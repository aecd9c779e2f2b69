"""Throughput and peak memory of the contextualised chunker (``legalir chunk``) on synthetic markdown.

Reference, run side by side on the same texts: one pass of the same fast
tokenizer over every document (what any token-limited chunker must at least
do). The ratio says what the markdown parsing and greedy packing cost on top.

    .venv/bin/python scripts/bench_chunking.py --docs 2000 --sections 6

Documents are statutes-like markdown: a title, ``--sections`` sections with
sub-headings, paragraphs of log-normal length, a list and a table in each
section (reproducible from ``--seed``).
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _synth import TextSource


def documents(n: int, sections: int, seed: int) -> list[str]:
    src = TextSource(seed, mean_words=70)
    pool = iter(src.texts(n * sections * 7))
    out = []
    for d in range(n):
        parts = [f"# Act {d}"]
        for s in range(sections):
            parts.append(f"## Section {s + 1}. {next(pool)[:40]}")
            for p in range(2):
                parts.append(f"### {s + 1}.{p + 1}")
                parts.append(next(pool))
            parts.append("\n".join(f"- {next(pool)[:120]}" for _ in range(3)))
            parts.append("| term | days |\n|---|---|\n| notice | 30 |\n| cure | 14 |")
        out.append("\n\n".join(parts))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--sections", type=int, default=6)
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from legalir.collections.chunking import Chunker

    docs = documents(args.docs, args.sections, args.seed)
    chunker = Chunker(args.max_tokens)
    tok = chunker._tok

    t0 = time.perf_counter()
    total_tokens = sum(len(e.ids) for e in tok.encode_batch(docs, add_special_tokens=False))
    t_ref = time.perf_counter() - t0

    t0 = time.perf_counter()
    chunks = [c for batch in range(0, len(docs), 64) for cs in chunker.chunk_many(docs[batch:batch + 64]) for c in cs]
    t_chunk = time.perf_counter() - t0

    over = sum(c.tokens > args.max_tokens for c in chunks)
    print(json.dumps({
        "documents": len(docs),
        "document_tokens": total_tokens,
        "passages": len(chunks),
        "mean_passage_tokens": round(sum(c.tokens for c in chunks) / len(chunks), 1),
        "passages_over_limit": over,
        "tokenize_only_s": round(t_ref, 2),
        "chunk_s": round(t_chunk, 2),
        "ratio_chunk_vs_tokenize": round(t_chunk / t_ref, 2),
        "docs_per_s": round(len(docs) / t_chunk, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }, indent=1))


if __name__ == "__main__":
    main()
