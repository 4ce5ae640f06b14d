"""LoadVariationRiskBalancing (scheduler-plugins Trimaran) — Score.

Balances the risk of load variation: per resource (CPU, memory), with ``mu = (measured mean + pod
request) / capacity`` and ``sigma = measured stdev / capacity`` (both clipped to 0..1),

    risk = (mu + margin * sigma^(1 / sensitivity)) / 2,     score = (1 - risk) * 100

and the node's score is the lower of the CPU and memory scores when both have metrics (the one
present otherwise), rounded. A node without metrics scores 0. NormalizeScore does nothing.

Args (LoadVariationRiskBalancingArgs): ``safeVarianceMargin`` (default 1; negative means the
default), ``safeVarianceSensitivity`` (default 1; negative means the default), ``metricProvider``,
``watcherAddress`` (TrimaranSpec).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import field_validator

from harmonic.api.pod import Pod
from harmonic.api.resources import CPU, MEMORY
from harmonic.framework.args import PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import MAX_NODE_SCORE, ScorePlugin
from harmonic.framework.services import Need
from harmonic.framework.snapshot import CPU_COL, MEMORY_COL, Snapshot
from harmonic.plugins.trimaran.common import USAGE_NEEDS, TrimaranSpec, UsageReader
from harmonic.signals.usage import USAGE_FALLBACKS

DEFAULT_SAFE_VARIANCE_MARGIN = 1.0
DEFAULT_SAFE_VARIANCE_SENSITIVITY = 1.0
_MB = 1.0 / 1024 / 1024


class LoadVariationRiskBalancingArgs(TrimaranSpec):
    safe_variance_margin: float = DEFAULT_SAFE_VARIANCE_MARGIN
    safe_variance_sensitivity: float = DEFAULT_SAFE_VARIANCE_SENSITIVITY

    @field_validator("safe_variance_margin")
    @classmethod
    def _margin(cls, v: float) -> float:
        return v if v >= 0 else DEFAULT_SAFE_VARIANCE_MARGIN

    @field_validator("safe_variance_sensitivity")
    @classmethod
    def _sensitivity(cls, v: float) -> float:
        return v if v >= 0 else DEFAULT_SAFE_VARIANCE_SENSITIVITY


def risk_scores(
    used_avg: np.ndarray,
    used_std: np.ndarray,
    req: float,
    capacity: np.ndarray,
    margin: float,
    sensitivity: float,
) -> np.ndarray:
    """Upstream's computeScore per node (float, 0..100); 0 where capacity <= 0."""
    cap = np.maximum(capacity, 0.0)
    safe = np.where(cap > 0, cap, 1.0)
    avg = np.clip(used_avg, 0.0, cap)
    std = np.clip(used_std, 0.0, cap)
    mu = np.clip((avg + max(req, 0.0)) / safe, 0.0, 1.0)
    sigma = np.clip(std / safe, 0.0, 1.0)
    if sensitivity >= 0:
        with np.errstate(divide="ignore"):
            sigma = (
                np.power(sigma, 1.0 / sensitivity) if sensitivity > 0 else np.where(sigma >= 1.0, 1.0, 0.0)
            )
    sigma = np.clip(sigma * margin, 0.0, 1.0)
    risk = (mu + sigma) / 2
    return np.where(cap > 0, (1.0 - risk) * MAX_NODE_SCORE, 0.0)


class LoadVariationRiskBalancing(ScorePlugin):
    NAME: ClassVar[str] = "LoadVariationRiskBalancing"
    Args: ClassVar[type[PluginArgs]] = LoadVariationRiskBalancingArgs
    NEEDS: ClassVar[tuple[Need, ...]] = USAGE_NEEDS

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.cfg: LoadVariationRiskBalancingArgs = args
        self.reader = UsageReader(handle)

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        view = self.reader.view()
        if not view.nodes:
            USAGE_FALLBACKS.labels(self.NAME, view.reason or "no metrics").inc()
            return np.zeros(len(slots), dtype=np.int64)
        u = self.reader.arrays(view, snap)
        margin, sens = self.cfg.safe_variance_margin, self.cfg.safe_variance_sensitivity
        cpu = risk_scores(
            u.cpu[slots], u.cpu_std[slots], float(pod.requests.get(CPU, 0)),
            snap.allocatable[slots, CPU_COL].astype(np.float64), margin, sens,
        )  # fmt: skip
        mem = risk_scores(
            u.memory[slots] * _MB, u.memory_std[slots] * _MB, float(pod.requests.get(MEMORY, 0)) * _MB,
            snap.allocatable[slots, MEMORY_COL].astype(np.float64) * _MB, margin, sens,
        )  # fmt: skip
        scores = np.floor(np.minimum(cpu, mem) + 0.5).astype(np.int64)
        has = u.has[slots]
        if not has.all():
            USAGE_FALLBACKS.labels(self.NAME, "node without metrics").inc()
        return np.where(has, scores, 0)
