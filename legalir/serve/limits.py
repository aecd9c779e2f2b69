"""Token buckets: the rate limits of `legalir serve` (per API key or client address, and failed authentications
per address), used by :class:`legalir.serve.guard.Guard`."""
from __future__ import annotations

import threading
import time
from collections import OrderedDict

#: at most this many client addresses keep a bucket (the least recently seen are forgotten)
MAX_BUCKETS = 10_000


class TokenBuckets:
    """One token bucket per name: ``rate`` tokens a second up to ``burst``; a request takes one.

    Parameters
    ----------
    max_buckets : int
        At most this many names keep a bucket (the least recently used are forgotten: a full bucket again).
    """

    def __init__(self, max_buckets: int = MAX_BUCKETS):
        self.max_buckets = max_buckets
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, name: str, rate: float, burst: int, now: float | None = None) -> float:
        """Take a token from ``name``'s bucket: 0.0 when there was one, else the seconds until there is."""
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._buckets.pop(name, (float(burst), now))
            tokens = min(float(burst), tokens + (now - last) * rate)
            wait = 0.0
            if tokens >= 1.0:
                tokens -= 1.0
            else:
                wait = (1.0 - tokens) / rate
            self._buckets[name] = (tokens, now)
            while len(self._buckets) > self.max_buckets:
                self._buckets.popitem(last=False)
            return wait

    def wait(self, name: str, rate: float, burst: int, now: float | None = None) -> float:
        """Seconds until ``name``'s bucket holds a token (0.0: it holds one now); takes nothing."""
        now = time.monotonic() if now is None else now
        with self._lock:
            got = self._buckets.get(name)
            if got is None:
                return 0.0
            tokens = min(float(burst), got[0] + (now - got[1]) * rate)
            return 0.0 if tokens >= 1.0 else (1.0 - tokens) / rate

    def charge(self, name: str, n: float, rate: float, burst: int, now: float | None = None) -> None:
        """Take ``n`` more tokens from ``name``'s bucket, into debt if need be: work already admitted (a
        batch of queries, each its own token) is done, and the bucket's next requests wait for the debt
        to be paid at ``rate``."""
        if n <= 0:
            return
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._buckets.pop(name, (float(burst), now))
            tokens = min(float(burst), tokens + (now - last) * rate) - n
            self._buckets[name] = (tokens, now)
