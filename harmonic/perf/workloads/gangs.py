"""Gang scheduling workload (Harmonic's; scheduler-plugins has no scheduler_perf config for it).

SchedulingGangs: the default node and pod templates; the measured pods form gangs of ``GANG_SIZE``
(a PodGroup each, ``minMember`` = the gang size, label ``scheduling.x-k8s.io/pod-group``), scheduled
by the bundled ``batch`` profile's plugins (Coscheduling with its gang guard, CapacityScheduling).
Each gang's pods wait at Permit until the last one is assumed, which releases them all. Default:
5,000 nodes, 1,000 init pods, 1,000 gangs of 8.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from harmonic.api.batch import API_VERSION, POD_GROUP, POD_GROUP_LABEL
from harmonic.perf.runner import Workload
from harmonic.perf.templates import named, pod_template
from harmonic.perf.workloads.basic import nodes_from, pods_from

GANG_SIZE = 8
NAMESPACE = "sched-1"
_PROFILE = {
    "schedulerName": "default-scheduler",
    "plugins": {
        "multiPoint": {
            "enabled": [{"name": "Coscheduling"}, {"name": "CapacityScheduling"}],
            "disabled": [{"name": "PrioritySort"}],
        }
    },
}


def _gang_pods(pods: int) -> Callable[[], Iterator[dict[str, Any]]]:
    def gen() -> Iterator[dict[str, Any]]:
        t = pod_template()
        for i in range(pods):
            p = named(t, f"pod-{i}", NAMESPACE)
            meta = p["metadata"]
            meta["labels"] = {**(meta.get("labels") or {}), POD_GROUP_LABEL: f"gang-{i // GANG_SIZE}"}
            yield p

    return gen


def _pod_groups(pods: int) -> Callable[[], Iterator[dict[str, Any]]]:
    def gen() -> Iterator[dict[str, Any]]:
        for g in range(-(-pods // GANG_SIZE)):
            size = min(GANG_SIZE, pods - g * GANG_SIZE)
            yield {
                "apiVersion": API_VERSION,
                "kind": POD_GROUP,
                "metadata": {"name": f"gang-{g}", "namespace": NAMESPACE},
                "spec": {"minMember": size},
            }

    return gen


def scheduling_gangs(nodes: int = 5000, init_pods: int = 1000, pods: int = 8000) -> Workload:
    return Workload(
        name="SchedulingGangs",
        nodes=nodes_from(nodes),
        init_pods=pods_from(init_pods, "init-pod", namespace="sched-0"),
        measured_pods=_gang_pods(pods),
        num_measured=pods,
        config={"profiles": [_PROFILE]},
        params={"nodes": nodes, "init_pods": init_pods, "pods": pods, "gang_size": GANG_SIZE},
        batch_objects=_pod_groups(pods),
    )


WORKLOADS: dict[str, tuple[Callable[[int, int, int], Workload], tuple[int, int, int]]] = {
    "SchedulingGangs": (scheduling_gangs, (5000, 1000, 8000)),
}
