"""Citation extraction guarded by a time limit: :func:`legalir.legal.citations.extract` in a child process,
given up (and the child ended) when a call runs past its limit."""
from __future__ import annotations

import multiprocessing

from legalir.errors import LegalirError


class CitationError(LegalirError, ValueError):
    """:func:`legalir.legal.citations.extract` failed in the guard's child process."""


def _cite_worker(conn) -> None:  # pragma: no cover - runs in the child process
    from legalir.legal import citations

    while True:
        try:
            text, kwargs = conn.recv()
        except EOFError:
            return
        try:
            out = [(c.key, c.base, c.start, c.end, c.source) for c in citations.extract(text, **kwargs)]
            conn.send(("ok", out))
        except Exception as e:
            conn.send(("error", f"{type(e).__name__}: {e}"))


class GuardedCitations:
    """:func:`legalir.legal.citations.extract` in a child process, given up after ``timeout`` seconds.

    legalir.legal.citations can take time exponential in the length of a ``§§`` list (issue "Legal
    structure that is exact"); a conversion must finish on every file, so a call that runs past
    ``timeout`` is ended (the child, which this object started, is killed and started again on the
    next call) and counted by the caller. ``timeout=None``: called in this process, unguarded.
    """

    def __init__(self, timeout: float | None = None):
        self.timeout = timeout
        self._proc = None
        self._conn = None

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")  # never fork a process that may hold a JVM
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(target=_cite_worker, args=(child,), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent

    def extract(self, text: str, **kwargs) -> list[tuple[str, str, int, int, str]] | None:
        """``(key, base, start, end, source)`` of each citation, or ``None`` when it timed out."""
        if self.timeout is None:
            from legalir.legal import citations

            return [(c.key, c.base, c.start, c.end, c.source) for c in citations.extract(text, **kwargs)]
        if self._proc is None or not self._proc.is_alive():
            self._start()
        self._conn.send((text, kwargs))
        if not self._conn.poll(self.timeout):
            self.close()
            return None
        status, value = self._conn.recv()
        if status != "ok":
            raise CitationError(f"legalir.legal.citations failed: {value}")
        return value

    def close(self) -> None:
        """End the child process (the one this object started)."""
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join()
            self._conn.close()
        self._proc = self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
