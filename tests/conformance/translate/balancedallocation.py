"""TestNodeResourcesBalancedAllocation of
pkg/scheduler/framework/plugins/noderesources/balanced_allocation_test.go."""

from __future__ import annotations

from k8s import Obj, container, pod, res_node, status, write

DEFAULT = {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}
WITH_GPU = {
    "resources": [
        {"name": "cpu", "weight": 1},
        {"name": "memory", "weight": 1},
        {"name": "nvidia.com/gpu", "weight": 1},
    ]
}


def spec(name: str, node_name: str, *reqs: dict[str, str]) -> Obj:
    return pod(
        name, containers=[container(f"c{i}", requests=r) for i, r in enumerate(reqs)], node_name=node_name
    )


def cpu_only(name: str, node_name: str = "node1") -> Obj:
    return spec(name, node_name, {"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"})


def cpu_and_memory(name: str, node_name: str = "node2") -> Obj:
    return spec(name, node_name, {"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"})


def cpu_and_memory_and_gpu(name: str) -> Obj:
    return spec(
        name,
        "node1",
        {"cpu": "1000m", "memory": "2000"},
        {"cpu": "2000m", "memory": "3000", "nvidia.com/gpu": "3"},
    )


GPU8 = {"nvidia.com/gpu": 8}


def case(
    name: str,
    p: Obj,
    nodes: list[Obj],
    existing: list[Obj],
    want: list[int],
    args: Obj = DEFAULT,
    pre_score: bool = True,
) -> Obj:
    c: Obj = {
        "name": name,
        "kind": "score",
        "args": args,
        "pod": p,
        "nodes": nodes,
        "existingPods": existing,
        "expected": {n["metadata"]["name"]: s for n, s in zip(nodes, want, strict=True)},
    }
    if pre_score:
        c["expectedPreScore"] = status("Success")
    return c


incoming = cpu_and_memory("incoming", "")
cases = [
    {
        "name": "nothing scheduled, nothing requested, skip in PreScore",
        "kind": "score",
        "args": DEFAULT,
        "pod": pod("incoming"),
        "nodes": [res_node("node1", 4000, 10000), res_node("node2", 4000, 10000)],
        "existingPods": [],
        "scoredNodes": [],
        "expected": {},
        "expectedPreScore": status("Skip"),
    },
    case(
        "nothing scheduled, resources requested, differently sized nodes",
        incoming,
        [res_node("node1", 4000, 10000), res_node("node2", 6000, 10000)],
        [],
        [87, 100],
    ),
    case(
        "resources requested, pods scheduled with resources",
        incoming,
        [res_node("node1", 10000, 20000), res_node("node2", 10000, 20000)],
        [cpu_only("p1"), cpu_and_memory("p2")],
        [82, 95],
    ),
    case(
        "resources requested, pods scheduled with resources, differently sized nodes",
        incoming,
        [res_node("node1", 10000, 20000), res_node("node2", 10000, 50000)],
        [cpu_only("p1"), cpu_and_memory("p2")],
        [82, 80],
    ),
    case(
        "requested resources at node capacity",
        cpu_only("incoming", ""),
        [res_node("node1", 6000, 10000), res_node("node2", 6000, 10000)],
        [cpu_only("p1"), cpu_and_memory("p2")],
        [50, 75],
    ),
    case(
        "include scalar resource on a node for balanced resource allocation",
        pod("incoming", containers=[container(requests={"memory": "0", "nvidia.com/gpu": "1"})]),
        [res_node("node1", 3500, 40000, GPU8), res_node("node2", 3500, 40000, GPU8)],
        [cpu_and_memory("p1"), cpu_and_memory_and_gpu("p2")],
        [70, 65],
        args=WITH_GPU,
    ),
    case(
        "node without the scalar resource should skip the scalar resource",
        incoming,
        [res_node("node1", 3500, 40000, GPU8), res_node("node2", 3500, 40000)],
        [],
        [63, 63],
        args=WITH_GPU,
    ),
    case(
        "resources requested, pods scheduled with resources if PreScore not called",
        incoming,
        [res_node("node1", 10000, 20000), res_node("node2", 10000, 20000)],
        [cpu_only("p1"), cpu_and_memory("p2")],
        [82, 95],
        pre_score=False,
    ),
]

skipped = [
    {
        "name": "include DRA resource on a node for balanced resource allocation",
        "why": "extended resources backed by DRA device classes (DRAExtendedResource, alpha) are not modelled",
    },
    {
        "name": "include DRA resource on a node for balanced resource allocation if PreScore not called",
        "why": "extended resources backed by DRA device classes (DRAExtendedResource, alpha) are not modelled",
    },
    {
        "name": "TestBalancedAllocationSignPod",
        "why": "pod signatures (SignPlugin) are not part of Harmonic's framework",
    },
]

write(
    "NodeResourcesBalancedAllocation",
    "pkg/scheduler/framework/plugins/noderesources/balanced_allocation_test.go",
    cases,
    skipped,
)
