"""Topology spreading scheduler_perf workloads (test/integration/scheduler_perf/topology_spreading).

Nodes from the default node template labelled ``topology.kubernetes.io/zone`` round-robin over
moon-1..3 (upstream's labelNodePrepareStrategy), default pods first, then the measured pods:

- TopologySpreading: ``pod-with-topology-spreading.yaml`` (maxSkew 5 over zones, DoNotSchedule);
- PreferredTopologySpreading: ``pod-with-preferred-topology-spreading.yaml`` (the same, ScheduleAnyway);
- DefaultTopologySpreading: a Service selecting ``app: scheduler-perf`` and pods with that label and no
  constraints, so the system default constraints apply with the selector deduced from the Service.

Pods of a ``createPods`` step without a namespace go to ``namespace-<step index>``, as upstream does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from harmonic.perf.runner import Workload
from harmonic.perf.templates import named, node_template, pod_template, template
from harmonic.perf.workloads.basic import pods_from

Obj = dict[str, Any]
ZONE_LABEL = "topology.kubernetes.io/zone"
ZONES = ("moon-1", "moon-2", "moon-3")


def zoned_nodes(n: int, zones: tuple[str, ...] = ZONES) -> Callable[[], Iterator[Obj]]:
    def gen() -> Iterator[Obj]:
        t = node_template()
        for i in range(n):
            obj = named(t, f"scheduler-perf-{i}")
            obj["metadata"]["labels"] = {ZONE_LABEL: zones[i % len(zones)]}
            yield obj

    return gen


def _spreading(name: str, measured_template: str, nodes: int, init_pods: int, pods: int) -> Workload:
    return Workload(
        name=name,
        nodes=zoned_nodes(nodes),
        init_pods=pods_from(init_pods, "init-pod", namespace="namespace-1"),
        measured_pods=pods_from(
            pods, "spreading-pod", pod_template(measured_template), namespace="namespace-2"
        ),
        num_measured=pods,
        params={"nodes": nodes, "init_pods": init_pods, "pods": pods},
    )


def topology_spreading(nodes: int = 5000, init_pods: int = 5000, pods: int = 5000) -> Workload:
    return _spreading("TopologySpreading", "pod-with-topology-spreading.yaml", nodes, init_pods, pods)


def preferred_topology_spreading(nodes: int = 5000, init_pods: int = 5000, pods: int = 5000) -> Workload:
    return _spreading(
        "PreferredTopologySpreading", "pod-with-preferred-topology-spreading.yaml", nodes, init_pods, pods
    )


def default_topology_spreading(nodes: int = 5000, init_pods: int = 5000, pods: int = 10000) -> Workload:
    def objects() -> Iterator[Obj]:
        yield named(template("service.yaml"), "service-0", "service-ns")

    return Workload(
        name="DefaultTopologySpreading",
        nodes=zoned_nodes(nodes),
        init_pods=pods_from(init_pods, "init-pod", namespace="namespace-2"),
        measured_pods=pods_from(pods, "pod", pod_template("pod-with-label.yaml"), namespace="service-ns"),
        num_measured=pods,
        params={"nodes": nodes, "init_pods": init_pods, "pods": pods},
        objects=objects,
    )


WORKLOADS: dict[str, tuple[Callable[[int, int, int], Workload], tuple[int, int, int]]] = {
    "TopologySpreading": (topology_spreading, (5000, 5000, 5000)),
    "PreferredTopologySpreading": (preferred_topology_spreading, (5000, 5000, 5000)),
    "DefaultTopologySpreading": (default_topology_spreading, (5000, 5000, 10000)),
}
