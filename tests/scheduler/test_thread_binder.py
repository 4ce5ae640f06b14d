"""ThreadBinder: binding cycles on a pool of threads, finished before shutdown returns."""

from __future__ import annotations

import threading

import pytest

from harmonic.scheduler.scheduler import ThreadBinder


def test_runs_every_cycle_concurrently_and_shutdown_waits_for_them():
    binder = ThreadBinder(workers=4)
    started = threading.Barrier(4, timeout=5)  # passes only if 4 cycles run at the same time
    done: list[int] = []
    lock = threading.Lock()

    def cycle(i: int) -> None:
        if i < 4:
            started.wait()
        with lock:
            done.append(i)

    for i in range(50):
        binder.submit(lambda i=i: cycle(i))
    binder.shutdown()
    assert sorted(done) == list(range(50))


def test_a_failing_cycle_does_not_stop_its_worker():
    binder = ThreadBinder(workers=1)
    done: list[int] = []

    def boom() -> None:
        raise RuntimeError("adapter bug")

    binder.submit(boom)
    binder.submit(lambda: done.append(1))
    binder.shutdown()
    assert done == [1]


def test_submit_after_shutdown_is_refused():
    binder = ThreadBinder(workers=2)
    binder.shutdown()  # never started: nothing to wait for
    with pytest.raises(RuntimeError, match="shut down"):
        binder.submit(lambda: None)
