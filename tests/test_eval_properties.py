"""`legalir eval` against its two references on generated inputs, with hypothesis.

Each example draws qrels (grades -1..3, topics whose grades are all 0 or
negative, topics only in the qrels), a run (tied scores, ranks that disagree
with scores, topics only in the run, sometimes a duplicated document), a list
of 1-6 measures mixing trec_eval names and ir_measures names (the same family
at other cut-offs, float cut-offs trec_eval truncates, ``rel=`` and
``judged_only=`` in any order) and flags among ``-q -c -J -l -M -n``. It runs
`legalir eval --json` once, then:

* every trec_eval-named value against the trec_eval 10.0 binary, called once
  per measure (trec_eval keeps one parameter set per family);
* every ir_measures-named value against ``ir_measures.iter_calc`` on the same
  qrels and the run as -M and -J leave it, and its printed name against
  ``str(ir_measures.parse_measure(spec))``;
* that what one reference refuses, legalir refuses (exit 2, one ``error:`` line).

Documented deviations the oracle applies (README, "Scoring any run"): without
-c, trec_eval 10.0 stops when a qrels topic has no run results, so it is given
the qrels of the run's topics (what legalir averages, as 9.0.x does); where it
prints -nan (precision of a ranking -J emptied), legalir prints 0, and so for
ir_measures' NaN; ir_measures names count qrels topics missing from the run as 0.
trec_eval's C code keeps relevance levels in a buffer that a topic whose grades
are all negative never refills: 10.0 gives such a topic the previous topic's
``ideal_dcg`` (the oracle expects 0 there), and pytrec_eval, under ir_measures
too, can loop without end on it, so ir_measures is given such a topic with one
more judged-0 document that no run holds (no value of its measures changes).

Profiles: ``ci`` (in `make test`, ~200 examples) and ``deep`` (`make test-deep`:
LEGALIR_HYPOTHESIS_PROFILE=deep, thousands).
"""
from __future__ import annotations

import json
import math
import subprocess
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import examples, reference_module
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from legalir.cli import main

ir_measures = reference_module("ir_measures", "ir_measures is not installed (pip install ir_measures)")

#: each property's examples (tests/conftest.py's profile: 200 under ci, LEGALIR_HYPOTHESIS_EXAMPLES under deep)
EXAMPLES = examples(200)

TOPICS = ["1", "2", "10", "a", "B", "q_7"]
DOCS = [f"d{i}" for i in range(9)] + ["D1", "x.y"]

# ---------------------------------------------------------------- strategies

grade = st.sampled_from([0, 0, 1, 1, 2, 3, -1])
judgements = st.dictionaries(st.sampled_from(DOCS), grade, min_size=1, max_size=8)
score = st.sampled_from([0.5, 1.0, 1.0, 2.0, 3.0, -1.5, 7.25])
ranking = st.dictionaries(st.sampled_from(DOCS), score, min_size=1, max_size=9)

CUTOFF = st.sampled_from(["1", "2", "3", "5", "10", "1000", "2.7", "10.0"])  # trec_eval truncates 2.7 to 2
CUT_FAMILIES = ["P", "recall", "ndcg_cut", "map_cut", "success", "relative_P"]
PLAIN = ["map", "Rprec", "bpref", "recip_rank", "infAP", "ndcg", "num_ret", "num_rel", "num_rel_ret", "gm_map",
         "set_P", "set_recall", "set_F", "set_map", "binG", "yaap", "runid", "num_q", "relstring", "P", "recall",
         "ndcg_rel", "Rndcg", "num_nonrel_judged_ret", "unj", "11pt_avg", "iprec_at_recall", "Rprec_mult"]
# at most one parameter string per family (a second one is refused: see the regression tests)
RAW = ["ndcg.0=1,1=3,2=9", "utility.1,-1,0.5,0", "set_F.0.5", "G.2=5", "11pt_avg.0.25,0.5", "relstring.4",
       "iprec_at_recall.0,0.33,1", "Rprec_mult.0.5,1.5", "unj.3,7", "dcg", "ideal_dcg"]


