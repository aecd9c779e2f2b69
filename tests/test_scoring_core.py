"""One scoring core behind every face (issue 28): `legalir eval`, `legalir.evaluate`, `legalir serve`'s run scores
(GET /runs/..., POST /runs/evaluate) and the MCP evaluate tool give the same values; `legalir compare` and
`legalir.compare` the same p-values with the same defaults; a bad argument gets the same words everywhere.

One real server (runs and qrels only: no JVM) for the module; generated runs with hypothesis."""
from __future__ import annotations

import asyncio
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from serve_helpers import env, post_json, start_server, stop_server

import legalir
from legalir import trec
from legalir.cli import main
from legalir.errors import ApiError, LegalirError, http_status, user_message
from legalir.trec import runformats

#: each property's examples (tests/conftest.py's profile: 8 under ci, 300 under deep); bad-value properties are
#: cheap (no file, no server): CHEAP, 8 times more
EXAMPLES = examples(8, deep=0.075)
CHEAP = settings(max_examples=EXAMPLES * 8)

TOPICS = [f"q{i}" for i in range(1, 7)]
DOCS = [f"d{i}" for i in range(1, 13)]
#: request -> the name trec_eval prints (what `legalir eval` and the served run explorer key values by)
MEASURES = {"map": "map", "ndcg_cut.10": "ndcg_cut_10", "P.5": "P_5", "recip_rank": "recip_rank",
            "bpref": "bpref", "nDCG@10": "nDCG@10", "R@5": "R@5", "recall_all.5": "recall_all_5"}


def _qrels() -> dict:
    """Fixed qrels (the server reads them once): grades -1..3 (a -1 is in the pool but unjudged), q6 with none
    relevant."""
    rnd = random.Random(28)
    out = {}
    for t in TOPICS:
        docs = rnd.sample(DOCS, 6)
        out[t] = {d: (rnd.choice([-1, 0, 1, 2, 3]) if t != "q6" else rnd.choice([-1, 0])) for d in docs}
    out["q1"]["d1"], out["q1"]["d2"] = -1, 2  # a document graded -1, retrieved by the served run
    return out


@st.composite
def runs(draw):
    """A run over some qrels topics (and maybe one the qrels lack), scores on a 1/4 grid (ties included) so
    that a file's 6 decimals rank as the dict does."""
    topics = draw(st.lists(st.sampled_from(TOPICS + ["q99"]), min_size=1, max_size=7, unique=True))
    if not set(topics) & set(TOPICS):
        topics.append("q1")
    run = {}
    for t in topics:
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True))
        run[t] = {d: draw(st.integers(-8, 40)) / 4 for d in docs}
    return run


def _trec_text(run: dict, tmp: Path, name: str) -> tuple[Path, str]:
    path = tmp / f"{name}.trec"
    if path.exists():
        path.unlink()
    trec.write_run(path, run, tag=name, force=True)
    return path, path.read_text()


# ------------------------------------------------------------------ the module's server
@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("scoring")
    qrels = _qrels()
    trec.write_qrels(root / "qrels.txt", qrels)
    rnd = random.Random(7)
    run = {t: {d: float(rnd.randint(0, 20)) for d in rnd.sample(DOCS, 8)} for t in TOPICS[:5]}
    run["q1"].update({"d1": 100.0, "d2": 99.0})  # the -1 graded document first, a relevant one second
    trec.write_run(root / "fixed.trec", run, tag="fixed")
    runformats.write_crumb_run(root / "fixed.jsonl", run)
    measures = ["map", "ndcg_cut.10", "P.5"]
    args = ["--run", f"fixed={root / 'fixed.trec'}", "--run", f"crumb={root / 'fixed.jsonl'}",
            "--qrels", f"qrels={root / 'qrels.txt'}", "--judged-only"] + [a for m in measures for a in ("-m", m)]
    server = start_server(root, args, keys=False)
    try:
        yield {"root": root, "qrels": qrels, "qrels_path": root / "qrels.txt", "run": run, "measures": measures,
               **server}
    finally:
        stop_server(server)


