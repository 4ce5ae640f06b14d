"""TestNodeName (nodename/node_name_test.go) and TestNodeUnschedulable
(nodeunschedulable/node_unschedulable_test.go), as conformance cases."""

from __future__ import annotations

from k8s import SUCCESS, Obj, node, pod, unresolvable, write


def case(name: str, p: Obj, n: Obj, want: Obj = SUCCESS) -> Obj:
    return {
        "name": name,
        "kind": "filter",
        "args": {},
        "pod": p,
        "nodes": [n],
        "existingPods": [],
        "expected": {n["metadata"]["name"]: want},
    }


NO_MATCH = "node(s) didn't match the requested node name"
write(
    "NodeName",
    "pkg/scheduler/framework/plugins/nodename/node_name_test.go",
    [
        case("no host specified", pod(), node()),
        case("host matches", pod(node_name="foo"), node("foo")),
        case("host doesn't match", pod(node_name="bar"), node("foo"), unresolvable(NO_MATCH)),
    ],
    [],
)

UNSCHEDULABLE = "node(s) were unschedulable"
write(
    "NodeUnschedulable",
    "pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable_test.go",
    [
        case(
            "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
            pod(),
            node(unschedulable=True),
            unresolvable(UNSCHEDULABLE),
        ),
        case("Schedule pod to normal node", pod(), node()),
        case(
            "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
            pod(tolerations=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]),
            node(unschedulable=True),
        ),
    ],
    [
        {
            "name": "TestIsSchedulableAfterNodeChange",
            "why": "queueing hints are not plugin verdicts; the table is in tests/plugins/test_nodeunschedulable.py",
        }
    ],
)
