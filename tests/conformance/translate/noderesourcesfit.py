"""TestEnoughRequests, TestNotEnoughRequests, TestStorageRequests, TestRestartableInitContainers and
TestFitScore of pkg/scheduler/framework/plugins/noderesources/fit_test.go."""

from __future__ import annotations

from typing import Any

from k8s import SUCCESS, Obj, container, node, pod, status, unresolvable, unschedulable, write

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"
EXT_DRA = "extended.resource.dra.io/something"
DEFAULT_STRATEGY = {
    "type": "LeastAllocated",
    "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
}


def insufficient(name: str) -> str:
    return f"Insufficient {name}"


def res(milli_cpu: int = 0, memory: int = 0, storage: int = 0, **scalars: int) -> dict[str, Any]:
    """newResourcePod's per-container requests (cpu, memory, pods and ephemeral storage always set)."""
    r: dict[str, Any] = {"cpu": f"{milli_cpu}m", "memory": memory, "pods": 0, "ephemeral-storage": storage}
    r.update({_scalar(k): v for k, v in scalars.items()})
    return r


def _scalar(key: str) -> str:
    return {
        "ext_a": EXT_A,
        "ext_b": EXT_B,
        "k8s_a": K8S_A,
        "k8s_b": K8S_B,
        "huge_a": HUGE_A,
        "ext_dra": EXT_DRA,
    }[key]


def resource_pod(
    name: str,
    *usage: dict[str, Any],
    init: list[dict[str, Any]] | None = None,
    node_name: str = "",
    **spec: Any,
) -> Obj:
    containers = [container(f"c{i}", requests=u) for i, u in enumerate(usage)] or None
    inits = [container(f"i{i}", requests=u) for i, u in enumerate(init)] if init else None
    return pod(name, containers=containers, init_containers=inits, node_name=node_name, **spec)


def make_resources(
    milli_cpu: int, memory: int, pods: int, ext_a: int, storage: int, huge_a: int
) -> dict[str, Any]:
    return {
        "cpu": f"{milli_cpu}m",
        "memory": memory,
        "pods": pods,
        EXT_A: ext_a,
        "ephemeral-storage": storage,
        HUGE_A: huge_a,
    }


NODE = make_resources(10, 20, 32, 5, 20, 5)


def fcase(
    name: str,
    p: Obj,
    existing: list[dict[str, Any]] | None,
    want: Obj = SUCCESS,
    args: Obj | None = None,
    allocatable: dict[str, Any] = NODE,
) -> Obj:
    """One node ("test-node") holding one existing pod with ``existing`` container requests (None: no pod)."""
    pods = [] if existing is None else [resource_pod("existing", *existing, node_name="test-node")]
    return {
        "name": name,
        "kind": "filter",
        "args": {"scoringStrategy": DEFAULT_STRATEGY, **(args or {})},
        "pod": p,
        "nodes": [node("test-node", allocatable=allocatable)],
        "existingPods": pods,
        "expected": {"test-node": want},
        "expectedPreFilter": {**status("Success"), "nodeNames": None},
    }


