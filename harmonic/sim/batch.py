"""PodGroups and ElasticQuotas in simulator scenarios, and the ``gangs`` / ``quota`` metrics.

Scenario manifests may hold ``scheduling.x-k8s.io/v1alpha1`` PodGroups and ElasticQuotas (checked by
``objects.check_batch_object``); created at their workload entry's ``at`` (deleted after its
``lifetime``), they go to the world's ``"batch"`` store, where Coscheduling and CapacityScheduling
read them. Pods join gangs through the label ``scheduling.x-k8s.io/pod-group``, so a Job's pods (or
any workload's) form a gang.

Pods waiting at Permit time out on the virtual clock: their deadlines are wake-ups of the engine.

Metrics, per profile, present when the scenario has PodGroups (``gangs``) or ElasticQuotas
(``quota``):

- ``gangs``: ``total`` PodGroups, ``completed`` (reached ``minMember`` bound pods), ``timed_out``
  (pods rejected at a Permit timeout), ``partially_held_seconds`` (gang-seconds during which a gang had
  pods waiting at Permit without its quorum), ``multi_held_seconds`` (seconds during which two or more
  gangs did: the deadlock pattern), ``partially_bound_max`` (most gangs ever bound short of their
  quorum before reaching it), ``wait_p50`` / ``wait_p99`` (first pod created to quorum, seconds of
  completed gangs).
- ``quota``: ``borrowed_share`` (time-average share of the cluster's cpu used beyond the quotas' min),
  ``reclaim_preemptions`` (CapacityScheduling's preemptions), ``min_violation_seconds``
  (namespace-seconds with pending pods while using less cpu than their min).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from harmonic.api.batch import POD_GROUP_LABEL
from harmonic.api.resources import CPU, to_units
from harmonic.cluster.memory import InMemoryCluster
from harmonic.framework.snapshot import CPU_COL
from harmonic.scheduler.scheduler import Scheduler
from harmonic.sim.metrics import EXTRA_METRICS
from harmonic.sim.objects import BATCH_KINDS
from harmonic.sim.plan import CreateObject, DeleteObject

Obj = Mapping[str, Any]


class BatchWorld(Protocol):
    """What gang and quota tracking reads of a profile's simulated world (``engine.World``): a protocol,
    so that this module does not import the engine, which imports it."""

    @property
    def profile(self) -> str: ...

    @property
    def cluster(self) -> InMemoryCluster: ...

    @property
    def scheduler(self) -> Scheduler: ...

    def now(self) -> float: ...


def apply(cluster: InMemoryCluster, action: CreateObject | DeleteObject) -> bool:
    """Create or delete a PodGroup or ElasticQuota; False for any other object."""
    if isinstance(action, CreateObject):
        if action.obj.kind not in BATCH_KINDS:
            return False
        cluster.apply_batch(action.obj.manifest)
        return True
    kind, ns, name = action.key.split("/", 2)
    if kind not in BATCH_KINDS:
        return False
    cluster.delete_batch(kind, ns, name)
    return True


def next_wakeup(scheduler: Scheduler) -> float | None:
    """The queue's next wake-up, or an earlier Permit deadline of a waiting pod."""
    times = [t for t in (scheduler.queue.next_wakeup(),) if t is not None]
    times.extend(d for wp in scheduler.waiting_pods.values() if (d := wp.next_deadline) is not None)
    return min(times) if times else None


def _cpu(pod: Obj) -> int:
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or ():
        req = ((c.get("resources") or {}).get("requests") or {}).get(CPU)
        if req is not None:
            total += to_units(CPU, req)
    return total