@st.composite
def trec_measure(draw):
    kind = draw(st.sampled_from(["cut", "cut", "plain", "raw"]))
    if kind == "cut":
        fam = draw(st.sampled_from(CUT_FAMILIES))
        return f"{fam}." + ",".join(draw(st.lists(CUTOFF, min_size=1, max_size=3)))
    return draw(st.sampled_from(PLAIN if kind == "plain" else RAW))


# ir_measures' families as ir_measures accepts them: (params besides the cut-off, cut-off: "no", "opt", "req")
IR = {"AP": ("rel judged_only", "opt"), "P": ("rel judged_only", "req"), "R": ("rel judged_only", "req"),
      "nDCG": ("judged_only", "opt"), "RR": ("rel judged_only", "opt"), "Success": ("rel judged_only", "req"),
      "Judged": ("", "opt"), "Bpref": ("rel", "no"), "infAP": ("rel", "no"), "SetP": ("rel judged_only", "no"),
      "SetR": ("rel", "no"), "SetF": ("rel judged_only", "no"), "SetAP": ("rel judged_only", "no"),
      "IPrec": ("rel judged_only", "req"), "Rprec": ("rel judged_only", "no")}


@st.composite
def ir_measure(draw):
    name = draw(st.sampled_from(sorted(IR)))
    allowed, cut = IR[name]
    params = draw(st.permutations(allowed.split()))
    chosen = params[: draw(st.integers(0, len(params)))]
    values = {"rel": st.sampled_from([1, 2, 3]), "judged_only": st.booleans()}
    text = ",".join(f"{k}={draw(values[k])!r}" for k in chosen)
    if name in ("Rprec", "infAP", "P") and not text and cut != "req":
        text = "rel=2"  # bare, these are trec_eval's names (a regression test checks that reading)
    spec = name + (f"({text})" if text else "")
    if cut == "req" or (cut == "opt" and draw(st.booleans())):
        levels = ["0.0", "0.1", "0.25", "0.5", "1", "1.0"] if name == "IPrec" else ["1", "2", "3", "5", "10", "1000"]
        spec += "@" + draw(st.sampled_from(levels))
    return spec


@st.composite
def case(draw):
    qrels_topics = draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=4, unique=True))
    others = [t for t in TOPICS if t not in qrels_topics]
    if draw(st.integers(0, 14)) == 7:  # no topic in common: refused
        run_topics = others[:1]
    else:  # some qrels topics (maybe not all: -c), maybe topics without judgements
        run_topics = draw(st.lists(st.sampled_from(qrels_topics), min_size=1, unique=True))
        run_topics += draw(st.lists(st.sampled_from(others), max_size=2, unique=True)) if others else []
    qrels = {t: draw(judgements) for t in qrels_topics}
    run = {t: draw(ranking) for t in run_topics}
    measures = draw(st.lists(st.one_of(trec_measure(), ir_measure()), min_size=1, max_size=6))
    flags = []
    for flag in ("-q", "-c", "-J", "-n"):
        if draw(st.booleans()):
            flags.append(flag)
    if draw(st.booleans()):
        flags += ["-l", str(draw(st.sampled_from([2, 3])))]
    if draw(st.integers(0, 3)) == 0:
        flags += ["-M", str(draw(st.integers(1, 4)))]
    duplicate = draw(st.integers(0, 29)) == 17  # (hypothesis favours 0: a value in the middle)
    return qrels, run, measures, flags, duplicate, draw(st.randoms(use_true_random=False))


# ---------------------------------------------------------------- files and references

