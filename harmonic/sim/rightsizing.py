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
requests at the same moment and placement. Slack is Autopilot's: (requested - used) / requested, summed
over the pods with an SLO (CPU; memory apart). Per report it also keeps the request that report needed
at its moment's use, whose quantiles give the least slack any fixed request per workload allows while
breaking the SLO in at most 5%, 1% or none of the reports: what no recommender can beat.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from harmonic.api.pod import Pod, parse_pod
from harmonic.api.resources import CPU, MEMORY
from harmonic.feedback.resize import opted_in, plan_resize, recommendation, with_resources
from harmonic.feedback.rightsizing import RightSizer, RightSizingArgs
from harmonic.feedback.rightsizing_loop import RightSizingLoop, slo_target
from harmonic.framework.snapshot import CPU_COL, MEMORY_COL
from harmonic.signals.feedback.observation import Observation
from harmonic.signals.feedback.placement import PlacementView
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
#: Violation shares at which ``slack_at_violation_share`` gives the least slack a fixed request allows.
_FLOOR_SHARES = (0.05, 0.01, 0.0)


@dataclass
class _Judged:
    initial_cpu: float
    pods: int = 0
    #: The smallest SLO-keeping request the truth saw at each report.
    smallest: list[float] = field(default_factory=list)
    reports: int = 0
    violations: int = 0
    violations_original: int = 0
    #: Per report: (time, the SLO broken, the smallest request that would have kept it at that
    #: moment's use), for the steady-state figures over the end of the run.
    timeline: list[tuple[float, bool, float]] = field(default_factory=list)


