"""The server's pool of worker threads (``legalir serve`` and ``legalir mcp``)."""
from __future__ import annotations

import asyncio
import concurrent.futures
import os
import queue
import sys
import threading
from typing import Any, Callable

from legalir.errors import LegalirError, http_status, user_message

DEFAULT_WORKERS = max(2, min(8, os.cpu_count() or 2))


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
    """

    def __init__(self, n: int = DEFAULT_WORKERS) -> None:
        if n < 1:
            raise ValueError(f"workers must be at least 1, got {n}")
        self.n = n
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
            fut, fn, args, kwargs = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as e:  # handed to the awaiting request
                fut.set_exception(e)
        if "jnius" in sys.modules:
            try:
                sys.modules["jnius"].detach()
            except Exception:  # pragma: no cover - a thread that never touched Java
                pass

    def submit(self, fn: Callable, *args: Any, **kwargs: Any) -> "concurrent.futures.Future":
        fut: concurrent.futures.Future = concurrent.futures.Future()
        self._queue.put((fut, fn, args, kwargs))
        return fut

    async def call(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` on a worker; a user-caused failure from below legalir (an optional package
        missing, Lucene refusing: :func:`legalir.errors.user_message`) comes back as a :class:`Refused`
        with its HTTP status, so HTTP and MCP answer it as the CLI does, never as a 500."""
        try:
            return await asyncio.wrap_future(self.submit(fn, *args, **kwargs))
        except LegalirError:
            raise
        except Exception as e:
            status = http_status(e)
            if status is None:
                raise
            raise Refused(user_message(e), status) from e

    def shutdown(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            t.join(timeout=30)
