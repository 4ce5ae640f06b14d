"""The event-driven engine: one world (in-memory cluster + the real ``Scheduler`` + controllers + a
virtual clock) per profile, each fed the plan's timeline.

A world's loop: apply the actions due now, run the controllers' reactions, schedule until the active
queue is empty (scheduling takes no virtual time), then jump the clock to the next thing that can
happen — the next action, a controller's timer (a pod finishing, a Job backoff, a taint eviction), or
the scheduler queue's next wake-up (backoff expiry, unschedulable flush) — recording metric samples
every ``sampleInterval`` on the way. Without a scenario ``duration`` the run ends when nothing more can
happen (no action, no timer, and only unschedulable pods left, which retrying cannot place).

Pods run from binding until their ``duration`` of work is done at the ground truth's slowdown
(``truth.progress``; then they succeed) or until deleted; failed nodes' pods are
evicted when their ``unreachable`` toleration runs out and recreated by their controllers; drains evict
through the Eviction API (refusals retried every 5 s until the event's timeout), as kubectl drain does.
Deletions the world did not make are the scheduler's preemptions.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from harmonic.api.node import ZONE_LABEL, Node, parse_node
from harmonic.api.pod import parse_pod
from harmonic.api.resources import CPU
from harmonic.api.taints import NO_EXECUTE, NO_SCHEDULE, Taint, parse_tolerations
from harmonic.cluster.memory import InMemoryCluster
from harmonic.framework.registry import Registry
from harmonic.scheduler.clock import ManualClock
from harmonic.scheduler.scheduler import UNSCHEDULABLE_FLUSH_PERIOD, Scheduler
from harmonic.signals.graph import AFFINITY_GRAPH
from harmonic.signals.usage import NODE_USAGE
from harmonic.sim import batch, feedback
from harmonic.sim import workloads as wl
from harmonic.sim.mesh import MeshCounters, graph_service_for
from harmonic.sim.objects import UNREACHABLE_TAINT
from harmonic.sim.plan import (
    AddNodes,
    CreateObject,
    DeleteObject,
    DeletePods,
    DrainNode,
    FailNode,
    FailZone,
    Plan,
    RestoreZone,
    Scale,
    Timed,
)
from harmonic.sim.profiles import ProfileRun
from harmonic.sim.records import PodRecord
from harmonic.sim.truth.observer import TruthObserver
from harmonic.sim.truth.progress import BatchProgress

Obj = Mapping[str, Any]
DRAIN_RETRY_SECONDS = 5.0

REASON_PREEMPTED = "preempted"
REASON_DRAINED = "drained"
REASON_NODE_FAILED = "node failed"
REASON_DELETED = "deleted by event"


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


class World:
    """One profile's copy of the cluster, driven through the plan. Implements ``workloads.Host``."""

    def __init__(self, plan: Plan, run: ProfileRun, registry: Registry) -> None:
        from harmonic.sim.metrics import Recorder

        self.plan = plan
        self.run_spec = run
        self.profile = run.name
        self.seed = plan.seed
        self.clock = ManualClock()
        self.cluster = InMemoryCluster(self.clock.now)
        services = self.cluster.scheduler_services()
        self.mesh_counters: MeshCounters | None = None
        #: What pods really use (harmonic.sim.usage.truth.UsageTruth) when the scenario has ``usage:``.
        self.usage: Any = None
        self.graph = graph_service_for(run.profile, self)
        if self.graph is not None:
            services[AFFINITY_GRAPH.name] = self.graph
        self.feedback = feedback.install(self, services)
        #: The ``node_usage`` service of load-aware profiles (harmonic.sim.usage.exporters).
        self.usage_model: Any = None
        if plan.usage is not None:
            from harmonic.sim.usage.exporters import usage_model_for
            from harmonic.sim.usage.truth import UsageTruth

            self.usage = UsageTruth(self)
            self.usage_model = usage_model_for(run.profile, self)
            if self.usage_model is not None:
                services[NODE_USAGE.name] = self.usage_model
        self.scheduler = Scheduler(
            run.config,
            registry,
            self.cluster,
            clock=self.clock,
            seed=plan.seed,
            services=services,
        )
        self.cluster.connect(self.scheduler)
        self.cluster.subscribe(self._on_node, self._on_pod, replay=False)
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._timer_seq = itertools.count()
        #: Timers called off before they ran (dropped when they reach the top of the heap).
        self._cancelled: set[int] = set()
        self._pod_seq = itertools.count()
        self.controllers: dict[str, wl.Controller] = {}
        #: Live pods (present in the cluster) by key.
        self.records: dict[str, PodRecord] = {}
        self.node_views: dict[str, Node] = {}
        self.failed_nodes: set[str] = set()
        self.failed_zones: set[str] = set()
        #: node -> how many times it failed (an eviction timer belongs to one failure).
        self._failure_generation: dict[str, int] = {}
        #: CPU request (cores) x run time of every pod that succeeded.
        self.cpu_seconds_completed = 0.0
        #: workload -> node -> running replicas.
        self.replicas_on: dict[str, Counter[str]] = defaultdict(Counter)
        #: node -> bound pods not owned by a DaemonSet.
        self.workload_pods_on: Counter[str] = Counter()
        self.stats: Counter[str] = Counter()
        self.time_to_schedule: list[float] = []
        self.notes: list[str] = []
        self.attempts = 0
        self.scheduling_seconds = 0.0
        self.wall_seconds = 0.0
        self._deleting: dict[str, str] = {}
        self._creating: tuple[wl.Controller | None, float | None] | None = None
        self.truth = TruthObserver(self)
        self.progress = BatchProgress(self, self.truth.interference, self._work_done)
        self.recorder = Recorder(self)
        self.batch = batch.BatchTracker(self)
        #: harmonic.sim.rescheduler.SimRescheduler when the scenario has a ``rescheduler:`` key.
        self.rescheduler: Any = None

    # ================================================================== Host (for controllers)
    def now(self) -> float:
        return self.clock.now()

    def create_pod(self, manifest: Obj, owner: wl.Controller | None, run_for: float | None) -> str | None:
        key = _key(manifest)
        if key in self.cluster.pods:
            return None
        spec = manifest.get("spec") or {}
        if spec.get("schedulerName") != self.profile:
            manifest = {**manifest, "spec": {**spec, "schedulerName": self.profile}}
        self._creating = (owner, run_for)
        try:
            self.cluster.create_pod(manifest)
        finally:
            self._creating = None
        return key

    def delete_pod(self, key: str, reason: str) -> None:
        if key not in self.cluster.pods:
            return
        self._deleting[key] = reason
        ns, name = key.split("/", 1)
        self.cluster.delete_pod(ns, name)

    def pod_node(self, key: str) -> str | None:
        rec = self.records.get(key)
        return rec.node if rec is not None else None

    def pod_order(self, key: str) -> tuple[float, int]:
        rec = self.records[key]
        return (rec.bound_at if rec.bound_at is not None else 0.0, rec.seq)

    def after(self, delay: float, fn: Callable[[], None]) -> int:
        """Run ``fn`` ``delay`` seconds from now; the handle ``cancel`` takes."""
        seq = next(self._timer_seq)
        heapq.heappush(self._timers, (self.clock.now() + max(delay, 0.0), seq, fn))
        return seq

    def cancel(self, handle: int) -> None:
        """Call off a timer: the clock no longer stops for it (a re-planned finish)."""
        self._cancelled.add(handle)

    def _next_timer(self) -> float | None:
        while self._timers and self._timers[0][1] in self._cancelled:
            self._cancelled.discard(heapq.heappop(self._timers)[1])
        return self._timers[0][0] if self._timers else None

    def nodes(self) -> Mapping[str, Node]:
        return self.node_views

    def publish(self, kind: str, namespace: str, name: str, template: Mapping[str, Any]) -> None:
        labels = (template.get("metadata") or {}).get("labels") or {}
        self.cluster.apply_workload(
            {
                "kind": kind,
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"selector": {"matchLabels": dict(labels)}},
            }
        )

    def unpublish(self, kind: str, namespace: str, name: str) -> None:
        self.cluster.delete_workload(kind, namespace, name)

    # ================================================================== cluster events
    def _on_node(self, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            assert old is not None
            self.node_views.pop(str(old["metadata"]["name"]), None)
        else:
            self.node_views[str(new["metadata"]["name"])] = parse_node(new)
        for ctl in self.controllers.values():
            ctl.nodes_changed()

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        if old is None and new is not None:
            self._created(new)
        elif new is None and old is not None:
            self._gone(old)
        elif old is not None and new is not None:
            node = (new.get("spec") or {}).get("nodeName")
            rec = self.records.get(_key(new))
            if node and rec is not None and rec.node is None:
                self._bound(rec, str(node))

    def _created(self, pod: Obj) -> None:
        owner, run_for = self._creating or (None, None)
        key = _key(pod)
        rec = PodRecord(
            key=key,
            uid=str(pod["metadata"]["uid"]),
            seq=next(self._pod_seq),
            created_at=self.clock.now(),
            owner=owner,
            workload=owner.workload if owner is not None else f"Pod/{key}",
            run_for=run_for,
            daemon=isinstance(owner, wl.DaemonSetController),
        )
        self.records[key] = rec
        self.stats["pods_created"] += 1
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            self._bound(rec, str(node))

    def _bound(self, rec: PodRecord, node: str) -> None:
        now = self.clock.now()
        rec.node, rec.bound_at = node, now
        self.stats["pods_scheduled"] += 1
        self.time_to_schedule.append(now - rec.created_at)
        self.replicas_on[rec.workload][node] += 1
        if not rec.daemon:
            self.workload_pods_on[node] += 1
        truth = self.truth.bound(rec)
        view = self.node_views.get(node)
        alloc = float(view.allocatable.get(CPU, 0)) if view is not None else 0.0
        self.progress.bound(rec.key, node, truth, alloc, rec.run_for)
        if self.usage is not None:
            self.usage.bound(rec)
        if rec.workload in self.truth.topology_workloads:
            self._traffic_changed()
        if node in self.failed_nodes:
            self._taint_eviction(rec)
        if rec.owner is not None:
            rec.owner.pod_bound(rec.key)

    def _gone(self, pod: Obj) -> None:
        key = _key(pod)
        rec = self.records.pop(key, None)
        if rec is None:
            return
        reason = self._deleting.pop(key, REASON_PREEMPTED)
        self.truth.gone(rec)
        if rec.node is not None:
            self.progress.gone(key, rec.node)
        if self.usage is not None:
            self.usage.gone(rec)
        if reason == wl.REASON_SUCCEEDED and rec.run_for is not None:
            # The work done, not the time it took: a pod slowed by its neighbours (or throttled)
            # completes no more work by running longer.
            cores = parse_pod(pod).requests.get(CPU, 0) / 1000
            self.cpu_seconds_completed += cores * rec.run_for
        if rec.node is not None:
            self.replicas_on[rec.workload][rec.node] -= 1
            if not self.replicas_on[rec.workload][rec.node]:
                del self.replicas_on[rec.workload][rec.node]
            if not rec.daemon:
                self.workload_pods_on[rec.node] -= 1
                if not self.workload_pods_on[rec.node]:
                    del self.workload_pods_on[rec.node]
        self.stats[_STAT_OF.get(reason, "pods_deleted")] += 1
        if rec.workload in self.truth.topology_workloads:
            self._traffic_changed()
        if rec.owner is not None:
            rec.owner.pod_gone(key, reason)

    def _work_done(self, key: str) -> None:
        rec = self.records.get(key)
        if rec is not None:
            self._finish(key, rec.uid)

    def _finish(self, key: str, uid: str) -> None:
        rec = self.records.get(key)
        if rec is not None and rec.uid == uid:
            owed = self.usage.extra_time(key) if self.usage is not None else 0.0
            if owed > 0:  # throttled: the work is not done yet
                self.after(owed, lambda: self._finish(key, uid))
                return
            self.delete_pod(key, wl.REASON_SUCCEEDED)

    # ================================================================== actions
    def apply(self, timed: Timed) -> None:
        a = timed.action
        if isinstance(a, (CreateObject, DeleteObject)) and batch.apply(self.cluster, a):
            return
        if isinstance(a, CreateObject):
            ctl = wl.make_controller(self, a.obj)
            self.controllers[ctl.key] = ctl
            for child in ctl.child_controllers():
                self.controllers[child.key] = child
            ctl.start()
        elif isinstance(a, DeleteObject):
            gone = self.controllers.pop(a.key, None)
            if gone is not None:
                for child in gone.child_controllers():
                    self.controllers.pop(child.key, None)
                gone.stop()
        elif isinstance(a, AddNodes):
            for n in a.nodes:
                self.cluster.add_node(n)
        elif isinstance(a, DrainNode):
            self._drain(a, timed.origin)
        elif isinstance(a, FailNode):
            self._fail(a.node)
        elif isinstance(a, FailZone):
            self.failed_zones.add(a.zone)
            for name in self._zone_nodes(a.zone):
                self._fail(name)
        elif isinstance(a, RestoreZone):
            self.failed_zones.discard(a.zone)
            for name in self._zone_nodes(a.zone):
                self._restore(name)
        elif isinstance(a, Scale):
            target = self.controllers.get(a.key)
            if target is None:
                self.notes.append(f"{timed.time:g}s {timed.origin}: {a.key} no longer exists; not scaled")
            else:
                target.scale(a.replicas)
        elif isinstance(a, DeletePods):
            self._delete_pods(a, timed.origin)

    def _update_node(self, name: str, **spec_changes: Any) -> dict[str, Any]:
        raw = self.cluster.nodes[name]
        new = {**raw, "spec": {**(raw.get("spec") or {}), **spec_changes}}
        return new

    def _fail(self, name: str) -> None:
        if name not in self.cluster.nodes or name in self.failed_nodes:
            return
        now = self.clock.now()
        raw = self.cluster.nodes[name]
        taints = [t for t in (raw.get("spec") or {}).get("taints") or () if t.get("key") != UNREACHABLE_TAINT]
        taints += [
            {"key": UNREACHABLE_TAINT, "effect": NO_SCHEDULE},
            {"key": UNREACHABLE_TAINT, "effect": NO_EXECUTE, "timeAdded": f"t={now:g}"},
        ]
        status = dict(raw.get("status") or {})
        status["conditions"] = [c for c in status.get("conditions") or () if c.get("type") != "Ready"] + [
            {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}
        ]
        self.failed_nodes.add(name)
        self._failure_generation[name] = self._failure_generation.get(name, 0) + 1
        self._traffic_changed()
        new = {**raw, "spec": {**(raw.get("spec") or {}), "taints": taints}, "status": status}
        self.cluster.update_node(new)
        for rec in [r for r in self.records.values() if r.node == name]:
            self._taint_eviction(rec)

    def _traffic_changed(self) -> None:
        if self.mesh_counters is not None:
            self.mesh_counters.observe(self.clock.now())

    def _zone_nodes(self, zone: str) -> list[str]:
        return sorted(n for n, v in self.node_views.items() if v.labels.get(ZONE_LABEL) == zone)

    def _restore(self, name: str) -> None:
        """The node answers again: Ready, and the node lifecycle controller removes its taints."""
        if name not in self.cluster.nodes or name not in self.failed_nodes:
            return
        raw = self.cluster.nodes[name]
        taints = [t for t in (raw.get("spec") or {}).get("taints") or () if t.get("key") != UNREACHABLE_TAINT]
        status = dict(raw.get("status") or {})
        status["conditions"] = [c for c in status.get("conditions") or () if c.get("type") != "Ready"] + [
            {"type": "Ready", "status": "True", "reason": "KubeletReady"}
        ]
        self.failed_nodes.discard(name)
        self._traffic_changed()
        self.cluster.update_node(
            {**raw, "spec": {**(raw.get("spec") or {}), "taints": taints}, "status": status}
        )

    def _taint_eviction(self, rec: PodRecord) -> None:
        """The taint manager: evict a pod on an unreachable node when its toleration runs out."""
        raw = self.cluster.pods[rec.key]
        tols = (raw.get("spec") or {}).get("tolerations") or []
        compiled = parse_tolerations(rec.key, "spec.tolerations", tols)
        taint = Taint(UNREACHABLE_TAINT, "", NO_EXECUTE)
        seconds: list[float] = []
        for t, c in zip(tols, compiled, strict=True):
            if c.tolerates(taint):
                s = t.get("tolerationSeconds")
                if s is None:
                    return  # tolerated forever
                seconds.append(max(float(s), 0.0))
        delay = min(seconds) if seconds else 0.0
        key, uid, node = rec.key, rec.uid, rec.node
        generation = self._failure_generation.get(node or "")

        def evict() -> None:
            cur = self.records.get(key)
            # A node that came back before the toleration ran out keeps its pods: the taint manager
            # cancels evictions when the taint goes, and a later failure counts the toleration anew.
            if (
                cur is not None
                and cur.uid == uid
                and cur.node == node
                and self._failure_generation.get(node or "") == generation
                and node in self.failed_nodes
            ):
                self.delete_pod(key, REASON_NODE_FAILED)

        self.after(delay, evict)

    def _drain(self, a: DrainNode, origin: str) -> None:
        if a.node not in self.cluster.nodes:
            return
        self.cluster.update_node(self._update_node(a.node, unschedulable=True))
        victims = [r for r in self.records.values() if r.node == a.node and not r.daemon]
        unmanaged = [r.key for r in victims if r.owner is None or isinstance(r.owner, wl.BarePod)]
        if unmanaged and not a.force:
            self.stats["drains_refused"] += 1
            self.notes.append(
                f"{self.clock.now():g}s {origin}: drain {a.node}: cannot delete pods that declare no "
                f"controller (force: true deletes them): {', '.join(sorted(unmanaged))}"
            )
            return
        deadline = self.clock.now() + a.timeout
        for r in sorted(victims, key=lambda r: r.key):
            self._evict(r.key, r.uid, deadline, origin)

    def _evict(self, key: str, uid: str, deadline: float, origin: str) -> None:
        rec = self.records.get(key)
        if rec is None or rec.uid != uid:
            return
        self._deleting[key] = REASON_DRAINED
        st = self.cluster.evict(parse_pod(self.cluster.pods[key]), "drained")
        if st is None:
            return
        self._deleting.pop(key, None)
        if self.clock.now() + DRAIN_RETRY_SECONDS <= deadline:
            self.after(DRAIN_RETRY_SECONDS, lambda: self._evict(key, uid, deadline, origin))
        else:
            self.stats["evictions_given_up"] += 1
            self.notes.append(f"{self.clock.now():g}s {origin}: gave up evicting {key}: {st.message}")

    def _delete_pods(self, a: DeletePods, origin: str) -> None:
        prefix = a.namespace + "/"
        names = set(a.names)
        found = []
        for key in sorted(self.records):
            if not key.startswith(prefix):
                continue
            if key[len(prefix) :] in names:
                found.append(key)
            elif a.selector is not None:
                labels = (self.cluster.pods[key].get("metadata") or {}).get("labels") or {}
                if a.selector.matches(labels):
                    found.append(key)
        if a.count is not None and len(found) > a.count:
            found = sorted(random.Random(f"{self.seed}:{origin}").sample(found, a.count))
        for key in found:
            self.delete_pod(key, REASON_DELETED)

    # ================================================================== the loop
    def _run_timers(self) -> bool:
        now = self.clock.now()
        ran = False
        while (t := self._next_timer()) is not None and t <= now:
            _, _, fn = heapq.heappop(self._timers)
            fn()
            ran = True
        return ran

    def _schedule(self) -> None:
        sched = self.scheduler
        if self.graph is not None:
            self.graph.maybe_refresh(self.clock.now())
        if self.usage_model is not None:
            self.usage_model.maybe_refresh(self.clock.now())
        while True:
            t0 = time.perf_counter()
            r = sched.schedule_one()
            if r is None:
                return
            self.scheduling_seconds += time.perf_counter() - t0
            if r.node is not None or r.status is not None:
                self.attempts += 1
            if (t := self._next_timer()) is not None and t <= self.clock.now():
                self._run_timers()

    def run(self, progress: Callable[[int], None] | None = None) -> None:
        wall0 = time.perf_counter()
        plan = self.plan
        end = plan.duration if plan.duration is not None else math.inf
        for n in plan.nodes:
            self.cluster.add_node(n)
        for svc in plan.services:
            self.cluster.apply_workload(svc)
        if plan.pdbs or plan.rescheduler is not None:
            from harmonic.sim.rescheduler import attach

            attach(self)
        if self.feedback is not None:
            self.feedback.start()
        if self.usage is not None:
            self.usage.start()
        timeline = plan.timeline
        i = 0
        next_sample = 0.0
        while True:
            now = self.clock.now()
            while i < len(timeline) and timeline[i].time <= now:
                self.apply(timeline[i])
                i += 1
                if progress is not None:
                    progress(1)
            self._run_timers()
            self._schedule()
            timer = self._next_timer()
            if (i < len(timeline) and timeline[i].time <= now) or (timer is not None and timer <= now):
                continue
            candidates = []
            if i < len(timeline):
                candidates.append(timeline[i].time)
            if timer is not None:
                candidates.append(timer)
            wake = batch.next_wakeup(self.scheduler)
            if wake is not None:
                counts = self.scheduler.queue.counts()
                # With nothing else left to happen, retrying unschedulable pods cannot place them.
                if candidates or counts["backoff"] or counts["active"] or end < math.inf:
                    candidates.append(wake if wake > now else now + UNSCHEDULABLE_FLUSH_PERIOD)
            t_next = min(candidates) if candidates else (end if end < math.inf else now)
            self.batch.observe(now, min(t_next, end))
            stop_at = min(t_next, end)
            while next_sample < stop_at:
                self.recorder.sample(next_sample)
                next_sample += plan.sample_interval
            if t_next >= end or not candidates:
                if end < math.inf:
                    self.clock.set(end)
                break
            self.clock.set(t_next)
        self.recorder.sample(self.clock.now(), final=True)
        if progress is not None and i < len(timeline):
            progress(len(timeline) - i)
        self.wall_seconds = time.perf_counter() - wall0

    # ================================================================== inspection
    def placement(self) -> dict[str, str]:
        """pod key -> node for every running pod."""
        return {k: r.node for k, r in self.records.items() if r.node is not None}

    def pending(self) -> list[PodRecord]:
        return [r for r in self.records.values() if r.node is None]

    def zone_of(self) -> dict[str, str]:
        return {n: v.labels.get(ZONE_LABEL, "") for n, v in self.node_views.items()}


_STAT_OF = {
    wl.REASON_SUCCEEDED: "pods_completed",
    REASON_PREEMPTED: "pods_preempted",
    REASON_DRAINED: "pods_evicted",
    REASON_NODE_FAILED: "pods_evicted",
    REASON_DELETED: "pods_deleted",
    "evicted: memory pressure": "pods_evicted",
}


class Simulation:
    """Run a plan under each profile in turn, each in its own world."""

    def __init__(
        self,
        plan: Plan,
        runs: list[ProfileRun],
        registry: Registry,
        on_world: Callable[[World], None] | None = None,
    ) -> None:
        if not runs:
            raise ValueError("no profile to run")
        self.plan = plan
        self.runs = runs
        self.registry = registry
        self.worlds: dict[str, World] = {}
        #: Called with each world before it runs (decision recording attaches here).
        self.on_world = on_world

    def run(self, progress: Callable[[str, int], None] | None = None) -> dict[str, World]:
        """``progress(profile, n)`` is told of every n timeline actions applied."""
        for r in self.runs:
            world = World(self.plan, r, self.registry)
            if self.on_world is not None:
                self.on_world(world)
            world.run(None if progress is None else _bound_progress(progress, r.name))
            self.worlds[r.name] = world
        return self.worlds


def _bound_progress(progress: Callable[[str, int], None], name: str) -> Callable[[int], None]:
    return lambda n: progress(name, n)