P = resource_pod
enough = [
    fcase("no resources requested always fits", pod("p"), [res(10, 20)]),
    fcase(
        "too many resources fails",
        P("p", res(1, 1)),
        [res(10, 20)],
        unschedulable(insufficient("cpu"), insufficient("memory")),
    ),
    fcase(
        "too many resources fails due to init container cpu",
        P("p", res(1, 1), init=[res(3, 1)]),
        [res(8, 19)],
        unschedulable(insufficient("cpu")),
    ),
    fcase(
        "too many resources fails due to highest init container cpu",
        P("p", res(1, 1), init=[res(3, 1), res(2, 1)]),
        [res(8, 19)],
        unschedulable(insufficient("cpu")),
    ),
    fcase(
        "too many resources fails due to init container memory",
        P("p", res(1, 1), init=[res(1, 3)]),
        [res(9, 19)],
        unschedulable(insufficient("memory")),
    ),
    fcase(
        "too many resources fails due to highest init container memory",
        P("p", res(1, 1), init=[res(1, 3), res(1, 2)]),
        [res(9, 19)],
        unschedulable(insufficient("memory")),
    ),
    fcase(
        "init container fits because it's the max, not sum, of containers and init containers",
        P("p", res(1, 1), init=[res(1, 1)]),
        [res(9, 19)],
    ),
    fcase(
        "multiple init containers fit because it's the max, not sum, of containers and init containers",
        P("p", res(1, 1), init=[res(1, 1), res(1, 1)]),
        [res(9, 19)],
    ),
    fcase("both resources fit", P("p", res(1, 1)), [res(5, 5)]),
    fcase("one resource memory fits", P("p", res(2, 1)), [res(9, 5)], unschedulable(insufficient("cpu"))),
    fcase("one resource cpu fits", P("p", res(1, 2)), [res(5, 19)], unschedulable(insufficient("memory"))),
    fcase("equal edge case", P("p", res(5, 1)), [res(5, 19)]),
    fcase("equal edge case for init container", P("p", res(4, 1), init=[res(5, 1)]), [res(5, 19)]),
    fcase("extended resource fits", P("p", res(ext_a=1)), [res()]),
    fcase("extended resource fits for init container", P("p", res(), init=[res(ext_a=1)]), [res()]),
    fcase(
        "extended resource capacity enforced",
        P("p", res(1, 1, ext_a=10)),
        [res(ext_a=0)],
        unresolvable(insufficient(EXT_A)),
    ),
    fcase(
        "extended resource capacity enforced for init container",
        P("p", res(), init=[res(1, 1, ext_a=10)]),
        [res(ext_a=0)],
        unresolvable(insufficient(EXT_A)),
    ),
    fcase(
        "extended resource allocatable enforced",
        P("p", res(1, 1, ext_a=1)),
        [res(ext_a=5)],
        unschedulable(insufficient(EXT_A)),
    ),
    fcase(
        "extended resource allocatable enforced for init container",
        P("p", res(), init=[res(1, 1, ext_a=1)]),
        [res(ext_a=5)],
        unschedulable(insufficient(EXT_A)),
    ),
    fcase(
        "extended resource allocatable enforced for multiple containers",
        P("p", res(1, 1, ext_a=3), res(1, 1, ext_a=3)),
        [res(ext_a=2)],
        unresolvable(insufficient(EXT_A)),
    ),
    fcase(
        "extended resource allocatable admits multiple init containers",
        P("p", res(), init=[res(1, 1, ext_a=3), res(1, 1, ext_a=3)]),
        [res(ext_a=2)],
    ),
    fcase(
        "extended resource allocatable enforced for multiple init containers",
        P("p", res(), init=[res(1, 1, ext_a=6), res(1, 1, ext_a=3)]),
        [res(ext_a=2)],
        unresolvable(insufficient(EXT_A)),
    ),
    fcase(
        "extended resource allocatable enforced for unknown resource",
        P("p", res(1, 1, ext_b=1)),
        [res()],
        unresolvable(insufficient(EXT_B)),
    ),
    fcase(
        "extended resource allocatable enforced for unknown resource for init container",
        P("p", res(), init=[res(1, 1, ext_b=1)]),
        [res()],
        unresolvable(insufficient(EXT_B)),
    ),
    fcase(
        "kubernetes.io resource capacity enforced",
        P("p", res(1, 1, k8s_a=10)),
        [res()],
        unresolvable(insufficient(K8S_A)),
    ),
    fcase(
        "kubernetes.io resource capacity enforced for init container",
        P("p", res(), init=[res(1, 1, k8s_b=10)]),
        [res()],
        unresolvable(insufficient(K8S_B)),
    ),
    fcase(
        "hugepages resource capacity enforced",
        P("p", res(1, 1, huge_a=10)),
        [res(huge_a=0)],
        unresolvable(insufficient(HUGE_A)),
    ),
    fcase(
        "hugepages resource capacity enforced for init container",
        P("p", res(), init=[res(1, 1, huge_a=10)]),
        [res(huge_a=0)],
        unresolvable(insufficient(HUGE_A)),
    ),
    fcase(
        "hugepages resource allocatable enforced for multiple containers",
        P("p", res(1, 1, huge_a=3), res(1, 1, huge_a=3)),
        [res(huge_a=2)],
        unresolvable(insufficient(HUGE_A)),
    ),
    fcase(
        "skip checking ignored extended resource",
        P("p", res(1, 1, ext_b=1)),
        [res()],
        args={"ignoredResources": [EXT_B]},
    ),
    fcase(
        "resources + pod overhead fits",
        P("p", res(1, 1), overhead={"cpu": "3m", "memory": "13"}),
        [res(5, 5)],
    ),
    fcase(
        "requests + overhead does not fit for memory",
        P("p", res(1, 1), overhead={"cpu": "1m", "memory": "15"}),
        [res(5, 5)],
        unschedulable(insufficient("memory")),
    ),
    fcase(
        "skip checking ignored extended resource via resource groups",
        P("p", res(1, 1, ext_b=1, k8s_a=1)),
        [res()],
        unresolvable(insufficient(K8S_A)),
        args={"ignoredResourceGroups": ["example.com"]},
    ),
    fcase(
        "skip checking extended resource request with quantity zero via resource groups",
        P("p", res(1, 1, ext_a=0)),
        [res(ext_a=6)],
    ),
    fcase("skip checking resource request with quantity zero", P("p", res(ext_a=1)), [res(20, 30, ext_a=1)]),
    fcase(
        "both pod-level and container-level resources fit",
        P("p", res(1, 1), resources={"requests": {"cpu": "1m", "memory": "2"}}),
        [res(5, 5)],
    ),
    fcase(
        "pod-level cpu resource not fit",
        P("p", res(1, 1), resources={"requests": {"cpu": "7m", "memory": "2"}}),
        [res(5, 5)],
        unschedulable(insufficient("cpu")),
    ),
    fcase(
        "pod-level memory resource not fit",
        P("p", res(1, 1), resources={"requests": {"cpu": "3m", "memory": "2"}}),
        [res(5, 19)],
        unschedulable(insufficient("memory")),
    ),
    fcase(
        "pod-level hugepages resource fit",
        pod("p", resources={"requests": {"cpu": "3m", "memory": "2", HUGE_A: "5"}}),
        None,
    ),
    fcase(
        "both pod-level and container-level hugepages resource fit",
        P("p", res(1, 1, huge_a=3), resources={"requests": {"cpu": "3m", "memory": "2", HUGE_A: "5"}}),
        None,
    ),
    fcase(
        "pod-level hugepages resource not fit",
        pod("p", resources={"requests": {"cpu": "3m", "memory": "2", HUGE_A: "10"}}),
        None,
        unresolvable(insufficient(HUGE_A)),
    ),
    fcase(
        "one pod-level cpu resource fits and all init and non-init containers resources fit",
        P("p", res(1, 1), init=[res(1, 1)], resources={"requests": {"cpu": "3m", "memory": "2"}}),
        [res(5, 19)],
        unschedulable(insufficient("memory")),
    ),
    fcase("extended resource backed by device plugin", P("p", res(ext_a=1)), [res()]),
    fcase(
        "extended resource backed by DRA not enabled",
        P("p", res(1, 1, ext_dra=1)),
        [res()],
        unresolvable(insufficient(EXT_DRA)),
    ),
    fcase(
        "extended resource NOT backed by DRA",
        P("p", res(1, 1, ext_b=1)),
        [res()],
        unresolvable(insufficient(EXT_B)),
    ),
    fcase(
        "extended resource was backed by Device Plugin (Allocatable: 0), global cache",
        P("p", res(ext_a=1)),
        [res(ext_a=0)],
    ),
]

