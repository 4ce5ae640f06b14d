"""Right-sizing inside the simulator (``feedback.rightsizing``): the loop's side and the judge's.

The loop's side is what a live cluster would run: every feedback tick, the reports of pods with an SLO
(``harmonic.dev/flourish-target``) are kept with the request in force when they were made, and the
pods' CPU and memory use is read from the simulated cAdvisor through the ordinary Prometheus usage
source (one-minute window: one sample per tick, as VPA's recommender samples metrics-server). Every
``interval`` the right-sizer (``harmonic.feedback.rightsizing``; or the VPA-style baseline) decides per
workload, and the decision is carried out as on a live cluster: a pod annotated
``harmonic.dev/resize: auto`` is resized in place — ``Infeasible`` when the new requests exceed its
node's allocatable, ``Deferred`` when they do not fit beside its neighbours now (retried next round) —
and any other pod gets the recommendation, never both.

The judge (``Judge``) reads the truth the loop never sees: the pods' real CPU use and the queueing it
causes (``harmonic.sim.usage.queueing``). Per workload it computes the smallest SLO-keeping request —
the smallest request at which the truth's cost stays within the SLO at the pod's 95th-percentile CPU use
— and counts, per report, whether the SLO was kept, and whether it would have been under the original
requests at the same moment and placement.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from harmonic.api.pod import Pod, parse_pod
from harmonic.api.resources import CPU, MEMORY
from harmonic.feedback.resize import opted_in, plan_resize, recommendation, with_resources
from harmonic.feedback.rightsizing import RightSizer, RightSizingArgs, RoundInput
from harmonic.framework.snapshot import CPU_COL, MEMORY_COL
from harmonic.signals.feedback.observation import Observation
from harmonic.signals.feedback.placement import PlacementView
from harmonic.signals.feedback.prometheus import TARGET_ANNOTATION
from harmonic.signals.identity import WorkloadKey, workload_of
from harmonic.signals.usage import PrometheusUsageSource
from harmonic.sim.scenario import RightSizingSpec
from harmonic.sim.usage.exporters import USAGE_URL, SimulatedUsagePrometheus
from harmonic.sim.usage.queueing import response_factor, smallest_request

if TYPE_CHECKING:
    from harmonic.sim.engine import World

#: A pod's 95th-percentile CPU use: its mean times (1 + this x the profile's noise).
_Z95 = 1.645
#: Slack is judged over this much of the end of the run.
FINAL_WINDOW = 1800.0


def slo_target(pod: Pod) -> float | None:
    text = pod.annotations.get(TARGET_ANNOTATION)
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and value > 0 else None


@dataclass
class _Round:
    costs: list[tuple[float, float]] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    memory: list[float] = field(default_factory=list)


@dataclass
class _Track:
    initial_cpu: float
    cpu: float
    memory: float
    #: The request after each round, and the smallest SLO-keeping request the truth saw meanwhile.
    trajectory: list[float] = field(default_factory=list)
    smallest: list[float] = field(default_factory=list)
    pods: int = 0
    reports: int = 0
    violations: int = 0
    violations_original: int = 0


class SimRightSizing:
    def __init__(self, world: World, spec: RightSizingSpec) -> None:
        self.world = world
        self.spec = spec
        self.sizer = RightSizer(RightSizingArgs.model_validate(spec.args))
        assert world.usage is not None  # checked at load
        self.usage = PrometheusUsageSource(
            USAGE_URL,
            window="1m",
            transport=SimulatedUsagePrometheus(world, world.usage, "1m"),
            name="sim/usage-rightsizing",
        )
        self._round: dict[WorkloadKey, _Round] = {}
        self.tracks: dict[WorkloadKey, _Track] = {}
        self.counts = {"resizes": 0, "restarts": 0, "deferred": 0, "infeasible": 0, "recommendations": 0}
        #: Infeasible resizes not yet handed on: (pod key, node, workload, (cpu, memory) wanted).
        self.infeasible: list[tuple[str, str, WorkloadKey, tuple[float, float]]] = []
        #: (time, requested, used) CPU over the pods with an SLO, per tick.
        self.slack: list[tuple[float, float, float]] = []
        self._next = spec.interval
        #: The latest recommendation published per pod (pods that did not opt in), VPA's shape.
        self.recommendations: dict[str, str] = {}

    # ------------------------------------------------------------------ every feedback tick
    def observe(self, view: PlacementView, observations: list[Observation], now: float) -> None:
        targets: dict[WorkloadKey, float] = {}
        for pods in view.by_workload().values():
            for p in pods:
                t = slo_target(p)
                if t is not None:
                    targets[workload_of(p)] = t
        for o in observations:
            if o.workload in targets:
                self._round.setdefault(o.workload, _Round()).costs.append((o.cpu_millis, o.cost))
        reading = self.usage.read()
        requested = used = 0.0
        for (ns, name), (cpu, mem) in reading.pods.items():
            raw = self.world.cluster.pods.get(f"{ns}/{name}")
            if raw is None:
                continue
            pod = parse_pod(raw)
            key = workload_of(pod)
            if key not in targets:
                continue
            r = self._round.setdefault(key, _Round())
            r.cpu.append(cpu)
            r.memory.append(mem)
            self.sizer.vpa.add(key, cpu, mem, float(pod.requests.get(CPU, 0)), now)
            requested += float(pod.requests.get(CPU, 0))
            used += cpu
        if requested > 0:
            self.slack.append((now, requested, used))
        if now + 1e-9 >= self._next:
            self._next += self.spec.interval
            self.round(view, targets, now)
        elif self.spec.recommender == "harmonic":
            self._revert_regressions(view, targets, now)

    def _revert_regressions(self, view: PlacementView, targets: dict[WorkloadKey, float], now: float) -> None:
        for key, pods in view.by_workload().items():
            track = self.tracks.get(key)
            if track is None or key not in targets:
                continue
            r = self._round.get(key, _Round())
            costs = tuple(c for cpu, c in r.costs if abs(cpu - track.cpu) <= 1.0)
            d = self.sizer.check(
                RoundInput(key, track.cpu, track.memory, costs, targets[key], tuple(r.cpu), tuple(r.memory)),
                now,
            )
            if d is None:
                continue
            self._round[key] = _Round()
            track.cpu, track.memory = d.cpu_to, d.memory_to
            for p in pods:
                self._carry_out(view, p, track.cpu, track.memory)

    # ------------------------------------------------------------------ every interval
    def take_infeasible(self) -> list[tuple[str, str, WorkloadKey, tuple[float, float]]]:
        """The Infeasible resizes since the last call (the loop asks the rescheduler to move them)."""
        out, self.infeasible = self.infeasible, []
        return out

    def round(self, view: PlacementView, targets: dict[WorkloadKey, float], now: float) -> None:
        for key, pods in sorted(view.by_workload().items()):
            if key not in targets:
                continue
            first = pods[0]
            cpu0, mem0 = float(first.requests.get(CPU, 0)), float(first.requests.get(MEMORY, 0))
            track = self.tracks.setdefault(key, _Track(cpu0, cpu0, mem0))
            r = self._round.get(key, _Round())
            costs = tuple(c for cpu, c in r.costs if abs(cpu - track.cpu) <= 1.0)
            # The SLO search must try the requests it judges: a workload that only gets
            # recommendations gets usage-based ones.
            auto = any(opted_in(p.raw) for p in pods)
            target = targets[key] if self.spec.recommender == "harmonic" and auto else None
            d = self.sizer.decide(
                RoundInput(key, track.cpu, track.memory, costs, target, tuple(r.cpu), tuple(r.memory)), now
            )
            if d is not None:
                self._round[key] = _Round()
                if auto:
                    track.cpu, track.memory = d.cpu_to, d.memory_to
                else:
                    for p in pods:
                        self._carry_out(view, p, d.cpu_to, d.memory_to)
                    continue
            track.trajectory.append(track.cpu)
            track.pods = len(pods)
            for p in pods:
                self._carry_out(view, p, track.cpu, track.memory)

    def _carry_out(self, view: PlacementView, pod: Pod, cpu: float, memory: float) -> None:
        now_cpu, now_mem = float(pod.requests.get(CPU, 0)), float(pod.requests.get(MEMORY, 0))
        if abs(now_cpu - cpu) <= 1.0 and abs(now_mem - memory) <= 2**20:
            return
        if not opted_in(pod.raw):
            self.counts["recommendations"] += 1
            self.recommendations[pod.key] = json.dumps(recommendation(pod.raw, cpu, memory))
            return
        plan = plan_resize(pod.raw, cpu, memory)
        if plan.patch is None:
            return
        new = with_resources(pod.raw, plan.patch)
        want = parse_pod(new).requests
        place = view.place(pod.key)
        if place is None:
            return
        snap = self.world.scheduler.cache.snapshot
        slot = snap.slot(place.node)
        alloc = snap.allocatable[slot]
        used = snap.requested[slot]
        for col, res in ((CPU_COL, CPU), (MEMORY_COL, MEMORY)):
            if want.get(res, 0) > alloc[col]:
                self.counts["infeasible"] += 1
                self.infeasible.append((pod.key, place.node, workload_of(pod), (cpu, memory)))
                return
            if used[col] - pod.requests.get(res, 0) + want.get(res, 0) > alloc[col]:
                self.counts["deferred"] += 1
                return
        self.world.cluster.update_pod(new)
        self.counts["resizes"] += 1
        self.counts["restarts"] += len(plan.restarts)

    # ------------------------------------------------------------------ the judge
    def judge(self, keys: list[str], slowdown: np.ndarray, base: np.ndarray, out: np.ndarray) -> None:
        """Per report of a pod with an SLO: the truth's factor goes into ``out`` (the reported cost's
        multiplier), the SLO is checked, and under the original requests too."""
        usage = self.world.usage
        last = usage.history[-1] if usage.history else None
        use_now = dict(zip(last.pods, last.pod_cpu.tolist(), strict=True)) if last is not None else {}
        cpu_f = usage.params[0]
        noise_f = usage.params[6]
        for i, key in enumerate(keys):
            raw = self.world.cluster.pods.get(key)
            slot = usage.slot_of.get(key)
            if raw is None or slot is None:
                continue
            pod = parse_pod(raw)
            req = float(pod.requests.get(CPU, 0))
            use = use_now.get(key, float(usage.cpu_req[slot] * cpu_f[slot]))
            factor = float(response_factor(np.array([use]), np.array([req]))[0])
            out[i] = factor
            target = slo_target(pod)
            wkey = workload_of(pod)
            track = self.tracks.get(wkey)
            if target is None or track is None:
                continue
            cost = base[i] * (1.0 + slowdown[i])
            original = float(response_factor(np.array([use]), np.array([track.initial_cpu]))[0])
            track.reports += 1
            track.violations += int(cost * factor > target)
            track.violations_original += int(cost * original > target)
            p95 = usage.cpu_req[slot] * cpu_f[slot] * (1 + _Z95 * noise_f[slot])
            need = smallest_request(np.array([p95]), np.array([target / cost]), np.array([64_000.0]))
            track.smallest.append(float(need[0]))

    def metrics(self) -> dict[str, Any]:
        per: dict[str, Any] = {}
        reports = violations = original = 0
        for key, t in sorted(self.tracks.items()):
            need = float(np.mean(t.smallest[-60:])) if t.smallest else None
            reach = None
            if need:
                reach = next(
                    (i + 1 for i, cpu in enumerate(t.trajectory) if abs(cpu - need) <= 0.2 * need), None
                )
            per[str(key)] = {
                "initial_cpu_millis": round(t.initial_cpu),
                "final_cpu_millis": round(t.cpu),
                "smallest_slo_cpu_millis": round(need) if need else None,
                "final_over_smallest": round(t.cpu / need, 4) if need else None,
                "rounds_to_within_20pct": reach,
                "rounds": len(t.trajectory),
                "violation_share": round(t.violations / t.reports, 6) if t.reports else None,
                "violation_share_original": round(t.violations_original / t.reports, 6)
                if t.reports
                else None,
            }
            reports += t.reports
            violations += t.violations
            original += t.violations_original
        end = self.world.plan.duration or 0.0
        final = [s for s in self.slack if s[0] >= end - FINAL_WINDOW]
        smallest = sum(float(np.mean(t.smallest[-60:])) * t.pods for t in self.tracks.values() if t.smallest)
        used = float(np.mean([s[2] for s in final])) if final else 0.0
        return {
            "recommender": self.spec.recommender,
            **self.counts,
            "reverts": self.sizer.reverts,
            "slack_initial": _slack([s for s in self.slack if s[0] <= self.spec.interval]),
            "slack_final": _slack(final),
            # The slack if every pod asked exactly the smallest SLO-keeping request: the floor.
            "slack_at_smallest": round(1 - used / smallest, 6) if smallest > 0 and final else None,
            "violation_share": round(violations / reports, 6) if reports else None,
            "violation_share_original": round(original / reports, 6) if reports else None,
            "workloads": per,
        }


def _slack(samples: list[tuple[float, float, float]]) -> float | None:
    """(requested - used) / requested over the samples' sums."""
    req = sum(s[1] for s in samples)
    used = sum(s[2] for s in samples)
    return round((req - used) / req, 6) if req > 0 else None
