"""TREC qrels and run files: what is accepted, and bad input that stops `legalir eval` with exit 2.

Every error names the file, the line and what is wrong.
"""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from legalir import scoring as evaluate
from legalir import trec
from legalir.cli import main

GOOD_QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n"
GOOD_RUN = "q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5 tag\nq2 Q0 d3 1 0.5 tag\n"


def eval_cli(tmp_path, qrels: str | bytes, run: str | bytes, *args):
    q, r = tmp_path / "qrels.txt", tmp_path / "run.trec"
    for path, text in ((q, qrels), (r, run)):
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return CliRunner().invoke(main, ["eval", *args, "-m", "map", str(q), str(r)]), q, r


@pytest.mark.parametrize("which,text,line,fragment", [
    ("run", "q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5\n", 2, "expected 6 columns"),
    ("run", "q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 high tag\n", 2, "score 'high' is not a number"),
    ("run", "q1 Q0 d1 1 nan tag\n", 1, "score is NaN"),
    ("run", "q1 Q0 d1 1 2.5 tag\nq2 Q0 d3 1 0.5 tag\nq1 Q0 d1 3 1.0 tag\n", 3,
     "duplicate document 'd1' for topic 'q1'"),
    ("qrels", "q1 0 d1 1\nq1 d2 0\n", 2, "expected 4 columns"),
    ("qrels", "q1 0 d1 yes\n", 1, "relevance 'yes' is not a number"),
    ("qrels", "q1 0 d1 1.5\n", 1, "is not an integer"),
    ("qrels", "q1 0 d1 1\nq2 0 d3 2\nq1 0 d1 0\n", 3, "duplicate judgement for topic 'q1', document 'd1'"),
    ("qrels", "q1 0 d1 1\nq1 0 d\xe9 1\n".encode("latin-1"), 2, "not UTF-8"),
])
def test_malformed_line_exit_2_names_file_and_line(tmp_path, which, text, line, fragment):
    qrels, run = (text, GOOD_RUN) if which == "qrels" else (GOOD_QRELS, text)
    res, q, r = eval_cli(tmp_path, qrels, run)
    assert res.exit_code == 2, res.output
    path = q if which == "qrels" else r
    assert f"error: {path}:{line}: " in res.stderr
    assert fragment in res.stderr


@pytest.mark.parametrize("which,content,fragment", [
    ("run", b"", "file is empty"),
    ("run", b"  \n\n \t\n", "file is empty"),
    ("qrels", b"", "file is empty"),
    ("run", b"\x7fELF\x02\x01\x01\x00\x00\x00\x00", "binary file"),
    ("qrels", b"PK\x03\x04\x14\x00\x00\x00\x08\x00", "binary file"),
    ("run", b"# only a comment\n", "no run lines"),
])
def test_empty_or_binary_file_exit_2(tmp_path, which, content, fragment):
    qrels, run = (content, GOOD_RUN) if which == "qrels" else (GOOD_QRELS, content)
    res, q, r = eval_cli(tmp_path, qrels, run)
    assert res.exit_code == 2, res.output
    assert f"error: {q if which == 'qrels' else r}: " in res.stderr and fragment in res.stderr


def test_missing_file_exit_2(tmp_path):
    res = CliRunner().invoke(main, ["eval", str(tmp_path / "nope.qrels"), str(tmp_path / "nope.run")])
    assert res.exit_code == 2 and "nope.qrels: file not found" in res.stderr


def test_padded_whitespace_tabs_crlf_blank_and_comment_lines_are_read(tmp_path):
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_bytes(b"  q1\t0   d1 \t 1\r\n\r\nq1 0 d2 0\r\n")
    r.write_bytes(b"# produced by a tool\r\n\tq1   Q0\td2  1   9.0  a\r\n\r\nq1 Q0 d1 2 -1e2 last  \r\n")
    assert trec.read_qrels(q) == {"q1": {"d1": 1, "d2": 0}}
    assert trec.read_run(r) == {"q1": {"d2": 9.0, "d1": -100.0}}
    assert trec.run_tag(r) == "last"


def test_rank_column_is_ignored_scores_decide(tmp_path):
    """Like trec_eval: order from scores (ties: docid descending), whatever the rank column says."""
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("q1 0 d1 1\n")
    r.write_text("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 5.0 t\nq1 Q0 d0 3 1.0 t\n")
    res = evaluate.evaluate_files(q, r, ["P.1,2", "recip_rank"])
    assert res["all"] == {"recip_rank": 0.5, "P_1": 0.0, "P_2": 0.5}


def test_run_tag_is_the_last_line_tag_even_in_a_large_file(tmp_path):
    r = tmp_path / "big.trec"
    lines = [f"q{i // 100} Q0 doc{i} {i % 100 + 1} {1000 - i % 100} first" for i in range(5000)]
    r.write_text("\n".join(lines) + "\nq9 Q0 docX 1 0.5 second\n\n\n")
    assert r.stat().st_size > 1 << 17
    assert trec.run_tag(r) == "second"


