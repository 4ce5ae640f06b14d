"""Engine and judge end to end on small scenarios: zone outages, survivability, CPU-seconds, and the
truth reading placements from the simulated cluster (never the scheduler)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harmonic.plugins.registry import default_registry
from harmonic.sim.engine import World
from harmonic.sim.metrics import summarize
from harmonic.sim.profiles import profile_runs
from harmonic.sim.truth.config import DEFAULT_PRESSURE, DEFAULT_SENSITIVITY

from ..helpers import deployment, job, objects, plan_of, run, scenario

ZONE = "topology.kubernetes.io/zone"


def world_of(sc: dict[str, Any], base: Path = Path(".")) -> World:
    registry = default_registry()
    return World(plan_of(sc, base), profile_runs((), registry)[0], registry)


def pinned(name: str, replicas: int, zone: str | None = None, spread: str | None = None) -> dict[str, Any]:
    """A Deployment whose replicas are pinned to ``zone`` and/or spread hard over ``spread`` domains."""
    d = deployment(name, replicas)
    pod_spec = d["spec"]["template"]["spec"]
    if zone is not None:
        pod_spec["nodeSelector"] = {ZONE: zone}
    if spread is not None:
        pod_spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": spread,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": name}},
            }
        ]
    return d


def node_log(world: World) -> list[tuple[float, str, str]]:
    """(time, node, Ready status) of every node update."""
    out: list[tuple[float, str, str]] = []

    def on_node(old: Any, new: Any) -> None:
        if new is None:
            return
        ready = [
            c["status"] for c in (new.get("status") or {}).get("conditions") or () if c["type"] == "Ready"
        ]
        out.append((world.clock.now(), new["metadata"]["name"], ready[-1] if ready else "?"))

    world.cluster.subscribe(on_node, lambda old, new: None, replay=False)
    return out


def pod_deletions(world: World) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []

    def on_pod(old: Any, new: Any) -> None:
        if new is None and old is not None:
            out.append((world.clock.now(), f"{old['metadata']['namespace']}/{old['metadata']['name']}"))

    world.cluster.subscribe(lambda old, new: None, on_pod, replay=False)
    return out


# ------------------------------------------------------------------ zone outages
def _outage(*events: dict[str, Any], duration: float = 600) -> dict[str, Any]:
    # Pool "n": n-0, n-3 in zone a; n-1 in b; n-2 in c. web: one replica per node (hostname spread).
    return scenario(
        [objects(pinned("web", 4, spread="kubernetes.io/hostname"))],
        list(events),
        nodes=4,
        duration=duration,
    )


def test_zone_failed_then_restored_before_the_toleration_keeps_the_pods():
    w = world_of(
        _outage(
            {"type": "zoneFailed", "at": 60, "zone": "a"}, {"type": "zoneRestored", "at": 120, "zone": "a"}
        )
    )
    nodes, deleted = node_log(w), pod_deletions(w)
    w.run()
    zone_of = w.zone_of()
    in_a = sorted(n for n, z in zone_of.items() if z == "a")
    assert in_a == ["n-0", "n-3"]
    assert sorted(r.node for r in w.records.values()) == ["n-0", "n-1", "n-2", "n-3"]
    # Every node of zone a went Unknown at 60 and Ready at 120; nothing else changed.
    assert sorted((t, n, s) for t, n, s in nodes if t > 0) == [
        (60, "n-0", "Unknown"),
        (60, "n-3", "Unknown"),
        (120, "n-0", "True"),
        (120, "n-3", "True"),
    ]
    assert not w.failed_nodes and not w.failed_zones
    # The taints are gone and no pod was evicted (the 300 s toleration had not run out).
    for n in in_a:
        assert not [t for t in w.cluster.nodes[n]["spec"].get("taints") or () if "unreachable" in t["key"]]
    assert deleted == []
    assert w.stats["pods_evicted"] == 0
    assert summarize(w)["requests_served_during_outage"] == {}


def test_zone_failed_for_good_evicts_after_the_toleration():
    w = world_of(_outage({"type": "zoneFailed", "at": 60, "zone": "a"}))
    deleted = pod_deletions(w)
    w.run()
    assert w.failed_nodes == {"n-0", "n-3"} and w.failed_zones == {"a"}
    # DefaultTolerationSeconds: unreachable tolerated for 300 s.
    assert sorted(t for t, _ in deleted) == [360, 360]
    # The replacements cannot land on a failed node.
    assert all(r.node in (None, "n-1", "n-2") for r in w.records.values())


def test_eviction_counts_the_toleration_from_the_latest_failure():
    w = world_of(
        _outage(
            {"type": "zoneFailed", "at": 60, "zone": "a"},
            {"type": "zoneRestored", "at": 120, "zone": "a"},
            {"type": "zoneFailed", "at": 200, "zone": "a"},
        )
    )
    deleted = pod_deletions(w)
    w.run()
    assert sorted(t for t, _ in deleted) == [500, 500]


# ------------------------------------------------------------------ requests served during an outage
def _two_zone_app(tmp_path: Path, *events: dict[str, Any]) -> dict[str, Any]:
    """App a -> b, one replica each, all in zone a: zone b's only node is tainted."""
    topo = {
        "name": "app",
        "services": [
            {"name": "a", "cpu_request": "100m", "replicas": 1},
            {"name": "b", "cpu_request": "100m", "replicas": 1},
        ],
        "edges": [{"src": "a", "dst": "b", "weight": 1}],
    }
    (tmp_path / "app.json").write_text(json.dumps(topo))
    sc = scenario(
        [{"type": "topology", "topology": "app.json", "namespace": "app", "userRate": 5}],
        list(events),
        duration=240,
        sampleInterval=30,
        groundTruth={"requestsPerSample": 50},
    )
    sc["cluster"]["nodePools"] = [
        {
            "name": "a",
            "count": 2,
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "zones": ["a"],
        },
        {
            "name": "b",
            "count": 1,
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "zones": ["b"],
            "taints": [{"key": "dedicated", "effect": "NoSchedule"}],
        },
    ]
    return sc


