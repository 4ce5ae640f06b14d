"""Pods parked at Permit until every waiting plugin allows them (framework.WaitingPod)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from harmonic.api.pod import Pod
from harmonic.framework.status import Code, Status


class WaitingPod:
    """A pod some Permit plugins asked to wait for. ``allow``/``reject`` are called by those plugins
    (through the framework handle); the outcome is delivered once through ``on_done``."""

    def __init__(
        self, pod: Pod, timeouts: Mapping[str, float], now: float, on_done: Callable[[Status | None], None]
    ) -> None:
        self.pod = pod
        self.pending: dict[str, float] = {plugin: now + t for plugin, t in timeouts.items()}
        self._on_done = on_done
        self.done = False

    @property
    def pending_plugins(self) -> list[str]:
        return sorted(self.pending)

    def allow(self, plugin: str) -> None:
        self.pending.pop(plugin, None)
        if not self.pending:
            self._finish(None)

    def reject(self, plugin: str, message: str) -> None:
        self._finish(Status(Code.UNSCHEDULABLE, message, plugin=plugin))

    def check_timeout(self, now: float) -> None:
        for plugin, deadline in self.pending.items():
            if now >= deadline:
                self._finish(
                    Status(
                        Code.UNSCHEDULABLE, "rejected due to timeout after waiting at permit", plugin=plugin
                    )
                )
                return

    def _finish(self, st: Status | None) -> None:
        if self.done:
            return
        self.done = True
        self._on_done(st)
