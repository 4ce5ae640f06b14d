"""The live cluster adapter: Harmonic as a secondary scheduler of a real cluster (``harmonic run``).

``KubeClient`` is the ``SchedulerClient`` the scheduler and its plugins call:

- ``bind``: ``binding.PodBinder`` (POST ``pods/<name>/binding``), from the binder's threads, only
  while this replica may act as leader (fencing, see ``leader.py``). A refusal (not leader, node gone
  from the informer, 409/404/5xx) is an Error status: the scheduler forgets the assumed pod and
  retries it with backoff, or drops it when it was deleted or bound elsewhere meanwhile.
- ``evict``: POST ``pods/<name>/eviction`` (policy/v1); 429 (a PodDisruptionBudget forbids it) is a
  failure the caller sees; the victim gets a ``Preempted`` event.
- ``report_scheduled`` / ``report_failure``: Events as kube-scheduler writes them, and for failures the
  pod's ``PodScheduled=False`` condition (reason ``Unschedulable`` or ``SchedulerError``) by a status
  patch, skipped when the pod already carries that condition; ``set_nominated_node`` patches
  ``status.nominatedNodeName``. Events and patches go through queues drained by worker threads, so
  the scheduling thread never waits on the network; a patch is dropped once the pod is bound or its
  Binding is in flight, and carries the pod's resourceVersion as a precondition (``podstatus``).

``LiveScheduler`` wires it all: informers for nodes, pods (non-terminal, all schedulers: assigned pods
fill the cache, pending pods of our profiles fill the queue), and those behind the plugins' services
``"pdbs"``, ``"namespaces"`` and ``"workloads"`` (``services.LiveServices``: PodDisruptionBudgets,
namespaces, and the selectors of Services, ReplicationControllers, ReplicaSets and StatefulSets), and
``"batch"`` and ``"volumes"`` when a profile's plugins read them (storage changes reach the queue as
cluster events; ``KubeClient`` writes VolumeBinding's PreBind updates of PVs and claims); the
``Scheduler`` with a thread-pool binder; leader election from the configuration's ``leaderElection``;
moved pods' reservations kept in a ConfigMap beside the lease and restored when leadership starts
(``reservation_store``); metrics. ``run()`` blocks until ``stop()`` (SIGTERM) or until leadership is
lost, and returns the process exit code (1 when the lease was lost, as kube-scheduler exits then).
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from harmonic.api.pod import Pod
from harmonic.cluster.binding import PodBinder
from harmonic.cluster.events import EventRecorder, truncate_note
from harmonic.cluster.informer import Backoff, Informer, nodes_and_pods, resource_version
from harmonic.cluster.leader import LeaderElector, default_identity
from harmonic.cluster.podgroups import PodGroupStatusWriter
from harmonic.cluster.podstatus import StatusPatcher
from harmonic.cluster.reservation_store import ConfigMapStore, configmap_name
from harmonic.cluster.reservation_store import restore as restore_reservations
from harmonic.cluster.services import LiveServices, uses_batch_plugins, uses_service
from harmonic.cluster.transport import (
    ApiStatusError,
    Transport,
    TransportError,
    object_path,
)
from harmonic.framework.config import SchedulerConfiguration
from harmonic.framework.registry import Registry
from harmonic.framework.services import VOLUMES
from harmonic.framework.status import Code, Status
from harmonic.scheduler.metrics import SchedulerMetrics
from harmonic.scheduler.scheduler import Scheduler, ThreadBinder

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]
NOT_LEADER = "this replica is not the leader (lease lost or not renewed in time)"


#: The interpreter's thread switch interval for a scheduler process (default 5 ms). The scheduling
#: thread is CPU-bound while a dozen I/O threads (binds, events, watches) wake often; at 5 ms it is
#: preempted for each of them and waits to get the GIL back. 50 ms measured ~30 % more pods/s end to
#: end (benchmarks/live_scheduler.py) and less CPU, at the cost of up to that much latency for an I/O
#: thread's next step — small beside leader election's seconds.
SWITCH_INTERVAL = 0.05


def tune_process() -> None:
    """Process-wide settings for a process that runs a ``LiveScheduler`` (``harmonic run`` calls it)."""
    sys.setswitchinterval(SWITCH_INTERVAL)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class KubeClient:
    """``SchedulerClient`` over the API server. ``fence()`` returns the seconds a leader-only request
    may take, or None when this replica must not act (not the leader, or lease not renewed in time)."""

    def __init__(
        self,
        transport: Transport,
        pods: Informer,
        nodes: Informer,
        events: EventRecorder,
        status: StatusPatcher,
        fence: Callable[[], float | None],
    ) -> None:
        self.transport = transport
        self.pods = pods
        self.binder = PodBinder(transport, nodes)
        self.events = events
        self.status = status
        self.fence = fence
        #: Pods (namespace/name) whose Binding is being sent: their queued status patches are dropped.
        self._binding: set[str] = set()
        self._binding_lock = threading.Lock()

    def binding_in_flight(self, key: str) -> bool:
        with self._binding_lock:
            return key in self._binding

    # ------------------------------------------------------------------ ClusterClient
    def bind(self, pod: Pod, node_name: str) -> Status | None:
        remaining = self.fence()
        if remaining is None:
            return Status(Code.ERROR, f"binding {pod.key} refused: {NOT_LEADER}")
        # The lease fences the whole call, retries of a throttled answer included.
        deadline = time.monotonic() + remaining
        with self._binding_lock:
            self._binding.add(pod.key)
        try:
            return self.binder.bind(
                pod, node_name, timeout=min(self.transport.timeout, remaining), deadline=deadline
            )
        finally:
            with self._binding_lock:
                self._binding.discard(pod.key)

    def evict(self, pod: Pod, reason: str) -> Status | None:
        remaining = self.fence()
        if remaining is None:
            return Status(Code.ERROR, f"evicting {pod.key} refused: {NOT_LEADER}")
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod.name, "namespace": pod.namespace},
            "deleteOptions": {"preconditions": {"uid": pod.uid}},
        }
        path = object_path("v1", "pods", pod.namespace, pod.name) + "/eviction"
        try:
            self.transport.request("POST", path, body=body, timeout=min(self.transport.timeout, remaining))
        except ApiStatusError as e:
            if e.code == 404:
                return None  # already gone: what eviction wanted
            return Status(Code.ERROR, f"evicting {pod.key}: {e.message or e}")
        except TransportError as e:
            return Status(Code.ERROR, f"evicting {pod.key}: {e}")
        self.events.event(pod.raw, "Normal", "Preempted", "Preempting", reason, pod.scheduler_name)
        return None

    def set_nominated_node(self, pod: Pod, node_name: str) -> Status | None:
        if self.fence() is None:
            return Status(Code.ERROR, f"nominating a node for {pod.key} refused: {NOT_LEADER}")
        latest = self.pods.get(pod.key) or pod.raw
        if (latest.get("spec") or {}).get("nodeName"):
            return None  # bound meanwhile: a nomination would contradict the server (422)
        current = (latest.get("status") or {}).get("nominatedNodeName") or ""
        if current != node_name:
            self.status.patch(
                pod.namespace, pod.name, {"nominatedNodeName": node_name or None}, resource_version(latest)
            )
        return None

    # ------------------------------------------------------------------ VolumeBindingClient
    def update_persistent_volume(self, raw: Obj) -> Obj | Status:
        """VolumeBinding's PreBind: a PV pre-bound to its claim, written back whole (PUT, with the
        resourceVersion read: a PV changed meanwhile is a 409 and the pod is retried), as kube-scheduler's
        volume binder does."""
        return self._replace("persistentvolumes", None, raw)

    def update_persistent_volume_claim(self, raw: Obj) -> Obj | Status:
        """VolumeBinding's PreBind: a claim annotated with the node chosen for provisioning (PUT)."""
        namespace = str((raw.get("metadata") or {}).get("namespace") or "default")
        return self._replace("persistentvolumeclaims", namespace, raw)

    def _replace(self, plural: str, namespace: str | None, raw: Obj) -> Obj | Status:
        name = str((raw.get("metadata") or {}).get("name") or "")
        remaining = self.fence()
        if remaining is None:
            return Status(Code.ERROR, f"updating {plural} {name!r} refused: {NOT_LEADER}")
        kind = "PersistentVolume" if plural == "persistentvolumes" else "PersistentVolumeClaim"
        body = {"apiVersion": "v1", "kind": kind, **raw}
        try:
            got: Obj = self.transport.request(
                "PUT",
                object_path("v1", plural, namespace, name),
                body=body,
                timeout=min(self.transport.timeout, remaining),
            )
        except (ApiStatusError, TransportError) as e:
            return Status(Code.ERROR, f"updating {plural} {name!r}: {getattr(e, 'message', '') or e}")
        return got

    # ------------------------------------------------------------------ SchedulerClient
    def report_scheduled(self, pod: Pod, node_name: str) -> None:
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node_name}"
        self.events.event(pod.raw, "Normal", "Scheduled", "Binding", note, pod.scheduler_name)

    def report_failure(self, pod: Pod, reason: str, message: str) -> None:
        if self.fence() is None:
            return  # a replica that is not the leader writes nothing about pods
        self.events.event(pod.raw, "Warning", "FailedScheduling", "Scheduling", message, pod.scheduler_name)
        latest = self.pods.get(pod.key)
        if latest is None or (latest.get("spec") or {}).get("nodeName"):
            return  # deleted, or bound by someone else: no condition to write
        cond: dict[str, Any] = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": truncate_note(message),
        }
        old = next(
            (
                c
                for c in (latest.get("status") or {}).get("conditions") or ()
                if c.get("type") == "PodScheduled"
            ),
            None,
        )
        if old is not None and all(old.get(k) == v for k, v in cond.items()):
            return  # UpdatePodCondition: nothing changed, no patch
        cond["lastTransitionTime"] = (
            old["lastTransitionTime"]
            if old is not None and old.get("status") == "False" and old.get("lastTransitionTime")
            else _now()
        )
        cond["lastProbeTime"] = None
        self.status.patch(pod.namespace, pod.name, {"conditions": [cond]}, resource_version(latest))