class SimRightSizing:
    def __init__(self, world: World, spec: RightSizingSpec) -> None:
        self.world = world
        self.spec = spec
        self.loop = RightSizingLoop(
            RightSizer(RightSizingArgs.model_validate(spec.args)), spec.interval, spec.recommender
        )
        self.sizer = self.loop.sizer
        assert world.usage is not None  # checked at load
        self.usage = PrometheusUsageSource(
            USAGE_URL,
            window="1m",
            transport=SimulatedUsagePrometheus(world, world.usage, "1m"),
            name="sim/usage-rightsizing",
        )
        self.judged: dict[WorkloadKey, _Judged] = {}
        self.counts = {"resizes": 0, "restarts": 0, "deferred": 0, "infeasible": 0, "recommendations": 0}
        #: Infeasible resizes not yet handed on: (pod key, node, workload, (cpu, memory) wanted).
        self.infeasible: list[tuple[str, str, WorkloadKey, tuple[float, float]]] = []
        #: (time, requested, used) CPU over the pods with an SLO, per tick; and memory.
        self.slack: list[tuple[float, float, float]] = []
        self.slack_memory: list[tuple[float, float, float]] = []
        #: The latest recommendation published per pod (pods that did not opt in), VPA's shape.
        self.recommendations: dict[str, str] = {}

    def take_infeasible(self) -> list[tuple[str, str, WorkloadKey, tuple[float, float]]]:
        """The Infeasible resizes since the last call (the loop asks the rescheduler to move them)."""
        out, self.infeasible = self.infeasible, []
        return out

    # ------------------------------------------------------------------ every feedback tick
    def observe(self, view: PlacementView, observations: list[Observation], now: float) -> None:
        reading = self.usage.read()
        targets = self.loop.targets(view)
        requested = used = mem_requested = mem_used = 0.0
        for key, pods in view.by_workload().items():
            if key not in targets:
                continue
            j = self.judged.setdefault(key, _Judged(float(pods[0].requests.get(CPU, 0))))
            j.pods = len(pods)
            for p in pods:
                cpu, mem = reading.pods.get((p.namespace, p.name), (0.0, 0.0))
                requested += float(p.requests.get(CPU, 0))
                used += cpu
                mem_requested += float(p.requests.get(MEMORY, 0))
                mem_used += mem
        if requested > 0 and reading.pods:
            self.slack.append((now, requested, used))
            self.slack_memory.append((now, mem_requested, mem_used))
        for a in self.loop.observe(view, observations, reading.pods, now):
            self._carry_out(view, a.pod, a.cpu_millis, a.memory_bytes)

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
            track = self.judged.get(workload_of(pod))
            if target is None or track is None:
                continue
            cost = base[i] * (1.0 + slowdown[i])
            original = float(response_factor(np.array([use]), np.array([track.initial_cpu]))[0])
            broken = bool(cost * factor > target)
            track.reports += 1
            track.violations += int(broken)
            track.violations_original += int(cost * original > target)
            p95 = usage.cpu_req[slot] * cpu_f[slot] * (1 + _Z95 * noise_f[slot])
            need = smallest_request(np.array([p95, use]), np.full(2, target / cost), np.full(2, 64_000.0))
            track.smallest.append(float(need[0]))
            track.timeline.append((self.world.now(), broken, float(need[1])))

    def metrics(self) -> dict[str, Any]:
        per: dict[str, Any] = {}
        reports = violations = original = 0
        for key, t in sorted(self.judged.items()):
            need = float(np.mean(t.smallest[-60:])) if t.smallest else None
            trajectory = self.loop.trajectory.get(key, [])
            final = trajectory[-1] if trajectory else t.initial_cpu
            reach = None
            if need:
                reach = next(
                    (i + 1 for i, cpu in enumerate(trajectory) if abs(cpu - need) <= 0.2 * need), None
                )
            per[str(key)] = {
                "initial_cpu_millis": round(t.initial_cpu),
                "final_cpu_millis": round(final),
                "smallest_slo_cpu_millis": round(need) if need else None,
                "final_over_smallest": round(final / need, 4) if need else None,
                "rounds_to_within_20pct": reach,
                "rounds": len(trajectory),
                "violation_share": round(t.violations / t.reports, 6) if t.reports else None,
                "violation_share_original": round(t.violations_original / t.reports, 6)
                if t.reports
                else None,
            }
            reports += t.reports
            violations += t.violations
            original += t.violations_original
        end = self.world.plan.duration or 0.0
        final_ticks = [s for s in self.slack if s[0] >= end - FINAL_WINDOW]
        smallest = sum(float(np.mean(t.smallest[-60:])) * t.pods for t in self.judged.values() if t.smallest)
        used = float(np.mean([s[2] for s in final_ticks])) if final_ticks else 0.0
        steady = [r for t in self.judged.values() for r in t.timeline if r[0] >= end - FINAL_WINDOW]
        return {
            "recommender": self.spec.recommender,
            **self.counts,
            "reverts": self.sizer.reverts,
            "slack_initial": _slack([s for s in self.slack if s[0] <= self.spec.interval]),
            "slack_final": _slack(final_ticks),
            # The slack if every pod asked exactly the smallest SLO-keeping request: the floor.
            "slack_at_smallest": round(1 - used / smallest, 6) if smallest > 0 and final_ticks else None,
            "violation_share": round(violations / reports, 6) if reports else None,
            "violation_share_original": round(original / reports, 6) if reports else None,
            "violation_share_final": round(sum(r[1] for r in steady) / len(steady), 6) if steady else None,
            "slack_final_memory": _slack([s for s in self.slack_memory if s[0] >= end - FINAL_WINDOW]),
            "slack_at_violation_share": self._floors(end, used),
            "workloads": per,
        }

    def _floors(self, end: float, used: float) -> dict[str, float | None]:
        """The slack over the last 30 minutes if every pod asked the request that would have broken
        the SLO in exactly that share of its workload's reports there (the quantile of the requests
        each report needed at its moment's use): what any fixed request per workload must leave to
        break the SLO no more often. ``"0"``: never."""
        out: dict[str, float | None] = {}
        for share in _FLOOR_SHARES:
            asked = 0.0
            for t in self.judged.values():
                needs = [r[2] for r in t.timeline if r[0] >= end - FINAL_WINDOW]
                asked += float(np.quantile(needs, 1 - share)) * t.pods if needs else 0.0
            out[f"{share:g}"] = round(1 - used / asked, 6) if asked > 0 and used > 0 else None
        return out


def _slack(samples: list[tuple[float, float, float]]) -> float | None:
    """(requested - used) / requested over the samples' sums."""
    req = sum(s[1] for s in samples)
    used = sum(s[2] for s in samples)
    return round((req - used) / req, 6) if req > 0 else None
