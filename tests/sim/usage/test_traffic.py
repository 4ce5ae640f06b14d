"""Topology services' usage follows their user rate; NICs and disks saturate and slow pods (usage truth)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harmonic.plugins.nodebandwidth import DISK_BANDWIDTH, NETWORK_BANDWIDTH
from harmonic.sim.plan import CreateObject
from harmonic.sim.usage.traffic import Traffic

from ..helpers import job, objects, plan_of, run, scenario

STILL = {"amplitude": 0, "memoryAmplitude": 0, "noise": 0}

# caller -> callee, 2 calls per user action of 1000 bytes; the callee takes 10 ms of CPU per call.
TOPOLOGY = {
    "name": "pair",
    "services": [
        {"name": "caller", "cpu_request": "100m", "memory_request": "64Mi", "replicas": 1},
        {
            "name": "callee",
            "cpu_request": "1",
            "memory_request": "64Mi",
            "replicas": 2,
            "service_time_ms": 10,
        },
    ],
    "edges": [{"src": "caller", "dst": "callee", "weight": 2, "bytes": 1000}],
}


def _topology_scenario(tmp_path: Path, user_rate: float, **extra: Any) -> dict[str, Any]:
    (tmp_path / "pair.json").write_text(json.dumps(TOPOLOGY))
    return scenario(
        [{"type": "topology", "topology": "pair.json", "userRate": user_rate, "namespace": "shop"}],
        nodes=1, cpu="8", zones=("a",), duration="5m",
        usage={"default": {**STILL, "cpu": 0.5}} | extra,
    )  # fmt: skip


def _pod_cpu(world: Any) -> dict[str, float]:
    tick = world.usage.history[-1]
    return {k.split("/")[1].rsplit("-", 2)[0]: float(v) for k, v in zip(tick.pods, tick.pod_cpu, strict=True)}


@pytest.mark.parametrize(("user_rate", "callee_cpu"), [(10.0, 100.0), (20.0, 200.0)])
def test_a_called_service_uses_cpu_in_proportion_to_its_user_rate(tmp_path, user_rate, callee_cpu):
    w = run(_topology_scenario(tmp_path, user_rate), tmp_path)
    cpu = _pod_cpu(w)
    # callee: 2 x user_rate calls/s x 10 ms over 2 replicas; caller (called by nobody): 0.5 x 100m.
    assert cpu["callee"] == pytest.approx(callee_cpu)
    assert cpu["caller"] == pytest.approx(50.0)


def test_topology_pods_declare_their_share_of_the_traffic(tmp_path):
    plan = plan_of(_topology_scenario(tmp_path, 10.0), tmp_path)
    declared = {
        t.action.obj.name: t.action.obj.manifest["spec"]["template"]["metadata"].get("annotations", {})
        for t in plan.timeline
        if isinstance(t.action, CreateObject)
    }
    # 20 calls/s x 1000 bytes: the caller's one replica sends all, each callee replica receives half.
    assert declared["caller"] == {NETWORK_BANDWIDTH: "20000"}
    assert declared["callee"] == {NETWORK_BANDWIDTH: "10000"}
    off = plan_of(_topology_scenario(tmp_path, 10.0, bandwidth={"declare": False}), tmp_path)
    assert all(
        "annotations" not in t.action.obj.manifest["spec"]["template"]["metadata"]
        for t in off.timeline
        if isinstance(t.action, CreateObject)
    )


def test_only_calls_between_nodes_cross_a_nic(tmp_path):
    plan = plan_of(_topology_scenario(tmp_path, 10.0), tmp_path)
    traffic = Traffic(plan, lambda w: plan.usage.default)
    caller, callee = (
        traffic.service_of("Deployment/shop/caller"),
        traffic.service_of("Deployment/shop/callee"),
    )
    svc = np.asarray([caller, callee, callee])
    # Everything on node 0: nothing crosses.
    assert traffic.nic(0.0, svc, np.asarray([0, 0, 0]), 2).tolist() == [0.0, 0.0]
    # Caller on 0, one callee on 0 and one on 1: half the 20,000 bytes/s leave 0 and arrive at 1.
    assert traffic.nic(0.0, svc, np.asarray([0, 0, 1]), 2).tolist() == [10000.0, 10000.0]
    # No callee running: the edge carries nothing.
    assert traffic.nic(0.0, svc[:1], np.asarray([0]), 2).tolist() == [0.0, 0.0]


def _disk_job_scenario(capacity: str) -> dict[str, Any]:
    crunch = job("crunch", cpu="1")
    crunch["spec"]["template"]["metadata"]["annotations"] = {DISK_BANDWIDTH: "200M"}
    sc = scenario(
        [objects(crunch, duration=600)], nodes=1, cpu="4", zones=("a",), duration="1000s",
        usage={"default": {**STILL, "cpu": 0.5}},
    )  # fmt: skip
    sc["cluster"]["nodePools"][0]["allocatable"][DISK_BANDWIDTH] = capacity
    return sc


def test_a_saturated_disk_slows_the_pods_using_it():
    slow = run(_disk_job_scenario("100M"))
    m = slow.usage.summary()
    # 200M/s asked of a 100M/s disk: half speed from the first tick that sees the pod (t=60), so 600 s
    # of work is not done by t=1000 and 940 s x 0.5 are lost.
    assert slow.stats["pods_completed"] == 0
    assert m["disk_saturated_share"] == pytest.approx(0.94, abs=0.01)
    assert m["bandwidth_lost_pod_seconds"] == pytest.approx(470, rel=0.02)
    assert m["network_saturated_share"] is None  # no node advertises a NIC
    fast = run(_disk_job_scenario("400M"))
    assert fast.stats["pods_completed"] == 1
    assert fast.usage.summary()["disk_saturated_share"] == 0


def test_no_advertised_bandwidth_no_bandwidth_metrics():
    sc = scenario([objects(job("j"), duration=60)], nodes=1, zones=("a",), duration="5m", usage={})
    assert "network_saturated_share" not in run(sc).usage.summary()
