"""Scoring: eval (trec_eval-exact), compare (significance tests), report (a dataset's protocol, beside its papers)."""
from __future__ import annotations

import json
import sys

import click

from legalir.commands.options import force_option


@click.command()
@click.argument("dataset")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--qrels", type=click.Path(exists=True, dir_okay=False),
              help="Qrels to score runs against [default: those of the dataset's converted collection "
                   "(collections/DATASET, or $LEGALIR_COLLECTIONS/DATASET) for --split].")
@click.option("--split", default=None,
              help="Topic set whose qrels score the runs [default: the one the run files' names name, e.g. "
                   "bm25.test.trec -> test].")
@click.option("--results-dir", type=click.Path(file_okay=False),
              help="Save each run's scores as <results-dir>/<run name>.json (legalir eval --json -q shape).")
@click.option("--label", "labels", multiple=True, help="Row label per input, in order [default: file name].")
@click.option("--title", default=None, help="Title line above the table.")
@click.option("--by", "by", multiple=True,
              help="Also print per-group means by this topic metadata field, e.g. category, source, state "
                   "(repeatable; needs --topics).")
@click.option("--topics", "topics_path", type=click.Path(exists=True, dir_okay=False),
              help="Topics .jsonl holding the metadata for --by.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False),
              help="Also write one self-contained HTML page (tables, bootstrap intervals, figures, commands).")
