"""The right-sizer's round, the same beside a live scheduler and inside the simulator.

Every feedback round the loop hands over the reports it stored (with the requests in force when each
was made) and the pods' observed use (``UsageReading.pods``: a Prometheus cAdvisor query or
metrics-server). Workloads whose pods carry an SLO (``harmonic.dev/flourish-target``) are kept; every
``interval`` the ``RightSizer`` decides for each, and between rounds a regression after a cut is reverted
at once. What comes out are actions — a pod and the requests it should have — which the caller carries
out: an in-place resize when the workload opted in (``harmonic.dev/resize: auto``), else a published
recommendation (``resize``). A workload that only gets recommendations cannot try requests, so it gets
the usage-based (VPA-style) ones: the SLO search needs to see what a request does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harmonic.api.pod import Pod
from harmonic.api.resources import CPU, MEMORY
from harmonic.feedback.resize import opted_in
from harmonic.feedback.rightsizing import Decision, RightSizer, RoundInput
from harmonic.signals.feedback.observation import Goal, Observation
from harmonic.signals.feedback.placement import PlacementView
from harmonic.signals.feedback.prometheus import GOAL_ANNOTATION, TARGET_ANNOTATION
from harmonic.signals.identity import WorkloadKey, workload_of


def slo_target(pod: Pod, goal: Goal | None = None) -> float | None:
    """The pod's SLO (``harmonic.dev/flourish-target``, in the metric's unit) as a cost, the unit the
    right-sizer compares reports in (``Observation.cost``): the target itself for ``minimize``, its
    inverse for ``maximize``. ``goal`` is the goal the workload's reports carry; without one, the pod's
    ``harmonic.dev/flourish-goal``. None unless the target is a positive number."""
    text = pod.annotations.get(TARGET_ANNOTATION)
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    if value is None or not value > 0 or value == float("inf"):
        return None
    declared = goal or pod.annotations.get(GOAL_ANNOTATION, "minimize").strip()
    return 1.0 / value if declared == "maximize" else value


@dataclass(frozen=True)
class Action:
    pod: Pod
    workload: WorkloadKey
    cpu_millis: float
    memory_bytes: float


@dataclass
class _Gathered:
    costs: list[tuple[float, float]] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    memory: list[float] = field(default_factory=list)


@dataclass
class RightSizingLoop:
    sizer: RightSizer
    interval: float = 300.0
    #: ``vpa``: the usage-only baseline for every workload (benchmarks compare the two).
    recommender: str = "harmonic"
    #: Requests in force per workload that opted in (what the right-sizer last decided).
    requested: dict[WorkloadKey, tuple[float, float]] = field(default_factory=dict)
    #: The CPU request after each round, per workload.
    trajectory: dict[WorkloadKey, list[float]] = field(default_factory=dict)
    _gathered: dict[WorkloadKey, _Gathered] = field(default_factory=dict)
    #: The goal of each workload's latest report: one posted with ``maximize`` is a cost of 1 / value
    #: whatever the pod's annotation says, so its target is turned the same way.
    _goals: dict[WorkloadKey, Goal] = field(default_factory=dict)
    _next: float | None = None

    def targets(self, view: PlacementView) -> dict[WorkloadKey, float]:
        """Each workload's SLO as a cost (``slo_target``)."""
        out: dict[WorkloadKey, float] = {}
        for pods in view.by_workload().values():
            for p in pods:
                key = workload_of(p)
                t = slo_target(p, self._goals.get(key))
                if t is not None:
                    out[key] = t
        return out

    def observe(
        self,
        view: PlacementView,
        observations: Sequence[Observation],
        usage: Mapping[tuple[str, str], tuple[float, float]],
        now: float,
    ) -> list[Action]:
        """Store this round's reports and use; the actions due now (a round, or a revert)."""
        for o in observations:
            self._goals[o.workload] = o.goal
        targets = self.targets(view)
        for o in observations:
            if o.workload in targets:
                self._gathered.setdefault(o.workload, _Gathered()).costs.append((o.cpu_millis, o.cost))
        for (ns, name), (cpu, mem) in usage.items():
            place = view.place(f"{ns}/{name}")
            if place is None or place.workload not in targets:
                continue
            g = self._gathered.setdefault(place.workload, _Gathered())
            g.cpu.append(cpu)
            g.memory.append(mem)
            self.sizer.vpa.add(place.workload, cpu, mem, float(place.pod.requests.get(CPU, 0)), now)
        if self._next is None:
            self._next = now + self.interval
        by_workload = {k: ps for k, ps in view.by_workload().items() if k in targets}
        if now + 1e-9 >= self._next:
            self._next += self.interval
            return self._round(by_workload, targets, now)
        if self.recommender == "harmonic":
            return self._reverts(by_workload, targets, now)
        return []

    def _input(self, key: WorkloadKey, pods: list[Pod], target: float | None) -> RoundInput:
        cpu, mem = self.requested.get(key) or (
            float(pods[0].requests.get(CPU, 0)),
            float(pods[0].requests.get(MEMORY, 0)),
        )
        g = self._gathered.get(key, _Gathered())
        costs = tuple(c for at, c in g.costs if abs(at - cpu) <= 1.0)
        maximize = self._goals.get(key) == "maximize"
        return RoundInput(key, cpu, mem, costs, target, tuple(g.cpu), tuple(g.memory), maximize)

    def _round(
        self, by_workload: Mapping[WorkloadKey, list[Pod]], targets: Mapping[WorkloadKey, float], now: float
    ) -> list[Action]:
        out: list[Action] = []
        for key, pods in sorted(by_workload.items()):
            auto = any(opted_in(p.raw) for p in pods)
            target = targets[key] if self.recommender == "harmonic" and auto else None
            r = self._input(key, pods, target)
            d = self.sizer.decide(r, now)
            if d is not None:
                self._gathered[key] = _Gathered()
            if auto:
                if d is not None:
                    self.requested[key] = (d.cpu_to, d.memory_to)
                cpu, mem = self.requested.get(key) or (r.cpu_request, r.memory_request)
                self.trajectory.setdefault(key, []).append(cpu)
                out += [Action(p, key, cpu, mem) for p in pods]
            elif d is not None:
                self.trajectory.setdefault(key, []).append(r.cpu_request)
                out += [Action(p, key, d.cpu_to, d.memory_to) for p in pods]
        return out

    def _reverts(
        self, by_workload: Mapping[WorkloadKey, list[Pod]], targets: Mapping[WorkloadKey, float], now: float
    ) -> list[Action]:
        out: list[Action] = []
        for key, pods in by_workload.items():
            if key not in self.requested:
                continue
            d: Decision | None = self.sizer.check(self._input(key, pods, targets[key]), now)
            if d is None:
                continue
            self._gathered[key] = _Gathered()
            self.requested[key] = (d.cpu_to, d.memory_to)
            out += [Action(p, key, d.cpu_to, d.memory_to) for p in pods]
        return out
