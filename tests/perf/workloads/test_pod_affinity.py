"""The inter-pod affinity scheduler_perf workloads at upstream's integration-test sizes, and where their
pods land."""

from __future__ import annotations

from collections import Counter

import pytest

from harmonic.perf.runner import Workload, run_workload
from harmonic.perf.workloads import WORKLOADS
from harmonic.perf.workloads.pod_affinity import (
    scheduling_pod_anti_affinity,
    scheduling_preferred_pod_affinity,
    scheduling_preferred_pod_anti_affinity,
)
from harmonic.plugins.registry import default_registry
from harmonic.testing.harness import Harness

SIZES = {
    "SchedulingPodAntiAffinity": (5, 1, 4),
    "SchedulingPodAffinity": (5, 5, 10),
    "SchedulingPreferredPodAffinity": (5, 5, 10),
    "SchedulingPreferredPodAntiAffinity": (5, 5, 10),
}


@pytest.mark.parametrize("name", sorted(SIZES))
def test_workload_schedules_every_measured_pod(name: str) -> None:
    factory, _ = WORKLOADS[name]
    nodes, init, pods = SIZES[name]
    result = run_workload(factory(nodes, init, pods), default_registry())
    assert (result.nodes, result.init_pods, result.scheduled) == (nodes, init, pods)


def test_upstream_performance_sizes_are_the_defaults() -> None:
    assert WORKLOADS["SchedulingPodAntiAffinity"][1] == (5000, 1000, 2000)
    for name in (
        "SchedulingPodAffinity",
        "SchedulingPreferredPodAffinity",
        "SchedulingPreferredPodAntiAffinity",
    ):
        assert WORKLOADS[name][1] == (5000, 5000, 5000)


def _placed(workload: Workload) -> Counter[str]:
    h = Harness()
    h.add_nodes(workload.nodes())
    h.add_pods(workload.init_pods())
    h.add_pods(workload.measured_pods())
    h.schedule()
    return Counter(h.placement().values())


def test_anti_affinity_pods_get_a_host_each_and_the_rest_wait() -> None:
    per_node = _placed(scheduling_pod_anti_affinity(4, 2, 4))
    assert sorted(per_node.values()) == [1, 1, 1, 1]


def test_preferred_affinity_piles_pods_together_and_anti_affinity_spreads_them() -> None:
    together = _placed(scheduling_preferred_pod_affinity(6, 3, 3))
    assert len(together) == 1
    apart = _placed(scheduling_preferred_pod_anti_affinity(6, 3, 3))
    assert sorted(apart.values()) == [1] * 6
