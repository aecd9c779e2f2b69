#!/usr/bin/env python3
"""Synthetic Bar Exam QA release, in the published layout, at any fraction of the real passage pool.

    python scripts/synth_barexam.py OUT_DIR --scale 0.1
    -> OUT_DIR/barexam_qa/data/qa/{train,validation,test}.csv         (the 16 published columns)
       OUT_DIR/barexam_qa/data/passages/{train,validation,test}.tsv    (idx, faiss_id, source, text)

Shape of the real release (reglab/barexam_qa; docs/DATASETS.md): about
857,000 passages in three files of 448 / 55 / 56 MB (80% / 10% / 10%),
about 650 characters each (560 MB / 857K); 954 / 124 / 117 questions whose
gold passages are in the pool. Passages here: log-normal, mean 100 words
(about 650 characters); 1% hold a quoted newline or tab, as case-law
paragraphs do. Questions are not scaled (their count does not drive the
cost). Files are written with pandas' CSV quoting. Reproducible from --seed.
Not for committing.
"""
from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _synth import TextSource

PASSAGES = 857_000
SPLIT_SHARE = {"train": 0.80, "validation": 0.10, "test": 0.10}
QUESTIONS = {"train": 954, "validation": 124, "test": 117}
QA_COLUMNS = ["idx", "dataset", "example_id", "prompt_id", "source", "subject", "question_number", "prompt",
              "question", "choice_a", "choice_b", "choice_c", "choice_d", "answer", "gold_passage", "gold_idx"]
SOURCES = ("caselaw", "caselaw", "caselaw", "caselaw", "wex", "mbe")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="folder to hold barexam_qa/ (a DATA_DIR)")
    ap.add_argument("--scale", type=float, default=0.1, help="fraction of the real passage pool [0.1]")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    t0 = time.time()
    root = args.out / "barexam_qa" / "data"
    (root / "qa").mkdir(parents=True, exist_ok=True)
    (root / "passages").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed + 1)
    text = TextSource(args.seed, 100.0)
    short = TextSource(args.seed + 2, 25.0, sigma=0.4)
    total, n_gold = 0, 0
    for split, share in SPLIT_SHARE.items():
        n = max(QUESTIONS[split] + 1, int(round(PASSAGES * args.scale * share)))
        passages = text.texts(n)
        # the split's questions: each gold is one of the split's passages
        gold_pos = rng.choice(n, QUESTIONS[split], replace=False)
        with open(root / "passages" / f"{split}.tsv", "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, delimiter="\t", lineterminator="\n")
            w.writerow(["idx", "faiss_id", "source", "text"])
            odd = set(rng.choice(n, max(1, n // 100), replace=False).tolist())
            for i, body in enumerate(passages):
                if i in odd:
                    body = body.replace(" ", "\n", 1).replace(" ", "\t", 1)
                w.writerow([f"{split}_p{i}", total + i, SOURCES[i % len(SOURCES)], body])
        with open(root / "qa" / f"{split}.csv", "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(QA_COLUMNS)
            for q, p in enumerate(gold_pos.tolist()):
                words = passages[p].split()
                picked = " ".join(words[j] for j in rng.integers(0, len(words), min(5, len(words))))
                prompt = "" if q % 3 == 0 else short.texts(1)[0] + ", and then " + short.texts(1)[0]
                w.writerow([f"{split}_{q}", "mbe", q, f"p{q}" if prompt else "", "MBE-synthetic", "", q, prompt,
                            f"Is {picked} {short.words(8)}?", "a", "b", "c", "d", "A", passages[p],
                            f"{split}_p{p}"])
        total += n
        n_gold += len(gold_pos)
    mb = sum(p.stat().st_size for p in (root / "passages").iterdir()) / 1e6
    print(f"{args.out}/barexam_qa: {total:,} passages ({mb:.0f} MB), {n_gold:,} questions, "
          f"{time.time() - t0:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
