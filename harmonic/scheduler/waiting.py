"""Pods parked at Permit until every waiting plugin allows them (framework.WaitingPod).

Permit plugins that answer Wait give a timeout each (at most 15 minutes). The pod stays assumed and
waits until every one of them has called ``allow``, any plugin calls ``reject``, or one of the
timeouts passes; the outcome is delivered once. Timeouts are checked against the scheduler's clock,
so a virtual clock drives them in the simulator.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from harmonic.api.pod import Pod
from harmonic.framework.status import Code, Status


class WaitingPod:
    """A pod some Permit plugins asked to wait for. Plugins reach it through their handle
    (``handle.waiting_pod(uid)``); ``on_done`` receives None (allowed) or the rejecting status."""

    def __init__(
        self, pod: Pod, timeouts: Mapping[str, float], now: float, on_done: Callable[[Status | None], None]
    ) -> None:
        self.pod = pod
        self._timeouts = dict(timeouts)
        self._deadlines: dict[str, float] = {plugin: now + t for plugin, t in timeouts.items()}
        self._on_done = on_done
        self._lock = threading.Lock()
        self.done = False

    @property
    def pending_plugins(self) -> list[str]:
        """Plugins that have not allowed the pod yet (GetPendingPlugins)."""
        with self._lock:
            return sorted(self._deadlines)

    @property
    def next_deadline(self) -> float | None:
        with self._lock:
            return min(self._deadlines.values(), default=None)

    def allow(self, plugin: str) -> None:
        """``plugin`` lets the pod through; the last one to do so releases it."""
        with self._lock:
            self._deadlines.pop(plugin, None)
            if self._deadlines:
                return
        self._finish(None)

    def reject(self, plugin: str, message: str) -> None:
        """The pod is unschedulable (``plugin`` may be "" when the scheduler itself rejects it)."""
        self._finish(Status(Code.UNSCHEDULABLE, message, plugin=plugin))

    def check_timeout(self, now: float) -> None:
        """Reject the pod if a waiting plugin's timeout has passed (its timer firing)."""
        with self._lock:
            expired = [p for p, deadline in self._deadlines.items() if now >= deadline]
        if expired:
            plugin = min(expired, key=lambda p: (self._deadlines[p], p))
            waited = go_duration(self._timeouts[plugin])
            self.reject(plugin, f"rejected due to timeout after waiting {waited} at plugin {plugin}")

    def _finish(self, st: Status | None) -> None:
        with self._lock:
            if self.done:
                return
            self.done = True
            self._deadlines.clear()
        self._on_done(st)


_UNITS = (("h", 3600 * 10**9), ("m", 60 * 10**9))


def go_duration(seconds: float) -> str:
    """A duration as Go's ``time.Duration.String`` prints it: ``10s``, ``1m30s``, ``1.5s``, ``500ms``."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 10**9:
        for unit, size in (("ms", 10**6), ("µs", 10**3), ("ns", 1)):
            if ns >= size:
                return sign + _decimal(ns, size) + unit
    out = sign
    started = False
    for unit, size in _UNITS:
        if ns >= size or started:
            out += f"{ns // size}{unit}"
            ns %= size
            started = True
    return out + _decimal(ns, 10**9) + "s"


def _decimal(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = str(frac).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"
