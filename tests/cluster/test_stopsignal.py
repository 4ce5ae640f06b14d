"""SIGTERM and SIGINT stop a command through a flag and a watcher thread, never from the handler."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from harmonic.cluster.stopsignal import StopOnSignal


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_reaches_on_stop_outside_the_handler(sig: signal.Signals) -> None:
    stopped = threading.Event()
    callers: list[str] = []

    def on_stop() -> None:
        callers.append(threading.current_thread().name)
        stopped.set()

    watcher = StopOnSignal(on_stop, poll=0.01)
    watcher.install()
    try:
        os.kill(os.getpid(), sig)
        assert stopped.wait(5)
    finally:
        watcher.uninstall()
    # Called once, by the watcher: the handler (run in the main thread) only flagged the request.
    assert watcher.requested
    assert callers == ["stop-signal"]
    assert signal.getsignal(sig) is not watcher._handler
