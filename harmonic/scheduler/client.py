"""What the scheduler needs from a cluster adapter, beyond what plugins use."""

from __future__ import annotations

from typing import Protocol

from harmonic.api.pod import Pod
from harmonic.framework.interface import ClusterClient


class SchedulerClient(ClusterClient, Protocol):
    """A cluster adapter as the scheduler uses it: plugin calls plus status reporting."""

    def report_scheduled(self, pod: Pod, node_name: str) -> None:
        """Event ``Scheduled``: ``Successfully assigned <ns>/<name> to <node>``."""
        ...

    def report_failure(self, pod: Pod, reason: str, message: str) -> None:
        """Event ``FailedScheduling`` and the pod's ``PodScheduled=False`` condition with ``reason``
        (``Unschedulable`` or ``SchedulerError``) and ``message``."""
        ...
