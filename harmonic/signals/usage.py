"""Node and pod usage as signals: where it comes from, and the usage model plugins read.

Sources (each ``read()`` returns a ``UsageReading``; failures give a no-signal reading, never raise):

- ``PrometheusUsageSource`` — node-exporter and cAdvisor series through the Prometheus HTTP API:
  node CPU ``sum by (node) (rate(node_cpu_seconds_total{mode!="idle"}[W]))`` and its
  ``stddev_over_time`` over ``W`` (a 1m-step subquery), node memory ``MemTotal - MemAvailable``
  (``avg_over_time`` and ``stddev_over_time``), pod CPU ``rate(container_cpu_usage_seconds_total
  {container!=""}[W])`` and working set ``container_memory_working_set_bytes{container!=""}`` by
  ``namespace, pod``. ``nodeLabel`` names the label carrying the node name (``node`` by default:
  kube-prometheus relabels node-exporter targets with it).
- ``MetricsServerSource`` — the ``metrics.k8s.io/v1beta1`` API (metrics-server): current node and pod
  usage, no spread; the model keeps the spread of its own readings.

The ``UsageModel`` refreshes from one source: per node the mean and standard deviation of CPU and memory
use over its window (Trimaran's load-watcher figures), and per workload a seasonal forecast of what one
of its pods uses (``forecast.holt_winters`` over the per-pod mean at each refresh). Plugins read its
``view`` (immutable, swapped per refresh). A reading older than ``staleSeconds`` or a failed one leaves
the view marked stale; the plugins then fall back to requests (docs/load-aware.md).
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
import numpy as np
from prometheus_client import Counter

from harmonic.framework.services import ServiceKey, ViewSource
from harmonic.signals.forecast import Forecast, holt_winters
from harmonic.signals.identity import WorkloadKey
from harmonic.signals.metrics import REGISTRY
from harmonic.signals.periodic import Periodic
from harmonic.signals.prometheus import count_no_signal, count_signal
from harmonic.signals.promquery import PrometheusClient, QueryLimits

log = logging.getLogger(__name__)
#: The handle service of observed usage (``UsageModel``), read by the load-aware plugins.
NODE_USAGE: ServiceKey[ViewSource[UsageView]] = ServiceKey(
    "node_usage", "observed node usage and workload forecasts", user_provided=True
)

USAGE_FALLBACKS = Counter(
    "harmonic_usage_fallback_total",
    "Scoring cycles a load-aware plugin scored from requests: usage missing or stale.",
    ["plugin", "reason"],
    registry=REGISTRY,
)


@dataclass(frozen=True)
class NodeStats:
    """Use over the window: CPU in millicores, memory in bytes."""

    cpu_mean: float
    cpu_std: float
    memory_mean: float
    memory_std: float


@dataclass(frozen=True)
class UsageReading:
    nodes: Mapping[str, NodeStats]
    #: (namespace, pod) -> (CPU millicores, memory bytes) now.
    pods: Mapping[tuple[str, str], tuple[float, float]]
    ok: bool = True
    reason: str = ""
    #: Whether ``nodes`` carry a spread (Prometheus) or only a current value (metrics-server).
    has_spread: bool = True

    @classmethod
    def no_signal(cls, reason: str) -> UsageReading:
        return cls({}, {}, False, reason)


class UsageSource(Protocol):
    name: str

    def read(self) -> UsageReading: ...


# --------------------------------------------------------------------------- Prometheus
NODE_CPU = 'sum by ({node}) (rate(node_cpu_seconds_total{{mode!="idle"}}[{window}]))'
NODE_CPU_STD = (
    'stddev_over_time((sum by ({node}) (rate(node_cpu_seconds_total{{mode!="idle"}}[1m])))[{window}:1m])'
)
_NODE_MEM = "sum by ({node}) (node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes)"
NODE_MEMORY = "avg_over_time((" + _NODE_MEM + ")[{window}:1m])"
NODE_MEMORY_STD = "stddev_over_time((" + _NODE_MEM + ")[{window}:1m])"
POD_CPU = 'sum by (namespace, pod) (rate(container_cpu_usage_seconds_total{{container!=""}}[{window}]))'
POD_MEMORY = 'sum by (namespace, pod) (container_memory_working_set_bytes{{container!=""}})'


#: Rate window of the per-pod CPU series the forecast learns from: kube-prometheus' usual 5m. A longer
#: one (load-watcher's 15m, kept for the node figures Trimaran reads) lags and flattens a swing the
#: forecast steps through minute by minute.
POD_RATE_WINDOW = "5m"


def prometheus_queries(
    window: str, node_label: str = "node", pod_window: str | None = None
) -> dict[str, str]:
    """The PromQL the source sends, by role (``pod_window``: the pod CPU rate's, default ``window``)."""
    parts = {
        "node_cpu": NODE_CPU,
        "node_cpu_std": NODE_CPU_STD,
        "node_memory": NODE_MEMORY,
        "node_memory_std": NODE_MEMORY_STD,
        "pod_cpu": POD_CPU,
        "pod_memory": POD_MEMORY,
    }
    return {
        k: v.format(node=node_label, window=pod_window if k == "pod_cpu" and pod_window else window)
        for k, v in parts.items()
    }


def _value(series: Mapping[str, Any]) -> float:
    try:
        v = float((series.get("value") or [0, "nan"])[1])
    except (TypeError, ValueError, IndexError):
        return math.nan
    return v if math.isfinite(v) and v >= 0 else math.nan


@dataclass
class PrometheusUsageSource:
    url: str
    window: str = "15m"
    node_label: str = "node"
    pod_window: str = POD_RATE_WINDOW
    timeout: float = 5.0
    headers: Mapping[str, str] = field(default_factory=dict)
    name: str = "prometheus/usage"
    transport: httpx.BaseTransport | None = None
    #: The query deadline and body limit (default: the process's, ``QueryLimits.from_env``).
    limits: QueryLimits | None = None

    def __post_init__(self) -> None:
        self.queries = prometheus_queries(self.window, self.node_label, self.pod_window)
        self._client = PrometheusClient(self.url, self.timeout, self.headers, self.transport, self.limits)
        #: Reads in a row that gave no signal.
        self._silent = 0

    def close(self) -> None:
        self._client.close()

    def _by(self, role: str, labels: tuple[str, ...]) -> dict[tuple[str, ...], float] | str:
        result = self._client.query(self.queries[role])
        if isinstance(result, str):
            return result
        out: dict[tuple[str, ...], float] = {}
        for s in result:
            metric = s.get("metric") or {}
            key = tuple(str(metric.get(label, "")) for label in labels)
            v = _value(s)
            if all(key) and not math.isnan(v):
                out[key] = v
        return out

    def read(self) -> UsageReading:
        node = (self.node_label,)
        cpu = self._by("node_cpu", node)
        if isinstance(cpu, str) or not cpu:
            self._silent += 1
            # No series is how Prometheus answers before its first scrapes of the node exporters.
            empty = not isinstance(cpu, str)
            reason = "no node_cpu_seconds_total series" if empty else str(cpu)
            return _fail(self.name, reason, self._silent, empty=empty)
        self._silent = 0
        parts = {r: self._by(r, node) for r in ("node_cpu_std", "node_memory", "node_memory_std")}
        std, mem, mem_std = (p if isinstance(p, dict) else {} for p in parts.values())
        nodes = {
            k[0]: NodeStats(1000 * v, 1000 * std.get(k, 0.0), mem.get(k, 0.0), mem_std.get(k, 0.0))
            for k, v in cpu.items()
        }
        pod_cpu = self._by("pod_cpu", ("namespace", "pod"))
        pod_mem = self._by("pod_memory", ("namespace", "pod"))
        pc = pod_cpu if isinstance(pod_cpu, dict) else {}
        pm = pod_mem if isinstance(pod_mem, dict) else {}
        pods = {(k[0], k[1]): (1000 * pc.get(k, 0.0), pm.get(k, 0.0)) for k in set(pc) | set(pm)}
        count_signal(self.name)
        return UsageReading(nodes, pods)


def _fail(name: str, reason: str, streak: int = 1, *, empty: bool = False) -> UsageReading:
    count_no_signal(name, reason, streak, empty=empty)
    return UsageReading.no_signal(reason)


# --------------------------------------------------------------------------- metrics.k8s.io
METRICS_API = "/apis/metrics.k8s.io/v1beta1"


def _quantity(text: Any, milli: bool) -> float:
    from harmonic.api.quantity import QuantityError, parse_quantity

    try:
        q = parse_quantity(str(text))
    except QuantityError:
        return math.nan
    return float(q * 1000) if milli else float(q)


class MetricsServerSource:
    """Current usage from the ``metrics.k8s.io`` API. ``get(path)`` returns the decoded JSON body (the
    cluster adapter's transport in ``harmonic run``; any callable in tests)."""

    def __init__(self, get: Callable[[str], Any], name: str = "metrics-server") -> None:
        self._get = get
        self.name = name
        #: Reads in a row that gave no signal.
        self._silent = 0

    def read(self) -> UsageReading:
        try:
            nodes_body = self._get(f"{METRICS_API}/nodes")
            pods_body = self._get(f"{METRICS_API}/pods")
        except Exception as e:  # any transport or API error is "no signal", never a failed cycle
            self._silent += 1
            return _fail(self.name, f"unreachable: {type(e).__name__}: {e}", self._silent)
        nodes: dict[str, NodeStats] = {}
        for item in (nodes_body or {}).get("items") or ():
            name = (item.get("metadata") or {}).get("name")
            usage = item.get("usage") or {}
            cpu, mem = _quantity(usage.get("cpu"), True), _quantity(usage.get("memory"), False)
            if name and not math.isnan(cpu) and not math.isnan(mem):
                nodes[str(name)] = NodeStats(cpu, 0.0, mem, 0.0)
        pods: dict[tuple[str, str], tuple[float, float]] = {}
        for item in (pods_body or {}).get("items") or ():
            meta = item.get("metadata") or {}
            cpu = mem = 0.0
            for c in item.get("containers") or ():
                usage = c.get("usage") or {}
                cpu += _quantity(usage.get("cpu"), True)
                mem += _quantity(usage.get("memory"), False)
            if meta.get("name") and not math.isnan(cpu + mem):
                pods[(str(meta.get("namespace") or "default"), str(meta["name"]))] = (cpu, mem)
        if not nodes:
            # metrics-server has none before its first scrape of the kubelets
            self._silent += 1
            return _fail(self.name, "no NodeMetrics", self._silent, empty=True)
        self._silent = 0
        count_signal(self.name)
        return UsageReading(nodes, pods, has_spread=False)


# --------------------------------------------------------------------------- the model
@dataclass(frozen=True)
class WorkloadForecast:
    """What one pod of a workload is forecast to use (CPU millicores, memory bytes), step by step."""

    cpu: Forecast
    memory: Forecast


@dataclass(frozen=True)
class UsageView:
    version: int
    #: Time of the reading (the model's clock), None before the first.
    at: float | None
    fresh: bool
    nodes: Mapping[str, NodeStats]
    workloads: Mapping[WorkloadKey, WorkloadForecast]
    step_seconds: float
    reason: str = ""

    def fresh_at(self, now: float, stale_seconds: float) -> bool:
        return self.fresh and self.at is not None and now - self.at <= stale_seconds


EMPTY_VIEW = UsageView(0, None, False, {}, {}, 60.0, "no reading yet")


class UsageModel:
    """Refreshes from a source; keeps each node's readings over ``window_seconds`` (for the spread when
    the source gives none) and each workload's per-pod history (for its forecast)."""

    def __init__(
        self,
        source: UsageSource,
        workload_of: Callable[[str, str], WorkloadKey | None],
        refresh_seconds: float = 60.0,
        window_seconds: float = 900.0,
        season_seconds: float = 86400.0,
        horizon_seconds: float = 3600.0,
        backend: str = "numpy",
    ) -> None:
        if refresh_seconds <= 0:
            raise ValueError("refresh_seconds must be > 0")
        self.source = source
        self.workload_of = workload_of
        self.refresh_seconds = refresh_seconds
        self.window_seconds = window_seconds
        self.season = max(1, round(season_seconds / refresh_seconds))
        self.horizon = max(1, round(horizon_seconds / refresh_seconds))
        self.backend = backend
        self._node_hist: dict[str, deque[tuple[float, float, float]]] = {}
        self._wl_hist: dict[WorkloadKey, deque[tuple[float, float]]] = {}
        self._view = EMPTY_VIEW
        self.last_refresh: float | None = None
        #: Forecasts made for the next step, to score them against what came (MAPE).
        self.pending_check: dict[WorkloadKey, float] = {}
        self.errors: list[float] = []
        self._refresher = Periodic("usage-model", lambda: self.refresh(time.monotonic()), refresh_seconds)

    @property
    def view(self) -> UsageView:
        return self._view

    def maybe_refresh(self, now: float) -> bool:
        if self.last_refresh is None or now - self.last_refresh >= self.refresh_seconds:
            self.refresh(now)
            return True
        return False

    def refresh(self, now: float) -> UsageView:
        self.last_refresh = now
        reading = self.source.read()
        old = self._view
        if not reading.ok:
            self._view = UsageView(
                old.version + 1, old.at, False, old.nodes, old.workloads, self.refresh_seconds, reading.reason
            )
            return self._view
        nodes = self._nodes(now, reading)
        workloads = self._workloads(reading)
        self._view = UsageView(old.version + 1, now, True, nodes, workloads, self.refresh_seconds)
        return self._view

    def _nodes(self, now: float, reading: UsageReading) -> dict[str, NodeStats]:
        if reading.has_spread:
            return dict(reading.nodes)
        out = {}
        for name, s in reading.nodes.items():
            h = self._node_hist.setdefault(name, deque())
            h.append((now, s.cpu_mean, s.memory_mean))
            while h and h[0][0] < now - self.window_seconds:
                h.popleft()
            arr = np.asarray([(c, m) for _, c, m in h])
            mean, std = arr.mean(axis=0), arr.std(axis=0)
            out[name] = NodeStats(float(mean[0]), float(std[0]), float(mean[1]), float(std[1]))
        return out

    def _workloads(self, reading: UsageReading) -> dict[WorkloadKey, WorkloadForecast]:
        sums: dict[WorkloadKey, list[float]] = {}
        for (ns, pod), (cpu, mem) in reading.pods.items():
            key = self.workload_of(ns, pod)
            if key is None:
                continue
            acc = sums.setdefault(key, [0.0, 0.0, 0])
            acc[0] += cpu
            acc[1] += mem
            acc[2] += 1
        keep = 3 * self.season
        out: dict[WorkloadKey, WorkloadForecast] = {}
        for key, (cpu, mem, n) in sums.items():
            per_pod = (cpu / n, mem / n)
            expected = self.pending_check.pop(key, None)
            if expected is not None and per_pod[0] > 0:
                self.errors.append(abs(expected - per_pod[0]) / per_pod[0])
            h = self._wl_hist.setdefault(key, deque(maxlen=keep))
            h.append(per_pod)
            arr = np.asarray(h)
            fc = WorkloadForecast(
                holt_winters(arr[:, 0], self.season, self.horizon, self.backend),
                holt_winters(arr[:, 1], self.season, self.horizon, self.backend),
            )
            out[key] = fc
            self.pending_check[key] = float(fc.cpu.mean[0])
        return out

    def mape(self) -> float | None:
        """Mean absolute percentage error of the one-step CPU forecasts so far."""
        return float(np.mean(self.errors)) if self.errors else None

    def start(self) -> None:
        self._refresher.start()

    def stop(self) -> None:
        self._refresher.stop()