ONE_POD = make_resources(10, 20, 1, 0, 0, 0)
not_enough = [
    fcase(
        "even without specified resources, predicate fails when there's no space for additional pod",
        pod("p"),
        [res(10, 20)],
        unschedulable("Too many pods"),
        allocatable=ONE_POD,
    ),
    fcase(
        "even if both resources fit, predicate fails when there's no space for additional pod",
        P("p", res(1, 1)),
        [res(5, 5)],
        unschedulable("Too many pods"),
        allocatable=ONE_POD,
    ),
    fcase(
        "even for equal edge case, predicate fails when there's no space for additional pod",
        P("p", res(5, 1)),
        [res(5, 19)],
        unschedulable("Too many pods"),
        allocatable=ONE_POD,
    ),
    fcase(
        "even for equal edge case, predicate fails when there's no space for additional pod due to init container",
        P("p", res(5, 1), init=[res(5, 1)]),
        [res(5, 19)],
        unschedulable("Too many pods"),
        allocatable=ONE_POD,
    ),
]

storage = [
    fcase("empty storage requested, and pod fits", P("p", res(1, 1)), [res(2, 10)]),
    fcase(
        "storage ephemeral local storage request exceeds allocatable",
        P("p", res(storage=25)),
        [res(2, 2)],
        unresolvable(insufficient("ephemeral-storage")),
    ),
    fcase("ephemeral local storage is sufficient", P("p", res(storage=5)), [res(2, 2, storage=10)]),
    fcase("pod fits", P("p", res(storage=10)), [res(2, 2)]),
]