def write(qrels, run, duplicate, rng, folder: Path) -> tuple[Path, Path]:
    ql = [f"{t} 0 {d} {g}" for t, docs in qrels.items() for d, g in docs.items()]
    rl = []
    for t, docs in run.items():
        ranks = list(range(1, len(docs) + 1))
        rng.shuffle(ranks)  # ranks that disagree with scores: both tools rank by score
        rl += [f"{t} Q0 {d} {k} {s} tag" for (d, s), k in zip(docs.items(), ranks)]
    if duplicate:
        rl.append(rl[0])
    rng.shuffle(ql)
    q, r = folder / "qrels.txt", folder / "run.trec"
    q.write_text("\n".join(ql) + "\n")
    r.write_text("\n".join(rl) + "\n")
    return q, r


def reference_spec(spec: str) -> str:
    """The spec trec_eval is given: cut-offs that truncate alike once (it refuses "duplicate cutoffs";
    legalir takes their union, as for a family asked twice)."""
    fam, _, params = spec.partition(".")
    if fam not in CUT_FAMILIES or not params:
        return spec
    return fam + "." + ",".join(dict.fromkeys(str(int(float(p))) for p in params.split(",")))


def trec_eval_lines(binary, flags, measure, q, r) -> tuple[int, str, dict]:
    proc = subprocess.run([binary, *flags, "-m", reference_spec(measure), str(q), str(r)], capture_output=True,
                          text=True)
    out = {}
    for line in proc.stdout.splitlines():
        name, qid, value = (x.strip() for x in line.split("\t"))
        out[(name, qid)] = value
    return proc.returncode, proc.stderr, out


def ranked(docs: dict) -> list[tuple[str, float]]:
    """trec_eval's order: score descending, then docid descending."""
    return sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True)


def ir_reference(specs, qrels, run, flags) -> dict:
    """{(printed name, qid or "all"): value} from ir_measures on the run as -M and -J leave it."""
    m = int(flags[flags.index("-M") + 1]) if "-M" in flags else None
    seen = {}
    for t, docs in run.items():
        order = ranked(docs)[:m] if m else list(docs.items())
        if "-J" in flags:
            order = [(d, s) for d, s in order if qrels.get(t, {}).get(d, -1) >= 0]
        if order:
            seen[t] = dict(order)
    measures = [ir_measures.parse_measure(s) for s in specs]
    # pytrec_eval, under ir_measures too, loops without end on a topic whose grades are all negative after
    # other topics (trec_eval's stale relevance-level buffer): such a topic gets a judged-0 document no run
    # holds, which changes no value of these measures (nothing relevant, nothing retrieved)
    qrels = {t: docs if max(docs.values()) >= 0 else {**docs, "oracle never-retrieved": 0} for t, docs in qrels.items()}
    out = {}
    per = {}
    for metric in ir_measures.iter_calc(measures, qrels, seen):
        v = metric.value
        per[(str(metric.measure), metric.query_id)] = 0.0 if v != v else v
    for mm in measures:
        name = str(mm)
        for t in qrels:
            if t in run:  # legalir prints a row for every topic it evaluated (-J may empty one: 0)
                out[(name, t)] = per.get((name, t), 0.0)
        out[(name, "all")] = sum(per.get((name, t), 0.0) for t in qrels) / len(qrels)
        # the convention above is ir_measures' own aggregate (which is NaN where a topic's value is)
        agg = ir_measures.calc_aggregate([mm], qrels, seen)[mm] if seen else 0.0
        if agg == agg:
            assert math.isclose(agg, out[(name, "all")], abs_tol=1e-9), (name, agg, out[(name, "all")])
    return out


def ir_refuses(spec) -> bool:
    try:
        m = ir_measures.parse_measure(spec)
        ir_measures.calc_aggregate([m], {"q": {"a": 1}}, {"q": {"a": 1.0}})
        return False
    except Exception:
        return True


def ir_oracle(specs, qrels, run, flags):
    """(specs ir_measures refuses, {name: printed name}, reference values), computed in a child process:
    ir_measures drives the same pytrec_eval C code as legalir, whose static buffers carry state from one
    evaluation to the next (a topic whose grades are all negative reads what earlier ones left: legalir
    guards against it, see legalir.scoring.pytrec.NOT_RETRIEVED; ir_measures does not), so the reference
    never shares a process with the code under test, and a reference that hangs fails after a timeout."""
    global _POOL
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    for attempt in (1, 2):
        if _POOL is None:
            import multiprocessing

            _POOL = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        try:
            return _POOL.submit(_ir_oracle_child, specs, qrels, run, flags).result(timeout=300)
        except BrokenProcessPool:
            _POOL = None
    raise AssertionError("the ir_measures oracle process died twice")


