"""Node-affinity scheduler_perf workloads (test/integration/scheduler_perf/affinity), from upstream's templates."""

from __future__ import annotations

from collections.abc import Callable

from harmonic.perf.runner import Workload
from harmonic.perf.templates import node_template, pod_template
from harmonic.perf.workloads.basic import Obj, nodes_from, pods_from

ZONE_LABEL = "topology.kubernetes.io/zone"


def labelled_node(key: str, value: str) -> Obj:
    """The default node template with one label, as a ``labelNodePrepareStrategy`` with one value."""
    t = node_template()
    t.setdefault("metadata", {}).setdefault("labels", {})[key] = value
    return t


def scheduling_node_affinity(nodes: int = 5000, init_pods: int = 5000, pods: int = 10000) -> Workload:
    """SchedulingNodeAffinity: every node in zone1; every pod requires zone In [zone1, zone2]."""
    template = pod_template("pod-with-node-affinity.yaml")
    return Workload(
        name="SchedulingNodeAffinity",
        nodes=nodes_from(nodes, labelled_node(ZONE_LABEL, "zone1")),
        init_pods=pods_from(init_pods, "init-pod", template, namespace="namespace-0"),
        measured_pods=pods_from(pods, "pod", template, namespace="namespace-1"),
        num_measured=pods,
        params={"nodes": nodes, "init_pods": init_pods, "pods": pods},
    )


WORKLOADS: dict[str, tuple[Callable[[int, int, int], Workload], tuple[int, int, int]]] = {
    "SchedulingNodeAffinity": (scheduling_node_affinity, (5000, 5000, 10000)),
}
