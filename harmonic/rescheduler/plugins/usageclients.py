"""Where the node-utilization plugins read usage (descheduler's ``usageClient``s): pod requests by
default; with LowNodeUtilization's ``metricsUtilization``, metrics-server's actual usage
(``KubernetesMetrics``) or a Prometheus query (``Prometheus``).

A client gives each node's usage as an integer row over the measured resources (CPU in millicores,
memory in bytes, pods as a count, ``MetricResource`` as a percentage), and a pod's own usage, which the
eviction loop subtracts — or None when the source cannot tell (Prometheus: descheduler then evicts one
pod per node, or up to ``evictionLimits.node``, without accounting). A node or pod it cannot measure
raises ``UsageError`` with descheduler's message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.api.resources import CPU, MEMORY, PODS
from harmonic.rescheduler.providers import MetricsCollector, PrometheusQuery
from harmonic.signals.prometheus import series_value

#: The resource a Prometheus query measures: a percentage, whose capacity is 100 on every node.
METRIC_RESOURCE = "MetricResource"


class UsageError(Exception):
    pass


class UsageClient(Protocol):
    def node_usage(
        self, nodes: Sequence[Node], pods: Sequence[Sequence[Pod]], resources: list[str]
    ) -> np.ndarray: ...

    def pod_usage(self, pod: Pod, resources: list[str]) -> np.ndarray | None: ...


def capacity(nodes: Sequence[Node], resources: list[str]) -> np.ndarray:
    """Allocatable per node and resource; ``MetricResource`` is 100 everywhere."""
    return np.array(
        [[100 if r == METRIC_RESOURCE else n.allocatable.get(r, 0) for r in resources] for n in nodes],
        dtype=np.int64,
    ).reshape(len(nodes), len(resources))


class RequestedUsage:
    """requestedUsageClient: the pods' requests, pods counted one each."""

    def node_usage(
        self, nodes: Sequence[Node], pods: Sequence[Sequence[Pod]], resources: list[str]
    ) -> np.ndarray:
        used = np.zeros((len(nodes), len(resources)), dtype=np.int64)
        for i, ps in enumerate(pods):
            for j, r in enumerate(resources):
                used[i, j] = len(ps) if r == PODS else sum(p.requests.get(r, 0) for p in ps)
        return used

    def pod_usage(self, pod: Pod, resources: list[str]) -> np.ndarray | None:
        return np.array([1 if r == PODS else pod.requests.get(r, 0) for r in resources], dtype=np.int64)


class ActualUsage:
    """actualUsageClient: node CPU and memory from the metrics collector, pods counted; a pod's usage
    is its current PodMetrics. Other resources cannot be measured: an error, as upstream."""

    def __init__(self, collector: MetricsCollector) -> None:
        self.collector = collector

    def node_usage(
        self, nodes: Sequence[Node], pods: Sequence[Sequence[Pod]], resources: list[str]
    ) -> np.ndarray:
        collected = self.collector.node_usage()
        used = np.zeros((len(nodes), len(resources)), dtype=np.int64)
        for i, (n, ps) in enumerate(zip(nodes, pods, strict=True)):
            if n.name not in collected:
                raise UsageError(f"unable to find node {n.name!r} in the collected metrics")
            values = {CPU: collected[n.name][0], MEMORY: collected[n.name][1], PODS: len(ps)}
            for j, r in enumerate(resources):
                if r not in values:
                    raise UsageError(f"unable to find {r!r} resource for collected {n.name!r} node metric")
                used[i, j] = values[r]
        return used

    def pod_usage(self, pod: Pod, resources: list[str]) -> np.ndarray | None:
        got = self.collector.pod_usage(pod.namespace, pod.name)
        if got is None:
            raise UsageError(f"unable to get podmetrics for {pod.namespace!r}/{pod.name!r}")
        values = {CPU: round(got[0]), MEMORY: int(got[1]), PODS: 1}
        for r in resources:
            if r not in values:
                raise UsageError(f"pod {pod.namespace}/{pod.name}: metrics are missing {r!r} resource")
        return np.array([values[r] for r in resources], dtype=np.int64)


class PrometheusUsage:
    """prometheusUsageClient: one sample per node, labelled ``instance`` with the node's name, its value
    in [0, 1]; the node's ``MetricResource`` usage is int(value x 100). Pod usage is not known."""

    def __init__(self, query: PrometheusQuery, promql: str) -> None:
        self.query = query
        self.promql = promql

    def node_usage(
        self, nodes: Sequence[Node], pods: Sequence[Sequence[Pod]], resources: list[str]
    ) -> np.ndarray:
        result = self.query(self.promql)
        if isinstance(result, str):
            raise UsageError(f"unable to capture prometheus metrics: {result}")
        usage: dict[str, int] = {}
        for s in result:
            name = (s.get("metric") or {}).get("instance")
            if name is None:
                raise UsageError("the collected metrics sample is missing 'instance' key")
            v = series_value(s)
            if not 0 <= v <= 1:
                raise UsageError(
                    f"the collected metrics sample for {name!r} has value {v} outside of <0; 1> interval"
                )
            usage[str(name)] = int(v * 100)
        used = np.zeros((len(nodes), len(resources)), dtype=np.int64)
        for i, n in enumerate(nodes):
            if n.name not in usage:
                raise UsageError(f"unable to find metric entry for {n.name}")
            used[i, resources.index(METRIC_RESOURCE)] = usage[n.name]
        return used

    def pod_usage(self, pod: Pod, resources: list[str]) -> np.ndarray | None:
        return None
