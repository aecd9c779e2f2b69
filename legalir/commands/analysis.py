"""Beyond retrieval scores: downstream QA (qa, qa-report), analyses (analyze lexical), regressions (regress)."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from legalir.commands.options import force_option, generator_options, make_generator
from legalir.errors import read_json


# ------------------------------------------------------------------ downstream QA (legalir.search.qa)
@click.command()
@click.argument("dataset", type=click.Choice(["barexam_qa", "housing_qa"]))
@click.argument("predictions", type=click.Path(dir_okay=False))
@click.option("--data-dir", default="data", show_default=True, type=click.Path(file_okay=False),
              help="Folder holding <dataset>/ in its published layout (questions, choices, answers).")
@click.option("--split", default="test", show_default=True, help="Question split (Housing: test = all labelled).")
@click.option("--condition", type=click.Choice(["none", "top1", "topk", "expansion", "gold"]), default="none",
              show_default=True, help="Passage given with each question: none, the run's top 1, its top k (most "
                                      "confident answer kept), a generated expansion, the gold passage(s).")
@click.option("--run", "run_path", type=click.Path(exists=True, dir_okay=False), help="top1/topk: retrieval run.")
@click.option("--collection", type=click.Path(exists=True, file_okay=False),
              help="top1/topk/gold: collection holding the passage texts (and the qrels for gold).")
@click.option("-k", "--k", "k", default=5, show_default=True, help="topk: passages tried per question.")
@click.option("--expansion", "expansion_path", type=click.Path(exists=True, dir_okay=False),
              help="expansion: `legalir expand` output topics (.jsonl) or generations JSONL {qid, text}.")
@click.option("--prompt", "prompt_name", default=None,
              help="QA prompt: built-in name or .toml file [default: qa_barexam / qa_housing].")
@click.option("--results", "results_path", type=click.Path(dir_okay=False),
              help="Accuracy JSON (results/ shape) [default: PREDICTIONS with .json].")
@click.option("--batch-size", default=8, show_default=True, help="local: sequences per forward pass.")
@click.option("--device", default=None, help="local: cpu or cuda [default: cuda when available].")
@click.option("--bootstrap", default=1000, show_default=True, type=click.IntRange(min=1),
              help="Bootstrap resamples for the accuracy interval.")
@click.option("--seed", default=0, show_default=True, help="Bootstrap seed.")
@generator_options
@force_option("predictions", "results_path")
def qa(dataset, predictions, data_dir, split, condition, run_path, collection, k, expansion_path, prompt_name,
       results_path, batch_size, device, bootstrap, seed, **gen_opts):
    """Answer DATASET's questions with an LLM under a retrieval condition; write PREDICTIONS (JSONL) and accuracy.

    --backend local scores the answer labels by likelihood (no generation); --backend api / precomputed
    parse free-text answers (refusals and unreadable answers count as wrong and are reported).
    """
    from legalir.search import qa as qa_mod

    answerer = (qa_mod.LikelihoodAnswerer(gen_opts["llm_model"] or "", device=device, batch_size=batch_size,
                                          cache=False if gen_opts["no_cache"] else (gen_opts["cache_dir"] or True))
                if gen_opts["backend"] == "local" else qa_mod.ChatAnswerer(make_generator(**gen_opts)))
    result = qa_mod.run(dataset, data_dir, split, condition, answerer, predictions, results_path,
                        prompt=prompt_name, run_path=run_path, collection=collection, k=k,
                        expansion_path=expansion_path, bootstrap=bootstrap, seed=seed,
                        command=" ".join(["legalir", *sys.argv[1:]]))
    click.echo(qa_mod.summary_line(result))


@click.command("qa-report")
@click.argument("dataset", type=click.Choice(["barexam_qa", "housing_qa"]))
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--label", "labels", multiple=True, help="Row label per results file [default: file name].")
def qa_report(dataset, results, labels):
    """Print QA accuracies (RESULTS from `legalir qa`) beside the paper's Llama 3 8B rows."""
    from legalir.search import qa as qa_mod

    if labels and len(labels) != len(results):
        raise click.BadParameter(f"{len(labels)} labels for {len(results)} results", param_hint="--label")
    rows = [(labels[i] if labels else Path(p).stem, read_json(p, "QA results file")) for i, p in enumerate(results)]
    click.echo(qa_mod.table(dataset, rows))


# ------------------------------------------------------------------ analyses (legalir.analyze)
def _labelled(ctx, param, value):
    """LABEL=PATH (or PATH: labelled by its file or folder name)."""
    out = []
    for v in value:
        label, _, path = v.rpartition("=") if "=" in v else ("", "", v)
        out.append((label or Path(path).name.removesuffix(".trec"), path))
    return out


@click.group()
def analyze():
    """Analyses beyond retrieval scores (lexical similarity, citations)."""


