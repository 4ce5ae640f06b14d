"""Placement-quality metrics of one world, sampled over virtual time and summarised for metrics.json.

Every ``sampleInterval`` (and at the end) a sample records: pending pods, running pods, nodes in use
(nodes running at least one pod that is not a DaemonSet's), per-node CPU and memory allocation
(requested / allocatable over the nodes that are not failed), the model's predicted latency-critical
slowdown (a model figure, ``model_figures``), and the ground truth's measures (``truth.observer``:
traffic locality under the routing in force, user-request latency, true interference, survivability). The summary (``summarize``) is documented key by key in docs/simulator.md;
keys ending in ``_seconds`` of wall time and ``decisions_per_second`` are the only ones that vary
between runs of the same scenario and seed.

To add a metric, add a function to ``EXTRA_METRICS``: it receives the finished world and returns a
dict merged into the profile's entry (the world exposes ``placement()``, ``records``, ``replicas_on``,
the cluster, the scheduler's snapshot and ``plan.topologies``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import parse_pod
from harmonic.api.resources import CPU, MEMORY
from harmonic.api.taints import Toleration, tolerated
from harmonic.cluster.memory import InMemoryCluster
from harmonic.framework.snapshot import CPU_COL, MEMORY_COL, PODS_COL
from harmonic.scheduler.clock import ManualClock
from harmonic.scheduler.scheduler import Scheduler
from harmonic.sim.model_figures import latency_critical_slowdowns
from harmonic.sim.plan import Plan
from harmonic.sim.records import PodRecord
from harmonic.sim.truth.observer import TrafficSeries, TruthObserver

#: Wall-clock fields: everything else in metrics.json is the same for the same scenario and seed.
WALL_CLOCK_KEYS = frozenset(
    {"wall_seconds", "scheduling_seconds", "decisions_per_second", "ground_truth_seconds"}
)
_FIT_PREFIX = re.compile(r"^0/\d+ nodes are available: ")


@dataclass
class Series:
    time: list[float] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)
    running: list[int] = field(default_factory=list)
    nodes_in_use: list[int] = field(default_factory=list)
    cpu_mean: list[float] = field(default_factory=list)
    cpu_std: list[float] = field(default_factory=list)
    memory_mean: list[float] = field(default_factory=list)
    memory_std: list[float] = field(default_factory=list)
    #: Mean slowdown the Dissonance model predicts for the running latency-critical pods (None: none).
    lc_slowdown: list[float | None] = field(default_factory=list)
    #: Every (sample, latency-critical pod) slowdown, for the overall mean and p95.
    lc_slowdown_all: list[float] = field(default_factory=list)
    #: Per sample with pods waiting: CPU millicores free where none of them fits (``stranded_cpu``).
    stranded_cpu: list[float] = field(default_factory=list)


class MeasuredWorld(Protocol):
    """What the metrics read of a profile's simulated world (``engine.World``): a protocol, so that this
    module does not import the engine, which imports it."""

    plan: Plan
    scheduler: Scheduler
    cluster: InMemoryCluster
    clock: ManualClock
    truth: TruthObserver
    recorder: Recorder
    records: dict[str, PodRecord]
    node_views: dict[str, Node]
    failed_nodes: set[str]
    workload_pods_on: Counter[str]
    stats: Counter[str]
    time_to_schedule: list[float]
    notes: list[str]
    attempts: int
    scheduling_seconds: float
    wall_seconds: float
    cpu_seconds_completed: float

    def pending(self) -> list[PodRecord]: ...


class Recorder:
    def __init__(self, world: MeasuredWorld) -> None:
        self.world = world
        self.series = Series()
        #: Per-node allocation at the end: node -> (cpu share, memory share).
        self.final_allocation: dict[str, tuple[float, float]] = {}
        #: Pod uid -> what a waiting pod needs, parsed once per pod.
        self._needs: dict[str, Need] = {}

    def _waiting(self) -> list[Need]:
        """What the pods waiting for a node need; DaemonSet pods are left out (each fits one node only)."""
        out: list[Need] = []
        for rec in self.world.pending():
            if rec.daemon:
                continue
            need = self._needs.get(rec.uid)
            if need is None:
                pod = parse_pod(self.world.cluster.pods[rec.key])
                shape = (pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0), 1)
                need = self._needs[rec.uid] = Need(shape, pod.tolerations)
            out.append(need)
        return out

    def allocation(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Nodes that are not failed, and their CPU and memory allocation (0..1)."""
        snap = self.world.scheduler.cache.snapshot
        slots = np.flatnonzero(snap.live)
        names = [snap.node(int(s)).name for s in slots]
        keep = np.array([n not in self.world.failed_nodes for n in names], dtype=bool)
        slots = slots[keep] if len(slots) else slots
        names = [n for n, k in zip(names, keep, strict=True) if k]
        alloc = snap.allocatable[slots][:, [CPU_COL, MEMORY_COL]].astype(np.float64)
        req = snap.requested[slots][:, [CPU_COL, MEMORY_COL]].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(alloc > 0, req / alloc, 0.0)
        return names, share[:, 0], share[:, 1]

    def sample(self, t: float, final: bool = False) -> None:
        w = self.world
        s = self.series
        if s.time and s.time[-1] == t:
            return
        s.time.append(t)
        pending = sum(1 for r in w.records.values() if r.node is None)
        s.pending.append(pending)
        s.running.append(len(w.records) - pending)
        s.nodes_in_use.append(len(w.workload_pods_on))
        names, cpu, mem = self.allocation()
        s.cpu_mean.append(float(cpu.mean()) if len(cpu) else 0.0)
        s.cpu_std.append(float(cpu.std()) if len(cpu) else 0.0)
        s.memory_mean.append(float(mem.mean()) if len(mem) else 0.0)
        s.memory_std.append(float(mem.std()) if len(mem) else 0.0)
        slowdowns = latency_critical_slowdowns(w.scheduler.cache.snapshot)
        s.lc_slowdown.append(float(np.mean(slowdowns)) if slowdowns else None)
        s.lc_slowdown_all.extend(slowdowns)
        waiting = self._waiting()
        if waiting:
            s.stranded_cpu.append(stranded_cpu(w, waiting))
        if final:
            self.final_allocation = {n: (float(c), float(m)) for n, c, m in zip(names, cpu, mem, strict=True)}
        w.truth.sample()


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "stdev": 0.0}
    return {"mean": round(float(np.mean(values)), 6), "stdev": round(float(np.std(values)), 6)}


