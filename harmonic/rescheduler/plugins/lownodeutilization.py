"""LowNodeUtilization — balance. Nodes whose requested usage is at or below ``thresholds`` for every
configured resource (and that are schedulable) are under-utilized; nodes above ``targetThresholds``
for any resource are over-utilized. Pods leave over-utilized nodes (highest usage first, lowest
priority first) while the node stays above its target and the under-utilized nodes have room below
their targets. With ``useDeviationThresholds`` both are offsets from the mean usage. A move: each
replacement must land elsewhere, as the scheduler would place it.

Args: ``thresholds`` and ``targetThresholds`` (required, same resources, percentages 0..100,
thresholds <= targets unless deviation), ``useDeviationThresholds`` (false), ``numberOfNodes`` (0),
``evictableNamespaces`` (``exclude`` only), ``evictionLimits.node``, ``metricsUtilization``: actual usage
instead of requests — ``source: KubernetesMetrics`` (or the deprecated ``metricsServer: true``) reads
node CPU and memory from metrics-server and a pod's own usage from its PodMetrics; ``source:
Prometheus`` with ``prometheus.query`` reads one value in [0, 1] per node (label ``instance``) as the
percentage of the single threshold resource ``MetricResource``. The source must be among the policy's
``metricsProviders`` (``providers.py``); usage the source cannot give makes the plugin do nothing this
run and say why, as descheduler's Balance returns its error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from harmonic.api.node import Node
from harmonic.framework.args import PluginArgs
from harmonic.rescheduler.framework import BalancePlugin
from harmonic.rescheduler.plugins.common import pod_filter
from harmonic.rescheduler.plugins.nodeutilization import (
    UtilizationArgs,
    by_total_usage,
    capped,
    check_thresholds,
    evict_from_sources,
    measure,
    nothing_to_do,
    threshold_vector,
)
from harmonic.rescheduler.plugins.usageclients import (
    METRIC_RESOURCE,
    ActualUsage,
    PrometheusUsage,
    RequestedUsage,
    UsageClient,
    UsageError,
)
from harmonic.rescheduler.providers import METRICS_SERVICE


class EvictionLimits(PluginArgs):
    node: int | None = Field(default=None, ge=0)


class PrometheusQueryArgs(PluginArgs):
    query: str = ""


class MetricsUtilization(PluginArgs):
    metrics_server: bool = False
    source: Literal["", "KubernetesMetrics", "Prometheus"] = ""
    prometheus: PrometheusQueryArgs | None = None

    @model_validator(mode="after")
    def _valid(self) -> MetricsUtilization:
        if self.source == "KubernetesMetrics" and self.metrics_server:
            raise ValueError('it is not allowed to set both "KubernetesMetrics" source and metricsServer')
        if self.source == "KubernetesMetrics" and self.prometheus is not None:
            raise ValueError(
                'prometheus configuration is not allowed to set when source is set to "KubernetesMetrics"'
            )
        if self.source == "Prometheus" and (self.prometheus is None or not self.prometheus.query):
            raise ValueError('prometheus query is required when metrics source is set to "Prometheus"')
        if not self.source and not self.metrics_server:
            raise ValueError("metrics source is empty")
        return self


class LowNodeUtilizationArgs(UtilizationArgs):
    use_deviation_thresholds: bool = False
    target_thresholds: dict[str, float] = Field(default_factory=dict)
    metrics_utilization: MetricsUtilization | None = None
    eviction_limits: EvictionLimits | None = None

    @property
    def metrics_source(self) -> str | None:
        """The policy's metrics provider this plugin reads, if any."""
        m = self.metrics_utilization
        if m is None:
            return None
        return "Prometheus" if m.source == "Prometheus" else "KubernetesMetrics"

    @model_validator(mode="after")
    def _valid(self) -> LowNodeUtilizationArgs:
        check_thresholds("targetThresholds", self.target_thresholds)
        if set(self.thresholds) != set(self.target_thresholds):
            raise ValueError("thresholds and targetThresholds configured different resources")
        for r, v in self.thresholds.items():
            if v > self.target_thresholds[r] and not self.use_deviation_thresholds:
                raise ValueError(f"thresholds' {r} percentage is greater than targetThresholds'")
        if self.metrics_source == "Prometheus":
            for name, given in (
                ("thresholds", self.thresholds),
                ("targetThresholds", self.target_thresholds),
            ):
                if list(given) != [METRIC_RESOURCE]:
                    raise ValueError(
                        f"{name} are expected to specify a single instance of {METRIC_RESOURCE!r} resource, "
                        f"got {sorted(given)} instead"
                    )
        return self

    def usage_client(self, services: Mapping[str, Any]) -> UsageClient:
        """Requests, or the metrics source (raises ``UsageError`` when the run has no connection to it)."""
        m = self.metrics_utilization
        if m is None:
            return RequestedUsage()
        conn = services.get(METRICS_SERVICE)
        if m.source == "Prometheus":
            if conn is None or conn.prometheus is None:
                raise UsageError("prometheus client not initialized")
            assert m.prometheus is not None
            return PrometheusUsage(conn.prometheus, m.prometheus.query)
        if conn is None or conn.collector is None:
            raise UsageError("metrics client not initialized")
        return ActualUsage(conn.collector)


class LowNodeUtilization(BalancePlugin):
    NAME: ClassVar[str] = "LowNodeUtilization"
    Args = LowNodeUtilizationArgs
    args: LowNodeUtilizationArgs

    def balance(self, nodes: list[Node]) -> None:
        a = self.args
        configured = list(a.thresholds)
        try:
            client = a.usage_client(self.handle.services)
            resources, usage, pct, low = measure(self.handle, nodes, a.thresholds, client)
        except UsageError as e:
            self.handle.log.plans.append((self.NAME, "error", f"error getting node usage: {e}"))
            return
        high = threshold_vector(resources, a.target_thresholds, np.inf)
        if a.use_deviation_thresholds:
            cols = [resources.index(r) for r in configured]
            mean = pct[:, cols].mean(axis=0) if len(nodes) else np.zeros(len(cols))
            low[cols] = np.clip(mean - low[cols], 0, 100)
            high[cols] = np.clip(mean + high[cols], 0, 100)
        unschedulable = np.array([n.unschedulable for n in nodes], dtype=bool)
        under = ~unschedulable & (pct <= low).all(axis=1)
        over = ~under & (pct > high).any(axis=1)
        lows, highs = np.flatnonzero(under).tolist(), np.flatnonzero(over).tolist()
        why = nothing_to_do(
            len(lows),
            len(nodes),
            a.number_of_nodes,
            len(highs),
            "All nodes are under target utilization, nothing to do here",
        )
        if why is not None:
            self.handle.log.plans.append((self.NAME, "nothing to do", why))
            return
        available = capped(usage.capacity, resources, np.where(np.isinf(high), 100.0, high), set(configured))

        def keep_going(s: int, total: np.ndarray) -> bool:
            return bool((usage.used[s] > available[s]).any()) and bool((total > 0).all())

        evict_from_sources(
            self.handle,
            self.NAME,
            "node above its target utilization",
            usage,
            by_total_usage(usage, highs, ascending=False),
            lows,
            available,
            pod_filter(self.handle, pre_eviction=False),
            keep_going,
            a.evictable_namespaces,
            a.eviction_limits.node if a.eviction_limits else None,
        )
