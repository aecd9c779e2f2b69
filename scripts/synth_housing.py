#!/usr/bin/env python3
"""Synthetic Housing Statute QA release, in the published layout, at any fraction of the real size.

    python scripts/synth_housing.py OUT_DIR --scale 0.1
    -> OUT_DIR/housing_qa/data/statutes.tsv.zip   (statutes.tsv: idx, state, citation, path, text)
       OUT_DIR/housing_qa/data/questions.json.zip (questions.json: idx, state, question, answer, statutes, ...)

Shape of the real release (reglab/housing_qa; docs/DATASETS.md): 1,837,403
statutes over 51 jurisdictions (50 states + DC), per-jurisdiction pools from
10,676 to 155,974 statutes with a long tail of small ones; 6,853 labelled
questions. Sizes here: jurisdiction i of 51 gets min + (max - min) * (i/50)^4.73
statutes, which spans the real min and max and sums to the real total;
statute text is log-normal with a mean of 160 words (an assumption: about
1,000 characters). Everything scales by --scale (at least 1 statute per
jurisdiction). States are lower case in statutes.tsv and capitalised in
questions.json, as published. Reproducible from --seed. Not for committing.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _synth import TextSource

TOTAL = 1_837_403
MIN_POOL, MAX_POOL, N_JURISDICTIONS = 10_676, 155_974, 51
QUESTIONS = 6_853
STATES = ("alabama alaska arizona arkansas california colorado connecticut delaware district_of_columbia florida "
          "georgia hawaii idaho illinois indiana iowa kansas kentucky louisiana maine maryland massachusetts "
          "michigan minnesota mississippi missouri montana nebraska nevada new_hampshire new_jersey new_mexico "
          "new_york north_carolina north_dakota ohio oklahoma oregon pennsylvania rhode_island south_carolina "
          "south_dakota tennessee texas utah vermont virginia washington west_virginia wisconsin wyoming").split()


def pool_sizes(scale: float) -> dict[str, int]:
    """Statutes per jurisdiction: the real min, max and total, skewed like the real pools."""
    u = np.linspace(0.0, 1.0, N_JURISDICTIONS)
    sizes = MIN_POOL + (MAX_POOL - MIN_POOL) * u ** 4.73
    sizes *= TOTAL / sizes.sum()
    rng = np.random.default_rng(7)
    order = rng.permutation(N_JURISDICTIONS)  # big and small pools spread over the alphabet
    return {STATES[j]: max(1, int(round(sizes[i] * scale))) for i, j in enumerate(order)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="folder to hold housing_qa/ (a DATA_DIR)")
    ap.add_argument("--scale", type=float, default=0.1, help="fraction of the real size [0.1]")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mean-words", type=float, default=160.0, help="mean statute length in words [160]")
    args = ap.parse_args(argv)

    t0 = time.time()
    data = args.out / "housing_qa" / "data"
    data.mkdir(parents=True, exist_ok=True)
    sizes = pool_sizes(args.scale)
    n_questions = max(N_JURISDICTIONS, int(round(QUESTIONS * args.scale)))
    rng = np.random.default_rng(args.seed + 1)
    # questions per jurisdiction, roughly proportional to the square root of its pool
    weights = np.sqrt(np.array([sizes[s] for s in STATES], dtype=float))
    per_state = rng.multinomial(n_questions - N_JURISDICTIONS, weights / weights.sum()) + 1
    text = TextSource(args.seed, args.mean_words)
    heads = TextSource(args.seed + 2, 4, sigma=0.3)

    questions, idx = [], 0
    tmp = data / "statutes.tsv.zip.tmp"
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        with zf.open("statutes.tsv", "w", force_zip64=True) as raw:
            out = io.TextIOWrapper(raw, encoding="utf-8", newline="")
            w = csv.writer(out, delimiter="\t", lineterminator="\n")
            w.writerow(["idx", "state", "citation", "path", "text"])
            for si, state in enumerate(STATES):
                name = state.replace("_", " ")
                n = sizes[state]
                titles = [heads.words(4).title() for _ in range(8)]
                chapters = [heads.words(5).title() for _ in range(40)]
                texts = text.texts(n)
                gold_pos = {}
                for q in range(per_state[si]):
                    k = int(rng.choice([1, 1, 1, 1, 1, 1, 1, 2, 2, 3]))
                    gold_pos[q] = sorted(set(rng.integers(0, n, k).tolist()))
                for i, body in enumerate(texts):
                    t, c = i % 8, (i // 7) % 40
                    w.writerow([idx + i, name, f"{name.title()} Code § {t + 1}-{c + 1}-{i + 1} (2021)",
                                f"{name.title()} Code > Title {t + 1}. {titles[t]} > Chapter {c + 1}. {chapters[c]}",
                                body])
                for q, pos in gold_pos.items():
                    words = texts[pos[0]].split()
                    picked = [words[j] for j in rng.integers(0, len(words), min(4, len(words)))]
                    questions.append({
                        "idx": len(questions), "state": name.title(),
                        "question": f"Is a {' '.join(picked)} required under {heads.words(6)}?",
                        "answer": "Yes" if rng.random() < 0.5 else "No", "question_group": int(q),
                        "statutes": [{"statute_idx": idx + p, "citation": "", "excerpt": texts[p][:80]} for p in pos],
                        "original_question": "", "caveats": []})
                idx += n
            out.flush()
            out.detach()
    tmp.replace(data / "statutes.tsv.zip")
    with zipfile.ZipFile(data / "questions.json.zip", "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("questions.json", json.dumps(questions))
    size = (data / "statutes.tsv.zip").stat().st_size
    print(f"{args.out}/housing_qa: {idx:,} statutes in {len(sizes)} jurisdictions "
          f"(largest {max(sizes.values()):,}, smallest {min(sizes.values()):,}), {len(questions):,} questions, "
          f"statutes.tsv.zip {size / 1e6:.0f} MB, {time.time() - t0:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