@click.option("--figure", "figures", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Extra PNG to embed in the HTML page (e.g. from `legalir analyze lexical`); repeatable.")
@click.option("--bootstrap", default=1000, show_default=True, type=click.IntRange(min=1),
              help="HTML page: bootstrap resamples over topics.")
@click.option("--seed", default=0, show_default=True, help="HTML page: bootstrap seed.")
@force_option("html_out")
def report(dataset, inputs, qrels, split, results_dir, labels, title, by, topics_path, html_out, figures, bootstrap, seed):
    """Score runs with DATASET's own protocol and print them beside the papers' rows.

    INPUTS are TREC runs (scored with the dataset's measures, e.g. judged-only for ACORD,
    against --qrels or the converted collection's) or results .json files saved earlier:

    \b
      legalir report acord runs/acord/bm25.test.trec
    """
    from legalir import report as rep
    from legalir.datasets import dataset_class

    click.echo(rep.render(dataset_class(dataset), inputs, qrels=qrels, results_dir=results_dir, labels=labels,
                          title=title, by=by, topics_path=topics_path, html_out=html_out, figures=figures,
                          bootstrap=bootstrap, seed=seed, command=" ".join(["legalir", *sys.argv[1:]]),
                          split=split))
    if html_out:
        click.echo(f"{html_out}: written", err=True)


def _list_measures(ctx, param, value):
    if not value or ctx.resilient_parsing:
        return
    from legalir.scoring import supported

    click.echo(supported())
    ctx.exit()


@click.command("eval")
@click.argument("qrels", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("run", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE",
              help="Measure, repeatable: a trec_eval spec (map, P.5,10, ndcg_cut.10, ndcg.1=3,2=9, "
                   "utility.1,-1,0,0, 11pt_avg.0.5, rbp.p=0.95, unj.5, recall.100,1000, all_trec, official, set), "
                   "an ir_measures name (nDCG@10, 'P(rel=2)@5', R@100, RR@10, AP, Judged@10, Success@10, Rprec) "
                   "or legalir's own (recip_rank_cut.10, recall_all.10, star3_P.5) "
                   "[default: trec_eval's 'official' set].")
@click.option("--compat", type=click.Choice(["10", "9"]), default="10", show_default=True,
              help="trec_eval version whose semantics apply: 10 (10.0, current) or 9 (9.0.x: pytrec_eval's, "
                   "Pyserini's and most published numbers).")
@click.option("-q", "per_topic", is_flag=True, help="Also print every topic's values (trec_eval -q).")
@click.option("-n", "no_summary", is_flag=True, help="No summary ('all') lines (trec_eval -n).")
@click.option("-c", "complete", is_flag=True,
              help="Average over every qrels topic; topics missing from the run count 0 (trec_eval -c; with "
                   "--compat 10 and -q they get per-topic lines too, as 10.0 prints them).")
@click.option("-J", "judged_only", is_flag=True,
              help="Judged-only: drop run documents without a judgement (no qrels line, or a negative grade) "
                   "before anything is computed, for trec_eval and ir_measures names alike (trec_eval -J).")
@click.option("-l", "relevance_level", type=click.IntRange(min=1), default=1, show_default=True,
              help="Lowest relevance counted as relevant (trec_eval -l).")
@click.option("-M", "max_docs", type=click.IntRange(min=1), default=None,
              help="Only the first N documents of each topic's ranking count (trec_eval -M).")
@click.option("-N", "num_docs", type=click.IntRange(min=0), default=0, show_default=True,
              help="Documents in the collection, for utility's 4th coefficient (trec_eval -N).")
@click.option("--skip-missing", is_flag=True,
              help="Average ir_measures-named measures over the run's topics only (trec_eval's convention) "
                   "instead of counting qrels topics missing from the run as 0 (ir_measures' convention).")
@click.option("--json", "as_json", is_flag=True,
              help='Print {"all": {...}, "per_topic": {...}} (per_topic with -q) instead of trec_eval lines.')
@click.option("--quiet", is_flag=True, help="No topic-coverage notes or warnings on stderr.")
@click.option("--list-measures", is_flag=True, is_eager=True, expose_value=False, callback=_list_measures,
              help="List the supported measures and exit.")
def eval_(qrels, run, measures, compat, per_topic, no_summary, complete, judged_only, relevance_level, max_docs,
          num_docs, skip_missing, as_json, quiet):
    """Score RUN against QRELS exactly as trec_eval 10.0 (or, --compat 9, 9.0.x) would, plus
    ir_measures names and legal IR's own measures. QRELS or RUN may be '-' (standard input).

    \b
    Output: trec_eval's lines (measure, topic or 'all', value), or --json.
    Conventions (details in the README, "Scoring any run"):
    - reading: '#' lines are comments and fields after a run line's sixth are
      ignored (as 10.0); a repeated qrels line is kept once with a warning and
      a score or grade with no number is an error (trec_eval: stops / reads 0).
    - 10.0 stops (exit 4) when a qrels topic is missing from the run and -c is
      not given; legalir evaluates the other topics, as 9.0.x does.
    - 10.0 prints -nan for iprec_at_recall/11pt_avg of an empty ranking (-J);
      legalir prints 0.
    - the same trec_eval measure twice (-m P.5 -m P.10, -m ndcg -m ndcg.1=3):
      legalir computes every cut-off and parameter set asked for; trec_eval
      keeps one. Cut-offs are read as trec_eval reads them (ndcg_cut.23.4 is
      ndcg_cut_23; beyond 2^63-1 it is 2^63-1); 1e2, 0, gain-map levels that
      are not integers and recall levels above 1 are refused.
    - a topic whose grades are all 0 or negative is scored (10.0 does, but
      stops when it is the first topic, and gives it the previous topic's
      ideal_dcg; legalir gives 0).
    - a run and qrels with no topic in common are refused (ir_measures: 0).
    - ir_measures names (nDCG@10, P(rel=2)@5, RR@10, Judged@10): read, checked
      and printed as ir_measures does; values are ir_measures'; a qrels topic
      missing from the run counts 0 (--skip-missing: left out). -J and -M
      apply to them too (-J = judged_only=True for every measure); -l does
      not (write P(rel=2)@5). A bare name trec_eval also has (P, infAP,
      Rprec) is trec_eval's.
    Measures trec_eval lacks: recip_rank_cut.k (MRR@k), recall_all.k (all
    relevant documents in the top k: the lower-bound recall), starK_P.N
    (ACORD's K-star precision@N, stars = relevance + 1; topics with no
    K-star document are left out of its average, also under -c).
    """
    from legalir import scoring
    from legalir.scoring import core

    # the one scoring function (legalir.evaluate's); with no -m, trec_eval's own default set, as trec_eval prints
    result = core.score(qrels, run, list(measures) or None, default=scoring.TREC_EVAL_MEASURES,
                        judged_only=judged_only, complete=complete, relevance_level=relevance_level, version=compat,
                        max_docs=max_docs, num_docs=num_docs, skip_missing=skip_missing)
    if not quiet:
        for note in scoring.coverage_notes(result, complete):
            click.echo(f"eval: {note}", err=True)
    if as_json:
        click.echo(json.dumps(scoring.to_json(result, per_topic, summary=not no_summary), indent=1))
    else:
        click.echo(scoring.format_trec_eval(result, per_topic, summary=not no_summary), nl=False)


@click.command()
@click.argument("qrels", type=click.Path(dir_okay=False))
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE",
              help="Measure to compare, repeatable, as for `legalir eval` [default: map, ndcg_cut.10, the "
                   "default of legalir.compare].")
@click.option("--baseline", default="0", show_default=True,
              help="The run the others are tested against: its position among RUNS (0: the first) or its path.")
@click.option("--test", default="t", show_default=True,
              help="t: paired two-sided t-test; randomization: paired randomization (permutation) test.")
@click.option("--correction", default="holm", show_default=True,
              help="Multiple-comparison correction over the runs compared to the baseline: holm, bonferroni, "
                   "fdr_bh (Benjamini-Hochberg) or none.")
@click.option("--permutations", default=10000, show_default=True, type=int,
              help="Randomization test: random sign vectors (exact enumeration when 2^topics is fewer).")
@click.option("--seed", default=0, show_default=True, type=int,
              help="Seed of the randomization test and the bootstrap (same seed, same numbers).")
@click.option("--alpha", default=0.05, show_default=True, type=float,
              help="Significance level marked with '*' (p-values as corrected).")
@click.option("-J", "judged_only", is_flag=True, help="Judged-only evaluation (as `legalir eval -J`).")
@click.option("-l", "relevance_level", default=1, show_default=True, type=int,
              help="Lowest relevance counted as relevant.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparisons as JSON.")
@click.option("--bootstrap", default=1000, show_default=True, type=int,
              help="Percentile-bootstrap resamples over topics for each mean and each difference vs the baseline "
                   "(seeded by --seed; 0: no intervals).")
@click.option("--level", default=0.95, show_default=True, type=float,
              help="Confidence level of the bootstrap intervals.")
def compare(qrels, runs, measures, baseline, test, correction, permutations, seed, alpha, judged_only,
            relevance_level, as_json, bootstrap, level):
    """Compare RUNS (two or more) on QRELS: each run's mean and its p-value against the baseline (the first).

    The same comparison, with the same defaults, as legalir.compare (paired t-test, Holm's correction,
    alpha 0.05); the arguments are checked by it, with the same messages.
    """
    from legalir.scoring import core, stats

    found = core.compare(list(runs), qrels, list(measures) or None,
                         baseline=int(baseline) if baseline.lstrip("-").isdigit() else baseline,
                         correction=correction, test=test, judged_only=judged_only, relevance_level=relevance_level,
                         alpha=alpha, permutations=permutations, bootstrap=bootstrap, level=level, seed=seed)
    if as_json:
        click.echo(json.dumps([c.to_dict() for c in found.comparisons], indent=1))
    else:
        click.echo(stats.format_comparisons(found.comparisons, found.alpha), nl=False)


COMMANDS = [eval_, compare, report]
