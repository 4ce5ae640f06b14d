"""The scheduling loop: scheduleOne, the scheduling cycle and the binding cycle (pkg/scheduler).

All state changes happen on the thread that runs the loop: cluster events and binding results are
posted to an inbox and applied between cycles, so a cycle reads a consistent snapshot without copying
it. Binding runs through a ``Binder``: inline (simulator, tests, benchmarks: deterministic) or on a
thread pool (live clusters), and its results come back through the inbox.

Where kube-scheduler is random or parallel, Harmonic is seeded or sequential: filtering walks the
nodes in node-tree order from the rotating start index and stops at exactly the number of feasible
nodes it needs (upstream's 16 goroutines may check a few more); ties for the best score are broken
by a uniform draw from the scheduler's seeded generator (selectHost's reservoir sampling, up to
v1.34); per-pod sampling of plugin metrics is not done.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from harmonic.api.batch import POD_GROUP
from harmonic.api.batch import SERVICE_NAME as BATCH_SERVICE
from harmonic.api.errors import ObjectError
from harmonic.api.node import Node, parse_node
from harmonic.api.pod import DEFAULT_SCHEDULER_NAME, Pod, clone_pod, parse_pod, reparse_pod
from harmonic.framework.config import SchedulerConfiguration
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.decisions import (
    RESULT_ERROR,
    RESULT_SCHEDULED,
    RESULT_UNSCHEDULABLE,
    DecisionLog,
    DecisionTrace,
    ScoreDetail,
)
from harmonic.framework.diagnosis import Diagnosis, FilterOutcome
from harmonic.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_DELETE,
    Action,
    ClusterEvent,
    Resource,
    node_update_events,
    pod_update_events,
)
from harmonic.framework.handle import ProfileHandle
from harmonic.framework.interface import Clock, QueuedPodInfo
from harmonic.framework.registry import Registry
from harmonic.framework.runtime import ExtensionPointRecorder, Framework, pre_filter_kept
from harmonic.framework.services import ACTIVATE, WAITING_PODS
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.scheduler.cache import Cache, CacheError
from harmonic.scheduler.client import SchedulerClient
from harmonic.scheduler.clock import RealClock
from harmonic.scheduler.nominator import Nominator
from harmonic.scheduler.podlister import SERVICE_NAME as PODS_SERVICE
from harmonic.scheduler.podlister import PodLister
from harmonic.scheduler.queue import SchedulingQueue
from harmonic.scheduler.repeat import RepeatedFailures
from harmonic.scheduler.reservations import Reservations
from harmonic.scheduler.waiting import WaitingPod

log = logging.getLogger(__name__)

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
#: Upstream flushes pods stuck in the unschedulable pool every 30 s.
UNSCHEDULABLE_FLUSH_PERIOD = 30.0

REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
#: ErrNoNodesAvailable.
NO_NODES_AVAILABLE = "no nodes available to schedule pods"


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """How many feasible nodes to find before scoring (Scheduler.numFeasibleNodesToFind)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num = num_all_nodes * percentage // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


class Observer(Protocol):
    """Receives the scheduler's measurements (metrics); every method is optional to act on."""

    def attempt(self, profile: str, result: str, seconds: float) -> None: ...


class _NullObserver:
    def attempt(self, profile: str, result: str, seconds: float) -> None:
        return None


class Binder(Protocol):
    def submit(self, fn: Callable[[], None]) -> None: ...

    def shutdown(self) -> None: ...


class InlineBinder:
    """Runs each binding cycle immediately on the scheduling thread: deterministic."""

    def submit(self, fn: Callable[[], None]) -> None:
        fn()

    def shutdown(self) -> None:
        return None


class ThreadBinder:
    """Runs binding cycles on a pool of threads, as kube-scheduler runs each in its own goroutine.

    A bare queue and workers rather than a ``ThreadPoolExecutor``: its ``submit`` (a Future, a work
    item, a pool-size check under two locks) was 9 % of the live scheduler's GIL-holding samples
    (``benchmarks/live_scheduler.py --profile``); ``SimpleQueue.put`` is one C call.
    Nothing reads a binding cycle's result from the pool: it posts its outcome to the scheduler.
    """

    def __init__(self, workers: int = 16) -> None:
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"bind_{i}", daemon=True) for i in range(max(1, workers))
        ]
        self._lock = threading.Lock()
        self._started = self._closed = False

    def submit(self, fn: Callable[[], None]) -> None:
        if not self._started:
            with self._lock:
                if self._closed:
                    raise RuntimeError("cannot bind after the binder shut down")
                if not self._started:
                    for t in self._threads:
                        t.start()
                    self._started = True
        self._queue.put(fn)

    def shutdown(self) -> None:
        """Finish what was submitted, then stop the workers."""
        with self._lock:
            self._closed = True
            started = self._started
        if started:
            for _ in self._threads:
                self._queue.put(None)
            for t in self._threads:
                t.join()

    def _work(self) -> None:
        while (fn := self._queue.get()) is not None:
            try:
                fn()
            except Exception:  # a binding cycle handles its own failures; this is a last guard
                log.exception("binding cycle failed")


@dataclass(slots=True)
class ScheduleResult:
    """The outcome of one scheduling attempt, for callers that watch (simulator, benchmarks, tests)."""

    pod: Pod
    node: str | None
    status: Status | None
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    message: str = ""
    scores: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Fit:
    node_slot: int
    evaluated: int
    feasible: int


