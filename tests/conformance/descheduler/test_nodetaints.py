"""descheduler ``pkg/framework/plugins/removepodsviolatingnodetaints/node_taint_test.go``,
``TestDeletePodsViolatingNodeTaints``: every case, translated (expected counts are upstream's).

Upstream's ``createNoScheduleTaint`` ignores its key and value arguments, so every "taint" of these
tables is ``testTaint1=test1`` (``withTestingTaint1`` and ``withBothTaints1`` included); the
translation keeps that."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.descheduler.upstream import (
    build_node,
    build_pod,
    chain,
    ds_owner,
    evicted_count,
    kube_system_critical,
    local_storage,
    mirror,
    normal_owner,
    unschedulable,
)


def node(name: str, apply=None) -> dict[str, Any]:
    return build_node(name, 2000, 3000, 10, apply)


def pod(name: str, on: str, apply=None, owned: bool = True) -> dict[str, Any]:
    return build_pod(name, 100, 0, on, chain(normal_owner if owned else None, apply))


def taints(*effects: str):
    def f(n):
        n["spec"]["taints"] = [{"key": "testTaint1", "value": "test1", "effect": e} for e in effects]

    return f


TAINT1 = taints("NoSchedule")
BOTH = taints("NoSchedule", "NoSchedule")
PREFER = taints("PreferNoSchedule")


def tolerate(key: str, value: str, effect: str = "NoSchedule"):
    def f(p):
        p["spec"]["tolerations"] = [{"key": key, "value": value, "effect": effect}]

    return f


TOL1 = tolerate("testTaint1", "test1")
TOLX = tolerate("testTaintX1", "testX1")


def selector_west(p):
    p["spec"]["nodeSelector"] = {"datacenter": "west"}


def east(n):
    n["metadata"]["labels"] = {"datacenter": "east"}


def C(name, pods, nodes, want, **kw):
    return pytest.param(pods, nodes, want, kw, id=name)


CASES = [
    C(
        "Pods not tolerating node taint should be evicted",
        [pod("p1", "n1", TOL1), pod("p2", "n1"), pod("p3", "n1", TOL1)],
        [node("n1", TAINT1)],
        1,
    ),
    C(
        "Pods with tolerations but not tolerating node taint should be evicted",
        [pod("p1", "n1", TOL1), pod("p3", "n1", TOL1), pod("p4", "n1", TOLX)],
        [node("n1", TAINT1)],
        1,
    ),
    C(
        "Only <maxNoOfPodsToEvictTotal> number of Pods not tolerating node taint should be evicted",
        [pod("p1", "n1", TOL1), pod("p5", "n1"), pod("p6", "n1")],
        [node("n1", TAINT1)],
        1,
        per_node=2,
        total=1,
    ),
    C(
        "Only <maxPodsToEvictPerNode> number of Pods not tolerating node taint should be evicted",
        [pod("p1", "n1", TOL1), pod("p5", "n1"), pod("p6", "n1")],
        [node("n1", TAINT1)],
        1,
        per_node=1,
    ),
    C(
        "Only <maxNoOfPodsToEvictPerNamespace> number of Pods not tolerating node taint should be evicted",
        [pod("p1", "n1", TOL1), pod("p5", "n1"), pod("p6", "n1")],
        [node("n1", TAINT1)],
        1,
        per_ns=1,
    ),
    C(
        "Critical pods not tolerating node taint should not be evicted",
        [
            pod("p7", "n2", kube_system_critical),
            pod("p8", "n2", ds_owner, owned=False),
            pod("p9", "n2", local_storage),
            pod("p10", "n2", mirror),
        ],
        [node("n2", TAINT1)],
        0,
    ),
    C(
        "Critical pods except storage pods not tolerating node taint should not be evicted",
        [
            pod("p7", "n2", kube_system_critical),
            pod("p8", "n2", ds_owner, owned=False),
            pod("p9", "n2", local_storage),
            pod("p10", "n2", mirror),
        ],
        [node("n2", TAINT1)],
        1,
        evictor={"evictLocalStoragePods": True},
    ),
    C(
        "Critical and non critical pods, only non critical pods not tolerating node taint should be evicted",
        [
            pod("p7", "n2", kube_system_critical),
            pod("p8", "n2", ds_owner, owned=False),
            pod("p10", "n2", mirror),
            pod("p11", "n2"),
        ],
        [node("n2", TAINT1)],
        1,
    ),
    C(
        "Critical and non critical pods, pods not tolerating node taint should be evicted even if they are critical",
        [
            pod("p2", "n1"),
            pod("p7", "n2", kube_system_critical),
            pod("p9", "n2", local_storage),
            pod("p10", "n2", mirror),
        ],
        [node("n1", TAINT1), node("n2", TAINT1)],
        2,
        evictor={"evictSystemCriticalPods": True},
    ),
    C(
        "Pod p2 doesn't tolerate taint on it's node, but also doesn't tolerate taints on other nodes",
        [pod("p1", "n1", TOL1), pod("p2", "n1"), pod("p3", "n1", TOL1)],
        [node("n1", TAINT1), node("n2", TAINT1)],
        0,
        evictor={"nodeFit": True},
    ),
    C(
        "Pod p12 doesn't tolerate taint on it's node, but other nodes don't match it's selector",
        [pod("p1", "n1", TOL1), pod("p3", "n1", TOL1), pod("p11", "n2", selector_west)],
        [node("n1", TAINT1), node("n3", east)],
        0,
        evictor={"nodeFit": True},
    ),
    C(
        "Pod p2 doesn't tolerate taint on it's node, but other nodes are unschedulable",
        [pod("p1", "n1", TOL1), pod("p2", "n1"), pod("p3", "n1", TOL1)],
        [node("n1", TAINT1), node("n4", unschedulable)],
        0,
        evictor={"nodeFit": True},
    ),
    C(
        "Pods not tolerating PreferNoSchedule node taint should not be evicted when not enabled",
        [pod("p13", "n5", tolerate("testTaint0", "test0", "PreferNoSchedule"))],
        [node("n5", PREFER)],
        0,
    ),
    C(
        "Pods not tolerating PreferNoSchedule node taint should be evicted when enabled",
        [pod("p13", "n5", tolerate("testTaint0", "test0", "PreferNoSchedule"))],
        [node("n5", PREFER)],
        1,
        args={"includePreferNoSchedule": True},
    ),
    C(
        "Pods not tolerating excluded node taints (by key) should not be evicted",
        [pod("p2", "n1")],
        [node("n1", TAINT1)],
        0,
        args={"excludedTaints": ["excludedTaint1", "testTaint1"]},
    ),
    C(
        "Pods not tolerating excluded node taints (by key and value) should not be evicted",
        [pod("p2", "n1")],
        [node("n1", TAINT1)],
        0,
        args={"excludedTaints": ["testTaint1=test1"]},
    ),
    C(
        "The excluded taint matches the key of node1's taint, but does not match the value",
        [pod("p2", "n1")],
        [node("n1", TAINT1)],
        1,
        args={"excludedTaints": ["testTaint1=test2"]},
    ),
    C(
        "Critical and non critical pods, pods not tolerating node taint can't be evicted because the only available node does not have enough resources.",
        [
            pod("p2", "n1"),
            pod("p7", "n2", kube_system_critical),
            pod("p9", "n2", local_storage),
            pod("p10", "n2", mirror),
        ],
        [node("n1", TAINT1), build_node("n6", 1, 1, 1, PREFER)],
        0,
        evictor={"evictSystemCriticalPods": True, "nodeFit": True},
    ),
    C(
        "Pods tolerating included taints should not get evicted even with other taints present",
        [pod("p1", "n1", TOL1)],
        [node("n7", BOTH)],
        0,
        args={"includedTaints": ["testTaint1=test1"]},
    ),
    C(
        "Pods not tolerating not included taints should not get evicted",
        [pod("p1", "n1", TOL1), pod("p2", "n1"), pod("p4", "n1", TOLX)],
        [node("n1", TAINT1)],
        0,
        args={"includedTaints": ["testTaint2=test2"]},
    ),
    C(
        "Pods tolerating includedTaint should not get evicted. Pods not tolerating includedTaints should get evicted",
        [pod("p1", "n1", TOL1), pod("p2", "n1"), pod("p3", "n1", TOL1)],
        [node("n1", TAINT1)],
        1,
        args={"includedTaints": ["testTaint1=test1"]},
    ),
    C(
        "Pods not tolerating all taints are evicted when includedTaints is empty",
        [pod("p14", "n7", TOL1), pod("p15", "n7", tolerate("testingTaint1", "testing1"))],
        [node("n7", BOTH)],
        1,
    ),
]


@pytest.mark.parametrize(("pods", "nodes", "want", "kw"), CASES)
def test_upstream_case(pods, nodes, want, kw):
    top = {}
    for k, field in (
        ("per_node", "maxNoOfPodsToEvictPerNode"),
        ("per_ns", "maxNoOfPodsToEvictPerNamespace"),
        ("total", "maxNoOfPodsToEvictTotal"),
    ):
        if k in kw:
            top[field] = kw[k]
    r = evicted_count(
        "deschedule",
        "RemovePodsViolatingNodeTaints",
        kw.get("args", {}),
        nodes + pods,
        evictor=kw.get("evictor"),
        top=top,
    )
    assert len(r.log.evictions) == want
