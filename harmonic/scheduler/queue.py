"""The scheduling queue (backend/queue.PriorityQueue with queueing hints, as kube-scheduler runs it).

Three pools:
- activeQ, a heap ordered by the profile's QueueSort plugin: pods ready to be tried;
- backoffQ: pods that failed and wait ``initial * 2^(n-1)`` seconds (capped at the maximum) before
  going back to activeQ, ``n`` counting the attempts plugins rejected, or the consecutive attempts that
  failed with an error after an error. Pods that failed with an error wait in a separate heap;
- the unschedulable pool: pods that plugins rejected. A cluster event moves one out only when a
  plugin that rejected it registered for the event and that plugin's queueing hint says the event may
  help; pods left there longer than ``max_unschedulable_seconds`` are flushed out regardless. Pods
  that PreEnqueue plugins hold back (scheduling gates) wait here too, for their gating plugin's events.

SchedulerPopFromBackoffQ (beta and on by default since v1.33) is on unless ``pop_from_backoff`` is
False: when activeQ is empty the scheduler takes the next pod from backoffQ instead of idling (never
from the error heap); PreEnqueue plugins then run when a pod enters backoffQ rather than when it leaves
it; and backoff expiries are truncated to whole seconds, pods expiring in the same second being
ordered as activeQ orders them.

Events that arrive while a pod is in flight (popped and not yet done) are recorded and replayed
against it if it comes back unschedulable, so an event is never missed between Pop and the failure.

The pool is indexed by rejecting plugin: an event only looks at the pods rejected by plugins that
registered for it, so the common events (a pod bound, a pod added) cost nothing per unschedulable pod.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import IntEnum
from typing import Any

from harmonic.api.pod import Pod
from harmonic.framework.events import (
    FORCE_ACTIVATE,
    UNSCHEDULABLE_TIMEOUT,
    ClusterEvent,
    EventWithHint,
    Hint,
    QueueingHintFn,
    pod_update_events,
)
from harmonic.framework.interface import Clock, QueuedPodInfo, QueueSortPlugin
from harmonic.framework.status import Status

log = logging.getLogger(__name__)

#: Upstream podMaxInUnschedulablePodsDuration.
DEFAULT_MAX_UNSCHEDULABLE_SECONDS = 300.0
#: Width of backoffQ's ordering window (backoffQOrderingWindowDuration).
BACKOFF_WINDOW = 1.0


class Strategy(IntEnum):
    """queueingStrategy: what an event means for an unschedulable pod."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


class _Less:
    """Heap key for QueueSort plugins that only offer ``less``."""

    __slots__ = ("less", "qp")

    def __init__(self, qp: QueuedPodInfo, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool]) -> None:
        self.qp = qp
        self.less = less

    def __lt__(self, other: _Less) -> bool:
        if self.less(self.qp, other.qp):
            return True
        if self.less(other.qp, self.qp):
            return False
        return self.qp.seq < other.qp.seq


class _InFlight:
    """A popped pod: its latest version, the events seen since, and whether it was deleted meanwhile."""

    __slots__ = ("deleted", "events", "pod")

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.events: list[tuple[ClusterEvent, Any, Any]] = []
        self.deleted = False


_Registration = tuple[ClusterEvent, str, QueueingHintFn | None]


