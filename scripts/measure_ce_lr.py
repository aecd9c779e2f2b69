"""Does train-ce's learning rate move the loss? A short run per rate on the embedded sample (issue 40).

    python scripts/measure_ce_lr.py [UPDATES] [minilm|tiny]

Trains the ACORD recipe (`legalir.search.finetune.train`: balanced grades, BCE, AdamW, batch 8, 48 tokens, seed
3, fp32, one thread) from the bundled MiniLM (or a random 2-layer BERT, scripts/tiny_lm.py --encoder) at 2e-5,
5e-5 (the former defaults), 5e-4 and 1e-3 (ACORD's grid, the defaults now), and prints the mean training loss
of the first and the last five updates of each. Validation: the sample's test topics over BM25's top 20
(a measurement of the training loss only; nothing is selected here).
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(updates: int = 8, base: str = "minilm") -> None:
    import tiny_lm

    from legalir import collections, datasets, trec
    from legalir.indexing import sparse
    from legalir.search import finetune
    from legalir.search import rerank as rr
    from legalir.search.bm25 import BM25

    tmp = Path(tempfile.mkdtemp(prefix="ce-lr-"))
    model = "minilm" if base == "minilm" else str(tiny_lm.build_encoder(tmp / "tiny"))
    coll = tmp / "coll"
    collections.write(datasets.get("sample", "/nonexistent"), coll, quiet=True)
    sparse.build(coll, tmp / "idx", threads=1, quiet=True)
    texts = rr.collection_texts(coll)
    vt = trec.read_topics(collections.topics_path(coll, "test"))
    valid = finetune.Validation(vt, trec.read_qrels(collections.qrels_path(coll, "test")),
                                {"bm25": BM25(tmp / "idx").search(vt, 20)}, texts, depth=20)
    train = trec.read_topics(collections.topics_path(coll, "train"))
    qrels = trec.read_qrels(collections.qrels_path(coll, "train"))
    print(f"| learning rate | loss, first 5 updates | loss, last 5 | ({base}, {updates} updates of 8) |")
    print("|---|---|---|---|")
    for lr in (2e-5, 5e-5, 5e-4, 1e-3):
        t = time.time()
        cfg = finetune.TrainConfig(base_model=model, learning_rates=[lr], checkpoints=[updates], batch_size=8,
                                   max_length=48, threads=1, precision="fp32", seeds=[3], save_every=10_000)
        s = finetune.train(cfg, train, qrels, texts, valid, tmp / f"m-{lr:g}", progress=False)
        losses = next(iter(s["train_losses"].values()))
        print(f"| {lr:g} | {np.mean(losses[:5]):.4f} | {np.mean(losses[-5:]):.4f} | {time.time() - t:.1f} s |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8, sys.argv[2] if len(sys.argv) > 2 else "minilm")
