"""Gang contention: competing gangs (PodGroups) and two teams' ElasticQuotas on a virtual clock.

Gangs of 4 to 64 one-cpu pods arrive as a Poisson process, alternating between two teams whose
quotas guarantee each half the cluster and let either borrow all of it; together they ask for
``load`` times the cluster. A gang runs for ``run_seconds`` once all its pods are bound, then its
pods succeed. A gang that loses a member (preempted to give a team its min back) is restarted whole,
as a training job is. The real ``Scheduler`` (any profile) decides; time jumps from one arrival,
completion or scheduler wake-up (backoff, Permit timeout) to the next.

Metrics (``GangReport``), per profile: ``gangs`` {completed, timed_out (Permit timeouts),
partially_held_seconds (gang-seconds during which a gang held assumed pods at Permit without its
quorum), multi_held_seconds (seconds during which two or more gangs did so at once: the deadlock
pattern), partially_bound_max (most gangs ever *bound* short of their quorum; must be 0),
wait_p50/wait_p99 (arrival to quorum, seconds), unfinished (gangs that fit the empty cluster yet
never ran), pods_per_hour (gang pods completed per hour of the run)}, ``quota`` {borrowed_share
(time-average share of the cluster used beyond a team's min), reclaim_preemptions,
min_violation_seconds (team-seconds below min with pods pending)}.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harmonic.api.batch import POD_GROUP_LABEL
from harmonic.cluster.memory import InMemoryCluster
from harmonic.framework.config import SchedulerConfiguration
from harmonic.framework.registry import Registry
from harmonic.scheduler.clock import ManualClock
from harmonic.scheduler.scheduler import Scheduler
from harmonic.testing import elastic_quota, node, pod, pod_group

TEAMS = ("team-a", "team-b")


@dataclass(frozen=True, slots=True)
class GangScenario:
    nodes: int = 16
    node_cpu: int = 16
    sizes: tuple[int, ...] = (4, 8, 16, 32, 64)
    #: Gang pod-cpus asked for, as a multiple of the cluster's cpus.
    load: float = 3.0
    mean_interarrival: float = 60.0
    run_seconds: float = 600.0
    #: Give up (and count unfinished gangs) after this much virtual time.
    horizon: float = 6 * 3600.0
    quotas: bool = True
    seed: int = 1


@dataclass(slots=True)
class _Gang:
    name: str
    team: str
    size: int
    arrived: float
    generation: int = 0
    quorum_at: float | None = None
    done: bool = False


@dataclass
class GangReport:
    profile: str
    gangs: dict[str, float] = field(default_factory=dict)
    quota: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"gangs": self.gangs, "quota": self.quota}


def workload(sc: GangScenario) -> list[tuple[float, str, str, int]]:
    """(arrival time, gang name, team, size), the same for every profile."""
    rng = random.Random(sc.seed)
    budget = sc.load * sc.nodes * sc.node_cpu
    out: list[tuple[float, str, str, int]] = []
    t = 0.0
    for i in itertools.count():
        if budget <= 0:
            break
        size = rng.choice(sc.sizes)
        out.append((t, f"g{i:03d}", TEAMS[i % 2], size))
        budget -= size
        t += rng.expovariate(1.0 / sc.mean_interarrival)
    return out


class _Run:
    def __init__(self, sc: GangScenario, config: SchedulerConfiguration, registry: Registry) -> None:
        self.sc = sc
        self.clock = ManualClock()
        self.cluster = InMemoryCluster(self.clock.now)
        self.scheduler = Scheduler(
            config,
            registry,
            self.cluster,
            clock=self.clock,
            seed=sc.seed,
            services=self.cluster.scheduler_services(),
        )
        self.cluster.connect(self.scheduler)
        self.cluster.subscribe(lambda o, n: None, self._on_pod, replay=False)
        self.profile = config.profiles[0].scheduler_name
        self.gangs: dict[str, _Gang] = {}
        self.timers: list[tuple[float, int, Any]] = []
        self.seq = itertools.count()
        self.restarts = 0
        self.completed_pods = 0
        self.bound: dict[str, set[str]] = {}
        self._deleting: set[str] = set()
        self._last_end = 0.0

    # ------------------------------------------------------------------ world
    def _after(self, at: float, fn: Any) -> None:
        heapq.heappush(self.timers, (at, next(self.seq), fn))

    def _arrive(self, g: _Gang) -> None:
        self.cluster.apply_batch(pod_group(g.name).ns(g.team).min_member(g.size).obj())
        self._create_pods(g)

    def _create_pods(self, g: _Gang) -> None:
        for i in range(g.size):
            raw = pod(f"{g.name}-{g.generation}-{i}").ns(g.team).group(g.name).req(cpu="1", memory="1Gi")
            self.cluster.create_pod(raw.scheduler(self.profile).obj())

    def _on_pod(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        meta = obj.get("metadata") or {}
        name = str((meta.get("labels") or {}).get(POD_GROUP_LABEL) or "")
        g = self.gangs.get(name)
        if g is None:
            return
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        members = self.bound.setdefault(name, set())
        if new is None:
            members.discard(key)
            if key not in self._deleting and not g.done:
                self._restart(g)  # a member was preempted: the job restarts whole
            self._deleting.discard(key)
            return
        if (new.get("spec") or {}).get("nodeName") and key not in members:
            members.add(key)
            if len(members) == g.size and g.quorum_at is None:
                g.quorum_at = self.clock.now()
                gen = g.generation
                self._after(g.quorum_at + self.sc.run_seconds, lambda: self._finish(g, gen))

    def _restart(self, g: _Gang) -> None:
        self.restarts += 1
        for key in [k for k, p in self.cluster.pods.items() if _gang_of(p) == g.name]:
            self._deleting.add(key)
            ns, n = key.split("/", 1)
            self.cluster.delete_pod(ns, n)
        g.generation += 1
        g.quorum_at = None
        self.bound[g.name] = set()
        self._create_pods(g)

    def _finish(self, g: _Gang, generation: int) -> None:
        if g.generation != generation or g.done:
            return
        g.done = True
        self.completed_pods += g.size
        self._last_end = self.clock.now()
        for key in sorted(self.bound.get(g.name, ())):
            self._deleting.add(key)
            ns, n = key.split("/", 1)
            self.cluster.delete_pod(ns, n)

    # ------------------------------------------------------------------ loop
    def run(self) -> GangReport:
        sc = self.sc
        for i in range(sc.nodes):
            self.cluster.add_node(node(f"n{i:03d}").cap(cpu=sc.node_cpu, memory="512Gi", pods=256).obj())
        if sc.quotas:
            half = sc.nodes * sc.node_cpu // 2
            for team in TEAMS:
                total = sc.nodes * sc.node_cpu
                q = elastic_quota(team).min(cpu=half, memory=f"{half}Gi").max(cpu=total, memory=f"{total}Gi")
                self.cluster.apply_batch(q.obj())
        for at, name, team, size in workload(sc):
            g = self.gangs[name] = _Gang(name, team, size, at)
            self._after(at, lambda g=g: self._arrive(g))
        held = multi = 0.0
        partial_max = 0
        borrowed = violation = 0.0
        cap = float(sc.nodes * sc.node_cpu)
        now = 0.0
        while now < sc.horizon:
            while self.timers and self.timers[0][0] <= now:
                heapq.heappop(self.timers)[2]()
            self.scheduler.run_until_idle()
            if all(g.done for g in self.gangs.values()):
                break
            nxt = [self.timers[0][0]] if self.timers else []
            wake = self.scheduler.next_wakeup()
            if wake is not None:
                nxt.append(max(wake, now + 1e-3))
            if not nxt:
                break
            step = min(min(nxt), sc.horizon) - now
            holding = {_gang_of(wp.pod.raw) for wp in self.scheduler.waiting_pods.values()}
            held += len(holding) * step
            multi += step if len(holding) > 1 else 0.0
            partial_max = max(partial_max, self._partially_bound())
            used = self._used_by_team()
            borrowed += step * sum(max(0.0, u - cap / 2) for u in used.values()) / cap
            pending = self._pending_by_team()
            violation += step * sum(1 for t in TEAMS if pending[t] and used[t] < cap / 2 and sc.quotas)
            self.clock.advance(step)
            now = self.clock.now()
        return self._report(held, multi, partial_max, borrowed / max(now, 1e-9), violation, now)

    def _partially_bound(self) -> int:
        return sum(
            1 for g in self.gangs.values() if not g.done and 0 < len(self.bound.get(g.name, ())) < g.size
        )

    def _used_by_team(self) -> dict[str, float]:
        used = dict.fromkeys(TEAMS, 0.0)
        for p in self.cluster.pods.values():
            if (p.get("spec") or {}).get("nodeName"):
                ns = str((p.get("metadata") or {}).get("namespace"))
                if ns in used:
                    used[ns] += 1.0
        return used

    def _pending_by_team(self) -> dict[str, int]:
        pending = dict.fromkeys(TEAMS, 0)
        for p in self.cluster.pods.values():
            if not (p.get("spec") or {}).get("nodeName"):
                ns = str((p.get("metadata") or {}).get("namespace"))
                if ns in pending:
                    pending[ns] += 1
        return pending

    def _report(
        self, held: float, multi: float, partial_max: int, borrowed: float, violation: float, end: float
    ) -> GangReport:
        sc = self.sc
        waits = [g.quorum_at - g.arrived for g in self.gangs.values() if g.quorum_at is not None]
        fits = sc.nodes * sc.node_cpu
        unfinished = sum(1 for g in self.gangs.values() if not g.done and g.size <= fits)
        hours = max(self._last_end, 1e-9) / 3600.0
        cs = self.scheduler.frameworks[self.profile].plugins.get("CapacityScheduling")
        return GangReport(
            self.profile,
            gangs={
                "completed": sum(1 for g in self.gangs.values() if g.done),
                "total": len(self.gangs),
                "timed_out": sum(1 for e in self.cluster.events if "rejected due to timeout" in e.message),
                "restarted": self.restarts,
                "partially_held_seconds": round(held, 1),
                "multi_held_seconds": round(multi, 1),
                "partially_bound_max": partial_max,
                "wait_p50": round(float(np.percentile(waits, 50)), 1) if waits else 0.0,
                "wait_p99": round(float(np.percentile(waits, 99)), 1) if waits else 0.0,
                "unfinished": unfinished,
                "pods_per_hour": round(self.completed_pods / hours, 1),
                "makespan_seconds": round(self._last_end, 1),
            },
            quota={
                "borrowed_share": round(borrowed, 4),
                "reclaim_preemptions": getattr(cs, "reclaim_preemptions", 0),
                "min_violation_seconds": round(violation, 1),
            },
        )


def _gang_of(p: Mapping[str, Any]) -> str:
    return str(((p.get("metadata") or {}).get("labels") or {}).get(POD_GROUP_LABEL) or "")


def run_gangs(sc: GangScenario, config: SchedulerConfiguration, registry: Registry) -> GangReport:
    """Run the contention scenario under the first profile of ``config``."""
    return _Run(sc, config, registry).run()