def test_topics_on_one_side_only_are_counted_on_stderr(tmp_path):
    res, _, _ = eval_cli(tmp_path, GOOD_QRELS + "q3 0 d9 1\nq4 0 d9 1\n", GOOD_RUN + "q5 Q0 d1 1 1 tag\n")
    assert res.exit_code == 0
    assert "eval: 2 topics evaluated" in res.stderr
    assert "2 qrels topics have no results in the run" in res.stderr and "'q3', 'q4'" in res.stderr
    assert "1 run topics have no judgements and are not evaluated: 'q5'" in res.stderr
    assert res.stdout == "map                   \tall\t1.0000\n"  # q1, q2: the relevant document first


# ---------------------------------------------------------------- read whole, once; read as trec_eval reads


def _cli(args, stdin: bytes | None = None):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "legalir.cli", "eval", *args], input=stdin, capture_output=True)


def _big_run(n_topics=40, depth=60) -> bytes:
    lines = [f"q{t} Q0 doc{(t * 7 + i) % 97} {i + 1} {100 - i * 0.5} tag" for t in range(n_topics) for i in range(depth)]
    return ("\n".join(lines) + "\n").encode()


def _big_qrels(n_topics=40) -> bytes:
    return "".join(f"q{t} 0 doc{(t * 7 + k * 3) % 97} {k % 3}\n" for t in range(n_topics) for k in range(12)).encode()


def test_run_and_qrels_from_stdin_and_fifo_are_read_whole(tmp_path):
    import os
    import threading

    q, r = tmp_path / "q", tmp_path / "r"
    q.write_bytes(_big_qrels())
    r.write_bytes(_big_run())
    assert r.stat().st_size > 3 * 8192                        # more than the old 8 KB probe
    want = _cli(["-q", "-m", "map", "-m", "num_ret", str(q), str(r)])
    assert want.returncode == 0 and b"num_ret               \tall\t2400" in want.stdout
    got = _cli(["-q", "-m", "map", "-m", "num_ret", str(q), "-"], stdin=r.read_bytes())
    assert got.returncode == 0 and got.stdout == want.stdout
    got = _cli(["-q", "-m", "map", "-m", "num_ret", "-", str(r)], stdin=q.read_bytes())
    assert got.returncode == 0 and got.stdout == want.stdout
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(r.read_bytes()))
    writer.start()
    got = _cli(["-q", "-m", "map", "-m", "num_ret", str(q), str(fifo)])
    writer.join()
    assert got.returncode == 0 and got.stdout == want.stdout
    got = _cli(["-q", "-m", "map", "-m", "num_ret", str(q), "/dev/stdin"], stdin=r.read_bytes())
    assert got.returncode == 0 and got.stdout == want.stdout


def test_utf8_bom_is_skipped(tmp_path):
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_bytes(b"\xef\xbb\xbfq1 0 d1 1\nq1 0 d2 0\n")
    r.write_bytes(b"\xef\xbb\xbfq1 Q0 d2 1 2 t\nq1 Q0 d1 2 1 t\n")
    assert trec.read_qrels(q) == {"q1": {"d1": 1, "d2": 0}}
    assert set(trec.read_run(r)) == {"q1"}
    assert evaluate.evaluate_files(q, r, ["map"])["all"]["map"] == 0.5


def test_underscore_numbers_are_read_as_trec_eval_reads_them(tmp_path):
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("q1 0 d1 1_0\nq1 0 d2 0\n")
    r.write_text("q1 Q0 d1 1 1_0 t\nq1 Q0 d2 2 2 t\n")
    notes: list[str] = []
    assert trec.read_qrels(q, notes) == {"q1": {"d1": 1, "d2": 0}}          # atol: 1, not Python's 10
    assert trec.read_run(r, notes) == {"q1": {"d1": 1.0, "d2": 2.0}}        # atof: 1.0, not 10.0
    assert any(f"{q}:1: relevance '1_0' read as 1" in n for n in notes)
    assert any(f"{r}:1: score '1_0' read as 1.0" in n for n in notes)
    res = _cli(["-m", "P.1", str(q), str(r)])
    assert res.returncode == 0 and res.stdout == b"P_1                   \tall\t0.0000\n"


@pytest.mark.parametrize("rel", ["99999999999999999999", "-99999999999999999999", "1000001"])
def test_huge_relevance_is_a_located_error(tmp_path, rel):
    res, q, _ = eval_cli(tmp_path, f"q1 0 d1 1\nq1 0 d2 {rel}\n", GOOD_RUN)
    assert res.exit_code == 2, res.output
    assert f"error: {q}:2: relevance {int(rel)} is out of range" in res.stderr


