"""The dissonance model: how much co-located workload classes slow each other down.

``matrix[victim][aggressor]`` is the fractional slowdown a pod of class *victim* suffers when pods of
class *aggressor* occupy a whole node's CPU (0.5 = 50% longer latency or runtime). Interference is
taken as proportional to how much of the node the aggressors hold (their CPU requests over the node's
allocatable CPU), and additive across aggressor classes. Predicted slowdown of a pod on a node:

    slowdown(victim, node) = sum over classes k of matrix[victim][k] * intensity_k(node)

The defaults are order-of-magnitude values read from published interference measurements on shared
servers: Lo et al., *Heracles* (ISCA 2015) — tail latency of latency-critical services under DRAM
bandwidth, LLC, hyperthread, power and network antagonists rises from tens of percent (CPU/hyperthread)
to several-fold (memory bandwidth) at high load; Mars et al., *Bubble-Up* (MICRO 2011) — 20-40%
degradation of web-search-like services beside memory-intensive co-runners; Delimitrou & Kozyrakis,
*Paragon* (ASPLOS 2013) and Zhang et al., *CPI²* (EuroSys 2013) — memory and cache contention as the
dominant sources, I/O and network contention mattering for I/O-bound work. They are a prior: args
override any entry, and the feedback loop is meant to learn them from applications' own reports.
``importance`` says how much a class's slowdown matters when scoring (latency-critical most).

A workload may suffer differently from its class (one service three times as sensitive): the feedback
loop publishes such a workload's own learnt row in ``workload_rows``, and ``victim_row`` gives a pod
that row instead of its class's, so the suffering part of a score follows the workload. ``evidence``
marks the entries the loop's reports have pinned down, for a filter that refuses on evidence only.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from harmonic.api.pod import Pod
from harmonic.framework.services import ServiceKey
from harmonic.signals.classes import CLASS_INDEX, CLASSES, WorkloadClass
from harmonic.signals.identity import WorkloadKey, workload_of

LC, BC, BM, BI, BE, G = (
    WorkloadClass.LATENCY_CRITICAL,
    WorkloadClass.BATCH_CPU,
    WorkloadClass.BATCH_MEMORY,
    WorkloadClass.BATCH_IO,
    WorkloadClass.BEST_EFFORT,
    WorkloadClass.GENERAL,
)

#: victim -> aggressor -> slowdown at full-node intensity.
DEFAULT_MATRIX: dict[WorkloadClass, dict[WorkloadClass, float]] = {
    LC: {LC: 0.10, BC: 0.50, BM: 1.50, BI: 0.40, BE: 0.20, G: 0.15},
    BC: {LC: 0.05, BC: 0.20, BM: 0.40, BI: 0.10, BE: 0.10, G: 0.05},
    BM: {LC: 0.05, BC: 0.30, BM: 0.80, BI: 0.10, BE: 0.10, G: 0.05},
    BI: {LC: 0.05, BC: 0.05, BM: 0.10, BI: 0.60, BE: 0.05, G: 0.05},
    BE: {LC: 0.00, BC: 0.00, BM: 0.00, BI: 0.00, BE: 0.00, G: 0.00},
    G: {LC: 0.05, BC: 0.20, BM: 0.40, BI: 0.20, BE: 0.05, G: 0.05},
}
DEFAULT_IMPORTANCE: dict[WorkloadClass, float] = {LC: 1.0, BC: 0.25, BM: 0.25, BI: 0.25, BE: 0.0, G: 0.25}


class DissonanceModel:
    """Class x class slowdown matrix (numpy, indexed by ``CLASS_INDEX``) with per-class importance."""

    def __init__(
        self,
        overrides: Mapping[str, Mapping[str, float]] | None = None,
        importance: Mapping[str, float] | None = None,
    ) -> None:
        n = len(CLASSES)
        self.version = 0
        self.matrix = np.zeros((n, n), dtype=np.float64)
        for victim, row in DEFAULT_MATRIX.items():
            for aggressor, x in row.items():
                self.matrix[CLASS_INDEX[victim], CLASS_INDEX[aggressor]] = x
        for victim_name, overrides_row in (overrides or {}).items():
            for aggressor_name, x in overrides_row.items():
                self.set(victim_name, aggressor_name, x)
        self.importance = np.asarray([DEFAULT_IMPORTANCE[c] for c in CLASSES], dtype=np.float64)
        for c, x in (importance or {}).items():
            if x < 0:
                raise ValueError(f"importance of {c!r} must be >= 0")
            self.importance[CLASS_INDEX[_cls(c)]] = x
        #: Workloads whose own learnt row departs from their class's (set by the feedback loop).
        self.workload_rows: dict[WorkloadKey, np.ndarray] = {}
        #: Entries the feedback loop's reports have pinned down (its posterior far narrower than the
        #: prior); all False for a model nobody learns.
        self.evidence = np.zeros((n, n), dtype=bool)
        self.version += 1

    def victim_row(self, pod: Pod, klass: int) -> tuple[WorkloadKey | None, np.ndarray]:
        """The row a pod of class index ``klass`` suffers by, and the workload it is the row of (None
        for its class's row)."""
        if self.workload_rows:
            key = workload_of(pod)
            row = self.workload_rows.get(key)
            if row is not None:
                return key, row
        return None, self.matrix[klass]

    def set(self, victim: str, aggressor: str, slowdown: float) -> None:
        if not 0 <= slowdown <= 100:
            raise ValueError(f"slowdown {victim}<-{aggressor} must be in [0, 100], got {slowdown}")
        self.matrix[CLASS_INDEX[_cls(victim)], CLASS_INDEX[_cls(aggressor)]] = slowdown
        self.version += 1

    def slowdown(self, victim: WorkloadClass, intensity: np.ndarray) -> np.ndarray:
        """Predicted slowdown of a ``victim`` pod on nodes whose per-class intensities are the rows
        of ``intensity`` ([nodes, classes], fraction of node CPU held by each class)."""
        return intensity @ self.matrix[CLASS_INDEX[victim]]

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {
            str(v): {str(a): float(self.matrix[i, j]) for j, a in enumerate(CLASSES)}
            for i, v in enumerate(CLASSES)
        }


def _cls(name: str) -> WorkloadClass:
    try:
        return WorkloadClass(name)
    except ValueError:
        raise ValueError(f"unknown workload class {name!r}; one of {', '.join(CLASSES)}") from None


#: The handle service of the model the feedback loop learns (``feedback``), read by the Dissonance plugin.
DISSONANCE: ServiceKey[DissonanceModel] = ServiceKey(
    "dissonance", "the dissonance model the feedback loop learns"
)
