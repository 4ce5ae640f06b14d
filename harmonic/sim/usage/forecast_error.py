"""How far the usage model's forecasts were from what pods really used, over the whole horizon.

Each new view of the usage model (refreshed at ``at``, ``step_seconds`` apart) forecasts, per workload,
what one of its pods uses at ``at + step``, ``at + 2 step``, ... — the horizon LoadAware reads for a pod
(``horizonSeconds``). At every tick of the usage truth, each forecast still open whose step falls on the
tick is scored against the truth: the mean CPU actually used (after throttling, before any exporter
delay or noise) by the workload's running pods then. Absolute percentage errors are averaged over every
(forecast, workload, step); ``by_step`` keeps them per step ahead. This is the simulator's yardstick,
unlike ``UsageModel.mape`` (one step ahead, against the next noisy, delayed reading).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping

import numpy as np

from harmonic.signals.identity import WorkloadKey
from harmonic.signals.usage import UsageView


class HorizonError:
    def __init__(self, workload_of: Callable[[str], WorkloadKey | None]) -> None:
        self._workload_of = workload_of
        self._seen_version = -1
        #: Open forecasts: (made at, step seconds, workload -> CPU mean per step).
        self._open: deque[tuple[float, float, dict[WorkloadKey, np.ndarray]]] = deque()
        self.sum_by_step = np.zeros(0)
        self.count_by_step = np.zeros(0, dtype=np.int64)

    def observe(self, now: float, pods: list[str], pod_cpu: np.ndarray, view: UsageView) -> None:
        """Open the view's forecast (once per version), then score the open forecasts due at ``now``
        against the pods' CPU use."""
        if view.version != self._seen_version and view.fresh and view.at is not None and view.workloads:
            self._seen_version = view.version
            self._open.append(
                (view.at, view.step_seconds, {k: np.asarray(f.cpu.mean) for k, f in view.workloads.items()})
            )
        truth = self._per_pod_mean(pods, pod_cpu)
        still: deque[tuple[float, float, dict[WorkloadKey, np.ndarray]]] = deque()
        for at, step, forecasts in self._open:
            j = round((now - at) / step) - 1
            horizon = max((len(m) for m in forecasts.values()), default=0)
            if j >= horizon:
                continue
            if j >= 0 and abs(at + (j + 1) * step - now) < step / 2:
                self._score(j, forecasts, truth)
            still.append((at, step, forecasts))
        self._open = still

    def _per_pod_mean(self, pods: list[str], pod_cpu: np.ndarray) -> dict[WorkloadKey, float]:
        sums: dict[WorkloadKey, list[float]] = {}
        for key, cpu in zip(pods, pod_cpu.tolist(), strict=True):
            wk = self._workload_of(key)
            if wk is not None:
                acc = sums.setdefault(wk, [0.0, 0.0])
                acc[0] += cpu
                acc[1] += 1
        return {k: s / n for k, (s, n) in sums.items()}

    def _score(
        self, j: int, forecasts: Mapping[WorkloadKey, np.ndarray], truth: Mapping[WorkloadKey, float]
    ) -> None:
        if j >= len(self.sum_by_step):
            grow = j + 1 - len(self.sum_by_step)
            self.sum_by_step = np.concatenate([self.sum_by_step, np.zeros(grow)])
            self.count_by_step = np.concatenate([self.count_by_step, np.zeros(grow, dtype=np.int64)])
        for key, mean in forecasts.items():
            actual = truth.get(key)
            if actual is None or actual <= 0 or j >= len(mean):
                continue
            self.sum_by_step[j] += abs(float(mean[j]) - actual) / actual
            self.count_by_step[j] += 1

    def summary(self) -> dict[str, object] | None:
        n = int(self.count_by_step.sum())
        if not n:
            return None
        scored = self.count_by_step > 0
        by_step = self.sum_by_step[scored] / self.count_by_step[scored]
        return {
            "mean": round(float(self.sum_by_step.sum() / n), 6),
            "first_step": round(float(by_step[0]), 6),
            "last_step": round(float(by_step[-1]), 6),
            "steps": int(scored.sum()),
        }
