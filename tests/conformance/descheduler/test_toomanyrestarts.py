"""descheduler ``pkg/framework/plugins/removepodshavingtoomanyrestarts/toomanyrestarts_test.go``,
``TestRemovePodsHavingTooManyRestarts``: every case, translated (expected counts are upstream's)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.descheduler.upstream import (
    build_node,
    build_pod,
    chain,
    ds_owner,
    evicted_count,
    local_storage,
    mirror,
    normal_owner,
    phase,
    taint,
    unschedulable,
)


def restarts(base: int):
    def f(p: dict[str, Any]) -> None:
        p["status"] = {
            "initContainerStatuses": [{"restartCount": 5 * base}],
            "containerStatuses": [{"restartCount": 10 * base}, {"restartCount": 10 * base}],
        }

    return f


def init_pods(apply=None) -> list[dict[str, Any]]:
    pods = []
    extra = {6: ds_owner, 7: chain(normal_owner, local_storage), 8: mirror}
    for i in range(10):
        pods.append(
            build_pod(f"pod-{i}", 100, 0, "node1", chain(normal_owner, restarts(i), extra.get(i), apply))
        )
    pods.append(build_pod("CPU-consumer-1", 150, 100, "node4", normal_owner))
    pods.append(build_pod("CPU-consumer-2", 150, 100, "node5", normal_owner))
    return pods


def node(name: str, apply=None) -> dict[str, Any]:
    return build_node(name, 2000, 3000, 10, apply)


def crashloop(p):
    if p["status"].get("containerStatuses"):
        p["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}


def init_crashloop(p):
    p["status"]["initContainerStatuses"] = [{"state": {"waiting": {"reason": "CrashLoopBackOff"}}}]


def args(threshold: int, init: bool, **more: Any) -> dict[str, Any]:
    return {"podRestartThreshold": threshold, "includingInitContainers": init, **more}


N1 = [node("node1")]
CASES = [
    (
        "All pods have total restarts under threshold, no pod evictions",
        args(10000, True),
        init_pods(),
        N1,
        0,
        None,
        None,
        False,
    ),
    (
        "Some pods have total restarts bigger than threshold",
        args(1, True),
        init_pods(),
        N1,
        6,
        None,
        None,
        False,
    ),
    (
        "Nine pods have total restarts equals threshold(includingInitContainers=true), 6 pod evictions",
        args(25, True),
        init_pods(),
        N1,
        6,
        None,
        None,
        False,
    ),
    (
        "Nine pods have total restarts equals threshold(includingInitContainers=false), 5 pod evictions",
        args(25, False),
        init_pods(),
        N1,
        5,
        None,
        None,
        False,
    ),
    (
        "All pods have total restarts equals threshold(includingInitContainers=true), 6 pod evictions",
        args(20, True),
        init_pods(),
        N1,
        6,
        None,
        None,
        False,
    ),
    (
        "Nine pods have total restarts equals threshold(includingInitContainers=false), 6 pod evictions",
        args(20, False),
        init_pods(),
        N1,
        6,
        None,
        None,
        False,
    ),
    (
        "Five pods have total restarts bigger than threshold(includingInitContainers=true), but only 1 pod eviction",
        args(5 * 25 + 1, True),
        init_pods(),
        N1,
        1,
        None,
        None,
        False,
    ),
    (
        "Five pods have total restarts bigger than threshold(includingInitContainers=false), but only 1 pod eviction",
        args(5 * 20 + 1, False),
        init_pods(),
        N1,
        1,
        None,
        None,
        False,
    ),
    (
        "All pods have total restarts equals threshold(maxPodsToEvictPerNode=3), 3 pod evictions",
        args(1, True),
        init_pods(),
        N1,
        3,
        3,
        None,
        False,
    ),
    (
        "All pods have total restarts equals threshold(maxNoOfPodsToEvictPerNamespace=3), 3 pod evictions",
        args(1, True),
        init_pods(),
        N1,
        3,
        None,
        3,
        False,
    ),
    (
        "All pods have total restarts equals threshold(maxPodsToEvictPerNode=3) but the only other node is tainted, 0 pod evictions",
        args(1, True),
        init_pods(),
        [node("node1"), node("node2", taint("hardware", "gpu"))],
        0,
        3,
        None,
        True,
    ),
    (
        "All pods have total restarts equals threshold(maxPodsToEvictPerNode=3) but the only other node is not schedulable, 0 pod evictions",
        args(1, True),
        init_pods(),
        [node("node1"), node("node3", unschedulable)],
        0,
        3,
        None,
        True,
    ),
    (
        "All pods have total restarts equals threshold(maxPodsToEvictPerNode=3) but the only other node does not have enough CPU, 0 pod evictions",
        args(1, True),
        init_pods(),
        [node("node1"), build_node("node4", 200, 3000, 10)],
        0,
        3,
        None,
        True,
    ),
    (
        "All pods have total restarts equals threshold(maxPodsToEvictPerNode=3) but the only other node has enough CPU, 3 pod evictions",
        args(1, True),
        init_pods(),
        [node("node1"), node("node5")],
        3,
        3,
        None,
        True,
    ),
    (
        "pods are in CrashLoopBackOff with states=CrashLoopBackOff, 3 pod evictions",
        {"podRestartThreshold": 1, "states": ["CrashLoopBackOff"]},
        init_pods(crashloop),
        [node("node1"), node("node5")],
        3,
        3,
        None,
        True,
    ),
    (
        "pods without CrashLoopBackOff with states=CrashLoopBackOff, 0 pod evictions",
        {"podRestartThreshold": 1, "states": ["CrashLoopBackOff"]},
        init_pods(),
        [node("node1"), node("node5")],
        0,
        3,
        None,
        True,
    ),
    (
        "pods running with state=Running, 3 pod evictions",
        {"podRestartThreshold": 1, "states": ["Running"]},
        init_pods(phase("Running")),
        N1,
        3,
        3,
        None,
        False,
    ),
    (
        "pods pending with state=Running, 0 pod evictions",
        {"podRestartThreshold": 1, "states": ["Running"]},
        init_pods(phase("Pending")),
        N1,
        0,
        3,
        None,
        False,
    ),
    (
        "pods pending with initContainer with states=CrashLoopBackOff threshold(includingInitContainers=true), 3 pod evictions",
        {"podRestartThreshold": 1, "states": ["CrashLoopBackOff"], "includingInitContainers": True},
        init_pods(init_crashloop),
        N1,
        3,
        3,
        None,
        False,
    ),
    (
        "pods pending with initContainer with states=CrashLoopBackOff threshold(includingInitContainers=false), 0 pod evictions",
        {"podRestartThreshold": 1, "states": ["CrashLoopBackOff"], "includingInitContainers": False},
        init_pods(init_crashloop),
        N1,
        0,
        3,
        None,
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "plugin_args", "pods", "nodes", "want", "per_node", "per_ns", "node_fit"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_upstream_case(name, plugin_args, pods, nodes, want, per_node, per_ns, node_fit):
    top = {}
    if per_node is not None:
        top["maxNoOfPodsToEvictPerNode"] = per_node
    if per_ns is not None:
        top["maxNoOfPodsToEvictPerNamespace"] = per_ns
    r = evicted_count(
        "deschedule",
        "RemovePodsHavingTooManyRestarts",
        plugin_args,
        nodes + pods,
        evictor={"nodeFit": node_fit},
        top=top,
    )
    assert len(r.log.evictions) == want
