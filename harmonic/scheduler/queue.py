"""The scheduling queue (internal/queue.PriorityQueue).

Three pools:
- activeQ, a heap ordered by the profile's QueueSort plugin: pods ready to be tried;
- backoffQ, a heap by backoff expiry: pods that failed recently and wait ``initial * 2^(attempts-1)``
  seconds (capped) before returning to activeQ;
- the unschedulable pool: pods no node could take. A cluster event moves them out when one of the
  plugins that rejected the pod registered for that event and its queueing hint says it may help;
  pods left there longer than ``max_unschedulable_seconds`` are flushed back regardless.

Events that arrive while a pod is being scheduled are remembered and replayed against it if it comes
back unschedulable, so an event is never missed between Pop and the failure (the in-flight pods rule).
Pods whose PreEnqueue plugins (scheduling gates) reject them wait in the unschedulable pool, gated.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harmonic.api.pod import Pod
from harmonic.framework.events import (
    UNSCHEDULABLE_TIMEOUT,
    ClusterEvent,
    EventWithHint,
    Hint,
    Resource,
)
from harmonic.framework.interface import Clock, QueuedPodInfo, QueueSortPlugin
from harmonic.framework.status import Status

log = logging.getLogger(__name__)

#: Upstream podMaxInUnschedulablePodsDuration.
DEFAULT_MAX_UNSCHEDULABLE_SECONDS = 300.0


class _Less:
    """Heap entry for QueueSort plugins that only offer ``less``."""

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


@dataclass(frozen=True, slots=True)
class _InFlightEvent:
    event: ClusterEvent
    old: Any
    new: Any


class SchedulingQueue:
    def __init__(
        self,
        sort: QueueSortPlugin,
        clock: Clock,
        *,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_unschedulable_seconds: float = DEFAULT_MAX_UNSCHEDULABLE_SECONDS,
        pre_enqueue: Callable[[Pod], Status | None] | None = None,
        hints: Mapping[str, Mapping[str, Sequence[EventWithHint]]] | None = None,
    ) -> None:
        self._sort = sort
        self._clock = clock
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_unschedulable_seconds = max_unschedulable_seconds
        self._pre_enqueue = pre_enqueue
        #: profile -> plugin -> events it registered.
        self._hints = hints or {}
        self._use_key = type(sort).sort_key is not QueueSortPlugin.sort_key
        self._active: list[Any] = []
        self._active_entry: dict[str, Any] = {}
        self._backoff: list[tuple[float, int, str]] = []
        self._backoff_pods: dict[str, QueuedPodInfo] = {}
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        #: uid -> events seen since the pod was popped.
        self._in_flight: dict[str, list[_InFlightEvent]] = {}
        self._seq = 0
        self.scheduling_cycle = 0
        self._closed = False

    # ------------------------------------------------------------------ public API
    def __len__(self) -> int:
        return len(self._active_entry) + len(self._backoff_pods) + len(self._unschedulable)

    def add(self, pod: Pod) -> None:
        """A new pending pod."""
        uid = pod.uid
        if uid in self._active_entry or uid in self._backoff_pods or uid in self._unschedulable:
            return
        self._seq += 1
        qp = QueuedPodInfo(pod, self._clock.now(), self._seq)
        self._enqueue_active_or_gated(qp)

    def update(self, old: Pod | None, new: Pod) -> None:
        """The pending pod's spec changed: refresh it wherever it is, retrying gated/unschedulable ones."""
        uid = new.uid
        if uid in self._active_entry:
            entry = self._active_entry[uid]
            qp = entry.qp if isinstance(entry, _Less) else entry[-1]
            qp.pod = new
            self._remove_active(uid)
            self._push_active(qp)
            return
        if uid in self._backoff_pods:
            self._backoff_pods[uid].pod = new
            return
        qp_u = self._unschedulable.get(uid)
        if qp_u is not None:
            # Without the old object, the queued one is the previous version: a status-only change (a
            # nominated node written by the scheduler itself) must not requeue the pod.
            previous = qp_u.pod if old is None else old
            qp_u.pod = new
            if qp_u.gated is not None:
                del self._unschedulable[uid]
                self._enqueue_active_or_gated(qp_u)
                return
            if _spec_changed(previous, new):
                del self._unschedulable[uid]
                self._to_active_or_backoff(qp_u)
            return
        if uid in self._in_flight:
            return
        self.add(new)

    def delete(self, pod: Pod) -> None:
        uid = pod.uid
        self._remove_active(uid)
        self._backoff_pods.pop(uid, None)
        self._unschedulable.pop(uid, None)

    def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule, or None when activeQ is empty."""
        while self._active:
            entry = heapq.heappop(self._active)
            qp = entry.qp if isinstance(entry, _Less) else entry[-1]
            if self._active_entry.get(qp.pod.uid) is not entry:
                continue
            del self._active_entry[qp.pod.uid]
            qp.attempts += 1
            if qp.initial_attempt_timestamp is None:
                qp.initial_attempt_timestamp = self._clock.now()
            self.scheduling_cycle += 1
            self._in_flight[qp.pod.uid] = []
            return qp
        return None

    def done(self, uid: str) -> None:
        """The pod's scheduling attempt is over (scheduled, or handed back via add_unschedulable)."""
        self._in_flight.pop(uid, None)

    def add_unschedulable(self, qp: QueuedPodInfo, backoff: bool = True) -> None:
        """A pod that failed its cycle. It goes to the unschedulable pool unless an event that may help
        it arrived while it was in flight, or it failed without plugin rejections (an error), in which
        case it backs off and is retried."""
        uid = qp.pod.uid
        events = self._in_flight.pop(uid, [])
        if uid in self._active_entry or uid in self._backoff_pods or uid in self._unschedulable:
            return
        qp.timestamp = self._clock.now()
        rejected_by = qp.unschedulable_plugins | qp.pending_plugins
        if not rejected_by:
            self._push_backoff(qp)
            return
        for ev in events:
            if self._worth_requeuing(qp, ev.event, ev.old, ev.new) == Hint.QUEUE:
                self._push_backoff(qp) if backoff else self._push_active(qp)
                return
        self._unschedulable[uid] = qp

    def move_on_event(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        pre_check: Callable[[Pod], bool] | None = None,
    ) -> int:
        """MoveAllToActiveOrBackoffQueue: retry unschedulable pods this event may help. Returns how many moved."""
        for events in self._in_flight.values():
            events.append(_InFlightEvent(event, old, new))
        moved = 0
        for uid, qp in list(self._unschedulable.items()):
            if qp.gated is not None:
                continue
            if pre_check is not None and not pre_check(qp.pod):
                continue
            if self._worth_requeuing(qp, event, old, new) == Hint.SKIP:
                continue
            del self._unschedulable[uid]
            self._to_active_or_backoff(qp)
            moved += 1
        return moved

    def activate(self, pods: Iterable[Pod]) -> None:
        """Move these pods to activeQ now (framework Handle.Activate)."""
        for pod in pods:
            qp = self._unschedulable.pop(pod.uid, None) or self._backoff_pods.pop(pod.uid, None)
            if qp is not None:
                self._push_active(qp)

    def flush_backoff(self) -> None:
        """Move pods whose backoff expired to activeQ (flushBackoffQCompleted)."""
        now = self._clock.now()
        while self._backoff and self._backoff[0][0] <= now:
            _, _, uid = heapq.heappop(self._backoff)
            qp = self._backoff_pods.pop(uid, None)
            if qp is not None:
                self._push_active(qp)

    def flush_unschedulable(self) -> None:
        """Move pods unschedulable for longer than the limit back out (flushUnschedulablePodsLeftover)."""
        now = self._clock.now()
        stale = [
            qp
            for qp in self._unschedulable.values()
            if qp.gated is None and now - qp.timestamp > self.max_unschedulable_seconds
        ]
        for qp in stale:
            if self._worth_requeuing(qp, UNSCHEDULABLE_TIMEOUT, None, None) == Hint.QUEUE:
                del self._unschedulable[qp.pod.uid]
                self._to_active_or_backoff(qp)

    def next_wakeup(self) -> float | None:
        """When the next backoff expires or an unschedulable pod times out (for virtual clocks)."""
        times = []
        while self._backoff and self._backoff[0][2] not in self._backoff_pods:
            heapq.heappop(self._backoff)
        if self._backoff:
            times.append(self._backoff[0][0])
        if self._unschedulable:
            oldest = min(
                (qp.timestamp for qp in self._unschedulable.values() if qp.gated is None), default=None
            )
            if oldest is not None:
                times.append(oldest + self.max_unschedulable_seconds + 1e-6)
        return min(times) if times else None

    def counts(self) -> dict[str, int]:
        gated = sum(1 for qp in self._unschedulable.values() if qp.gated is not None)
        return {
            "active": len(self._active_entry),
            "backoff": len(self._backoff_pods),
            "unschedulable": len(self._unschedulable) - gated,
            "gated": gated,
        }

    def pending_pods(self) -> list[QueuedPodInfo]:
        out: list[QueuedPodInfo] = []
        for entry in self._active_entry.values():
            out.append(entry.qp if isinstance(entry, _Less) else entry[-1])
        out.extend(self._backoff_pods.values())
        out.extend(self._unschedulable.values())
        return out

    def has(self, uid: str) -> bool:
        return uid in self._active_entry or uid in self._backoff_pods or uid in self._unschedulable

    def backoff_seconds(self, qp: QueuedPodInfo) -> float:
        d = self.initial_backoff
        for _ in range(1, qp.attempts):
            d *= 2
            if d > self.max_backoff:
                return self.max_backoff
        return d

    # ------------------------------------------------------------------ internals
    def _enqueue_active_or_gated(self, qp: QueuedPodInfo) -> None:
        st = self._pre_enqueue(qp.pod) if self._pre_enqueue is not None else None
        if st is not None and not st.is_success:
            qp.gated = st
            self._unschedulable[qp.pod.uid] = qp
            return
        qp.gated = None
        self._push_active(qp)

    def _to_active_or_backoff(self, qp: QueuedPodInfo) -> None:
        if self._clock.now() < qp.timestamp + self.backoff_seconds(qp) and qp.attempts > 0:
            self._push_backoff(qp)
        else:
            self._push_active(qp)

    def _push_active(self, qp: QueuedPodInfo) -> None:
        entry: Any
        if self._use_key:
            key = self._sort.sort_key(qp)
            assert key is not None
            entry = (*key, qp.seq, qp)
        else:
            entry = _Less(qp, self._sort.less)
        self._active_entry[qp.pod.uid] = entry
        heapq.heappush(self._active, entry)

    def _remove_active(self, uid: str) -> None:
        # Lazy deletion: pop() skips entries no longer registered.
        self._active_entry.pop(uid, None)

    def _push_backoff(self, qp: QueuedPodInfo) -> None:
        expiry = qp.timestamp + self.backoff_seconds(qp)
        self._backoff_pods[qp.pod.uid] = qp
        heapq.heappush(self._backoff, (expiry, qp.seq, qp.pod.uid))

    def _worth_requeuing(self, qp: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> Hint:
        """isPodWorthRequeuing: QUEUE if a rejecting plugin registered this event and its hint agrees."""
        rejectors = qp.unschedulable_plugins | qp.pending_plugins
        if not rejectors or event.resource == Resource.WILDCARD:
            return Hint.QUEUE
        plugins = self._hints.get(qp.pod.scheduler_name, {})
        for name in rejectors:
            for reg in plugins.get(name, ()):
                if not reg.event.matches(event):
                    continue
                if reg.hint is None:
                    return Hint.QUEUE
                try:
                    if reg.hint(qp.pod, old, new) == Hint.QUEUE:
                        return Hint.QUEUE
                except Exception:  # a faulty hint must not lose the pod
                    log.exception("queueing hint of %s failed for %s; requeueing", name, qp.pod.key)
                    return Hint.QUEUE
        return Hint.SKIP


def _spec_changed(old: Pod, new: Pod) -> bool:
    return old.raw.get("spec") != new.raw.get("spec") or old.labels != new.labels
