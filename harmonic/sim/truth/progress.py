"""How fast batch work really advances under the truth's interference (work-conserving).

A pod that runs for a given duration (a Job's pods, a bare pod with ``duration``) holds that much
*work*: the seconds it would run alone on its node. Under the truth's slowdown ``s`` (``Interference``,
over the pods sharing its node) it advances at ``1 / (1 + s)`` work-seconds per second. ``s`` changes
only when a pod binds to or leaves the node, so the pods' finishing times are re-planned only then: the
work done at the old rate is subtracted and the rest is planned at the new rate. No work is lost or
invented when the rate changes, and a pod alone on its node (``s = 0``) runs exactly its duration.

The world keeps the clock and the timers (``ProgressHost``); this module keeps the arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from harmonic.sim.truth.interference import Interference, PodTruth


class ProgressHost(Protocol):
    """What progress tracking needs of a world: its clock and a timer."""

    def now(self) -> float: ...

    def after(self, delay: float, fn: Callable[[], None]) -> int: ...

    def cancel(self, handle: int) -> None: ...


@dataclass
class _Work:
    node: str
    #: Work-seconds left at ``since``.
    left: float
    #: Slowdown in force since ``since``.
    slowdown: float
    since: float
    #: The engine's timer for the planned finish (None: not planned yet).
    timer: int | None = None


class BatchProgress:
    """Finite-work pods' progress: ``start`` one when it binds, ``stop`` any pod that leaves a node;
    ``done(key)`` is called when a pod's work is complete."""

    def __init__(self, host: ProgressHost, interference: Interference, done: Callable[[str], None]) -> None:
        self.host = host
        self.interference = interference
        self.done = done
        #: node -> pod key -> its truth (every pod on the node: all of them put pressure on it).
        self.on_node: dict[str, dict[str, PodTruth]] = {}
        #: node -> allocatable CPU (millicores), as known when its first pod bound.
        self.alloc: dict[str, float] = {}
        self.work: dict[str, _Work] = {}

    def bound(self, key: str, node: str, truth: PodTruth, alloc_millis: float, work: float | None) -> None:
        """``key`` now runs on ``node``; ``work`` seconds of it (None: it runs until deleted)."""
        self.on_node.setdefault(node, {})[key] = truth
        self.alloc[node] = alloc_millis
        if work is not None:
            self.work[key] = _Work(node, max(work, 0.0), 0.0, self.host.now())
        self._replan(node, new=key if work is not None else None)

    def gone(self, key: str, node: str) -> None:
        pods = self.on_node.get(node)
        if pods is None or pods.pop(key, None) is None:
            return
        w = self.work.pop(key, None)
        if w is not None and w.timer is not None:
            self.host.cancel(w.timer)
        if not pods:
            del self.on_node[node]
            return
        self._replan(node)

    def slowdown(self, key: str) -> float | None:
        w = self.work.get(key)
        return None if w is None else w.slowdown

    def remaining(self, key: str) -> float | None:
        """Work-seconds ``key`` has left now (None: not a finite-work pod that is running)."""
        w = self.work.get(key)
        if w is None:
            return None
        return max(w.left - (self.host.now() - w.since) / (1.0 + w.slowdown), 0.0)

    def _replan(self, node: str, new: str | None = None) -> None:
        pods = self.on_node[node]
        keys = [k for k in pods if k in self.work]
        if not keys:
            return
        slow = self._slowdowns(node, keys)
        now = self.host.now()
        for key, s in zip(keys, slow, strict=True):
            w = self.work[key]
            if key != new and s == w.slowdown:
                continue
            w.left = max(w.left - (now - w.since) / (1.0 + w.slowdown), 0.0)
            w.since, w.slowdown = now, s
            self._plan_finish(key, w)

    def _slowdowns(self, node: str, keys: list[str]) -> list[float]:
        pods = self.on_node[node]
        truths = list(pods.values())
        n = len(truths)
        slow = self.interference.slowdown_arrays(
            np.zeros(n, dtype=np.int64),
            np.fromiter((t.klass for t in truths), dtype=np.int64, count=n),
            np.fromiter((t.cpu_millis for t in truths), dtype=np.float64, count=n),
            np.fromiter((t.multiplier for t in truths), dtype=np.float64, count=n),
            np.asarray([self.alloc[node]]),
        )
        at = {k: i for i, k in enumerate(pods)}
        return [float(slow[at[k]]) for k in keys]

    def _plan_finish(self, key: str, w: _Work) -> None:
        if w.timer is not None:
            self.host.cancel(w.timer)

        def finish() -> None:
            del self.work[key]
            self.done(key)

        w.timer = self.host.after(w.left * (1.0 + w.slowdown), finish)
