"""A refresher thread shared by the signal services (affinity graph, usage model, feedback loop)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Periodic:
    """Calls ``fn`` on a daemon thread every ``interval`` seconds until ``stop`` (first call at once
    unless ``wait_first``). An exception is logged and the next round tries again: a bug in a signal
    must never stop the scheduler, which keeps the last view it was given."""

    def __init__(
        self, name: str, fn: Callable[[], object], interval: float, *, wait_first: bool = False
    ) -> None:
        if interval <= 0:
            raise ValueError("interval must be > 0")
        self.name = name
        self.fn = fn
        self.interval = interval
        self.wait_first = wait_first
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        if self.wait_first and self._stop.wait(self.interval):
            return
        while True:
            try:
                self.fn()
            except Exception:
                log.exception("%s: refresh failed", self.name)
            if self._stop.wait(self.interval):
                return

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
            self._thread = None
