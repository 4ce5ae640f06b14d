"""MixedSchedulingBasePod (test/integration/scheduler_perf/affinity/performance-config.yaml).

Nodes from the default template, all in zone ``zone1``; in namespace ``sched-0``, ``init_pods`` pods of
each of five templates — default, required pod affinity, required pod anti-affinity, preferred pod
affinity, preferred pod anti-affinity — then the measured default pods in ``namespace-7`` (upstream's
namespace for an unnamed ``createPods`` at step 7). The measured pods have no affinity of their own;
what they cost is checking the existing pods' (anti-)affinity terms, so the figure is meaningful only
with InterPodAffinity in the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from harmonic.perf.runner import Workload
from harmonic.perf.templates import named, pod_template
from harmonic.perf.workloads.basic import pods_from
from harmonic.perf.workloads.topology_spread import zoned_nodes

Obj = dict[str, Any]
INIT_TEMPLATES = (
    "pod-default.yaml",
    "pod-with-pod-affinity.yaml",
    "pod-with-pod-anti-affinity.yaml",
    "pod-with-preferred-pod-affinity.yaml",
    "pod-with-preferred-pod-anti-affinity.yaml",
)


def mixed_scheduling_base_pod(nodes: int = 5000, init_pods: int = 2000, pods: int = 5000) -> Workload:
    def init() -> Iterator[Obj]:
        for k, name in enumerate(INIT_TEMPLATES):
            t = pod_template(name)
            for i in range(init_pods):
                yield named(t, f"init-{k}-{i}", "sched-0")

    return Workload(
        name="MixedSchedulingBasePod",
        nodes=zoned_nodes(nodes, ("zone1",)),
        init_pods=init,
        measured_pods=pods_from(pods, "pod", namespace="namespace-7"),
        num_measured=pods,
        params={"nodes": nodes, "init_pods_per_template": init_pods, "pods": pods},
    )


WORKLOADS: dict[str, tuple[Callable[[int, int, int], Workload], tuple[int, int, int]]] = {
    "MixedSchedulingBasePod": (mixed_scheduling_base_pod, (5000, 2000, 5000)),
}
