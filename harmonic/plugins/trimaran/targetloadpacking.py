"""TargetLoadPacking (scheduler-plugins Trimaran) — Score, Reserve/Unreserve.

Best-fit packing around a target CPU utilisation. For each node, the predicted utilisation is

    U = 100 * (measured CPU + the pod's predicted CPU + pods assigned since the metrics) / capacity

with the pod's CPU predicted per container as its limit, else request x ``defaultRequestsMultiplier``,
else ``defaultRequests.cpu`` (plus the pod's CPU overhead). The score rises from ``targetUtilization``
at an idle node to 100 at the target, ``round((100 - T) * U / T + T)``, then falls as
``round(T * (100 - U) / (100 - T))`` past it, and is 0 above 100%. A node without metrics scores 0
(upstream avoids it). NormalizeScore does nothing. Pods assigned since the metrics window's end (or
within 60 s before it) are added at their predicted CPU (upstream's ``PodAssignEventHandler``; Reserve
records them here).

Args (TargetLoadPackingArgs): ``targetUtilization`` (percent, default 40; <= 0 means the default),
``defaultRequests`` (default ``cpu: 1000m``), ``defaultRequestsMultiplier`` (a string, default
``"1.5"``), ``metricProvider`` and ``watcherAddress`` (TrimaranSpec, ``common``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import Field, field_validator

from harmonic.api.pod import Pod
from harmonic.api.quantity import QuantityError, parse_quantity
from harmonic.framework.args import PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import ReservePlugin, ScorePlugin
from harmonic.framework.services import Need
from harmonic.framework.snapshot import CPU_COL, Snapshot
from harmonic.framework.status import Status
from harmonic.plugins.trimaran.common import (
    METRICS_AGENT_REPORTING_INTERVAL,
    USAGE_NEEDS,
    AssignedPods,
    TrimaranSpec,
    UsageReader,
    predicted_cpu,
)
from harmonic.signals.usage import USAGE_FALLBACKS

DEFAULT_TARGET_UTILIZATION = 40
DEFAULT_REQUESTS_MILLICORES = 1000
DEFAULT_REQUESTS_MULTIPLIER = "1.5"
#: How often the assigned-pods cache drops entries older than the reporting interval (cacheCleanupIntervalMinutes).
CACHE_CLEANUP_SECONDS = 300.0


class TargetLoadPackingArgs(TrimaranSpec):
    target_utilization: int = DEFAULT_TARGET_UTILIZATION
    default_requests: dict[str, str] = Field(
        default_factory=lambda: {"cpu": f"{DEFAULT_REQUESTS_MILLICORES}m"}
    )
    default_requests_multiplier: str = DEFAULT_REQUESTS_MULTIPLIER

    @field_validator("target_utilization")
    @classmethod
    def _target(cls, v: int) -> int:
        if v > 100:
            raise ValueError("must be a percentage in 1..100")
        return v if v > 0 else DEFAULT_TARGET_UTILIZATION

    @field_validator("default_requests_multiplier")
    @classmethod
    def _multiplier(cls, v: str) -> str:
        try:
            float(v)
        except ValueError:
            raise ValueError(f"unable to parse {v!r} as a number") from None
        return v

    @field_validator("default_requests")
    @classmethod
    def _requests(cls, v: dict[str, str]) -> dict[str, str]:
        for name, q in v.items():
            try:
                parse_quantity(str(q))
            except QuantityError as e:
                raise ValueError(f"{name}: {e}") from None
        return v

    @property
    def default_cpu_millis(self) -> int:
        cpu = self.default_requests.get("cpu")
        return int(parse_quantity(str(cpu)) * 1000) if cpu is not None else 0


def target_load_packing_scores(predicted_percent: np.ndarray, target: int) -> np.ndarray:
    """Upstream's piecewise score of the predicted utilisation (percent), rounded half away from zero."""
    u = predicted_percent
    t = float(target)
    rising = np.floor((100 - t) * u / t + t + 0.5)
    falling = np.floor(t * (100 - u) / (100 - t) + 0.5) if t < 100 else np.zeros_like(u)
    out = np.where(u > t, falling, rising)
    return np.where(u > 100, 0, out).astype(np.int64)


class TargetLoadPacking(ScorePlugin, ReservePlugin):
    NAME: ClassVar[str] = "TargetLoadPacking"
    Args: ClassVar[type[PluginArgs]] = TargetLoadPackingArgs
    NEEDS: ClassVar[tuple[Need, ...]] = USAGE_NEEDS

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.cfg: TargetLoadPackingArgs = args
        self.multiplier = float(args.default_requests_multiplier)
        self.reader = UsageReader(handle)
        self.assigned = AssignedPods()
        self._last_cleanup = 0.0

    def _predict(self, pod: Pod) -> int:
        return predicted_cpu(pod, self.cfg.default_cpu_millis, self.multiplier)

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        view = self.reader.view()
        now = self.handle.clock.now()
        if now - self._last_cleanup >= CACHE_CLEANUP_SECONDS:
            self.assigned.cleanup(now, METRICS_AGENT_REPORTING_INTERVAL)
            self._last_cleanup = now
        if not view.nodes:
            USAGE_FALLBACKS.labels(self.NAME, view.reason or "no metrics").inc()
            return np.zeros(len(slots), dtype=np.int64)
        usage = self.reader.arrays(view, snap)
        # Upstream divides by the node's capacity; allocatable is what the snapshot keeps.
        cap = snap.allocatable[slots, CPU_COL].astype(np.float64)
        missing = self.assigned.missing(view.at, snap.capacity)[slots]
        total = usage.cpu[slots] + self._predict(pod) + missing
        percent = np.divide(100 * total, cap, out=np.zeros(len(slots)), where=cap != 0)
        scores = target_load_packing_scores(percent, self.cfg.target_utilization)
        has = usage.has[slots]
        if not has.all():
            USAGE_FALLBACKS.labels(self.NAME, "node without metrics").inc()
        return np.where(has, scores, 0)

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        slot = self.handle.snapshot.slot_of.get(node_name)
        if slot is not None:
            self.assigned.add(self.handle.clock.now(), slot, self._predict(pod), pod.uid)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self.assigned.remove(pod.uid)