def _get(base: str, path: str) -> tuple[int, dict]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(base + path, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _mcp(base: str, calls: list[tuple[str, dict]]) -> list:
    """The MCP SDK's streamable HTTP client: each (tool, arguments) called in one session; the results."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def main():
        out = []
        async with httpx2.AsyncClient(timeout=120) as http:
            async with Client(streamable_http_client(base + "/mcp", http_client=http)) as client:
                for tool, arguments in calls:
                    out.append(await client.call_tool(tool, arguments))
        return out

    return asyncio.run(main())


def _tool_json(result) -> dict:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def _cli(*args: str):
    return CliRunner().invoke(main, list(args))


# ------------------------------------------------------------------ parity: scoring
@settings(max_examples=EXAMPLES)
@given(run=runs(), measures=st.lists(st.sampled_from(sorted(MEASURES)), min_size=1, max_size=4, unique=True),
       judged_only=st.booleans())
def test_every_face_scores_a_run_alike(served, run, measures, judged_only):
    """legalir.evaluate (dict, TREC file, CRUMB file), `legalir eval` (TREC and CRUMB), POST /runs/evaluate and the
    MCP evaluate tool: the same values, per topic and overall."""
    tmp, qrels = served["root"], served["qrels_path"]
    path, text = _trec_text(run, tmp, "generated")
    crumb = tmp / "generated.jsonl"
    if crumb.exists():
        crumb.unlink()
    runformats.write_crumb_run(crumb, run)
    want = legalir.evaluate(served["qrels"], run, measures, judged_only=judged_only, per_topic=True)
    assert want["per_topic"] and set(want["all"]) == set(measures)
    for given_run in (path, str(crumb)):
        assert legalir.evaluate(str(qrels), given_run, measures, judged_only=judged_only, per_topic=True) == want
        res = _cli("eval", "-q", "--json", "--quiet", *(["-J"] if judged_only else []),
                   *[a for m in measures for a in ("-m", m)], str(qrels), str(given_run))
        assert res.exit_code == 0, res.output
        got = json.loads(res.stdout)
        assert {m: got["all"][MEASURES[m]] for m in measures} == want["all"]
        assert {q: {m: v[MEASURES[m]] for m in measures} for q, v in got["per_topic"].items()} == want["per_topic"]
    body = {"run_text": text, "qrels": "qrels", "measures": measures, "judged_only": judged_only, "per_topic": True}
    status, http = post_json(served["base"], "/runs/evaluate", body)
    assert status == 200, http
    assert http["all"] == want["all"] and http["per_topic"] == want["per_topic"]
    assert http["judged_only"] is judged_only and http["measures"] == measures
    (tool,) = _mcp(served["base"], [("evaluate", body)])
    got = _tool_json(tool)
    assert got["all"] == want["all"] and got["per_topic"] == want["per_topic"]


def test_served_run_scores_are_legalir_evaluate_s(served):
    """GET /runs and GET /runs/NAME/topics (a TREC and a CRUMB JSONL run: serve's --run reads both) hold what
    legalir.evaluate gives, with the protocol the server was started with."""
    want = legalir.evaluate(served["qrels"], served["run"], served["measures"], judged_only=True, per_topic=True)
    status, listed = _get(served["base"], "/runs")
    assert status == 200 and {r["name"] for r in listed} == {"fixed", "crumb"}
    for name in ("fixed", "crumb"):
        entry = next(r for r in listed if r["name"] == name)
        assert entry["measures"] == served["measures"] and entry["judged_only"] is True
        assert entry["all"] == {MEASURES[m]: want["all"][m] for m in served["measures"]}
        status, topics = _get(served["base"], f"/runs/{name}/topics")
        assert status == 200
        per = {t["qid"]: t["measures"] for t in topics["topic_list"]}
        assert per == {q: {MEASURES[m]: v[m] for m in served["measures"]} for q, v in want["per_topic"].items()}
    body = {"run": "crumb", "measures": served["measures"], "per_topic": True}
    status, http = post_json(served["base"], "/runs/evaluate", body)
    assert status == 200 and http["all"] == want["all"] and http["judged_only"] is True


def test_run_explorer_counts_judged_as_the_scoring_does(served):
    """A document graded -1 is unjudged for the run explorer as for -J scoring (legalir.scoring.judged)."""
    status, view = _get(served["base"], "/runs/fixed/topics/q1?k=5")
    assert status == 200
    hits = {h["id"]: h for h in view["hits"]}
    assert served["qrels"]["q1"]["d1"] == -1 and hits["d1"]["label"] == -1
    assert hits["d1"]["judged"] is False and hits["d1"]["judged_rank"] is None
    assert hits["d2"]["judged"] is True and hits["d2"]["judged_rank"] == 1
    unjudged = [h for h in view["hits"] if h["label"] is None]
    assert all(h["judged"] is False for h in unjudged)


# ------------------------------------------------------------------ parity: comparison
@settings(max_examples=EXAMPLES)
@given(many=st.lists(runs(), min_size=2, max_size=3), test=st.sampled_from([None, "randomization"]))
def test_compare_cli_and_api_agree_with_the_same_defaults(served, many, test):
    tmp = served["root"]
    paths = [str(_trec_text(r, tmp, f"cmp{i}")[0]) for i, r in enumerate(many)]
    extra = ["--test", test, "--permutations", "200"] if test else []
    options = {"test": test, "permutations": 200} if test else {}
    try:
        df = legalir.compare(paths, str(served["qrels_path"]), **options)
    except LegalirError as e:  # e.g. no topic in common: the CLI refuses it with the same words
        res = _cli("compare", str(served["qrels_path"]), *paths, *extra)
        assert res.exit_code == 2 and res.stderr == f"error: {e}\n"
        return
    assert df.attrs["correction"] == "holm" and df.attrs["test"] == (test or "t") and df.attrs["alpha"] == 0.05
    assert list(dict.fromkeys(df["measure"])) == ["map", "ndcg_cut.10"]  # the one default set
    res = _cli("compare", "--json", str(served["qrels_path"]), *paths, *extra)
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)
    assert [c["measure"] for c in got] == ["map", "ndcg_cut_10"] and {c["correction"] for c in got} == {"holm"}
    for c, measure in zip(got, ["map", "ndcg_cut.10"]):
        rows = df[df["measure"] == measure]
        assert [r["run"] for r in c["runs"]] == list(rows["run"])
        for r, (_, row) in zip(c["runs"], rows.iterrows()):
            assert r["mean"] == row["mean"] or (r["mean"] is None and math.isnan(row["mean"]))
            if r["p"] is None:
                assert math.isnan(row["p_corrected"])
            else:
                assert r["p"] == row["p_corrected"]


# ------------------------------------------------------------------ bad arguments: the API
def _refused(call, *names: str) -> str:
    with pytest.raises(ApiError) as e:
        call()
    text = str(e.value)
    assert any(n in text for n in names), text
    assert user_message(e.value) == text and http_status(e.value) == 400
    return text


Q = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}
A = {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d3": 1.0, "d4": 3.0}}
B = {"q1": {"d1": 1.0, "d2": 2.0}, "q2": {"d3": 5.0}}

not_bool = st.one_of(st.integers(), st.floats(), st.text(max_size=3), st.none(), st.lists(st.booleans(), max_size=1))
not_int = st.one_of(st.booleans(), st.floats(allow_nan=True), st.text(max_size=3), st.lists(st.integers(), max_size=1))
not_fraction = st.one_of(st.floats().filter(lambda x: not 0 < x < 1), st.integers(), st.booleans(), st.text(max_size=3),
                         st.none())


@CHEAP
@given(flag=st.sampled_from(["judged_only", "per_topic", "complete"]), value=not_bool)
def test_evaluate_flags_must_be_bools(flag, value):
    _refused(lambda: legalir.evaluate(Q, A, ["map"], **{flag: value}), flag)


@CHEAP
@given(value=st.one_of(not_int, st.integers(max_value=0), st.integers(min_value=trec.MAX_RELEVANCE + 1)))
def test_relevance_level_is_a_positive_integer(value):
    _refused(lambda: legalir.evaluate(Q, A, ["map"], relevance_level=value), "relevance_level")
    _refused(lambda: legalir.compare([A, B], Q, relevance_level=value), "relevance_level")


@CHEAP
@given(measures=st.one_of(
    st.just([]), st.just(()), st.binary(max_size=4), st.integers(), st.dictionaries(st.text(max_size=3), st.integers(),
                                                                                      max_size=2),
    st.lists(st.one_of(st.integers(), st.none(), st.floats(), st.just(""), st.just("  ")), min_size=1, max_size=3)))
def test_measure_lists(measures):
    _refused(lambda: legalir.evaluate(Q, A, measures), "measures")
    _refused(lambda: legalir.compare([A, B], Q, measures), "measures")


@CHEAP
@given(score=st.one_of(st.just(math.nan), st.text(max_size=3), st.booleans(), st.none(), st.lists(st.floats())),
       where=st.sampled_from(["dict", "frame"]))
def test_a_score_that_is_not_a_number_is_refused_as_a_file_refuses_it(score, where):
    run = {"q1": {"d1": score, "d2": 1.0}}
    if where == "frame":
        import pandas as pd

        run = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [score, 1.0]})
        if str(run["score"].dtype) != "object" and not (isinstance(score, float) and math.isnan(score)):
            return  # pandas made it a number
    _refused(lambda: legalir.evaluate(Q, run, ["map"]), "run['q1']['d1']")
    _refused(lambda: legalir.as_run(run), "run['q1']['d1']")


@CHEAP
@given(grade=st.one_of(st.floats().filter(lambda x: not (math.isfinite(x) and x.is_integer())), st.text(max_size=3),
                       st.booleans(), st.none(), st.integers(min_value=trec.MAX_RELEVANCE + 1)))
def test_a_grade_that_is_not_an_integer_is_refused(grade):
    _refused(lambda: legalir.as_qrels({"q1": {"d1": grade}}), "qrels['q1']['d1']")
    _refused(lambda: legalir.evaluate({"q1": {"d1": grade}}, A, ["map"]), "qrels['q1']['d1']")


@CHEAP
@given(value=st.one_of(st.integers(), st.floats(), st.none(), st.booleans(), st.binary(max_size=3),
                       st.lists(st.integers(), max_size=2)))
def test_runs_and_qrels_of_the_wrong_type(value):
    _refused(lambda: legalir.as_run(value), "run")
    _refused(lambda: legalir.as_qrels(value), "qrels")
    _refused(lambda: legalir.evaluate(Q, {"q1": value}, ["map"]), "run['q1']")


def test_nan_in_a_dict_run_as_in_a_file(tmp_path):
    """The issue's example: {'q1': {'d1': nan}} was scored P@1 = 0.0; a file with the same line is refused."""
    f = tmp_path / "r.trec"
    f.write_text("q1 Q0 d1 1 nan x\n")
    with pytest.raises(LegalirError, match="NaN"):
        legalir.evaluate(Q, str(f), ["P@1"])
    _refused(lambda: legalir.evaluate(Q, {"q1": {"d1": math.nan}}, ["P@1"]), "NaN")


@CHEAP
@given(alpha=not_fraction)
def test_compare_alpha_and_level(alpha):
    _refused(lambda: legalir.compare([A, B], Q, alpha=alpha), "alpha")
    _refused(lambda: legalir.compare([A, B], Q, level=alpha), "level")


def test_compare_alpha_two_and_baseline_true_are_refused():
    """The issue's examples: alpha=2 marked p = 0.57 significant; baseline=True was taken as run 1."""
    _refused(lambda: legalir.compare([A, B], Q, alpha=2), "alpha must be a number between 0 and 1")
    _refused(lambda: legalir.compare([A, B], Q, baseline=True), "baseline")
    df = legalir.compare({"a": A, "b": B}, Q, baseline="b")
    assert df.attrs["baseline"] == "b" and list(df["run"])[:2] == ["b", "a"]


@CHEAP
@given(baseline=st.one_of(st.booleans(), st.integers().filter(lambda i: not -2 <= i < 2), st.floats(), st.none(),
                          st.text(max_size=4).filter(lambda s: s not in ("a", "b"))))
def test_compare_baseline(baseline):
    _refused(lambda: legalir.compare({"a": A, "b": B}, Q, baseline=baseline), "baseline")


@CHEAP
@given(name=st.sampled_from(["permutations", "bootstrap", "seed"]),
       value=st.one_of(not_int, st.integers(max_value=-1), st.integers(min_value=10**8)))
def test_compare_counts(name, value):
    if name == "seed" and isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63:
        value = 2**63  # any non-negative 64-bit seed is accepted
    _refused(lambda: legalir.compare([A, B], Q, **{name: value}), name)


@CHEAP
@given(name=st.sampled_from(["correction", "test"]),
       value=st.one_of(st.text(max_size=8).filter(lambda s: s not in ("holm", "bonferroni", "fdr_bh", "none", "t",
                                                                        "randomization")),
                       st.none(), st.integers()))
def test_compare_choices_name_the_accepted_values(name, value):
    text = _refused(lambda: legalir.compare([A, B], Q, **{name: value}), name)
    assert ("'holm'" in text) if name == "correction" else ("'randomization'" in text)


def test_compare_needs_runs_with_a_topic_in_common():
    """The issue's example: runs with no topic in common gave an all-NaN table."""
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    _refused(lambda: legalir.compare({"a": {"q1": {"d1": 1.0}}, "b": {"q2": {"d2": 1.0}}}, qrels),
             "no evaluated topic is common")
    _refused(lambda: legalir.compare([A], Q), "at least two")
    _refused(lambda: legalir.compare("run.trec", Q), "runs")


def test_evaluate_defaults_to_the_one_default_set():
    from legalir.scoring import DEFAULT_MEASURES

    assert DEFAULT_MEASURES == ("map", "ndcg_cut.10")
    assert set(legalir.evaluate(Q, A)) == {"map", "ndcg_cut.10"}
    assert legalir.evaluate(Q, A) == legalir.evaluate(Q, A, list(DEFAULT_MEASURES))


@CHEAP
@given(value=st.one_of(st.none(), st.integers(), st.floats(), st.just(""), st.binary(max_size=3),
                       st.lists(st.text(max_size=2), max_size=2)))
def test_load_names_its_argument(value):
    _refused(lambda: legalir.load(value), "name")
    _refused(lambda: legalir.load("acord", split=5 if value is None else value), "split")


@CHEAP
@given(arg=st.sampled_from(["kind", "threads", "overwrite", "batch_size", "partition", "path"]),
       value=st.one_of(st.none(), st.integers(max_value=0), st.floats(), st.just(""), st.booleans(),
                       st.lists(st.integers(), max_size=2)))
def test_index_checks_every_argument_before_any_work(tmp_path_factory, arg, value):
    if (arg, value) in (("batch_size", None), ("partition", None)) or (arg == "overwrite" and isinstance(value, bool)):
        return  # accepted values
    out = tmp_path_factory.getbasetemp() / "never-written"
    kwargs = {"path": out, arg: value} if arg != "path" else {"path": value}
    _refused(lambda: legalir.index([{"id": "d1", "contents": "x"}], **kwargs), arg)
    assert not out.exists() and not out.with_name(out.name + ".collection").exists()


@CHEAP
@given(arg=st.sampled_from(["path", "tag", "depth"]),
       value=st.one_of(st.none(), st.integers(max_value=0), st.floats(), st.just(""), st.just("two words"),
                       st.lists(st.integers(), max_size=2)))
def test_write_run_arguments(tmp_path_factory, arg, value):
    if (arg == "depth" and value is None) or (arg == "path" and value == "two words"):
        return  # accepted values
    out = tmp_path_factory.getbasetemp() / "never.trec"
    kwargs = {"path": out, "run": A, arg: value}
    _refused(lambda: legalir.write_run(**kwargs), arg)
    assert not out.exists()


# ------------------------------------------------------------------ bad arguments: the CLI, HTTP, MCP
def test_cli_says_what_the_api_says(served, tmp_path):
    q = str(served["qrels_path"])
    a, _ = _trec_text(A, tmp_path, "a")
    b, _ = _trec_text({"q1": {"d1": 1.0, "d2": 2.0}, "q2": {"d3": 5.0}}, tmp_path, "b")
    cases = [(["--alpha", "2"], {"alpha": 2.0}), (["--baseline", "5"], {"baseline": 5}),
             (["--correction", "sidak"], {"correction": "sidak"}), (["--permutations", "0"], {"permutations": 0}),
             (["--level", "1.5"], {"level": 1.5}), (["-m", "gm_map"], {"measures": ["gm_map"]})]
    for args, kwargs in cases:
        with pytest.raises(LegalirError) as e:
            legalir.compare([str(a), str(b)], q, **kwargs)
        res = _cli("compare", q, str(a), str(b), *args)
        assert res.exit_code == 2 and res.stderr == f"error: {e.value}\n", (args, res.stderr)
    # and one through the real command line, as a user runs it
    proc = subprocess.run([sys.executable, "-m", "legalir.cli", "compare", q, str(a), str(b), "--alpha", "2"],
                          capture_output=True, text=True, env=env(), timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: alpha must be a number between 0 and 1 (exclusive), not 2.0"


def test_http_and_mcp_say_what_the_api_says(served):
    """A bad argument to POST /runs/evaluate is a 400 and to the MCP evaluate tool a tool error, with the text
    legalir.evaluate raises for it."""
    text = _trec_text(A, served["root"], "bad")[1]
    cases = [{"measures": []}, {"measures": ["ndcg@ten"]}, {"judged_only": "yes"}, {"per_topic": 1},
             {"run_text": "q1 Q0 d1 1 nan x\n"}]
    calls = []
    for case in cases:
        body = {"run_text": text, "qrels": "qrels", **case}
        status, reply = post_json(served["base"], "/runs/evaluate", body)
        assert status == 400, (case, reply)
        if "run_text" not in case:
            with pytest.raises(LegalirError) as e:
                legalir.evaluate(served["qrels"], A, **{"measures": case.get("measures", ["map"]),
                                                        **{k: v for k, v in case.items() if k != "measures"}})
            assert reply["error"] == str(e.value), case
        else:
            assert "NaN" in reply["error"]
        calls.append(("evaluate", body))  # wrong types too: the one table of arguments refuses them on both faces
    results = _mcp(served["base"], calls)
    for (_, body), result in zip(calls, results):
        status, reply = post_json(served["base"], "/runs/evaluate", body)
        # (the SDK puts "Error executing tool evaluate: " before a tool error's text)
        assert result.is_error and result.content[0].text.endswith(": " + reply["error"])
    status, reply = post_json(served["base"], "/runs/evaluate", {"run": "fixed", "colour": "red"})
    assert status == 400 and reply["error"] == ("evaluate has no argument 'colour'; its arguments are: run, run_text, "
                                                "qrels, measures, judged_only, per_topic")
    status, reply = post_json(served["base"], "/runs/evaluate", {"run": "nope"})
    assert status == 404 and "no run named 'nope'" in reply["error"]


def test_a_missing_optional_package_is_501_with_the_cli_s_words():
    """What the CLI prints for a feature whose package is not installed is the body of a 501 (not a 500), and
    an MCP tool error."""
    from legalir.serve.app import Refused, Workers

    def needs_faiss():
        raise ModuleNotFoundError("No module named 'faiss'", name="faiss")

    pool = Workers(1)
    try:
        with pytest.raises(Refused) as e:
            asyncio.run(pool.call(needs_faiss))
    finally:
        pool.shutdown()
    assert e.value.status == 501 and str(e.value).startswith("this feature needs faiss-cpu")
    assert isinstance(e.value, LegalirError)  # so the MCP tools raise it as a tool error
    try:
        needs_faiss()
    except ModuleNotFoundError as err:
        assert user_message(err) == str(e.value) and http_status(err) == 501
    assert http_status(RuntimeError("a bug")) is None


def test_convert_writes_where_load_reads(tmp_path):
    """`legalir convert` writes to $LEGALIR_COLLECTIONS/<dataset>, the folder legalir.load reads."""
    from legalir import collections

    where = tmp_path / "elsewhere"
    proc = subprocess.run([sys.executable, "-m", "legalir.cli", "convert", "sample", "--data-dir", str(tmp_path),
                           "--quiet"], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={**env(), collections.ROOT_ENV: str(where)})
    assert proc.returncode == 0, proc.stderr
    assert (where / "sample" / "manifest.json").exists() and not (tmp_path / "collections").exists()
    os.environ[collections.ROOT_ENV] = str(where)
    try:
        ds = legalir.load("sample")
    finally:
        del os.environ[collections.ROOT_ENV]
    assert ds.path == where / "sample" and ds.topics
