"""The Unschedulable workload: schedulable pods measured while a large pool of unschedulable pods waits.

Upstream (test/integration/scheduler_perf/misc/performance-config.yaml, ``Unschedulable``,
5kNodes/20kInit/10kPods, threshold 600 pods/s) creates the init pods from the default template and
injects high-priority pods asking for 9 CPUs (more than any 4-CPU node has) at 5 per second while
the measured pods are scheduled. Here the 9-CPU pods are the init pods, all created and tried before
measuring, so the unschedulable pool holds all of them while the measured default pods are
scheduled: every binding (an assigned-pod event) must cost nothing per pod in that pool.
"""

from __future__ import annotations

from collections.abc import Callable

from harmonic.perf.runner import Workload
from harmonic.perf.templates import pod_template
from harmonic.perf.workloads.basic import nodes_from, pods_from

LARGE_CPU_TEMPLATE = "pod-high-priority-large-cpu.yaml"


def unschedulable(nodes: int = 5000, init_pods: int = 20000, pods: int = 10000) -> Workload:
    return Workload(
        name="Unschedulable",
        nodes=nodes_from(nodes),
        init_pods=pods_from(init_pods, "pod-h", pod_template(LARGE_CPU_TEMPLATE), namespace="sched-0"),
        measured_pods=pods_from(pods, "pod", namespace="sched-1"),
        num_measured=pods,
        params={"nodes": nodes, "init_pods": init_pods, "pods": pods, "init_template": LARGE_CPU_TEMPLATE},
    )


WORKLOADS: dict[str, tuple[Callable[[int, int, int], Workload], tuple[int, int, int]]] = {
    "Unschedulable": (unschedulable, (5000, 20000, 10000)),
}
