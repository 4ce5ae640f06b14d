"""The background work queue every live writer (Events, pod status, PodGroup status) uses."""

from __future__ import annotations

import threading

from harmonic.cluster.workers import WorkQueue


def test_one_worker_handles_items_in_order_and_stop_drains_the_queue() -> None:
    seen: list[int] = []
    gate = threading.Event()

    def handle(i: int) -> None:
        gate.wait(5)
        seen.append(i)

    q: WorkQueue[int] = WorkQueue("t", handle)
    q.start()
    for i in range(20):
        assert q.put(i)
    gate.set()
    q.stop(timeout=5)
    assert seen == list(range(20))


def test_a_bounded_queue_refuses_what_does_not_fit_without_blocking() -> None:
    gate = threading.Event()
    q: WorkQueue[int] = WorkQueue("t", lambda _: gate.wait(5), maxsize=2)
    # Not started: nothing is taken, so the third item does not fit.
    assert [q.put(i) for i in range(3)] == [True, True, False]
    assert q.pending == 2


def test_idle_runs_when_no_item_arrives_and_stopping_interrupts_sleeps() -> None:
    idled = threading.Event()
    q: WorkQueue[int] = WorkQueue("t", lambda _: None, workers=2, idle=idled.set, idle_every=0.01)
    q.start()
    assert idled.wait(5)
    assert not q.stopping.is_set()
    q.stop(timeout=5)
    assert q.stopping.is_set()
