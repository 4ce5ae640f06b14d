"""The VPA-style baseline recommender: what the Vertical Pod Autoscaler's recommender would say.

As upstream's recommender (kubernetes/autoscaler, vertical-pod-autoscaler/pkg/recommender): CPU usage
samples go into a decaying histogram with exponential buckets (the first 0.01 cores wide, each 5%
wider than the last), each sample weighted by the container's CPU request (at least 0.1 core) and by
``2^(t / halfLife)`` with a half-life of 24 hours, so recent samples count more; memory goes in as the
peak of each 24-hour aggregation window, into a histogram of the same kind (first bucket 10 MB). The
target is the 90th percentile of each (the upper edge of the bucket reaching it) plus a 15% safety
margin, at least 25 millicores and 250 MiB per pod. It sees usage only: never the application's SLO,
which is what Harmonic's right-sizer (``rightsizing``) adds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from harmonic.signals.identity import WorkloadKey

#: Upstream's defaults (recommender flags and model constants).
TARGET_PERCENTILE = 0.9
SAFETY_MARGIN = 0.15
HALF_LIFE_SECONDS = 24 * 3600.0
MEMORY_AGGREGATION_SECONDS = 24 * 3600.0
MIN_CPU_MILLIS = 25.0
MIN_MEMORY_BYTES = 250 * 1024 * 1024.0
MIN_SAMPLE_WEIGHT = 0.1
_CPU_FIRST_BUCKET = 0.01  # cores
_CPU_MAX = 1000.0
_MEMORY_FIRST_BUCKET = 1e7  # bytes
_MEMORY_MAX = 1e12
_BUCKET_GROWTH = 0.05


class DecayingHistogram:
    """Weights in exponentially growing buckets; a sample at time ``t`` weighs ``w * 2^(t/halfLife)``
    relative to the reference time, so older samples fade without being rewritten."""

    def __init__(self, first_bucket: float, max_value: float, half_life: float = HALF_LIFE_SECONDS) -> None:
        ratio = 1.0 + _BUCKET_GROWTH
        n = math.ceil(math.log(max_value * (ratio - 1) / first_bucket + 1, ratio)) + 1
        #: Bucket i covers [start[i], start[i + 1]).
        self.start = first_bucket * (ratio ** np.arange(n + 1) - 1) / (ratio - 1)
        self.weights = np.zeros(n)
        self.half_life = half_life
        self.reference = 0.0

    def add(self, value: float, weight: float, time: float) -> None:
        if not math.isfinite(value) or value < 0 or weight <= 0:
            return
        if time - self.reference > 100 * self.half_life:
            # Keep the exponent bounded: rescale to a newer reference (upstream shifts it likewise).
            shift = 2.0 ** ((self.reference - time) / self.half_life)
            self.weights *= shift
            self.reference = time
        i = int(np.searchsorted(self.start, value, side="right")) - 1
        i = min(max(i, 0), len(self.weights) - 1)
        self.weights[i] += weight * 2.0 ** ((time - self.reference) / self.half_life)

    def percentile(self, p: float) -> float | None:
        total = float(self.weights.sum())
        if total <= 0:
            return None
        cum = np.cumsum(self.weights)
        i = int(np.searchsorted(cum, p * total, side="left"))
        i = min(i, len(self.weights) - 1)
        return float(self.start[i + 1])


@dataclass
class _Workload:
    cpu: DecayingHistogram = field(default_factory=lambda: DecayingHistogram(_CPU_FIRST_BUCKET, _CPU_MAX))
    memory: DecayingHistogram = field(
        default_factory=lambda: DecayingHistogram(_MEMORY_FIRST_BUCKET, _MEMORY_MAX)
    )
    window_start: float | None = None
    window_peak: float = 0.0


@dataclass(frozen=True)
class Target:
    cpu_millis: float
    memory_bytes: float


class VpaRecommender:
    """Per workload: P90 of the decaying CPU usage histogram and of the memory peaks, plus 15%."""

    def __init__(self) -> None:
        self._workloads: dict[WorkloadKey, _Workload] = {}

    def add(
        self, workload: WorkloadKey, cpu_millis: float, memory_bytes: float, cpu_request: float, time: float
    ) -> None:
        """One pod's usage sample (CPU in millicores, working set in bytes) with its CPU request."""
        w = self._workloads.setdefault(workload, _Workload())
        w.cpu.add(cpu_millis / 1000.0, max(cpu_request / 1000.0, MIN_SAMPLE_WEIGHT), time)
        if w.window_start is None or time - w.window_start >= MEMORY_AGGREGATION_SECONDS:
            w.window_start, w.window_peak = time, 0.0
        if memory_bytes > w.window_peak:
            # The window's peak replaces its previous, lower peak (upstream subtracts the old one).
            if w.window_peak > 0:
                _remove(w.memory, w.window_peak, w.window_start)
            w.window_peak = memory_bytes
            w.memory.add(memory_bytes, 1.0, w.window_start)

    def target(self, workload: WorkloadKey) -> Target | None:
        w = self._workloads.get(workload)
        if w is None:
            return None
        cpu = w.cpu.percentile(TARGET_PERCENTILE)
        mem = w.memory.percentile(TARGET_PERCENTILE)
        if cpu is None:
            return None
        return Target(
            max(cpu * 1000.0 * (1 + SAFETY_MARGIN), MIN_CPU_MILLIS),
            max((mem or 0.0) * (1 + SAFETY_MARGIN), MIN_MEMORY_BYTES),
        )


def _remove(h: DecayingHistogram, value: float, time: float) -> None:
    i = int(np.searchsorted(h.start, value, side="right")) - 1
    i = min(max(i, 0), len(h.weights) - 1)
    h.weights[i] = max(0.0, h.weights[i] - 2.0 ** ((time - h.reference) / h.half_life))
