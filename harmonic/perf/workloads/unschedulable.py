"""Workloads measuring schedulable pods while unschedulable ones wait in the queue.

Unschedulable (test/integration/scheduler_perf/misc/performance-config.yaml, 5kNodes/20kInit/10kPods,
threshold 600 pods/s, measured with a real API server, so not comparable with the in-process figures
here): init pods from the default template; while the measured default pods are
scheduled, a high-priority pod asking for 9 CPUs (more than any 4-CPU node has) is created every
200 ms. Each is tried once (preemption finds nothing to evict) and waits in the unschedulable pool.

UnschedulablePool (Harmonic's): the same 9-CPU pods, all of them created and tried as init pods, so
the unschedulable pool holds every one (20,000 by default) while the measured pods are scheduled.
Every binding is an assigned-pod event: it must cost nothing per pod waiting in the pool.
"""

from __future__ import annotations

from collections.abc import Callable

from harmonic.perf.runner import Churn, Workload
from harmonic.perf.templates import named, pod_template
from harmonic.perf.workloads.basic import nodes_from, pods_from

LARGE_CPU_TEMPLATE = "pod-high-priority-large-cpu.yaml"
#: scheduler_perf's churn interval (intervalMilliseconds: 200).
CHURN_INTERVAL = 0.2


def unschedulable(nodes: int = 5000, init_pods: int = 20000, pods: int = 10000) -> Workload:
    large = pod_template(LARGE_CPU_TEMPLATE)
    return Workload(
        name="Unschedulable",
        nodes=nodes_from(nodes),
        init_pods=pods_from(init_pods, "init-pod", namespace="sched-0"),
        measured_pods=pods_from(pods, "pod", namespace="sched-1"),
        num_measured=pods,
        params={"nodes": nodes, "init_pods": init_pods, "pods": pods, "churn_interval_s": CHURN_INTERVAL},
        churn=Churn(CHURN_INTERVAL, lambda i: named(large, f"pod-h-{i}", "sched-churn")),
    )


def unschedulable_pool(nodes: int = 5000, init_pods: int = 20000, pods: int = 10000) -> Workload:
    return Workload(
        name="UnschedulablePool",
        nodes=nodes_from(nodes),
        init_pods=pods_from(init_pods, "pod-h", pod_template(LARGE_CPU_TEMPLATE), namespace="sched-0"),
        measured_pods=pods_from(pods, "pod", namespace="sched-1"),
        num_measured=pods,
        params={"nodes": nodes, "init_pods": init_pods, "pods": pods, "init_template": LARGE_CPU_TEMPLATE},
    )


WORKLOADS: dict[str, tuple[Callable[[int, int, int], Workload], tuple[int, int, int]]] = {
    "Unschedulable": (unschedulable, (5000, 20000, 10000)),
    "UnschedulablePool": (unschedulable_pool, (5000, 20000, 10000)),
}
