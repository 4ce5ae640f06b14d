"""Background writers: items queued by the scheduling thread, handled in order by worker threads.

Everything the live adapter writes that the scheduling loop must not wait for (Events, pod status
patches, PodGroup status) goes through a ``WorkQueue``: ``put`` never blocks, a bounded queue drops
(and counts) what does not fit, and ``stop`` lets the workers finish what is queued within a deadline.
client-go's counterpart is the workqueue its controllers and broadcasters drain.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class WorkQueue(Generic[T]):
    """``handle(item)`` on ``workers`` threads named ``name-<i>``. ``maxsize`` 0 is unbounded. ``idle``,
    when given, runs on a worker whenever no item arrived for ``idle_every`` seconds (housekeeping)."""

    def __init__(
        self,
        name: str,
        handle: Callable[[T], object],
        *,
        workers: int = 1,
        maxsize: int = 0,
        idle: Callable[[], None] | None = None,
        idle_every: float = 1.0,
    ) -> None:
        self._handle = handle
        self._idle = idle
        self._idle_every = idle_every
        self._queue: queue.Queue[T | None] = queue.Queue(maxsize)
        #: Set once ``stop`` was called: workers' retry sleeps wait on it to end early.
        self.stopping = threading.Event()
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-{i}" if workers > 1 else name, daemon=True)
            for i in range(max(1, workers))
        ]
        self._started = False

    def start(self) -> None:
        for t in self._threads:
            t.start()
        self._started = True

    def put(self, item: T) -> bool:
        """Queue ``item``; False (and nothing queued) when a bounded queue is full."""
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            return False
        return True

    @property
    def pending(self) -> int:
        """Items queued and not yet taken by a worker."""
        return self._queue.qsize()

    def stop(self, timeout: float = 5.0) -> None:
        """Handle what is queued (up to ``timeout``), then stop the workers."""
        if not self._started:
            return
        deadline = time.monotonic() + timeout
        for _ in self._threads:
            try:
                self._queue.put(None, timeout=max(0.01, deadline - time.monotonic()))
            except queue.Full:
                break
        self.stopping.set()
        for t in self._threads:
            t.join(max(0.01, deadline - time.monotonic()))

    def _work(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=self._idle_every if self._idle is not None else None)
            except queue.Empty:
                if self.stopping.is_set():
                    return
                if self._idle is not None:
                    self._idle()
                continue
            if item is None:
                return
            self._handle(item)
