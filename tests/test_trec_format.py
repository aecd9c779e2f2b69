"""TREC qrels and run files: what is accepted, and bad input that stops `legalir eval` with exit 2.

Every error names the file, the line and what is wrong.
"""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from legalir import evaluate, trec
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
    ("run", "q1 Q0 d1 1 2.5 tag extra\n", 1, "found 7"),
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
