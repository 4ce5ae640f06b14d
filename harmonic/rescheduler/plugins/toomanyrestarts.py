"""RemovePodsHavingTooManyRestarts — deschedule. Evicts pods whose containers restarted at least
``podRestartThreshold`` times (init containers too with ``includingInitContainers``), most restarts
first, optionally only in ``states`` (Running, CrashLoopBackOff). Evicts by design.

Args: ``namespaces``, ``labelSelector``, ``podRestartThreshold`` (required, >= 1),
``includingInitContainers``, ``states``.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import field_validator

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.rescheduler.args import FilteredArgs
from harmonic.rescheduler.framework import DeschedulePlugin, evict_each
from harmonic.rescheduler.plugins.common import filtered, restarts, waiting_reasons
from harmonic.rescheduler.state import container_statuses

_STATES = ("CrashLoopBackOff", "Running")


class RemovePodsHavingTooManyRestartsArgs(FilteredArgs):
    pod_restart_threshold: int = 0
    including_init_containers: bool = False
    states: tuple[str, ...] = ()

    @field_validator("pod_restart_threshold")
    @classmethod
    def _threshold(cls, v: int) -> int:
        if v < 1:
            raise ValueError("invalid PodsHavingTooManyRestarts threshold (must be at least 1)")
        return v

    @field_validator("states")
    @classmethod
    def _states(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if any(s not in _STATES for s in v):
            raise ValueError(f"states must be one of {list(_STATES)}")
        return v


class RemovePodsHavingTooManyRestarts(DeschedulePlugin):
    NAME: ClassVar[str] = "RemovePodsHavingTooManyRestarts"
    Args = RemovePodsHavingTooManyRestartsArgs
    args: RemovePodsHavingTooManyRestartsArgs

    def _in_states(self, p: Pod) -> bool:
        states = set(self.args.states)
        if not states or p.phase in states:
            return True
        if set(waiting_reasons(container_statuses(p))) & states:
            return True
        return self.args.including_init_containers and bool(
            set(waiting_reasons(container_statuses(p, "initContainerStatuses"))) & states
        )

    def deschedule(self, nodes: list[Node]) -> None:
        keep = filtered(self.handle, self.args)
        init = self.args.including_init_containers
        for n in nodes:
            pods = [
                p
                for p in self.handle.pods_on(n.name)
                if keep(p) and restarts(p, init) >= self.args.pod_restart_threshold and self._in_states(p)
            ]
            pods.sort(key=lambda p: -restarts(p, init))
            if not evict_each(
                self.handle,
                pods,
                self.NAME,
                f"{restarts(pods[0], init) if pods else 0}+ restarts",
                move=False,
            ):
                return
