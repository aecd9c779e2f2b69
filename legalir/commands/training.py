"""Models and LLMs: fine-tune a cross-encoder (train-ce), train a dense retriever on cross-references (train-dense), expand queries (expand), rerank runs (rerank)."""
from __future__ import annotations

import sys

import click

from legalir.commands.options import (
    DEPTH,
    float_list,
    force_option,
    generator_options,
    int_list,
    make_generator,
    tag,
    unescape,
)


@click.command("train-ce")
@click.argument("collection", type=click.Path(exists=True, file_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--valid-run", "valid_runs", required=True, multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="First-stage run(s) of the validation topics; each one's top --valid-depth is reranked and "
                   "the validation score is the mean over the runs (repeatable).")
@click.option("--also", "also", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Another collection trained on and validated with COLLECTION (e.g. the statute codes of a "
                   "model, issue 40): ids must be distinct; --valid-run and --negatives-run then hold the topics "
                   "of all of them (repeatable).")
@click.option("--train-topics", "train_sets", multiple=True, default=("train",), show_default=True,
              help="Training topic set; repeat for several wordings of it (train, train.medium, train.long).")
@click.option("--valid-topics", "valid_set", default="valid", show_default=True, help="Validation topic set.")
@click.option("--base-model", default="minilm", show_default=True,
              help="Encoder to start from: a model folder, 'minilm' (bundled all-MiniLM-L6-v2), or a Hub name.")
@click.option("--lr", "learning_rates", multiple=True, callback=float_list, default=("5e-4", "1e-3"),
              show_default=True, help="Learning rate(s) of the grid (repeatable or comma-separated); the default is "
                                      "what learned on ACORD from the same start (2e-5 and 5e-5 did not learn).")
@click.option("--checkpoints", default="250,500,1000", show_default=True, callback=int_list,
              help="Numbers of updates at which each run is validated; the largest is the run's length.")
@click.option("--seed", "seeds", default="42", show_default=True, callback=int_list,
              help="Seed(s) of the grid (comma-separated): a (lr, updates) is scored by its mean over seeds.")
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
@click.option("--judged-only/--every-candidate", default=True, show_default=True,
              help="Validation scored judged-only (graded qrels, ACORD), or over every candidate, an unjudged "
                   "one non-relevant (qrels of relevant documents only, e.g. the statutes' cross-references).")
@click.option("--negatives-run", "negative_runs", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A first-stage run of the training topics: its unjudged top --negatives-depth documents are "
                   "grade-0 training pairs (hard negatives; repeatable).")
@click.option("--negatives-depth", default=0, show_default=True, type=click.IntRange(min=0),
              help="Hard negatives per training topic and run (0: none).")
@click.option("--measure", default="ndcg_cut_10", show_default=True,
              help="Validation measure, judged-only: one value, ndcg_cut_10 or ndcg_cut.10.")
@click.option("--doc-text", default="{contents}", show_default=True,
              help="The text the model reads for a document, from its record's fields (\\n: a newline), e.g. a "
                   "statute's '{citation} {title}\\n{heading_path}\\n{contents}' (its number and headings); "
                   "recorded in legalir-train.json.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Torch CPU threads per process [default: torch's].")
@click.option("--jobs", default=1, show_default=True, type=click.IntRange(min=1),
              help="Grid cells (lr, seed) trained at the same time, in separate processes (one GPU holds several).")
@click.option("--save-every", default=100, show_default=True, type=click.IntRange(min=1),
              help="Save the resumable state every this many updates (and at every checkpoint).")
@click.option("--work-dir", type=click.Path(file_okay=False), help="Resumable state [default: OUT_DIR.work].")
@click.option("--stop-after", type=click.IntRange(min=1), default=None,
              help="Stop at the first save after this many updates (state kept); run again to resume.")
@click.option("--stop-after-minutes", type=click.FloatRange(min=0), default=None,
              help="Stop at the first save after this many minutes of the command (state kept); run again to "
                   "resume: a long training in bounded sittings, with the model it would end with anyway.")
def train_ce(collection, out_dir, valid_runs, also, train_sets, valid_set, base_model, learning_rates, checkpoints, seeds,
             batch_size, max_length, weight_decay, warmup_ratio, attention_dropout, precision, head_lr_multiplier,
             valid_depth, judged_only, negative_runs, negatives_depth, measure, doc_text, threads, jobs, save_every,
             work_dir, stop_after, stop_after_minutes):
    """Fine-tune a cross-encoder on COLLECTION's training qrels (ACORD recipe); save the best to OUT_DIR.

    Relevance levels are oversampled to equal frequency, targets are rel/max_rel,
    the loss is binary cross-entropy. Each (learning rate, seed) run is validated
    at each checkpoint (judged-only, reranking each --valid-run's top --valid-depth);
    the (learning rate, updates) with the best mean over seeds is kept, with its
    best seed, and saved with legalir-train.json. Killed or stopped, the same
    command resumes from the last save and gives the same model. Test topic sets are refused.
    """
    from legalir.search import finetune

    cfg = finetune.TrainConfig(base_model=base_model, learning_rates=list(learning_rates),
                               checkpoints=sorted(set(checkpoints)), seeds=list(seeds), batch_size=batch_size,
                               max_length=max_length, weight_decay=weight_decay, warmup_ratio=warmup_ratio,
                               attention_dropout=attention_dropout, precision=precision,
                               head_lr_multiplier=head_lr_multiplier, valid_depth=valid_depth, measure=measure,
                               judged_only=judged_only, negatives_depth=negatives_depth,
                               threads=threads, jobs=jobs, save_every=save_every)
    finetune.train_collection(cfg, [collection, *also], out_dir, valid_runs, train_sets, valid_set, work_dir,
                              stop_after=finetune.Pause.after(stop_after, stop_after_minutes),
                              command=" ".join(["legalir", *sys.argv[1:]]),
                              negative_runs=negative_runs, doc_text=unescape(doc_text))


@click.command("train-dense")
@click.option("--from-links", "collections_", required=True, multiple=True,
              type=click.Path(exists=True, file_okay=False),
              help="A statutes collection (legalir convert statutes) whose cross-references train: its train and "
                   "train.masked topics are the pairs, its valid topics select; its test topics are never read "
                   "(repeatable).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="The model folder to write (Hugging Face layout, read by `legalir encode --encoder`), with "
                   "model_card.json and model_card.md.")
@click.option("--index", "indexes", multiple=True, metavar="COLLECTION=INDEX",
              help="The BM25 index of a --from-links collection, for its hard negatives (checked to be built "
                   "from it) [default: one is built under the work folder].")
@click.option("--runs", "run_folders", multiple=True, metavar="COLLECTION=FOLDER",
              help="Or BM25 runs already made of a --from-links collection (FOLDER/bm25-off.<set>.trec of train, "
                   "train.masked, valid.masked, valid; citations off), for its hard negatives where no Lucene runs "
                   "(a GPU machine); a run of another topic set is refused.")
@click.option("--base-model", default="minilm", show_default=True,
              help="Encoder to start from: a model folder, 'minilm' (bundled all-MiniLM-L6-v2), or a Hub name.")
@click.option("--train-topics", "wordings", multiple=True, default=("train", "train.masked"), show_default=True,
              help="Training topic sets (wordings of train).")
@click.option("--lr", "learning_rate", default=2e-5, show_default=True, type=float, help="Learning rate.")
@click.option("--steps", default=300, show_default=True, type=click.IntRange(min=1), help="Updates.")
@click.option("--batch-size", default=32, show_default=True, type=click.IntRange(min=1),
              help="Pairs per update (each paragraph's in-batch negatives are the others' sections).")
@click.option("--hard-negatives", default=1, show_default=True, type=click.IntRange(min=0),
              help="BM25 negatives per pair and update.")
@click.option("--negatives-depth", default=20, show_default=True, type=click.IntRange(min=1),
              help="Hard negatives are drawn from BM25's top this many (citations off).")
@click.option("--scale", default=20.0, show_default=True, type=float, help="Cosine similarity x this = the logits.")
@click.option("--weight-decay", default=0.01, show_default=True)
@click.option("--warmup-ratio", default=0.1, show_default=True)
@click.option("--query-max-length", default=128, show_default=True, type=click.IntRange(min=8))
@click.option("--doc-max-length", default=256, show_default=True, type=click.IntRange(min=8))
@click.option("--doc-text", default="{citation} {title}\\n{heading_path}\\n{contents}", show_default=True,
              help="The text the model reads for a section, from its record's fields (\\n: a newline); the model "
                   "folder records it and `legalir encode` uses it.")
@click.option("--seed", default=42, show_default=True, type=int)
@click.option("--eval-every", default=100, show_default=True, type=click.IntRange(min=1),
              help="Validate (and keep the best weights) every this many steps, and at step 0.")
@click.option("--valid-topics", default=100, show_default=True, type=click.IntRange(min=0),
              help="Validation topics per collection (a seeded sample; 0: all).")
@click.option("--valid-depth", default=20, show_default=True, type=click.IntRange(min=1),
              help="BM25's top this many per validation topic join the validation pool.")
@click.option("--select-on", type=click.Choice(["valid.masked", "valid"]), default="valid.masked", show_default=True)
@click.option("--precision", type=click.Choice(["auto", "fp32", "bf16"]), default="auto", show_default=True,
              help="auto = bf16 autocast where the hardware has it (CPU AMX, CUDA), else fp32.")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Torch CPU threads [default: torch's].")
@click.option("--save-every", default=25, show_default=True, type=click.IntRange(min=1),
              help="Save the resumable state every this many steps (and at each validation).")
@click.option("--work-dir", type=click.Path(file_okay=False), help="Resumable state [default: OUT.work].")
@click.option("--stop-after", type=click.IntRange(min=1), default=None,
              help="Stop at the first save after this many steps (state kept); run again to resume.")
@click.option("--stop-after-minutes", type=click.FloatRange(min=0), default=None,
              help="Stop at the first save after this many minutes of the command (state kept); run again to "
                   "resume: a long training in bounded sittings, with the model it would end with anyway.")
def train_dense(collections_, out_dir, indexes, run_folders, base_model, wordings, learning_rate, steps, batch_size,
                hard_negatives, negatives_depth, scale, weight_decay, warmup_ratio, query_max_length, doc_max_length,
                doc_text, seed, eval_every, valid_topics, valid_depth, select_on, precision, threads, save_every,
                work_dir, stop_after, stop_after_minutes):
    """Train a dense retriever on statute codes' own cross-references; save the selected model to --out.

    Pairs are (paragraph, the section it links), as written and with the citation masked; negatives are the
    batch's other sections and BM25's top sections for the paragraph. Validated on the valid topics every
    --eval-every steps; the best step is kept, with a model card (data, protocol, hyperparameters, time,
    device). Killed or stopped, the same command resumes from the last save and gives the same model.
    """
    from legalir.search import finetune
    from legalir.search import train_dense as td

    def pairs_of(items, what, hint):
        out = {}
        for item in items:
            coll, sep, value = item.partition("=")
            if not sep or not coll or not value:
                raise click.BadParameter(f"{item!r}: write COLLECTION={what}", param_hint=hint)
            out[coll] = value
        return out

    pairs = pairs_of(indexes, "INDEX", "--index")
    folders = pairs_of(run_folders, "FOLDER", "--runs")
    cfg = td.DenseConfig(base_model=base_model, learning_rate=learning_rate, steps=steps, batch_size=batch_size,
                         hard_negatives=hard_negatives, negatives_depth=negatives_depth, scale=scale,
                         weight_decay=weight_decay, warmup_ratio=warmup_ratio, query_max_length=query_max_length,
                         doc_max_length=doc_max_length, seed=seed, eval_every=eval_every, valid_topics=valid_topics,
                         valid_depth=valid_depth, select_on=select_on, save_every=save_every, threads=threads,
                         precision=precision, doc_text=unescape(doc_text), wordings=tuple(wordings))
    card = td.train(collections_, out_dir, cfg, indexes=pairs, runs=folders, work_dir=work_dir,
                    stop_after=finetune.Pause.after(stop_after, stop_after_minutes),
                    command=" ".join(["legalir", *sys.argv[1:]]))
    if card.get("stopped"):
        click.echo(f"train-dense: stopped at step {card['step']}; run the same command again to resume", err=True)
    else:
        click.echo(f"{out_dir}: step {card['selected']['step']} selected; model card {out_dir}/{td.CARD_MD}", err=True)


@click.command()
@click.argument("topics", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
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
@force_option("out", "save_generations")
def expand(topics, out, method, join, repeat, save_generations, **gen_opts):
    """Expand TOPICS (.tsv/.jsonl; - reads standard input) with an LLM; write OUT (.jsonl keeps metadata, or .tsv).

    OUT is an ordinary topics file: `legalir search` (and dense search) run on it unchanged.
    """
    from legalir import trec
    from legalir.datasets import generate
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
@click.option("--run", "run_path", required=True, type=click.Path(exists=True, dir_okay=False, allow_dash=True),
              help="First-stage TREC run to rerank (- reads standard input).")
@click.option("--topics", "topics_path", required=True, type=click.Path(exists=True, dir_okay=False, allow_dash=True),
              help="Topics (.tsv/.jsonl; - reads standard input) holding the queries of the run's topics.")
@click.option("--collection", type=click.Path(exists=True, file_okay=False),
              help="Collection folder: document texts from its JSONL corpus.")
@click.option("--index", "index_dir", type=click.Path(exists=True, file_okay=False),
              help="Or a Lucene index: document texts from its stored raw JSON.")
@click.option("-k", "--k", "k", default=100, show_default=True, type=DEPTH, help="Rerank each topic's top k.")
@click.option("--method", type=click.Choice(["cross-encoder", "pointwise", "listwise", "pairwise"]), default=None,
              help="cross-encoder (--model); pointwise LLM judge (1-5 grade = score, first-stage score breaks "
                   "ties); listwise (RankGPT sliding window); pairwise (PRP). [default: cross-encoder with "
                   "--model, pointwise with --judge]")
@click.option("--model", default=None,
              help="Cross-encoder: model folder (e.g. models/acord-ce), 'minilm', or a Hub name.")
@click.option("--judge", type=click.Choice(["graded", "binary"]), default=None,
              help="Pointwise judge scale: 1-5 grade (the ACORD paper's) or yes/no.")
@click.option("--prompt", "--judge-prompt", "prompt", type=click.Path(exists=True, dir_okay=False),
              help="LLM prompt .toml [default: judge-graded / judge-binary, judge-listwise, judge-pairwise].")
@click.option("--window", default=20, show_default=True, type=click.IntRange(min=2), help="listwise: documents per window.")
@click.option("--step", default=10, show_default=True, type=click.IntRange(min=1),
              help="listwise: how far the window moves up each time.")
@click.option("--passes", type=click.IntRange(min=1), default=None,
              help="listwise: sliding-window passes [default: 1]; pairwise sliding: bubble passes = the exact "
                   "top K [default: 10].")
@click.option("--pairwise", type=click.Choice(["allpairs", "sliding"]), default="allpairs", show_default=True,
              help="pairwise: every pair in both orders (k(k-1) requests), or PRP-Sliding-K.")
@click.option("--max-words", default=300, show_default=True, type=click.IntRange(min=1),
              help="listwise/pairwise: words kept per document.")
@click.option("--save-generations", type=click.Path(dir_okay=False),
              help="LLM methods: also write every answer as JSONL, replayable with --backend precomputed.")
@click.option("--batch-size", default=32, show_default=True, type=click.IntRange(min=1), help="Pairs per forward pass.")
@click.option("--max-length", type=click.IntRange(min=8), default=None,
              help="Cross-encoder tokens per pair [default: the model's].")
@click.option("--precision", type=click.Choice(["auto", "fp32", "bf16"]), default="auto", show_default=True,
              help="auto = bf16 autocast where the hardware has it (CPU AMX, CUDA), else fp32.")
@click.option("--device", default=None, help="cpu or cuda [default: cuda when available].")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Torch CPU threads [default: torch's].")
@click.option("--doc-text", default=None,
              help="The text read for a document, from its record's fields (\\n: a newline), e.g. "
                   "'{citation} {title}\\n{heading_path}\\n{contents}'. [default: the one a model trained by "
                   "`legalir train-ce --doc-text` was trained on (legalir-train.json), else {contents}]")
@tag(None, "Run tag [default: rerank]")
@generator_options
@force_option("out", "save_generations")
def rerank(out, run_path, topics_path, collection, index_dir, k, method, model, judge, prompt, window, step, passes,
           pairwise, max_words, save_generations, batch_size, max_length, precision, device, threads, doc_text, tag,
           **gen_opts):
    """Rerank the top --k of a run with a cross-encoder or an LLM (pointwise, listwise, pairwise); write OUT.

    Documents below k keep their order, below the reranked ones. A cross-encoder
    trained by `legalir train-ce --doc-text` reads documents as it was trained to
    (its number and headings before a statute's text). LLM methods use the
    generator options (any backend; answers cached on disk).
    """
    from legalir.search import rerank as rr

    click.echo(rr.rerank_files(
        out, run_path, topics_path, method=method, collection=collection, index_dir=index_dir, k=k, model=model,
        judge=judge, prompt=prompt, make_generator=lambda: make_generator(**gen_opts), window=window, step=step,
        passes=passes, pairwise=pairwise, max_words=max_words, batch_size=batch_size, max_length=max_length,
        precision=precision, device=device, threads=threads, tag=tag, save_generations=save_generations,
        doc_text=None if doc_text is None else unescape(doc_text)), err=True)


COMMANDS = [train_ce, train_dense, expand, rerank]
