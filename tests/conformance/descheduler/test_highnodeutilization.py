"""descheduler ``pkg/framework/plugins/nodeutilization/highnodeutilization_test.go``: every case of
``TestHighNodeUtilization`` (DefaultEvictor ``nodeFit: true``) and ``TestHighNodeUtilizationWithTaints``
(``maxNoOfPodsToEvictPerNode`` = the expected count), translated (expected counts and pods are
upstream's)."""

from __future__ import annotations

import pytest

from tests.conformance.descheduler.upstream import (
    EXTENDED,
    HIGH_PRIORITY,
    LOW_PRIORITY,
    best_effort,
    build_node,
    build_pod,
    chain,
    ds_owner,
    evicted_count,
    key_value_tainted,
    kube_system_critical,
    local_storage,
    mirror,
    node_extended,
    normal_owner,
    pod_extended,
    priority,
    rs_owner,
    tolerates_key_value,
    unschedulable,
)


def rs(name: str, cpu: int, on: str, apply=None, mem: int = 0):
    return build_pod(name, cpu, mem, on, chain(rs_owner, apply))


def ds(name: str, cpu: int, on: str, mem: int = 0):
    return build_pod(name, cpu, mem, on, ds_owner)


def west(o):
    o["metadata"]["labels"] = {"datacenter": "west"}


def west_selector(p):
    p["spec"]["nodeSelector"] = {"datacenter": "west"}


def three(cpu: int = 4000, pods: tuple[int, int, int] = (10, 10, 10), applies=(None, None, unschedulable)):
    return [
        build_node(f"n{i + 1}", cpu, 3000, k, a) for i, (k, a) in enumerate(zip(pods, applies, strict=True))
    ]


def C(name, thresholds, nodes, pods, want, evicted=None, modes=None):
    return pytest.param(thresholds, nodes, pods, want, evicted, modes, id=name)


CPU_PODS_20 = {"cpu": 20, "pods": 20}
CPU_PODS_30 = {"cpu": 30, "pods": 30}
MEMORY_SHORT = C(
    "Other node does not have enough Memory",
    CPU_PODS_30,
    [build_node("n1", 4000, 200, 9), build_node("n2", 4000, 3000, 10)],
    [
        rs("p1", 400, "n1", mem=50),
        rs("p2", 400, "n1", mem=50),
        rs("p3", 400, "n1", mem=50),
        ds("p4", 400, "n1", mem=50),
        rs("p5", 400, "n2", mem=100),
    ],
    0,
)
CASES = [
    C(
        "no node below threshold usage",
        CPU_PODS_20,
        three(applies=(None, None, None)),
        [rs(f"p{i}", 400, f"n{(i - 1) // 3 + 1}") for i in range(1, 10)],
        0,
    ),
    C(
        "no evictable pods",
        {"cpu": 40, "pods": 40},
        three(pods=(9, 10, 10), applies=(None, None, None)),
        [
            build_pod("p1", 400, 0, "n1", chain(normal_owner, local_storage, mirror)),
            build_pod("p2", 400, 0, "n1", chain(normal_owner, kube_system_critical)),
            ds("p3", 400, "n2"),
            ds("p4", 400, "n2"),
            *[rs(f"p{i}", 400, "n3") for i in range(5, 9)],
        ],
        0,
    ),
    C(
        "no node to schedule evicted pods",
        CPU_PODS_20,
        three(),
        [rs("p1", 400, "n1"), rs("p2", 400, "n2"), *[rs(f"p{i}", 400, "n3") for i in range(3, 6)]],
        0,
    ),
    C(
        "without priorities",
        CPU_PODS_30,
        three(),
        [
            rs("p1", 400, "n1"),
            build_pod("p2", 400, 0, "n1", chain(normal_owner, kube_system_critical)),
            *[rs(f"p{i}", 400, "n2") for i in range(3, 7)],
            rs("p7", 400, "n3"),
        ],
        2,
        ["p1", "p7"],
    ),
    C(
        "without priorities stop when resource capacity is depleted",
        CPU_PODS_30,
        three(cpu=2000),
        [rs("p1", 400, "n1"), *[rs(f"p{i}", 400, "n2") for i in range(2, 6)], rs("p6", 400, "n3")],
        1,
    ),
    C(
        "with priorities",
        {"cpu": 30},
        [
            build_node("n1", 4000, 3000, 10),
            build_node("n2", 2000, 3000, 10),
            build_node("n3", 2000, 3000, 10, unschedulable),
        ],
        [
            rs("p1", 400, "n1", priority(LOW_PRIORITY)),
            rs("p2", 400, "n1", priority(HIGH_PRIORITY)),
            *[rs(f"p{i}", 400, "n2") for i in range(5, 9)],
            ds("p9", 400, "n3"),
        ],
        1,
        ["p1"],
    ),
    C(
        "without priorities evicting best-effort pods only",
        {"cpu": 30},
        [
            build_node("n1", 3000, 3000, 10),
            build_node("n2", 3000, 3000, 5),
            build_node("n3", 3000, 3000, 10, unschedulable),
        ],
        [
            build_pod("p1", 0, 0, "n1", chain(rs_owner, best_effort)),
            rs("p2", 400, "n1"),
            *[rs(f"p{i}", 400, "n2") for i in range(3, 7)],
        ],
        1,
        ["p1"],
    ),
    C(
        "with extended resource",
        {"cpu": 20, EXTENDED: 40},
        three(applies=(node_extended(8), node_extended(8), unschedulable)),
        [
            rs("p1", 100, "n1", pod_extended(1)),
            rs("p2", 100, "n1", pod_extended(1)),
            *[rs(f"p{i}", 500, "n2", pod_extended(1)) for i in range(3, 7)],
        ],
        2,
        ["p1", "p2"],
    ),
    C(
        "with extended resource in some of nodes",
        {"cpu": 40, EXTENDED: 40},
        three(applies=(node_extended(8), None, unschedulable)),
        [
            rs("p1", 100, "n1", pod_extended(1)),
            rs("p2", 100, "n1", pod_extended(1)),
            *[rs(f"p{i}", 500, "n2") for i in range(3, 7)],
        ],
        0,
    ),
    C(
        "Other node match pod node selector",
        CPU_PODS_30,
        [build_node("n1", 4000, 3000, 9, west), build_node("n2", 4000, 3000, 10)],
        [
            *[rs(f"p{i}", 400, "n1") for i in range(1, 4)],
            ds("p4", 400, "n1"),
            rs("p5", 400, "n2", west_selector),
        ],
        1,
    ),
    C(
        "Other node does not match pod node selector",
        CPU_PODS_30,
        [build_node("n1", 4000, 3000, 9), build_node("n2", 4000, 3000, 10)],
        [
            *[rs(f"p{i}", 400, "n1") for i in range(1, 4)],
            ds("p4", 400, "n1"),
            rs("p5", 400, "n2", west_selector),
        ],
        0,
    ),
    # Upstream lists this case twice, identically.
    MEMORY_SHORT,
    pytest.param(*MEMORY_SHORT.values, id="Other node does not have enough Memory (repeated)"),
    C(
        "with extended resource threshold and no extended resource pods",
        {EXTENDED: 40},
        three(applies=(node_extended(10), node_extended(10), node_extended(10))),
        [
            rs("p1", 100, "n1", pod_extended(3)),
            rs("p2", 100, "n1", pod_extended(3)),
            *[rs(f"p{i}", 500, "n2") for i in range(3, 7)],
        ],
        0,
        modes=["OnlyThresholdingResources"],
    ),
]