def pending_reason(message: str) -> list[str]:
    """The reasons of a FailedScheduling message without the node counts:
    ``0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint(s).`` gives
    ``["Insufficient cpu", "node(s) had untolerated taint(s)"]``."""
    m = _FIT_PREFIX.match(message)
    if not m:
        return [message.rstrip(".")]
    body = message[m.end() :]
    first = body.split(". ", 1)[0].rstrip(".")
    out = []
    for part in first.split(", "):
        count, _, reason = part.partition(" ")
        out.append(reason if count.isdigit() else part)
    return out


def _pending(world: MeasuredWorld) -> tuple[dict[str, int], list[tuple[int, int, int]]]:
    reasons: Counter[str] = Counter()
    shapes: list[tuple[int, int, int]] = []
    for rec in world.pending():
        raw = world.cluster.pods[rec.key]
        message = ""
        for c in (raw.get("status") or {}).get("conditions") or ():
            if c.get("type") == "PodScheduled" and c.get("status") == "False":
                message = str(c.get("message") or c.get("reason") or "")
        for reason in pending_reason(message) if message else ["not attempted yet"]:
            reasons[reason] += 1
        pod = parse_pod(raw)
        shapes.append((pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0), 1))
    return dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))), shapes


def fragmentation(world: MeasuredWorld, shapes: list[tuple[int, int, int]]) -> dict[str, Any]:
    """Capacity free in aggregate but unusable by the pending pods.

    Over nodes that accept pods (not cordoned, not failed): ``free_*`` is the capacity left in
    aggregate; a node's free capacity is *unusable* when none of the pending pods' requests (CPU,
    memory, one pod slot) fits in it; ``unusable_*_share`` is the unusable part of the free capacity;
    ``pending_pods_fitting_in_aggregate`` counts pending pods whose requests fit in the aggregate free
    capacity but in no single node. Only resources are considered here, not taints or affinities."""
    free = _free_on_accepting_nodes(world)
    total = free.sum(axis=0) if len(free) else np.zeros(3, dtype=np.int64)
    out: dict[str, Any] = {
        "free_cpu_millicores": int(total[0]),
        "free_memory_bytes": int(total[1]),
        "unusable_cpu_share": 0.0,
        "unusable_memory_share": 0.0,
        "pending_pods_fitting_in_aggregate": 0,
    }
    if not shapes or not len(free):
        return out
    req = np.array(sorted(set(shapes)), dtype=np.int64)
    fits = _fits(free, req)
    usable: np.ndarray = np.any(fits, axis=1)
    if total[0] > 0:
        out["unusable_cpu_share"] = round(float(free[~usable, 0].sum() / total[0]), 6)
    if total[1] > 0:
        out["unusable_memory_share"] = round(float(free[~usable, 1].sum() / total[1]), 6)
    fit_any: list[bool] = np.any(fits, axis=0).tolist()
    fits_some_node = {tuple(r) for r, ok in zip(req.tolist(), fit_any, strict=True) if ok}
    out["pending_pods_fitting_in_aggregate"] = sum(
        1 for s in shapes if s not in fits_some_node and all(s[i] <= total[i] for i in range(3))
    )
    return out


