"""TestLeastAllocatedScoringStrategy (least_allocated_test.go) and TestMostAllocatedScoringStrategy
(most_allocated_test.go) of pkg/scheduler/framework/plugins/noderesources, as NodeResourcesFit score cases.

Upstream's ``st.MakePod()`` has no container; such pods become one container requesting cpu 0 and
memory 0, which has the same requests, non-zero requests included (defaults fill only missing ones).
"""

from __future__ import annotations

from k8s import Obj, container, node, pod, status, write

EXT = "abc.com/xyz"  # test_util.go's extendedRes
DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXT_SET = [*DEFAULT, {"name": EXT, "weight": 1}]


def no_containers(name: str, node_name: str = "") -> Obj:
    return pod(name, containers=[container(requests={"cpu": "0", "memory": "0"})], node_name=node_name)


def reqs(name: str, *requests: dict[str, str], node_name: str = "") -> Obj:
    return pod(
        name, containers=[container(f"c{i}", requests=r) for i, r in enumerate(requests)], node_name=node_name
    )


def st_node(name: str, **capacity: str) -> Obj:
    return node(name, allocatable={k.replace("_", "."): v for k, v in capacity.items()} or None)


def ext_node(name: str, cpu: str, memory: str, ext: str) -> Obj:
    return node(name, allocatable={"cpu": cpu, "memory": memory, EXT: ext})


def case(
    strategy: str,
    name: str,
    p: Obj,
    nodes: list[Obj],
    existing: list[Obj],
    want: list[int],
    resources: list[Obj] = DEFAULT,
) -> Obj:
    return {
        "name": name,
        "kind": "score",
        "args": {"scoringStrategy": {"type": strategy, "resources": resources}},
        "pod": p,
        "nodes": nodes,
        "existingPods": existing,
        "expected": {n["metadata"]["name"]: s for n, s in zip(nodes, want, strict=True)},
        "expectedPreScore": status("Success"),
    }


