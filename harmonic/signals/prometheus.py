"""Service-mesh traffic from a Prometheus server (HTTP API, instant PromQL queries).

Presets:
- ``istio``: ``istio_requests_total`` (requests/s) and ``istio_tcp_sent_bytes_total`` (bytes/s) summed
  by source/destination workload and namespace, for one ``reporter`` (``source`` by default, so each
  call is counted once, by the client's proxy);
- ``linkerd``: ``request_total`` (outbound, requests/s) by ``deployment``/``dst_deployment`` and
  ``namespace``/``dst_namespace``; Linkerd has no per-edge byte counter, so bytes are 0.

Every query template and label name can be overridden. Failures (unreachable server, HTTP errors,
bad JSON, PromQL errors, empty results) return a no-signal ``Reading``, log a warning and count in
``harmonic_telemetry_failures_total``; series with missing or ``unknown`` workloads or non-finite
values are skipped and counted, never guessed.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from harmonic.signals.identity import WorkloadKey
from harmonic.signals.metrics import FRESHNESS, TELEMETRY_FAILURES, TELEMETRY_SKIPPED_SERIES, TELEMETRY_UP
from harmonic.signals.promquery import PrometheusClient, QueryLimits
from harmonic.signals.telemetry import EMPTY, Reading, TrafficSample, no_signal_level

log = logging.getLogger(__name__)

_ISTIO_BY = "source_workload, source_workload_namespace, destination_workload, destination_workload_namespace"
_LINKERD_BY = "namespace, deployment, dst_namespace, dst_deployment"


@dataclass(frozen=True)
class MeshQueries:
    """PromQL templates (``{window}``, ``{reporter}`` are substituted) and the labels naming each end."""

    requests: str
    bytes: str | None
    src: str
    src_namespace: str
    dst: str
    dst_namespace: str


PRESETS: dict[str, MeshQueries] = {
    "istio": MeshQueries(
        requests=f'sum by ({_ISTIO_BY}) (rate(istio_requests_total{{reporter="{{reporter}}"}}[{{window}}]))',
        bytes=f'sum by ({_ISTIO_BY}) (rate(istio_tcp_sent_bytes_total{{reporter="{{reporter}}"}}[{{window}}]))',
        src="source_workload",
        src_namespace="source_workload_namespace",
        dst="destination_workload",
        dst_namespace="destination_workload_namespace",
    ),
    "linkerd": MeshQueries(
        requests=f'sum by ({_LINKERD_BY}) (rate(request_total{{direction="outbound"}}[{{window}}]))',
        bytes=None,
        src="deployment",
        src_namespace="namespace",
        dst="dst_deployment",
        dst_namespace="dst_namespace",
    ),
}

_UNKNOWN = {"", "unknown"}


@dataclass
class PrometheusSource:
    """Reads workload-to-workload traffic from Prometheus for one mesh preset."""

    url: str
    mesh: str = "istio"
    reporter: str = "source"
    window: str = "5m"
    timeout: float = 5.0
    queries: MeshQueries | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    name: str = ""
    #: How requests reach the server (default: the network); the simulator answers them from its mesh.
    transport: httpx.BaseTransport | None = None
    #: The query deadline and body limit (default: the process's, ``QueryLimits.from_env``).
    limits: QueryLimits | None = None

    def __post_init__(self) -> None:
        if self.queries is None:
            if self.mesh not in PRESETS:
                raise ValueError(f"unknown mesh {self.mesh!r}; one of {', '.join(sorted(PRESETS))}")
            self.queries = PRESETS[self.mesh]
        if self.reporter not in ("source", "destination"):
            raise ValueError(f"reporter must be 'source' or 'destination', not {self.reporter!r}")
        self.name = self.name or f"prometheus/{self.mesh}"
        self._client = PrometheusClient(self.url, self.timeout, self.headers, self.transport, self.limits)
        #: Reads in a row that gave no signal.
        self._silent = 0

    def close(self) -> None:
        self._client.close()

    def read(self) -> Reading:
        assert self.queries is not None
        q = self.queries
        reqs = self._query(q.requests)
        if isinstance(reqs, str):
            return self._fail(reqs)
        byts: dict[tuple[WorkloadKey, WorkloadKey], float] = {}
        skipped: list[str] = []
        if q.bytes is not None:
            raw_bytes = self._query(q.bytes)
            if isinstance(raw_bytes, str):
                log.warning(
                    "%s: bytes query gave no signal (%s); using request rates only", self.name, raw_bytes
                )
            else:
                byts = self._edges(raw_bytes, skipped)
        rates = self._edges(reqs, skipped)
        if not rates and not byts:
            return self._fail(EMPTY if not skipped else f"no usable series ({len(skipped)} skipped)", skipped)
        samples = tuple(
            TrafficSample(src, dst, rates.get((src, dst), 0.0), byts.get((src, dst), 0.0))
            for src, dst in sorted(set(rates) | set(byts))
        )
        if skipped:
            TELEMETRY_SKIPPED_SERIES.labels(self.name).inc(len(skipped))
            log.warning("%s: skipped %d series, e.g. %s", self.name, len(skipped), skipped[0])
        count_signal(self.name)
        self._silent = 0
        return Reading(samples, True, "", tuple(skipped))

    def _fail(self, reason: str, skipped: list[str] | None = None) -> Reading:
        self._silent += 1
        count_no_signal(self.name, reason, self._silent, empty=reason == EMPTY)
        return Reading((), False, reason, tuple(skipped or ()))

    def _query(self, template: str) -> list[dict[str, Any]] | str:
        promql = template.replace("{window}", self.window).replace("{reporter}", self.reporter)
        return self._client.query(promql)

    def _edges(
        self, series: list[dict[str, Any]], skipped: list[str]
    ) -> dict[tuple[WorkloadKey, WorkloadKey], float]:
        assert self.queries is not None
        q = self.queries
        out: dict[tuple[WorkloadKey, WorkloadKey], float] = {}
        for s in series:
            metric = s.get("metric") or {}
            names = [str(metric.get(k, "")) for k in (q.src, q.src_namespace, q.dst, q.dst_namespace)]
            if any(n in _UNKNOWN for n in names):
                skipped.append(f"missing or unknown workload labels in {metric}")
                continue
            v = series_value(s)
            if not math.isfinite(v) or v < 0:
                skipped.append(f"value {s.get('value')!r} for {metric}")
                continue
            key = (WorkloadKey(names[1], names[0]), WorkloadKey(names[3], names[2]))
            if key[0] == key[1]:
                continue
            out[key] = out.get(key, 0.0) + v
        return out


def count_signal(source: str) -> None:
    """A read of ``source`` gave a signal."""
    TELEMETRY_UP.labels(source).set(1)
    FRESHNESS.ok(source)


def count_no_signal(source: str, reason: str, streak: int = 1, *, empty: bool = False) -> None:
    """Log and count the ``streak``-th read of ``source`` in a row that gave no signal (``empty``: its
    query matched no series)."""
    again = f" ({streak} reads in a row)" if streak > 1 else ""
    log.log(no_signal_level(streak, empty), "%s: no signal: %s%s", source, reason, again)
    TELEMETRY_UP.labels(source).set(0)
    TELEMETRY_FAILURES.labels(source, reason.split(":")[0][:40]).inc()
    FRESHNESS.failed(source, reason)


def series_value(series: Mapping[str, Any]) -> float:
    """The sample value of one series of an instant vector (NaN when unreadable)."""
    try:
        return float((series.get("value") or [0, "nan"])[1])
    except (TypeError, ValueError, IndexError):
        return math.nan