@pytest.mark.parametrize(("thresholds", "nodes", "pods", "want", "evicted", "modes"), CASES)
def test_upstream_case(thresholds, nodes, pods, want, evicted, modes):
    args = {"thresholds": thresholds, **({"evictionModes": modes} if modes else {})}
    r = evicted_count("balance", "HighNodeUtilization", args, nodes + pods, evictor={"nodeFit": True})
    names = {e.pod.name for e in r.log.evictions}
    assert len(r.log.evictions) == want
    if evicted:
        # Upstream's reactor fails any eviction of a pod not listed.
        assert names <= set(evicted)


N1, N2 = build_node("n1", 1000, 3000, 10), build_node("n2", 1000, 3000, 10)
N3 = build_node("n3", 1000, 3000, 10)
N3_TAINTED = key_value_tainted("n3")


TAINTS = [
    pytest.param(
        [N1, N2, N3],
        [*[rs(f"pod_{i}_n1", 200, "n1") for i in (1, 2, 3)], rs("pod_4_n2", 200, "n2")],
        1,
        id="No taints",
    ),
    pytest.param(
        [N1, N3_TAINTED],
        [rs("pod_1_n1", 200, "n1"), rs("pod_2_n3", 200, "n3")],
        0,
        id="No pod tolerates node taint",
    ),
    pytest.param(
        [N1, N3_TAINTED],
        [
            rs("pod_1_n1", 100, "n1"),
            build_pod("tolerate_pod", 200, 0, "n1", tolerates_key_value),
            rs("pod_9_n3", 500, "n3"),
        ],
        1,
        id="Pod which tolerates node taint",
    ),
]


@pytest.mark.parametrize(("nodes", "pods", "want"), TAINTS)
def test_upstream_taints_case(nodes, pods, want):
    r = evicted_count(
        "balance",
        "HighNodeUtilization",
        {"thresholds": {"cpu": 40}},
        nodes + pods,
        evictor={},
        top={"maxNoOfPodsToEvictPerNode": want},
    )
    assert len(r.log.evictions) == want
