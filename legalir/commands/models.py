"""Models and LLMs: fine-tune a cross-encoder (train-ce), expand queries (expand), rerank runs (rerank)."""
from __future__ import annotations

import sys

import click

from legalir.commands.options import DEPTH, float_list, generator_options, int_list, make_generator, tag


@click.command("train-ce")
@click.argument("collection", type=click.Path(exists=True, file_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--valid-run", required=True, type=click.Path(exists=True, dir_okay=False),
              help="First-stage run of the validation topics; its top --valid-depth are reranked to pick the model.")
@click.option("--train-topics", "train_set", default="train", show_default=True, help="Training topic set.")
@click.option("--valid-topics", "valid_set", default="valid", show_default=True, help="Validation topic set.")
@click.option("--base-model", default="minilm", show_default=True,
              help="Encoder to start from: a model folder, 'minilm' (bundled all-MiniLM-L6-v2), or a Hub name.")
@click.option("--lr", "learning_rates", multiple=True, callback=float_list, default=("2e-5", "5e-5"),
              show_default=True, help="Learning rate(s) of the grid (repeatable or comma-separated).")
@click.option("--checkpoints", default="100,200,300,400", show_default=True, callback=int_list,
              help="Numbers of updates at which each run is validated; the largest is the run's length.")
@click.option("--batch-size", default=64, show_default=True)
@click.option("--max-length", default=256, show_default=True, help="Tokens per (query, clause) pair.")
@click.option("--weight-decay", default=0.01, show_default=True)
@click.option("--warmup-ratio", default=0.1, show_default=True)
@click.option("--attention-dropout", default=0.0, show_default=True,
              help="Attention dropout (0 lets torch use its fused attention; the base model has 0.1).")
@click.option("--precision", type=click.Choice(["auto", "fp32", "bf16"]), default="auto", show_default=True,
              help="auto = bf16 autocast where the hardware has it (CPU AMX, CUDA), else fp32.")
@click.option("--head-lr-multiplier", default=1.0, show_default=True,
              help="Learning rate of the new scoring head = lr x this.")
@click.option("--valid-depth", default=1000, show_default=True, help="Validation rerank depth.")
@click.option("--measure", default="ndcg_cut_10", show_default=True,
              help="Validation measure, judged-only: one value, ndcg_cut_10 or ndcg_cut.10.")
@click.option("--seed", default=42, show_default=True)
@click.option("--threads", type=int, default=None, help="Torch CPU threads [default: torch's].")
@click.option("--work-dir", type=click.Path(file_okay=False), help="Resumable state [default: OUT_DIR.work].")
@click.option("--stop-after", type=int, default=None,
              help="Stop at the first checkpoint after this many updates (state kept); run again to resume.")
def train_ce(collection, out_dir, valid_run, train_set, valid_set, base_model, learning_rates, checkpoints,
             batch_size, max_length, weight_decay, warmup_ratio, attention_dropout, precision, head_lr_multiplier,
             valid_depth, measure, seed, threads, work_dir, stop_after):
    """Fine-tune a cross-encoder on COLLECTION's training qrels (ACORD recipe); save the best to OUT_DIR.

    Relevance levels are oversampled to equal frequency, targets are rel/max_rel,
    the loss is binary cross-entropy. Each learning rate's run is validated at
    each checkpoint (judged-only, reranking --valid-run's top --valid-depth);
    the best (learning rate, updates) is saved with legalir-train.json.
    Test topic sets are refused.
    """
    from legalir import finetune

    cfg = finetune.TrainConfig(base_model=base_model, learning_rates=list(learning_rates),
                               checkpoints=sorted(set(checkpoints)), batch_size=batch_size, max_length=max_length,
                               weight_decay=weight_decay, warmup_ratio=warmup_ratio,
                               attention_dropout=attention_dropout, precision=precision, seed=seed,
                               head_lr_multiplier=head_lr_multiplier,
                               valid_depth=valid_depth, measure=measure, threads=threads)
    finetune.train_from_collection(cfg, collection, out_dir, valid_run, train_set=train_set, valid_set=valid_set,
                                   work_dir=work_dir, stop_after=stop_after,
                                   command=" ".join(["legalir", *sys.argv[1:]]))


@click.command()
@click.argument("topics", type=click.Path(exists=True, dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--method", default="structured", show_default=True,
              help="Built-in prompt (paraphrase, cot, structured, cot-housing, structured-housing, q2a, q2d, q2r) "
                   "or a .toml prompt file.")
@click.option("--join", type=click.Choice(["append", "replace", "repeat"]), default="append", show_default=True,
              help="How the generation joins the query.")
@click.option("--repeat", default=5, show_default=True, help="--join repeat: copies of the original query.")
@click.option("--save-generations", type=click.Path(dir_okay=False),
              help="Also write the raw generations as JSONL, reusable with --backend precomputed.")
@generator_options
def expand(topics, out, method, join, repeat, save_generations, **gen_opts):
    """Expand TOPICS (.tsv/.jsonl) with an LLM; write OUT (.jsonl keeps metadata, or .tsv).

    OUT is an ordinary topics file: `legalir search` (and dense search) run on it unchanged.
    """
    from legalir import generate, trec
    from legalir.search import expansion

    tops = trec.read_topics(topics)
    gen = make_generator(**gen_opts)
    raw: list[str] = []
    expanded = expansion.expand(tops, gen, method, join=join, repeat=repeat, generations=raw)
    n = expansion.write_topics(out, expanded)
    if save_generations:
        template = expansion.load_prompt(method)
        generate.write_generations(save_generations, expansion.requests_for(tops, template), raw)
    source = (f"read from {gen_opts['generations']}" if gen_opts["backend"] == "precomputed"
              else f"{gen.calls} generated, {getattr(gen, 'hits', 0)} from cache")
    click.echo(f"{out}: {n} expanded topics ({method}, join={join}; {source})", err=True)


@click.command()
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--run", "run_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="First-stage TREC run to rerank.")
@click.option("--topics", "topics_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Topics (.tsv/.jsonl) holding the queries of the run's topics.")
@click.option("--collection", type=click.Path(exists=True, file_okay=False),
              help="Collection folder: document texts from its JSONL corpus.")
@click.option("--index", "index_dir", type=click.Path(exists=True, file_okay=False),
              help="Or a Lucene index: document texts from its stored raw JSON.")
@click.option("-k", "--k", "k", default=100, show_default=True, type=DEPTH, help="Rerank each topic's top k.")
@click.option("--model", default=None,
              help="Cross-encoder: model folder (e.g. models/acord-ce), 'minilm', or a Hub name.")
@click.option("--judge", type=click.Choice(["graded", "binary"]), default=None,
              help="Rerank with a pointwise LLM judge instead (1-5 grade or yes/no) through the generator options.")
@click.option("--judge-prompt", type=click.Path(exists=True, dir_okay=False),
              help="Judge prompt .toml with {query} and {document} [default: the built-in one].")
@click.option("--batch-size", default=32, show_default=True, type=click.IntRange(min=1), help="Pairs per forward pass.")
@click.option("--max-length", type=click.IntRange(min=8), default=None,
              help="Cross-encoder tokens per pair [default: the model's].")
@click.option("--precision", type=click.Choice(["auto", "fp32", "bf16"]), default="auto", show_default=True,
              help="auto = bf16 autocast where the hardware has it (CPU AMX, CUDA), else fp32.")
@click.option("--device", default=None, help="cpu or cuda [default: cuda when available].")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Torch CPU threads [default: torch's].")
@tag(None, "Run tag [default: rerank]")
@generator_options
def rerank(out, run_path, topics_path, collection, index_dir, k, model, judge, judge_prompt, batch_size, max_length,
           precision, device, threads, tag, **gen_opts):
    """Rerank the top --k of a run with a cross-encoder (--model) or an LLM judge (--judge); write OUT.

    Documents below k keep their order, below the reranked ones.
    """
    from legalir import trec
    from legalir.search import rerank as rr

    if (model is None) == (judge is None):
        raise click.UsageError("give exactly one of --model (cross-encoder) or --judge (LLM judge)")
    if (collection is None) == (index_dir is None):
        raise click.UsageError("give exactly one of --collection or --index for the document texts")
    if threads:
        import torch

        torch.set_num_threads(threads)
    run = trec.read_run(run_path)
    tops = trec.read_topics(topics_path)
    texts = (rr.collection_texts(collection, run, k=k) if collection else rr.index_texts(index_dir, run, k=k))
    if judge:
        scorer = rr.LLMJudge(make_generator(**gen_opts), scale=judge, prompt=judge_prompt)
    else:
        scorer = rr.CrossEncoderScorer(model, max_length=max_length, batch_size=batch_size, device=device,
                                       precision=precision)
    result = rr.rerank(run, tops, texts, scorer, k=k)
    n = trec.write_run(out, result, tag=tag or "rerank")
    click.echo(f"{out}: {n} lines for {len(result)} topics (top {k} reranked)", err=True)


COMMANDS = [train_ce, expand, rerank]