@dataclass(frozen=True, slots=True)
class Need:
    """A waiting pod's requests (CPU millicores, memory bytes, one pod slot) and tolerations."""

    shape: tuple[int, int, int]
    tolerations: tuple[Toleration, ...]


def stranded_cpu(world: MeasuredWorld, waiting: Sequence[Need]) -> float:
    """CPU millicores left free, while ``waiting`` pods wait, on nodes where none of them fits.

    Counts nodes that accept pods (live, not cordoned, not failed) and whose NoSchedule/NoExecute taints
    some waiting pod tolerates; a node's free CPU is stranded when no waiting pod's requests (CPU,
    memory, a pod slot) fit in what it has left: capacity work could not use while it waited — what
    packing wasted, or what no node could have given a pod bigger than any node — as opposed to
    capacity nobody asked for. Affinities and spreading are not considered."""
    free = _free_on_accepting_nodes(world, {n.tolerations for n in waiting})
    req = np.array(sorted({n.shape for n in waiting}), dtype=np.int64)
    return float(free[~_fits(free, req).any(axis=1), 0].sum())


def _free_on_accepting_nodes(
    world: MeasuredWorld, tolerations: set[tuple[Toleration, ...]] | None = None
) -> np.ndarray:
    """[node, (CPU, memory, pods)] left on nodes that accept pods (live, not cordoned, not failed); with
    ``tolerations``, only nodes whose NoSchedule/NoExecute taints one of those sets tolerates."""
    snap = world.scheduler.cache.snapshot
    slots = np.flatnonzero(snap.live & ~snap.unschedulable)
    keep = np.ones(len(slots), dtype=bool)
    for i, slot in enumerate(slots.tolist()):
        node = snap.node(slot)
        if node.name in world.failed_nodes:
            keep[i] = False
        elif tolerations is not None:
            hard = [t for t in node.taints if t.effect in _HARD_TAINTS]
            keep[i] = not hard or any(all(tolerated(tol, t) for t in hard) for tol in tolerations)
    slots = slots[keep]
    cols = [CPU_COL, MEMORY_COL, PODS_COL]
    free: np.ndarray = (snap.allocatable[slots][:, cols] - snap.requested[slots][:, cols]).clip(min=0)
    return free


def _fits(free: np.ndarray, req: np.ndarray) -> np.ndarray:
    """[node, shape]: the shape's requests fit in what the node has left."""
    fits: np.ndarray = np.all(free[:, None, :] >= req[None, :, :], axis=2)
    return fits


_HARD_TAINTS = frozenset({"NoSchedule", "NoExecute"})


def _percentile(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 6) if values else 0.0


def _share(num: float, den: float) -> float | None:
    return round(num / den, 6) if den > 0 else None


