"""Preemption scheduler_perf workloads (test/integration/scheduler_perf/misc/performance-config.yaml).

PreemptionBasic: every node is filled by four low-priority pods (900m CPU each, 3.6 of 4 CPUs); each
measured pod has priority 10 and needs 3 CPUs, so it preempts three of them, is nominated, and binds on
its next attempt. Upstream runs it at 1,000 nodes with no CI threshold.

PreemptionAsync: the same filled cluster; while regular pods (100m) are measured, a high-priority pod
that must preempt is created every 200 ms. Upstream's threshold is 570 pods/s at 5,000 nodes,
measured with a real API server (not comparable with the in-process figures here).
"""

from __future__ import annotations

from collections.abc import Callable

from harmonic.perf.runner import Churn, Workload
from harmonic.perf.templates import named, pod_template
from harmonic.perf.workloads.basic import nodes_from, pods_from

#: scheduler_perf's churn interval (intervalMilliseconds: 200).
CHURN_INTERVAL = 0.2


def preemption_basic(nodes: int = 1000, init_pods: int = 4000, pods: int = 1000) -> Workload:
    return Workload(
        name="PreemptionBasic",
        nodes=nodes_from(nodes),
        init_pods=pods_from(init_pods, "init-pod", pod_template("pod-low-priority.yaml"), "sched-0"),
        measured_pods=pods_from(pods, "pod", pod_template("pod-high-priority.yaml"), "sched-1"),
        num_measured=pods,
        params={"nodes": nodes, "init_pods": init_pods, "pods": pods},
    )


def preemption_async(nodes: int = 5000, init_pods: int = 20000, pods: int = 5000) -> Workload:
    high = pod_template("pod-high-priority.yaml")
    return Workload(
        name="PreemptionAsync",
        nodes=nodes_from(nodes),
        init_pods=pods_from(init_pods, "init-pod", pod_template("pod-low-priority.yaml"), "sched-0"),
        measured_pods=pods_from(pods, "pod", pod_template(), "sched-1"),
        num_measured=pods,
        params={"nodes": nodes, "init_pods": init_pods, "pods": pods, "churn_interval_s": CHURN_INTERVAL},
        churn=Churn(CHURN_INTERVAL, lambda i: named(high, f"churn-{i}", "sched-churn")),
    )


WORKLOADS: dict[str, tuple[Callable[[int, int, int], Workload], tuple[int, int, int]]] = {
    "PreemptionBasic": (preemption_basic, (1000, 4000, 1000)),
    "PreemptionAsync": (preemption_async, (5000, 20000, 5000)),
}