class BatchTracker:
    """Follows gangs and quota usage of one world over virtual time."""

    def __init__(self, world: BatchWorld) -> None:
        self.world = world
        self.first_seen: dict[str, float] = {}
        self.bound: dict[str, set[str]] = {}
        self.quorum_at: dict[str, float] = {}
        self.cpu_used: Counter[str] = Counter()
        self.pending: Counter[str] = Counter()
        self.held = self.multi = self.borrowed = self.violation = 0.0
        self.partial_max = 0
        self.elapsed = 0.0
        world.cluster.subscribe(lambda o, n: None, self._on_pod, replay=False)

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        for obj, sign in ((old, -1), (new, 1)):
            if obj is None:
                continue
            meta = obj.get("metadata") or {}
            ns = str(meta.get("namespace") or "default")
            if (obj.get("spec") or {}).get("nodeName"):
                self.cpu_used[ns] += sign * _cpu(obj)
            else:
                self.pending[ns] += sign
        if new is None:
            return
        meta = new.get("metadata") or {}
        gang = (meta.get("labels") or {}).get(POD_GROUP_LABEL)
        if not gang:
            return
        full = f"{meta.get('namespace') or 'default'}/{gang}"
        self.first_seen.setdefault(full, self.world.now())
        if (new.get("spec") or {}).get("nodeName") and full not in self.quorum_at:
            members = self.bound.setdefault(full, set())
            members.add(str(meta.get("name")))
            pg = self.world.cluster.batch.pod_groups.get(tuple(full.split("/", 1)))  # type: ignore[arg-type]
            if pg is not None and len(members) >= pg.min_member:
                self.quorum_at[full] = self.world.now()
                del self.bound[full]

    def observe(self, t0: float, t1: float) -> None:
        """The world stays as it is from ``t0`` to ``t1``."""
        dt = max(t1 - t0, 0.0)
        if dt == 0:
            return
        self.elapsed += dt
        holding = {_gang(wp.pod.raw) for wp in self.world.scheduler.waiting_pods.values()}
        self.held += len(holding) * dt
        self.multi += dt if len(holding) > 1 else 0.0
        self.partial_max = max(self.partial_max, sum(1 for b in self.bound.values() if b))
        quotas = self.world.cluster.batch.quotas
        if quotas:
            snap = self.world.scheduler.cache.snapshot
            cap = float(snap.allocatable[snap.order, CPU_COL].sum()) or 1.0
            over = 0.0
            for ns, q in quotas.items():
                lo = (q.min or {}).get(CPU, 0)
                over += max(0.0, self.cpu_used[ns] - lo)
                if self.pending[ns] > 0 and self.cpu_used[ns] < lo:
                    self.violation += dt
            self.borrowed += dt * over / cap

    def metrics(self) -> dict[str, Any]:
        store = self.world.cluster.batch
        out: dict[str, Any] = {}
        groups = set(self.first_seen) | {f"{ns}/{n}" for ns, n in store.pod_groups}
        if groups:
            waits = [self.quorum_at[g] - self.first_seen[g] for g in self.quorum_at if g in self.first_seen]
            events = self.world.cluster.events
            out["gangs"] = {
                "total": len(groups),
                "completed": len(self.quorum_at),
                "timed_out": sum(1 for e in events if "rejected due to timeout" in e.message),
                "partially_held_seconds": round(self.held, 3),
                "multi_held_seconds": round(self.multi, 3),
                "partially_bound_max": self.partial_max,
                "wait_p50": round(float(np.percentile(waits, 50)), 3) if waits else 0.0,
                "wait_p99": round(float(np.percentile(waits, 99)), 3) if waits else 0.0,
            }
        if store.quotas:
            fw = self.world.scheduler.frameworks.get(self.world.profile)
            cs = fw.plugins.get("CapacityScheduling") if fw is not None else None
            out["quota"] = {
                "borrowed_share": round(self.borrowed / self.elapsed, 6) if self.elapsed else 0.0,
                "reclaim_preemptions": int(getattr(cs, "reclaim_preemptions", 0)),
                "min_violation_seconds": round(self.violation, 3),
            }
        return out


def _gang(raw: Obj) -> str:
    meta = raw.get("metadata") or {}
    return f"{meta.get('namespace')}/{(meta.get('labels') or {}).get(POD_GROUP_LABEL, '')}"


class _Tracked(Protocol):
    @property
    def batch(self) -> BatchTracker: ...


def batch_metrics(world: _Tracked) -> dict[str, Any]:
    """``EXTRA_METRICS`` entry: the engine keeps a world's tracker as ``world.batch``."""
    return world.batch.metrics()


EXTRA_METRICS.append(batch_metrics)
