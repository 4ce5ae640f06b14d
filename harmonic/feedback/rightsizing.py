"""Right-sizing: the smallest CPU request that keeps a workload's SLO, found from its own reports.

Each round, per workload with an SLO (``harmonic.dev/flourish-target``), the right-sizer looks at the
reports made under the request now in force (``Observation.cpu_millis``) since it was set, and at the
pods' observed CPU and memory use:

- **Regression** — the ``sloQuantile`` quantile of their costs (the flourish value, inverted for
  ``maximize``; 0.95 by default, so the SLO holds for 19 reports in 20) is above the target: after a
  cut, *revert* to the last request that kept the SLO, remember the failed one as a floor never to be
  reached again and halve the step; with no cut to undo, grow — by ``maxStepUp`` while no request is
  known to keep the SLO, by twice the search's step once one was (it no longer is).
- **Comfortable** — that quantile at most ``(1 - sloMargin)`` of the target: the request is remembered as
  good and cut by the step (at first ``maxStepDown``), never to or below a failed request, never below
  the pods' observed peak use over ``maxUtilization``, and not at all once the step is under
  ``minStep`` (converged).
- Otherwise hold: the SLO holds with little room.

A bisection between the largest failing and the smallest good request, then, with the flourish metric
as the judge; the guardrails bound it: ``minCpu``/``maxCpu``, the step limits, ``cooldownSeconds``
between changes of a workload, and a round is judged only on ``minReports`` reports. Memory does not
show in the flourish metric, so it follows use: the peak working set plus ``memoryMargin``, cut by at
most ``maxStepDown`` a round, raised at once when use nears the request. A workload without an SLO gets
the VPA-style recommendation (``vpa``) — usage only.

Every decision is logged with its reason (``harmonic model --explain``).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np
from pydantic import Field, model_validator

from harmonic.feedback.vpa import MIN_CPU_MILLIS, MIN_MEMORY_BYTES, VpaRecommender
from harmonic.framework.args import PluginArgs
from harmonic.signals.identity import WorkloadKey


class RightSizingArgs(PluginArgs):
    min_cpu: float = Field(default=MIN_CPU_MILLIS, gt=0, description="millicores")
    max_cpu: float = Field(default=64_000.0, gt=0, description="millicores")
    min_memory: float = Field(default=MIN_MEMORY_BYTES, gt=0, description="bytes")
    max_memory: float = Field(default=256 * 2.0**30, gt=0, description="bytes")
    max_step_down: float = Field(default=0.3, gt=0, lt=1)
    max_step_up: float = Field(default=0.5, gt=0, le=4)
    min_step: float = Field(default=0.04, gt=0, lt=1)
    cooldown_seconds: float = Field(default=300.0, ge=0)
    slo_margin: float = Field(default=0.05, ge=0, lt=1)
    slo_quantile: float = Field(default=0.95, gt=0, lt=1)
    min_reports: int = Field(default=5, ge=1)
    #: Reports after a cut enough to revert it between rounds: a probe below the smallest request
    #: breaks the SLO in every report it gets, so waiting for ``minReports`` only adds violations.
    revert_reports: int = Field(default=3, ge=1)
    #: A cut never takes the request below the pods' peak observed CPU use over this: work queues
    #: without bound as use nears the request, so a probe there only breaks the SLO.
    max_utilization: float = Field(default=0.8, gt=0, le=1)
    memory_margin: float = Field(default=0.15, ge=0, le=4)

    @model_validator(mode="after")
    def _bounds(self) -> RightSizingArgs:
        if self.min_cpu > self.max_cpu:
            raise ValueError("minCpu must be <= maxCpu")
        if self.min_memory > self.max_memory:
            raise ValueError("minMemory must be <= maxMemory")
        if self.min_step > self.max_step_down:
            raise ValueError("minStep must be <= maxStepDown")
        return self


@dataclass(frozen=True)
class RoundInput:
    """What one round knows of a workload: its requests in force, the costs its pods reported under
    them since they were set, its SLO (a cost; None without one) and its pods' observed use."""

    workload: WorkloadKey
    cpu_request: float
    memory_request: float
    costs: tuple[float, ...]
    target: float | None
    cpu_use: tuple[float, ...]
    memory_use: tuple[float, ...]
    #: The reports are of a ``maximize`` metric (costs are 1 / value): the log then speaks in values.
    maximize: bool = False


@dataclass(frozen=True)
class Decision:
    time: float
    workload: str
    cpu_from: float
    cpu_to: float
    memory_from: float
    memory_to: float
    reason: str

    @property
    def changes(self) -> bool:
        return not (
            math.isclose(self.cpu_from, self.cpu_to, rel_tol=1e-3)
            and math.isclose(self.memory_from, self.memory_to, rel_tol=1e-3)
        )

    def explain(self) -> str:
        return (
            f"t={self.time:g} resize: cpu {self.cpu_from:.0f}m -> {self.cpu_to:.0f}m, memory "
            f"{self.memory_from / 2**20:.0f}Mi -> {self.memory_to / 2**20:.0f}Mi: {self.reason}"
        )


@dataclass
class _State:
    good: float | None = None
    failed: float = 0.0
    step: float = 0.0
    changed_at: float = -math.inf
    cut: bool = False


