"""The server's pool of worker threads (``legalir serve`` and ``legalir mcp``), with the per-request time
budget (``--request-timeout``)."""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from legalir.errors import LegalirError, http_status, user_message

_log = logging.getLogger(__name__)

DEFAULT_WORKERS = max(2, min(8, os.cpu_count() or 2))
#: seconds one request's work may take before it is answered 503 (`legalir serve --request-timeout`; 0: none)
DEFAULT_REQUEST_TIMEOUT = 30.0


class OverBudget(LegalirError):
    """A request whose work ran past the time budget: 503 (with ``Retry-After``) over HTTP, a tool error
    over MCP."""

    status = 503


class Refused(LegalirError):
    """A user-caused failure that surfaced from below legalir (an optional package missing, Lucene refusing),
    worded by :func:`legalir.errors.user_message`, with its HTTP status (:func:`legalir.errors.http_status`)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class Workers:
    """A fixed pool of threads for the engine's blocking work (Lucene, FAISS, torch, file reads).

    Threads that called Java are detached from the JVM (``jnius.detach``)
    before they end, as pyjnius asks of every thread that used it.

    Parameters
    ----------
    n : int
        Threads.
    budget : float or None
        Seconds a call may take (:meth:`call`); None or 0: no limit. A call past it raises
        :class:`OverBudget` at once and its request is answered (503, or a tool error over MCP), so the
        request gives its slot back; its work, which cannot be interrupted (a Java call, a long loop),
        runs to its end on its thread and its result is dropped (*abandoned*, counted in :attr:`abandoned`
        and logged when it ends). Abandoned work holds at most all ``n`` threads: while it does, a new call
        is refused at once rather than queued behind it.
    """

    def __init__(self, n: int = DEFAULT_WORKERS, budget: float | None = None) -> None:
        if n < 1:
            raise ValueError(f"workers must be at least 1, got {n}")
        self.n = n
        self.budget = budget or None
        self.abandoned = 0  # calls answered over budget whose work still runs
        self.over_budget = 0  # calls answered over budget, in all
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._loop, name=f"legalir-serve-{i}", daemon=True)
                         for i in range(n)]
        for t in self._threads:
            t.start()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                break
            fut, fn, args, kwargs, wake = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as e:  # handed to the awaiting request
                fut.set_exception(e)
            try:
                wake()
            except RuntimeError:  # the awaiting loop closed (the server stopped) while this work ran
                pass
        if "jnius" in sys.modules:
            try:
                sys.modules["jnius"].detach()
            except Exception:  # pragma: no cover - a thread that never touched Java
                pass

    async def call(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` on a worker thread, awaited within the budget (:class:`OverBudget` beyond); a
        user-caused failure from below legalir (an optional package missing, Lucene refusing:
        :func:`legalir.errors.user_message`) comes back as a :class:`Refused` with its HTTP status, so HTTP
        and MCP answer it as the CLI does, never as a 500."""
        try:
            return await self._call(fn, *args, **kwargs)
        except LegalirError:
            raise
        except Exception as e:
            status = http_status(e)
            if status is None:
                raise
            raise Refused(user_message(e), status) from e

    async def _call(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """One loop future, set by the worker thread through ``call_soon_threadsafe`` when ``fn`` is done, and one
        timer (``asyncio.timeout``): per request, a few microseconds of the event loop's time, where
        ``wait_for(shield(wrap_future(...)))`` took a task, three futures and their callbacks (docs/serving.md,
        the profile)."""
        if self.budget is not None and self.abandoned >= self.n:
            raise OverBudget(f"server busy: all {self.n} worker threads are finishing requests that ran past the "
                             f"{self.budget:g} s time budget; retry shortly")
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def settle() -> None:  # on the loop: a request given up (timed out, cancelled) no longer waits
            if not done.done():
                done.set_result(None)
        fut: concurrent.futures.Future = concurrent.futures.Future()
        self._queue.put((fut, fn, args, kwargs, lambda: loop.call_soon_threadsafe(settle)))
        t0 = time.monotonic()
        try:
            if self.budget is None:
                await done
            else:
                async with asyncio.timeout(self.budget):
                    await done
        except TimeoutError:
            self.over_budget += 1
            if not fut.cancel():  # running: Java (or a long Python loop) cannot be interrupted, so it is let finish
                with self._lock:
                    self.abandoned += 1
                name = getattr(fn, "__qualname__", repr(fn))
                fut.add_done_callback(lambda f: self._finished(name, t0))
            raise OverBudget(f"the request ran past its time budget of {self.budget:g} s (--request-timeout) and was "
                             f"given up; ask for less (a smaller k, fewer queries) or retry later") from None
        except asyncio.CancelledError:
            fut.cancel()  # a request cancelled (its client gone) while its call waits in the queue: never run
            raise
        return fut.result()

    def _finished(self, name: str, t0: float) -> None:
        # logged before the gauge falls: whoever sees ``legalir_abandoned_work`` back at 0 finds the line written;
        # the gauge falls however the logging ends (a handler that raised once left the thread counted for good)
        try:
            _log.warning(f"serve: work abandoned over the time budget ({name}) ended after "
                         f"{time.monotonic() - t0:.1f} s")
        finally:
            with self._lock:
                self.abandoned -= 1

    def shutdown(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            t.join(timeout=30)
