"""legalir eval == trec_eval 9.0.4, byte for byte, on generated qrels and runs.

The real trec_eval binary (from the Anserini jar) and legalir score the same
two files; the outputs must be identical text: same lines, same order, same
padding, same 4-decimal values. The generated files have graded and negative
relevance, ties in scores, padded whitespace and tabs, CRLF, blank lines,
topics missing on either side, documents in the run but not in the qrels,
and topic ids whose byte order differs from their numeric order.

One documented difference is allowed: trec_eval prints ``-nan`` for
``iprec_at_recall_*`` and ``11pt_avg`` when -J leaves a topic with no
document; legalir reports 0 there (an empty ranking has precision 0).
"""
from __future__ import annotations

import math
import random
import subprocess

import pytest

from legalir import evaluate, trec

SEEDS = range(100)

# every trec_eval measure legalir names: all_trec (its 33 summary measures and
# relstring), and parameterised spellings of every family that takes parameters
MEASURE_SETS = {
    "all_trec": ["all_trec"],
    "params": ["P.1,3,7", "recall.2,50", "ndcg_cut.3,12", "map_cut.4", "success.2,3", "relative_P.2",
               "iprec_at_recall.0.25,0.5", "Rprec_mult.0.5,1.5", "relstring.4", "num_q", "runid"],
}

FLAGS = [[], ["-q"], ["-c"], ["-q", "-c"], ["-J", "-q"], ["-J", "-c", "-q"], ["-l2", "-q"], ["-l3", "-c", "-J"]]


def generate(seed: int, qrels_path, run_path) -> None:
    rng = random.Random(seed)
    stems = ["1", "2", "10", "100", "a", "B", "q_7", "Z"]
    topics = list(dict.fromkeys(rng.choice(stems) + "-" + str(i) for i in range(rng.randint(1, 10))))
    topics += ["2", "10"][: rng.randint(0, 2)]  # byte order != numeric order
    docs = [f"d{j}" for j in range(30)] + ["D1", "d-x", "Z9", "doc.7"]
    ql, rl = [], []
    for t in topics:
        if rng.random() < 0.85:  # some run topics have no qrels
            for d in rng.sample(docs, rng.randint(0, 12)):
                ql.append(f"{t} 0 {d} {rng.choice([0, 0, 1, 1, 2, 3, 4, -1])}")
            # trec_eval cannot evaluate a topic whose judgements are all negative
            ql.append(f"{t} 0 judged-{t} {rng.choice([0, 1, 2])}")
        if rng.random() < 0.85:  # some qrels topics have no run
            for i, d in enumerate(rng.sample(docs, rng.randint(1, 25))):
                score = rng.choice([1.0, 2.0, 0.5, 7, 1e-3, round(rng.uniform(-3, 3), rng.choice([1, 3, 6]))])
                sep = lambda: rng.choice([" ", "  ", "\t", " \t "])
                rl.append(f"{t}{sep()}Q0{sep()}{d}{sep()}{i + 1}{sep()}{score}{sep()}tag{rng.randint(0, 2)}")
    if not ql:
        ql.append(f"{topics[0]} 0 d0 1")
    if not rl or not {l.split()[0] for l in rl} & {l.split()[0] for l in ql}:
        rl.append(f"{ql[0].split()[0]} Q0 d1 1 0.25 tag")
    rng.shuffle(ql)
    rng.shuffle(rl)
    if seed % 4 == 0:
        rl.insert(rng.randint(0, len(rl)), "   ")
    eol = "\r\n" if seed % 7 == 3 else "\n"
    qrels_path.write_text(eol.join(ql) + eol)
    run_path.write_text(eol.join("  " + l if rng.random() < 0.1 else l for l in rl) + eol)


def parse(text: str) -> list[tuple[str, str, str]]:
    return [tuple(x.strip() for x in line.split("\t")) for line in text.splitlines()]


