"""Corpus encoding spread over a Ray cluster (``pip install 'legalir[distributed]'``).

:class:`RayEncoder` stands in for an :class:`~legalir.indexing.encoders.Encoder`
in :func:`~legalir.indexing.encoders.encode_corpus`: the same document ids are
read, the same folder, ``docids.txt`` and ``manifest.json`` are written by the
same code, and each shard is saved by the same function as it lands. Only the
encoding of the shards moves: each shard's texts go to one Ray actor (one per
GPU, or CPU workers), through Ray's own :class:`ray.util.ActorPool`. So a
folder encoded on Ray is exactly one encoded by a single process (same files,
same manifest; vectors equal to float tolerance), ``index-dense`` reads it
unchanged, and a job stopped or killed (driver or workers) resumes at the
missing shards with or without Ray.

Failures: an actor whose process dies (killed, out of memory, a lost node) is
restarted by Ray and its shard retried, up to ``max_retries`` times each; past
that, or on an error inside the encoder, the job stops with a
:class:`DistributedError` once the shards already finished are saved. A
shard is never skipped: it is recorded in the manifest only when its vectors
are written.

Workers import legalir and load the model themselves: on a cluster of several
machines, install legalir on every node and give the model as a Hub name or a
path every node can read (the embeddings are written by the driver, so the
output folder needs to be on the driver's machine only).
"""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from legalir.indexing.encoders import DEFAULT_BATCH_SIZE, Encoder, EncoderError, EncoderSettings, resolve_settings

DEFAULT_RETRIES = 3

logger = logging.getLogger(__name__)


class DistributedError(EncoderError):
    """Ray missing or unreachable, or a shard that failed on every try."""


