"""The interference pods really suffer from their neighbours (the model is in ``truth.config``).

The truth decides each pod's class by its own rules, from what the simulator knows of the workload —
not from the annotations or heuristics a scheduler reads: a ``groundTruth.workloads`` entry first; a
DaemonSet's pods are ``general``; Deployments, ReplicaSets and StatefulSets serve requests
(``latency-critical``); a Job's pods are ``batch-memory`` above ``MEMORY_BOUND_BYTES_PER_CORE`` of memory
per requested core, else ``batch-cpu``; a bare pod without requests is ``best-effort``, else ``general``.
"""

from __future__ import annotations

import fnmatch
import random
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from harmonic.sim.truth.config import TRUTH_CLASSES, GroundTruth, WorkloadTruth

LATENCY_CRITICAL = TRUTH_CLASSES.index("latency-critical")
#: Above this much memory per requested core a Job is memory-bandwidth bound (the truth's threshold;
#: schedulers guess their own).
MEMORY_BOUND_BYTES_PER_CORE = 4 * 2**30
_SERVING = ("Deployment", "ReplicaSet", "StatefulSet")


@dataclass(frozen=True, slots=True)
class PodTruth:
    """What the truth knows of one running pod."""

    workload: str
    klass: int
    cpu_millis: float
    multiplier: float


def workload_matches(pattern: str, workload: str) -> bool:
    """``workload`` is ``Kind/namespace/name``; a pattern is ``namespace/name`` or ``Kind/namespace/name``,
    with shell wildcards."""
    target = workload if pattern.count("/") >= 2 else workload.split("/", 1)[-1]
    return fnmatch.fnmatchcase(target, pattern)


class Interference:
    def __init__(self, truth: GroundTruth, seed: int) -> None:
        self.truth = truth
        self.seed = seed
        self.pressure = np.asarray([truth.pressure_of(c) for c in TRUTH_CLASSES], dtype=np.float64)
        self.sensitivity = np.asarray([truth.sensitivity_of(c) for c in TRUTH_CLASSES], dtype=np.float64)
        self._overrides: list[WorkloadTruth] = list(truth.workloads)
        self._multipliers: dict[str, float] = {}
        self._override_of: dict[str, WorkloadTruth | None] = {}

    def _override(self, workload: str) -> WorkloadTruth | None:
        if workload not in self._override_of:
            self._override_of[workload] = next(
                (o for o in self._overrides if workload_matches(o.workload, workload)), None
            )
        return self._override_of[workload]

    def multiplier(self, workload: str) -> float:
        """The workload's own sensitivity: its override, else a lognormal draw of mean 1 fixed by the
        seed and the workload's name (so every profile's world sees the same value)."""
        hit = self._multipliers.get(workload)
        if hit is None:
            o = self._override(workload)
            sigma = self.truth.workload_sensitivity_spread
            if o is not None and o.sensitivity is not None:
                hit = o.sensitivity
            elif sigma > 0:
                hit = random.Random(f"{self.seed}:{workload}").lognormvariate(-sigma * sigma / 2, sigma)
            else:
                hit = 1.0
            self._multipliers[workload] = hit
        return hit

    def classify(self, workload: str, daemon: bool, cpu_millis: float, memory_bytes: float) -> int:
        o = self._override(workload)
        if o is not None and o.class_ is not None:
            return TRUTH_CLASSES.index(o.class_)
        kind = workload.split("/", 1)[0]
        if daemon:
            name = "general"
        elif kind in _SERVING:
            name = "latency-critical"
        elif kind == "Job":
            bound = cpu_millis > 0 and memory_bytes * 1000 / cpu_millis > MEMORY_BOUND_BYTES_PER_CORE
            name = "batch-memory" if bound or (cpu_millis <= 0 < memory_bytes) else "batch-cpu"
        elif cpu_millis <= 0 and memory_bytes <= 0:
            name = "best-effort"
        else:
            name = "general"
        return TRUTH_CLASSES.index(name)

    def pod(self, workload: str, daemon: bool, cpu_millis: float, memory_bytes: float) -> PodTruth:
        return PodTruth(
            workload,
            self.classify(workload, daemon, cpu_millis, memory_bytes),
            cpu_millis,
            self.multiplier(workload),
        )

    def slowdowns(
        self,
        pods: Iterable[tuple[int, PodTruth]],
        alloc_millis: np.ndarray,
        pressure_scale: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(slowdown of each pod, its class) for pods given as (node index, truth), with the nodes'
        allocatable CPU. ``pressure_scale`` multiplies the pressure matrix entry by entry (the
        perturbed worlds)."""
        rows = list(pods)
        if not rows:
            return np.zeros(0), np.zeros(0, dtype=np.int64)
        node = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        klass = np.fromiter((r[1].klass for r in rows), dtype=np.int64, count=len(rows))
        cpu = np.fromiter((r[1].cpu_millis for r in rows), dtype=np.float64, count=len(rows))
        mult = np.fromiter((r[1].multiplier for r in rows), dtype=np.float64, count=len(rows))
        return self.slowdown_arrays(node, klass, cpu, mult, alloc_millis, pressure_scale), klass

    def slowdown_arrays(
        self,
        node: np.ndarray,
        klass: np.ndarray,
        cpu: np.ndarray,
        mult: np.ndarray,
        alloc_millis: np.ndarray,
        pressure_scale: np.ndarray | None = None,
    ) -> np.ndarray:
        pressure = self.pressure if pressure_scale is None else self.pressure * pressure_scale
        inv = np.divide(1.0, alloc_millis, out=np.zeros(len(alloc_millis)), where=alloc_millis > 0)
        share = cpu * inv[node]
        own = pressure[klass] * share[:, None]
        total = np.zeros((len(alloc_millis), 3))
        np.add.at(total, node, own)
        neighbours = np.clip(total[node] - own, 0.0, None)
        conv = self.truth.convexity
        per_resource = self.sensitivity[klass] * neighbours * (1.0 + conv * neighbours)
        out: np.ndarray = mult * per_resource.sum(axis=1)
        return out


def perturbations(seed: int) -> dict[str, np.ndarray]:
    """Pressure-matrix multipliers of the perturbed worlds reported beside the truth: every entry x0.5,
    every entry x2, and each entry independently x0.5 or x2 (drawn from the seed)."""
    n = len(TRUTH_CLASSES)
    rng = random.Random(f"perturb:{seed}")
    mixed = np.asarray([[rng.choice((0.5, 2.0)) for _ in range(3)] for _ in range(n)])
    return {"x0.5": np.full((n, 3), 0.5), "x2": np.full((n, 3), 2.0), "mixed": mixed}
