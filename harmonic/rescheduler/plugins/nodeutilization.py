"""What LowNodeUtilization and HighNodeUtilization share (descheduler's ``nodeutilization`` package):
node usage (from pod requests, or actual usage: ``usageclients``), percentages of allocatable,
classification, and the eviction loop that moves pods from source nodes while destination nodes have
room below their thresholds.

Usage and capacity are (nodes x resources) integer arrays (CPU in millicores, pods as a count), so
classifying a thousand nodes is a few numpy operations.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Self

import numpy as np
from pydantic import Field, model_validator

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.api.resources import CPU, MEMORY, PODS
from harmonic.api.taints import Taint, tolerated
from harmonic.framework.args import PluginArgs
from harmonic.rescheduler.args import Namespaces
from harmonic.rescheduler.budget import EvictionLimitError
from harmonic.rescheduler.framework import Handle
from harmonic.rescheduler.plugins.common import priority_low_to_high
from harmonic.rescheduler.plugins.usageclients import (
    PrometheusUsage,
    RequestedUsage,
    UsageClient,
    UsageError,
    capacity,
)

log = logging.getLogger(__name__)

BASIC = (CPU, MEMORY, PODS)


def check_thresholds(name: str, thresholds: Mapping[str, float]) -> None:
    if not thresholds:
        raise ValueError(f"{name}: no resource threshold is configured")
    for r, v in thresholds.items():
        if not 0 <= v <= 100:
            raise ValueError(f"{name}: {r} threshold not in [0, 100] range")


class UtilizationArgs(PluginArgs):
    """What both node-utilization plugins take: ``thresholds`` (required), ``numberOfNodes`` (0) and
    ``evictableNamespaces`` (``exclude`` only)."""

    thresholds: dict[str, float] = Field(default_factory=dict)
    number_of_nodes: int = 0
    evictable_namespaces: Namespaces | None = None

    @model_validator(mode="after")
    def _common(self) -> Self:
        if self.evictable_namespaces is not None and self.evictable_namespaces.include:
            raise ValueError(
                "evictableNamespaces: only Exclude namespaces can be set, inclusion is not supported"
            )
        check_thresholds("thresholds", self.thresholds)
        return self


def extended(resources: list[str]) -> list[str]:
    return list(dict.fromkeys([*resources, *BASIC]))


@dataclass
class Usage:
    nodes: list[Node]
    resources: list[str]
    used: np.ndarray  # int64 (nodes, resources)
    capacity: np.ndarray  # int64 (nodes, resources)
    pods: list[list[Pod]]
    client: UsageClient

    def percent(self) -> np.ndarray:
        cap = self.capacity.astype(np.float64)
        out = np.zeros_like(cap)
        np.divide(self.used * 100.0, cap, out=out, where=cap > 0)
        return out


def node_usage(handle: Handle, nodes: list[Node], resources: list[str], client: UsageClient) -> Usage:
    """Every non-terminal pod of each node and the node's usage as ``client`` measures it (raises
    ``UsageError`` when it cannot)."""
    pods = [handle.pods_on(n.name) for n in nodes]
    return Usage(
        nodes, resources, client.node_usage(nodes, pods, resources), capacity(nodes, resources), pods, client
    )


def measure(
    handle: Handle, nodes: list[Node], thresholds: Mapping[str, float], client: UsageClient | None = None
) -> tuple[list[str], Usage, np.ndarray, np.ndarray]:
    """The thresholded resources plus CPU, memory and pods (only ``MetricResource`` for a Prometheus
    query): usage, its percentages of allocatable and the ``thresholds`` as a vector (unthresholded
    resources never limit)."""
    client = client if client is not None else RequestedUsage()
    resources = list(thresholds) if isinstance(client, PrometheusUsage) else extended(list(thresholds))
    usage = node_usage(handle, nodes, resources, client)
    return resources, usage, usage.percent(), threshold_vector(resources, thresholds, np.inf)


def threshold_vector(resources: list[str], thresholds: Mapping[str, float], default: float) -> np.ndarray:
    return np.array([thresholds.get(r, default) for r in resources], dtype=np.float64)


def capped(capacity: np.ndarray, resources: list[str], high: np.ndarray, configured: set[str]) -> np.ndarray:
    """capNodeCapacitiesToThreshold: capacity x threshold% for the thresholded resources (truncated)."""
    mask = np.array([r in configured for r in resources], dtype=bool)
    scaled = (high[..., :] * 0.01 * capacity).astype(np.int64)
    return np.where(mask, scaled, capacity)


def tolerates_some(pod: Pod, taints_of: Sequence[tuple[Taint, ...]]) -> bool:
    """utils.PodToleratesTaints: the pod tolerates every taint of at least one destination node."""
    for taints in taints_of:
        if len(pod.tolerations) >= len(taints) and all(tolerated(pod.tolerations, t) for t in taints):
            return True
    return False


def evict_from_sources(
    handle: Handle,
    plugin: str,
    why: str,
    usage: Usage,
    sources: list[int],
    destinations: list[int],
    available: np.ndarray,
    evictable: Callable[[Pod], bool],
    keep_going: Callable[[int, np.ndarray], bool],
    excluded_namespaces: Namespaces | None,
    per_node_limit: int | None,
) -> None:
    """evictPodsFromSourceNodes + evictPods. ``available`` is every node's threshold-capped capacity.
    A pod whose usage the client cannot measure is skipped; when the client cannot measure pods at all
    (Prometheus), a node gives one pod, or up to ``per_node_limit``, without accounting, as upstream."""
    total = (available[destinations] - usage.used[destinations]).sum(axis=0)
    dest_taints = [usage.nodes[d].taints for d in destinations]
    ev = handle.evictor
    for s in sources:
        removable = priority_low_to_high(p for p in usage.pods[s] if evictable(p))
        if not removable or not keep_going(s, total):
            continue
        count = 0
        for p in removable:
            if per_node_limit is not None and count >= per_node_limit:
                break
            if not tolerates_some(p, dest_taints):
                continue
            if excluded_namespaces is not None and p.namespace in excluded_namespaces.exclude:
                continue
            if not ev.pre_eviction_filter(p):
                continue
            try:
                used = usage.client.pod_usage(p, usage.resources)
            except UsageError as e:
                log.warning("unable to get pod usage", extra={"pod": p.key, "error": str(e)})
                continue
            try:
                if not ev.evict(p, plugin, why, move=True):
                    continue
            except EvictionLimitError as e:
                if e.scope == "total":
                    return
                if e.scope == "node":
                    break
                continue
            if used is None and per_node_limit is None:
                break
            count += 1
            if used is None:
                continue
            usage.used[s] -= used
            total -= used
            if not keep_going(s, total):
                break


def nothing_to_do(lows: int, nodes: int, number_of_nodes: int, targets: int, no_target: str) -> str | None:
    """Why a node-utilization plugin stops before evicting, in descheduler's log words; None to go on."""
    if lows == 0:
        return "No node is underutilized, nothing to do here, you might tune your thresholds further"
    if lows <= number_of_nodes:
        return "Number of nodes underutilized is less or equal than NumberOfNodes, nothing to do here"
    if lows == nodes:
        return "All nodes are underutilized, nothing to do here"
    if targets == 0:
        return no_target
    return None


def by_total_usage(usage: Usage, idx: list[int], ascending: bool) -> list[int]:
    """sortNodesByUsage: the sum of the usage values (CPU in millicores, others in units)."""
    sums = usage.used.sum(axis=1)
    return sorted(idx, key=lambda i: int(sums[i]), reverse=not ascending)