@pytest.mark.parametrize(("zone", "served"), [("a", 0.0), ("b", 1.0)])
def test_requests_served_during_outage(tmp_path, zone, served):
    m = summarize(run(_two_zone_app(tmp_path, {"type": "zoneFailed", "at": 60, "zone": zone}), tmp_path))
    assert m["requests_served_during_outage"] == {"app": served}


def test_requests_served_during_outage_only_with_a_zone_failure(tmp_path):
    m = summarize(run(_two_zone_app(tmp_path), tmp_path))
    assert "requests_served_during_outage" not in m
    # A single node failing is not a zone outage.
    m = summarize(run(_two_zone_app(tmp_path, {"type": "nodeFailed", "at": 60, "node": "a-0"}), tmp_path))
    assert "requests_served_during_outage" not in m
    assert m["user_request_latency_ms"]["app"]["p50"] is not None


# ------------------------------------------------------------------ survivability
SURVIVABLE = {
    # 2 replicas, both in zone a (on its two nodes): survive a node, not a zone.
    "one zone, two nodes": ([pinned("one", 2, zone="a", spread="kubernetes.io/hostname")], 0.0, 1.0),
    # Spread over zones: survive both.
    "spread over zones": ([pinned("two", 2, spread=ZONE)], 1.0, 1.0),
    "both": (
        [pinned("one", 2, zone="a", spread="kubernetes.io/hostname"), pinned("two", 2, spread=ZONE)],
        0.5,
        1.0,
    ),
    # Single replicas and Jobs are not counted: nothing to judge.
    "nothing multi-replica": ([deployment("solo", 1)], None, None),
}


@pytest.mark.parametrize(("objs", "zone_share", "node_share"), SURVIVABLE.values(), ids=SURVIVABLE.keys())
def test_failure_survivable_shares(objs, zone_share, node_share):
    # n-0, n-2 in zone a; n-1, n-3 in zone b.
    w = run(scenario([objects(*objs)], nodes=4, zones=("a", "b"), duration=120))
    assert all(r.node is not None for r in w.records.values())
    m = summarize(w)
    assert m["zone_failure_survivable_share"] == zone_share
    assert m["node_failure_survivable_share"] == node_share


def test_two_replicas_on_one_node_survive_nothing():
    w = run(scenario([objects(pinned("dup", 2, zone="a"))], nodes=2, zones=("a", "b"), duration=60))
    assert Counter(r.node for r in w.records.values()) == Counter({"n-0": 2})
    m = summarize(w)
    assert m["zone_failure_survivable_share"] == 0.0
    assert m["node_failure_survivable_share"] == 0.0


