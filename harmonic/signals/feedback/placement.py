"""The placement in force when a report arrives: which node a pod runs on, its requests, and the CPU
share of that node each workload class holds besides the pod itself.

Built from the scheduler's snapshot (the live scheduler's cache, the simulator's scheduler), which is
what a real cluster tells a controller, once per batch of reports: one pass over the pods, then a
lookup per report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from harmonic.api.pod import Pod
from harmonic.api.resources import CPU, MEMORY
from harmonic.framework.snapshot import CPU_COL, Snapshot
from harmonic.signals.classes import CLASS_INDEX, CLASSES, classify
from harmonic.signals.feedback.observation import Goal, Observation
from harmonic.signals.identity import WorkloadKey, workload_of


@dataclass(frozen=True, slots=True)
class PodPlacement:
    pod: Pod
    node: str
    workload: WorkloadKey
    klass: int
    #: CPU share of the node held by each class, this pod excluded.
    neighbours: np.ndarray


class PlacementView:
    """Per-node class CPU shares of one snapshot, pods by ``namespace/name``, and the pods waiting to be
    scheduled (``pending``: the scheduler's queue, where the caller has it) or just started
    (``arrivals``)."""

    def __init__(self, snap: Snapshot, pending: Iterable[Pod] = ()) -> None:
        self._pods: dict[str, tuple[int, Pod]] = {}
        cap = snap.capacity
        table = np.zeros((cap, len(CLASSES)))
        counts = np.zeros((cap, len(CLASSES)))
        for slot, pod in snap.all_pods():
            self._pods[pod.key] = (slot, pod)
            k = CLASS_INDEX[classify(pod)]
            table[slot, k] += float(pod.nonzero_cpu)
            counts[slot, k] += 1
        alloc = snap.allocatable[:cap, CPU_COL].astype(np.float64)
        inv = np.divide(1.0, alloc, out=np.zeros(cap), where=alloc > 0)
        self._shares = table * inv[:, None]
        self._counts = counts
        self._inv = inv
        self._snap = snap
        self._free_cpu = alloc - snap.requested[:cap, CPU_COL].astype(np.float64)
        # A gated pod is not scheduled whatever room appears.
        waiting = [q for q in pending if not q.scheduling_gates]
        self._pending_class = np.asarray([CLASS_INDEX[classify(q)] for q in waiting], dtype=np.int64)
        self._pending_cpu = np.asarray([float(q.nonzero_cpu) for q in waiting], dtype=np.float64)

    def nodes(self) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
        """Live node slots, their names, each one's class CPU shares ([nodes, classes]) and free CPU
        (millicores, allocatable minus requested)."""
        slots = np.flatnonzero(self._snap.live[: len(self._shares)])
        names = [self._snap.node(int(s)).name for s in slots]
        return slots, names, self._shares[slots], self._free_cpu[slots]

    def neighbourhood(self) -> tuple[np.ndarray, np.ndarray]:
        """Aligned with ``nodes()``: how many pods of each class each node runs ([nodes, classes]), and
        one over its allocatable CPU (millicores; 0 where it has none) — what a pod's request adds to the
        share its neighbours feel."""
        slots = np.flatnonzero(self._snap.live[: len(self._shares)])
        return self._counts[slots], self._inv[slots]

    def pending(self) -> tuple[np.ndarray, np.ndarray]:
        """The waiting pods' class indices and CPU requests (millicores, non-zero defaults applied)."""
        return self._pending_class, self._pending_cpu

    def arrivals(self, started: Callable[[Pod], float | None], since: float) -> tuple[np.ndarray, np.ndarray]:
        """The pods the cluster is receiving, as ``pending``: those waiting, then those running that
        started at or after ``since`` (``started``: a pod's start, None when unknown)."""
        recent = [p for _, p in self._pods.values() if (t := started(p)) is not None and t >= since]
        if not recent:
            return self._pending_class, self._pending_cpu
        klass = np.asarray([CLASS_INDEX[classify(p)] for p in recent], dtype=np.int64)
        cpu = np.asarray([float(p.nonzero_cpu) for p in recent], dtype=np.float64)
        return np.concatenate([self._pending_class, klass]), np.concatenate([self._pending_cpu, cpu])

    def pods(self) -> list[Pod]:
        return [p for _, p in self._pods.values()]

    def by_workload(self) -> dict[WorkloadKey, list[Pod]]:
        out: dict[WorkloadKey, list[Pod]] = {}
        for _, p in self._pods.values():
            out.setdefault(workload_of(p), []).append(p)
        return out

    def place(self, pod_key: str) -> PodPlacement | None:
        hit = self._pods.get(pod_key)
        if hit is None:
            return None
        slot, pod = hit
        klass = CLASS_INDEX[classify(pod)]
        row = self._shares[slot].copy()
        row[klass] = max(0.0, row[klass] - float(pod.nonzero_cpu) * self._inv[slot])
        return PodPlacement(pod, self._snap.node(slot).name, workload_of(pod), klass, row)

    def observation(
        self, pod_key: str, metric: str, value: float, goal: Goal, time: float
    ) -> Observation | None:
        """A report of ``pod_key`` with its placement, or None when the pod is not running."""
        p = self.place(pod_key)
        if p is None:
            return None
        return Observation(
            workload=p.workload,
            klass=p.klass,
            metric=metric,
            value=value,
            goal=goal,
            time=time,
            pod=pod_key,
            node=p.node,
            cpu_millis=float(p.pod.requests.get(CPU, 0)),
            memory_bytes=float(p.pod.requests.get(MEMORY, 0)),
            neighbours=p.neighbours,
        )