_POOL = None


def _ir_oracle_child(specs, qrels, run, flags):
    refused = [s for s in specs if ir_refuses(s)]
    if refused:
        return refused, {}, {}
    names = {s: str(ir_measures.parse_measure(s)) for s in specs}
    return [], names, ir_reference(specs, qrels, run, flags)


# ---------------------------------------------------------------- the property

@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    global _POOL
    yield tmp_path_factory.mktemp("properties")
    if _POOL is not None:  # the ir_measures oracle's child process
        _POOL.shutdown()
        _POOL = None


@settings(max_examples=EXAMPLES)
@given(case())
def test_eval_equals_trec_eval_and_ir_measures(trec_eval10_bin, folder, example):
    qrels, run, measures, flags, duplicate, rng = example
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        q, r = write(qrels, run, duplicate, rng, Path(tmp))
        res = CliRunner().invoke(main, ["eval", "--json", "--quiet", *flags,
                                        *[x for m in measures for x in ("-m", m)], str(q), str(r)])
        ir_specs = [m for m in measures if "@" in m or "(" in m or m in IR and m not in ("P", "infAP", "Rprec")]
        trec_specs = [m for m in measures if m not in ir_specs]
        refused, ir_names, ir_expected = ir_oracle(ir_specs, qrels, run, flags) if ir_specs else ([], {}, {})
        if refused:
            event("refused by ir_measures")
            assert res.exit_code == 2 and res.stderr.startswith("error: "), (res.output, measures)
            return
        if any(n in ("P", "infAP", "Rprec") for n in ir_names.values()):
            # Rprec(rel=1) prints as trec_eval's Rprec, whose topics are averaged another way: refused
            event("ir_measures name printed as trec_eval's")
            assert res.exit_code == 2 and "the name of trec_eval's measure" in res.stderr, res.output
            return
        common = set(qrels) & set(run)
        if duplicate:
            event("duplicate document")
            assert res.exit_code == 2 and "duplicate" in res.stderr, res.output
            return
        if not common:
            event("no common topic")
            assert res.exit_code == 2 and "no topic has both" in res.stderr, res.output
            return
        assert res.exit_code == 0, (res.output, measures, flags)
        got = json.loads(res.stdout)
        ours = {(n, "all"): v for n, v in got.get("all", {}).items()}
        for t, row in got.get("per_topic", {}).items():
            ours.update({(n, t): v for n, v in row.items()})

        expected: dict = {}
        # trec_eval 10.0, once per measure; without -c it is given the qrels of the run's topics
        te_flags = [f for f in flags]
        q_te = q
        if "-c" not in flags:
            q_te = Path(tmp) / "qrels.run-topics"
            q_te.write_text("".join(f"{t} 0 {d} {g}\n" for t, docs in qrels.items() if t in run
                                    for d, g in docs.items()))
        negative = {t for t, docs in qrels.items() if t in run and max(docs.values()) < 0}
        for spec in trec_specs:
            stale = spec.startswith("ideal_dcg") and negative
            rc, err, lines = trec_eval_lines(trec_eval10_bin, te_flags + ["-q"] * bool(stale), spec, q_te, r)
            if rc != 0:
                # 10.0 cannot score a topic whose grades are all negative when it meets it first
                assert "Can't calculate measure" in err, (err, spec, flags)
                assume(False)
            if stale:
                # 10.0 gives such a topic the previous topic's ideal DCG (form_res_rels.c leaves its relevance
                # levels in a static buffer); legalir gives 0 (README: deviations)
                (name,) = {n for n, _ in lines}  # per-topic lines are there (-q added), the all line not with -n
                per = {t: (0.0 if t in negative else float(v)) for (n, t), v in lines.items() if t != "all"}
                lines = {(name, t): v for t, v in per.items()} if "-q" in flags else {}
                if "-n" not in flags:
                    lines[(name, "all")] = sum(per.values()) / len(per)
            expected.update(lines)
        if ir_specs:
            if "-q" not in flags:
                ir_expected = {k: v for k, v in ir_expected.items() if k[1] == "all"}
            if "-n" in flags:
                ir_expected = {k: v for k, v in ir_expected.items() if k[1] != "all"}
            expected.update(ir_expected)

        event(f"compared: {'trec_eval' if trec_specs else ''} {'ir_measures' if ir_specs else ''}")
        assert set(ours) == set(expected), (sorted(set(ours) ^ set(expected)), measures, flags)
        for k, ref in expected.items():
            mine = ours[k]
            if isinstance(ref, str) and (ref.startswith("'") or ref == "tag"):
                assert str(mine) == ref.strip("'"), (k, mine, ref, measures, flags)
            elif isinstance(ref, str) and ref.endswith("nan"):
                assert mine == 0 if k[1] != "all" else math.isfinite(mine), (k, mine, ref, measures, flags)
            else:
                assert math.isclose(float(mine), float(ref), abs_tol=1e-4), (k, mine, ref, measures, flags)