def sidecar_pod(request: dict[str, str] | None, sidecar: dict[str, str] | None) -> Obj:
    side = container("restartable-init", requests=sidecar) | {"restartPolicy": "Always"}
    return pod("p", containers=[container("regular", requests=request)], init_containers=[side])


SIDECAR_NODE = make_resources(2, 0, 1, 0, 0, 0)
sidecars = [
    fcase(
        "allow pod without restartable init containers if sidecar containers is enabled",
        pod("p", containers=[container("regular")]),
        None,
        allocatable=SIDECAR_NODE,
    ),
    fcase(
        "allow pod with restartable init containers if sidecar containers is enabled",
        sidecar_pod(None, None),
        None,
        allocatable=SIDECAR_NODE,
    ),
    fcase(
        "allow pod if the total requested resources do not exceed the node's allocatable resources",
        sidecar_pod({"cpu": "1m"}, {"cpu": "1m"}),
        None,
        allocatable=SIDECAR_NODE,
    ),
    fcase(
        "not allow pod if the total requested resources do exceed the node's allocatable resources",
        sidecar_pod({"cpu": "1m"}, {"cpu": "2m"}),
        None,
        unresolvable(insufficient("cpu")),
        allocatable=SIDECAR_NODE,
    ),
]

DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]


def st_node(name: str, cpu: str, memory: str) -> Obj:
    return node(name, allocatable={"cpu": cpu, "memory": memory})


def req_pod(
    name: str, requests: dict[str, str], node_name: str = "", sidecar: dict[str, str] | None = None
) -> Obj:
    inits = [container("sidecar", requests=sidecar) | {"restartPolicy": "Always"}] if sidecar else None
    return pod(name, containers=[container(requests=requests)], init_containers=inits, node_name=node_name)


def score_case(
    name: str,
    requested: dict[str, str],
    nodes: list[Obj],
    existing: list[Obj],
    want: list[int],
    strategy: Obj,
    pre_score: bool = True,
) -> Obj:
    c: Obj = {
        "name": name,
        "kind": "score",
        "args": {"scoringStrategy": strategy},
        "pod": req_pod("incoming", requested),
        "nodes": nodes,
        "existingPods": existing,
        "expected": {n["metadata"]["name"]: s for n, s in zip(nodes, want, strict=True)},
    }
    if pre_score:
        c["expectedPreScore"] = status("Success")
    return c


