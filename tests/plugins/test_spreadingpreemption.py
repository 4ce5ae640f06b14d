"""SpreadingPreemption: DefaultPreemption's victims, and among equally cheap nodes the one whose zone
holds fewest replicas of the preemptor's workload. Expected nodes are read off each row's layout."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.api.pod import parse_pod
from harmonic.conformance import _diagnosis, preemption_setup
from harmonic.framework.cycle_state import CycleState
from harmonic.plugins.registry import default_registry
from harmonic.testing import node, pod

LOW, HIGH = 100, 10000
ZONE = "topology.kubernetes.io/zone"


def _node(name: str, zone: str) -> dict[str, Any]:
    return node(name).only(pods="32", cpu="1", memory="1Gi").labels({ZONE: zone}).obj()


def _batch(name: str, on: str, started_ns: int, cpu: str = "1") -> dict[str, Any]:
    obj = pod(name).uid(name).priority(LOW).owner("Job", "etl").req(cpu=cpu).node(on).obj()
    obj.setdefault("status", {})["startTime"] = f"1970-01-01T00:00:00.{started_ns:09d}Z"
    return obj


def _web(name: str, on: str | None = None, owned: bool = True) -> dict[str, Any]:
    b = pod(name).uid(name).priority(HIGH).req(cpu="1")
    if owned:
        b = b.owner("ReplicaSet", "web-h1").label("pod-template-hash", "h1")
    if on:
        b = b.node(on)
    return b.obj()


#: n0 (zone a) runs a web replica; n1, n2 (zone a) and n3 (zone b) each run one batch pod whose
#: eviction makes room for another replica; n4 (zone b) is set per row. n2's batch pod started last, so
#: DefaultPreemption picks n2.
NODES = [_node("n0", "a"), _node("n1", "a"), _node("n2", "a"), _node("n3", "b"), _node("n4", "b")]
BATCH = [_batch("j1", "n1", 1), _batch("j2", "n2", 3), _batch("j3", "n3", 2)]


def _chosen(plugin_name: str, pods: list[dict[str, Any]], preemptor: dict[str, Any]) -> tuple[str, list[str]]:
    case = {
        "name": "t",
        "plugin": plugin_name,
        "args": {},
        "filterPlugins": ["NodeResourcesFit"],
        "nodes": NODES,
        "existingPods": pods,
        "pdbs": [],
        "nominatedPods": [],
    }
    fw, plugin, snap, handle = preemption_setup(case, default_registry())
    p = parse_pod(preemptor)
    state = CycleState()
    fw.run_pre_filter(state, p, snap)
    plugin.offset_rand = lambda n: 0
    every = {n.name: "Unschedulable" for _, n in snap.iter_nodes()}
    result, _ = plugin.post_filter(state, p, _diagnosis(snap, every))
    assert result is not None
    return result.nominated_node_name, sorted(v.name for v in handle.client.evicted)


@pytest.mark.parametrize(
    ("name", "pods", "preemptor", "default", "spreading"),
    [
        (
            "both zones hold one replica: a tie, so DefaultPreemption's latest start decides",
            [_web("web-0", "n0"), _web("web-9", "n4"), *BATCH],
            _web("web-1"),
            ("n2", ["j2"]),
            ("n2", ["j2"]),
        ),
        (
            "zone a holds the replica, zone b none: zone b, though its victims started earlier",
            [_web("web-0", "n0"), _batch("j4", "n4", 0), *BATCH],
            _web("web-1"),
            ("n2", ["j2"]),
            ("n3", ["j3"]),
        ),
        (
            "fewer victims comes first: every zone b node needs two",
            [
                _web("web-0", "n0"),
                _batch("j4a", "n4", 0, cpu="500m"),
                _batch("j4b", "n4", 0, cpu="500m"),
                _batch("j1", "n1", 1),
                _batch("j2", "n2", 3),
                _batch("j3a", "n3", 2, cpu="500m"),
                _batch("j3b", "n3", 2, cpu="500m"),
            ],
            _web("web-1"),
            ("n2", ["j2"]),
            ("n2", ["j2"]),
        ),
        (
            "a pod of no workload: DefaultPreemption's choice",
            [_web("web-0", "n0"), _batch("j4", "n4", 0), *BATCH],
            _web("lone", owned=False),
            ("n2", ["j2"]),
            ("n2", ["j2"]),
        ),
    ],
)
def test_spreading_preemption_picks_the_zone_with_fewest_siblings(name, pods, preemptor, default, spreading):
    assert _chosen("DefaultPreemption", pods, preemptor) == default, name
    assert _chosen("SpreadingPreemption", pods, preemptor) == spreading, name


def _service(name: str, on: str, started_ns: int, owner: str = "api-h1") -> dict[str, Any]:
    """A low-priority serving replica (the Jobs outrank it)."""
    b = pod(name).uid(name).priority(LOW).owner("ReplicaSet", owner).label("pod-template-hash", "h1")
    obj = b.req(cpu="1").node(on).obj()
    obj.setdefault("status", {})["startTime"] = f"1970-01-01T00:00:00.{started_ns:09d}Z"
    return obj


def _urgent(name: str, on: str | None = None) -> dict[str, Any]:
    b = pod(name).uid(name).priority(HIGH).owner("Job", "urgent").req(cpu="1")
    return (b.node(on) if on else b).obj()


@pytest.mark.parametrize(
    ("name", "pods", "default", "spreading"),
    [
        (
            # api runs twice in zone a (n1, n2) and once in zone b (n3); n0 and n4 hold pods the Job
            # cannot preempt. Every candidate costs one victim; n3's started last, so DefaultPreemption
            # takes zone b's only api replica. SpreadingPreemption takes a zone-a one instead.
            "a service's last replica in a zone is kept",
            [
                _urgent("u0", "n0"),
                _urgent("u4", "n4"),
                _service("a1", "n1", 1),
                _service("a2", "n2", 2),
                _service("a3", "n3", 3),
            ],
            ("n3", ["a3"]),
            ("n2", ["a2"]),
        ),
        (
            # Each zone's replica is its last: no difference, DefaultPreemption's latest start decides.
            "every victim is a zone's last replica",
            [
                _urgent("u0", "n0"),
                _urgent("u4", "n4"),
                _urgent("u2", "n2"),
                _service("a1", "n1", 1),
                _service("a3", "n3", 3),
            ],
            ("n3", ["a3"]),
            ("n3", ["a3"]),
        ),
    ],
)
def test_spreading_preemption_keeps_a_zones_last_replica_of_a_service(name, pods, default, spreading):
    assert _chosen("DefaultPreemption", pods, _urgent("u9")) == default, name
    assert _chosen("SpreadingPreemption", pods, _urgent("u9")) == spreading, name
