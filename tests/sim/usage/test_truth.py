"""The usage ground truth: throttling, memory-pressure evictions, metrics, the same draws for every profile."""

from __future__ import annotations

import numpy as np
import pytest

from harmonic.sim.errors import ScenarioError

from ..helpers import deployment, job, objects, plan_of, run, run_worlds, scenario


def _usage(**default):
    return {"default": {"amplitude": 0, "memoryAmplitude": 0, "noise": 0, **default}}


def _job_scenario(cpu_fraction: float, duration: str = "1000s") -> dict:
    return scenario(
        [objects(job("crunch", cpu="1"), duration=600)],
        nodes=1, cpu="1", zones=("a",), duration=duration, usage=_usage(cpu=cpu_fraction),
    )  # fmt: skip


def test_cpu_over_capacity_is_throttled_and_slows_the_job():
    w = run(_job_scenario(2.0))
    m = w.usage.summary()
    # Demand 2 cores on 1: 1 core-second short every second the pod runs (from the first tick, t=0).
    assert m["throttled_cpu_seconds"] == pytest.approx(1000, rel=0.07)
    assert m["hot_node_share"] == pytest.approx(1.0, abs=0.07)
    # Half speed: 600 s of work not done by t=1000.
    assert w.stats["pods_completed"] == 0
    fast = run(_job_scenario(0.5))
    assert fast.stats["pods_completed"] == 1
    assert fast.usage.summary()["throttled_cpu_seconds"] == 0


def test_throttled_job_finishes_late_by_its_lost_progress():
    w = run(_job_scenario(2.0, duration="1500s"))
    assert w.stats["pods_completed"] == 1
    assert w.usage.totals.lost_progress_seconds == pytest.approx(600, rel=0.15)


def test_memory_pressure_evicts_in_kubelet_order():
    sc = scenario(
        [objects(deployment("hog", 2, cpu="100m", memory="400Mi"))],
        nodes=1, memory="1Gi", zones=("a",), duration="300s",
        usage=_usage(memory=1.0) | {"workloads": [{"workload": "default/hog", "memory": 1.5}]},
    )  # fmt: skip
    w = run(sc)
    # 2 x 600Mi on 1Gi: one pod goes at every tick; the ReplicaSet replaces it.
    assert w.usage.totals.memory_evictions >= 1
    assert w.stats["pods_evicted"] == w.usage.totals.memory_evictions
    no_evictions = run({**sc, "usage": {**sc["usage"], "evictions": False}})
    assert no_evictions.usage.totals.memory_evictions == 0


def test_metrics_keys_and_ranges():
    sc = scenario(
        [objects(deployment("web", 6, cpu="1"))], nodes=2, cpu="4", duration="30m",
        usage={"default": {"cpu": 0.6, "amplitude": 0.5, "period": "10m"}},
    )  # fmt: skip
    w = run(sc)
    m = w.usage.summary()
    assert 0 <= m["hot_node_share"] <= 1
    util = m["actual_cpu_utilisation"]
    # 6 cores requested of 8, used at 0.6 on average: 0.45 of the cluster's CPU.
    assert util["mean"] == pytest.approx(0.45, abs=0.06)
    assert util["stdev"] >= 0


def test_no_usage_block_no_usage_world():
    w = run(scenario([objects(deployment("web", 1))], duration="5m"))
    assert w.usage is None


def test_usage_needs_a_duration():
    with pytest.raises(ScenarioError, match="usage needs a duration"):
        plan_of(scenario([], usage={}))


def test_every_profile_sees_the_same_demand():
    sc = scenario(
        [objects(deployment("web", 4, cpu="1"))], nodes=3, duration="10m",
        usage={"default": {"noise": 0.3, "burstProbability": 0.2}},
    )  # fmt: skip
    worlds = list(run_worlds(sc, configs=("harmonic/data/profiles/bin-packing.yaml",)).values())
    assert len(worlds) == 2
    a, b = (w.usage for w in worlds)
    key = sorted(a.slot_of)[0]
    da = a.demand(420.0, np.asarray([a.slot_of[key]]))
    db = b.demand(420.0, np.asarray([b.slot_of[key]]))
    assert da[0][0] == db[0][0] and da[1][0] == db[1][0]