@contextlib.contextmanager
def _signals_through_ray() -> Iterator[None]:
    """While the block waits on Ray (``ray.get``, ``ray.wait``), a SIGTERM still ends the command as legalir's handler
    ends it (exit status 143, its message, temporaries removed).

    Ray runs the process's signal handlers inside its blocking calls, and a driver whose handler raises
    ``SystemExit`` there (legalir's SIGTERM handler does) is ended by Ray with exit status 1, silently (Ray's
    ``check_signals``: an "unexpected system exit"); a ``KeyboardInterrupt`` it hands back to Python. So here SIGTERM
    raises ``KeyboardInterrupt``, and once out of Ray the handler in force before is called with it. Main thread,
    and a Python handler in force, only; otherwise the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGTERM)
    if not callable(before):
        yield
        return
    caught: list[int] = []

    def through(signum, frame):
        caught.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, through)
    try:
        yield
    except KeyboardInterrupt:
        signal.signal(signal.SIGTERM, before)
        if caught:
            before(caught[0], None)  # legalir's handler raises its own exception, outside Ray
        raise
    finally:
        signal.signal(signal.SIGTERM, before)


def _ray():
    try:
        import ray
    except ImportError:
        raise DistributedError("Ray is not installed: pip install 'legalir[distributed]' (or pip install ray)") from None
    return ray


def connect(address: str | None = "auto"):
    """The ``ray`` module, connected: to ``address``; for ``auto`` to a running cluster (``RAY_ADDRESS``, or
    the one ``ray start`` on this machine left in its cluster file), else to a new local one started here.
    Kept as is when this process is already connected.

    A running cluster is connected to from a helper thread (see :func:`_init`: Ctrl-C stops a connection that
    hangs). A new local instance is started from the calling thread (:func:`_start_local`): Ray binds the
    processes it starts (GCS, raylet) to the thread that starts them, so one started from a helper thread dies
    as soon as that thread ends. Call this from the thread that lives as long as the work (the main thread in
    the command line)."""
    ray = _ray()
    if ray.is_initialized():
        return ray
    if address in (None, "", "auto"):
        # the address "auto" would connect to, checked first as an explicit one is: Ray itself retries a dead
        # one for ever (a cluster file left by a cluster that stopped)
        found, where = _auto_address()
        if found is None:
            _start_local(ray)
            return ray
        _reachable(found, timeout=AUTO_TIMEOUT_S, where=where)
        address = found
    else:
        _reachable(address)
    try:
        _init(ray, address=address)
    except Exception as e:  # Ray raises several kinds (ConnectionError, RuntimeError, ValueError)
        raise DistributedError(f"could not connect to the Ray cluster {address!r} ({type(e).__name__}: {e}); "
                               f"start one with `ray start --head`, or give --ray auto for a local one") from None
    return ray


def _start_local(ray) -> None:
    """A new local Ray instance (``ray.init(address="local")``), started from the calling thread.

    Not from a helper thread as :func:`_init` connects: Ray starts the GCS and the raylet with
    ``PR_SET_PDEATHSIG``, which Linux fires when the *thread* that started them ends, so a local instance
    started from a short-lived thread is killed at once and the driver dies a minute later ("Failed to connect
    to GCS within 60 seconds"). Nothing here can hang on a remote cluster: a signal stops it as any local
    work (:func:`legalir.cli.stop_on_signals` ends it in any case, and the instance dies with the process).

    Ray installs its own SIGTERM handler in the main thread (shut the node down, exit status 1); a handler the
    program had set before (legalir's: unwind, exit status 143) is put back, and Ray's exit hook still stops
    the instance when the process ends."""
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGTERM) if main else None
    try:
        ray.init(address="local", log_to_driver=False)
    except Exception as e:  # Ray raises several kinds (RuntimeError, ValueError, OSError)
        raise DistributedError(f"could not start a local Ray instance ({type(e).__name__}: {e}); start a "
                               f"cluster with `ray start --head` and give its address to --ray") from None
    finally:
        if callable(before) and signal.getsignal(signal.SIGTERM) is not before:
            signal.signal(signal.SIGTERM, before)
    logger.info("started a local Ray instance (it stops when this process ends)")


class _Hush:
    """A logging filter dropping the records whose message starts with ``prefix``."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def filter(self, record) -> bool:
        return not str(record.getMessage()).startswith(self.prefix)


def _init(ray, **kwargs) -> None:
    """``ray.init`` connecting to a running cluster, in a helper thread, the main thread waiting for it in Python: Ray's connection loop runs in
    C++ and never returns on a cluster that does not answer, and while the main thread is inside it, SIGINT
    is not delivered to Python at all; waiting here, Ctrl-C and SIGTERM stop the command at once
    (:func:`legalir.cli.stop_on_signals` ends it in any case). Never to start a local instance: see
    :func:`_start_local`."""
    import logging
    import threading

    done: dict = {}

    def run():
        try:
            ray.init(log_to_driver=False, **kwargs)
        except BaseException as e:  # handed to the main thread
            done["error"] = e

    # Ray's "SIGTERM handler is not set" warning (from a thread): legalir's own handler is
    hush = _Hush("SIGTERM handler is not set")
    ray_log = logging.getLogger("ray._private.worker")
    ray_log.addFilter(hush)
    try:
        t = threading.Thread(target=run, name="legalir-ray-connect", daemon=True)
        t.start()
        while t.is_alive():
            t.join(0.2)
    finally:
        ray_log.removeFilter(hush)
    if "error" in done:
        raise done["error"]


#: seconds `--ray auto` waits for the cluster its address file (or RAY_ADDRESS) names to answer
AUTO_TIMEOUT_S = 5.0


def _auto_address() -> tuple[str | None, str]:
    """The address of the running cluster ``--ray auto`` connects to, and where it was read: ``RAY_ADDRESS`` (unless
    it is ``auto``), else the cluster file ``ray start`` leaves (``$RAY_TMPDIR/ray/ray_current_cluster``,
    ``/tmp/ray/...``); ``None`` when neither names one (a new local instance is then started). Ray's own
    ``address="auto"`` would also take any GCS process it finds on the machine (another user's, or another
    program's private instance): ``--ray auto`` does not."""
    env = os.environ.get("RAY_ADDRESS", "").strip()
    if env and env != "auto":
        return env, "RAY_ADDRESS"
    try:
        from ray._common.utils import get_ray_address_file
    except ImportError:  # pragma: no cover - another Ray layout: its own lookup
        return None, ""
    path = get_ray_address_file(None)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read().strip()
    except OSError:
        return None, path
    return (text or None), path


def _reachable(address: str, timeout: float = 10.0, where: str = "") -> None:
    """Fail fast on a ``HOST:PORT`` nobody listens on (Ray itself would retry for minutes, or for ever)."""
    import socket

    host, sep, port = address.rpartition(":")
    if "://" in address or not sep or not port.isdigit():
        return  # ray://... (Ray Client) and other forms: Ray's own checks
    try:
        socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout).close()
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        if where:
            raise DistributedError(f"{where}: names the Ray cluster {address!r}, which does not answer ({reason}), "
                                   f"so --ray auto stops here: start that cluster again, or, if it has stopped for "
                                   f"good, remove {'the variable' if where == 'RAY_ADDRESS' else 'the file'} (Ray "
                                   f"then starts a local cluster)") from None
        raise DistributedError(f"could not connect to the Ray cluster {address!r} ({reason}); start one "
                               f"with `ray start --head`, or give --ray auto for a local one") from None


class ShardEncoder:
    """The Ray actor: one loaded encoder, encoding whole shards.

    Its process is the actor's alone (Ray gives each actor a worker process of its own, ended with it), so it
    collects garbage as the `legalir` program does (:mod:`legalir.base.collector`): the program's thresholds
    while torch, transformers and the model load, then everything loaded settled into the collector's
    permanent generation, which neither the shards' collections nor the process's end traverse again."""

    def __init__(self, settings: dict, device: str, threads: int | None):
        from legalir.base import collector

        collector.collect_less()
        if threads:
            import torch

            torch.set_num_threads(int(threads))

        self.encoder = Encoder.from_settings(settings, device=device)
        collector.settle()

    def info(self) -> dict:
        return {"dim": int(self.encoder.dim), "pid": os.getpid()}

    def encode(self, index: int, texts: Sequence[str], batch_size: int) -> tuple[int, np.ndarray, int, bool]:
        import ray

        restarted = bool(ray.get_runtime_context().was_current_actor_reconstructed)
        return index, self.encoder.encode_documents(texts, batch_size=batch_size), os.getpid(), restarted


class RayEncoder:
    """An encoder whose :meth:`encode_shards` runs on Ray actors; see the module doc.

    ``workers``: actors to start [default: one per GPU of the cluster, else one per CPU];
    ``device``: ``cuda`` or ``cpu`` [default: ``cuda`` when the cluster has GPUs].
    """

    def __init__(self, settings: EncoderSettings, *, address: str | None = "auto", workers: int | None = None,
                 device: str | None = None, max_retries: int = DEFAULT_RETRIES):
        ray = connect(address)
        from ray.util import ActorPool

        self.settings = settings
        self.max_retries = int(max_retries)
        resources = ray.cluster_resources()
        gpus, cpus = int(resources.get("GPU", 0)), max(1, int(resources.get("CPU", 1)))
        use_gpu = str(device).startswith("cuda") if device else gpus > 0
        if use_gpu and gpus == 0:
            raise DistributedError(f"--device {device} asked for, but the Ray cluster has no GPU")
        if workers is not None and workers < 1:
            raise DistributedError(f"the number of Ray workers must be at least 1, got {workers}")
        if use_gpu:
            n, options, threads, where = workers or gpus, {"num_gpus": 1, "num_cpus": 1}, None, "cuda"
        else:
            n = workers or cpus
            per = max(1, cpus // n)
            options, threads, where = {"num_cpus": per}, per, "cpu"
        actor = ray.remote(max_restarts=self.max_retries, max_task_retries=self.max_retries, **options)(ShardEncoder)
        self.actors = [actor.remote(settings.to_dict(), where, threads) for _ in range(n)]
        self.n_actors = n
        try:
            with _signals_through_ray():
                infos = ray.get([a.info.remote() for a in self.actors])
        except ray.exceptions.RayError as e:
            self.close()
            raise DistributedError(f"the Ray workers could not load the encoder {settings.model}: "
                                   f"{_reason(e)}") from None
        self.dim = infos[0]["dim"]
        self.device = where
        self.pool = ActorPool(self.actors)
        #: pid -> shards encoded there (a restarted actor is a new process)
        self.shards_by_process: dict[int, int] = {}
        #: worker processes that are restarts of an actor whose process died
        self.restarted: set[int] = set()

    @classmethod
    def load(cls, model: str, *, revision: str | None = None, address: str | None = "auto",
             workers: int | None = None, device: str | None = None, max_retries: int = DEFAULT_RETRIES,
             **overrides: Any) -> RayEncoder:
        """Resolve ``model``'s settings here (as :meth:`Encoder.load` does) and start the workers."""
        ray = connect(address)
        if device is None:
            device = "cuda" if int(ray.cluster_resources().get("GPU", 0)) else "cpu"
        settings, _ = resolve_settings(model, revision=revision, device=device, **overrides)
        return cls(settings, address=address, workers=workers, device=device, max_retries=max_retries)

    def encode_shards(self, shards: Iterable[tuple[int, Sequence[str]]], batch_size: int = DEFAULT_BATCH_SIZE,
                      callback: Callable[[int], Any] | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """``(index, vectors)`` of each shard, in the order they finish; a bounded number in flight."""
        ray = _ray()
        limit = 2 * len(self.actors)  # shards read ahead: every actor busy, one queued each
        in_flight = 0

        def submit(actor, value):
            return actor.encode.remote(value[0], value[1], batch_size)

        def collect():
            try:
                with _signals_through_ray():
                    index, vecs, pid, restarted = self.pool.get_next_unordered()
            except ray.exceptions.RayError as e:
                raise DistributedError(f"a shard failed on the Ray workers (after up to {self.max_retries} "
                                       f"retries): {_reason(e)}. The shards finished are saved: run the same "
                                       f"command again to resume") from None
            self.shards_by_process[pid] = self.shards_by_process.get(pid, 0) + 1
            if restarted:
                self.restarted.add(pid)
            if callback:
                callback(len(vecs))
            return index, np.asarray(vecs, dtype=np.float32)

        for item in shards:
            self.pool.submit(submit, item)
            in_flight += 1
            if in_flight >= limit:
                in_flight -= 1
                yield collect()
        while in_flight:
            in_flight -= 1
            yield collect()

    def summary(self) -> str:
        """Who did the work: shards per worker process (a restarted actor is a new process)."""
        counts = sorted(self.shards_by_process.values(), reverse=True)
        return (f"Ray: {sum(counts)} shard(s) encoded by {len(counts)} worker process(es) "
                f"({', '.join(map(str, counts))}) on {self.n_actors} actor(s), {len(self.restarted)} restarted")

    def close(self) -> None:
        """Stop the actors (the cluster itself is left running)."""
        ray = _ray()
        for a in getattr(self, "actors", []):
            try:
                ray.kill(a)
            except Exception:  # pragma: no cover - already gone
                pass
        self.actors = []

    def __enter__(self) -> RayEncoder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _reason(e: BaseException) -> str:
    """The last line of a Ray error (its cause), not the remote traceback."""
    text = str(e).strip().splitlines()
    return text[-1] if text else type(e).__name__
