"""What the scheduler needs from a cluster adapter, beyond what plugins use."""

from __future__ import annotations

from typing import Protocol

from harmonic.api.pod import Pod
from harmonic.framework.interface import ClusterClient

#: Longest Event message the API server accepts (validation.NoteLengthLimit).
NOTE_LENGTH_LIMIT = 1024


def truncate_event_message(message: str) -> str:
    """truncateMessage: what kube-scheduler puts in a FailedScheduling Event (the condition keeps the
    whole message)."""
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    suffix = " ..."
    return message[: NOTE_LENGTH_LIMIT - len(suffix)] + suffix


def scheduled_note(pod_key: str, node_name: str, verdict: str) -> str:
    """kube-scheduler's Scheduled message, with the verdict appended so ``kubectl describe pod`` says why
    this node; tools matching the message's prefix keep working."""
    note = f"Successfully assigned {pod_key} to {node_name}"
    return truncate_event_message(f"{note}: {verdict}") if verdict else note


class SchedulerClient(ClusterClient, Protocol):
    """A cluster adapter as the scheduler uses it: plugin calls plus status reporting."""

    def report_scheduled(self, pod: Pod, node_name: str, verdict: str = "") -> None:
        """Event ``Scheduled``: ``Successfully assigned <ns>/<name> to <node>``, then ``: <verdict>`` (why
        this node, ``harmonic.framework.explain``) when there is one (``scheduled_note``). Called from the
        binding cycle, which a ``ThreadBinder`` runs on its own threads: it must be thread-safe."""
        ...

    def report_failure(self, pod: Pod, reason: str, message: str) -> None:
        """Event ``FailedScheduling`` (message cut by ``truncate_event_message``) and the pod's
        ``PodScheduled=False`` condition with ``reason`` (``Unschedulable`` or ``SchedulerError``) and the
        whole ``message``."""
        ...
