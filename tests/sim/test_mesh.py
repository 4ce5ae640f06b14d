"""The simulator's harmony signals: the simulated mesh as a telemetry source, the graph service a
profile gets, and the latency-critical slowdown metric."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harmonic.plugins.registry import default_registry
from harmonic.signals.identity import WorkloadKey
from harmonic.signals.prometheus import PrometheusSource
from harmonic.sim.engine import World
from harmonic.sim.mesh import MESH_URL, SimulatedPrometheus, TopologySeed, graph_service_for
from harmonic.sim.model_figures import latency_critical_slowdowns
from harmonic.sim.profiles import profile_runs

from .helpers import deployment, job, objects, plan_of, run, scenario

HARMONIC = str(Path(__file__).resolve().parents[2] / "harmonic" / "data" / "profiles" / "harmonic.yaml")


def test_slowdown_of_a_latency_critical_pod_beside_batch():
    # one 4-CPU node: a 1-CPU Deployment replica (latency-critical) and a 2-CPU Job pod (batch-cpu,
    # little memory per core). The default matrix's LC<-batch-cpu entry is .5 at a full node, so
    # the replica is predicted .5 * 2/4 = .25 slower; the DaemonSet-free node holds nothing else.
    sc = scenario(
        [objects(deployment("web", 1, cpu="1")), objects(job("crunch", cpu="2"), duration=600)],
        nodes=1,
        duration=60,
    )
    world = run(sc)
    assert latency_critical_slowdowns(world.scheduler.cache.snapshot) == pytest.approx([0.25])


def test_no_latency_critical_pods_means_no_sample():
    world = run(scenario([objects(job("crunch", cpu="2"), duration=600)], nodes=1, duration=60))
    assert latency_critical_slowdowns(world.scheduler.cache.snapshot) == []


def _topology(tmp_path: Path) -> Path:
    topo = {
        "name": "shop",
        "services": [
            {"name": "front", "cpu_request": "100m", "memory_request": "64Mi", "replicas": 1},
            {"name": "cart", "cpu_request": "100m", "memory_request": "64Mi", "replicas": 1},
            {"name": "mail", "cpu_request": "100m", "memory_request": "64Mi", "replicas": 1},
        ],
        "edges": [
            {"src": "front", "dst": "cart", "weight": 2.0},
            {"src": "front", "dst": "mail", "weight": 0.5},
        ],
    }
    path = tmp_path / "shop.json"
    path.write_text(json.dumps(topo))
    return path


def test_mesh_reports_traffic_between_running_workloads_only(tmp_path):
    path = _topology(tmp_path)
    sc = scenario(
        [{"type": "topology", "topology": str(path), "namespace": "shop", "userRate": 10}],
        events=[{"type": "deploymentScaled", "at": 30, "namespace": "shop", "name": "mail", "replicas": 0}],
        duration=60,
    )
    sc = {**sc, "mesh": {"delay": 0, "window": 20, "noise": 0}}
    world = run(sc)
    assert world.mesh_counters is None  # the default profile has no CommunicationAffinity
    from harmonic.sim.mesh import MeshCounters

    counters = MeshCounters(world)
    counters.observe(40.0)  # the state at the end has held since mail was scaled to zero at 30 s
    source = PrometheusSource(MESH_URL, transport=SimulatedPrometheus(world, counters))
    reading = source.read()
    # mail was scaled to zero: only front -> cart carries traffic, weight * userRate requests/s
    assert [(s.src, s.dst, s.requests) for s in reading.samples] == [
        (WorkloadKey("shop", "front"), WorkloadKey("shop", "cart"), 20.0)
    ]
    seed = TopologySeed(world.plan.topologies).read()
    assert {(s.dst.name, s.requests) for s in seed.samples} == {("cart", 20.0), ("mail", 5.0)}


def test_only_profiles_with_communication_affinity_get_a_graph(tmp_path):
    registry = default_registry()
    runs = profile_runs((HARMONIC,), registry)
    plan_scenario = scenario(
        [{"type": "topology", "topology": str(_topology(tmp_path)), "namespace": "shop", "userRate": 1}]
    )
    plan = plan_of(plan_scenario)
    by_name = {r.name: r for r in runs}
    world = World(plan, by_name["harmonic"], registry)
    assert graph_service_for(by_name["default-scheduler"].profile, world) is None
    service = graph_service_for(by_name["harmonic"].profile, world)
    assert service is not None
    service.maybe_refresh(0.0)
    # nothing runs yet and the mesh has seen no traffic: no perfect foresight by default
    assert len(service.view) == 0
    seeded = World(plan_of({**plan_scenario, "mesh": {"seedTopology": True}}), by_name["harmonic"], registry)
    service = graph_service_for(by_name["harmonic"].profile, seeded)
    assert service is not None
    service.maybe_refresh(0.0)
    # seeded runs get the topology's edges before anything runs
    peers, weights = service.view.neighbours(WorkloadKey("shop", "front"))
    assert {p.name for p in peers} == {"cart", "mail"} and all(weights > 0)
