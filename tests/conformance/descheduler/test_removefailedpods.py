"""descheduler ``pkg/framework/plugins/removefailedpods/failedpods_test.go``, ``TestRemoveFailedPods``:
every case, translated (expected counts are upstream's). Upstream builds the args without defaulting,
so an unset ``MinPodLifetimeSeconds`` means no age check: translated as ``minPodLifetimeSeconds: 0``
(Harmonic's default, like descheduler's defaulting, is 3600)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.descheduler.upstream import build_node, build_pod, evicted_count, rs_owner
from tests.rescheduler.helpers import ts


def status(
    reason: str = "", phase: str = "", init: dict | None = None, main: dict | None = None
) -> dict[str, Any]:
    st: dict[str, Any] = {}
    if reason:
        st["reason"] = reason
    if phase:
        st["phase"] = phase
    if init is not None:
        st["initContainerStatuses"] = [{"state": init}]
        st["phase"] = "Failed"
    if main is not None:
        st["containerStatuses"] = [{"state": main}]
        st["phase"] = "Failed"
    return st


def pod(name: str, on: str, st: dict[str, Any], deleting: bool = False) -> dict[str, Any]:
    p = build_pod(name, 1, 1, on, rs_owner)
    p["status"] = st
    p["metadata"]["creationTimestamp"] = ts(0)
    if deleting:
        p["metadata"]["deletionTimestamp"] = "0001-01-01T00:00:00Z"
    return p


def term(reason: str = "", code: int | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {}
    if reason:
        t["reason"] = reason
    if code is not None:
        t["exitCode"] = code
    return {"terminated": t}


def wait(reason: str) -> dict[str, Any]:
    return {"waiting": {"reason": reason}}


def args(init: bool = False, reasons=None, codes=None, kinds=None, min_age: int = 0) -> dict[str, Any]:
    a: dict[str, Any] = {"includingInitContainers": init, "minPodLifetimeSeconds": min_age}
    if reasons:
        a["reasons"] = reasons
    if codes:
        a["exitCodes"] = codes
    if kinds:
        a["excludeOwnerKinds"] = kinds
    return a


N1 = [build_node("node1", 2000, 3000, 10)]


def C(name, a, nodes, want, pods, node_fit=False):
    return pytest.param(a, nodes, want, pods, node_fit, id=name)


CASES = [
    C("default empty args, 0 failures, 0 evictions", args(), N1, 0, []),
    C("0 failures, 0 evictions", args(), N1, 0, []),
    C(
        "1 container terminated with reason NodeAffinity, 1 eviction",
        args(),
        N1,
        1,
        [pod("p1", "node1", status(main=term("NodeAffinity")))],
    ),
    C(
        "1 container terminated with exitCode 1, 1 eviction",
        args(codes=[1]),
        N1,
        1,
        [pod("p1", "node1", status(main=term(code=1)))],
    ),
    C(
        "1 container terminated with exitCode 1, reason NodeAffinity, 1 eviction",
        args(codes=[1]),
        N1,
        1,
        [pod("p1", "node1", status(main=term("NodeAffinity", 1)))],
    ),
    C(
        "1 container terminated with exitCode 1, expected exitCode 2, 0 eviction",
        args(codes=[2]),
        N1,
        0,
        [pod("p1", "node1", status(main=term(code=1)))],
    ),
    C(
        "2 containers terminated with exitCode 1 and 2 respectively, 2 evictions",
        args(codes=[1, 2, 3]),
        N1,
        2,
        [pod("p1", "node1", status(main=term(code=1))), pod("p2", "node1", status(main=term(code=2)))],
    ),
    C(
        "2 containers terminated with exitCode 1 and 2 respectively, expected exitCode 1, 1 eviction",
        args(codes=[1]),
        N1,
        1,
        [pod("p1", "node1", status(main=term(code=1))), pod("p2", "node1", status(main=term(code=2)))],
    ),
    C(
        "1 init container terminated with reason NodeAffinity, 1 eviction",
        args(init=True),
        N1,
        1,
        [pod("p1", "node1", status(init=term("NodeAffinity")))],
    ),
    C(
        "1 init container terminated with exitCode 1, 1 eviction",
        args(init=True, codes=[1]),
        N1,
        1,
        [pod("p1", "node1", status(main=term(code=1)))],
    ),
    C(
        "1 init container terminated with exitCode 2, expected 1, 0 eviction",
        args(init=True, codes=[1]),
        N1,
        0,
        [pod("p1", "node1", status(main=term(code=2)))],
    ),
    C(
        "1 init container waiting with reason CreateContainerConfigError, 1 eviction",
        args(init=True),
        N1,
        1,
        [pod("p1", "node1", status(init=wait("CreateContainerConfigError")))],
    ),
    C(
        "2 init container waiting with reason CreateContainerConfigError, 2 nodes, 2 evictions",
        args(init=True),
        [build_node("node1", 2000, 3000, 10), build_node("node2", 2000, 3000, 10)],
        2,
        [
            pod("p1", "node1", status(init=term("CreateContainerConfigError"))),
            pod("p2", "node2", status(init=term("CreateContainerConfigError"))),
        ],
    ),
    C(
        "include reason=CreateContainerConfigError, 1 container terminated with reason CreateContainerConfigError, 1 eviction",
        args(reasons=["CreateContainerConfigError"]),
        N1,
        1,
        [pod("p1", "node1", status(main=term("CreateContainerConfigError")))],
    ),
    C(
        "include reason=CreateContainerConfigError+NodeAffinity, 1 container terminated with reason CreateContainerConfigError, 1 eviction",
        args(reasons=["CreateContainerConfigError", "NodeAffinity"]),
        N1,
        1,
        [pod("p1", "node1", status(main=term("CreateContainerConfigError")))],
    ),
    C(
        "include reason=CreateContainerConfigError, 1 container terminated with reason NodeAffinity, 0 eviction",
        args(reasons=["CreateContainerConfigError"]),
        N1,
        0,
        [pod("p1", "node1", status(main=term("NodeAffinity")))],
    ),
    C(
        "include init container=false, 1 init container waiting with reason CreateContainerConfigError, 0 eviction",
        args(reasons=["CreateContainerConfigError"]),
        N1,
        0,
        [pod("p1", "node1", status(init=wait("CreateContainerConfigError")))],
    ),
    C(
        "lifetime 1 hour, 1 container terminated with reason NodeAffinity, 0 eviction",
        args(min_age=3600),
        N1,
        0,
        [pod("p1", "node1", status(main=term("NodeAffinity")))],
    ),
    C(
        "nodeFit=true, 1 unschedulable node, 1 container terminated with reason NodeAffinity, 0 eviction",
        args(),
        [
            build_node("node1", 2000, 3000, 10),
            build_node("node2", 2000, 2000, 10, lambda n: n["spec"].update(unschedulable=True)),
        ],
        0,
        [pod("p1", "node1", status(main=term("NodeAffinity")))],
        node_fit=True,
    ),
    C(
        "nodeFit=true, only available node does not have enough resources, 1 container terminated with reason CreateContainerConfigError, 0 eviction",
        args(reasons=["CreateContainerConfigError"]),
        [build_node("node1", 1, 1, 10), build_node("node2", 0, 0, 10)],
        0,
        [pod("p1", "node1", status(main=term("CreateContainerConfigError")))],
        node_fit=True,
    ),
    C(
        "excluded owner kind=ReplicaSet, 1 init container terminated with owner kind=ReplicaSet, 0 eviction",
        args(init=True, kinds=["ReplicaSet"]),
        N1,
        0,
        [pod("p1", "node1", status(init=term("NodeAffinity")))],
    ),
    C(
        "excluded owner kind=DaemonSet, 1 init container terminated with owner kind=ReplicaSet, 1 eviction",
        args(init=True, kinds=["DaemonSet"]),
        N1,
        1,
        [pod("p1", "node1", status(init=term("NodeAffinity")))],
    ),
    C(
        "excluded owner kind=DaemonSet, 1 init container terminated with owner kind=ReplicaSet, 1 pod in termination; nothing should be moved",
        args(init=True, kinds=["DaemonSet"]),
        N1,
        0,
        [pod("p1", "node1", status(init=term("NodeAffinity")), deleting=True)],
    ),
    C(
        "1 container terminated with reason ShutDown, 0 evictions",
        args(),
        N1,
        0,
        [pod("p1", "node1", status("Shutdown", "Failed"))],
        node_fit=True,
    ),
    C(
        "include reason=Shutdown, 2 containers terminated with reason ShutDown, 2 evictions",
        args(reasons=["Shutdown"]),
        N1,
        2,
        [pod("p1", "node1", status("Shutdown", "Failed")), pod("p2", "node1", status("Shutdown", "Failed"))],
    ),
]


@pytest.mark.parametrize(("plugin_args", "nodes", "want", "pods", "node_fit"), CASES)
def test_upstream_case(plugin_args, nodes, want, pods, node_fit):
    r = evicted_count(
        "deschedule", "RemoveFailedPods", plugin_args, nodes + pods, evictor={"nodeFit": node_fit}
    )
    assert len(r.log.evictions) == want
