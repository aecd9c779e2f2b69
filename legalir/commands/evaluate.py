"""Scoring: eval (trec_eval-exact), compare (significance tests), report (a dataset's protocol, beside its papers)."""
from __future__ import annotations

import json

import click


@click.command()
@click.argument("dataset")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--qrels", type=click.Path(exists=True, dir_okay=False),
              help="Qrels to score runs against (not needed when INPUTS are results .json files).")
@click.option("--results-dir", type=click.Path(file_okay=False),
              help="Save each run's scores as <results-dir>/<run name>.json (legalir eval --json -q shape).")
@click.option("--label", "labels", multiple=True, help="Row label per input, in order [default: file name].")
@click.option("--title", default=None, help="Title line above the table.")
def report(dataset, inputs, qrels, results_dir, labels, title):
    """Score runs with DATASET's own protocol and print them beside the papers' rows.

    INPUTS are TREC runs (scored against --qrels with the dataset's measures, e.g.
    judged-only for ACORD) or results .json files saved earlier.
    """
    from legalir import report as rep
    from legalir.datasets import dataset_class

    cls = dataset_class(dataset)
    click.echo(rep.table(cls, rep.score_inputs(cls, inputs, qrels, results_dir, labels), title=title))


def _list_measures(ctx, param, value):
    if not value or ctx.resilient_parsing:
        return
    from legalir.evaluate import supported

    click.echo(supported())
    ctx.exit()


@click.command("eval")
@click.argument("qrels", type=click.Path(dir_okay=False))
@click.argument("run", type=click.Path(dir_okay=False))
@click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE",
              help="trec_eval measure spec, repeatable: map, P.5,10, ndcg_cut.10, recall.100,1000, recip_rank, "
                   "success.10, recip_rank_cut.10 (MRR@10), recall_all.10, star3_P.5, all_trec ... "
                   "[default: trec_eval's 'official' set].")
@click.option("-q", "per_topic", is_flag=True, help="Also print every topic's values (trec_eval -q).")
@click.option("-c", "complete", is_flag=True,
              help="Average over every qrels topic; topics missing from the run count 0 (trec_eval -c).")
@click.option("-J", "judged_only", is_flag=True,
              help="Judged-only: drop run documents without a judgement before scoring (trec_eval -J).")
@click.option("-l", "relevance_level", type=click.IntRange(min=1), default=1, show_default=True,
              help="Lowest relevance counted as relevant (trec_eval -l).")
@click.option("--json", "as_json", is_flag=True,
              help='Print {"all": {...}, "per_topic": {...}} (per_topic with -q) instead of trec_eval lines.')
@click.option("--quiet", is_flag=True, help="No topic-coverage notes on stderr.")
@click.option("--list-measures", is_flag=True, is_eager=True, expose_value=False, callback=_list_measures,
              help="List the supported measures and exit.")
def eval_(qrels, run, measures, per_topic, complete, judged_only, relevance_level, as_json, quiet):
    """Score RUN against QRELS, exactly as trec_eval 9 would, plus legal IR's own measures.

    \b
    Output: trec_eval's lines (measure, topic or 'all', value), or --json.
    Measures trec_eval lacks: recip_rank_cut.k (MRR@k), recall_all.k (all
    relevant documents in the top k: the lower-bound recall), starK_P.N
    (ACORD's K-star precision@N, stars = relevance + 1; topics with no
    K-star document are left out of its average, also under -c).
    """
    from legalir import evaluate

    result = evaluate.evaluate_files(qrels, run, list(measures) or None, judged_only=judged_only,
                                     complete=complete, relevance_level=relevance_level)
    if not quiet:
        for note in evaluate.coverage_notes(result, complete):
            click.echo(f"eval: {note}", err=True)
    if as_json:
        click.echo(json.dumps(evaluate.to_json(result, per_topic), indent=1))
    else:
        click.echo(evaluate.format_trec_eval(result, per_topic), nl=False)


@click.command()
@click.argument("qrels", type=click.Path(dir_okay=False))
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE",
              help="Measure to compare, repeatable, as for `legalir eval` [default: map, ndcg_cut.10].")
@click.option("--test", type=click.Choice(["t", "randomization"]), default="t", show_default=True,
              help="Paired two-sided t-test, or paired randomization (permutation) test.")
@click.option("--correction", type=click.Choice(["none", "bonferroni", "holm"]), default="none",
              show_default=True, help="Multiple-comparison correction over the runs compared to the first.")
@click.option("--permutations", default=10000, show_default=True, type=click.IntRange(min=1),
              help="Randomization test: random sign vectors (exact enumeration when 2^topics is fewer).")
@click.option("--seed", default=0, show_default=True, help="Randomization test seed (same seed, same p-values).")
@click.option("--alpha", default=0.05, show_default=True, help="Significance level marked with '*'.")
@click.option("-J", "judged_only", is_flag=True, help="Judged-only evaluation (as `legalir eval -J`).")
@click.option("-l", "relevance_level", type=click.IntRange(min=1), default=1, show_default=True,
              help="Lowest relevance counted as relevant.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparisons as JSON.")
def compare(qrels, runs, measures, test, correction, permutations, seed, alpha, judged_only, relevance_level,
            as_json):
    """Compare RUNS (two or more) on QRELS: each run's mean and its p-value against the first run."""
    from legalir import evaluate, trec
    from legalir.evaluate import stats

    if len(runs) < 2:
        raise click.UsageError("compare needs at least two runs")
    ms = evaluate.parse_measures(list(measures) or ["map", "ndcg_cut.10"])
    names = stats.comparable_names(ms)
    q = trec.read_qrels(qrels)
    per_topic = [evaluate.evaluate(q, trec.read_run(r), ms, judged_only=judged_only,
                                   relevance_level=relevance_level)["per_topic"] for r in runs]
    comps = stats.compare(per_topic, runs, names, test=test, correction=correction,
                          permutations=permutations, seed=seed)
    if as_json:
        click.echo(json.dumps([c.to_dict() for c in comps], indent=1))
    else:
        click.echo(stats.format_comparisons(comps, alpha), nl=False)


COMMANDS = [eval_, compare, report]
