"""DESIGN.md §6 invariants with the bundled ``harmonic`` profile (CommunicationAffinity and Dissonance
with its latency-critical limit on top of the default plugins): the random clusters and pods of
tests/scheduler/test_properties.py, each pod made a replica of one of three workloads — two
Deployments that talk to each other and a batch Job — with an affinity graph loaded. Placement
preferences must never break capacity, hard constraints, the no-lost-pod rule or determinism."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmonic.plugins.communicationaffinity.plugin import GRAPH_SERVICE
from harmonic.signals.graph import AffinityGraph
from harmonic.signals.identity import WorkloadKey
from harmonic.signals.service import GraphService
from harmonic.signals.telemetry import TrafficSample
from tests.scheduler.test_properties import PodSpec, node_specs, pod_specs, run

PROFILE = Path(__file__).resolve().parents[2] / "harmonic" / "data" / "profiles" / "harmonic.yaml"
CONFIG: dict[str, Any] = yaml.safe_load(PROFILE.read_text())
#: (owner kind, workload name) by pod index modulo 3: latency-critical web and api, batch crunch.
WORKLOADS = (("ReplicaSet", "web"), ("ReplicaSet", "api"), ("Job", "crunch"))


def services() -> dict[str, Any]:
    graph = AffinityGraph()
    graph.observe(
        [
            TrafficSample(WorkloadKey("default", "web"), WorkloadKey("default", "api"), 50.0),
            TrafficSample(WorkloadKey("default", "api"), WorkloadKey("default", "crunch"), 1.0),
        ],
        now=0.0,
    )
    return {GRAPH_SERVICE: GraphService(graph, [])}


def as_workload_replica(i: int, spec: PodSpec) -> dict[str, Any]:
    m = spec.manifest()
    kind, name = WORKLOADS[i % len(WORKLOADS)]
    meta = m["metadata"]
    meta.setdefault("labels", {})["app"] = name
    meta["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": f"uid-{name}", "controller": True}
    ]
    m["spec"]["schedulerName"] = "harmonic"
    return m


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(
    nodes=node_specs(),
    pods=pod_specs(),
    seed=st.integers(0, 3),
    bind_every=st.integers(1, 4),
    deletions=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 17)), max_size=3),
)
def test_invariants_hold_under_the_harmonic_profile(nodes, pods, seed, bind_every, deletions):
    run(nodes, pods, seed, bind_every, deletions, CONFIG, services(), as_workload_replica)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=node_specs(), pods=pod_specs(), seed=st.integers(0, 1000), bind_every=st.integers(1, 3))
def test_harmonic_profile_is_deterministic(nodes, pods, seed, bind_every):
    first = run(nodes, pods, seed, bind_every, [], CONFIG, services(), as_workload_replica)
    second = run(nodes, pods, seed, bind_every, [], CONFIG, services(), as_workload_replica)
    assert first == second