def check_same(ours: str, ref: str, context: str) -> None:
    if "nan" not in ref:
        assert ours == ref, f"{context}\n--- trec_eval\n{ref}\n--- legalir\n{ours}"
        return
    a, b = parse(ours), parse(ref)
    assert [x[:2] for x in a] == [x[:2] for x in b], context
    for (name, qid, mine), (_, _, theirs) in zip(a, b):
        if "nan" in theirs:
            if qid != "all":
                assert mine == "0.0000", (context, name, qid)
            else:
                assert math.isfinite(float(mine)), (context, name)
        else:
            assert mine == theirs, (context, name, qid, mine, theirs)
    # apart from the -nan values, the lines are byte-identical (names, padding, order)
    nan_free = lambda text: [l for l in text.splitlines() if "nan" not in l]
    kept = {tuple(l.split("\t")[:2]) for l in nan_free(ref)}
    assert [l for l in ours.splitlines() if tuple(l.split("\t")[:2]) in kept] == nan_free(ref), context


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("parity")
    out = []
    for seed in SEEDS:
        q, r = root / f"{seed}.qrels", root / f"{seed}.run"
        generate(seed, q, r)
        out.append((seed, q, r))
    return out


def run_trec_eval(binary, flags, measures, q, r) -> str:
    args = [binary, *flags, *[x for m in measures for x in ("-m", m)], str(q), str(r)]
    proc = subprocess.run(args, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: "".join(f) or "plain")
@pytest.mark.parametrize("set_name", list(MEASURE_SETS))
def test_parity_with_trec_eval(trec_eval_bin, generated, flags, set_name):
    measures = MEASURE_SETS[set_name]
    level = next((int(f[2:]) for f in flags if f.startswith("-l")), 1)
    for seed, q, r in generated:
        ref = run_trec_eval(trec_eval_bin, flags, measures, q, r)
        res = evaluate.evaluate_files(q, r, measures, judged_only="-J" in flags, complete="-c" in flags,
                                      relevance_level=level)
        ours = evaluate.format_trec_eval(res, per_topic="-q" in flags)
        check_same(ours, ref, f"seed {seed}, flags {flags}, measures {measures}")


def test_default_measures_are_trec_eval_defaults(trec_eval_bin, generated):
    """No -m: trec_eval's 'official' set, in its layout."""
    for seed, q, r in generated[:10]:
        ref = run_trec_eval(trec_eval_bin, [], [], q, r)
        assert evaluate.format_trec_eval(evaluate.evaluate_files(q, r)) == ref


def test_cli_output_is_trec_eval_output(trec_eval_bin, generated):
    from click.testing import CliRunner

    from legalir.cli import main

    seed, q, r = generated[1]
    args = ["-q", "-c", "-m", "ndcg_cut.5,10", "-m", "map", "-m", "recip_rank", "-m", "success.10",
            "-m", "recall.100,1000", "-m", "P.5,10"]
    ref = run_trec_eval(trec_eval_bin, [a for a in args if a in ("-q", "-c")],
                        [a for i, a in enumerate(args) if i and args[i - 1] == "-m"], q, r)
    res = CliRunner().invoke(main, ["eval", *args, str(q), str(r)])
    assert res.exit_code == 0, res.output
    assert res.stdout == ref


def test_judged_only_empty_ranking_reports_zero_not_nan(trec_eval_bin, tmp_path):
    """-J leaving a topic with no document: trec_eval prints -nan, legalir 0; every other value agrees."""
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("1 0 a 1\n1 0 b 0\n2 0 c 1\n")
    r.write_text("1 Q0 a 1 3 t\n1 Q0 z 2 2 t\n2 Q0 y 1 1 t\n")
    ref = run_trec_eval(trec_eval_bin, ["-J", "-q"], ["all_trec"], q, r)
    assert "-nan" in ref  # the trec_eval behaviour this test is about
    res = evaluate.evaluate_files(q, r, ["all_trec"], judged_only=True)
    assert res["per_topic"]["2"]["iprec_at_recall_0.00"] == 0.0
    assert res["per_topic"]["2"]["11pt_avg"] == 0.0
    assert res["all"]["iprec_at_recall_0.00"] == pytest.approx(0.5)
    check_same(evaluate.format_trec_eval(res, per_topic=True), ref, "empty ranking under -J")


def test_generated_files_cover_the_hard_cases(generated):
    """The generator does produce ties, missing topics on both sides and unjudged documents."""
    ties = missing_run = missing_qrels = unjudged = negative = 0
    for _, q, r in generated:
        qrels, run = trec.read_qrels(q), trec.read_run(r)
        ties += any(len(set(d.values())) < len(d) for d in run.values())
        missing_run += bool(set(qrels) - set(run))
        missing_qrels += bool(set(run) - set(qrels))
        unjudged += any(d not in qrels.get(t, {}) for t, docs in run.items() for d in docs)
        negative += any(v < 0 for docs in qrels.values() for v in docs.values())
    assert min(ties, missing_run, missing_qrels, unjudged, negative) >= 5
