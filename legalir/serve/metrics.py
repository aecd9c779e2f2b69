"""`legalir serve`'s counters and latency histograms, written in the Prometheus text format 0.0.4 (``GET
/metrics``; tests/test_serve_security.py reads it with prometheus_client's own parser)."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """Request counters and latency histograms, written in the Prometheus text format (0.0.4).

    Parameters
    ----------
    index_versions : dict or callable, optional
        ``{index: {"bm25"|"dense": N or "-"}}``, or a function returning it when the metrics are read
        (the versions served now: :meth:`legalir.serve.engine.Engine.index_versions`).
    version : str
        legalir's version.
    reloads : callable, optional
        Returns ``{index: {"reloads": n, "failures": n}}`` when the metrics are read
        (:meth:`legalir.serve.engine.Engine.reload_counts`).
    """

    def __init__(self, index_versions: dict[str, dict[str, str]] | Callable[[], dict] | None = None,
                 version: str = "", reloads: Callable[[], dict[str, dict[str, int]]] | None = None):
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str, str], int] = {}
        self.errors: dict[tuple[str, str], int] = {}
        self.latency: dict[str, list[float]] = {}  # route -> bucket counts (+Inf last), then sum
        self.in_flight = 0
        self.queued = 0
        self.connections_refused = 0  # over --max-connections-per-client
        self.client_timeouts = {"header": 0, "body": 0}  # connections closed for a client too slow to send
        self.auth_throttled = 0  # requests refused (429) after too many failed authentications from an address
        self.over_budget: Callable[[], int] | None = None  # calls answered over --request-timeout (HTTP and MCP)
        self.abandoned: Callable[[], int] | None = None  # work still running for requests answered over budget
        self._index_versions = index_versions or {}
        self._reloads = reloads
        self.version = version
        self.started = time.time()

    @property
    def index_versions(self) -> dict[str, dict[str, str]]:
        """The served indexes' versions now."""
        v = self._index_versions
        return v() if callable(v) else v

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one finished request."""
        with self._lock:
            key = (route, method, str(status))
            self.requests[key] = self.requests.get(key, 0) + 1
            if status >= 400:
                ek = (route, str(status))
                self.errors[ek] = self.errors.get(ek, 0) + 1
            h = self.latency.setdefault(route, [0.0] * (len(LATENCY_BUCKETS) + 2))
            for i, bound in enumerate(LATENCY_BUCKETS):
                if seconds <= bound:
                    h[i] += 1
            h[len(LATENCY_BUCKETS)] += 1
            h[-1] += seconds

    def render(self) -> str:
        """The metrics as Prometheus text."""
        def lbl(**kv: str) -> str:
            return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in kv.items()) + "}"

        out = ["# HELP legalir_build_info legalir version serving.", "# TYPE legalir_build_info gauge",
               f"legalir_build_info{lbl(version=self.version)} 1",
               "# HELP legalir_start_time_seconds When the server started (Unix time).",
               "# TYPE legalir_start_time_seconds gauge", f"legalir_start_time_seconds {self.started:.3f}",
               "# HELP legalir_index_info Served indexes: kind and build version (the N of INDEX.vN).",
               "# TYPE legalir_index_info gauge"]
        versions = self.index_versions
        for name, kinds in sorted(versions.items()):
            for kind, version in sorted(kinds.items()):
                out.append(f"legalir_index_info{lbl(index=name, kind=kind, version=version)} 1")
        numbered = [(name, kind, v) for name, kinds in sorted(versions.items()) for kind, v in sorted(kinds.items())
                    if str(v).isdigit()]
        if numbered:
            out += ["# HELP legalir_index_version Version served now (the N of INDEX.vN) of each versioned index.",
                    "# TYPE legalir_index_version gauge"]
            out += [f"legalir_index_version{lbl(index=name, kind=kind)} {v}" for name, kind, v in numbered]
        counts = self._reloads() if self._reloads is not None else {}
        if counts:
            out += ["# HELP legalir_index_reloads_total New index versions served since the server started.",
                    "# TYPE legalir_index_reloads_total counter"]
            out += [f"legalir_index_reloads_total{lbl(index=name)} {c['reloads']}" for name, c in sorted(counts.items())]
            out += ["# HELP legalir_index_reload_failures_total New index versions that could not be opened (the "
                    "previous one kept being served).",
                    "# TYPE legalir_index_reload_failures_total counter"]
            out += [f"legalir_index_reload_failures_total{lbl(index=name)} {c['failures']}"
                    for name, c in sorted(counts.items())]
        with self._lock:
            out += ["# HELP legalir_requests_total HTTP requests answered, by route, method and status.",
                    "# TYPE legalir_requests_total counter"]
            for (route, method, status), n in sorted(self.requests.items()):
                out.append(f"legalir_requests_total{lbl(route=route, method=method, status=status)} {n}")
            out += ["# HELP legalir_request_errors_total Requests answered with status 400 or above.",
                    "# TYPE legalir_request_errors_total counter"]
            for (route, status), n in sorted(self.errors.items()):
                out.append(f"legalir_request_errors_total{lbl(route=route, status=status)} {n}")
            out += ["# HELP legalir_request_duration_seconds Time from request to the end of the response.",
                    "# TYPE legalir_request_duration_seconds histogram"]
            for route, h in sorted(self.latency.items()):
                for bound, n in zip(LATENCY_BUCKETS, h):
                    out.append(f"legalir_request_duration_seconds_bucket{lbl(route=route, le=repr(bound))} {n:g}")
                count = h[len(LATENCY_BUCKETS)]
                out.append(f"legalir_request_duration_seconds_bucket{lbl(route=route, le='+Inf')} {count:g}")
                out.append(f"legalir_request_duration_seconds_sum{lbl(route=route)} {h[-1]:.6f}")
                out.append(f"legalir_request_duration_seconds_count{lbl(route=route)} {count:g}")
            out += ["# HELP legalir_connections_refused_total Connections closed at once: their client address "
                    "held --max-connections-per-client already.",
                    "# TYPE legalir_connections_refused_total counter",
                    f"legalir_connections_refused_total {self.connections_refused}",
                    "# HELP legalir_client_timeouts_total Connections closed because the client did not send a "
                    "request's headers or body within --client-timeout.",
                    "# TYPE legalir_client_timeouts_total counter"]
            out += [f"legalir_client_timeouts_total{lbl(stage=k)} {v}" for k, v in sorted(self.client_timeouts.items())]
            out += ["# HELP legalir_auth_throttled_total Requests refused (429) because their address failed "
                    "authentication too often.", "# TYPE legalir_auth_throttled_total counter",
                    f"legalir_auth_throttled_total {self.auth_throttled}",
                    "# HELP legalir_requests_over_budget_total Requests (and MCP tool calls) answered 503 or a "
                    "tool error for running past --request-timeout.",
                    "# TYPE legalir_requests_over_budget_total counter",
                    f"legalir_requests_over_budget_total {self.over_budget() if self.over_budget is not None else 0}",
                    "# HELP legalir_abandoned_work Work still running for requests already answered over budget "
                    "(each holds a worker thread until it ends).", "# TYPE legalir_abandoned_work gauge",
                    f"legalir_abandoned_work {self.abandoned() if self.abandoned is not None else 0}"]
            out += ["# HELP legalir_requests_in_flight Requests being handled now.",
                    "# TYPE legalir_requests_in_flight gauge", f"legalir_requests_in_flight {self.in_flight}",
                    "# HELP legalir_requests_queued Requests waiting for a slot now.",
                    "# TYPE legalir_requests_queued gauge", f"legalir_requests_queued {self.queued}"]
        return "\n".join(out) + "\n"


def _escape(v: str) -> str:
    return str(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