two_nodes = [st_node("node1", "4000", "10000"), st_node("node2", "6000", "10000")]
two_existing = [
    req_pod("e1", {"cpu": "2000", "memory": "4000"}, "node1"),
    req_pod("e2", {"cpu": "1000", "memory": "2000"}, "node2"),
]
rtcr_down = {
    "type": "RequestedToCapacityRatio",
    "resources": DEFAULT_RESOURCES,
    "requestedToCapacityRatio": {
        "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
    },
}
rtcr_up = {
    "type": "RequestedToCapacityRatio",
    "resources": DEFAULT_RESOURCES,
    "requestedToCapacityRatio": {
        "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    },
}
most = {"type": "MostAllocated", "resources": DEFAULT_RESOURCES}
least = {"type": "LeastAllocated", "resources": DEFAULT_RESOURCES}
big = {"cpu": "3000", "memory": "5000"}
small = {"cpu": "1000", "memory": "2000"}
same_nodes = [st_node("node1", "4000", "10000"), st_node("node2", "4000", "10000")]
sidecar_existing = [
    req_pod("e1", small, "node1", sidecar=small),
    req_pod("e2", small, "node2"),
]
scores = [
    score_case(
        "test case for ScoringStrategy RequestedToCapacityRatio case1",
        big,
        two_nodes,
        two_existing,
        [10, 32],
        rtcr_down,
    ),
    score_case(
        "test case for ScoringStrategy RequestedToCapacityRatio case2",
        big,
        two_nodes,
        two_existing,
        [95, 68],
        rtcr_up,
    ),
    score_case("test case for ScoringStrategy MostAllocated", small, two_nodes, two_existing, [67, 36], most),
    score_case(
        "test case for ScoringStrategy LeastAllocated", small, two_nodes, two_existing, [32, 63], least
    ),
    score_case(
        "test case for ScoringStrategy RequestedToCapacityRatio case1 if PreScore is not called",
        big,
        two_nodes,
        two_existing,
        [10, 32],
        rtcr_down,
        pre_score=False,
    ),
    score_case(
        "test case for ScoringStrategy MostAllocated if PreScore is not called",
        small,
        two_nodes,
        two_existing,
        [67, 36],
        most,
        pre_score=False,
    ),
    score_case(
        "test case for ScoringStrategy LeastAllocated if PreScore is not called",
        small,
        two_nodes,
        two_existing,
        [32, 63],
        least,
        pre_score=False,
    ),
    score_case(
        "test case for ScoringStrategy MostAllocated with sidecar container",
        small,
        same_nodes,
        sidecar_existing,
        [67, 45],
        most,
    ),
    score_case(
        "test case for ScoringStrategy LeastAllocated with sidecar container",
        small,
        same_nodes,
        sidecar_existing,
        [32, 55],
        least,
    ),
]

DRA = "extended resources backed by DRA device classes (DRAExtendedResource, alpha) are not modelled"
skipped = [
    {"name": "extended resource backed by DRA", "why": DRA},
    {"name": "extended resource backed by DRA, nil draManager", "why": DRA},
    {"name": "extended resource was backed by Device Plugin (Allocatable: 0)", "why": DRA},
    {"name": "test case for ScoringStrategy LeastAllocated with Extended resources", "why": DRA},
    {
        "name": "test case for ScoringStrategy LeastAllocated with Extended resources if PreScore is not called",
        "why": DRA,
    },
    {
        "name": "not allow pod with restartable init containers if sidecar containers is disabled",
        "why": "SidecarContainers is GA and always on",
    },
    {
        "name": "allow pod without restartable init containers if sidecar containers is disabled",
        "why": "SidecarContainers is GA and always on",
    },
    {
        "name": "TestPreFilterDisabled",
        "why": "upstream's Filter fails with an Error when PreFilter did not run; the framework always runs it",
    },
    {
        "name": "wantInsufficientResources of TestEnoughRequests",
        "why": "the Go helper fitsRequest's return value is not a plugin verdict; the Filter status of every case is "
        "translated",
    },
    {
        "name": "TestEventsToRegister, Test_isSchedulableAfter*",
        "why": "queueing hints are not plugin verdicts; tests/plugins/test_noderesourcesfit.py covers them",
    },
]

write(
    "NodeResourcesFit",
    "pkg/scheduler/framework/plugins/noderesources/fit_test.go",
    enough + not_enough + storage + sidecars + scores,
    skipped,
)
