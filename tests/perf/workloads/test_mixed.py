"""MixedSchedulingBasePod at upstream's integration-test size (5 nodes, 2 pods per init template)."""

from __future__ import annotations

from collections import Counter

from harmonic.perf.runner import run_workload
from harmonic.perf.workloads.mixed import INIT_TEMPLATES, mixed_scheduling_base_pod
from harmonic.plugins.registry import default_registry


def test_workload_schedules_every_measured_pod() -> None:
    result = run_workload(mixed_scheduling_base_pod(5, 2, 10), default_registry())
    assert (result.nodes, result.init_pods, result.scheduled) == (5, 2 * len(INIT_TEMPLATES), 10)


def test_init_pods_come_from_each_template_in_sched_0() -> None:
    w = mixed_scheduling_base_pod(5, 3, 1)
    pods = list(w.init_pods())
    assert {p["metadata"]["namespace"] for p in pods} == {"sched-0"}
    colors = Counter((p["metadata"].get("labels") or {}).get("color", "") for p in pods)
    assert colors == {"": 3, "blue": 3, "green": 3, "red": 3, "yellow": 3}
    assert {n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in w.nodes()} == {"zone1"}