class Scheduler:
    def _handle(self, profile: str) -> ProfileHandle:
        """The handle of a profile's plugins: this scheduler's cache, client, clock and services."""
        return ProfileHandle(
            profile,
            snapshot=lambda: self.cache.snapshot,
            client=lambda: self.client,
            clock=lambda: self.clock,
            runner=lambda: self.frameworks[profile],
            services=self.services,
            waiting_pod=self.waiting_pods.get,
        )

    def _activate(self, pods: Iterable[Pod]) -> None:
        """Handle.Activate (the ``activate`` service)."""
        self.queue.activate(pods)

    def __init__(
        self,
        config: SchedulerConfiguration,
        registry: Registry,
        client: SchedulerClient,
        *,
        clock: Clock | None = None,
        seed: int = 0,
        binder: Binder | None = None,
        services: Mapping[str, Any] | None = None,
        observer: Observer | None = None,
        snapshot: Snapshot | None = None,
        recorder: ExtensionPointRecorder | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.clock: Clock = clock or RealClock()
        self.rng = random.Random(seed)
        self.binder: Binder = binder or InlineBinder()
        self.services: dict[str, Any] = dict(services or {})
        self.nominator = Nominator()
        self.services.setdefault("nominator", self.nominator)
        self.pods = PodLister()
        self.services.setdefault(PODS_SERVICE, self.pods)
        #: Nodes held for the replacements of moved pods (``reservations``), on this clock.
        self.reservations = Reservations(self.clock.now)
        self.observer: Observer = observer or _NullObserver()
        self.cache = Cache(self.clock, snapshot=snapshot)
        self.waiting_pods: dict[str, WaitingPod] = {}
        self.services.setdefault(WAITING_PODS.name, lambda: list(self.waiting_pods.values()))
        self.services.setdefault(ACTIVATE.name, self._activate)
        self.frameworks: dict[str, Framework] = {}
        for prof in config.profiles:
            self.frameworks[prof.scheduler_name] = Framework(
                prof, registry, self._handle(prof.scheduler_name), recorder
            )
        first = next(iter(self.frameworks.values()))
        self.queue = SchedulingQueue(
            first.queue_sort_plugin,
            self.clock,
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
            pre_enqueue=self._pre_enqueue,
            hints={name: fw.events_to_register() for name, fw in self.frameworks.items()},
        )
        batch = self.services.get(BATCH_SERVICE)
        if batch is not None:
            batch.listen(self._on_batch_change)
        self.next_start_node_index = 0
        self._inbox: deque[Callable[[], None]] = deque()
        self._inbox_ready = threading.Condition()
        self._waiting = False
        self._last_unschedulable_flush = self.clock.now()
        #: Pods that cannot be compiled, by uid: the error already reported about each.
        self._malformed: dict[str, str] = {}
        #: The same for nodes, by name.
        self._malformed_nodes: dict[str, str] = {}
        #: Pods handed to binding (past Permit) whose result has not come back yet.
        self._binding: set[str] = set()
        #: Of those, the ones deleted meanwhile: they must not be requeued when binding fails.
        self._gone: set[str] = set()
        #: Scheduling-cycle start of each pod past Permit: the attempt's duration ends with its binding.
        self._attempt_start: dict[str, float] = {}
        self.results: Callable[[ScheduleResult], None] | None = None
        #: Where scheduling decisions are recorded (None: not recorded, and nothing is traced).
        self.decisions: DecisionLog | None = None
        #: The trace of the cycle running now, when recording.
        self._trace: DecisionTrace | None = None
        #: Failed attempts that the next attempt may replay (none when extension points are recorded:
        #: a replay runs no plugin).
        self.repeats = RepeatedFailures(self.cache.snapshot, self.nominator) if recorder is None else None
        #: The nodes the current cycle evaluated and how many it processed, when its failure may be
        #: replayed (set by ``_schedule_pod``, consumed by ``_fail``).
        self._replayable: tuple[np.ndarray, int] | None = None

    # ================================================================== inputs
    def post(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the scheduling thread before the next cycle (thread-safe)."""
        # deque.append is atomic; the condition is only needed to wake a waiting loop.
        self._inbox.append(fn)
        if self._waiting:
            with self._inbox_ready:
                self._inbox_ready.notify()

    def drain(self) -> int:
        """Apply everything posted so far (and what that posts); returns how many items ran. An item
        that raises is logged and skipped: one bad object or bug must not stop the loop."""
        n = 0
        inbox = self._inbox
        while inbox:
            try:
                inbox.popleft()()
            except Exception:
                log.exception("a scheduler task failed; going on without it")
            n += 1
        return n

    def wait_for_input(self, timeout: float) -> None:
        with self._inbox_ready:
            self._waiting = True
            try:
                if not self._inbox:
                    self._inbox_ready.wait(timeout)
            finally:
                self._waiting = False

    def on_node(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        """A node was added (old None), updated, or deleted (new None). Thread-safe."""
        self.post(lambda: self._guarded("Node", self._handle_node, old, new))

    def on_pod(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        """A pod was added (old None), updated, or deleted (new None). Thread-safe."""
        self.post(lambda: self._guarded("Pod", self._handle_pod, old, new))

    def on_cluster_event(self, event: ClusterEvent, old: Any, new: Any) -> None:
        """Any other object changed (storage objects, say): retry the pods the event may help.
        ``old``/``new`` are the compiled views the plugins' queueing hints read. Thread-safe."""

        def apply() -> None:
            self.queue.move_on_event(event, old, new)

        self.post(apply)

    def _guarded(
        self,
        kind: str,
        handle: Callable[[Mapping[str, Any] | None, Mapping[str, Any] | None], None],
        old: Mapping[str, Any] | None,
        new: Mapping[str, Any] | None,
    ) -> None:
        """Apply one watch event; a failure is logged naming the object and the event is dropped (the
        next event about the object, or a relist, brings it back), so the loop goes on."""
        try:
            handle(old, new)
        except Exception:
            log.exception(
                "handling an event about %s %s failed; event ignored", kind, _object_key(new or old)
            )

    def _on_batch_change(self, kind: str, old: Any, new: Any) -> None:
        """A PodGroup or ElasticQuota changed: retry the pods whose plugins registered for it."""
        resource = Resource.POD_GROUP if kind == POD_GROUP else Resource.ELASTIC_QUOTA
        action = Action.ADD if old is None else (Action.DELETE if new is None else Action.UPDATE)
        self.on_cluster_event(ClusterEvent(resource, action), old, new)

    # ------------------------------------------------------------------ nodes
    def _handle_node(self, old_raw: Mapping[str, Any] | None, new_raw: Mapping[str, Any] | None) -> None:
        snap = self.cache.snapshot
        if new_raw is None:
            name = _meta(old_raw).get("name")
            self._malformed_nodes.pop(str(name), None)
            if isinstance(name, str) and snap.has_node(name):
                old_node = snap.node(snap.slot_of[name])
                self.queue.move_on_event(NODE_DELETE, old_node, None)
                self.cache.remove_node(name)
            return
        try:
            node = parse_node(new_raw)
        except ObjectError as e:
            # Keep what we knew of the node: one bad update must not take it away. One line per node
            # and error: its status updates bring the same error back every few minutes.
            name = str(_meta(new_raw).get("name"))
            if self._malformed_nodes.get(name) != str(e):
                self._malformed_nodes[name] = str(e)
                log.error("ignoring node: %s", e)
            return
        if self._malformed_nodes:
            self._malformed_nodes.pop(node.name, None)
        old: Node | None = snap.node(snap.slot_of[node.name]) if snap.has_node(node.name) else None
        self.cache.update_node(node)
        if old is None:
            self.queue.move_on_event(NODE_ADD, None, node)
            return
        for event in node_update_events(old, node):
            self.queue.move_on_event(event, old, node)

    # ------------------------------------------------------------------ pods
    def _handle_pod(self, old_raw: Mapping[str, Any] | None, new_raw: Mapping[str, Any] | None) -> None:
        if new_raw is None:
            self._handle_pod_delete(old_raw or {})
            return
        uid = _raw_uid(new_raw)
        cached = self.cache.pod(uid)
        try:
            pod = reparse_pod(cached, new_raw) if cached is not None else parse_pod(new_raw)
        except ObjectError as e:
            self._reject_malformed(uid, new_raw, e)
            return
        if self._malformed:
            self._malformed.pop(uid, None)
        if pod.is_terminal:
            # kube-scheduler's informer excludes terminal pods: for the cache they are gone.
            self._handle_pod_delete(new_raw, pod)
            return
        self.pods.set(pod)
        if pod.node_name:
            self._handle_assigned_pod(cached, pod)
            return
        if pod.scheduler_name not in self.frameworks:
            return
        if cached is not None and self.cache.is_assumed(uid):
            # Updates of a pod being bound wait for the binding; a deletion starting cannot.
            if pod.deleting and not cached.deleting:
                self._handle_assumed_pod_deletion(cached)
            return
        if old_raw is None:
            if self.reservations.open and not pod.nominated_node_name:
                pod = self._reserved(pod)
            self.queue.add(pod)
        else:
            version = _meta(new_raw).get("resourceVersion")
            if version is not None and version == _meta(old_raw).get("resourceVersion"):
                return  # a resync carrying the same object (kubernetes#96071)
            self.queue.update(None, pod)
        self.nominator.update(pod)

    def _handle_assigned_pod(self, cached: Pod | None, pod: Pod) -> None:
        """A bound pod appeared or changed: add it to the cache (confirming an assumed pod) or update it,
        and tell the queue (addAssignedPodToCache / updateAssignedPodInCache)."""
        if cached is None or self.cache.is_assumed(pod.uid):
            # Bound by us (the confirmation of an assumed pod) or by someone else.
            self.queue.delete(pod)
            self.nominator.delete(pod)
            self.cache.add_pod(pod)
            self.queue.move_on_event(ASSIGNED_POD_ADD, None, pod)
            if self.reservations.taken:
                self.reservations.bound(pod)
            return
        self.cache.update_pod(cached, pod)
        for event in pod_update_events(cached, pod):
            self.queue.move_on_event(event, cached, pod)

    def _handle_pod_delete(self, raw: Mapping[str, Any], pod: Pod | None = None) -> None:
        uid = _raw_uid(raw)
        self.pods.remove(uid)
        if self._malformed:
            self._malformed.pop(uid, None)
        if self.repeats is not None:
            self.repeats.forget(uid)
        if self.reservations.taken:
            self.reservations.deleted(uid, _stub_pod(raw).key)
        cached = self.cache.pod(uid)
        if cached is not None and self.cache.is_assumed(uid):
            self._handle_assumed_pod_deletion(cached)
            return
        if cached is not None:
            self.cache.remove_pod(cached)
            self.queue.move_on_event(ASSIGNED_POD_DELETE, cached, None)
            return
        queued = pod or self.queue.get(uid)
        self.queue.delete(queued or _stub_pod(raw))
        self.nominator.delete(queued or _stub_pod(raw))
        if queued is not None and queued.nominated_node_name:
            # Lower or equal priority pods treated this nominated pod as if it ran there.
            limit = queued.priority
            self.queue.move_on_event(
                ASSIGNED_POD_DELETE, queued, None, pre_check=lambda p: p.priority <= limit
            )

    def _handle_assumed_pod_deletion(self, assumed: Pod) -> None:
        """handleAssumedPodDeletion: a pod waiting at Permit is rejected (its binding cycle cleans up);
        a pod already binding is forgotten now, so its resources are free for the next cycle."""
        self.queue.delete(assumed)
        wp = self.waiting_pods.get(assumed.uid)
        if wp is not None:
            wp.reject("", "removed")
        else:
            self._gone.add(assumed.uid)
            self.cache.forget(assumed)
        self.queue.move_on_event(ASSIGNED_POD_DELETE, assumed, None)

    def _reserved(self, pod: Pod) -> Pod:
        """A new pending pod, nominated to the node reserved for its owner if there is one: in the
        nominator (through the queue's copy) and in ``status.nominatedNodeName`` through the client, as
        preemption nominates, so the first attempt tries that node first (``reservations``)."""
        r = self.reservations.take(pod)
        if r is None:
            return pod
        if not self.cache.snapshot.has_node(r.node):
            # The node left since: nothing to nominate; the pod falls back to normal scheduling.
            return pod
        nominated = clone_pod(pod)
        nominated.nominated_node_name = r.node
        log.info("pod %s replaces %s: nominated to %s, reserved for it", pod.key, r.moved, r.node)
        self.pods.set(nominated)
        st = self.client.set_nominated_node(nominated, r.node)
        if st is not None and not st.is_success:
            log.warning("cannot set the nominated node of %s: %s", pod.key, st.message)
        return nominated

    def _reject_malformed(self, uid: str, raw: Mapping[str, Any], err: ObjectError) -> None:
        """A pod we cannot parse is never silently dropped: one error line and, when it is ours to
        schedule, a FailedScheduling event and a PodScheduled=False condition (as kube-scheduler reports
        an error: reason SchedulerError), once per distinct error: the condition's own status patch, a
        resync or a relist bring the same pod back and must not report it again. Any earlier version
        of it leaves the queue (its spec is no longer what we would schedule). It is not retried: only
        a change to the pod can change the outcome."""
        message = str(err)
        if self._malformed.get(uid) == message:
            return
        self._malformed[uid] = message
        log.error("cannot schedule malformed pod: %s", err)
        spec = raw.get("spec") if isinstance(raw, Mapping) else None
        if not isinstance(spec, Mapping) or spec.get("nodeName"):
            return
        stub = _stub_pod(raw)
        if stub.scheduler_name not in self.frameworks:
            return
        if not self.cache.is_assumed(stub.uid):
            self.queue.delete(stub)
            self.nominator.delete(stub)
        self.client.report_failure(stub, REASON_SCHEDULER_ERROR, message)

    def _pre_enqueue(self, pod: Pod, first: str) -> Status | None:
        fw = self.frameworks.get(pod.scheduler_name)
        return fw.run_pre_enqueue(pod, first) if fw is not None else None

    # ================================================================== the loop
    def schedule_one(self) -> ScheduleResult | None:
        """Apply pending events, then pop one pod and run its scheduling cycle. None if nothing to do."""
        self.drain()
        self._housekeeping()
        qp = self.queue.pop()
        if qp is None:
            return None
        return self._schedule(qp)

    def run_until_idle(self, max_attempts: int | None = None) -> int:
        """Schedule until the queue has nothing to try now (pods backing off after errors or
        unschedulable stay where they are)."""
        n = 0
        while max_attempts is None or n < max_attempts:
            if self.schedule_one() is None:
                if not self.drain():
                    break
                continue
            n += 1
        return n

    def run(self, stop: threading.Event, idle_wait: float = 0.2) -> None:
        """The live loop: schedule while there is work, wait for events otherwise, until ``stop``. An
        unexpected error is logged and the loop goes on, after a pause so a repeating one is not hot."""
        while not stop.is_set():
            try:
                scheduled = self.schedule_one()
            except Exception:
                log.exception("the scheduling loop failed; going on")
                self.wait_for_input(idle_wait)
                continue
            if scheduled is None:
                wake = self.next_wakeup()
                wait = idle_wait if wake is None else max(0.0, min(idle_wait, wake - self.clock.now()))
                self.wait_for_input(wait)
        self.binder.shutdown()
        self.drain()

    def next_wakeup(self) -> float | None:
        """The next time something is due without new input: a backoff ending, the periodic flush of
        the unschedulable pool, a Permit timeout."""
        times = [t for t in (self.queue.next_wakeup(),) if t is not None]
        if self.queue.counts()["unschedulable"]:
            times.append(self._last_unschedulable_flush + UNSCHEDULABLE_FLUSH_PERIOD)
        times.extend(d for wp in self.waiting_pods.values() if (d := wp.next_deadline) is not None)
        return min(times) if times else None

    def _housekeeping(self) -> None:
        now = self.clock.now()
        self.queue.flush_backoff()
        if now - self._last_unschedulable_flush >= UNSCHEDULABLE_FLUSH_PERIOD:
            self._last_unschedulable_flush = now
            self.queue.flush_unschedulable()
        self.cache.cleanup_expired()
        if self.reservations.open:
            self.reservations.expire()
        if self.waiting_pods:
            for wp in list(self.waiting_pods.values()):
                wp.check_timeout(now)
            self.drain()

    # ================================================================== scheduling cycle
    def _schedule(self, qp: QueuedPodInfo) -> ScheduleResult:
        """One attempt. Anything that escapes it (a failure while reporting a failure, say) is logged
        naming the pod, which backs off as after any error: never lost, never retried hot."""
        try:
            return self._attempt(qp)
        except Exception as e:
            log.exception("scheduling %s failed", qp.pod.key)
            self._back_off(qp)
            status = Status(Code.ERROR, f"internal error: {e}")
            return ScheduleResult(qp.pod, None, status, message=status.message)

    def _back_off(self, qp: QueuedPodInfo) -> None:
        """Requeue a pod whose attempt broke off, unless it is queued, assumed or binding already."""
        uid = qp.pod.uid
        if self.queue.has(uid) or self.cache.is_assumed(uid) or uid in self._binding:
            return
        qp.unschedulable_plugins = set()
        qp.pending_plugins = set()
        self.queue.add_unschedulable(qp)

    def _attempt(self, qp: QueuedPodInfo) -> ScheduleResult:
        pod = qp.pod
        fw = self.frameworks.get(pod.scheduler_name)
        if fw is None or pod.deleting or self.cache.is_assumed(pod.uid):
            # skipPodSchedule (or a profile that no longer exists): the attempt ends here.
            self.queue.done(pod.uid)
            return ScheduleResult(pod, None, None, message="skipped: pod is being deleted or already assumed")
        start = time.perf_counter()
        past = (
            self.repeats.recall(pod, fw.name) if self.repeats is not None and self.decisions is None else None
        )
        if past is not None:
            self.next_start_node_index = (self.next_start_node_index + past.processed) % len(
                self.cache.snapshot.order
            )
            qp.unschedulable_plugins = set(past.unschedulable_plugins)
            qp.pending_plugins = set(past.pending_plugins)
            result = self._failed(fw, qp, past.status, past.message, past.nominated, start)
            assert self.repeats is not None
            self.repeats.replayed_again(past)
            if self.results is not None:
                self.results(result)
            return result
        self._replayable = None
        state = CycleState(self.queue.scheduling_cycle)
        if self.decisions is not None:
            self._trace = DecisionTrace(
                "scheduler", fw.name, pod.key, pod.uid, self.clock.now(), self.cache.snapshot.names()
            )
        try:
            result = self._scheduling_cycle(fw, state, qp, start)
        except Exception as e:  # a plugin bug must cost one attempt, not the scheduler
            log.exception("scheduling %s failed", pod.key)
            assumed = self.cache.pod(pod.uid)
            if assumed is not None and self.cache.is_assumed(pod.uid):
                fw.run_unreserve(state, assumed, assumed.node_name)
                self.cache.forget(assumed)
            result = self._fail(fw, state, qp, Status(Code.ERROR, f"internal error: {e}"), None, start)
        if self._trace is not None:
            self._record_decision(self._trace, result)
        if self.results is not None:
            self.results(result)
        return result

    def _record_decision(self, trace: DecisionTrace, result: ScheduleResult) -> None:
        self._trace = None
        if result.node is not None:
            trace.result, trace.node = RESULT_SCHEDULED, result.node
        else:
            rejected = result.status is not None and result.status.is_rejected
            trace.result = RESULT_UNSCHEDULABLE if rejected else RESULT_ERROR
        trace.message = result.message
        assert self.decisions is not None
        self.decisions.add(trace)

    def _scheduling_cycle(
        self, fw: Framework, state: CycleState, qp: QueuedPodInfo, start: float
    ) -> ScheduleResult:
        pod = qp.pod
        fit, status, diagnosis = self._schedule_pod(fw, state, pod)
        if fit is None:
            assert status is not None
            return self._fail(fw, state, qp, status, diagnosis, start)
        node_name = self.cache.snapshot.node(fit.node_slot).name
        assumed = _with_node(pod, node_name)
        try:
            self.cache.assume(assumed, node_name)
        except CacheError as e:
            return self._fail(fw, state, qp, Status(Code.ERROR, str(e)), None, start)
        self.nominator.delete(pod)
        st = fw.run_reserve(state, assumed, node_name)
        if st is None:
            st, waits = fw.run_permit(state, assumed, node_name)
        else:
            waits = {}
        if st is not None and st.code != Code.WAIT:
            fw.run_unreserve(state, assumed, node_name)
            self.cache.forget(assumed)
            if st.is_rejected:
                return self._fail(fw, state, qp, st, Diagnosis.rejected_on_node(st), start, post_filter=False)
            return self._fail(fw, state, qp, st, None, start)
        result = ScheduleResult(pod, node_name, None, fit.evaluated, fit.feasible)
        # As upstream, the attempt counts as "scheduled" (and its duration ends) when binding succeeds.
        self._attempt_start[pod.uid] = start
        if waits:
            self.waiting_pods[pod.uid] = WaitingPod(
                assumed,
                waits,
                self.clock.now(),
                lambda s: self.post(lambda: self._permit_resolved(fw, state, qp, assumed, node_name, s)),
            )
        else:
            self._start_binding(fw, state, qp, assumed, node_name)
        return result

    def _schedule_pod(
        self, fw: Framework, state: CycleState, pod: Pod
    ) -> tuple[_Fit | None, Status | None, Diagnosis | None]:
        """schedulePod: a node for the pod, or the status (and, for a FitError, the diagnosis) why not."""
        snap = self.cache.snapshot
        all_slots = snap.order
        num_all = len(all_slots)
        if num_all == 0:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_NODES_AVAILABLE), None
        diagnosis = Diagnosis(num_all_nodes=num_all)
        trace = self._trace
        if trace is not None:
            trace.all_nodes = num_all

        pre, st, narrowing = fw.run_pre_filter(state, pod, snap)
        diagnosis.unschedulable_plugins.update(narrowing)
        if st is not None:
            if trace is not None:
                trace.pre_filter = st
            if not st.is_rejected:
                return None, st, None
            diagnosis.pre_filter_msg = st.message
            diagnosis.absent_status, diagnosis.absent_count = st, num_all
            diagnosis.add_plugin_status(st)
            return None, Status(Code.UNSCHEDULABLE, st.message), diagnosis

        fit, nominated_failed = self._evaluate_nominated_node(fw, state, pod)
        if fit is not None:
            if trace is not None:
                trace.evaluated, trace.chosen = 1, fit.node_slot
            return fit, None, None

        candidates = all_slots
        keep = pre_filter_kept(pre, snap)
        if keep is not None:
            candidates = all_slots[keep[all_slots]]
            diagnosis.absent_status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(narrowing))}]",
            )
            diagnosis.absent_count = num_all - len(candidates)
            if trace is not None:
                trace.excluded = (diagnosis.absent_count, diagnosis.absent_status)
                trace.excluded_slots = all_slots[~keep[all_slots]]
            if nominated_failed is not None and not np.isin(nominated_failed.slots, candidates).any():
                # Filtered once already (as the nominated node) though PreFilter leaves it out.
                diagnosis.add(nominated_failed)
                diagnosis.absent_count -= 1

        feasible, processed, st = self._find_feasible(fw, state, pod, candidates, diagnosis)
        # Advance the start index even after an error, so every node gets its turn.
        self.next_start_node_index = (self.next_start_node_index + processed) % num_all
        if trace is not None:
            trace.outcomes, trace.evaluated, trace.feasible = diagnosis.outcomes, processed, feasible
        if st is not None:
            return None, st, None
        if len(feasible) == 0:
            if (
                self.repeats is not None
                and not pod.nominated_node_name
                and self.repeats.replayable(fw, state)
            ):
                self._replayable = (candidates, processed)
            return None, Status(Code.UNSCHEDULABLE), diagnosis
        if len(feasible) == 1:
            return self._fit(int(feasible[0]), processed, 1), None, None

        if not fw.score_plugins:
            # Without scorers every node scores 1 and PreScore does not run (prioritizeNodes).
            total = np.ones(len(feasible), dtype=np.int64)
            if trace is not None:
                trace.total = total
            pick = self._tie_break(total)
            return self._fit(int(feasible[pick]), processed, len(feasible)), None, None
        st = fw.run_pre_score(state, pod, snap, feasible)
        if st is not None:
            return None, st, None
        detail = ScoreDetail() if trace is not None else None
        total, _, st = fw.run_score(state, pod, snap, feasible, detail)
        if st is not None:
            return None, st, None
        if trace is not None:
            trace.score, trace.total = detail, total
        pick = self._tie_break(total)
        return self._fit(int(feasible[pick]), processed, len(feasible)), None, None

    def _fit(self, slot: int, evaluated: int, feasible: int) -> _Fit:
        if self._trace is not None:
            self._trace.chosen = slot
        return _Fit(slot, evaluated, feasible)

    def _evaluate_nominated_node(
        self, fw: Framework, state: CycleState, pod: Pod
    ) -> tuple[_Fit | None, FilterOutcome | None]:
        """evaluateNominatedNode: a pod nominated by an earlier preemption most likely fits only there,
        so that node is tried first (PreFilter's node subset does not apply to it). Returns the fit, or
        the node's failed filter outcome, or neither (no usable nomination, or an error, logged)."""
        snap = self.cache.snapshot
        nnn = pod.nominated_node_name
        if not nnn or not snap.has_node(nnn):
            return None, None
        one = np.asarray([snap.slot(nnn)], dtype=np.int64)
        if not fw.filter_plugins:
            return _Fit(int(one[0]), 1, 1), None
        outcome, st = fw.run_filters_with_nominated_pods(state, pod, snap, one)
        if st is not None:
            log.error("evaluation failed on nominated node %s for %s: %s", nnn, pod.key, st.message)
            return None, None
        if self._trace is not None:
            self._trace.nominated = (nnn, bool(outcome.codes[0] == 0))
        if outcome.codes[0] == 0:
            return _Fit(int(one[0]), 1, 1), None
        return None, outcome

    def _tie_break(self, total: np.ndarray) -> int:
        """Index of the best total; among equals, a uniform draw from the seeded generator."""
        ties = np.flatnonzero(total == total.max())
        return int(ties[0]) if len(ties) == 1 else int(ties[self.rng.randrange(len(ties))])

    def _find_feasible(
        self, fw: Framework, state: CycleState, pod: Pod, candidates: np.ndarray, diagnosis: Diagnosis
    ) -> tuple[np.ndarray, int, Status | None]:
        """findNodesThatPassFilters: walk candidates from the rotating start index until enough nodes
        pass. Nodes are filtered in chunks; nodes past the last one needed count as not processed.
        Returns the feasible slots, how many nodes were processed, and an error status."""
        n = len(candidates)
        if n == 0:
            return candidates, 0, None
        pct = fw.profile.percentage_of_nodes_to_score
        if pct is None:
            pct = self.config.percentage_of_nodes_to_score
        # Nothing to rank them by: the first feasible node will do.
        to_find = num_feasible_nodes_to_find(pct, n) if fw.score_plugins else 1
        start = self.next_start_node_index % n
        if not fw.filter_plugins:
            return _ring_slice(candidates, start, to_find), min(to_find, n), None
        found: list[np.ndarray] = []
        num_found = 0
        pos = 0
        chunk = to_find
        while pos < n and num_found < to_find:
            part = _ring_slice(candidates, start + pos, min(chunk, n - pos))
            outcome, st = fw.run_filters_with_nominated_pods(state, pod, self.cache.snapshot, part)
            if st is not None:
                return candidates[:0], pos + len(part), st
            passed_at = np.flatnonzero(outcome.codes == 0)
            need = to_find - num_found
            if len(passed_at) >= need:
                cut = int(passed_at[need - 1]) + 1
                outcome = outcome.prefix(cut)
                passed_at = passed_at[:need]
            else:
                cut = len(part)
            diagnosis.add(outcome)
            found.append(part[passed_at])
            num_found += len(passed_at)
            pos += cut
            chunk *= 2
        feasible = np.concatenate(found) if len(found) > 1 else found[0]
        return feasible, pos, None

    # ================================================================== failures
    def _fail(
        self,
        fw: Framework,
        state: CycleState,
        qp: QueuedPodInfo,
        status: Status,
        diagnosis: Diagnosis | None,
        start: float,
        *,
        post_filter: bool = True,
    ) -> ScheduleResult:
        """handleSchedulingFailure. A FitError (``diagnosis``) first runs PostFilter when it comes from
        filtering; its plugins decide which events can requeue the pod. Other failures keep no plugins:
        the pod backs off and is retried."""
        pod = qp.pod
        # What to do with the pod's nominated node: None keeps it, "" clears it, a name nominates.
        nominated: str | None = ""
        # Did PostFilter conclude that no node can be made room on (then it read only node rows)?
        nothing_to_preempt = not fw.post_filter_plugins
        if diagnosis is not None:
            if post_filter and fw.post_filter_plugins:
                post, pst = fw.run_post_filter(state, pod, diagnosis)
                nothing_to_preempt = post is not None and post.nominated_node_name == ""
                diagnosis.post_filter_msg = pst.message if pst is not None else ""
                nominated = post.nominated_node_name if post is not None else None
                if self._trace is not None:
                    self._trace.post_filter = (diagnosis.post_filter_msg, nominated or None)
            message = diagnosis.message()
            qp.unschedulable_plugins = set(diagnosis.unschedulable_plugins)
            qp.pending_plugins = set(diagnosis.pending_plugins)
        else:
            message = status.message
            qp.unschedulable_plugins = set()
            qp.pending_plugins = set()
        result = self._failed(fw, qp, status, message, nominated, start)
        replayable, self._replayable = self._replayable, None
        if (
            replayable is not None
            and self.repeats is not None
            and diagnosis is not None
            and post_filter
            and nothing_to_preempt
            and self.queue.has(pod.uid)
        ):
            slots, processed = replayable
            self.repeats.remember(
                fw,
                pod,
                slots,
                processed,
                status,
                message,
                qp.unschedulable_plugins,
                qp.pending_plugins,
                nominated,
            )
        return result

    def _failed(
        self,
        fw: Framework,
        qp: QueuedPodInfo,
        status: Status,
        message: str,
        nominated: str | None,
        start: float,
    ) -> ScheduleResult:
        """The rest of handleSchedulingFailure once the outcome is known (or replayed): report the
        failure, requeue the pod unless it is gone, record its nomination."""
        pod = qp.pod
        if status.is_rejected:
            reason, result = REASON_UNSCHEDULABLE, "unschedulable"
        else:
            reason, result = REASON_SCHEDULER_ERROR, "error"
        self.observer.attempt(fw.name, result, time.perf_counter() - start)
        if status.is_rejected:
            log.info("pod %s is unschedulable: %s", pod.key, message)
        else:  # an error (a failed API call, a plugin error) says nothing about the pod's fit
            log.warning("error scheduling pod %s; retrying: %s", pod.key, message)
        cached = self.cache.pod(pod.uid)
        if pod.uid in self._gone or (cached is not None and not self.cache.is_assumed(pod.uid)):
            # Deleted meanwhile, or already bound (its confirmation arrived first): not queued again.
            self._gone.discard(pod.uid)
            self.queue.done(pod.uid)
            requeued = False
        else:
            requeued = self.queue.add_unschedulable(qp)
        try:
            self.client.report_failure(qp.pod, reason, message)
        except Exception:  # the pod is requeued: only the report is lost
            log.exception("reporting the failure of %s failed", pod.key)
        if requeued or self.queue.has(pod.uid):
            self._record_nomination(qp.pod, nominated)
        return ScheduleResult(pod, None, status, message=message)

    def _record_nomination(self, pod: Pod, nominated: str | None) -> None:
        """After a failed attempt: remember the pod's nomination (AddNominatedPod) and write a changed
        ``status.nominatedNodeName`` through the client. ``None`` keeps what the pod has."""
        self.nominator.add(pod, nominated)
        if nominated is not None and nominated != pod.nominated_node_name:
            st = self.client.set_nominated_node(pod, nominated)
            if st is not None and not st.is_success:
                log.warning("cannot set the nominated node of %s: %s", pod.key, st.message)

    def _observe_binding(self, fw: Framework, uid: str, result: str) -> None:
        start = self._attempt_start.pop(uid, None)
        if start is not None:
            self.observer.attempt(fw.name, result, time.perf_counter() - start)

    # ================================================================== binding cycle
    def _permit_resolved(
        self, fw: Framework, state: CycleState, qp: QueuedPodInfo, assumed: Pod, node: str, st: Status | None
    ) -> None:
        """WaitOnPermit returned: allowed pods go on to bind; rejected ones fail their binding cycle."""
        self.waiting_pods.pop(assumed.uid, None)
        if st is not None and not st.is_success:
            self._binding_failed(fw, state, qp, assumed, node, st)
            return
        self._start_binding(fw, state, qp, assumed, node)

    def _start_binding(
        self, fw: Framework, state: CycleState, qp: QueuedPodInfo, assumed: Pod, node: str
    ) -> None:
        # Past Permit nothing can make the pod unschedulable, so its in-flight events can go (Done).
        self.queue.done(assumed.uid)
        self._binding.add(assumed.uid)
        self.binder.submit(lambda: self._binding_cycle(fw, state, qp, assumed, node))

    def _binding_cycle(
        self, fw: Framework, state: CycleState, qp: QueuedPodInfo, assumed: Pod, node: str
    ) -> None:
        """PreBind and Bind on the binder; the outcome is applied on the scheduling thread."""
        try:
            st = fw.run_pre_bind(state, assumed, node)
            if st is None:
                st = fw.run_bind(state, assumed, node)
                if st is not None and not st.is_success and not st.is_rejected:
                    # kube-scheduler's wording for a failed Bind (a failed API call, not a misfit).
                    st = Status(st.code, f"Binding rejected: {st.message}", plugin=st.plugin)
        except Exception as e:  # an adapter failure must requeue the pod, never lose it
            log.exception("binding %s to %s failed", assumed.key, node)
            st = Status(Code.ERROR, f"binding failed: {e}")
        if st is not None:
            failed = st
            self.post(lambda: self._binding_failed(fw, state, qp, assumed, node, failed))
            return
        self.post(lambda: self._binding_done(fw, state, qp, assumed, node))
        # The Scheduled event is recorded here, in the binding cycle, as kube-scheduler's bindingCycle
        # does: handing it to the event writers wakes one of them, and a thread woken from the
        # scheduling thread preempts it (a tenth of its wall time, benchmarks/live_scheduler.py).
        try:
            self.client.report_scheduled(assumed, node)
        except Exception:  # the pod is bound and its confirmation posted: only the event is lost
            log.exception("recording the Scheduled event of %s failed", assumed.key)

    def _binding_done(
        self, fw: Framework, state: CycleState, qp: QueuedPodInfo, assumed: Pod, node: str
    ) -> None:
        self._binding.discard(assumed.uid)
        self._gone.discard(assumed.uid)
        self._observe_binding(fw, assumed.uid, "scheduled")
        self.cache.finish_binding(assumed)
        fw.run_post_bind(state, assumed, node)

    def _binding_failed(
        self, fw: Framework, state: CycleState, qp: QueuedPodInfo, assumed: Pod, node: str, st: Status
    ) -> None:
        """handleBindingCycleError: Unreserve, forget the assumed pod (its room frees up: an assigned
        pod deletion for the queue), and handle the failure. A rejection (at Permit) is a FitError on
        the one node; anything else is an error that backs the pod off."""
        self._binding.discard(assumed.uid)
        self.cache.finish_binding(assumed)
        fw.run_unreserve(state, assumed, node)
        forgotten = self.cache.is_assumed(assumed.uid)
        if forgotten:
            self.cache.forget(assumed)
        log.warning("binding %s to %s failed: %s", assumed.key, node, st.message)
        start = self._attempt_start.pop(assumed.uid, time.perf_counter())
        if st.is_rejected:
            self._fail(fw, state, qp, st, Diagnosis.rejected_on_node(st), start, post_filter=False)
            if forgotten:
                uid = assumed.uid
                self.queue.move_on_event(ASSIGNED_POD_DELETE, assumed, None, pre_check=lambda p: p.uid != uid)
            return
        if forgotten:
            self.queue.move_on_event(ASSIGNED_POD_DELETE, assumed, None)
        self._fail(fw, state, qp, st, None, start)


