"""descheduler ``pkg/framework/plugins/removepodsviolatingnodeaffinity/node_affinity_test.go``,
``TestRemovePodsViolatingNodeAffinity``: every case, translated (expected counts are upstream's).

One case differs by design: upstream's plugin is built without validation and logs and ignores an
unknown ``nodeAffinityType``; Harmonic's loader rejects it, naming the field (both evict nothing)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.descheduler.upstream import (
    build_node,
    build_pod,
    chain,
    evicted_count,
    load_error,
    normal_owner,
)

KEY, VALUE = "kubernetes.io/desiredNode", "yes"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
WITH, WITHOUT, UNSCHED = "nodeWithLabels", "nodeWithoutLabels", "unschedulableNodeWithLabels"


def desired(n):
    n["metadata"]["labels"][KEY] = VALUE


def node(name: str, apply=None) -> dict[str, Any]:
    return build_node(name, 2000, 3000, 10, apply)


def unschedulable_with_labels() -> dict[str, Any]:
    def f(n):
        desired(n)
        n["spec"]["unschedulable"] = True

    return node(UNSCHED, f)


def affinity(kind: str):
    expr = {"matchExpressions": [{"key": KEY, "operator": "In", "values": [VALUE]}]}

    def f(p):
        na: dict[str, Any] = {}
        if kind == REQ:
            na[REQ] = {"nodeSelectorTerms": [expr]}
        elif kind == PREF:
            na[PREF] = [{"weight": 10, "preference": expr}]
        p["spec"]["affinity"] = {"nodeAffinity": na}

    return f


def pods_on(node_name: str, kind: str, terminating: bool = False) -> list[dict[str, Any]]:
    def deleting(p):
        if terminating:
            p["metadata"]["deletionTimestamp"] = "0001-01-01T00:00:00Z"

    return [
        build_pod("podWithNodeAffinity", 100, 0, node_name, chain(affinity(kind), normal_owner, deleting)),
        build_pod("pod1", 100, 0, node_name, chain(normal_owner, deleting)),
        build_pod("pod2", 100, 0, node_name, chain(normal_owner, deleting)),
    ]


BOTH = [node(WITHOUT), node(WITH, desired)]


def C(name, kind, want, pods, nodes, node_fit=False, **top):
    return pytest.param(kind, want, pods, nodes, node_fit, top, id=name)


def tag(kind: str) -> str:
    return "[required affinity]" if kind == REQ else "[preferred affinity]"


CASES = [
    C(
        "Pod is correctly scheduled on node, no eviction expected [required affinity]",
        REQ,
        0,
        pods_on(WITH, REQ),
        [node(WITH, desired)],
    ),
    C(
        "Pod is correctly scheduled on node, no eviction expected [preferred affinity]",
        PREF,
        0,
        pods_on(WITH, PREF),
        [node(WITH, desired)],
    ),
    C(
        "Pod is scheduled on node without matching labels, another schedulable node available, should be evicted",
        REQ,
        1,
        pods_on(WITHOUT, REQ),
        BOTH,
    ),
    C(
        "Pod is scheduled on node without matching labels, another schedulable node available with better fit, should be evicted",
        PREF,
        1,
        pods_on(WITHOUT, PREF),
        BOTH,
    ),
    *[
        C(
            f"Pod is scheduled on node without matching labels, another schedulable node available, maxPodsToEvictPerNode set to 1, should be evicted {tag(k)}",
            k,
            1,
            pods_on(WITHOUT, k),
            BOTH,
            maxNoOfPodsToEvictPerNode=1,
        )
        for k in (REQ, PREF)
    ],
    *[
        C(
            f"Pod is scheduled on node without matching labels, another schedulable node available, maxPodsToEvictPerNode set to 0, should be not evicted {tag(k)}",
            k,
            0,
            pods_on(WITHOUT, k),
            BOTH,
            maxNoOfPodsToEvictPerNode=0,
        )
        for k in (REQ, PREF)
    ],
    *[
        C(
            f"Pod is scheduled on node without matching labels, another schedulable node available, maxPodsToEvictPerNode set to 1, no pod evicted since pod terminating {tag(k)}",
            k,
            0,
            pods_on(WITHOUT, k, terminating=True),
            BOTH,
            maxNoOfPodsToEvictPerNode=1,
        )
        for k in (REQ, PREF)
    ],
    C(
        "Pod is scheduled on node without matching labels, another schedulable node available, maxNoOfPodsToEvictPerNamespace set to 1, should be evicted [required affinity]",
        REQ,
        1,
        pods_on(WITHOUT, REQ),
        BOTH,
        maxNoOfPodsToEvictPerNamespace=1,
    ),
    C(
        "Pod is scheduled on node without matching labels, another schedulable node available, maxNoOfPodsToEvictTotal set to 0, should not be evicted [required affinity]",
        REQ,
        0,
        pods_on(WITHOUT, REQ),
        BOTH,
        maxNoOfPodsToEvictPerNamespace=1,
        maxNoOfPodsToEvictTotal=0,
    ),
    C(
        "Pod is scheduled on node without matching labels, another schedulable node available, maxNoOfPodsToEvictPerNamespace set to 1, should be evicted [preferred affinity]",
        PREF,
        1,
        pods_on(WITHOUT, PREF),
        BOTH,
        maxNoOfPodsToEvictPerNamespace=1,
    ),
    *[
        C(
            f"Pod is scheduled on node without matching labels, another schedulable node available, maxNoOfPodsToEvictPerNamespace set to 0, should not be evicted {tag(k)}",
            k,
            0,
            pods_on(WITHOUT, k),
            BOTH,
            maxNoOfPodsToEvictPerNamespace=0,
        )
        for k in (REQ, PREF)
    ],
    *[
        C(
            f"Pod is scheduled on node without matching labels, another schedulable node available, maxNoOfPodsToEvictPerNamespace set to 1, no pod evicted since pod terminting {tag(k)}",
            k,
            0,
            pods_on(WITHOUT, k, terminating=True),
            BOTH,
            maxNoOfPodsToEvictPerNamespace=1,
        )
        for k in (REQ, PREF)
    ],
    *[
        C(
            f"Pod is scheduled on node without matching labels, but no node where pod fits is available, should not evict {tag(k)}",
            k,
            0,
            pods_on(WITHOUT, k),
            [node(WITHOUT), unschedulable_with_labels()],
            node_fit=True,
        )
        for k in (REQ, PREF)
    ],
    *[
        C(
            f"Pod is scheduled on node without matching labels, and unschedulable node where pod could fit is available, should not evict {tag(k)}",
            k,
            0,
            pods_on(WITHOUT, k),
            [node(WITH, desired), unschedulable_with_labels()],
            node_fit=True,
            maxNoOfPodsToEvictPerNode=1,
        )
        for k in (REQ, PREF)
    ],
]


@pytest.mark.parametrize(("kind", "want", "pods", "nodes", "node_fit", "top"), CASES)
def test_upstream_case(kind, want, pods, nodes, node_fit, top):
    r = evicted_count(
        "deschedule",
        "RemovePodsViolatingNodeAffinity",
        {"nodeAffinityType": [kind]},
        nodes + pods,
        evictor={"nodeFit": node_fit},
        top=top,
    )
    assert len(r.log.evictions) == want


def test_invalid_affinity_type_is_refused_at_load():
    """Upstream: "Invalid Affinity type, should not evict any pods" (its plugin skips the type)."""
    err = load_error(
        "deschedule",
        "RemovePodsViolatingNodeAffinity",
        {"nodeAffinityType": ["requiredDuringSchedulingRequiredDuringExecution"]},
    )
    assert err is not None and "nodeAffinityType" in err
