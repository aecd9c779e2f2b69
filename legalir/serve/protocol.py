"""The connection guards of `legalir serve`: uvicorn's h11 protocol, subclassed (:func:`protocol_class`)."""
from __future__ import annotations

import asyncio
import json
from typing import Any

from legalir.serve.guard import Policy
from legalir.serve.metrics import Metrics

#: the uvicorn versions :func:`protocol_class` is written against: it subclasses uvicorn's ``H11Protocol``, which
#: is not public API, so pyproject.toml's ``serve`` and ``test`` extras pin uvicorn to this range, and
#: tests/test_serve_uvicorn.py fails where the installed uvicorn is outside it or no longer has what the
#: subclass overrides and reads (widen both after the hostile-client tests pass on a newer uvicorn)
UVICORN_SUBCLASSED = ">=0.29,<0.55"


def protocol_class(policy: Policy, metrics: Metrics) -> type:
    """uvicorn's h11 protocol with two guards on connections (``uvicorn.Config(http=...)``).

    * At most ``policy.max_connections_per_client`` connections from one client address at once (0: no cap):
      one more is answered 429 (``Retry-After``) and closed before its request is read.
    * A connection gets ``policy.client_timeout`` seconds to send a request's headers, from its opening and
      from the first byte of each next request (uvicorn's keep-alive timeout closes a connection idle between
      requests): a client that opens connections and sends nothing, or a few bytes at a time, cannot keep
      them. The body's deadline is :class:`Guard`'s.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    cap, timeout = policy.max_connections_per_client, policy.client_timeout
    open_by_client: dict[str, int] = {}

    class GuardedH11Protocol(H11Protocol):
        _who: str | None = None
        _refused = False
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            who = self.client[0] if self.client else "?"
            n = open_by_client.get(who, 0)
            if cap and n >= cap:
                self._refused = True
                metrics.connections_refused += 1
                body = json.dumps({"error": f"this client address already holds {n} connections at once (at most "
                                            f"{cap}: --max-connections-per-client); close some, or retry"}).encode()
                transport.write(b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n"
                                b"retry-after: 1\r\nconnection: close\r\ncontent-length: "
                                + str(len(body)).encode() + b"\r\n\r\n" + body)
                transport.close()
                return
            open_by_client[who] = n + 1
            self._who = who
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._who is not None:
                n = open_by_client.get(self._who, 1) - 1
                if n > 0:
                    open_by_client[self._who] = n
                else:
                    open_by_client.pop(self._who, None)
                self._who = None
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            super().data_received(data)
            if self.conn.their_state is h11.IDLE:  # a request's headers begun, not finished: the clock runs
                self._arm()
            else:
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # a next request already buffered (pipelined) and incomplete: its headers' clock starts now
            if self.conn.their_state is h11.IDLE and self.conn.trailing_data[0]:
                self._arm()

        def _arm(self) -> None:
            if timeout and self._header_timer is None:
                self._header_timer = self.loop.call_later(timeout, self._header_timed_out)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_timed_out(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                metrics.client_timeouts["header"] += 1
                self.transport.close()

    return GuardedH11Protocol
