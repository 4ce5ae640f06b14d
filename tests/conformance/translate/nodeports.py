"""TestNodePorts of pkg/scheduler/framework/plugins/nodeports/node_ports_test.go, as conformance cases."""

from __future__ import annotations

from k8s import SUCCESS, Obj, container, node, pod, status, unschedulable, write

REASON = "node(s) didn't have free ports for the requested pod ports"


def new_pod(name: str, host: str, *infos: str) -> Obj:
    """newPod: "PROTO/IP/PORT" host ports on one container."""
    ports = []
    for info in infos:
        proto, ip, port = info.split("/")
        ports.append({"hostIP": ip, "hostPort": int(port), "protocol": proto, "containerPort": int(port)})
    return pod(name, containers=[container(ports=ports)], node_name=host)


def case(name: str, want_pods: tuple[str, ...], existing: tuple[str, ...], want: Obj = SUCCESS) -> Obj:
    return {
        "name": name,
        "kind": "filter",
        "args": {},
        "pod": new_pod("incoming", "", *want_pods),
        "nodes": [node("m1")],
        "existingPods": [new_pod("existing", "m1", *existing)],
        "expected": {"m1": want},
        "expectedPreFilter": {**status("Success"), "nodeNames": None},
    }


conflict = unschedulable(REASON)
cases = [
    {
        "name": "skip filter",
        "kind": "filter",
        "args": {},
        "pod": pod(),
        "nodes": [node("m1")],
        "existingPods": [],
        "expected": {"m1": SUCCESS},
        "expectedPreFilter": {**status("Skip"), "nodeNames": None},
    },
    case("other port", ("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/9090",)),
    case("same udp port", ("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/8080",), conflict),
    case("same tcp port", ("TCP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), conflict),
    case("different host ip", ("TCP/127.0.0.1/8080",), ("TCP/127.0.0.2/8080",)),
    case("different protocol", ("UDP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",)),
    case(
        "second udp port conflict",
        ("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        ("UDP/127.0.0.1/8080",),
        conflict,
    ),
    case(
        "first tcp port conflict",
        ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"),
        conflict,
    ),
    case(
        "first tcp port conflict due to 0.0.0.0 hostIP",
        ("TCP/0.0.0.0/8001",),
        ("TCP/127.0.0.1/8001",),
        conflict,
    ),
    case(
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        ("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        ("TCP/127.0.0.1/8001",),
        conflict,
    ),
    case(
        "second tcp port conflict to 0.0.0.0 hostIP", ("TCP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), conflict
    ),
    case("second different protocol", ("UDP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",)),
    case(
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        ("UDP/127.0.0.1/8001",),
        ("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"),
        conflict,
    ),
]

skipped = [
    {
        "name": "TestPreFilterDisabled",
        "why": "upstream's Filter fails with an Error when PreFilter did not run; Harmonic's Filter reads the host "
        "ports from the pod instead (tests/plugins/test_nodeports.py)",
    },
    {"name": "TestGetContainerPorts", "why": "tests a Go helper, not a plugin verdict"},
    {
        "name": "Test_isSchedulableAfterPodDeleted",
        "why": "queueing hints are not plugin verdicts; the table is in tests/plugins/test_nodeports.py",
    },
]

write("NodePorts", "pkg/scheduler/framework/plugins/nodeports/node_ports_test.go", cases, skipped)