class SchedulingQueue:
    def __init__(
        self,
        sort: QueueSortPlugin,
        clock: Clock,
        *,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_unschedulable_seconds: float = DEFAULT_MAX_UNSCHEDULABLE_SECONDS,
        pre_enqueue: Callable[[Pod, str], Status | None] | None = None,
        hints: Mapping[str, Mapping[str, Sequence[EventWithHint]]] | None = None,
        pop_from_backoff: bool = True,
    ) -> None:
        self._sort = sort
        self._clock = clock
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_unschedulable_seconds = max_unschedulable_seconds
        self.pop_from_backoff = pop_from_backoff
        self._pre_enqueue = pre_enqueue
        #: profile -> (registered event, plugin, hint) in registration order.
        self._registrations: dict[str, list[_Registration]] = {}
        #: plugin -> the events it registered (in any profile), for gated pods.
        self._plugin_events: dict[str, list[ClusterEvent]] = {}
        for profile, plugins in (hints or {}).items():
            regs = self._registrations.setdefault(profile, [])
            for plugin, events in plugins.items():
                for e in events:
                    regs.append((e.event, plugin, e.hint))
                    self._plugin_events.setdefault(plugin, []).append(e.event)
        self._interest: dict[ClusterEvent, frozenset[str]] = {}
        self._matches: dict[tuple[str, ClusterEvent], list[tuple[str, QueueingHintFn | None]]] = {}
        self._use_key = type(sort).sort_key is not QueueSortPlugin.sort_key
        self._active: list[Any] = []
        self._active_entry: dict[str, Any] = {}
        self._backoff: list[Any] = []
        self._error_backoff: list[Any] = []
        self._backoff_entry: dict[str, Any] = {}
        self._backoff_pods: dict[str, QueuedPodInfo] = {}
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        #: plugin -> uids in the unschedulable pool it rejected (ordered sets).
        self._by_plugin: dict[str, dict[str, None]] = {}
        self._in_flight: dict[str, _InFlight] = {}
        self._seq = 0
        self.scheduling_cycle = 0

    # ------------------------------------------------------------------ public API
    def __len__(self) -> int:
        return len(self._active_entry) + len(self._backoff_pods) + len(self._unschedulable)

    def add(self, pod: Pod) -> None:
        """A new pending pod (PriorityQueue.Add)."""
        if self.has(pod.uid) or pod.uid in self._in_flight:
            self.update(None, pod)
            return
        self._seq += 1
        self._move_to_active(QueuedPodInfo(pod, self._clock.now(), self._seq))

    def update(self, old: Pod | None, new: Pod) -> None:
        """The pending pod changed (PriorityQueue.Update). ``old`` defaults to the version the queue holds.

        In flight: the change is recorded for when the attempt ends. In activeQ or backoffQ: the pod is
        replaced where it is. In the unschedulable pool: each change is offered to the queueing hints
        of the plugins that rejected it. Unknown: added to activeQ."""
        uid = new.uid
        rec = self._in_flight.get(uid)
        if rec is not None:
            previous = old or rec.pod
            rec.pod = new
            events = pod_update_events(previous, new)
            for other in self._in_flight.values():
                other.events.extend((e, previous, new) for e in events)
            return
        if uid in self._active_entry:
            qp = _qp_of(self._active_entry[uid])
            qp.pod = new
            self._push_active(qp)
            return
        qp_b = self._backoff_pods.get(uid)
        if qp_b is not None:
            qp_b.pod = new
            self._push_backoff(qp_b)
            return
        qp_u = self._unschedulable.get(uid)
        if qp_u is not None:
            previous = old or qp_u.pod
            qp_u.pod = new
            for event in pod_update_events(previous, new):
                where = self._requeue(qp_u, self._worth_requeuing(qp_u, event, previous, new))
                if where != "unschedulable":
                    break
            return
        self.add(new)

    def delete(self, pod: Pod) -> None:
        """The pod is gone or bound elsewhere (PriorityQueue.Delete)."""
        uid = pod.uid
        self._active_entry.pop(uid, None)
        self._backoff_entry.pop(uid, None)
        self._backoff_pods.pop(uid, None)
        self._pool_remove(uid)
        rec = self._in_flight.get(uid)
        if rec is not None:
            rec.deleted = True

    def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule: the head of activeQ, else (PopFromBackoffQ) the head of backoffQ."""
        qp = self._pop_heap(self._active, self._active_entry)
        if qp is None and self.pop_from_backoff:
            qp = self._pop_heap(self._backoff, self._backoff_entry)
            if qp is not None:
                del self._backoff_pods[qp.pod.uid]
        if qp is None:
            return None
        qp.attempts += 1
        qp.backoff_expiration = None
        qp.unschedulable_plugins = set()
        qp.pending_plugins = set()
        if qp.initial_attempt_timestamp is None:
            qp.initial_attempt_timestamp = self._clock.now()
        self.scheduling_cycle += 1
        self._in_flight[qp.pod.uid] = _InFlight(qp.pod)
        return qp

    def done(self, uid: str) -> None:
        """The attempt is over and the pod is not coming back through ``add_unschedulable``."""
        self._in_flight.pop(uid, None)

    def add_unschedulable(self, qp: QueuedPodInfo) -> bool:
        """A pod whose attempt failed (AddUnschedulableIfNotPresent). Rejected pods go to the unschedulable
        pool unless an event seen while they were in flight may help them; pods that failed without a
        rejecting plugin (errors) back off and are retried. Returns False when the pod is not requeued:
        it was deleted meanwhile, or it is already queued."""
        uid = qp.pod.uid
        rec = self._in_flight.pop(uid, None)
        if rec is not None:
            if rec.deleted:
                return False
            qp.pod = rec.pod
        if self.has(uid):
            return False
        if qp.unschedulable_plugins or qp.pending_plugins:
            qp.unschedulable_count += 1
            qp.consecutive_errors_count = 0
        else:
            qp.consecutive_errors_count += 1
        qp.timestamp = self._clock.now()
        qp.backoff_expiration = None
        self._requeue(qp, self._strategy_for_in_flight(qp, rec))
        return True

    def move_on_event(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        pre_check: Callable[[Pod], bool] | None = None,
    ) -> int:
        """MoveAllToActiveOrBackoffQueue: retry the unschedulable pods this event may help (and remember
        it for pods in flight). Returns how many pods left the unschedulable pool."""
        if event.is_wildcard:
            candidates: Iterable[QueuedPodInfo] = list(self._unschedulable.values())
        else:
            interested = self._interested(event)
            if not interested:
                return 0
            candidates = self._indexed(interested)
        moved = 0
        for qp in candidates:
            if pre_check is not None and not pre_check(qp.pod):
                continue
            if qp.gated and not any(e.matches(event) for e in self._plugin_events.get(qp.gating_plugin, ())):
                continue
            strategy = self._worth_requeuing(qp, event, old, new)
            if strategy == Strategy.SKIP:
                continue
            self._pool_remove(qp.pod.uid)
            self._requeue(qp, strategy)
            moved += 1
        for rec in self._in_flight.values():
            rec.events.append((event, old, new))
        return moved

    def activate(self, pods: Iterable[Pod]) -> None:
        """Move these pods to activeQ now (Handle.Activate). A pod in flight gets a ForceActivate event
        so it is retried when its attempt fails."""
        for pod in pods:
            uid = pod.uid
            qp = self._unschedulable.get(uid)
            from_backoff = False
            if qp is None:
                qp = self._backoff_pods.pop(uid, None)
                self._backoff_entry.pop(uid, None)
                from_backoff = qp is not None
            if qp is not None:
                self._move_to_active(qp, from_backoff=from_backoff)
            elif uid in self._in_flight:
                for rec in self._in_flight.values():
                    rec.events.append((FORCE_ACTIVATE, None, pod))

    def flush_backoff(self) -> None:
        """Move pods whose backoff completed to activeQ (flushBackoffQCompleted)."""
        for heap in (self._backoff, self._error_backoff):
            while heap:
                entry = heap[0]
                qp = _qp_of(entry)
                if self._backoff_entry.get(qp.pod.uid) is not entry:
                    heapq.heappop(heap)
                    continue
                if self._is_backing_off(qp):
                    break
                heapq.heappop(heap)
                del self._backoff_entry[qp.pod.uid]
                del self._backoff_pods[qp.pod.uid]
                self._move_to_active(qp, from_backoff=True)

    def flush_unschedulable(self) -> None:
        """Move pods unschedulable for longer than the limit out (flushUnschedulablePodsLeftover)."""
        now = self._clock.now()
        stale = [
            qp for qp in self._unschedulable.values() if now - qp.timestamp > self.max_unschedulable_seconds
        ]
        for qp in stale:
            if qp.gated:
                continue
            strategy = self._worth_requeuing(qp, UNSCHEDULABLE_TIMEOUT, None, None)
            if strategy != Strategy.SKIP:
                self._pool_remove(qp.pod.uid)
                self._requeue(qp, strategy)

    def next_wakeup(self) -> float | None:
        """When the earliest backoff completes (for idle waits and virtual clocks)."""
        times = []
        for heap in (self._backoff, self._error_backoff):
            while heap:
                entry = heap[0]
                qp = _qp_of(entry)
                if self._backoff_entry.get(qp.pod.uid) is entry:
                    expiry = self._backoff_expiry(qp)
                    if expiry is not None:
                        # The first instant at which the pod no longer counts as backing off.
                        done = (
                            expiry + BACKOFF_WINDOW
                            if self.pop_from_backoff
                            else math.nextafter(expiry, math.inf)
                        )
                        times.append(done)
                    break
                heapq.heappop(heap)
        return min(times) if times else None

    def counts(self) -> dict[str, int]:
        gated = sum(1 for qp in self._unschedulable.values() if qp.gated)
        return {
            "active": len(self._active_entry),
            "backoff": len(self._backoff_pods),
            "unschedulable": len(self._unschedulable) - gated,
            "gated": gated,
        }

    def pending_pods(self) -> list[QueuedPodInfo]:
        out = [_qp_of(e) for e in self._active_entry.values()]
        out.extend(self._backoff_pods.values())
        out.extend(self._unschedulable.values())
        return out

    def get(self, uid: str) -> Pod | None:
        """The queue's version of a pending pod (queued or in flight)."""
        entry = self._active_entry.get(uid)
        if entry is not None:
            return _qp_of(entry).pod
        qp = self._backoff_pods.get(uid) or self._unschedulable.get(uid)
        if qp is not None:
            return qp.pod
        rec = self._in_flight.get(uid)
        return rec.pod if rec is not None else None

    def has(self, uid: str) -> bool:
        return uid in self._active_entry or uid in self._backoff_pods or uid in self._unschedulable

    def backoff_seconds(self, qp: QueuedPodInfo) -> float:
        """calculateBackoffDuration: initial * 2^(n-1) capped at the maximum; 0 before any failure."""
        count = qp.consecutive_errors_count or qp.unschedulable_count
        if count == 0 or self.max_backoff == 0:
            return 0.0
        # Past 2^63 the cap has long been reached; stop there so a pod retried thousands of times
        # cannot overflow the float.
        duration = self.initial_backoff * 2.0 ** min(count - 1, 63)
        return self.max_backoff if duration > self.max_backoff else duration

    # ------------------------------------------------------------------ requeueing
    def _requeue(self, qp: QueuedPodInfo, strategy: Strategy) -> str:
        """requeuePodWithQueueingStrategy; returns where the pod went."""
        if strategy == Strategy.SKIP:
            self._pool_add(qp)
            return "unschedulable"
        if strategy == Strategy.AFTER_BACKOFF and self._is_backing_off(qp):
            return "backoff" if self._move_to_backoff(qp) else "unschedulable"
        return "active" if self._move_to_active(qp) else "unschedulable"

    def _move_to_active(self, qp: QueuedPodInfo, from_backoff: bool = False) -> bool:
        """moveToActiveQ: PreEnqueue plugins decide between activeQ and the pool (gated)."""
        uid = qp.pod.uid
        # Out of the pool first: PreEnqueue may change the plugins the pool is indexed by.
        self._pool_remove(uid)
        if not (self.pop_from_backoff and from_backoff) and not self._admit(qp):
            if uid not in self._active_entry and uid not in self._backoff_pods:
                self._pool_add(qp)
            return False
        if qp.initial_attempt_timestamp is None:
            qp.initial_attempt_timestamp = self._clock.now()
        self._backoff_entry.pop(uid, None)
        self._backoff_pods.pop(uid, None)
        self._push_active(qp)
        return True

    def _move_to_backoff(self, qp: QueuedPodInfo) -> bool:
        """moveToBackoffQ; with PopFromBackoffQ the PreEnqueue plugins run here."""
        self._pool_remove(qp.pod.uid)
        if self.pop_from_backoff and not self._admit(qp):
            self._pool_add(qp)
            return False
        self._push_backoff(qp)
        return True

    def _admit(self, qp: QueuedPodInfo) -> bool:
        """runPreEnqueuePlugins: the gating plugin (if any) runs first; a rejection gates the pod."""
        if self._pre_enqueue is None:
            return True
        st = self._pre_enqueue(qp.pod, qp.gating_plugin)
        if st is None or st.is_success:
            qp.gating_plugin = ""
            return True
        qp.gating_plugin = st.plugin or "PreEnqueue"
        qp.unschedulable_plugins.add(qp.gating_plugin)
        return False

    def _strategy_for_in_flight(self, qp: QueuedPodInfo, rec: _InFlight | None) -> Strategy:
        """determineSchedulingHintForInFlightPod."""
        if not qp.unschedulable_plugins and not qp.pending_plugins:
            return Strategy.AFTER_BACKOFF
        if rec is None:
            # Not popped through this queue (or already done): upstream retries such pods.
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for event, old, new in rec.events:
            s = self._worth_requeuing(qp, event, old, new)
            if s == Strategy.IMMEDIATELY:
                return s
            if s == Strategy.AFTER_BACKOFF:
                strategy = s
                if not qp.pending_plugins:
                    return s
        return strategy

    def _worth_requeuing(self, qp: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> Strategy:
        """isPodWorthRequeuing: ask the hints of the plugins that rejected the pod and registered the
        event. Queue from a Pending plugin means activeQ now; from an Unschedulable one, after backoff."""
        rejectors = qp.unschedulable_plugins | qp.pending_plugins
        if not rejectors:
            return Strategy.AFTER_BACKOFF
        if event.is_wildcard:
            # A wildcard event naming a pod is meant for that pod only (ForceActivate).
            if new is not None and not (isinstance(new, Pod) and new.uid == qp.pod.uid):
                return Strategy.SKIP
            return Strategy.AFTER_BACKOFF
        regs = self._matching(qp.pod.scheduler_name, event)
        if regs is None:
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for plugin, hint in regs:
            if plugin not in rejectors:
                continue
            if hint is not None:
                try:
                    if hint(qp.pod, old, new) == Hint.SKIP:
                        continue
                except Exception:  # a faulty hint must not strand the pod
                    log.exception("queueing hint of %s failed for %s; requeueing", plugin, qp.pod.key)
            if plugin in qp.pending_plugins:
                return Strategy.IMMEDIATELY
            if not qp.pending_plugins:
                return Strategy.AFTER_BACKOFF
            strategy = Strategy.AFTER_BACKOFF
        return strategy

    def _matching(self, profile: str, event: ClusterEvent) -> list[tuple[str, QueueingHintFn | None]] | None:
        """The profile's registrations that match ``event`` (plugin, hint), in registration order; None
        for an unknown profile. Matching depends on the event alone, so it is worked out once per event."""
        key = (profile, event)
        hit = self._matches.get(key)
        if hit is None:
            regs = self._registrations.get(profile)
            if regs is None:
                return None
            hit = self._matches[key] = [
                (plugin, hint) for registered, plugin, hint in regs if registered.matches(event)
            ]
        return hit

    def _interested(self, event: ClusterEvent) -> frozenset[str]:
        """Plugins (in any profile) that registered an event matching ``event``."""
        hit = self._interest.get(event)
        if hit is None:
            hit = frozenset(
                plugin
                for regs in self._registrations.values()
                for registered, plugin, _ in regs
                if registered.matches(event)
            )
            self._interest[event] = hit
        return hit

    def _indexed(self, plugins: frozenset[str]) -> list[QueuedPodInfo]:
        """Pool pods rejected by any of ``plugins``, in arrival order."""
        uids: dict[str, None] = {}
        for p in plugins:
            members = self._by_plugin.get(p)
            if members:
                uids.update(members)
        pool = self._unschedulable
        found = [pool[u] for u in uids]
        if len(plugins) > 1:
            found.sort(key=_by_seq)
        return found

    # ------------------------------------------------------------------ pools
    def _pool_add(self, qp: QueuedPodInfo) -> None:
        uid = qp.pod.uid
        self._pool_remove(uid)
        self._unschedulable[uid] = qp
        for p in qp.unschedulable_plugins | qp.pending_plugins:
            self._by_plugin.setdefault(p, {})[uid] = None

    def _pool_remove(self, uid: str) -> None:
        qp = self._unschedulable.pop(uid, None)
        if qp is None:
            return
        for p in qp.unschedulable_plugins | qp.pending_plugins:
            members = self._by_plugin.get(p)
            if members is not None:
                members.pop(uid, None)

    def _sort_entry(self, qp: QueuedPodInfo) -> tuple[Any, ...]:
        """activeQ's order as a tuple: the plugin's sort key (or its ``less``), then arrival."""
        if self._use_key:
            key = self._sort.sort_key(qp)
            assert key is not None
            return (*key, qp.seq, qp)
        return (_Less(qp, self._sort.less),)

    def _push_active(self, qp: QueuedPodInfo) -> None:
        entry = self._sort_entry(qp)
        self._active_entry[qp.pod.uid] = entry
        heapq.heappush(self._active, entry)

    def _push_backoff(self, qp: QueuedPodInfo) -> None:
        """Into backoffQ (ordered by expiry, then as activeQ orders pods) or, for errors, the error heap."""
        expiry = self._backoff_expiry(qp)
        when = -math.inf if expiry is None else expiry
        entry: Any
        if qp.unschedulable_plugins or qp.pending_plugins:
            entry = (when, *self._sort_entry(qp))
            heap = self._backoff
        else:
            entry = (when, qp.seq, qp)
            heap = self._error_backoff
        self._backoff_entry[qp.pod.uid] = entry
        self._backoff_pods[qp.pod.uid] = qp
        heapq.heappush(heap, entry)

    def _pop_heap(self, heap: list[Any], entries: dict[str, Any]) -> QueuedPodInfo | None:
        while heap:
            entry = heapq.heappop(heap)
            qp = _qp_of(entry)
            uid = qp.pod.uid
            if entries.get(uid) is entry:
                del entries[uid]
                return qp
        return None

    def _backoff_expiry(self, qp: QueuedPodInfo) -> float | None:
        """getBackoffTime: timestamp + backoff, truncated to the ordering window; None = no backoff."""
        if qp.backoff_expiration is None:
            seconds = self.backoff_seconds(qp)
            if seconds == 0.0:
                return None
            expiry = qp.timestamp + seconds
            qp.backoff_expiration = math.floor(expiry) if self.pop_from_backoff else expiry
        return qp.backoff_expiration

    def _is_backing_off(self, qp: QueuedPodInfo) -> bool:
        expiry = self._backoff_expiry(qp)
        if expiry is None:
            return False
        now = self._clock.now()
        # A pod whose expiry falls in the current window is still backing off.
        return expiry >= (math.floor(now) if self.pop_from_backoff else now)


def _by_seq(qp: QueuedPodInfo) -> int:
    return qp.seq


def _qp_of(entry: tuple[Any, ...]) -> QueuedPodInfo:
    last = entry[-1]
    qp: QueuedPodInfo = last.qp if isinstance(last, _Less) else last
    return qp
