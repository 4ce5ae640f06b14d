"""Inter-pod affinity scheduler_perf workloads (test/integration/scheduler_perf/affinity/performance-config.yaml).

Each creates the nodes, then ``init_pods`` pods of its template in namespace ``sched-0`` and the measured
pods of the same template in ``sched-1`` (upstream's ``createNamespaces`` with prefix ``sched``). Nodes
carry ``kubernetes.io/hostname`` (upstream's node preparer sets it to the node name); the templates'
terms name both namespaces, so init and measured pods see each other:

- SchedulingPodAntiAffinity: required anti-affinity among ``color: green`` pods per hostname (default
  nodes, 5,000 nodes / 1,000 init / 2,000 measured at upstream's performance size);
- SchedulingPodAffinity: required affinity among ``color: blue`` pods per zone, every node in ``zone1``
  (5,000 / 5,000 / 5,000);
- SchedulingPreferredPodAffinity / SchedulingPreferredPodAntiAffinity: preferred (anti-)affinity, weight 1,
  among ``color: red`` / ``color: yellow`` pods per hostname (5,000 / 5,000 / 5,000).
"""

from __future__ import annotations

from collections.abc import Callable

from harmonic.perf.runner import Workload
from harmonic.perf.templates import pod_template
from harmonic.perf.workloads.basic import nodes_from, pods_from
from harmonic.perf.workloads.node_affinity import labelled_node

ZONE_LABEL = "topology.kubernetes.io/zone"


def _workload(
    name: str, template: str, nodes: int, init_pods: int, pods: int, zone: bool = False
) -> Workload:
    t = pod_template(template)
    return Workload(
        name=name,
        nodes=nodes_from(nodes, labelled_node(ZONE_LABEL, "zone1") if zone else None),
        init_pods=pods_from(init_pods, "init-pod", t, namespace="sched-0"),
        measured_pods=pods_from(pods, "pod", t, namespace="sched-1"),
        num_measured=pods,
        params={"nodes": nodes, "init_pods": init_pods, "pods": pods},
    )


def scheduling_pod_anti_affinity(nodes: int = 5000, init_pods: int = 1000, pods: int = 2000) -> Workload:
    return _workload("SchedulingPodAntiAffinity", "pod-with-pod-anti-affinity.yaml", nodes, init_pods, pods)


def scheduling_pod_affinity(nodes: int = 5000, init_pods: int = 5000, pods: int = 5000) -> Workload:
    return _workload("SchedulingPodAffinity", "pod-with-pod-affinity.yaml", nodes, init_pods, pods, zone=True)


def scheduling_preferred_pod_affinity(nodes: int = 5000, init_pods: int = 5000, pods: int = 5000) -> Workload:
    return _workload(
        "SchedulingPreferredPodAffinity", "pod-with-preferred-pod-affinity.yaml", nodes, init_pods, pods
    )


def scheduling_preferred_pod_anti_affinity(
    nodes: int = 5000, init_pods: int = 5000, pods: int = 5000
) -> Workload:
    return _workload(
        "SchedulingPreferredPodAntiAffinity",
        "pod-with-preferred-pod-anti-affinity.yaml",
        nodes,
        init_pods,
        pods,
    )


WORKLOADS: dict[str, tuple[Callable[[int, int, int], Workload], tuple[int, int, int]]] = {
    "SchedulingPodAntiAffinity": (scheduling_pod_anti_affinity, (5000, 1000, 2000)),
    "SchedulingPodAffinity": (scheduling_pod_affinity, (5000, 5000, 5000)),
    "SchedulingPreferredPodAffinity": (scheduling_preferred_pod_affinity, (5000, 5000, 5000)),
    "SchedulingPreferredPodAntiAffinity": (scheduling_preferred_pod_anti_affinity, (5000, 5000, 5000)),
}