@dataclass
class RightSizer:
    args: RightSizingArgs = field(default_factory=RightSizingArgs)
    vpa: VpaRecommender = field(default_factory=VpaRecommender)
    log: deque[Decision] = field(default_factory=lambda: deque(maxlen=1000))
    _state: dict[WorkloadKey, _State] = field(default_factory=dict)
    reverts: int = 0

    def decide(self, r: RoundInput, now: float) -> Decision | None:
        """The round's decision for one workload (None: nothing to say yet), logged when it changes a
        request. The caller applies it, or publishes it."""
        a = self.args
        st = self._state.setdefault(r.workload, _State(step=a.max_step_down))
        if now - st.changed_at < a.cooldown_seconds:
            return None
        memory = self._memory(r)
        if r.target is None:
            target = self.vpa.target(r.workload)
            if target is None:
                return None
            return self._log(
                r, now, st, _clamp(target.cpu_millis, a.min_cpu, a.max_cpu), memory, "no SLO: usage P90 + 15%"
            )
        if len(r.costs) < a.min_reports:
            return None
        tail = float(np.quantile(np.asarray(r.costs), a.slo_quantile))
        cpu = r.cpu_request
        if tail > r.target:
            st.failed = max(st.failed, cpu)
            if st.cut and st.good is not None and st.good > cpu:
                return self._revert(r, now, st, st.good, memory, tail)
            # Far from any request known to keep the SLO, grow fast; near the search's, by its step.
            up = a.max_step_up if st.good is None else min(a.max_step_up, 2 * max(st.step, a.min_step))
            st.good = None
            grown = _clamp(cpu * (1 + up), a.min_cpu, a.max_cpu)
            return self._log(
                r,
                now,
                st,
                grown,
                memory,
                f"grow: {self._versus(r, tail, 'broken')}",
            )
        st.good = cpu if st.good is None else min(st.good, cpu)
        if tail > (1 - a.slo_margin) * r.target or st.step < a.min_step:
            return self._log(
                r,
                now,
                st,
                cpu,
                memory,
                f"hold: {self._versus(r, tail, 'within')}",
            )
        floor = max(st.failed * (1 + a.min_step), max(r.cpu_use, default=0.0) / a.max_utilization, a.min_cpu)
        cut = max(cpu * (1 - st.step), floor)
        if cut > cpu * (1 - a.min_step):
            return self._log(
                r, now, st, cpu, memory, "hold: converged (the next cut would be below the step)"
            )
        return self._log(
            r,
            now,
            st,
            cut,
            memory,
            f"cut: {self._versus(r, tail, 'room')}",
        )

    def check(self, r: RoundInput, now: float) -> Decision | None:
        """Between rounds: revert a cut at once when the reports made since show a regression
        (``revertReports`` of them, their tail above the SLO) — no cool-down holds a revert back."""
        st = self._state.get(r.workload)
        if st is None or not st.cut or st.good is None or st.good <= r.cpu_request or r.target is None:
            return None
        if len(r.costs) < self.args.revert_reports:
            return None
        tail = float(np.quantile(np.asarray(r.costs), self.args.slo_quantile))
        if tail <= r.target:
            return None
        st.failed = max(st.failed, r.cpu_request)
        return self._revert(r, now, st, st.good, r.memory_request, tail)

    def _revert(
        self, r: RoundInput, now: float, st: _State, good: float, memory: float, tail: float
    ) -> Decision:
        st.step /= 2
        self.reverts += 1
        reason = f"revert: {self._versus(r, tail, 'broken')} after a cut"
        return self._log(r, now, st, good, memory, reason)

    def _versus(self, r: RoundInput, tail: float, relation: str) -> str:
        """The tail against the SLO (``relation``: broken, within, room), in the metric's own unit: for
        a ``maximize`` metric the P95 of the costs is 1 / the P5 of the values."""
        assert r.target is not None
        q, keep = self.args.slo_quantile, 1 - self.args.slo_margin
        if r.maximize:
            head, slo = f"P{(1 - q) * 100:g} value {1 / tail:.3g}", 1 / r.target
            tails = {"broken": f"< SLO {slo:.3g}", "room": f">= SLO {slo:.3g} / {keep:.0%}"}
        else:
            head, slo = f"P{q * 100:g} cost {tail:.3g}", r.target
            tails = {"broken": f"> SLO {slo:.3g}", "room": f"<= {keep:.0%} of SLO {slo:.3g}"}
        return f"{head} {tails.get(relation, f'within SLO {slo:.3g}')}"

    def _memory(self, r: RoundInput) -> float:
        a = self.args
        peak = max(r.memory_use, default=0.0)
        if peak <= 0:
            return r.memory_request
        want = peak * (1 + a.memory_margin)
        if want < r.memory_request:
            want = max(want, r.memory_request * (1 - a.max_step_down))
        return _clamp(want, a.min_memory, a.max_memory)

    def _log(self, r: RoundInput, now: float, st: _State, cpu: float, memory: float, reason: str) -> Decision:
        # Hysteresis: changes smaller than the smallest step are not worth a resize.
        if abs(cpu - r.cpu_request) < self.args.min_step * r.cpu_request:
            cpu = r.cpu_request
        if abs(memory - r.memory_request) < self.args.min_step * r.memory_request:
            memory = r.memory_request
        d = Decision(now, str(r.workload), r.cpu_request, cpu, r.memory_request, memory, reason)
        if d.changes:
            if cpu != r.cpu_request:
                st.cut = cpu < r.cpu_request
            st.changed_at = now
            self.log.append(d)
        return d


def _clamp(x: float, lo: float, hi: float) -> float:
    return min(max(x, lo), hi)
