"""TestRequestedToCapacityRatioScoringStrategy, TestResourceBinPackingSingleExtended and
TestResourceBinPackingMultipleExtended of
pkg/scheduler/framework/plugins/noderesources/requested_to_capacity_ratio_test.go.

Upstream's unscheduled existing pods (no node name) belong to no node of the snapshot and are left out.
"""

from __future__ import annotations

from allocated import DEFAULT, no_containers, reqs, st_node
from k8s import Obj, res_node, status, write

MI = 1024 * 1024


def rtcr(resources: list[Obj], shape: list[tuple[int, int]]) -> Obj:
    return {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": resources,
            "requestedToCapacityRatio": {"shape": [{"utilization": u, "score": s} for u, s in shape]},
        }
    }


def case(name: str, args: Obj, p: Obj, nodes: list[Obj], existing: list[Obj], want: list[int]) -> Obj:
    return {
        "name": name,
        "kind": "score",
        "args": args,
        "pod": p,
        "nodes": nodes,
        "existingPods": existing,
        "expected": {n["metadata"]["name"]: s for n, s in zip(nodes, want, strict=True)},
        "expectedPreScore": status("Success"),
    }


least_shape = rtcr(DEFAULT, [(0, 10), (100, 0)])
n4_4 = [st_node("node1", cpu="4000", memory="10000"), st_node("node2", cpu="4000", memory="10000")]
n4_6 = [st_node("node1", cpu="4000", memory="10000"), st_node("node2", cpu="6000", memory="10000")]
two_req = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})
empty_on_node1 = [no_containers("e1", "node1"), no_containers("e2", "node1")]
cases = [
    case(
        "nothing scheduled, nothing requested (default - least requested nodes have priority)",
        least_shape,
        no_containers("p"),
        n4_4,
        empty_on_node1,
        [100, 100],
    ),
    case(
        "nothing scheduled, resources requested, differently sized nodes (default - least requested nodes have "
        "priority)",
        least_shape,
        reqs("p", *two_req),
        n4_6,
        empty_on_node1,
        [38, 50],
    ),
    case(
        "no resources requested, pods scheduled with resources (default - least requested nodes have priority)",
        least_shape,
        no_containers("p"),
        n4_6,
        [
            reqs("e1", {"cpu": "3000", "memory": "5000"}, node_name="node1"),
            reqs("e2", {"cpu": "3000", "memory": "5000"}, node_name="node2"),
        ],
        [38, 50],
    ),
]

FOO, BAR = "intel.com/foo", "intel.com/bar"
single = rtcr([{"name": FOO, "weight": 1}], [(0, 0), (100, 1)])
single_nodes = [res_node("node1", 4000, 10000 * MI, {FOO: 8}), res_node("node2", 4000, 10000 * MI, {FOO: 4})]
cases += [
    case(
        "single extended: nothing scheduled, nothing requested",
        single,
        no_containers("p"),
        single_nodes,
        [],
        [0, 0],
    ),
    case(
        "single extended: resources requested, pods scheduled with less resources",
        single,
        reqs("p", {FOO: "2"}),
        single_nodes,
        [],
        [2, 5],
    ),
    case(
        "single extended: resources requested, pods scheduled with resources, on node with existing pod running ",
        single,
        reqs("p", {FOO: "2"}),
        single_nodes,
        [reqs("e", {FOO: "2"}, node_name="node2")],
        [2, 10],
    ),
    case(
        "single extended: resources requested, pods scheduled with more resources",
        single,
        reqs("p", {FOO: "4"}),
        single_nodes,
        [],
        [5, 10],
    ),
]

multi = rtcr([{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}], [(0, 0), (100, 1)])
multi_nodes = [
    res_node("node1", 4000, 10000 * MI, {FOO: 8, BAR: 4}),
    res_node("node2", 4000, 10000 * MI, {FOO: 4, BAR: 8}),
]
cases += [
    case(
        "multiple extended: nothing scheduled, nothing requested",
        multi,
        no_containers("p"),
        multi_nodes,
        [],
        [0, 0],
    ),
    case(
        "multiple extended: resources requested, pods scheduled with less resources",
        multi,
        reqs("p", {FOO: "2", BAR: "2"}),
        multi_nodes,
        [],
        [4, 3],
    ),
    case(
        "multiple extended: resources requested, pods scheduled with resources, on node with existing pod running ",
        multi,
        reqs("p", {FOO: "2", BAR: "2"}),
        multi_nodes,
        [reqs("e", {FOO: "4", BAR: "2"}, node_name="node2")],
        [4, 7],
    ),
    case(
        "multiple extended: resources requested, pods scheduled with more resources",
        multi,
        reqs("p", {FOO: "4", BAR: "2"}),
        multi_nodes,
        [],
        [5, 5],
    ),
]

skipped = [
    {
        "name": "TestBrokenLinearFunction",
        "why": "tests the helper function itself; its table is in tests/plugins/test_noderesourcesfit.py",
    },
]
write(
    "NodeResourcesFit.requested_to_capacity_ratio",
    "pkg/scheduler/framework/plugins/noderesources/requested_to_capacity_ratio_test.go",
    cases,
    skipped,
)