# ---------------------------------------------------------------- compare and report share the path

NUMERIC_TREC = ["map", "P.2,5", "ndcg_cut.3,10", "recall.2,1000", "recip_rank", "bpref", "success.1,3"]
NUMERIC_IR = ["nDCG@3", "nDCG@10", "P@2", "P(rel=2)@5", "R@2", "RR@3", "AP", "Success@1", "Judged@2"]


@settings(max_examples=EXAMPLES)
@given(st.dictionaries(st.sampled_from(TOPICS), judgements, min_size=1, max_size=4),
       st.lists(ranking, min_size=2, max_size=2),
       st.lists(st.sampled_from(NUMERIC_TREC + NUMERIC_IR), min_size=1, max_size=5, unique=True),
       st.booleans())
def test_compare_and_report_score_what_eval_scores(folder, qrels, rankings, measures, judged):
    """`legalir compare` tests, and `legalir report` saves, the per-topic values `legalir eval -q` prints."""
    from legalir.datasets.dataset import Dataset
    from legalir.report import score_run

    topics = sorted(qrels)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        q = Path(tmp) / "qrels.txt"
        q.write_text("".join(f"{t} 0 {d} {g}\n" for t, docs in qrels.items() for d, g in docs.items()))
        runs = []
        for i, docs in enumerate(rankings):
            r = Path(tmp) / f"run{i}.trec"
            r.write_text("".join(f"{t} Q0 {d} {k} {s} r{i}\n" for t in topics for k, (d, s) in enumerate(docs.items(), 1)))
            runs.append(str(r))
        ms = [x for m in measures for x in ("-m", m)]
        flags = ["-J"] * judged
        per_run = []
        for r in runs:
            res = CliRunner().invoke(main, ["eval", "--json", "--quiet", "-q", *flags, *ms, str(q), r])
            assert res.exit_code == 0, res.output
            per_run.append(json.loads(res.stdout)["per_topic"])
        res = CliRunner().invoke(main, ["compare", "--json", "--bootstrap", "0", *flags, *ms, str(q), *runs])
        assert res.exit_code == 0, res.output
        for row in json.loads(res.stdout):
            name = row["measure"]
            for run_row, pt in zip(row["runs"], per_run):
                values = [pt[t][name] for t in sorted(pt)]
                assert math.isclose(run_row["mean"], sum(values) / len(values), abs_tol=1e-12), (name, row)

        class Protocol(Dataset):
            name = "property"
            judged_only = judged
        Protocol.measures = tuple(measures)
        saved = score_run(Protocol, q, runs[0])
        assert {t: dict(v) for t, v in saved["per_topic"].items()} == per_run[0]
