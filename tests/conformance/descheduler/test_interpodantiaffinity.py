"""descheduler ``pkg/framework/plugins/removepodsviolatinginterpodantiaffinity/pod_antiaffinity_test.go``,
``TestPodAntiAffinity``: every case, translated (expected counts are upstream's)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.descheduler.upstream import (
    anti_affinity,
    build_node,
    build_pod,
    chain,
    critical,
    deleting,
    evicted_count,
    labels,
    normal_owner,
    priority,
)

FOO_BAR = anti_affinity("foo", "bar")
FOO1_BAR1 = anti_affinity("foo1", "bar1")


def main_region(n):
    n["metadata"]["labels"] = {"region": "main-region"}


def node(name: str, apply=None) -> dict[str, Any]:
    return build_node(name, 2000, 3000, 10, apply)


N1 = node("n1", main_region)


def pod1(name: str, apply=None, on: str = "n1") -> dict[str, Any]:
    return build_pod(name, 100, 0, on, apply)


def with_anti(name: str) -> dict[str, Any]:
    return pod1(name, chain(normal_owner, FOO_BAR))


P2 = pod1("p2", chain(normal_owner, labels(foo="bar")))
NON_EVICTABLE = pod1("non-evict", chain(critical, labels(foo="bar")))
FOUR = [with_anti("p1"), P2, with_anti("p3"), with_anti("p4")]
WEST = pod1("p8", lambda p: p["spec"].__setitem__("nodeSelector", {"datacenter": "west"}))


def C(name, pods, nodes, want, node_fit=False, **top):
    return pytest.param(pods, nodes, want, node_fit, top, id=name)


CASES = [
    C("Maximum pods to evict - 0", FOUR, [N1], 3),
    C("Maximum pods to evict - 3", FOUR, [N1], 3, maxNoOfPodsToEvictPerNode=3),
    C(
        "Maximum pods to evict (maxPodsToEvictPerNamespace=3) - 3",
        FOUR,
        [N1],
        3,
        maxNoOfPodsToEvictPerNamespace=3,
    ),
    C(
        "Maximum pods to evict (maxNoOfPodsToEvictTotal)",
        FOUR,
        [N1],
        1,
        maxNoOfPodsToEvictPerNamespace=3,
        maxNoOfPodsToEvictTotal=1,
    ),
    C(
        "Evict only 1 pod after sorting",
        [
            pod1("p5", chain(normal_owner, labels(foo="bar"), FOO1_BAR1, priority(100))),
            pod1("p6", chain(normal_owner, labels(foo="bar"), FOO1_BAR1, priority(50))),
            pod1("p7", chain(normal_owner, labels(foo1="bar1"), FOO_BAR, priority(0))),
        ],
        [N1],
        1,
    ),
    # Upstream lists this case twice, identically.
    *[
        C(
            f"Evicts pod that conflicts with critical pod (but does not evict critical pod) #{i}",
            [with_anti("p1"), NON_EVICTABLE],
            [N1],
            1,
            maxNoOfPodsToEvictPerNode=1,
        )
        for i in (1, 2)
    ],
    C(
        "Won't evict pods because node selectors don't match available nodes",
        [WEST, NON_EVICTABLE],
        [N1, node("n2", lambda n: n["metadata"].__setitem__("labels", {"datacenter": "east"}))],
        0,
        node_fit=True,
        maxNoOfPodsToEvictPerNode=1,
    ),
    C(
        "Won't evict pods because only other node is not schedulable",
        [WEST, NON_EVICTABLE],
        [N1, node("n3", lambda n: n.__setitem__("spec", {"unschedulable": True}))],
        0,
        node_fit=True,
        maxNoOfPodsToEvictPerNode=1,
    ),
    C(
        "No pod to evicted since all pod terminating",
        [
            pod1("p9", chain(normal_owner, FOO_BAR, deleting)),
            pod1("p10", chain(normal_owner, FOO_BAR, deleting)),
        ],
        [N1],
        0,
    ),
    C(
        "Won't evict pods because only other node doesn't have enough resources",
        FOUR,
        [N1, build_node("n4", 2, 2, 1)],
        0,
        node_fit=True,
        maxNoOfPodsToEvictPerNode=3,
    ),
    C(
        "Evict pod violating anti-affinity among different node (all pods have anti-affinity)",
        [with_anti("p1"), pod1("p11", chain(normal_owner, labels(foo="bar")), on="n5")],
        [N1, build_node("n5", 200, 3000, 10, main_region)],
        1,
    ),
]


@pytest.mark.parametrize(("pods", "nodes", "want", "node_fit", "top"), CASES)
def test_upstream_case(pods, nodes, want, node_fit, top):
    r = evicted_count(
        "deschedule",
        "RemovePodsViolatingInterPodAntiAffinity",
        {},
        nodes + pods,
        evictor={"nodeFit": node_fit},
        top=top,
    )
    assert len(r.log.evictions) == want