def test_huge_relevance_level_is_an_error_not_a_traceback(tmp_path):
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text(GOOD_QRELS)
    r.write_text(GOOD_RUN)
    res = _cli(["-l", "99999999999999999999", str(q), str(r)])
    assert res.returncode == 2
    assert res.stderr.decode().startswith("error: relevance_level must be an integer from 1 to 1,000,000, not "
                                          "99999999999999999999")
    assert b"Traceback" not in res.stderr


def test_repeated_qrels_line_is_reported_and_kept_once(tmp_path):
    res, q, _ = eval_cli(tmp_path, "q1 0 d1 1\nq1 0 d2 0\nq1 0 d1 1\nq2 0 d3 2\n", GOOD_RUN)
    assert res.exit_code == 0, res.output
    assert f"warning: {q}:3: repeated judgement for topic 'q1', document 'd1' (also on line 1)" in res.stderr
    assert res.stdout == "map                   \tall\t1.0000\n"


def test_extra_run_fields_and_comment_lines_are_read_as_trec_eval_10_reads_them(tmp_path):
    res, _, r = eval_cli(tmp_path, "# judged by hand\nq1 0 d1 1\nq1 0 d2 0\n# second comment\nq2 0 d3 2\n",
                         "# run\nq1 Q0 d1 1 2.5 tag extra fields\nq1 Q0 d2 2 1.5 tag\n  # note\nq2 Q0 d3 1 0.5 t2 x\n")
    assert res.exit_code == 0, res.output
    assert res.stdout == "map                   \tall\t1.0000\n"
    assert f"{r}: 2 run lines have more than 6 fields; the fields after the sixth are ignored" in res.stderr
    assert trec.read_run_and_tag(r)[1] == "t2" and trec.run_tag(r) == "t2"


def test_hits_mapping_reads_as_the_dict_it_stands_for(tmp_path):
    """Dense search returns each topic's hits as trec.Hits over FAISS's arrays; every reader sees a dict."""
    import pickle

    import numpy as np

    from legalir import trec
    from legalir.scoring import evaluator

    ids = np.array(["d3", "d1", "d2"], dtype=object)
    scores = np.array([0.9, 0.5, 0.5], dtype=np.float32)
    hits = trec.Hits(ids, scores)
    plain = dict(zip(ids.tolist(), scores.tolist()))
    assert hits == plain and plain == hits and hits != {"d3": 0.9}
    assert list(hits) == ["d3", "d1", "d2"] and len(hits) == 3
    assert list(hits.items()) == list(plain.items()) and list(hits.values()) == list(plain.values())
    assert hits["d1"] == plain["d1"] and "d2" in hits and "d9" not in hits and hits.get("d9") is None
    assert ("d1", plain["d1"]) in hits.items()
    assert pickle.loads(pickle.dumps(hits)) == plain
    assert trec.ranking(hits) == trec.ranking(plain)
    a, b = tmp_path / "a.trec", tmp_path / "b.trec"
    trec.write_run(a, {"q1": hits}, tag="t")
    trec.write_run(b, {"q1": plain}, tag="t")
    assert a.read_bytes() == b.read_bytes()
    qrels = {"q1": {"d1": 1, "d2": 0}}
    assert evaluator.evaluate(qrels, {"q1": hits}, ["ndcg_cut_10"]) == evaluator.evaluate(qrels, {"q1": plain},
                                                                                          ["ndcg_cut_10"])


_LINE_BYTES = st.sampled_from([b'{"id": "a", "contents": "x"}', b'{"id": "\xc3\xa9"}', b"", b"  ", b"[1]", b"{bad",
                               b"\x00", b'{"id": "b"}\x00', b"\xff\xfe", b"\r"])


@settings(max_examples=examples(150), deadline=None)
@given(lines=st.lists(_LINE_BYTES, max_size=6), bom=st.booleans(), pad=st.sampled_from([0, 8190, 9000]),
       end=st.sampled_from([b"", b"\n", b"\r\n"]))
def test_a_jsonl_file_read_a_line_at_a_time_gives_what_it_gives_read_whole(tmp_path_factory, lines, bom, pad, end):
    """trec.model.json_lines with stream=True (collections, index updates: a large file never held whole) gives
    the same objects, lines and numbers as the file read whole, or the same error: a byte-order mark, NUL bytes
    before and after the 8 KiB that make a file binary, blank and empty files, invalid UTF-8 and JSON."""
    data = (b"\xef\xbb\xbf" if bom else b"") + b" " * pad + b"\n".join(lines) + end
    path = tmp_path_factory.mktemp("jsonl") / "f.jsonl"
    path.write_bytes(data)

    def outcome(stream):
        try:
            return list(trec.model.json_lines(path, stream=stream))
        except trec.FormatError as e:
            return str(e)
    assert outcome(True) == outcome(False)
