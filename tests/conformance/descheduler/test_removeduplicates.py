"""descheduler ``pkg/framework/plugins/removeduplicates/removeduplicates_test.go``: every case of
``TestFindDuplicatePods`` and ``TestRemoveDuplicatesUniformly``, translated (expected counts are
upstream's). As upstream's tests call ``Balance(nodes)``, pods on a node left out of ``nodes`` are
counted by their owner but are not candidates.

One count differs by design ("two replica sets"): upstream's 4 is 2 pods evicted twice each."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.descheduler.upstream import (
    build_node,
    build_pod,
    chain,
    ds_owner,
    evicted_count,
    in_namespace,
    kube_system_critical,
    local_storage,
    mirror,
    normal_owner,
    rs_owner,
    taint,
    unschedulable,
)


def node(name: str, apply=None) -> dict[str, Any]:
    return build_node(name, 2000, 3000, 10, apply)


def pod(name: str, on: str, apply=None) -> dict[str, Any]:
    return build_pod(name, 100, 0, on, apply)


def rs_pod(name: str, ns: str, apply=None) -> dict[str, Any]:
    """``buildTestPodWithRSOwnerRefWithNamespaceForNode1``."""
    return pod(name, "n1", chain(rs_owner, in_namespace(ns), apply))


def image(v: str):
    def f(p):
        p["spec"]["containers"][0]["image"] = v

    return f


def extra_container(name: str):
    def f(p):
        p["spec"]["containers"].append({"name": name, "image": name})

    return f


def with_image(name: str, img: str) -> dict[str, Any]:
    """``buildTestPodWithImage``: a second container named and imaged ``img``."""
    return pod(name, "n1", chain(rs_owner, extra_container(img)))


def owners(*names: str):
    def f(p):
        p["metadata"]["ownerReferences"] = [
            {"kind": "ReplicaSet", "apiVersion": "v1", "name": n} for n in names
        ]

    return f


def tolerate(key: str, value: str):
    def f(p):
        rs_owner(p)
        p["spec"]["tolerations"] = [{"key": key, "value": value, "operator": "Equal", "effect": "NoSchedule"}]

    return f


def not_master(key: str):
    def f(p):
        rs_owner(p)
        exprs = [
            {"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"},
            {"key": key, "operator": "DoesNotExist"},
        ]
        p["spec"]["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": exprs}]
                }
            }
        }

    return f


def worker_selector(value: str):
    def f(p):
        rs_owner(p)
        p["spec"].setdefault("nodeSelector", {})["node-role.kubernetes.io/worker"] = value

    return f


def master_taint(n):
    n["spec"]["taints"] = [{"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"}]


def master_label(n):
    n["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""


def worker_label(n):
    # Upstream sets the same key twice; the second value wins.
    n["metadata"]["labels"]["node-role.kubernetes.io/worker"] = "k2"


def spread(make, names=range(1, 10), placement=(5, 3, 1), nodes=("n1", "n2", "n3")) -> list[dict[str, Any]]:
    """Pods ``p<i>`` made by ``make(i)`` on nodes in the (5, 3, 1) layout upstream's comments draw."""
    where = [n for n, k in zip(nodes, placement, strict=True) for _ in range(k)]
    return [pod(f"p{i}", on, make(i)) for i, on in zip(names, where, strict=True)]


N12 = [node("n1"), node("n2")]
N123 = [node("n1"), node("n2"), node("n3")]
DEV = [rs_pod("p1", "dev"), rs_pod("p2", "dev"), rs_pod("p3", "dev")]
TEST = [rs_pod("p8", "test"), rs_pod("p9", "test"), rs_pod("p10", "test")]
UNEVICTABLE = [
    pod("p4", "n1", ds_owner),
    pod("p5", "n1", chain(normal_owner, local_storage)),
    pod("p6", "n1", mirror),
    pod("p7", "n1", kube_system_critical),
]
WEST = lambda p: p["spec"].__setitem__("nodeSelector", {"datacenter": "west"})  # noqa: E731
WORKERS_AND_MASTERS = ("worker1", "worker2", "worker3")


def alternating(make_k1_k2):
    return lambda i: make_k1_k2("k1" if i % 2 else "k2")


def C(name, pods, nodes, want, exclude=None, node_fit=False):
    return pytest.param(pods, nodes, want, exclude, node_fit, id=name)


