"""Run a scheduler_perf workload against the in-memory cluster and measure it.

Measured: pods per second over the whole loop for the measured pods (creation events, queue,
scheduling cycle, assume, binding to the in-memory cluster), per-pod latency from the start of the
measured phase to the pod's binding (p50/p99), each attempt's duration (and separately that of the
attempts that failed, where PostFilter/preemption runs), and peak RSS.

During the measured phase the scheduler's (virtual) clock follows the timer (wall clock, or CPU time
with ``--cpu-time``), so backoffs expire and churn pods arrive in real time; when nothing is left to do before the next backoff expiry, the
clock jumps there instead of idling (as kube-scheduler pops from backoffQ when activeQ is empty).
The phase ends when every measured pod is bound, or when none was bound for ``STALL_SECONDS``.
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

#: Give up on measured pods that stay unbound this long (scheduler time) after the last one bound.
STALL_SECONDS = 600.0


@dataclass
class Churn:
    """Pods created every ``interval`` wall-clock seconds during the measured phase (scheduler_perf's
    ``churn`` opcode in ``create`` mode); ``make(i)`` builds the i-th."""

    interval: float
    make: Callable[[int], Obj]


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
    #: Handle services the scheduler gets (e.g. Harmonic's models), built fresh per run.
    services: Callable[[], dict[str, Any]] | None = None
    churn: Churn | None = None
    #: Services, ReplicaSets, ... created before the nodes (their selectors drive default spreading).
    objects: Callable[[], Iterable[Obj]] = tuple
    #: PodGroups and ElasticQuotas (scheduling.x-k8s.io) created before the nodes.
    batch_objects: Callable[[], Iterable[Obj]] = tuple


@dataclass
class PerfResult:
    workload: str
    nodes: int
    init_pods: int
    measured_pods: int
    #: Measured pods bound, and those still pending when the run ended (never bound).
    scheduled: int
    unscheduled: int
    unschedulable_attempts: int
    #: What ``seconds`` and every duration below measure: "wall" (perf_counter) or "cpu" (process_time).
    timer: str
    seconds: float
    #: Scheduled (bound) measured pods per ``seconds``; unscheduled pods do not count.
    pods_per_second: float
    #: Virtual seconds the scheduler's clock jumped ahead over idle backoff waits (no pod was ready,
    #: so time was skipped rather than waited for); 0 when it never idled.
    idle_skipped_seconds: float
    p50_ms: float
    p99_ms: float
    attempt_p50_ms: float
    attempt_p99_ms: float
    failed_attempt_p50_ms: float
    failed_attempt_p99_ms: float
    peak_rss_mb: float
    params: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_workload(
    workload: Workload, registry: Registry, seed: int = 0, timer: Callable[[], float] = time.perf_counter
) -> PerfResult:
    """Run ``workload``; ``timer`` measures the measured phase (``time.process_time`` gives CPU time,
    steady on a shared machine; churn and the scheduler's clock then follow it too)."""
    config: SchedulerConfiguration = load_config(
        workload.config, registry, source=f"workload {workload.name}"
    )
    clock = ManualClock()
    cluster = InMemoryCluster(clock.now)
    for obj in workload.objects():
        cluster.apply_workload(obj)
    for obj in workload.batch_objects():
        cluster.apply_batch(obj)
    services = cluster.scheduler_services()
    if workload.services is not None:
        services.update(workload.services())
    sched = Scheduler(config, registry, cluster, clock=clock, seed=seed, services=services)
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

    skipped = 0.0
    bound_at: list[float] = []
    attempts: list[float] = []
    failed: list[float] = []
    waiting: set[str] = set()
    t_last = [timer()]
    last_bind = [clock.now()]

    def on_result(r: ScheduleResult) -> None:
        now = timer()
        attempts.append(now - t_last[0])
        t_last[0] = now
        if r.node is None:
            failed.append(attempts[-1])
        elif r.pod.key in waiting:
            waiting.discard(r.pod.key)
            bound_at.append(now)
            last_bind[0] = clock.now()

    sched.results = on_result
    start = timer()
    t_last[0] = start
    for p in workload.measured_pods():
        created = cluster.create_pod(p)
        waiting.add(f"{created['metadata']['namespace']}/{created['metadata']['name']}")
    virtual_start = clock.now()
    churned = 0
    while waiting:
        elapsed_now = timer() - start
        clock.set(max(clock.now(), virtual_start + elapsed_now))
        churn = workload.churn
        if churn is not None and elapsed_now >= (churned + 1) * churn.interval:
            cluster.create_pod(churn.make(churned))
            churned += 1
        if sched.schedule_one() is not None or sched.drain():
            continue
        wake = sched.queue.next_wakeup()
        if wake is None or wake - last_bind[0] > STALL_SECONDS:
            break
        skipped += max(0.0, wake - clock.now())
        clock.set(max(clock.now(), wake))
    elapsed = timer() - start
    sched.results = None

    lat = (np.asarray(bound_at) - start) * 1000 if bound_at else np.zeros(1)
    att = np.asarray(attempts) * 1000 if attempts else np.zeros(1)
    fail = np.asarray(failed) * 1000 if failed else np.zeros(1)
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return PerfResult(
        workload=workload.name,
        nodes=nodes,
        init_pods=init,
        measured_pods=workload.num_measured,
        scheduled=len(bound_at),
        unscheduled=workload.num_measured - len(bound_at),
        unschedulable_attempts=len(failed),
        timer="cpu" if timer is time.process_time else "wall",
        seconds=elapsed,
        pods_per_second=len(bound_at) / elapsed if elapsed > 0 else 0.0,
        idle_skipped_seconds=skipped,
        p50_ms=float(np.percentile(lat, 50)),
        p99_ms=float(np.percentile(lat, 99)),
        attempt_p50_ms=float(np.percentile(att, 50)),
        attempt_p99_ms=float(np.percentile(att, 99)),
        failed_attempt_p50_ms=float(np.percentile(fail, 50)),
        failed_attempt_p99_ms=float(np.percentile(fail, 99)),
        peak_rss_mb=rss_kb / 1024,
        params=workload.params,
    )
