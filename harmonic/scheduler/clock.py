"""Clocks: real monotonic time for live clusters, a settable one for the simulator and tests."""

from __future__ import annotations

import time


class RealClock:
    def now(self) -> float:
        return time.monotonic()


class ManualClock:
    """Virtual time that moves only when told to."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time does not run backwards")
        self._now += seconds

    def set(self, t: float) -> None:
        if t < self._now:
            raise ValueError("time does not run backwards")
        self._now = t
