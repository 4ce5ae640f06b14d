"""LowNodeUtilization — balance. Nodes whose requested usage is at or below ``thresholds`` for every
configured resource (and that are schedulable) are under-utilized; nodes above ``targetThresholds``
for any resource are over-utilized. Pods leave over-utilized nodes (highest usage first, lowest
priority first) while the node stays above its target and the under-utilized nodes have room below
their targets. With ``useDeviationThresholds`` both are offsets from the mean usage. A move: each
replacement must land elsewhere, as the scheduler would place it.

Args: ``thresholds`` and ``targetThresholds`` (required, same resources, percentages 0..100,
thresholds <= targets unless deviation), ``useDeviationThresholds`` (false), ``numberOfNodes`` (0),
``evictableNamespaces`` (``exclude`` only), ``evictionLimits.node``. ``metricsUtilization`` (actual
usage from metrics-server or Prometheus) is not supported: an error names it.
"""

from __future__ import annotations

from typing import Any, ClassVar

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
    threshold_vector,
)


class EvictionLimits(PluginArgs):
    node: int | None = Field(default=None, ge=0)


class LowNodeUtilizationArgs(UtilizationArgs):
    use_deviation_thresholds: bool = False
    target_thresholds: dict[str, float] = Field(default_factory=dict)
    metrics_utilization: dict[str, Any] | None = None
    eviction_limits: EvictionLimits | None = None

    @model_validator(mode="after")
    def _valid(self) -> LowNodeUtilizationArgs:
        check_thresholds("targetThresholds", self.target_thresholds)
        if set(self.thresholds) != set(self.target_thresholds):
            raise ValueError("thresholds and targetThresholds configured different resources")
        for r, v in self.thresholds.items():
            if v > self.target_thresholds[r] and not self.use_deviation_thresholds:
                raise ValueError(f"thresholds' {r} percentage is greater than targetThresholds'")
        if self.metrics_utilization is not None:
            raise ValueError(
                "metricsUtilization: actual-usage metrics are not supported by Harmonic's rescheduler"
            )
        return self


class LowNodeUtilization(BalancePlugin):
    NAME: ClassVar[str] = "LowNodeUtilization"
    Args = LowNodeUtilizationArgs
    args: LowNodeUtilizationArgs

    def balance(self, nodes: list[Node]) -> None:
        a = self.args
        configured = list(a.thresholds)
        resources, usage, pct, low = measure(self.handle, nodes, a.thresholds)
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
        if not lows or len(lows) <= a.number_of_nodes or len(lows) == len(nodes) or not highs:
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
