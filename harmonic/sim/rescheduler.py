"""The rescheduler and PodDisruptionBudgets inside the simulator.

- ``check_pdb``: scenario ``PodDisruptionBudget`` manifests (policy/v1).
- ``DisruptionController``: keeps every budget's status as the disruption controller does —
  ``expectedPods`` (matching pods not being deleted), ``currentHealthy`` (those bound to a node),
  ``desiredHealthy`` (``minAvailable``, or expected minus ``maxUnavailable``; percentages round up) and
  ``disruptionsAllowed`` — after each pod event, so drains, preemption and the rescheduler all go
  through the in-memory Eviction API against current budgets.
- ``SimRescheduler``: with the scenario's ``rescheduler: {policy, interval}``, runs the policy every
  ``interval`` of virtual time under each profile (its what-if scheduler is that profile, with the
  world's services), pods' ages counted from their creation in virtual time; plans nominate before
  evicting and stop at the first refused eviction. ``metrics()`` is the ``rescheduler`` entry of
  metrics.json (docs/simulator.md).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from harmonic.api.errors import ObjectError
from harmonic.api.pdb import parse_pdb
from harmonic.api.pod import parse_pod
from harmonic.framework.snapshot import CPU_COL
from harmonic.rescheduler.framework import Eviction, RunLog
from harmonic.rescheduler.policy import Policy, PolicyError, read_policy
from harmonic.rescheduler.runner import RunOptions, remember, run_once
from harmonic.rescheduler.state import ClusterState
from harmonic.sim.errors import ScenarioError
from harmonic.sim.metrics import EXTRA_METRICS

if TYPE_CHECKING:
    from harmonic.sim.engine import World
    from harmonic.sim.scenario import ReschedulerSpec

Obj = dict[str, Any]
REASON_RESCHEDULED = "drained"  # the controllers recreate the pod, as after a drain's eviction


@dataclass(frozen=True)
class SimReschedulerSpec:
    policy: Policy
    interval: float
    options: RunOptions


def resolve_spec(spec: ReschedulerSpec, source: str, base_dir: Path) -> SimReschedulerSpec:
    path = base_dir / spec.policy
    if not path.exists():
        raise ScenarioError(source, "rescheduler.policy", f"{spec.policy}: no such file")
    try:
        policy = read_policy(path)
    except PolicyError as e:
        raise ScenarioError(source, "rescheduler.policy", str(e)) from None
    if spec.interval <= 0:
        raise ScenarioError(source, "rescheduler.interval", "must be > 0")
    return SimReschedulerSpec(policy, spec.interval, RunOptions(spec.max_evictions_per_run, spec.cooldown))


def check_pdb(raw: Mapping[str, Any], source: str, namespace: str) -> Obj:
    if raw.get("apiVersion") != "policy/v1":
        raise ScenarioError(
            source, "apiVersion", f"PodDisruptionBudget must be policy/v1, not {raw.get('apiVersion')!r}"
        )
    meta = dict(raw.get("metadata") or {})
    meta["namespace"] = meta.get("namespace") or namespace
    spec = raw.get("spec") or {}
    if not isinstance(spec, Mapping) or (spec.get("minAvailable") is None) == (
        spec.get("maxUnavailable") is None
    ):
        raise ScenarioError(source, "spec", "set exactly one of minAvailable and maxUnavailable")
    obj: Obj = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta,
        "spec": dict(spec),
    }
    try:
        parse_pdb(obj)
    except ObjectError as e:
        raise ScenarioError(source, e.field, e.message) from None
    return obj


def _scaled(value: Any, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


class DisruptionController:
    def __init__(self, world: World) -> None:
        self.world = world
        for raw in world.plan.pdbs:
            world.cluster.add_pdb(raw)
        self.refresh()
        world.cluster.subscribe(lambda old, new: None, self._on_pod, replay=False)

    def _on_pod(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        self.refresh()

    def refresh(self) -> None:
        cluster = self.world.cluster
        if not cluster.pdbs:
            return
        pods = [parse_pod(p) for p in cluster.pods.values()]
        for raw, view in list(cluster.pdbs.values()):
            matching = [p for p in pods if view.covers(p) and not p.deleting and not p.is_terminal]
            expected = len(matching)
            healthy = sum(1 for p in matching if p.node_name)
            spec = raw.get("spec") or {}
            if spec.get("maxUnavailable") is not None:
                desired = expected - _scaled(spec["maxUnavailable"], expected)
            else:
                desired = _scaled(spec.get("minAvailable", 0), expected)
            status = {
                "expectedPods": expected,
                "currentHealthy": healthy,
                "desiredHealthy": max(desired, 0),
                "disruptionsAllowed": max(0, healthy - max(desired, 0)),
            }
            if raw.get("status") != status:
                cluster.update_pdb({**raw, "status": status})


class SimRescheduler:
    def __init__(self, world: World, spec: SimReschedulerSpec) -> None:
        self.world = world
        self.spec = spec
        self.recent: dict[str, float] = {}
        self.runs = 0
        self.evictions: list[tuple[float, Eviction]] = []
        self.plans = 0
        self.plans_aborted = 0
        self.budget_violations = 0
        #: pending pod key -> (plan id, nomination time, moves).
        self.nominated: dict[str, tuple[str, float, int]] = {}
        self.resolved: dict[str, int] = {}
        self.loops = 0
        self._moved_from: dict[tuple[str, str], float] = {}
        self.imbalance_before: float | None = None

    def start(self) -> None:
        self.world.after(self.spec.interval, self.tick)

    # ------------------------------------------------------------------ state
    def state(self) -> ClusterState:
        return cluster_state(self.world)

    def imbalance(self) -> float:
        snap = self.world.scheduler.cache.snapshot
        order = snap.order
        if len(order) == 0:
            return 0.0
        alloc = np.maximum(snap.allocatable[order, CPU_COL], 1)
        return float(np.std(snap.requested[order, CPU_COL] / alloc))

    # ------------------------------------------------------------------ a run
    def tick(self) -> None:
        w = self.world
        end = w.plan.duration
        self.runs += 1
        self._note_resolved()
        state = self.state()
        result = run_once(
            self.spec.policy,
            state,
            w.run_spec.config.profiles[0],
            _registry(),
            services={k: v for k, v in w.scheduler.services.items() if k != "nominator"},
            recent=self.recent,
            options=self.spec.options,
        )
        self.budget_violations += result.budget_violations
        if self.imbalance_before is None and result.log.evictions:
            self.imbalance_before = self.imbalance()
        done = self.execute(result.log)
        remember(self.recent, RunLog(evictions=done), w.clock.now())
        # Without a duration, keep going only while pods pend, so the simulation can end.
        again = w.clock.now() + self.spec.interval <= end if end is not None else bool(w.pending())
        if again:
            w.after(self.spec.interval, self.tick)

    def execute(self, log: RunLog) -> list[Eviction]:
        w = self.world
        now = w.clock.now()
        done: list[Eviction] = []
        by_plan: dict[str, list[Eviction]] = {}
        for e in log.evictions:
            by_plan.setdefault(e.plan, []).append(e)
        noms = {n.plan: n for n in log.nominations}
        for plan, moves in by_plan.items():
            if plan:
                self.plans += 1
                nom = noms.get(plan)
                if nom is not None:
                    if w.cluster.set_nominated_node(nom.pod, nom.node) is not None:
                        self.plans_aborted += 1
                        continue
                    self.nominated[nom.pod.key] = (plan, now, len(moves))
            for e in moves:
                if not self._evict(e):
                    if plan:
                        self.plans_aborted += 1
                        break
                    continue
                done.append(e)
        return done

    def _evict(self, e: Eviction) -> bool:
        w = self.world
        stored = w.cluster.pods.get(e.pod.key)
        if stored is None or str(stored["metadata"].get("uid")) != e.pod.uid:
            return False
        budgets = [view for _, view in w.cluster.pdbs.values() if view.covers(e.pod)]
        w._deleting[e.pod.key] = REASON_RESCHEDULED
        if w.cluster.evict(e.pod, f"rescheduled by {e.plugin}") is not None:
            w._deleting.pop(e.pod.key, None)
            return False
        if any(b.disruptions_allowed <= 0 for b in budgets):
            self.budget_violations += 1  # the Eviction API let a pod go past its budget
        now = w.clock.now()
        self.evictions.append((now, e))
        ctrl = e.pod.controller
        owner = ctrl.uid if ctrl is not None else e.pod.uid
        if (owner, e.to) in self._moved_from and now - self._moved_from[
            (owner, e.to)
        ] < self.spec.options.cooldown:
            self.loops += 1  # a replica moved back to a node its workload was moved off recently
        self._moved_from[(owner, e.node)] = now
        return True

    def _note_resolved(self) -> None:
        for key, (_, _, moves) in list(self.nominated.items()):
            rec = self.world.records.get(key)
            if rec is None:
                del self.nominated[key]
            elif rec.node is not None:
                self.resolved[key] = moves
                del self.nominated[key]

    # ------------------------------------------------------------------ metrics.json
    def metrics(self) -> dict[str, Any]:
        self._note_resolved()
        w = self.world
        ready = []
        for t, e in self.evictions:
            ctrl = e.pod.controller
            if ctrl is None:
                continue
            later = [
                r.bound_at - t
                for r in w.records.values()
                if r.bound_at is not None
                and r.bound_at >= t
                and r.owner is not None
                and r.created_at >= t
                and _owned_by(w, r.key, ctrl.uid)
            ]
            if later:
                ready.append(min(later))
        n = len(self.evictions)
        before = self.imbalance_before
        return {
            "runs": self.runs,
            "evictions": n,
            "plans": self.plans,
            "plans_aborted": self.plans_aborted,
            "pending_resolved": len(self.resolved),
            "budget_violations": self.budget_violations,
            "moves_per_resolved_pod": round(sum(self.resolved.values()) / len(self.resolved), 6)
            if self.resolved
            else None,
            "eviction_loops": self.loops,
            "replacement_ready_p50": round(statistics.median(ready), 6) if ready else None,
            "imbalance_reduction_per_eviction": round((before - self.imbalance()) / n, 6)
            if n and before is not None
            else None,
        }


def cluster_state(w: World) -> ClusterState:
    """The world as the rescheduler sees it: pods' ages counted from their creation in virtual time."""
    now = w.clock.now()
    pods = []
    for key, raw in w.cluster.pods.items():
        rec = w.records.get(key)
        created = rec.created_at if rec is not None else now
        meta = {**raw["metadata"], "creationTimestamp": _rfc3339(created)}
        pods.append(parse_pod({**raw, "metadata": meta}))
    nodes = [v for v in w.node_views.values()]
    pdbs = [view for _, view in w.cluster.pdbs.values()]
    return ClusterState(nodes, pods, pdbs, now=now)


def _owned_by(world: World, key: str, uid: str) -> bool:
    raw = world.cluster.pods.get(key)
    if raw is None:
        return False
    return any(str(o.get("uid")) == uid for o in raw["metadata"].get("ownerReferences") or ())


def _registry() -> Any:
    from harmonic.plugins.registry import default_registry

    return default_registry()


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def attach(world: World) -> None:
    """Wire the disruption controller (PDBs) and the rescheduler (``rescheduler:``) into a world."""
    DisruptionController(world)
    if world.plan.rescheduler is not None:
        world.rescheduler = SimRescheduler(world, world.plan.rescheduler)
        world.rescheduler.start()


def _metrics(world: World) -> dict[str, Any]:
    r = getattr(world, "rescheduler", None)
    return {"rescheduler": r.metrics()} if r is not None else {}


EXTRA_METRICS.append(_metrics)
