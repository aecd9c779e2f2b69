"""Failures of the machine are located errors (issue 30, item 3): a full disk, a read-only folder, no Java,
a JVM crash: exit status 2 (or, for a crash, the process saying what happened), one line, nothing
half-written, nothing left in the working folder.

The full disk is real: a 64 KiB tmpfs mounted in a private mount namespace (``unshare -m``: nothing is
mounted for anyone else, and the mount goes with the process), filled, then written to by the real CLI.
Where the machine allows no mount namespace the disk tests are skipped."""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

from conftest import needs

LEGALIR = [sys.executable, "-m", "legalir.cli"]


def _namespace_ok() -> bool:
    if shutil.which("unshare") is None:
        return False
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                        "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d && umount $d && rmdir $d"],
                       capture_output=True)
    return r.returncode == 0


needs_mount = needs(_namespace_ok(), "needs unshare -m and mount (root or user namespaces)")


def in_small_disk(tmp_path, script: str, options: str = "size=64k"):
    """Run ``script`` (sh) with ``$D`` a fresh tmpfs of ``options``, in a private mount namespace; its output."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    body = f"set -u\nmount -t tmpfs -o {options} tmpfs {mnt}\nD={mnt}\nL='{' '.join(LEGALIR)}'\n" + textwrap.dedent(script)
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", body], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


@needs_mount
def test_a_full_disk_is_a_located_error_and_earlier_outputs_stay(sample_index, sample_collection, tmp_path):
    topics = sample_collection / "topics" / "test.tsv"
    out = in_small_disk(tmp_path, f"""
        $L search {sample_index} {topics} $D/run.trec -k 2 2>/dev/null
        head -c 1M /dev/zero > $D/filler 2>/dev/null
        cp $D/run.trec {tmp_path}/before.trec
        $L search {sample_index} {topics} $D/run.trec -k 1000 2> {tmp_path}/search.err; echo "search=$?"
        $L convert sample --out $D/coll --quiet 2> {tmp_path}/convert.err; echo "convert=$?"
        cmp $D/run.trec {tmp_path}/before.trec && echo same
        ls -A $D > {tmp_path}/ls.txt
    """)
    assert "search=2" in out and "convert=2" in out and "same" in out
    for name, target in (("search", "run.trec"), ("convert", "coll")):
        err = (tmp_path / f"{name}.err").read_text().strip().splitlines()
        assert err[-1].startswith(f"error: {tmp_path / 'disk' / target}: could not be written (No space left on "
                                  f"device): the disk is full"), err
        assert not any("Traceback" in line for line in err)
    # nothing half-written: the earlier run (the user's file: its registry is there too), the filler, no temporary
    assert sorted((tmp_path / "ls.txt").read_text().split()) == [".legalir-files.json", "filler", "run.trec"]


@needs_mount
def test_a_read_only_folder_is_a_located_error(sample_index, sample_collection, tmp_path):
    topics = sample_collection / "topics" / "test.tsv"
    out = in_small_disk(tmp_path, f"""
        mount -o remount,ro $D
        $L search {sample_index} {topics} $D/run.trec 2> {tmp_path}/search.err; echo "search=$?"
        $L index {sample_collection} $D/bm25 2> {tmp_path}/index.err; echo "index=$?"
    """)
    assert "search=2" in out and "index=2" in out
    for name, target in (("search", "run.trec"), ("index", "bm25")):
        err = (tmp_path / f"{name}.err").read_text().strip().splitlines()
        assert err[-1].startswith(f"error: {tmp_path / 'disk' / target}: could not be written (Read-only file "
                                  f"system): the file system is read-only"), err


def test_no_java_is_a_located_error(sample_index, sample_collection, tmp_path):
    topics = sample_collection / "topics" / "test.tsv"
    for home, what in ((tmp_path / "nojdk", "no such folder"), (tmp_path, "holds no Java VM")):
        r = subprocess.run([*LEGALIR, "search", str(sample_index), str(topics), str(tmp_path / "r.trec")],
                           capture_output=True, text=True, env={**__import__("os").environ,
                                                                "LEGALIR_JAVA_HOME": str(home)}, timeout=120)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and lines[-1].startswith(f"error: {home}: ") and what in lines[-1], r.stderr
        assert "Traceback" not in r.stderr and not (tmp_path / "r.trec").exists()


def test_jvm_options_of_the_user_are_given_last_and_a_bad_value_is_a_located_error(sample_index, sample_collection,
                                                                                  tmp_path):
    """LEGALIR_JVM_OPTIONS reaches the JVM (an option the JVM rejects fails the
    start, named), after legalir's own; a value that does not split or holds a word that is no option is an
    error naming the variable, and nothing is written."""
    import os

    from legalir.base import jvm

    env = {**os.environ, "LEGALIR_JVM_OPTIONS": "-XX:TieredStopAtLevel=1 -Dlegalir.test='a b'"}
    old = os.environ.get("LEGALIR_JVM_OPTIONS")
    try:
        os.environ["LEGALIR_JVM_OPTIONS"] = env["LEGALIR_JVM_OPTIONS"]
        assert jvm.options()[-2:] == ["-XX:TieredStopAtLevel=1", "-Dlegalir.test=a b"]
    finally:
        os.environ.pop("LEGALIR_JVM_OPTIONS") if old is None else os.environ.__setitem__("LEGALIR_JVM_OPTIONS", old)
    topics = sample_collection / "topics" / "test.tsv"
    for value, said in (("-XX:NoSuchOptionOfAnyJVM", "could not start the Java VM"),
                        ("-Xss4m 'unclosed", "LEGALIR_JVM_OPTIONS="), ("Xmx1g", "'Xmx1g' is not a JVM option")):
        out = tmp_path / "r.trec"
        r = subprocess.run([*LEGALIR, "search", str(sample_index), str(topics), str(out)], capture_output=True,
                           text=True, env={**os.environ, "LEGALIR_JVM_OPTIONS": value}, timeout=120)
        assert r.returncode == 2 and said in r.stderr.strip().splitlines()[-1], (value, r.stderr)
        assert "Traceback" not in r.stderr and not out.exists()


def test_a_jvm_crash_reports_into_the_cache_and_says_so(tmp_path):
    """A fatal error in native code with the JVM loaded (what a Lucene crash is to the JVM): its report goes to
    the cache's legalir/base/jvm folder, never to the working folder, and stderr says what happened."""
    import os

    work, cache = tmp_path / "work", tmp_path / "cache"
    work.mkdir()
    code = "from legalir.base import jvm\njvm.start()\nimport ctypes\nctypes.string_at(0)\n"
    r = subprocess.run([sys.executable, "-c", code], cwd=work, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "XDG_CACHE_HOME": str(cache)})
    assert r.returncode != 0
    reports = sorted((cache / "legalir" / "jvm").glob("hs_err_pid*.log"))
    assert len(reports) == 1 and list(work.iterdir()) == []
    said = [line for line in r.stderr.splitlines() if line.startswith("error: the Java VM inside legalir crashed")]
    assert len(said) == 1 and str(reports[0]) in said[0], r.stderr


