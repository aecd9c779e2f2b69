"""Scores as trec_eval reads them (issue 30, item 6): one parser, :func:`legalir.trec.plain.strtod`, that
reads a field exactly as glibc's strtod/atof does (hexadecimal, inf, nan, a leading sign or whitespace, a
rest left unread), checked against glibc itself and against the trec_eval 10.0 binary on generated scores,
through every reader path (the C fast path, the Python plain path, the line-by-line one)."""
from __future__ import annotations

import ctypes
import math
import subprocess

import pytest
from click.testing import CliRunner
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from legalir import trec
from legalir.cli import main
from legalir.trec import model as base
from legalir.trec import runs
from legalir.trec.plain import strtod

#: each property's examples (tests/conftest.py's profile: 150 under ci, 3,000 under deep)
EXAMPLES = examples(150, deep=0.75)

PIECES = ["", "+", "-", "0", "1", "7", "9", "00", "123456789", "0x", "0X", ".", "e", "E", "p", "P", "a", "f", "F",
          "x", "inf", "INF", "inity", "nan", "NaN", "(", ")", "_", "1_0", "abc", "#", "e308", "e-320", "p1023",
          "p-1074", "e+", "9999999999999999999", "4503599627370497", "ff", "1.5"]
SPACE = [" ", "\t", "\n", "\x0b", "\x0c", "\r", "\x1c"]


def field(allow_space: bool):
    piece = st.sampled_from(PIECES) | st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=4)
    body = st.lists(piece, min_size=1, max_size=7).map("".join)
    if not allow_space:
        return body.filter(bool)
    return st.tuples(st.lists(st.sampled_from(SPACE), max_size=2).map("".join), body).map("".join)


_libc = ctypes.CDLL(None)
_libc.strtod.restype = ctypes.c_double
_libc.strtod.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]


def glibc_strtod(text: str) -> tuple[float, int]:
    raw = text.encode("ascii")
    buf = ctypes.create_string_buffer(raw)
    end = ctypes.c_char_p()
    value = _libc.strtod(buf, ctypes.byref(end))
    used = ctypes.cast(end, ctypes.c_void_p).value - ctypes.addressof(buf)
    return value, used


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


@pytest.mark.parametrize("text, value, used", [
    ("0x10", 16.0, 4), ("1.5abc", 1.5, 3), ("abc", 0.0, 0), (" +inf", math.inf, 5), ("+1.5", 1.5, 4),
    ("\t-2e3x", -2000.0, 5), ("0x", 0.0, 1), ("0x.8p1", 1.0, 6), ("1e", 1.0, 1), ("infinity", math.inf, 8),
    ("-0", -0.0, 2), ("1e400", math.inf, 5), ("nan(12)z", math.nan, 7)])
def test_strtod_reads_as_glibc_does(text, value, used):
    got = strtod(text)
    assert same(got[0], value) and got[1] == used
    assert same(glibc_strtod(text)[0], value) and glibc_strtod(text)[1] == used


@settings(max_examples=EXAMPLES)
@given(field(allow_space=True))
def test_strtod_equals_glibc_on_generated_fields(text):
    value, used = strtod(text)
    want, want_used = glibc_strtod(text)
    assert used == want_used and same(value, want), (text, value, used, want, want_used)


def _readers(path):
    """The value of every score through each reader path: C fast path, Python plain path, line by line."""
    data = path.read_bytes()
    fast = trec.read_run(path)
    saved = base._fast
    base._fast = None  # the Python plain path
    try:
        plain = trec.read_run(path)
    finally:
        base._fast = saved
    exact = runs._read_run_exact(path, data, None)[0]
    return fast, plain, exact


@settings(max_examples=max(10, EXAMPLES // 5))
@given(st.lists(field(allow_space=False), min_size=1, max_size=12))
def test_scores_read_as_the_trec_eval_binary_reads_them(trec_eval10_bin, tmp_path_factory, scores):
    """Each generated score goes in its own topic beside two documents scored with the shortest decimal of the
    value legalir reads (docids "b" and "0", around "a": trec_eval ranks ties by docid, descending): trec_eval
    ranks b, a, 0 (relstring '210') exactly when it reads the value legalir reads."""
    tmp = tmp_path_factory.mktemp("scores")
    qrels, run, expected = [], [], {}
    for i, s in enumerate(scores):
        value, used = strtod(s)
        one = tmp / f"one{i}.trec"
        one.write_text(f"q Q0 a 1 {s} t\n")
        if not used or math.isnan(value):  # no number, or NaN: legalir refuses the run, naming the line
            with pytest.raises(trec.FormatError, match=r"one\d+\.trec:1: score"):
                trec.read_run(one)
            continue
        for got in _readers(one):
            assert same(got["q"]["a"], value), (s, got, value)
        ref = repr(value)
        t = f"t{i}"
        qrels += [f"{t} 0 a 1", f"{t} 0 b 2", f"{t} 0 0 0"]
        run += [f"{t} Q0 a 1 {s} x", f"{t} Q0 b 2 {ref} x", f"{t} Q0 0 3 {ref} x"]
        expected[t] = value
    if not run:
        return
    (tmp / "q.txt").write_text("\n".join(qrels) + "\n")
    (tmp / "r.trec").write_text("\n".join(run) + "\n")
    out = subprocess.run([trec_eval10_bin, "-q", "-m", "relstring.3", str(tmp / "q.txt"), str(tmp / "r.trec")],
                         capture_output=True, text=True, check=True).stdout
    ranked = {line.split()[1]: line.split()[2] for line in out.splitlines() if line.split()[1] != "all"}
    assert ranked == {t: "'210'" for t in expected}, (scores, out)
    for reader in _readers(tmp / "r.trec"):
        assert {t: reader[t]["a"] for t in expected} == expected


def test_the_testers_hexadecimal_run_scores_as_trec_eval(trec_eval10_bin, tmp_path):
    qrels, run = tmp_path / "q.txt", tmp_path / "r.trec"
    qrels.write_text("q1 0 a 2\nq1 0 b 1\n")
    run.write_text("q1 Q0 a 1 0x10 t\nq1 Q0 b 2 1.0 t\n")
    ref = subprocess.run([trec_eval10_bin, "-m", "ndcg_cut.10", str(qrels), str(run)], capture_output=True,
                         text=True, check=True).stdout
    r = CliRunner().invoke(main, ["eval", "-m", "ndcg_cut.10", str(qrels), str(run)])
    assert r.exit_code == 0 and r.stdout == ref and "ndcg_cut_10           \tall\t1.0000" in ref
    notes: list[str] = []
    assert trec.read_run(run, notes) == {"q1": {"a": 16.0, "b": 1.0}}
    assert any("hexadecimal score '0x10' read as 16.0" in n for n in notes)


def test_eval_refuses_standard_input_twice():
    r = CliRunner().invoke(main, ["eval", "-", "-"], input="q1 0 a 1\n")
    assert r.exit_code == 2 and "standard input can be read once" in r.output
    assert len(r.output.strip().splitlines()) == 1
