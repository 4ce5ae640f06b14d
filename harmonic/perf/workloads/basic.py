"""Basic scheduler_perf workloads (test/integration/scheduler_perf/misc), from upstream's templates."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from harmonic.perf.runner import Workload
from harmonic.perf.templates import named, node_template, pod_template

Obj = dict[str, Any]


def nodes_from(n: int, template: Obj | None = None) -> Callable[[], Iterator[Obj]]:
    def gen() -> Iterator[Obj]:
        t = template or node_template()
        for i in range(n):
            yield named(t, f"scheduler-perf-{i}")

    return gen


def pods_from(
    n: int, prefix: str, template: Obj | None = None, namespace: str = "default"
) -> Callable[[], Iterator[Obj]]:
    def gen() -> Iterator[Obj]:
        t = template or pod_template()
        for i in range(n):
            yield named(t, f"{prefix}-{i}", namespace)

    return gen


def scheduling_basic(nodes: int = 5000, init_pods: int = 1000, pods: int = 10000) -> Workload:
    """SchedulingBasic: default node and pod templates, measured pods created at once."""
    return Workload(
        name="SchedulingBasic",
        nodes=nodes_from(nodes),
        init_pods=pods_from(init_pods, "init-pod", namespace="sched-0"),
        measured_pods=pods_from(pods, "pod", namespace="sched-1"),
        num_measured=pods,
        params={"nodes": nodes, "init_pods": init_pods, "pods": pods},
    )


WORKLOADS: dict[str, tuple[Callable[[int, int, int], Workload], tuple[int, int, int]]] = {
    "SchedulingBasic": (scheduling_basic, (5000, 1000, 10000)),
}