FIND = [
    C("Three pods in the `dev` Namespace, bound to same ReplicaSet. 1 should be evicted.", DEV, N12, 1),
    C(
        "Three pods in the `dev` Namespace, bound to same ReplicaSet, but ReplicaSet kind is excluded. 0 should be evicted.",
        DEV,
        N12,
        0,
        exclude=["ReplicaSet"],
    ),
    C("Three Pods in the `test` Namespace, bound to same ReplicaSet. 1 should be evicted.", TEST, N12, 1),
    C(
        "Three Pods in the `dev` Namespace, three Pods in the `test` Namespace. Bound to ReplicaSet with same name. 4 should be evicted.",
        DEV + TEST,
        N12,
        2,
    ),
    C(
        "Pods are: part of DaemonSet, with local storage, mirror pod annotation, critical pod annotation - none should be evicted.",
        UNEVICTABLE,
        N12,
        0,
    ),
    C("Test all Pods: 4 should be evicted.", DEV + UNEVICTABLE + TEST, N12, 2),
    C(
        "Pods with the same owner but different images should not be evicted",
        [rs_pod("p11", "different-images", image("foo")), rs_pod("p12", "different-images", image("bar"))],
        N12,
        0,
    ),
    C(
        "Pods with multiple containers should not match themselves",
        [rs_pod("p13", "different-images", extra_container("foo"))],
        N12,
        0,
    ),
    C(
        "Pods with matching ownerrefs and at not all matching image should not trigger an eviction",
        [
            rs_pod("p11", "different-images", image("foo")),
            rs_pod("p13", "different-images", extra_container("foo")),
        ],
        N12,
        0,
    ),
    C(
        "Three pods in the `dev` Namespace, bound to same ReplicaSet. Only node available has a taint, and nodeFit set to true. 0 should be evicted.",
        DEV,
        [node("n1"), node("n3", taint("hardware", "gpu"))],
        0,
        node_fit=True,
    ),
    C(
        "Three pods in the `node-fit` Namespace, bound to same ReplicaSet, all with a nodeSelector. Only node available has an incorrect node label, and nodeFit set to true. 0 should be evicted.",
        [rs_pod("p15", "node-fit", WEST), rs_pod("NOT1", "node-fit", WEST), rs_pod("NOT2", "node-fit", WEST)],
        [node("n1"), node("n4", lambda n: n["metadata"].__setitem__("labels", {"datacenter": "east"}))],
        0,
        node_fit=True,
    ),
    C(
        "Three pods in the `node-fit` Namespace, bound to same ReplicaSet. Only node available is not schedulable, and nodeFit set to true. 0 should be evicted.",
        DEV,
        [node("n1"), node("n5", unschedulable)],
        0,
        node_fit=True,
    ),
    C(
        "Three pods in the `node-fit` Namespace, bound to same ReplicaSet. Only node available does not have enough CPU, and nodeFit set to true. 0 should be evicted.",
        [*DEV, build_pod("CPU-eater", 150, 150, "n6", in_namespace("test"))],
        [node("n1"), build_node("n6", 200, 200, 10)],
        0,
        node_fit=True,
    ),
    C(
        "Three pods in the `node-fit` Namespace, bound to same ReplicaSet. Only node available has enough CPU, and nodeFit set to true. 1 should be evicted.",
        [*DEV, build_pod("CPU-saver", 100, 150, "n6", in_namespace("test"))],
        [node("n1"), build_node("n6", 200, 200, 10)],
        1,
        node_fit=True,
    ),
]

UNIFORM = [
    C("Evict pods uniformly", spread(lambda i: rs_owner), N123, 2),
    C("Evict pods uniformly with one node left out", spread(lambda i: rs_owner), N12, 1),
    C(
        "Evict pods uniformly with two replica sets",
        spread(lambda i: owners("replicaset-1", "replicaset-2"), names=range(11, 20)),
        N123,
        # Upstream counts 4: the same 2 pods are duplicates under each of their two owners and its fake
        # client accepts a second eviction of a pod. Harmonic evicts a pod once: 2 distinct pods.
        2,
    ),
    C(
        "Evict pods uniformly with two owner references",
        spread(lambda i: rs_owner, names=range(11, 20))
        + spread(lambda i: owners("replicaset-2"), names=range(21, 30), placement=(1, 3, 5)),
        N123,
        4,
    ),
    C(
        "Evict pods with number of pods less than nodes",
        [pod("p1", "n1", rs_owner), pod("p2", "n1", rs_owner)],
        N123,
        1,
    ),
    C(
        "Evict pods with number of pods less than nodes, but ignore different pods with the same ownerref",
        [with_image("p1", "foo"), with_image("p2", "bar"), with_image("p3", "baz"), with_image("p4", "foo")],
        N123,
        1,
    ),
    C("Evict pods with a single pod with three nodes", [pod("p1", "n1", rs_owner)], N123, 0),
    C(
        "Evict pods uniformly respecting taints",
        spread(lambda i: tolerate(*(("k1", "v1") if i % 2 else ("k2", "v2"))), nodes=WORKERS_AND_MASTERS),
        [node(w) for w in WORKERS_AND_MASTERS] + [node(f"master{i}", master_taint) for i in (1, 2, 3)],
        2,
    ),
    C(
        "Evict pods uniformly respecting RequiredDuringSchedulingIgnoredDuringExecution node affinity",
        spread(alternating(not_master), nodes=WORKERS_AND_MASTERS),
        [node(w) for w in WORKERS_AND_MASTERS] + [node(f"master{i}", master_label) for i in (1, 2, 3)],
        2,
    ),
    C(
        "Evict pods uniformly respecting node selector",
        spread(alternating(worker_selector), nodes=WORKERS_AND_MASTERS),
        [node(w, worker_label) for w in WORKERS_AND_MASTERS] + [node(f"master{i}") for i in (1, 2, 3)],
        2,
    ),
    C(
        "Evict pods uniformly respecting node selector with zero target nodes",
        spread(alternating(worker_selector), nodes=WORKERS_AND_MASTERS),
        [node(w) for w in WORKERS_AND_MASTERS] + [node(f"master{i}") for i in (1, 2, 3)],
        0,
    ),
]


@pytest.mark.parametrize(("pods", "nodes", "want", "exclude", "node_fit"), FIND + UNIFORM)
def test_upstream_case(pods, nodes, want, exclude, node_fit):
    args = {"excludeOwnerKinds": exclude} if exclude else {}
    r = evicted_count("balance", "RemoveDuplicates", args, nodes + pods, evictor={"nodeFit": node_fit})
    assert len(r.log.evictions) == want
    assert len({e.pod.key for e in r.log.evictions}) == want
