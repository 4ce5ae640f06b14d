"""scheduler_perf workloads by name. Each family lives in its own module and registers here."""

from __future__ import annotations

from collections.abc import Callable

from harmonic.perf.runner import Workload
from harmonic.perf.workloads import (
    basic,
    gangs,
    harmony,
    mixed,
    node_affinity,
    pod_affinity,
    preemption,
    topology_spread,
    unschedulable,
)

#: name -> (factory(nodes, init_pods, pods), default sizes (nodes, init pods, measured pods))
WORKLOADS: dict[str, tuple[Callable[[int, int, int], Workload], tuple[int, int, int]]] = {
    **basic.WORKLOADS,
    **gangs.WORKLOADS,
    **harmony.WORKLOADS,
    **node_affinity.WORKLOADS,
    **pod_affinity.WORKLOADS,
    **preemption.WORKLOADS,
    **topology_spread.WORKLOADS,
    **mixed.WORKLOADS,
    **unschedulable.WORKLOADS,
}