two_req = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})
n4_4 = [st_node("node1", cpu="4000", memory="10000"), st_node("node2", cpu="4000", memory="10000")]
n4_6 = [st_node("node1", cpu="4000", memory="10000"), st_node("node2", cpu="6000", memory="10000")]
n10 = [st_node("node1", cpu="10000", memory="20000"), st_node("node2", cpu="10000", memory="20000")]
n10_50 = [st_node("node1", cpu="10000", memory="20000"), st_node("node2", cpu="10000", memory="50000")]
four_existing = [
    reqs("e1", {"cpu": "3000", "memory": "0"}, node_name="node1"),
    reqs("e2", {"cpu": "3000", "memory": "0"}, node_name="node1"),
    reqs("e3", {"cpu": "3000", "memory": "0"}, node_name="node2"),
    reqs("e4", {"cpu": "3000", "memory": "5000"}, node_name="node2"),
]
two_existing = [
    reqs("e1", {"cpu": "3000", "memory": "0"}, node_name="node1"),
    reqs("e2", {"cpu": "3000", "memory": "5000"}, node_name="node2"),
]
ext_nodes_4 = [st_node("node1", cpu="6000", memory="10000"), ext_node("node2", "6000", "10000", "4")]
ext_nodes_4_10 = [ext_node("node1", "6000", "10000", "4"), ext_node("node2", "6000", "10000", "10")]
ext_first = [{"name": EXT, "weight": 2}, {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]

L = "LeastAllocated"
least = [
    case(L, "nothing scheduled, nothing requested", no_containers("p"), n4_4, [], [100, 100]),
    case(
        L,
        "nothing scheduled, resources requested, differently sized nodes",
        reqs("p", *two_req),
        n4_6,
        [],
        [37, 50],
    ),
    case(
        L,
        "no resources requested, pods scheduled",
        no_containers("p"),
        n4_4,
        [
            no_containers("e1", "node1"),
            no_containers("e2", "node1"),
            no_containers("e3", "node2"),
            no_containers("e4", "node2"),
        ],
        [100, 100],
    ),
    case(
        L,
        "no resources requested, pods scheduled with resources",
        no_containers("p"),
        n10,
        four_existing,
        [70, 57],
    ),
    case(
        L,
        "resources requested, pods scheduled with resources",
        reqs("p", *two_req),
        n10,
        two_existing,
        [57, 45],
    ),
    case(
        L,
        "resources requested, pods scheduled with resources, differently sized nodes",
        reqs("p", *two_req),
        n10_50,
        two_existing,
        [57, 60],
    ),
    case(
        L,
        "requested resources exceed node capacity",
        reqs("p", {"cpu": "3000", "memory": "0"}),
        n4_4,
        two_existing,
        [50, 25],
    ),
    case(
        L,
        "zero node resources, pods scheduled with resources",
        no_containers("p"),
        [st_node("node1"), st_node("node2")],
        two_existing,
        [0, 0],
    ),
    case(
        L,
        "nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes",
        reqs("p", *two_req),
        n4_6,
        [],
        [41, 50],
        resources=[{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
    ),
    case(
        L,
        "bypass extended resource if the pod does not request",
        reqs("p", *two_req),
        [st_node("node1", cpu="6000", memory="10000"), ext_node("node2", "6000", "10000", "4")],
        [],
        [50, 50],
        resources=EXT_SET,
    ),
    case(
        L,
        "honor extended resource if the pod requests",
        reqs("p", {"cpu": "3000", "memory": "5000", EXT: "2"}),
        ext_nodes_4_10,
        [],
        [50, 60],
        resources=EXT_SET,
    ),
    case(
        L,
        "if the node doesn't have a resource",
        reqs("p", {"cpu": "3000", "memory": "4000"}),
        ext_nodes_4,
        [],
        [55, 55],
        resources=ext_first,
    ),
]

M = "MostAllocated"
most = [
    case(M, "nothing scheduled, nothing requested", no_containers("p"), n4_4, [], [0, 0]),
    case(
        M,
        "nothing scheduled, resources requested, differently sized nodes",
        reqs("p", *two_req),
        n4_6,
        [],
        [62, 50],
    ),
    case(
        M,
        "no resources requested, pods scheduled with resources",
        no_containers("p"),
        n10,
        four_existing,
        [30, 42],
    ),
    case(
        M,
        "resources requested, pods scheduled with resources",
        reqs("p", *two_req),
        n10,
        two_existing,
        [42, 55],
    ),
    case(
        M,
        "resources requested equal node capacity",
        reqs("p", {"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        [st_node("node1", cpu="5000", memory="10000"), st_node("node2", cpu="10000", memory="9000")],
        [],
        [95, 75],
    ),
    case(
        M,
        "nothing scheduled, resources requested, differently sized nodes (memory weight 2)",
        reqs("p", *two_req),
        n4_6,
        [],
        [58, 50],
        resources=[{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
    ),
    case(
        M,
        "no resources requested, pods scheduled, nonzero request for resource",
        pod("p", containers=[container("container")]),
        [st_node("node1", cpu="250m", memory="1000Mi"), st_node("node2", cpu="250m", memory="1000Mi")],
        [
            pod("e1", containers=[container("container")], node_name="node1"),
            pod("e2", containers=[container("container")], node_name="node1"),
        ],
        [80, 30],
    ),
    case(
        M,
        "bypass extended resource if the pod does not request",
        reqs("p", *two_req),
        [st_node("node1", cpu="6000", memory="10000"), ext_node("node2", "6000", "10000", "4")],
        [],
        [50, 50],
        resources=EXT_SET,
    ),
    case(
        M,
        "honor extended resource if the pod request",
        reqs("p", {"cpu": "3000", "memory": "5000", EXT: "2"}),
        ext_nodes_4_10,
        [],
        [50, 40],
        resources=EXT_SET,
    ),
    case(
        M,
        "if the node doesn't have a resource",
        reqs("p", {"cpu": "3000", "memory": "4000"}),
        ext_nodes_4,
        [],
        [45, 45],
        resources=ext_first,
    ),
]

ARGS = "args validation: tests/plugins/test_noderesourcesfit.py checks the same fields are rejected"
common_skips = [
    {
        "name": "Resources not set, pods scheduled with error",
        "why": "v1 defaulting turns empty resources into cpu and memory, so the internal-config error cannot occur",
    },
    {"name": "resource with negative weight", "why": ARGS},
    {
        "name": "resource with zero weight",
        "why": "upstream builds internal config; through v1 (Harmonic's input) a zero weight is defaulted to 1",
    },
    {"name": "resource weight larger than MaxNodeScore", "why": ARGS},
]

write(
    "NodeResourcesFit.least_allocated",
    "pkg/scheduler/framework/plugins/noderesources/least_allocated_test.go",
    least,
    common_skips,
)
write(
    "NodeResourcesFit.most_allocated",
    "pkg/scheduler/framework/plugins/noderesources/most_allocated_test.go",
    most,
    common_skips,
)