def summarize(world: MeasuredWorld) -> dict[str, Any]:
    s = world.recorder.series
    reasons, shapes = _pending(world)
    traffic: dict[str, Any] = {}
    served = total = cross_node = cross_zone = 0.0
    latency_weighted = latency_rate = 0.0
    for topo in world.plan.topologies:
        ts = world.truth.series.traffic.get(topo.namespace, TrafficSeries())
        served += ts.served
        total += ts.total
        cross_node += ts.cross_node_sum
        cross_zone += ts.cross_zone_sum
        mean_latency = ts.latency_sum / ts.latency_samples if ts.latency_samples else None
        if mean_latency is not None:
            latency_weighted += mean_latency * topo.user_rate
            latency_rate += topo.user_rate
        traffic[topo.namespace] = {
            "topology": topo.name,
            "user_rate": topo.user_rate,
            "routing": topo.routing,
            "cross_node_traffic_share": _share(ts.cross_node_sum, ts.served),
            "cross_zone_traffic_share": _share(ts.cross_zone_sum, ts.served),
            "unserved_traffic_share": _share(ts.total - ts.served, ts.total),
            "added_latency_ms_per_user_request": None if mean_latency is None else round(mean_latency, 6),
        }
    decisions = world.attempts
    out: dict[str, Any] = {
        "pods_created": world.stats["pods_created"],
        "pods_scheduled": world.stats["pods_scheduled"],
        "pods_pending": len(shapes),
        "pending_reasons": reasons,
        "pods_running": len(world.records) - len(shapes),
        "pods_completed": world.stats["pods_completed"],
        "cpu_seconds_completed": round(world.cpu_seconds_completed, 3),
        "pods_deleted": world.stats["pods_deleted"],
        "pods_evicted": world.stats["pods_evicted"],
        "pods_preempted": world.stats["pods_preempted"],
        "nodes": len(world.node_views),
        "nodes_in_use": round(float(np.mean(s.nodes_in_use)), 6) if s.nodes_in_use else 0.0,
        "nodes_in_use_peak": max(s.nodes_in_use, default=0),
        "nodes_in_use_at_end": s.nodes_in_use[-1] if s.nodes_in_use else 0,
        "cross_node_traffic_share": _share(cross_node, served),
        "cross_zone_traffic_share": _share(cross_zone, served),
        "added_latency_ms_per_user_request": _share(latency_weighted, latency_rate),
        "time_to_schedule_seconds": {
            "p50": _percentile(world.time_to_schedule, 50),
            "p99": _percentile(world.time_to_schedule, 99),
            "max": round(max(world.time_to_schedule, default=0.0), 6),
        },
        "scheduling_attempts": decisions,
        "decisions_per_second": round(decisions / world.scheduling_seconds, 1)
        if world.scheduling_seconds
        else 0.0,
        "scheduling_seconds": round(world.scheduling_seconds, 3),
        "wall_seconds": round(world.wall_seconds, 3),
        "ground_truth_seconds": round(world.truth.seconds, 3),
        "allocation": {
            "cpu": {"mean": _mean(s.cpu_mean), "stdev": _mean(s.cpu_std)},
            "memory": {"mean": _mean(s.memory_mean), "stdev": _mean(s.memory_std)},
        },
        "allocation_at_end": {
            "cpu": _stats([c for c, _ in world.recorder.final_allocation.values()]),
            "memory": _stats([m for _, m in world.recorder.final_allocation.values()]),
        },
        "fragmentation": fragmentation(world, shapes),
        "stranded_cpu_cores_while_pending": round(float(np.mean(s.stranded_cpu)) / 1000, 6)
        if s.stranded_cpu
        else None,
        "samples_with_pending": len(s.stranded_cpu),
        "latency_critical_slowdown": round(float(np.mean(s.lc_slowdown_all)), 6)
        if s.lc_slowdown_all
        else None,
        "latency_critical_slowdown_p95": _percentile(s.lc_slowdown_all, 95) if s.lc_slowdown_all else None,
        **world.truth.summary(),
        "traffic": traffic,
        "virtual_seconds": round(world.clock.now(), 6),
        "notes": list(world.notes),
    }
    for extra in EXTRA_METRICS:
        out.update(extra(world))
    return out


def _mean(values: list[float]) -> float:
    return round(float(np.mean(values)), 6) if values else 0.0


#: Functions adding keys to each profile's metrics (see module docstring). Each is called with the
#: engine's ``World`` and declares for itself what it reads of it, so the list's type cannot name it.
EXTRA_METRICS: list[Callable[[Any], dict[str, Any]]] = []
