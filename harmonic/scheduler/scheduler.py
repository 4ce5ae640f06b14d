"""The scheduling loop: scheduleOne, the scheduling cycle and the binding cycle (pkg/scheduler).

All state changes happen on the thread that runs the loop: cluster events and binding results are
posted to an inbox and applied between cycles, so a cycle reads a consistent snapshot without copying
it. Binding runs through a ``Binder``: inline (simulator, tests, benchmarks: deterministic) or on a
thread pool (live clusters), and its results come back through the inbox.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from harmonic.api.errors import ObjectError
from harmonic.api.node import Node, parse_node
from harmonic.api.pod import Pod, parse_pod
from harmonic.framework.config import SchedulerConfiguration
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.diagnosis import Diagnosis, FilterOutcome
from harmonic.framework.events import (
    Action,
    ClusterEvent,
    Resource,
    node_update_action,
    pod_update_action,
)
from harmonic.framework.interface import Clock, PluginsRunner, QueuedPodInfo
from harmonic.framework.registry import Registry
from harmonic.framework.runtime import Framework
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.scheduler.cache import Cache
from harmonic.scheduler.client import SchedulerClient
from harmonic.scheduler.clock import RealClock
from harmonic.scheduler.nominator import Nominator
from harmonic.scheduler.queue import SchedulingQueue
from harmonic.scheduler.waiting import WaitingPod

log = logging.getLogger(__name__)

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
#: Upstream flushes pods stuck in the unschedulable pool every 30 s.
UNSCHEDULABLE_FLUSH_PERIOD = 30.0

REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"


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
    """Runs binding cycles on a pool, as kube-scheduler runs each in its own goroutine."""

    def __init__(self, workers: int = 16) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bind")

    def submit(self, fn: Callable[[], None]) -> None:
        self._pool.submit(fn)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True)


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


class _ProfileHandle:
    """The framework.Handle a profile's plugins receive."""

    def __init__(self, sched: Scheduler, profile_name: str) -> None:
        self._sched = sched
        self._profile = profile_name

    @property
    def snapshot(self) -> Snapshot:
        return self._sched.cache.snapshot

    @property
    def client(self) -> SchedulerClient:
        return self._sched.client

    @property
    def clock(self) -> Clock:
        return self._sched.clock

    @property
    def profile_name(self) -> str:
        return self._profile

    @property
    def runner(self) -> PluginsRunner:
        return self._sched.frameworks[self._profile]

    def waiting_pod(self, uid: str) -> WaitingPod | None:
        return self._sched.waiting_pods.get(uid)

    def service(self, name: str) -> Any:
        return self._sched.services[name]

    def activate(self, pods: Iterable[Pod]) -> None:
        self._sched.queue.activate(pods)


