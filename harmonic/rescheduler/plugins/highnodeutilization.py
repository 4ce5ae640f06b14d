"""HighNodeUtilization — balance. Nodes whose requested usage is at or below ``thresholds`` for every
configured resource are under-utilized; their pods (lowest usage node first, lowest priority pod first)
move to the other schedulable nodes while those have room, so the emptied nodes can be scaled down.
Best with a bin-packing scheduler profile (MostAllocated). A move: each replacement must land
elsewhere, as the scheduler would place it.

Args: ``thresholds`` (required, percentages 0..100), ``numberOfNodes`` (0), ``evictionModes``
(``OnlyThresholdingResources``: only pods requesting a thresholded resource), ``evictableNamespaces``
(``exclude`` only).
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.rescheduler.framework import BalancePlugin
from harmonic.rescheduler.plugins.common import pod_filter
from harmonic.rescheduler.plugins.nodeutilization import (
    UtilizationArgs,
    by_total_usage,
    capped,
    evict_from_sources,
    measure,
    nothing_to_do,
    threshold_vector,
)


class HighNodeUtilizationArgs(UtilizationArgs):
    eviction_modes: tuple[Literal["OnlyThresholdingResources"], ...] = ()


def _requests_any(p: Pod, resources: list[str]) -> bool:
    containers = list(p.spec.get("containers") or ()) + list(p.spec.get("initContainers") or ())
    return any(r in ((c.get("resources") or {}).get("requests") or {}) for c in containers for r in resources)


class HighNodeUtilization(BalancePlugin):
    NAME: ClassVar[str] = "HighNodeUtilization"
    Args = HighNodeUtilizationArgs
    args: HighNodeUtilizationArgs

    def balance(self, nodes: list[Node]) -> None:
        a = self.args
        configured = list(a.thresholds)
        resources, usage, pct, low = measure(self.handle, nodes, a.thresholds)
        under = (pct <= low).all(axis=1)
        unschedulable = np.array([n.unschedulable for n in nodes], dtype=bool)
        lows = np.flatnonzero(under).tolist()
        targets = np.flatnonzero(~under & ~unschedulable).tolist()
        why = nothing_to_do(
            len(lows),
            len(nodes),
            a.number_of_nodes,
            len(targets),
            "No node is available to schedule the pods, nothing to do here",
        )
        if why is not None:
            self.handle.log.plans.append((self.NAME, "nothing to do", why))
            return
        high = threshold_vector(resources, dict.fromkeys(configured, 100.0), 100.0)
        available = capped(usage.capacity, resources, high, set(configured))
        base = pod_filter(self.handle, pre_eviction=False)
        only = "OnlyThresholdingResources" in a.eviction_modes

        def evictable(p: Pod) -> bool:
            return base(p) and (not only or _requests_any(p, configured))

        def keep_going(s: int, total: np.ndarray) -> bool:
            return bool((total > 0).all())

        evict_from_sources(
            self.handle,
            self.NAME,
            "node below the utilization threshold",
            usage,
            by_total_usage(usage, lows, ascending=True),
            targets,
            available,
            evictable,
            keep_going,
            a.evictable_namespaces,
            None,
        )