@analyze.command("lexical")
@click.argument("inputs", nargs=-1, required=True, callback=_labelled, metavar="[LABEL=]COLLECTION...")
@click.option("--topics", "topic_set", default="test", show_default=True, help="Topic set (and its qrels).")
@click.option("-l", "--level", default=1, show_default=True, help="Lowest qrels relevance counted as gold.")
@click.option("--by", default=None, help="Split each collection into subsets by this topic metadata field.")
@click.option("--run", "runs", multiple=True, callback=_labelled, metavar="[LABEL=]RUN",
              help="Run of the first collection for the bucket plot (repeatable).")
@click.option("--measure", default="recall.10", show_default=True, help="Per-topic measure of the bucket plot.")
@click.option("-J", "judged_only", is_flag=True, help="Judged-only scoring of the runs (ACORD).")
@click.option("--fit", type=click.Choice(["pairs", "corpus"]), default="pairs", show_default=True,
              help="Fit TF-IDF on the compared texts of each sample, or on the whole corpus.")
@click.option("--agg", type=click.Choice(["max", "mean"]), default="max", show_default=True,
              help="A query with several gold documents: its most similar one, or the mean.")
@click.option("--answers-from", "answers_dataset", type=click.Choice(["barexam_qa", "housing_qa"]), default=None,
              help="(gold, answer) similarity for the first collection: answers from this dataset's files.")
@click.option("--answer-field", default=None, help="Or: topic metadata field holding the answer text.")
@click.option("--data-dir", default="data", show_default=True, type=click.Path(file_okay=False),
              help="Folder of the published files (for --answers-from).")
@click.option("--width", default=0.1, show_default=True, help="Similarity bucket width.")
@click.option("--bootstrap", default=1000, show_default=True, type=click.IntRange(min=1), help="Bootstrap resamples.")
@click.option("--seed", default=0, show_default=True, help="Bootstrap seed.")
@click.option("--out-dir", type=click.Path(file_okay=False), help="Write lexical.json and the figures (PNG, SVG).")
def analyze_lexical(inputs, topic_set, level, by, runs, measure, judged_only, fit, agg, answers_dataset, answer_field,
                    data_dir, width, bootstrap, seed, out_dir):
    """TF-IDF cosine of (query, gold) and (gold, answer) per topic: means with CIs, KS and Welch tests between
    collections or subsets, histograms, and a retrieval measure per similarity bucket (--run)."""
    from legalir.analyze import lexical

    result = lexical.run_analysis(inputs, topic_set=topic_set, level=level, by=by, runs=runs, measure=measure,
                                  judged_only=judged_only, fit=fit, agg=agg, answers_dataset=answers_dataset,
                                  answer_field=answer_field, data_dir=data_dir, width=width, bootstrap=bootstrap,
                                  seed=seed, out_dir=out_dir)
    click.echo(lexical.format_analysis(result))


@analyze.command("citations")
@click.argument("dataset")
@click.option("--topics", "topic_set", default=None, help="Topic set (and its qrels) [default: the dataset's].")
@click.option("--run", "runs", multiple=True, callback=_labelled, metavar="[LABEL=]RUN",
              help="Run to score, split by topics with and without citations (repeatable).")
@click.option("--measure", default=None,
              help="Measure, as trec_eval names it (success.1, recip_rank_cut.10, ndcg_cut.10) [default: the "
                   "dataset's headline measure, else its first].")
def analyze_citations(dataset, topic_set, runs, measure):
    """How many topics and gold documents of DATASET (a name or a collection folder) carry citations, and
    each run's measure over topics with and without citations."""
    from legalir.analyze import citing

    click.echo(citing.format_report(citing.analyze(dataset, runs, topic_set=topic_set, measure=measure)))


# ------------------------------------------------------------------ regressions (legalir.scoring.regress)
@click.command()
@click.argument("dataset")
@click.option("--all", "all_tiers", is_flag=True, help="Also run the slow tier (e.g. dense encoding).")
@click.option("--root", default=".", show_default=True, type=click.Path(file_okay=False),
              help="Folder holding collections/, indexes/, runs/ (the Makefile's layout); outputs land there.")
@click.option("--data-dir", default="data", show_default=True,
              help="Folder of the published files (relative to --root, or absolute).")
def regress(dataset, all_tiers, root, data_dir):
    """Rerun DATASET's published pipelines (resources/regressions/DATASET.toml); OK / off by / FAIL per number.

    Exit status 1 when a number FAILs."""
    from legalir.scoring import regress as rg

    spec = rg.load(dataset)
    Path(root).mkdir(parents=True, exist_ok=True)
    from legalir.cli import main

    rows, ok = rg.regress(spec, root=root, data_dir=data_dir, all_tiers=all_tiers,
                          invoke=lambda args: main.main(args, standalone_mode=False),
                          log=lambda m: click.echo(m, err=True))
    click.echo(rg.format_rows(rows))
    click.echo(f"{dataset}: {'all OK' if ok else 'FAILED'} ({sum(r['verdict'] == 'OK' for r in rows)} of "
               f"{len(rows)} numbers OK)")
    if not ok:
        sys.exit(1)


COMMANDS = [qa, qa_report, analyze, regress]
