"""The topology spreading scheduler_perf workloads at upstream's integration-test size (5 nodes)."""

from __future__ import annotations

from collections import Counter

import pytest

from harmonic.perf.runner import run_workload
from harmonic.perf.workloads import WORKLOADS
from harmonic.perf.workloads.topology_spread import ZONE_LABEL, topology_spreading
from harmonic.plugins.registry import default_registry
from harmonic.testing.harness import Harness


@pytest.mark.parametrize(
    "name", ["TopologySpreading", "PreferredTopologySpreading", "DefaultTopologySpreading"]
)
def test_workload_schedules_every_measured_pod(name: str) -> None:
    factory, _ = WORKLOADS[name]
    result = run_workload(factory(5, 10, 10), default_registry())
    assert (result.nodes, result.init_pods, result.scheduled) == (5, 10, 10)


def test_measured_pods_respect_the_zone_constraint() -> None:
    w = topology_spreading(6, 0, 30)
    nodes = list(w.nodes())
    zone_of = {n["metadata"]["name"]: n["metadata"]["labels"][ZONE_LABEL] for n in nodes}
    assert sorted(set(zone_of.values())) == ["moon-1", "moon-2", "moon-3"]
    pods = list(w.measured_pods())
    constraint = pods[0]["spec"]["topologySpreadConstraints"][0]
    assert (constraint["maxSkew"], constraint["whenUnsatisfiable"]) == (5, "DoNotSchedule")
    h = Harness()
    h.add_nodes(nodes)
    h.add_pods(pods)
    h.schedule()
    per_zone = Counter(zone_of[n] for n in h.placement().values())
    assert sum(per_zone.values()) == 30
    assert max(per_zone.values()) - min(per_zone.values()) <= 5
