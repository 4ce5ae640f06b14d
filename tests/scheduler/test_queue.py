"""The scheduling queue against upstream's PriorityQueue semantics (backend/queue/scheduling_queue.go,
backoff_queue.go): backoff, ordering windows, queueing hints, in-flight events, gating, flushing."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.api.pod import Pod, parse_pod
from harmonic.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    Action,
    ClusterEvent,
    EventWithHint,
    Hint,
    Resource,
)
from harmonic.framework.status import Code, Status
from harmonic.plugins.prioritysort import PrioritySort
from harmonic.scheduler.clock import ManualClock
from harmonic.scheduler.queue import SchedulingQueue
from harmonic.testing import pod

PROFILE = "default-scheduler"


def mk(name: str, **kw: Any) -> Pod:
    b = pod(name)
    if "priority" in kw:
        b = b.priority(kw["priority"])
    if kw.get("gate"):
        b = b.gate("example.com/gate")
    if "labels" in kw:
        b = b.labels(kw["labels"])
    return parse_pod(b.obj())


class Calls:
    def __init__(self, answer: Hint = Hint.QUEUE) -> None:
        self.answer = answer
        self.seen: list[str] = []

    def __call__(self, p: Pod, old: Any, new: Any) -> Hint:
        self.seen.append(p.name)
        return self.answer


def gate(p: Pod, first: str) -> Status | None:
    if p.scheduling_gates:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "gated", plugin="SchedulingGates")
    return None


def queue(
    plugins: dict[str, list[EventWithHint]] | None = None, clock: ManualClock | None = None, **kw: Any
) -> SchedulingQueue:
    return SchedulingQueue(
        PrioritySort(None, None),
        clock or ManualClock(),
        pre_enqueue=gate,
        hints={PROFILE: plugins or {}},
        **kw,
    )


def fail(q: SchedulingQueue, *plugins: str, pending: tuple[str, ...] = ()) -> None:
    """Pop the head and hand it back as rejected by ``plugins`` (an error when there are none)."""
    qp = q.pop()
    assert qp is not None
    qp.unschedulable_plugins = set(plugins)
    qp.pending_plugins = set(pending)
    assert q.add_unschedulable(qp)


def where(q: SchedulingQueue) -> dict[str, int]:
    return {k: v for k, v in q.counts().items() if v}


# ---------------------------------------------------------------------- ordering and backoff
def test_active_queue_orders_by_priority_then_arrival():
    clock = ManualClock()
    q = queue(clock=clock)
    for name, prio in (("low", 0), ("high", 10), ("low2", 0)):
        q.add(mk(name, priority=prio))
        clock.advance(1)
    assert [q.pop().pod.name for _ in range(3)] == ["high", "low", "low2"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("unschedulable", "errors", "seconds"),
    [
        (0, 0, 0.0),
        (1, 0, 1.0),
        (2, 0, 2.0),
        (3, 0, 4.0),
        (4, 0, 8.0),
        (5, 0, 10.0),
        (9, 0, 10.0),
        (5000, 0, 10.0),  # thousands of retries stay at the cap (no float overflow)
        (7, 1, 1.0),
        (7, 3, 4.0),
    ],
)
def test_backoff_doubles_from_initial_to_max(unschedulable, errors, seconds):
    q = queue()
    q.add(mk("p"))
    qp = q.pop()
    assert qp is not None
    qp.unschedulable_count, qp.consecutive_errors_count = unschedulable, errors
    assert q.backoff_seconds(qp) == seconds


def test_backoff_expiry_is_truncated_to_the_ordering_window():
    """PopFromBackoffQ aligns expiries down to whole seconds and a pod whose expiry falls in the
    current window is still backing off: failing at 0.5 s with 1 s backoff, it is free at 2.0 s."""
    clock = ManualClock(0.5)
    q = queue({"P": [EventWithHint(NODE_ADD)]}, clock=clock, pop_from_backoff=True)
    q.add(mk("p"))
    fail(q)  # error: straight to the error backoff heap
    assert where(q) == {"backoff": 1}
    clock.set(1.99)
    q.flush_backoff()
    assert where(q) == {"backoff": 1}
    assert q.next_wakeup() == 2.0
    clock.set(2.0)
    q.flush_backoff()
    assert where(q) == {"active": 1}


def test_without_pop_from_backoff_expiry_is_exact():
    clock = ManualClock(0.5)
    q = queue(clock=clock, pop_from_backoff=False)
    q.add(mk("p"))
    fail(q)
    clock.set(1.5)
    q.flush_backoff()
    assert where(q) == {"backoff": 1}
    clock.set(1.5000001)
    q.flush_backoff()
    assert where(q) == {"active": 1}


def test_pop_from_backoff_when_active_is_empty_but_never_from_the_error_heap():
    q = queue({"P": [EventWithHint(NODE_ADD)]}, pop_from_backoff=True)
    q.add(mk("rejected"))
    q.add(mk("errored"))
    fail(q, "P")
    fail(q)
    assert q.move_on_event(NODE_ADD) == 1  # 'rejected' goes to backoffQ (still backing off)
    assert where(q) == {"backoff": 2}
    qp = q.pop()
    assert qp is not None and qp.pod.name == "rejected"
    assert q.pop() is None
    off = queue({"P": [EventWithHint(NODE_ADD)]}, pop_from_backoff=False)
    off.add(mk("rejected"))
    fail(off, "P")
    off.move_on_event(NODE_ADD)
    assert off.pop() is None


# ---------------------------------------------------------------------- hints and the pool
def test_rejected_pod_waits_for_an_event_its_plugin_registered():
    hint = Calls()
    q = queue({"Fit": [EventWithHint(ASSIGNED_POD_DELETE, hint)], "Other": [EventWithHint(NODE_ADD)]})
    q.add(mk("p"))
    fail(q, "Fit")
    assert where(q) == {"unschedulable": 1}
    assert q.move_on_event(NODE_ADD) == 0  # registered by a plugin that did not reject it
    assert hint.seen == []
    assert q.move_on_event(ASSIGNED_POD_DELETE) == 1
    assert hint.seen == ["p"]
    assert where(q) == {"backoff": 1}


def test_hint_skip_keeps_the_pod_and_hint_errors_requeue():
    q = queue({"Fit": [EventWithHint(ASSIGNED_POD_DELETE, Calls(Hint.SKIP))]})
    q.add(mk("p"))
    fail(q, "Fit")
    assert q.move_on_event(ASSIGNED_POD_DELETE) == 0

    def broken(p: Pod, old: Any, new: Any) -> Hint:
        raise RuntimeError("bug")

    q2 = queue({"Fit": [EventWithHint(ASSIGNED_POD_DELETE, broken)]})
    q2.add(mk("p"))
    fail(q2, "Fit")
    assert q2.move_on_event(ASSIGNED_POD_DELETE) == 1


def test_events_only_look_at_pods_rejected_by_interested_plugins():
    hint = Calls()
    q = queue(
        {"Fit": [EventWithHint(ASSIGNED_POD_DELETE, hint)], "Aff": [EventWithHint(ASSIGNED_POD_ADD, hint)]}
    )
    for i in range(50):
        q.add(mk(f"fit-{i}"))
        fail(q, "Fit")
    q.add(mk("aff"))
    fail(q, "Aff")
    assert q.move_on_event(ASSIGNED_POD_ADD) == 1
    assert hint.seen == ["aff"]


def test_pending_plugin_queue_skips_backoff():
    q = queue({"Fit": [EventWithHint(NODE_ADD)], "Claim": [EventWithHint(NODE_ADD)]})
    q.add(mk("unsched"))
    fail(q, "Fit")
    q.add(mk("pending"))
    fail(q, pending=("Claim",))
    q.move_on_event(NODE_ADD)
    assert where(q) == {"active": 1, "backoff": 1}
    head = q.pop()
    assert head is not None and head.pod.name == "pending"


def test_unschedulable_pods_are_flushed_after_five_minutes():
    clock = ManualClock()
    q = queue({"Fit": [EventWithHint(ASSIGNED_POD_DELETE)]}, clock=clock)
    q.add(mk("p"))
    fail(q, "Fit")
    clock.set(300)
    q.flush_unschedulable()
    assert where(q) == {"unschedulable": 1}
    clock.set(300.5)
    q.flush_unschedulable()
    assert where(q) == {"active": 1}


# ---------------------------------------------------------------------- in-flight events
def test_event_while_in_flight_requeues_the_pod_when_it_fails():
    q = queue({"Fit": [EventWithHint(ASSIGNED_POD_DELETE)]})
    q.add(mk("p"))
    qp = q.pop()
    assert qp is not None
    q.move_on_event(ASSIGNED_POD_DELETE)
    qp.unschedulable_plugins = {"Fit"}
    q.add_unschedulable(qp)
    assert where(q) == {"backoff": 1}


def test_irrelevant_event_while_in_flight_does_not():
    q = queue({"Fit": [EventWithHint(ASSIGNED_POD_DELETE)], "Other": [EventWithHint(NODE_ADD)]})
    q.add(mk("p"))
    qp = q.pop()
    assert qp is not None
    q.move_on_event(NODE_ADD)
    qp.unschedulable_plugins = {"Fit"}
    q.add_unschedulable(qp)
    assert where(q) == {"unschedulable": 1}


def test_pod_deleted_while_in_flight_is_not_requeued():
    q = queue()
    p = mk("p")
    q.add(p)
    qp = q.pop()
    assert qp is not None
    q.delete(p)
    qp.unschedulable_plugins = {"Fit"}
    assert not q.add_unschedulable(qp)
    assert len(q) == 0


def test_update_while_in_flight_is_kept_and_used_when_the_pod_comes_back():
    q = queue({"Labels": [EventWithHint(ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_LABEL))]})
    q.add(mk("p"))
    qp = q.pop()
    assert qp is not None
    q.update(None, mk("p", labels={"a": "b"}))
    qp.unschedulable_plugins = {"Labels"}
    q.add_unschedulable(qp)
    assert where(q) == {"backoff": 1}
    assert q.get("uid-p").labels == {"a": "b"}  # type: ignore[union-attr]


def test_activate_moves_now_and_marks_in_flight_pods():
    q = queue({"Fit": [EventWithHint(ASSIGNED_POD_DELETE)]})
    q.add(mk("waiting"))
    fail(q, "Fit")
    q.activate([mk("waiting")])
    assert where(q) == {"active": 1}
    q.add(mk("flying"))
    q.pop()  # waiting
    flying = q.pop()
    assert flying is not None and flying.pod.name == "flying"
    q.activate([mk("flying")])
    flying.unschedulable_plugins = {"Fit"}
    q.add_unschedulable(flying)
    assert q.counts()["unschedulable"] == 0


# ---------------------------------------------------------------------- updates of pending pods
def test_update_in_active_queue_resorts():
    clock = ManualClock()
    q = queue(clock=clock)
    q.add(mk("a"))
    clock.advance(1)
    q.add(mk("b"))
    q.update(None, mk("b", priority=5))
    assert q.pop().pod.name == "b"  # type: ignore[union-attr]


def test_status_only_update_keeps_an_unschedulable_pod_where_it_is():
    q = queue(
        {
            "Tol": [
                EventWithHint(
                    ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_TOLERATIONS), Calls(Hint.SKIP)
                )
            ]
        }
    )
    q.add(mk("p"))
    fail(q, "Tol")
    q.update(None, mk("p"))
    assert where(q) == {"unschedulable": 1}


def test_update_of_unknown_pod_adds_it():
    q = queue()
    q.update(None, mk("p"))
    assert where(q) == {"active": 1}


# ---------------------------------------------------------------------- gating
def test_gated_pod_waits_in_the_pool_for_its_gating_plugins_events():
    gates = ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    q = queue(
        {
            "SchedulingGates": [EventWithHint(gates)],
            "Other": [EventWithHint(ClusterEvent(Resource.WILDCARD, Action.ALL))],
        }
    )
    q.add(mk("g", gate=True))
    assert where(q) == {"gated": 1}
    assert q.pop() is None
    assert q.move_on_event(NODE_ADD) == 0
    q.update(None, mk("g"))
    assert where(q) == {"active": 1}
    qp = q.pop()
    assert qp is not None and qp.attempts == 1 and not qp.gated


def test_gated_pods_are_not_flushed():
    clock = ManualClock()
    q = queue(clock=clock)
    q.add(mk("g", gate=True))
    clock.set(1000)
    q.flush_unschedulable()
    assert where(q) == {"gated": 1}
