"""Every pod the scheduler has heard of, pending or bound, with change handlers (a pod informer's lister).

kube-scheduler's plugins may list pods through the shared informer and add event handlers to it
(scheduler-plugins' Coscheduling counts a gang's pods that way, CapacityScheduling accounts its
quotas' usage). The scheduler keeps this lister current from the same pod events it schedules from and
offers it to plugins as the handle service ``"pods"``. Terminal pods are dropped, as kube-scheduler's
informer filters them out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from harmonic.api.pod import Pod

SERVICE_NAME = "pods"
#: handler(old, new): added (old None), updated, deleted (new None).
PodHandler = Callable[[Pod | None, Pod | None], None]


class PodLister:
    def __init__(self) -> None:
        self._pods: dict[str, Pod] = {}
        self._handlers: list[PodHandler] = []

    def add_handler(self, fn: PodHandler, replay: bool = True) -> None:
        """Register ``fn``; with ``replay`` it first receives every known pod as an add."""
        self._handlers.append(fn)
        if replay:
            for p in list(self._pods.values()):
                fn(None, p)

    def set(self, pod: Pod) -> None:
        old = self._pods.get(pod.uid)
        self._pods[pod.uid] = pod
        for fn in self._handlers:
            fn(old, pod)

    def remove(self, uid: str) -> None:
        old = self._pods.pop(uid, None)
        if old is not None:
            for fn in self._handlers:
                fn(old, None)

    def get(self, uid: str) -> Pod | None:
        return self._pods.get(uid)

    def __iter__(self) -> Iterator[Pod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)