def _ring_slice(a: np.ndarray, start: int, count: int) -> np.ndarray:
    """``count`` items of ``a`` from ``start``, wrapping around (a view when it does not wrap)."""
    n = len(a)
    start %= n
    end = start + count
    return a[start:end] if end <= n else np.concatenate((a[start:], a[: end - n]))


def _meta(raw: Mapping[str, Any] | None) -> Mapping[str, Any]:
    meta = (raw or {}).get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _raw_uid(raw: Mapping[str, Any]) -> str:
    """The uid ``parse_pod`` would give this manifest (its ``namespace/name`` when it has none)."""
    meta = _meta(raw)
    return str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name')}")


def _object_key(raw: Mapping[str, Any] | None) -> str:
    """``namespace/name`` (or ``name``) of a manifest, for log lines about it."""
    meta = _meta(raw)
    name = str(meta.get("name") or "?")
    return f"{meta['namespace']}/{name}" if meta.get("namespace") else name


def _stub_pod(raw: Mapping[str, Any]) -> Pod:
    """Identity of a pod we cannot (or need not) compile: enough to name it, find it by uid and report
    about it (every attribute set, to neutral values where the manifest cannot be trusted)."""
    meta = _meta(raw)
    spec = raw.get("spec") if isinstance(raw, Mapping) else None
    spec = spec if isinstance(spec, Mapping) else {}
    scheduler_name = spec.get("schedulerName")
    stub = Pod.__new__(Pod)
    stub.raw, stub.spec = raw, {}
    stub.name = str(meta.get("name") or "")
    stub.namespace = str(meta.get("namespace") or "default")
    stub.key = f"{stub.namespace}/{stub.name}"
    stub.uid = _raw_uid(raw)
    if not isinstance(scheduler_name, str) or not scheduler_name:
        scheduler_name = DEFAULT_SCHEDULER_NAME
    stub.scheduler_name = scheduler_name
    stub.labels, stub.annotations, stub.node_selector, stub.extra = {}, {}, {}, {}
    stub.node_name = stub.nominated_node_name = stub.creation_timestamp = ""
    stub.priority = stub.nonzero_cpu = stub.nonzero_memory = 0
    stub.preemption_policy, stub.phase, stub.deleting = "PreemptLowerPriority", "Pending", False
    stub.requests = {}
    stub.required_affinity = None
    stub.tolerations = stub.preferred_affinity = stub.host_ports = stub.images = ()
    stub.scheduling_gates = stub.owners = ()
    return stub


def _with_node(pod: Pod, node_name: str) -> Pod:
    """A copy of the compiled pod as bound to ``node_name`` (the assumed pod)."""
    clone = clone_pod(pod)
    clone.node_name = node_name
    return clone