# ------------------------------------------------------------------ throughput
def test_cpu_seconds_completed_is_cores_times_work_of_finished_pods():
    batch = job("batch", cpu="500m", parallelism=2, completions=2)
    small = job("small", cpu="250m")
    sc = scenario(
        [
            objects(batch, duration=100),
            objects(small, duration=40, at=30),
            objects(deployment("web", 2, cpu="1")),
            # Still running at the end: not finished, not counted.
            objects(job("long", cpu="2"), duration=10_000),
        ],
        duration=300,
    )
    m = summarize(run(sc))
    assert m["pods_completed"] == 3
    # 2 pods x 0.5 core x 100 s + 1 pod x 0.25 core x 40 s: the work done, however long neighbours
    # made it take.
    assert m["cpu_seconds_completed"] == pytest.approx(110.0)


def _slowdown(victim: str, neighbours: list[tuple[str, float]]) -> float:
    """The truth's documented formula (docs/simulator.md), spread 0: sum_r sensitivity x P x (1 + P)."""
    total = 0.0
    for r in ("cpu", "memoryBandwidth", "io"):
        p = sum(DEFAULT_PRESSURE[c][r] * share for c, share in neighbours)
        total += DEFAULT_SENSITIVITY[victim][r] * p * (1 + p)
    return total


BATCH_PROGRESS = {
    # name: (Jobs bound together at t=0 on one 4-core node: (cpu, duration)), expected end
    "alone: its duration": ([("2", 100)], 100.0),
    "beside another: slowed by the truth": (
        [("2", 100), ("2", 100)],
        100.0 * (1 + _slowdown("batch-cpu", [("batch-cpu", 0.5)])),
    ),
    "the neighbour leaves: the rest at full speed": (
        [("2", 100), ("2", 20)],
        # Both slowed until the short one's 20 s of work are done, then alone.
        20.0 * (1 + _slowdown("batch-cpu", [("batch-cpu", 0.5)])) + 80.0,
    ),
}


@pytest.mark.parametrize(("jobs", "end"), BATCH_PROGRESS.values(), ids=BATCH_PROGRESS.keys())
def test_jobs_advance_at_the_truths_slowdown(jobs, end):
    sc = scenario(
        [objects(job(f"j{i}", cpu=cpu), duration=d) for i, (cpu, d) in enumerate(jobs)],
        nodes=1,
        groundTruth={"workloadSensitivitySpread": 0},
    )
    w = run(sc)
    m = summarize(w)
    assert m["pods_completed"] == len(jobs)
    assert m["virtual_seconds"] == pytest.approx(end)
    assert m["cpu_seconds_completed"] == pytest.approx(sum(2 * d for _, d in jobs))
    batch = m["batch_slowdown_truth"]
    assert (batch["mean"] > 0) == (len(jobs) > 1)


# ------------------------------------------------------------------ the judge reads the cluster
class _Trap:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the ground truth read the scheduler ({name})")


def test_truth_reads_the_cluster_not_the_scheduler(tmp_path):
    sc = _two_zone_app(tmp_path, {"type": "zoneFailed", "at": 60, "zone": "b"})
    w = world_of(sc, tmp_path)
    sample = w.truth.sample

    def trapped() -> None:
        scheduler, w.scheduler = w.scheduler, _Trap()
        try:
            sample()
        finally:
            w.scheduler = scheduler

    w.truth.sample = trapped  # type: ignore[method-assign]
    w.run()
    scheduler, w.scheduler = w.scheduler, _Trap()
    try:
        truth = w.truth.summary()
    finally:
        w.scheduler = scheduler
    assert truth["requests_served_during_outage"] == {"app": 1.0}
    # What the truth saw is what the cluster holds: every running pod by its spec.nodeName.
    bound = Counter(p["spec"].get("nodeName") for p in w.cluster.pods.values())
    assert bound and set(bound) <= {"a-0", "a-1"}
    t = w.truth.table
    names = {i: n for n, i in w.truth.node_ids.items()}
    seen = [names[int(t.node[slot])] for slot in t.slot_of.values()]
    assert sorted(seen) == sorted(bound.elements())


def test_user_request_latency_and_true_slowdown_are_reported(tmp_path):
    m = summarize(run(_two_zone_app(tmp_path), tmp_path))
    lat = m["user_request_latency_ms"]["app"]
    assert 0 < lat["p50"] <= lat["p99"]
    lc = m["latency_critical_slowdown_truth"]
    assert lc["mean"] is not None and lc["mean"] >= 0
    assert set(m["truth_perturbed"]) == {"x0.5", "x2", "mixed"}
