"""PrioritySort — QueueSort.

Higher ``spec.priority`` first; equal priorities in the order they entered the queue. No args.
"""

from __future__ import annotations

from typing import Any, ClassVar

from harmonic.framework.interface import QueuedPodInfo, QueueSortPlugin


class PrioritySort(QueueSortPlugin):
    NAME: ClassVar[str] = "PrioritySort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.pod.priority, b.pod.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)

    def sort_key(self, qp: QueuedPodInfo) -> tuple[Any, ...]:
        return (-qp.pod.priority, qp.timestamp)
