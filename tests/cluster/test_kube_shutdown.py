"""Shutdown never waits forever for a thread that does not stop."""

from __future__ import annotations

import logging
import threading

import pytest

from harmonic.cluster import kube


def test_a_thread_that_does_not_stop_is_reported_not_waited_for(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(kube, "SHUTDOWN_JOIN_SECONDS", 0.05)
    release = threading.Event()
    stuck = threading.Thread(target=release.wait, daemon=True)
    stuck.start()
    with caplog.at_level(logging.WARNING, logger=kube.__name__):
        kube._join(stuck, "the scheduling loop")
    assert stuck.is_alive()
    assert [r.getMessage() for r in caplog.records] == [
        "shutdown: the scheduling loop did not stop within 0.05 s; exiting without it"
    ]
    release.set()
    stuck.join()
    caplog.clear()
    kube._join(stuck, "the scheduling loop")  # a finished thread: nothing to report
    kube._join(None, "leader election")
    assert caplog.records == []
