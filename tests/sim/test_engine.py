"""The engine as a whole: determinism, metric shapes, invariants, and the traffic model."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path

import pytest

from harmonic.framework.config import ConfigError
from harmonic.framework.snapshot import CPU_COL, MEMORY_COL
from harmonic.plugins.registry import default_registry
from harmonic.sim.metrics import WALL_CLOCK_KEYS, pending_reason
from harmonic.sim.profiles import profile_runs
from harmonic.sim.report import metrics_document
from harmonic.sim.scenario import NetworkModel
from harmonic.sim.topology import Edge
from harmonic.sim.truth.routing import edge_locality

from .helpers import container, deployment, job, objects, plan_of, run, run_worlds, scenario

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "simulator"


def _strip_wall(doc):
    out = copy.deepcopy(doc)
    for m in out["profiles"].values():
        for k in WALL_CLOCK_KEYS:
            m.pop(k)
    return out


def _example() -> dict:
    import yaml

    return yaml.safe_load((EXAMPLE / "scenario.yaml").read_text())


def test_same_seed_same_metrics_different_seed_different_arrivals():
    sc = _example()
    a = metrics_document(plan_of(sc, EXAMPLE), run_worlds(sc, EXAMPLE))
    b = metrics_document(plan_of(sc, EXAMPLE), run_worlds(sc, EXAMPLE))
    assert _strip_wall(a) == _strip_wall(b)
    c = metrics_document(plan_of({**sc, "seed": 43}, EXAMPLE), run_worlds({**sc, "seed": 43}, EXAMPLE))
    assert _strip_wall(a) != _strip_wall(c)


def test_metrics_document_shape():
    sc = scenario(
        [
            {"type": "topology", "topology": "online-boutique", "userRate": 10},
            objects(job("batch", parallelism=2, completions=4), duration=60),
        ],
        duration=600,
    )
    doc = metrics_document(plan_of(sc), run_worlds(sc))
    (name,) = doc["profiles"]
    assert name == "default-scheduler"
    m = doc["profiles"][name]
    for key in (
        "pods_scheduled",
        "pods_pending",
        "pending_reasons",
        "nodes_in_use",
        "cross_node_traffic_share",
        "cross_zone_traffic_share",
        "added_latency_ms_per_user_request",
        "time_to_schedule_seconds",
        "decisions_per_second",
        "allocation",
        "fragmentation",
    ):
        assert key in m
    assert set(m["time_to_schedule_seconds"]) == {"p50", "p99", "max"}
    assert set(m["allocation"]) == {"cpu", "memory"} and set(m["allocation"]["cpu"]) == {"mean", "stdev"}
    assert 0 <= m["cross_zone_traffic_share"] <= m["cross_node_traffic_share"] <= 1
    assert m["pods_scheduled"] == 12 + 4 and m["pods_completed"] == 4
    assert m["decisions_per_second"] > 0
    assert doc["scenario"]["virtual_seconds"] == 600


def test_pending_pods_reasons_and_fragmentation():
    # Three 4-CPU nodes, each 3 CPU used; a 2-CPU pod fits in the 3 free CPUs only in aggregate.
    sc = scenario([objects(deployment("fill", 3, cpu="3"), deployment("big", 1, cpu="2"))])
    world = run(sc)
    doc = metrics_document(plan_of(sc), {"default-scheduler": world})
    m = doc["profiles"]["default-scheduler"]
    assert m["pods_pending"] == 1
    assert m["pending_reasons"] == {"Insufficient cpu": 1}
    f = m["fragmentation"]
    assert f["free_cpu_millicores"] == 3000
    assert f["unusable_cpu_share"] == 1.0
    assert f["pending_pods_fitting_in_aggregate"] == 1


def test_pending_reason_parsing():
    msg = "0/5 nodes are available: 2 Insufficient memory, 3 node(s) had untolerated taint(s). preemption: x."
    assert pending_reason(msg) == ["Insufficient memory", "node(s) had untolerated taint(s)"]
    assert pending_reason("no nodes available to schedule pods") == ["no nodes available to schedule pods"]


def test_no_node_is_ever_overcommitted_during_a_busy_run():
    sc = scenario(
        [
            objects(deployment("svc", 8, cpu="700m", memory="3Gi")),
            {
                "type": "arrivals",
                "name": "burst",
                "rate": 0.05,
                "end": 900,
                "duration": {"distribution": "exponential", "mean": 120},
                "template": job("t", cpu="1", parallelism=2, completions=2),
            },
        ],
        events=[
            {"type": "nodeFailed", "at": 300, "node": "n-1"},
            {"type": "nodeAdded", "at": 600, "pool": "n", "count": 1},
        ],
    )
    registry = default_registry()
    from harmonic.sim.engine import World

    world = World(plan_of(sc), profile_runs((), registry)[0], registry)
    seen = []

    def check(old, new):
        snap = world.scheduler.cache.snapshot
        live = snap.live
        over = (
            snap.requested[live][:, [CPU_COL, MEMORY_COL]] > snap.allocatable[live][:, [CPU_COL, MEMORY_COL]]
        )
        assert not over.any()
        seen.append(1)

    world.cluster.subscribe(lambda o, n: None, check, replay=False)
    world.run()
    assert len(seen) > 100
    assert world.stats["pods_evicted"] > 0 and world.time_to_schedule and max(world.time_to_schedule) > 0


EDGE = (Edge("a", "b", 2.0),)
NET = NetworkModel(same_node_ms=0.0, cross_node_ms=0.5, cross_zone_ms=2.0)
ZONES = {"n1": "z1", "n2": "z1", "n3": "z2"}


@pytest.mark.parametrize(
    ("src", "dst", "cross_node", "cross_zone", "latency"),
    [
        # All on one node: nothing crosses.
        ({"n1": 1}, {"n1": 1}, 0.0, 0.0, 0.0),
        # Same zone, other node: every call crosses nodes, none zones; 2 calls x 0.5 ms.
        ({"n1": 1}, {"n2": 1}, 1.0, 0.0, 1.0),
        # Source on n1; destination replicas n1, n2, n3: 1/3 local, 1/3 cross-node, 1/3 cross-zone.
        ({"n1": 1}, {"n1": 1, "n2": 1, "n3": 1}, 2 / 3, 1 / 3, 2 * (0.5 / 3 + 2.0 / 3)),
        # Two source replicas on n1 and n3, destination on n3: pairs (n1,n3) cross zone, (n3,n3) local.
        ({"n1": 1, "n3": 1}, {"n3": 1}, 0.5, 0.5, 2 * 0.5 * 2.0),
    ],
)
def test_locality_spreads_calls_over_replicas(src, dst, cross_node, cross_zone, latency):
    same_node, same_zone = edge_locality(Counter(src), Counter(dst), ZONES, "random")
    assert 1 - same_node == pytest.approx(cross_node)
    assert 1 - same_zone == pytest.approx(cross_zone)
    expected = 2 * (same_node * NET.same_node_ms + (same_zone - same_node) * NET.cross_node_ms)
    assert expected + 2 * (1 - same_zone) * NET.cross_zone_ms == pytest.approx(latency)


def test_profiles_default_plus_bundled_and_config_files(tmp_path):
    registry = default_registry()
    names = [r.name for r in profile_runs((), registry)]
    assert names[0] == "default-scheduler" and "bin-packing" in names
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: mine\n  plugins:\n    score:\n      disabled: [{name: NodeResourcesFit}]\n"
    )
    assert [r.name for r in profile_runs([cfg], registry)] == ["default-scheduler", "mine"]
    clash = tmp_path / "d.yaml"
    clash.write_text(
        cfg.read_text().replace("disabled", "enabled").replace("NodeResourcesFit", "TaintToleration")
    )
    with pytest.raises(ConfigError, match="'mine' is also defined, differently"):
        profile_runs([cfg, clash], registry)


def test_each_profile_runs_on_its_own_cluster_copy():
    # Bare pods: no owner, so no default topology spreading; only the scoring strategies differ.
    bare = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{i}"},
            "spec": {"containers": [container()]},
        }
        for i in range(6)
    ]
    sc = scenario([objects(*bare)], nodes=3)
    registry = default_registry()
    runs = profile_runs((), registry)
    from harmonic.sim.engine import Simulation

    worlds = Simulation(plan_of(sc), runs, registry).run()
    spread = Counter(worlds["default-scheduler"].placement().values())
    packed = Counter(worlds["bin-packing"].placement().values())
    assert sorted(spread.values()) == [2, 2, 2]
    assert len(packed) == 1
    for name, w in worlds.items():
        assert all(p["spec"]["schedulerName"] == name for p in w.cluster.pods.values())
