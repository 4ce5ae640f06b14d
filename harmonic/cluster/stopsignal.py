"""Stop a long-running command on SIGTERM or SIGINT without taking a lock in the signal handler.

Python runs a signal handler in the main thread between two bytecodes, possibly while that thread holds
a lock: the one inside ``threading.Event.wait``, for instance, which ``harmonic run`` and ``harmonic
reschedule`` sit in while they work. A handler that called ``Event.set()`` there would wait for a lock
its own thread holds, forever (a SIGTERM-ed scheduler that never exits). The handler here only flips a
flag; a watcher thread turns it into ``on_stop()`` in ordinary code, within ``poll`` seconds. The
main thread must not sit in an untimed wait either: CPython runs a handler only on the main thread, and
a signal the kernel delivers to another thread does not wake a main thread blocked on a lock.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopOnSignal:
    def __init__(self, on_stop: Callable[[], None], poll: float = 0.1) -> None:
        self.on_stop = on_stop
        self.poll = poll
        self.requested = False
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        """Handle the stop signals (from the main thread, as Python requires) and start the watcher."""
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handler)
        threading.Thread(target=self._watch, name="stop-signal", daemon=True).start()

    def uninstall(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True  # nothing else: see the module docstring

    def _watch(self) -> None:
        while not self.requested:
            time.sleep(self.poll)
        self.on_stop()
