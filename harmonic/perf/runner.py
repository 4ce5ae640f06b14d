"""Run a scheduler_perf workload against the in-memory cluster and measure it.

Measured: pods per second over the whole loop for the measured pods (creation events, queue,
scheduling cycle, assume, binding to the in-memory cluster), per-pod latency from the start of the
measured phase to the pod's binding (p50/p99), each attempt's duration, and peak RSS.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from harmonic.cluster.memory import InMemoryCluster
from harmonic.framework.config import SchedulerConfiguration, load_config
from harmonic.framework.registry import Registry
from harmonic.scheduler.clock import ManualClock
from harmonic.scheduler.scheduler import Scheduler, ScheduleResult

Obj = dict[str, Any]


@dataclass
class Workload:
    """Nodes, pods present before measuring, and the measured pods (all as manifests, made lazily)."""

    name: str
    nodes: Callable[[], Iterable[Obj]]
    init_pods: Callable[[], Iterable[Obj]]
    measured_pods: Callable[[], Iterable[Obj]]
    num_measured: int
    config: dict[str, Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    #: Services, ReplicaSets, ... created before the nodes (their selectors drive default spreading).
    objects: Callable[[], Iterable[Obj]] = tuple


@dataclass
class PerfResult:
    workload: str
    nodes: int
    init_pods: int
    measured_pods: int
    scheduled: int
    unschedulable_attempts: int
    seconds: float
    pods_per_second: float
    p50_ms: float
    p99_ms: float
    attempt_p50_ms: float
    attempt_p99_ms: float
    peak_rss_mb: float
    params: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_workload(workload: Workload, registry: Registry, seed: int = 0) -> PerfResult:
    config: SchedulerConfiguration = load_config(
        workload.config, registry, source=f"workload {workload.name}"
    )
    clock = ManualClock()
    cluster = InMemoryCluster(clock.now)
    for obj in workload.objects():
        cluster.apply_workload(obj)
    sched = Scheduler(
        config, registry, cluster, clock=clock, seed=seed, services=cluster.scheduler_services()
    )
    cluster.connect(sched)
    nodes = 0
    for n in workload.nodes():
        cluster.add_node(n)
        nodes += 1
    init = 0
    for p in workload.init_pods():
        cluster.create_pod(p)
        init += 1
    sched.run_until_idle()

    bound_at: list[float] = []
    attempts: list[float] = []
    failures = 0
    t_last = [time.perf_counter()]

    def on_result(r: ScheduleResult) -> None:
        nonlocal failures
        now = time.perf_counter()
        attempts.append(now - t_last[0])
        t_last[0] = now
        if r.node is not None:
            bound_at.append(now)
        else:
            failures += 1

    sched.results = on_result
    start = time.perf_counter()
    t_last[0] = start
    for p in workload.measured_pods():
        cluster.create_pod(p)
    sched.run_until_idle()
    elapsed = time.perf_counter() - start
    sched.results = None

    lat = (np.asarray(bound_at) - start) * 1000 if bound_at else np.zeros(1)
    att = np.asarray(attempts) * 1000 if attempts else np.zeros(1)
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return PerfResult(
        workload=workload.name,
        nodes=nodes,
        init_pods=init,
        measured_pods=workload.num_measured,
        scheduled=len(bound_at),
        unschedulable_attempts=failures,
        seconds=elapsed,
        pods_per_second=workload.num_measured / elapsed if elapsed > 0 else 0.0,
        p50_ms=float(np.percentile(lat, 50)),
        p99_ms=float(np.percentile(lat, 99)),
        attempt_p50_ms=float(np.percentile(att, 50)),
        attempt_p99_ms=float(np.percentile(att, 99)),
        peak_rss_mb=rss_kb / 1024,
        params=workload.params,
    )