class LiveScheduler:
    """A secondary scheduler attached to a cluster through ``transport``.

    ``identity``: the leader-election holder identity (``hostname_uuid`` by default).
    ``informer_backoff``: makes each informer's reconnect backoff (tests use short ones).
    ``events_api``: force ``events.k8s.io/v1`` or ``v1`` Events instead of asking the server.
    ``services``: handle services beside the cluster's own (e.g. the ``affinity_graph``).
    """

    def __init__(
        self,
        config: SchedulerConfiguration,
        registry: Registry,
        transport: Transport,
        *,
        identity: str | None = None,
        metrics: SchedulerMetrics | None = None,
        bind_workers: int = 16,
        informer_backoff: Callable[[], Backoff] = Backoff,
        event_retry_sleep: float = 10.0,
        events_api: str | None = None,
        seed: int = 0,
        services: Mapping[str, Any] | None = None,
    ) -> None:
        self.config = config
        self.transport = transport
        self.identity = identity or default_identity()
        self.metrics = metrics or SchedulerMetrics()
        batch = uses_batch_plugins(config)
        plugin_services = LiveServices(
            transport, informer_backoff, batch=batch, storage=uses_service(config, registry, VOLUMES)
        )
        self.informers: dict[str, Informer] = {
            **nodes_and_pods(transport, informer_backoff),
            **plugin_services.informers,
        }
        # kube-scheduler writes events through a client of its own (its own rate limit).
        self.events = EventRecorder(
            transport.with_limits(transport.limiter.qps, transport.limiter.burst),
            api=events_api,
            retry_sleep=event_retry_sleep,
            on_drop=self.metrics.events_dropped.inc,
        )
        self.status = StatusPatcher(
            transport, self.informers["pods"].get, lambda key: self.client.binding_in_flight(key)
        )
        le = config.leader_election
        self.elector: LeaderElector | None = None
        if le.leader_elect:
            self.elector = LeaderElector(
                transport,
                le,
                self.identity,
                on_started=self._start_scheduling,
                on_stopped=self._stopped_leading,
            )
        self.client = KubeClient(
            transport, self.informers["pods"], self.informers["nodes"], self.events, self.status, self._fence
        )
        self.scheduler = Scheduler(
            config,
            registry,
            self.client,
            seed=seed,
            binder=ThreadBinder(bind_workers),
            services={**plugin_services.services, **(services or {})},
            observer=self.metrics,
            recorder=self.metrics,
        )
        self.informers["nodes"].add_handler(self.scheduler.on_node)
        self.informers["pods"].add_handler(self.scheduler.on_pod)
        if plugin_services.volumes is not None:
            plugin_services.volumes.subscribe(self.scheduler.on_cluster_event)
        #: Moved pods' reservations, kept beside the lease (``reservation_store``).
        self.reservation_store = ConfigMapStore(
            transport, le.resource_namespace, configmap_name(le.resource_name), self._fence
        )
        self.scheduler.reservations.store = self.reservation_store
        #: PodGroup status, written as scheduler-plugins' controller does (profiles with Coscheduling).
        self.pod_group_status: PodGroupStatusWriter | None = None
        if batch:
            self.pod_group_status = PodGroupStatusWriter(
                transport, self.informers["podgroups"].list, self.informers["pods"].list, _rfc3339_now
            )
            self.informers["podgroups"].add_handler(self.pod_group_status.on_pod_group)
            self.informers["pods"].add_handler(self.pod_group_status.on_pod)
        self._stop = threading.Event()
        self._sched_stop = threading.Event()
        self._sched_thread: threading.Thread | None = None
        self._elector_stop = threading.Event()
        self._elector_thread: threading.Thread | None = None
        self.exit_code = 0
        self.synced = threading.Event()

    # ------------------------------------------------------------------ health
    def _fence(self) -> float | None:
        if self.elector is None:
            return self.transport.timeout
        return self.elector.remaining()

    @property
    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader

    def health_checks(self) -> dict[str, Callable[[], str | None]]:
        def informers() -> str | None:
            dead = [name for name, inf in self.informers.items() if self.synced.is_set() and not inf.alive]
            return f"informer(s) stopped: {', '.join(dead)}" if dead else None

        def leader_election() -> str | None:
            if self.elector is not None and self.elector.lost.is_set():
                return "leader election lost"
            return None

        def scheduler() -> str | None:
            t = self._sched_thread
            if t is not None and not t.is_alive() and not self._stop.is_set():
                return "scheduling loop stopped"
            return None

        return {"informers": informers, "leaderElection": leader_election, "scheduler": scheduler}

    def ready_checks(self) -> dict[str, Callable[[], str | None]]:
        def synced() -> str | None:
            return None if self.synced.is_set() else "informers have not synced yet"

        def current() -> str | None:
            # An informer that cannot list or watch (API server refusing, or restored with older state
            # and not yet relisted) feeds the scheduler a stale copy: not ready until it recovers.
            failing = [f"{name}: {inf.failing}" for name, inf in self.informers.items() if inf.failing]
            return "informer(s) not current: " + "; ".join(failing) if failing else None

        def stopping() -> str | None:
            return "shutting down" if self._stop.is_set() else None

        return {"informerSync": synced, "informersCurrent": current, "shutdown": stopping}

    # ------------------------------------------------------------------ lifecycle
    def run(self, sync_timeout: float | None = None) -> int:
        """Sync the informers, campaign for the lease (if enabled), schedule while leading; returns
        the exit code once stopped (0) or once leadership was lost (1)."""
        self.events.start()
        self.reservation_store.start()
        self.status.start()
        if self.pod_group_status is not None:
            self.pod_group_status.start()
        for inf in self.informers.values():
            inf.start()
        deadline = None if sync_timeout is None else time.monotonic() + sync_timeout
        while not self._stop.is_set():
            if all(inf.synced.is_set() for inf in self.informers.values()):
                break
            if deadline is not None and time.monotonic() > deadline:
                log.error("informers did not sync within %.0f s", sync_timeout)
                self.exit_code = 1
                self._shutdown()
                return self.exit_code
            self._stop.wait(0.05)
        if not self._stop.is_set():
            self.synced.set()
            # The cache is now mostly long-lived objects: keep the cyclic collector from rescanning
            # them (a full collection over ~10^6 objects stalls the loop for hundreds of milliseconds).
            gc.collect()
            gc.freeze()
            log.info(
                "caches synced",
                extra={name: len(inf) for name, inf in self.informers.items()},
            )
            if self.elector is not None:
                self._elector_thread = threading.Thread(
                    target=self.elector.run, args=(self._elector_stop,), name="leader-election", daemon=True
                )
                self._elector_thread.start()
            else:
                self._start_scheduling()
        # Never an untimed wait: a SIGTERM the kernel hands to another thread only sets CPython's
        # pending-signal flag, and the handler (StopOnSignal's) runs on the main thread once it is back
        # in the interpreter; an untimed lock wait would keep it out, and the scheduler would not stop.
        while not self._stop.wait(SIGNAL_CHECK_SECONDS):
            pass
        self._shutdown()
        return self.exit_code

    def stop(self) -> None:
        """Ask ``run`` to shut down cleanly (the SIGTERM handler calls this)."""
        self._stop.set()

    def _start_scheduling(self) -> None:
        if self._sched_thread is not None or self._stop.is_set():
            return
        log.info("starting to schedule", extra={"identity": self.identity})
        self._sched_thread = threading.Thread(target=self._loop, name="scheduler", daemon=True)
        self._sched_thread.start()

    def _loop(self) -> None:
        refresher = threading.Thread(target=self._refresh_pending, name="pending-gauge", daemon=True)
        refresher.start()
        try:
            # Here rather than on the elector's thread (its renewals must not wait on these reads), and
            # before the loop handles the first pod event: a replacement created meanwhile consumes its
            # reservation when its queued add event is handled.
            pods = self.informers["pods"].list()
            restore_reservations(self.reservation_store, self.scheduler.reservations, pods)
            self.scheduler.run(self._sched_stop)
        except Exception:
            log.exception("scheduling loop crashed")
            self.exit_code = 1
            self._stop.set()

    def _refresh_pending(self) -> None:
        """scheduler_pending_pods, sampled on the scheduling thread (the queue is not thread-safe)."""
        while not self._sched_stop.wait(1.0):
            self.scheduler.post(lambda: self.metrics.set_pending(self.scheduler.queue.counts()))

    def _stopped_leading(self) -> None:
        if self.elector is not None and self.elector.lost.is_set():
            self.exit_code = 1
            self._stop.set()

    def _shutdown(self) -> None:
        self._stop.set()
        # Stop scheduling; Scheduler.run finishes the in-flight bindings before returning.
        self._sched_stop.set()
        _join(self._sched_thread, "the scheduling loop")
        self.reservation_store.stop()  # its last write, while the lease is still held
        self._elector_stop.set()  # releases the lease if still held
        _join(self._elector_thread, "leader election")
        for inf in self.informers.values():
            inf.stop()
        self.status.stop()
        if self.pod_group_status is not None:
            self.pod_group_status.stop()
        self.events.stop()
        log.info("stopped", extra={"identity": self.identity, "exitCode": self.exit_code})


#: How often the main thread returns to the interpreter while it waits, so signal handlers run.
SIGNAL_CHECK_SECONDS = 0.2
#: How long shutdown waits for each of its threads: in-flight bindings and the lease release take
#: milliseconds, and the kubelet kills a pod that ignores SIGTERM for its grace period (30 s) anyway.
SHUTDOWN_JOIN_SECONDS = 5.0


def _join(thread: threading.Thread | None, what: str) -> None:
    """Wait for ``thread`` to finish, at most ``SHUTDOWN_JOIN_SECONDS``; a thread still running is
    reported (it is a daemon: the process exits without it) rather than waited for forever."""
    if thread is None:
        return
    thread.join(SHUTDOWN_JOIN_SECONDS)
    if thread.is_alive():
        log.warning("shutdown: %s did not stop within %g s; exiting without it", what, SHUTDOWN_JOIN_SECONDS)


def _rfc3339_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