def test_a_killed_jvm_leaves_nothing_in_tmp():
    """legalir's JVM opens no attach socket: under -Xrs Java opened /tmp/.java_pid<pid> at start-up and removed it
    only on a shutdown of its own, so every legalir process killed (SIGKILL, the OOM killer) or ended from Python
    left one in /tmp (186 there after a day of test runs here)."""
    import os
    from pathlib import Path

    code = "from legalir.base import jvm\njvm.start()\nprint('up', flush=True)\nimport sys\nsys.stdin.read()\n"
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         env={k: v for k, v in os.environ.items() if k != "LEGALIR_JVM_OPTIONS"})
    sock = Path(f"/tmp/.java_pid{p.pid}")
    try:
        assert p.stdout.readline() == "up\n"
        while_alive = sock.exists()
    finally:
        p.kill()
        p.wait()
    left = sock.exists()
    sock.unlink(missing_ok=True)  # what a failed run left
    assert not while_alive and not left


def test_a_full_standard_output_is_a_located_error(tmp_path):
    """`legalir eval ... > file` on a full disk: /dev/full, a stream whose every write fails with ENOSPC."""
    (tmp_path / "q.txt").write_text("q1 0 a 1\n")
    (tmp_path / "r.trec").write_text("q1 Q0 a 1 1.0 t\n")
    with open("/dev/full", "w") as full:
        r = subprocess.run([*LEGALIR, "eval", str(tmp_path / "q.txt"), str(tmp_path / "r.trec")], stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines()[-1] == ("error: standard output: could not be written (No space left on "
                                                 "device): the disk is full: free some space there, or write "
                                                 "somewhere else")
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr
