"""The readers' fast paths (C and Python) read exactly what the line-by-line reader reads.

`legalir eval` reads a plain run or qrels file at C speed (``legalir._plain``) or,
where that module is not built, with one ``str.split`` a piece; any other piece
goes line by line. A run is scored in batches of whole topics (``trec.RunBatches``).
Generated files, plain and not (comments, blank lines, tabs, CRLF, extra fields,
odd scores, duplicates, non-ASCII ids, scattered topics), must give the same
dicts, tag, notes, or the same located error, on every path, for any piece size.
"""
from __future__ import annotations

import random

import pytest
from conftest import missing_reference

from legalir import scoring as evaluate
from legalir import trec
from legalir.scoring import evaluator

SCORES = ["1", "2.5", "-0", "0.0", "+.5", "1e3", "7.25E-2", "3.", "inf", "-inf", "1_0", "0x10", "nan", "high",
          "1e", "12345678901234567890.5", "9" * 70]
GRADES = ["0", "1", "2", "-1", "+3", "007", "1_0", "1.0", "1.5", "yes", "2147483648", "-9999999999"]


def _line(rng, fields, plain):
    sep = " " if plain else rng.choice([" ", "\t", "  ", " \t "])
    text = sep.join(fields)
    if not plain:
        text = rng.choice(["", " ", "\t"]) + text + rng.choice(["", " ", "\r"])
    return text


def gen_run(rng: random.Random, plain: bool) -> str:
    lines = []
    topics = [f"q{i}" for i in range(rng.randint(1, 6))]
    seen: set = set()
    for qid in topics:
        for rank in range(1, rng.randint(1, 40)):
            doc = f"d{rng.randrange(60)}"
            if (qid, doc) in seen and (plain or rng.random() < 0.95):
                continue
            seen.add((qid, doc))
            score = f"{rng.choice([rng.randrange(100) / 4, rng.random() * 10]):.3f}"
            fields = [qid, "Q0", doc, str(rank), score, "tag"]
            if not plain:
                r = rng.random()
                if r < 0.02:
                    fields[4] = rng.choice(SCORES)
                elif r < 0.03:
                    fields.append("extra")
                elif r < 0.035:
                    fields[2] = "d\u00e9" + doc
                elif r < 0.04:
                    fields[2] = doc + "\x1c"
                elif r < 0.045:
                    fields = fields[:5]
            lines.append(_line(rng, fields, plain))
            if not plain and rng.random() < 0.02:
                lines.append(rng.choice(["", "   ", "# a comment", "#"]))
    if not plain and rng.random() < 0.2:  # a topic that comes back
        i = rng.randrange(len(lines))
        lines.insert(i, _line(rng, [topics[0], "Q0", "dback", "1", "1.0", "tag"], plain))
    return "\n".join(lines) + rng.choice(["\n", "", "\n\n"] if not plain else ["\n"])


def gen_qrels(rng: random.Random, plain: bool) -> str:
    lines = []
    for t in range(rng.randint(1, 5)):
        for d in rng.sample(range(80), rng.randint(1, 30)):
            fields = [f"q{t}", "0", f"d{d}", rng.choice(["0", "1", "2", "3"])]
            if not plain and rng.random() < 0.05:
                fields[3] = rng.choice(GRADES)
            lines.append(_line(rng, fields, plain))
    if not plain and rng.random() < 0.3:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(["# c", "", lines[0], lines[-1] + "x"]))
    rng.shuffle(lines) if rng.random() < 0.3 else None  # topics not in one block
    return "\n".join(lines) + "\n"


def outcome(fn):
    """What a reader gives: its value, or the message of its FormatError."""
    try:
        return fn()
    except trec.FormatError as e:
        return ("error", str(e))


def read_run_exact(data):
    notes: list = []
    run, tag = trec._read_run_exact("run.trec", data, notes)
    return run, tag, notes


def read_run(data):
    notes: list = []
    run, tag = trec.read_run_and_tag("run.trec", notes, data=data)
    return run, tag, notes


def read_batches(data, chunk):
    notes: list = []
    batches = trec.RunBatches("run.trec", data, notes, chunk=chunk, batch_docs=rnd_batch(chunk))
    merged: dict = {}
    try:
        for b in batches:
            assert b and not set(b) & set(merged), "a topic in two batches"
            merged.update(b)
    except trec.ScatteredTopics:
        return "scattered"
    return merged, batches.tag, notes


def rnd_batch(chunk):
    return 1 if chunk < 100 else 1 << 16


PATHS = ["c", "python"]


@pytest.fixture(params=PATHS)
def fast_path(request, monkeypatch):
    if request.param == "python":
        monkeypatch.setattr(trec.model, "_fast", None)
    elif trec.model._fast is None:
        # optional for users (no C compiler: the Python path); CI builds it (gcc is there for trec_eval 10.0)
        missing_reference("legalir._plain is not built here (`pip install -e .` builds it with a C compiler)")
    return request.param


def test_run_fast_paths_and_batches_read_what_the_line_reader_reads(fast_path):
    rng = random.Random(8)
    plain_seen = scattered = errors = 0
    for case in range(400):
        plain = case % 3 == 0
        data = gen_run(rng, plain).encode()
        if not data.strip():
            continue
        ref = outcome(lambda: read_run_exact(data))
        got = outcome(lambda: read_run(data))
        assert got == ref, (case, data[:300])
        if isinstance(ref, tuple) and ref[0] == "error":
            errors += 1
        plain_seen += plain
        for chunk in (1, 37, 1 << 16):
            b = outcome(lambda: read_batches(data, chunk))
            if b == "scattered":
                scattered += 1
                continue  # evaluate_files then reads the run whole (tested below)
            if isinstance(ref, tuple) and ref[0] == "error":
                assert b == ref, (case, chunk)
            else:
                assert b[0] == ref[0] and b[1:] == ref[1:], (case, chunk)
                assert list(b[0]) == sorted(b[0], key=list(ref[0]).index)  # topics in reading order
    assert plain_seen > 100 and scattered > 5 and errors > 20


def test_qrels_fast_paths_read_what_the_line_reader_reads(fast_path, monkeypatch):
    rng = random.Random(9)
    errors = 0
    for case in range(300):
        data = gen_qrels(rng, case % 2 == 0).encode()
        notes: list = []
        got = outcome(lambda: (trec.read_qrels("q.txt", notes, data=data), list(notes)))
        with monkeypatch.context() as m:
            m.setattr(trec.qrels, "_plain_qrels", lambda data, where: None)
            notes2: list = []
            ref = outcome(lambda: (trec.read_qrels("q.txt", notes2, data=data), list(notes2)))
        assert got == ref, (case, data[:300])
        errors += isinstance(ref, tuple) and ref[0] == "error"
    assert errors > 10


def test_plain_scores_are_floats_as_python_reads_them():
    # C's path reads a score with CPython's own conversion: the same double as float()
    rng = random.Random(3)
    scores = [repr(rng.uniform(-1e6, 1e6)) for _ in range(2000)] + ["1e308", "1e309", "-1e-320", "0.1", "1E+5"]
    data = "".join(f"q1 Q0 d{i} {i} {s} t\n" for i, s in enumerate(scores)).encode()
    run, _ = trec.read_run_and_tag("r", data=data)
    assert [run["q1"][f"d{i}"] for i in range(len(scores))] == [float(s) for s in scores]


def big_case(tmp_path, interleave: bool):
    """A run of ~150 KB (several pieces; topics across piece ends) and its qrels."""
    rng = random.Random(5)
    q, r = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels_lines, run_lines = [], []
    for t in range(50):
        docs = rng.sample(range(5000), 150)
        qrels_lines += [f"q{t} 0 d{d} {rng.choice([0, 1, 1, 2, -1])}" for d in docs[:60]]
        run_lines += [(t, f"q{t} Q0 d{d} {k} {round(50 - k * 0.1 + rng.random(), 1)} tag")
                      for k, d in enumerate(docs, 1)]
    if interleave:
        rng.shuffle(run_lines)
    q.write_text("\n".join(qrels_lines) + "\n")
    r.write_text("\n".join(line for _, line in run_lines) + "\n")
    assert r.stat().st_size > 2 * trec._CHUNK
    return q, r


@pytest.mark.parametrize("interleave", [False, True])
@pytest.mark.parametrize("args", [dict(measures=["official", "ndcg_cut.10", "relstring", "unj.5", "nDCG@10"]),
                                  dict(measures=["map", "P.5"], complete=True, max_docs=20),
                                  dict(measures=["all_trec"], judged_only=True, version="9")])
def test_streamed_evaluation_equals_whole_run_evaluation(tmp_path, monkeypatch, interleave, args):
    q, r = big_case(tmp_path, interleave)
    monkeypatch.setattr(trec.runs, "_BATCH_DOCS", 1000)  # several batches
    streamed = evaluate.evaluate_files(q, r, **args)
    whole = evaluator.evaluate(trec.read_qrels(q), trec.read_run(r), run_id="tag", **args)
    assert streamed == whole
    assert evaluate.format_trec_eval(streamed, True) == evaluate.format_trec_eval(whole, True)
    assert streamed.notes == whole.notes and streamed.topics == whole.topics


def test_duplicate_across_pieces_is_a_located_error(tmp_path):
    q, r = big_case(tmp_path, False)
    data = r.read_bytes()
    _, _, end = next(trec._pieces(data))
    n = data.count(b"\n", 0, end)  # lines in the first piece
    lines = data.decode().splitlines()
    qid = lines[n].split()[0]
    first = next(i for i, line in enumerate(lines) if line.split()[0] == qid)
    assert first < n  # the topic runs across the pieces' boundary
    lines.insert(n + 1, lines[first])  # its first document again, in the next piece
    r.write_text("\n".join(lines) + "\n")
    with pytest.raises(trec.FormatError, match=rf"{r}:{n + 2}: duplicate document"):
        evaluate.evaluate_files(q, r, ["map"])
