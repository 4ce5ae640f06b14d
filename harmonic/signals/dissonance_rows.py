"""What the pods with their own learnt rows add to what an incoming pod inflicts on a node.

The Dissonance plugin prices what a pod of class *c* inflicts on a node by the class matrix:
``importance[k] · M[k][c]`` per class-*k* pod there. A pod whose workload has its own learnt row
(``DissonanceModel.workload_rows``) suffers ``row[c]`` instead of ``M[k][c]``; ``OwnRowLoad`` keeps, per
node slot and aggressor class, the sum over such pods of ``importance[k] · (row[c] − M[k][c])`` — the
difference the class matrix misses — so the plugin adds it, times the incoming pod's CPU share, with one
gather per cycle. It follows the snapshot's pod changes as a listener and is rebuilt from the snapshot
when the model changes (a feedback round: once a minute at most), never inside a cycle otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from harmonic.api.pod import Pod
from harmonic.framework.snapshot import Snapshot
from harmonic.signals.classes import CLASS_INDEX, CLASSES, classify
from harmonic.signals.dissonance import DissonanceModel
from harmonic.signals.identity import workload_of


class OwnRowLoad:
    def __init__(self, snap: Snapshot) -> None:
        self._snap = snap
        self.table = np.zeros((snap.capacity, len(CLASSES)))
        self._model: DissonanceModel | None = None
        self._key: tuple[int, int] | None = None
        snap.listeners.append(self)

    def excess(self, model: DissonanceModel) -> np.ndarray | None:
        """[slots, aggressor classes], or None while no workload has a row of its own."""
        if not model.workload_rows:
            self._model, self._key = model, None
            return None
        key = (id(model), model.version)
        if key != self._key:
            self._model, self._key = model, key
            self.table = np.zeros((self._snap.capacity, len(CLASSES)))
            for slot, pod in self._snap.all_pods():
                self._apply(slot, pod, 1.0)
        return self.table

    def _apply(self, slot: int, pod: Pod, sign: float) -> None:
        model = self._model
        if model is None or not model.workload_rows:
            return
        row = model.workload_rows.get(workload_of(pod))
        if row is None:
            return
        c = CLASS_INDEX[classify(pod)]
        self.table[slot] += sign * model.importance[c] * (row - model.matrix[c])

    def _grow(self, capacity: int) -> None:
        extra = capacity - len(self.table)
        if extra > 0:
            self.table = np.pad(self.table, ((0, extra), (0, 0)))

    def pod_added(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        self._grow(snap.capacity)
        self._apply(slot, pod, 1.0)

    def pod_removed(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        self._apply(slot, pod, -1.0)

    def node_changed(self, snap: Snapshot, slot: int, old: Any, new: Any) -> None:
        self._grow(snap.capacity)
