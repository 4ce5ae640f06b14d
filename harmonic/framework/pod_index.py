"""Per-node totals of pods grouped by a key, kept current as pods come and go.

``PodIndex(key_fn, amount_fn)`` listens to a ``Snapshot`` and keeps, for every key, an array over node
slots of the summed ``amount_fn(pod)`` of pods with that key (``amount_fn`` defaults to counting).
A plugin asks ``index.per_slot(key)`` instead of walking pods on every node in a cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.framework.snapshot import Snapshot


class PodIndex:
    def __init__(
        self,
        snap: Snapshot,
        key_fn: Callable[[Pod], Hashable | None],
        amount_fn: Callable[[Pod], float] | None = None,
    ) -> None:
        self._key = key_fn
        self._amount = amount_fn
        self._arrays: dict[Hashable, np.ndarray] = {}
        self._totals: dict[Hashable, float] = {}
        self._sparse: dict[Hashable, dict[int, float]] = {}
        self._cap = snap.capacity
        for slot, pod in snap.all_pods():
            self.pod_added(snap, slot, pod)
        snap.listeners.append(self)

    def _array(self, key: Hashable, capacity: int) -> np.ndarray:
        a = self._arrays.get(key)
        if a is None:
            a = self._arrays[key] = np.zeros(max(capacity, self._cap), dtype=np.float64)
        return a

    def _grow(self, capacity: int) -> None:
        if capacity <= self._cap:
            return
        for k, a in self._arrays.items():
            self._arrays[k] = np.pad(a, (0, capacity - len(a)))
        self._cap = capacity

    def pod_added(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        key = self._key(pod)
        if key is None:
            return
        self._grow(snap.capacity)
        amount = self._amount(pod) if self._amount is not None else 1.0
        self._array(key, snap.capacity)[slot] += amount
        self._totals[key] = self._totals.get(key, 0.0) + amount
        sparse = self._sparse.setdefault(key, {})
        sparse[slot] = sparse.get(slot, 0.0) + amount

    def pod_removed(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        key = self._key(pod)
        if key is None or key not in self._arrays:
            return
        amount = self._amount(pod) if self._amount is not None else 1.0
        self._arrays[key][slot] -= amount
        sparse = self._sparse[key]
        left = sparse.get(slot, 0.0) - amount
        if left <= 1e-9:
            sparse.pop(slot, None)
        else:
            sparse[slot] = left
        total = self._totals[key] - amount
        if total <= 1e-9:
            del self._arrays[key]
            del self._totals[key]
            del self._sparse[key]
        else:
            self._totals[key] = total

    def node_changed(self, snap: Snapshot, slot: int, old: Node | None, new: Node | None) -> None:
        self._grow(snap.capacity)

    def per_slot(self, key: Hashable) -> np.ndarray | None:
        """Totals per slot for ``key`` (None when no pod has it). Do not modify the array."""
        return self._arrays.get(key)

    def where(self, key: Hashable) -> dict[int, float]:
        """slot -> total for the slots where ``key`` has pods (few, for one workload)."""
        return self._sparse.get(key, {})

    def total(self, key: Hashable) -> float:
        return self._totals.get(key, 0.0)

    def keys(self) -> list[Hashable]:
        return list(self._arrays)
