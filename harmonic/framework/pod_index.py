"""Where the pods of each group run, kept current as pods come and go.

``PodIndex(snapshot, key_fn, amount_fn)`` listens to a ``Snapshot`` and keeps, for every key, the
summed ``amount_fn(pod)`` (default: a count) per node slot — sparsely (slot -> total), and as packed
numpy arrays (``packed_map``: key -> (slots, totals, grand total)) refreshed on every change so hot
paths can gather many keys with one dict lookup each. A plugin asks the index instead of walking every node's pods in a
cycle. Keys with few distinct values (classes, say) can also keep a dense per-slot array (``dense``).
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
        dense: bool = False,
    ) -> None:
        self._key = key_fn
        self._amount = amount_fn
        self._dense = dense
        self._arrays: dict[Hashable, np.ndarray] = {}
        self._totals: dict[Hashable, float] = {}
        self._sparse: dict[Hashable, dict[int, float]] = {}
        #: key -> (slots, totals per slot, total over slots); always current.
        self.packed_map: dict[Hashable, tuple[np.ndarray, np.ndarray, float]] = {}
        self._cap = snap.capacity
        for slot, pod in snap.all_pods():
            self.pod_added(snap, slot, pod)
        snap.listeners.append(self)

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
        amount = self._amount(pod) if self._amount is not None else 1.0
        if self._dense:
            self._grow(snap.capacity)
            a = self._arrays.get(key)
            if a is None:
                a = self._arrays[key] = np.zeros(self._cap, dtype=np.float64)
            a[slot] += amount
        self._totals[key] = self._totals.get(key, 0.0) + amount
        sparse = self._sparse.setdefault(key, {})
        sparse[slot] = sparse.get(slot, 0.0) + amount
        self._repack(key)

    def pod_removed(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        key = self._key(pod)
        if key is None or key not in self._sparse:
            return
        amount = self._amount(pod) if self._amount is not None else 1.0
        if self._dense:
            self._arrays[key][slot] -= amount
        sparse = self._sparse[key]
        left = sparse.get(slot, 0.0) - amount
        if left <= 1e-9:
            sparse.pop(slot, None)
        else:
            sparse[slot] = left
        total = self._totals[key] - amount
        if total <= 1e-9:
            self._arrays.pop(key, None)
            del self._totals[key]
            del self._sparse[key]
            del self.packed_map[key]
        else:
            self._totals[key] = total
            self._repack(key)

    def _repack(self, key: Hashable) -> None:
        sparse = self._sparse[key]
        self.packed_map[key] = (
            np.fromiter(sparse.keys(), dtype=np.int64, count=len(sparse)),
            np.fromiter(sparse.values(), dtype=np.float64, count=len(sparse)),
            self._totals[key],
        )

    def node_changed(self, snap: Snapshot, slot: int, old: Node | None, new: Node | None) -> None:
        if self._dense:
            self._grow(snap.capacity)

    def per_slot(self, key: Hashable) -> np.ndarray | None:
        """Dense totals per slot for ``key`` (``dense`` indexes only; None when no pod has it)."""
        return self._arrays.get(key)

    def where(self, key: Hashable) -> dict[int, float]:
        """slot -> total for the slots where ``key`` has pods. Do not modify."""
        return self._sparse.get(key, {})

    def total(self, key: Hashable) -> float:
        return self._totals.get(key, 0.0)

    def keys(self) -> list[Hashable]:
        return list(self._sparse)
