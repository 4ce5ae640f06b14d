"""One table per descheduler plugin in Harmonic's rescheduler: which pods go, and where to."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.rescheduler.runner import RunOptions
from harmonic.testing.builders import node, pod
from tests.rescheduler.helpers import PACKING, evicted, pdb, policy, profile, run, ts


def N(name: str, cpu: str = "4", **kw: Any) -> dict[str, Any]:
    b = node(name).cap(cpu=cpu, memory="8Gi", pods=110)
    for k, v in kw.items():
        b = getattr(b, k)(*v) if isinstance(v, tuple) else getattr(b, k)(v)
    return {**b.obj(), "kind": "Node"}


def P(name: str, on: str, cpu: str = "1", owner: str = "rs", **extra: Any) -> dict[str, Any]:
    b = pod(name).req(cpu=cpu).owner("ReplicaSet", owner, uid=f"uid-{owner}").node(on).phase("Running")
    o = {**b.obj(), "kind": "Pod"}
    o["metadata"]["creationTimestamp"] = ts(extra.pop("age", 7200))
    for k, v in extra.items():
        o["spec"][k] = v
    return o


def test_node_taints_moves_pods_that_do_not_tolerate():
    objs = [
        N("n1", taint=("dedicated", "gpu")),
        N("n2"),
        P("a", "n1"),
        P("b", "n1", tolerations=[{"key": "dedicated", "operator": "Exists"}]),
    ]
    r = run(policy(profile("deschedule", "RemovePodsViolatingNodeTaints")), objs)
    assert [(e.pod.name, e.node, e.to) for e in r.log.evictions] == [("a", "n1", "n2")]


def test_node_taints_excluded_and_prefer_no_schedule():
    objs = [N("n1", taint=("k", "v", "PreferNoSchedule")), N("n2"), P("a", "n1")]
    assert evicted(run(policy(profile("deschedule", "RemovePodsViolatingNodeTaints")), objs)) == []
    assert evicted(
        run(
            policy(profile("deschedule", "RemovePodsViolatingNodeTaints", {"includePreferNoSchedule": True})),
            objs,
        )
    ) == ["a"]
    args = {"includePreferNoSchedule": True, "excludedTaints": ["k=v"]}
    assert evicted(run(policy(profile("deschedule", "RemovePodsViolatingNodeTaints", args)), objs)) == []


def test_no_churn_when_the_replacement_fits_nowhere_else():
    objs = [N("n1", taint=("dedicated", "gpu")), N("n2", taint=("dedicated", "gpu")), P("a", "n1")]
    r = run(policy(profile("deschedule", "RemovePodsViolatingNodeTaints")), objs)
    assert evicted(r) == []
    assert "no churn" in r.log.skipped[0].reason


def test_node_affinity_required():
    aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
                ]
            }
        }
    }
    objs = [N("n1"), N("n2", label=("disk", "ssd")), P("a", "n1", affinity=aff), P("b", "n2", affinity=aff)]
    args = {"nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"]}
    r = run(policy(profile("deschedule", "RemovePodsViolatingNodeAffinity", args)), objs)
    assert [(e.pod.name, e.to) for e in r.log.evictions] == [("a", "n2")]


def test_node_affinity_preferred():
    aff = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "preference": {
                        "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]
                    },
                }
            ]
        }
    }
    objs = [N("n1"), N("n2", label=("disk", "ssd")), P("a", "n1", affinity=aff)]
    args = {"nodeAffinityType": ["preferredDuringSchedulingIgnoredDuringExecution"]}
    assert evicted(run(policy(profile("deschedule", "RemovePodsViolatingNodeAffinity", args)), objs)) == ["a"]


def test_inter_pod_anti_affinity_uses_the_scheduler_filter():
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    a = P("a", "n1", affinity=anti)
    db = P("db", "n1", owner="db")
    db["metadata"]["labels"] = {"app": "db"}
    objs = [
        N("n1", label=("kubernetes.io/hostname", "n1")),
        N("n2", label=("kubernetes.io/hostname", "n2")),
        a,
        db,
    ]
    r = run(policy(profile("deschedule", "RemovePodsViolatingInterPodAntiAffinity")), objs)
    assert [(e.pod.name, e.to) for e in r.log.evictions] == [("a", "n2")]


def test_remove_duplicates_spreads_replicas():
    objs = [N("n1"), N("n2"), P("a", "n1"), P("b", "n1"), P("c", "n1")]
    r = run(policy(profile("balance", "RemoveDuplicates")), objs)
    # 3 replicas over 2 nodes: at most ceil(3/2) = 2 per node. a is the original, b and c its
    # duplicates; the duplicates past the first upper-1 (c) move.
    assert [(e.pod.name, e.to) for e in r.log.evictions] == [("c", "n2")]


def test_low_node_utilization_moves_from_over_to_under():
    objs = [N("n1"), N("n2"), N("n3")] + [P(f"p{i}", "n1") for i in range(3)] + [P("q", "n2")]
    args = {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}}
    r = run(policy(profile("balance", "LowNodeUtilization", args)), objs)
    # n1 at 75% is over 50%; n3 at 0% is under 20%: one pod leaves n1 (then 50%, not above target).
    assert len(r.log.evictions) == 1
    assert r.log.evictions[0].node == "n1" and r.log.evictions[0].to == "n3"


def test_low_node_utilization_does_nothing_when_all_nodes_are_under():
    objs = [N("n1"), N("n2"), P("a", "n1")]
    args = {"thresholds": {"cpu": 30}, "targetThresholds": {"cpu": 50}}
    assert evicted(run(policy(profile("balance", "LowNodeUtilization", args)), objs)) == []


def test_high_node_utilization_empties_under_used_nodes_with_bin_packing():
    objs = [N("n1"), N("n2"), P("a", "n1"), P("b", "n2"), P("c", "n2")]
    r = run(
        policy(profile("balance", "HighNodeUtilization", {"thresholds": {"cpu": 30}})),
        objs,
        scheduler=PACKING,
    )
    assert [(e.pod.name, e.node, e.to) for e in r.log.evictions] == [("a", "n1", "n2")]


def test_pod_lifetime_and_failed_pods_evict_without_simulation():
    old, young = P("old", "n1", age=7200), P("young", "n1", age=60)
    r = run(
        policy(profile("deschedule", "PodLifeTime", {"maxPodLifeTimeSeconds": 3600})),
        [N("n1"), N("n2"), old, young],
    )
    assert [(e.pod.name, e.to) for e in r.log.evictions] == [("old", "")]
    failed = P("f", "n1")
    failed["status"] = {"phase": "Failed"}
    assert evicted(
        run(policy(profile("deschedule", "RemoveFailedPods", {})), [N("n1"), N("n2"), failed])
    ) == ["f"]


def test_total_limit_and_rate():
    objs = [N("n1", taint=("t", "x")), N("n2")] + [P(f"p{i}", "n1", cpu="100m") for i in range(5)]
    pol = policy(profile("deschedule", "RemovePodsViolatingNodeTaints"), maxNoOfPodsToEvictTotal=3)
    assert len(run(pol, objs).log.evictions) == 3
    pol = policy(profile("deschedule", "RemovePodsViolatingNodeTaints"))
    assert len(run(pol, objs, options=RunOptions(max_evictions_per_run=2)).log.evictions) == 2


def test_pdb_stops_evictions_at_its_allowance():
    objs = [N("n1", taint=("t", "x")), N("n2")] + [P(f"p{i}", "n1", cpu="100m") for i in range(4)]
    for o in objs[2:]:
        o["metadata"]["labels"] = {"app": "web"}
    budget = pdb("web", "web", minAvailable="50%")
    r = run(policy(profile("deschedule", "RemovePodsViolatingNodeTaints")), [*objs, budget])
    assert len(r.log.evictions) == 2
    assert r.budget_violations == 0
    assert sum("disruption budget" in s.reason for s in r.log.skipped) == 2


def test_cool_down_keeps_recently_moved_pods_and_their_replacements():
    objs = [N("n1", taint=("t", "x")), N("n2"), P("a", "n1")]
    pol = policy(profile("deschedule", "RemovePodsViolatingNodeTaints"))
    from tests.rescheduler.helpers import NOW

    recent = {"owner:uid-rs": NOW - 60}
    objs[2]["metadata"]["creationTimestamp"] = ts(30)  # created after the move: a replacement
    assert evicted(run(pol, objs, recent=recent)) == []
    assert evicted(run(pol, objs, recent=recent, options=RunOptions(cooldown=30))) == ["a"]


def test_single_node_cluster_is_left_alone():
    objs = [N("n1", taint=("t", "x")), P("a", "n1")]
    r = run(policy(profile("deschedule", "RemovePodsViolatingNodeTaints")), objs)
    assert evicted(r) == [] and r.log.plans[0][1] == "skipped"


def _spread_pod(name: str, on: str, max_skew: int = 1, when: str = "DoNotSchedule") -> dict[str, Any]:
    o = P(name, on, cpu="100m")
    o["metadata"]["labels"] = {"app": "web"}
    o["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": max_skew,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    return o


def test_topology_spread_moves_pods_to_the_emptier_zone():
    nodes = [N("a1", zone="a"), N("b1", zone="b")]
    pods = [_spread_pod(f"w{i}", "a1") for i in range(4)] + [_spread_pod("w9", "b1")]
    r = run(policy(profile("balance", "RemovePodsViolatingTopologySpreadConstraint")), nodes + pods)
    # 4 vs 1 with maxSkew 1: ideal 2.5, move min(ceil(4-2.5), ceil(2.5-1), ceil((3-1)/2)) = 1 pod.
    assert [(e.node, e.to) for e in r.log.evictions] == [("a1", "b1")]


def test_topology_spread_balanced_or_schedule_anyway_is_left_alone():
    nodes = [N("a1", zone="a"), N("b1", zone="b")]
    balanced = [_spread_pod("w0", "a1"), _spread_pod("w1", "a1"), _spread_pod("w2", "b1")]
    pol = policy(profile("balance", "RemovePodsViolatingTopologySpreadConstraint"))
    assert evicted(run(pol, nodes + balanced)) == []
    soft = [_spread_pod(f"w{i}", "a1", when="ScheduleAnyway") for i in range(4)]
    assert evicted(run(pol, nodes + soft)) == []
    both = policy(
        profile(
            "balance",
            "RemovePodsViolatingTopologySpreadConstraint",
            {"constraints": ["DoNotSchedule", "ScheduleAnyway"]},
        )
    )
    assert len(run(both, nodes + soft).log.evictions) == 2


def test_topology_spread_node_fit_needs_room_below_the_average():
    nodes = [N("a1", zone="a"), N("b1", cpu="100m", zone="b")]
    pods = [_spread_pod(f"w{i}", "a1") for i in range(4)] + [_spread_pod("w9", "b1")]
    r = run(policy(profile("balance", "RemovePodsViolatingTopologySpreadConstraint")), nodes + pods)
    assert evicted(r) == []


def test_consolidate_empties_the_emptiest_node_all_or_nothing():
    objs = [
        N("n1"),
        N("n2"),
        N("n3"),
        P("a", "n1"),
        P("b", "n2", owner="x"),
        P("c", "n2", owner="y"),
        P("d", "n3", cpu="3", owner="z"),
    ]
    r = run(policy(profile("balance", "Consolidate")), objs, scheduler=PACKING)
    assert [(e.pod.name, e.node) for e in r.log.evictions] == [("a", "n1")]
    assert r.log.evictions[0].to in ("n2", "n3")


def test_consolidate_leaves_a_node_whose_pods_cannot_all_move():
    objs = [N("n1"), N("n2"), P("a", "n1", cpu="1500m"), P("b", "n2", cpu="3", owner="x")]
    r = run(policy(profile("balance", "Consolidate")), objs, scheduler=PACKING)
    assert evicted(r) == []
    assert r.log.plans[0][1] == "skipped"


def test_consolidate_keeps_min_nodes():
    objs = [N("n1"), N("n2"), P("a", "n1"), P("b", "n2", owner="x")]
    assert (
        evicted(run(policy(profile("balance", "Consolidate", {"minNodes": 2})), objs, scheduler=PACKING))
        == []
    )


HARMONY = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {"multiPoint": {"enabled": [{"name": "Dissonance", "weight": 5}]}},
        }
    ],
}


def _classed(name: str, on: str, cls: str, owner: str) -> dict[str, Any]:
    o = P(name, on, owner=owner)
    o["metadata"]["annotations"] = {"harmonic.dev/class": cls}
    return o


def test_improve_harmony_separates_the_victim_from_its_aggressors():
    objs = [
        N("n1"),
        N("n2"),
        _classed("web", "n1", "latency-critical", "web"),
        _classed("batch", "n1", "batch-cpu", "batch"),
        _classed("batch2", "n1", "batch-cpu", "batch2"),
    ]
    r = run(policy(profile("balance", "ImproveHarmony")), objs, scheduler=HARMONY)
    assert r.log.evictions and all(e.why.startswith("harmony gain") for e in r.log.evictions)
    where = {"web": "n1", "batch": "n1", "batch2": "n1"}
    where.update({e.pod.name: e.to for e in r.log.evictions})
    assert where["web"] not in (where["batch"], where["batch2"])


def test_improve_harmony_needs_a_harmony_profile_and_a_gain():
    objs = [
        N("n1"),
        N("n2"),
        _classed("web", "n1", "latency-critical", "web"),
        _classed("batch", "n1", "batch-cpu", "batch"),
    ]
    r = run(policy(profile("balance", "ImproveHarmony")), objs)
    assert evicted(r) == [] and r.log.plans[0][1] == "skipped"
    r = run(policy(profile("balance", "ImproveHarmony", {"minGain": 1000})), objs, scheduler=HARMONY)
    assert evicted(r) == []


def _zoned(name: str, on: str, owner: str = "web", age: int = 7200) -> dict[str, Any]:
    return P(name, on, cpu="100m", owner=owner, age=age)


@pytest.mark.parametrize(
    ("case", "nodes", "pods", "moved"),
    [
        (
            # Both replicas in zone a after an outage: the younger one goes back to zone b.
            "two replicas in one zone",
            [N("a1", zone="a"), N("a2", zone="a"), N("b1", zone="b")],
            [_zoned("w0", "a1"), _zoned("w1", "a2", age=600)],
            [("w1", "a2", "b1")],
        ),
        (
            "already spread",
            [N("a1", zone="a"), N("b1", zone="b")],
            [_zoned("w0", "a1"), _zoned("w1", "b1")],
            [],
        ),
        ("a single replica", [N("a1", zone="a"), N("b1", zone="b")], [_zoned("w0", "a1")], []),
        (
            "one zone in the cluster",
            [N("a1", zone="a"), N("a2", zone="a")],
            [_zoned("w0", "a1"), _zoned("w1", "a1")],
            [],
        ),
        (
            # Zone b has no room: the replacement would land in zone a again, so nothing moves.
            "no room in the other zone",
            [N("a1", zone="a"), N("a2", zone="a"), N("b1", cpu="50m", zone="b")],
            [_zoned("w0", "a1"), _zoned("w1", "a2", age=600)],
            [],
        ),
        (
            # Each workload on its own: only the one held in one zone moves.
            "two workloads",
            [N("a1", zone="a"), N("b1", zone="b")],
            [
                _zoned("w0", "a1"),
                _zoned("w1", "a1", age=60),
                _zoned("x0", "a1", "api"),
                _zoned("x1", "b1", "api"),
            ],
            [("w1", "a1", "b1")],
        ),
    ],
)
def test_restore_zone_spread(case: str, nodes: list[Any], pods: list[Any], moved: list[tuple[str, str, str]]):
    r = run(policy(profile("balance", "RestoreZoneSpread")), nodes + pods)
    assert [(e.pod.name, e.node, e.to) for e in r.log.evictions] == moved, case


def test_restore_zone_spread_respects_the_disruption_budget():
    nodes = [N("a1", zone="a"), N("a2", zone="a"), N("b1", zone="b")]
    pods = [_zoned("w0", "a1"), _zoned("w1", "a2", age=600)]
    for p in pods:
        p["metadata"]["labels"] = {"app": "web"}
    r = run(
        policy(profile("balance", "RestoreZoneSpread")), nodes + pods + [pdb("web", "web", minAvailable=2)]
    )
    assert r.log.evictions == []


def test_restore_zone_spread_args_are_validated():
    from pydantic import ValidationError

    from harmonic.rescheduler.plugins.restorezonespread import RestoreZoneSpreadArgs

    with pytest.raises(ValidationError, match=r"min_replicas|minReplicas"):
        RestoreZoneSpreadArgs.model_validate({"minReplicas": 1})


@pytest.mark.parametrize(
    "args, evictor, options, moved",
    [
        # descheduler's defaults: a pod is chosen only if it fits below the average (b1 is full)
        ({}, None, RunOptions(), []),
        # topologyBalanceNodeFit: false and the evictor's nodeFit false: descheduler evicts the pod
        # although it fits nowhere (so the cluster autoscaler adds a node); Harmonic does too
        ({"topologyBalanceNodeFit": False}, None, RunOptions(), [("a1", "")]),
        ({"topologyBalanceNodeFit": False}, {"nodeFit": False}, RunOptions(), [("a1", "")]),
        # the evictor's nodeFit: true keeps it, as descheduler's PreEvictionFilter
        ({"topologyBalanceNodeFit": False}, {"nodeFit": True}, RunOptions(), []),
        # without the churn check: descheduler's exact evictions, for either setting
        ({"topologyBalanceNodeFit": False}, None, RunOptions(churn_check=False), [("a1", "")]),
        ({}, None, RunOptions(churn_check=False), []),
    ],
)
def test_topology_spread_evicts_a_pod_that_fits_nowhere_when_node_fit_is_off(
    args: dict[str, Any], evictor: dict[str, Any] | None, options: RunOptions, moved: list[tuple[str, str]]
) -> None:
    nodes = [N("a1", zone="a"), N("b1", cpu="100m", zone="b")]
    pods = [_spread_pod(f"w{i}", "a1") for i in range(4)] + [_spread_pod("w9", "b1")]
    pol = policy(profile("balance", "RemovePodsViolatingTopologySpreadConstraint", args, evictor))
    r = run(pol, nodes + pods, options=options)
    assert [(e.node, e.to) for e in r.log.evictions] == moved


@pytest.mark.parametrize(
    "plugin, args, pods, why",
    [
        # 4-CPU nodes, 1-CPU pods: n1 at 75%, n2 at 25%, n3 at 0% unless stated
        (
            "LowNodeUtilization",
            {"thresholds": {"cpu": 10}, "targetThresholds": {"cpu": 90}},
            [("n1", 1), ("n2", 1), ("n3", 1)],
            "No node is underutilized, nothing to do here, you might tune your thresholds further",
        ),
        (
            "LowNodeUtilization",
            {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "numberOfNodes": 1},
            [("n1", 3), ("n2", 1)],
            "Number of nodes underutilized is less or equal than NumberOfNodes, nothing to do here",
        ),
        (
            "LowNodeUtilization",
            {"thresholds": {"cpu": 30}, "targetThresholds": {"cpu": 50}},
            [("n1", 1)],
            "All nodes are underutilized, nothing to do here",
        ),
        (
            "LowNodeUtilization",
            {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 80}},
            [("n1", 3), ("n2", 1)],
            "All nodes are under target utilization, nothing to do here",
        ),
        (
            "HighNodeUtilization",
            {"thresholds": {"cpu": 10}},
            [("n1", 1), ("n2", 1), ("n3", 1)],
            "No node is underutilized, nothing to do here, you might tune your thresholds further",
        ),
        (
            "HighNodeUtilization",
            {"thresholds": {"cpu": 30}},
            [("n1", 1)],
            "All nodes are underutilized, nothing to do here",
        ),
    ],
)
def test_node_utilization_says_why_it_evicts_nothing(
    plugin: str, args: dict[str, Any], pods: list[tuple[str, int]], why: str
) -> None:
    objs = [N("n1"), N("n2"), N("n3")]
    objs += [P(f"{n}-{i}", n) for n, count in pods for i in range(count)]
    r = run(policy(profile("balance", plugin, args)), objs)
    assert evicted(r) == []
    assert (plugin, "nothing to do", why) in r.log.plans
