"""One report of how well a workload flourishes, stored with the placement and resources in force.

An observation is what an application said (``value`` of ``metric``, better when lower with goal
``minimize`` — a latency — or higher with ``maximize`` — a throughput) together with what the feedback
loop knew of the world when it arrived: the pod's node, its CPU and memory requests, and the CPU share
of that node held by each workload class other than the pod itself (``neighbours``, indexed by
``harmonic.signals.classes.CLASS_INDEX``). The learner regresses values on those shares; the right-sizer
reads the requests. ``check_value`` is the one gate every intake path goes through, so an absurd value
(NaN, infinities, 1e308, a negative latency) is rejected, never learnt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from harmonic.signals.identity import WorkloadKey

Goal = Literal["minimize", "maximize"]
GOALS: tuple[Goal, ...] = ("minimize", "maximize")
#: Largest value accepted: beyond this no latency, throughput or ratio an application reports is real.
MAX_VALUE = 1e12


class BadValue(ValueError):
    """A reported value the loop must not learn from; the message says why."""


def check_value(value: object) -> float:
    """The value as a float, or ``BadValue`` when it is not a finite number in [0, MAX_VALUE].

    Negative values are refused because every flourish metric the loop handles (latencies, rates,
    ratios) is non-negative; a goal decides the direction, not the sign."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise BadValue(f"must be a number, got {type(value).__name__}")
    try:
        v = float(value)
    except ValueError:
        raise BadValue(f"must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise BadValue(f"must be finite, got {value!r}")
    if v < 0:
        raise BadValue(f"must be >= 0, got {v!r}")
    if v > MAX_VALUE:
        raise BadValue(f"must be <= {MAX_VALUE:g}, got {v!r}")
    return v


@dataclass(frozen=True, slots=True)
class Observation:
    workload: WorkloadKey
    #: Workload class index (``CLASS_INDEX``) of the reporting pod.
    klass: int
    metric: str
    value: float
    goal: Goal
    time: float
    pod: str = ""
    node: str = ""
    cpu_millis: float = 0.0
    memory_bytes: float = 0.0
    #: CPU share of the node held by each class, the pod itself excluded ([classes]).
    neighbours: np.ndarray | None = None

    @property
    def cost(self) -> float:
        """The value turned so that larger is worse: itself for ``minimize``, its inverse for
        ``maximize`` (time per unit of work, which slows down the way latency does)."""
        if self.goal == "minimize":
            return self.value
        return 1.0 / self.value if self.value > 0 else math.inf