class Scheduler:
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
    ) -> None:
        self.config = config
        self.client = client
        self.clock: Clock = clock or RealClock()
        self.rng = random.Random(seed)
        self.binder: Binder = binder or InlineBinder()
        self.services: dict[str, Any] = dict(services or {})
        self.nominator = Nominator()
        self.services.setdefault("nominator", self.nominator)
        self.observer: Observer = observer or _NullObserver()
        self.cache = Cache(self.clock, snapshot=snapshot)
        self.waiting_pods: dict[str, WaitingPod] = {}
        self.frameworks: dict[str, Framework] = {}
        for prof in config.profiles:
            self.frameworks[prof.scheduler_name] = Framework(
                prof, registry, _ProfileHandle(self, prof.scheduler_name)
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
        self.next_start_node_index = 0
        self._inbox: deque[Callable[[], None]] = deque()
        self._inbox_ready = threading.Condition()
        self._last_unschedulable_flush = self.clock.now()
        #: Pods this scheduler handed to binding and has not yet seen confirmed or failed.
        self._binding: set[str] = set()
        self.results: Callable[[ScheduleResult], None] | None = None

    # ================================================================== inputs
    def post(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the scheduling thread before the next cycle (thread-safe)."""
        with self._inbox_ready:
            self._inbox.append(fn)
            self._inbox_ready.notify()

    def drain(self) -> int:
        n = 0
        while self._inbox:
            with self._inbox_ready:
                if not self._inbox:
                    break
                fn = self._inbox.popleft()
            fn()
            n += 1
        return n

    def wait_for_input(self, timeout: float) -> None:
        with self._inbox_ready:
            if not self._inbox:
                self._inbox_ready.wait(timeout)

    def on_node(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        """A node was added (old None), updated, or deleted (new None). Thread-safe."""
        self.post(lambda: self._handle_node(old, new))

    def on_pod(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        """A pod was added (old None), updated, or deleted (new None). Thread-safe."""
        self.post(lambda: self._handle_pod(old, new))

    def _handle_node(self, old_raw: Mapping[str, Any] | None, new_raw: Mapping[str, Any] | None) -> None:
        snap = self.cache.snapshot
        if new_raw is None:
            name = ((old_raw or {}).get("metadata") or {}).get("name")
            if isinstance(name, str) and snap.has_node(name):
                self.cache.remove_node(name)
            return
        try:
            node = parse_node(new_raw)
        except ObjectError as e:
            log.error("ignoring node: %s", e)
            return
        old: Node | None = snap.node(snap.slot_of[node.name]) if snap.has_node(node.name) else None
        self.cache.update_node(node)
        if old is None:
            self.queue.move_on_event(ClusterEvent(Resource.NODE, Action.ADD), None, node)
        else:
            action = node_update_action(old, node)
            if action:
                self.queue.move_on_event(ClusterEvent(Resource.NODE, action), old, node)

    def _handle_pod(self, old_raw: Mapping[str, Any] | None, new_raw: Mapping[str, Any] | None) -> None:
        if new_raw is None:
            self._handle_pod_delete(old_raw or {})
            return
        try:
            pod = parse_pod(new_raw)
        except ObjectError as e:
            self._reject_malformed(new_raw, e)
            return
        if pod.is_terminal:
            # kube-scheduler's informer excludes terminal pods: for the cache they are gone.
            self._handle_pod_delete(new_raw, pod)
            return
        uid = pod.uid
        if pod.node_name:
            prev = self.cache.pod(uid)
            was_assumed = self.cache.is_assumed(uid)
            self.queue.delete(pod)
            self.nominator.delete(pod)
            if prev is None:
                self.cache.add_pod(pod)
                self.queue.move_on_event(ClusterEvent(Resource.ASSIGNED_POD, Action.ADD), None, pod)
            else:
                self.cache.update_pod(prev, pod)
                if not was_assumed:
                    action = pod_update_action(prev, pod)
                    self.queue.move_on_event(ClusterEvent(Resource.ASSIGNED_POD, action), prev, pod)
            return
        if pod.scheduler_name not in self.frameworks:
            return
        if self.cache.is_assumed(uid) or uid in self._binding:
            return
        if pod.deleting:
            self.queue.delete(pod)
            self.nominator.delete(pod)
            return
        self.queue.update(None, pod) if self.queue.has(uid) else self.queue.add(pod)
        self.nominator.update(pod)

    def _handle_pod_delete(self, raw: Mapping[str, Any], pod: Pod | None = None) -> None:
        meta = raw.get("metadata") or {}
        uid = str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
        cached = self.cache.pod(uid)
        wp = self.waiting_pods.get(uid)
        if wp is not None:
            wp.reject("", "pod was deleted")
        if cached is not None and not self.cache.is_assumed(uid):
            self.cache.remove_pod(cached)
            self.queue.move_on_event(ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE), cached, None)
            return
        if pod is None:
            try:
                pod = parse_pod(raw)
            except ObjectError:
                return
        self.queue.delete(pod)
        self.nominator.delete(pod)

    def _reject_malformed(self, raw: Mapping[str, Any], err: ObjectError) -> None:
        """A pod we cannot parse is never silently dropped: it gets a FailedScheduling event."""
        log.error("cannot schedule malformed pod: %s", err)
        spec = raw.get("spec") or {}
        if not isinstance(spec, Mapping) or spec.get("nodeName"):
            return
        if (spec.get("schedulerName") or "default-scheduler") not in self.frameworks:
            return
        meta = raw.get("metadata") or {}
        stub = Pod.__new__(Pod)
        stub.raw, stub.spec = raw, {}
        stub.name = str(meta.get("name") or "")
        stub.namespace = str(meta.get("namespace") or "default")
        stub.key = f"{stub.namespace}/{stub.name}"
        stub.uid = str(meta.get("uid") or stub.key)
        self.client.report_failure(stub, REASON_SCHEDULER_ERROR, str(err))

    def _pre_enqueue(self, pod: Pod) -> Status | None:
        fw = self.frameworks.get(pod.scheduler_name)
        return fw.run_pre_enqueue(pod) if fw is not None else None

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
        """Schedule until activeQ is empty (pods in backoff or unschedulable stay there)."""
        n = 0
        while max_attempts is None or n < max_attempts:
            if self.schedule_one() is None:
                if not self.drain():
                    break
                continue
            n += 1
        return n

    def run(self, stop: threading.Event, idle_wait: float = 0.2) -> None:
        """The live loop: schedule while there is work, wait for events otherwise, until ``stop``."""
        while not stop.is_set():
            if self.schedule_one() is None:
                wake = self.queue.next_wakeup()
                wait = idle_wait if wake is None else max(0.0, min(idle_wait, wake - self.clock.now()))
                self.wait_for_input(wait)
        self.binder.shutdown()
        self.drain()

    def _housekeeping(self) -> None:
        now = self.clock.now()
        self.queue.flush_backoff()
        if now - self._last_unschedulable_flush >= UNSCHEDULABLE_FLUSH_PERIOD:
            self._last_unschedulable_flush = now
            self.queue.flush_unschedulable()
            for pod in self.cache.cleanup_expired():
                self.queue.move_on_event(ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE), pod, None)
        for wp in list(self.waiting_pods.values()):
            wp.check_timeout(now)

    # ================================================================== scheduling cycle
    def _schedule(self, qp: QueuedPodInfo) -> ScheduleResult:
        pod = qp.pod
        fw = self.frameworks[pod.scheduler_name]
        start = time.perf_counter()
        if pod.deleting or self.cache.is_assumed(pod.uid):
            self.queue.done(pod.uid)
            return ScheduleResult(pod, None, None, message="skipped: pod is being deleted or already assumed")
        state = CycleState(self.queue.scheduling_cycle)
        fit, status, diagnosis = self._schedule_pod(fw, state, pod)
        if fit is None:
            assert status is not None
            return self._fail(fw, state, qp, status, diagnosis, start)
        snap = self.cache.snapshot
        node_name = snap.node(fit.node_slot).name
        assumed = _with_node(pod, node_name)
        self.cache.assume(assumed, node_name)
        self.nominator.delete(pod)
        st = fw.run_reserve(state, assumed, node_name)
        if st is not None:
            fw.run_unreserve(state, assumed, node_name)
            self.cache.forget(assumed)
            return self._fail(fw, state, qp, st, None, start)
        st, waits = fw.run_permit(state, assumed, node_name)
        if st is not None and st.code != Code.WAIT:
            fw.run_unreserve(state, assumed, node_name)
            self.cache.forget(assumed)
            return self._fail(fw, state, qp, st, None, start)
        self._binding.add(pod.uid)
        result = ScheduleResult(pod, node_name, None, fit.evaluated, fit.feasible)
        self.observer.attempt(fw.name, "scheduled", time.perf_counter() - start)
        if st is not None:
            wp = WaitingPod(
                assumed,
                waits,
                self.clock.now(),
                lambda s: self.post(lambda: self._permit_resolved(fw, state, qp, assumed, node_name, s)),
            )
            self.waiting_pods[pod.uid] = wp
        else:
            self.binder.submit(lambda: self._binding_cycle(fw, state, qp, assumed, node_name))
        if self.results is not None:
            self.results(result)
        return result

    def _schedule_pod(
        self, fw: Framework, state: CycleState, pod: Pod
    ) -> tuple[_Fit | None, Status | None, Diagnosis | None]:
        snap = self.cache.snapshot
        all_slots = snap.order
        num_all = len(all_slots)
        diagnosis = Diagnosis(num_all_nodes=num_all)
        if num_all == 0:
            return (
                None,
                Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "no nodes available to schedule pods"),
                None,
            )

        pre, st, narrowing = fw.run_pre_filter(state, pod, snap)
        if st is not None:
            if st.code == Code.ERROR:
                return None, st, None
            diagnosis.pre_filter_msg = st.message
            diagnosis.absent_status, diagnosis.absent_count = st, num_all
            if st.plugin:
                diagnosis.unschedulable_plugins.add(st.plugin)
            return None, st, diagnosis

        fit, nominated_failed = self._evaluate_nominated_node(fw, state, pod)
        if fit is not None:
            return fit, None, None

        candidates = all_slots
        if pre is not None and pre.node_names is not None:
            wanted = [snap.slot_of[n] for n in pre.node_names if snap.has_node(n)]
            keep = np.zeros(snap.capacity, dtype=bool)
            keep[wanted] = True
            candidates = all_slots[keep[all_slots]]
            names = sorted(narrowing)
            diagnosis.absent_status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"node(s) didn't satisfy plugin(s) [{' '.join(names)}]"
            )
            diagnosis.absent_count = num_all - len(candidates)
            if nominated_failed is not None and not np.isin(nominated_failed.slots, candidates).any():
                diagnosis.add(nominated_failed)
                diagnosis.absent_count -= 1

        feasible, processed, st = self._find_feasible(fw, state, pod, candidates, diagnosis)
        self.next_start_node_index = (self.next_start_node_index + processed) % num_all
        if st is not None:
            return None, st, None
        if len(feasible) == 0:
            return None, Status(Code.UNSCHEDULABLE, plugin=""), diagnosis
        evaluated = processed + diagnosis.absent_count
        if len(feasible) == 1:
            return _Fit(int(feasible[0]), evaluated, 1), None, None

        st = fw.run_pre_score(state, pod, snap, feasible)
        if st is not None:
            return None, st, None
        if fw.score_plugins:
            total, _, st = fw.run_score(state, pod, snap, feasible)
            if st is not None:
                return None, st, None
        else:
            total = np.ones(len(feasible), dtype=np.int64)
        best = total.max()
        ties = np.flatnonzero(total == best)
        pick = int(ties[0]) if len(ties) == 1 else int(ties[self.rng.randrange(len(ties))])
        return _Fit(int(feasible[pick]), evaluated, len(feasible)), None, None

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
        if outcome.codes[0] == 0:
            return _Fit(int(one[0]), 1, 1), None
        return None, outcome

    def _find_feasible(
        self, fw: Framework, state: CycleState, pod: Pod, candidates: np.ndarray, diagnosis: Diagnosis
    ) -> tuple[np.ndarray, int, Status | None]:
        """findNodesThatPassFilters: walk candidates from the rotating start index until enough nodes
        pass. Nodes are filtered in chunks; nodes past the last one needed count as not processed."""
        n = len(candidates)
        if n == 0:
            return candidates, 0, None
        pct = fw.profile.percentage_of_nodes_to_score
        if pct is None:
            pct = self.config.percentage_of_nodes_to_score
        to_find = num_feasible_nodes_to_find(pct, n)
        start = self.next_start_node_index % n
        ordered = np.concatenate((candidates[start:], candidates[:start])) if start else candidates
        if not fw.filter_plugins:
            return ordered[:to_find], min(to_find, n), None
        found: list[np.ndarray] = []
        num_found = 0
        pos = 0
        chunk = to_find
        while pos < n and num_found < to_find:
            part = ordered[pos : pos + chunk]
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
    ) -> ScheduleResult:
        pod = qp.pod
        # What to do with the pod's nominated node: None keeps it, "" clears it, a name nominates.
        nominated: str | None = ""
        if diagnosis is not None:
            if fw.post_filter_plugins:
                post, pst = fw.run_post_filter(state, pod, diagnosis)
                diagnosis.post_filter_msg = pst.message if pst is not None else ""
                nominated = post.nominated_node_name if post is not None else None
            message = diagnosis.message()
            qp.unschedulable_plugins = set(diagnosis.unschedulable_plugins)
            qp.pending_plugins = set(diagnosis.pending_plugins)
            reason = REASON_UNSCHEDULABLE
            result = "unschedulable"
        else:
            message = status.message
            if status.is_rejected:
                qp.unschedulable_plugins = {status.plugin} if status.plugin else set()
                reason, result = REASON_UNSCHEDULABLE, "unschedulable"
            else:
                qp.unschedulable_plugins = set()
                reason, result = REASON_SCHEDULER_ERROR, "error"
        self.observer.attempt(fw.name, result, time.perf_counter() - start)
        log.info("pod %s is unschedulable: %s", pod.key, message)
        self.queue.add_unschedulable(qp)
        self.client.report_failure(pod, reason, message)
        self._record_nomination(pod, nominated)
        res = ScheduleResult(pod, None, status, message=message)
        if self.results is not None:
            self.results(res)
        return res

    # ================================================================== binding cycle
    def _permit_resolved(
        self, fw: Framework, state: CycleState, qp: QueuedPodInfo, assumed: Pod, node: str, st: Status | None
    ) -> None:
        self.waiting_pods.pop(assumed.uid, None)
        if st is not None and not st.is_success:
            self._binding_failed(fw, state, qp, assumed, node, st)
            return
        self.binder.submit(lambda: self._binding_cycle(fw, state, qp, assumed, node))

    def _binding_cycle(
        self, fw: Framework, state: CycleState, qp: QueuedPodInfo, assumed: Pod, node: str
    ) -> None:
        """PreBind, Bind, then PostBind; runs on the binder, reports back through the inbox."""
        try:
            st = fw.run_pre_bind(state, assumed, node)
            if st is None:
                st = fw.run_bind(state, assumed, node)
        except Exception as e:  # an adapter failure must requeue the pod, never lose it
            log.exception("binding %s to %s failed", assumed.key, node)
            st = Status(Code.ERROR, f"binding failed: {e}")
        if st is not None:
            failed = st
            self.post(lambda: self._binding_failed(fw, state, qp, assumed, node, failed))
            return
        self.post(lambda: self._binding_done(fw, state, qp, assumed, node))

    def _binding_done(
        self, fw: Framework, state: CycleState, qp: QueuedPodInfo, assumed: Pod, node: str
    ) -> None:
        self._binding.discard(assumed.uid)
        self.cache.finish_binding(assumed)
        fw.run_post_bind(state, assumed, node)
        self.client.report_scheduled(assumed, node)
        self.queue.done(assumed.uid)

    def _binding_failed(
        self, fw: Framework, state: CycleState, qp: QueuedPodInfo, assumed: Pod, node: str, st: Status
    ) -> None:
        self._binding.discard(assumed.uid)
        fw.run_unreserve(state, assumed, node)
        if self.cache.is_assumed(assumed.uid):
            self.cache.forget(assumed)
            # The forgotten pod freed room: retry pods that this may help.
            self.queue.move_on_event(ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE), assumed, None)
        log.warning("binding %s to %s failed: %s", assumed.key, node, st.message)
        qp.unschedulable_plugins = {st.plugin} if st.is_rejected and st.plugin else set()
        reason = REASON_UNSCHEDULABLE if st.is_rejected else REASON_SCHEDULER_ERROR
        self.queue.add_unschedulable(qp)
        self.client.report_failure(qp.pod, reason, st.message)
        self._record_nomination(qp.pod, "")

    def _record_nomination(self, pod: Pod, nominated: str | None) -> None:
        """After a failed attempt: remember the pod's nomination (AddNominatedPod) and write a changed
        ``status.nominatedNodeName`` through the client. ``None`` keeps what the pod has."""
        self.nominator.add(pod, nominated)
        if nominated is not None and nominated != pod.nominated_node_name:
            st = self.client.set_nominated_node(pod, nominated)
            if st is not None and not st.is_success:
                log.warning("cannot set the nominated node of %s: %s", pod.key, st.message)


def _with_node(pod: Pod, node_name: str) -> Pod:
    """A copy of the compiled pod as bound to ``node_name`` (the assumed pod)."""
    clone = Pod.__new__(Pod)
    for attr in Pod.__slots__:
        object.__setattr__(clone, attr, getattr(pod, attr))
    clone.node_name = node_name
    return clone
