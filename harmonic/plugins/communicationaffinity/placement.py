"""Where each workload of the affinity graph runs, kept current from snapshot events.

One row per graph workload holds its replicas per node slot in padded sparse form (``slots[row, j]``,
``counts[row, j]`` for ``j < used[row]``; a workload runs on few nodes) and per zone densely. A
scheduling cycle gathers its peers' rows and totals them per slot with one ``bincount`` — no loop
over peers or pods. Rows exist only for workloads in the current graph (rebuilt from the sparse
record of every workload when the graph's version changes), so bare pods and workloads without
traffic cost a dict entry. Memory is rows x (most nodes any one graph workload runs on).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from harmonic.api.pod import Pod
from harmonic.framework.snapshot import Snapshot
from harmonic.signals.graph import GraphView
from harmonic.signals.identity import workload_id

_MIN_WIDTH = 8


class PeerPlacement:
    def __init__(
        self,
        snap: Snapshot,
        zone_label: str,
        cohort_label: str = "",
        clock: Callable[[], float] | None = None,
        window: float = 0.0,
    ) -> None:
        self._snap = snap
        self._clock = clock if window > 0 else None
        self._window = window
        #: workload id -> zone code (-1: unlabelled) -> when a replica there last went, for ``window``
        #: seconds (kept only with a clock). A zone whose replicas are being replaced (node failure,
        #: drain) still counts as theirs.
        self.left: dict[int, dict[int, float]] = {}
        self._prune_above = 1024
        self._zone_label = zone_label
        self._cohort_label = cohort_label
        #: workload id -> slot -> replicas, for every workload with pods.
        self.sparse: dict[int, dict[int, int]] = {}
        #: workload id -> its application (namespace, value of the cohort label), for workloads with pods.
        self.cohort_of: dict[int, tuple[str, str]] = {}
        #: application -> its workloads with pods.
        self.cohorts: dict[tuple[str, str], set[int]] = {}
        self.version = -1
        self.rows: dict[int, int] = {}
        #: workload id -> (row indices of its peers, affinity weights), for the current graph.
        self.peer_rows: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._pos: list[dict[int, int]] = []
        self.slots = np.zeros((0, _MIN_WIDTH), dtype=np.int64)
        self.counts = np.zeros((0, _MIN_WIDTH), dtype=np.float64)
        self.used = np.zeros(0, dtype=np.int64)
        self.totals = np.zeros(0, dtype=np.float64)
        self.by_zone = np.zeros((0, 1), dtype=np.float64)
        self._zones_dirty = True
        for slot, pod in snap.all_pods():
            self.pod_added(snap, slot, pod)
        snap.listeners.append(self)

    # ------------------------------------------------------------------ graph
    def track(self, view: GraphView) -> None:
        """Make rows match ``view``'s workloads (rebuilt when the graph version changes)."""
        if view.version == self.version:
            return
        self.version = view.version
        self.rows = {wid: i for i, wid in enumerate(sorted(view.peers))}
        self.peer_rows = {
            wid: (np.asarray([self.rows[int(p)] for p in ids], dtype=np.int64), weights)
            for wid, (ids, weights) in view.peers.items()
        }
        n = len(self.rows)
        width = max([_MIN_WIDTH, *(len(self.sparse.get(wid, ())) for wid in self.rows)])
        self.slots = np.zeros((n, width), dtype=np.int64)
        self.counts = np.zeros((n, width), dtype=np.float64)
        self.used = np.zeros(n, dtype=np.int64)
        self.totals = np.zeros(n, dtype=np.float64)
        self._pos = [{} for _ in range(n)]
        for wid, row in self.rows.items():
            for j, (slot, count) in enumerate(self.sparse.get(wid, {}).items()):
                self.slots[row, j] = slot
                self.counts[row, j] = count
                self._pos[row][slot] = j
            self.used[row] = len(self._pos[row])
            self.totals[row] = self.counts[row].sum()
        self._zones_dirty = True

    def entries(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(peer position, slot, replicas) of every node the graph rows ``rows`` run on."""
        width = int(self.used[rows].max()) if len(rows) else 0
        if width == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0)
        keep = np.arange(width)[None, :] < self.used[rows][:, None]
        peer = np.broadcast_to(np.arange(len(rows))[:, None], keep.shape)[keep]
        return peer, self.slots[rows, :width][keep], self.counts[rows, :width][keep]

    def zones(self) -> tuple[np.ndarray, np.ndarray]:
        """(zone code per slot, replicas per [row, zone]) over live nodes with the zone label."""
        column = self._snap.label(self._zone_label)
        if self._zones_dirty or self.by_zone.shape[1] < len(column.vocab):
            width = max(len(column.vocab), 1)
            self.by_zone = np.zeros((len(self.rows), width), dtype=np.float64)
            for row in range(len(self.rows)):
                n = int(self.used[row])
                where = self.slots[row, :n]
                zones = column.codes[where]
                known = (zones >= 0) & self._snap.live[where]
                self.by_zone[row] = np.bincount(
                    zones[known], weights=self.counts[row, :n][known], minlength=width
                )
            self._zones_dirty = False
        return column.codes, self.by_zone

    # ------------------------------------------------------------------ snapshot events
    def pod_added(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        self._change(slot, pod, 1)

    def pod_removed(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        self._change(slot, pod, -1)

    def node_changed(self, snap: Snapshot, slot: int, old: Any, new: Any) -> None:
        old_zone = old.labels.get(self._zone_label) if old is not None else None
        new_zone = new.labels.get(self._zone_label) if new is not None else None
        if old is None or new is None or old_zone != new_zone:
            self._zones_dirty = True

    def recent_zones(self, wids: list[int], since: float) -> set[int]:
        """Zone codes (-1: unlabelled) the workloads ``wids`` left at or after ``since``."""
        return {z for wid in wids for z, at in self.left.get(wid, {}).items() if at >= since}

    def _prune(self, now: float) -> None:
        """Forget departures older than the window: every finished Job is a workload of its own, so a
        long-running scheduler would otherwise keep them all."""
        since = now - self._window
        for wid in list(self.left):
            kept = {z: at for z, at in self.left[wid].items() if at >= since}
            if kept:
                self.left[wid] = kept
            else:
                del self.left[wid]
        self._prune_above = max(1024, 2 * len(self.left))

    def _change(self, slot: int, pod: Pod, delta: int) -> None:
        wid = workload_id(pod)
        placed = self.sparse.setdefault(wid, {})
        n = placed.get(slot, 0) + delta
        if delta < 0 and self._clock is not None:
            column = self._snap.label(self._zone_label)
            zone = int(column.codes[slot]) if slot < len(column.codes) else -1
            now = self._clock()
            self.left.setdefault(wid, {})[zone] = now
            if len(self.left) > self._prune_above:
                self._prune(now)
        if n > 0:
            placed[slot] = n
        else:
            placed.pop(slot, None)
            if not placed:
                del self.sparse[wid]
                cohort = self.cohort_of.pop(wid, None)
                if cohort is not None:
                    self.cohorts[cohort].discard(wid)
        if delta > 0 and self._cohort_label and wid not in self.cohort_of:
            app = pod.labels.get(self._cohort_label)
            if app:
                self.cohort_of[wid] = (pod.namespace, app)
                self.cohorts.setdefault((pod.namespace, app), set()).add(wid)
        row = self.rows.get(wid)
        if row is not None:
            self._change_row(row, slot, delta)

    def _change_row(self, row: int, slot: int, delta: int) -> None:
        pos = self._pos[row]
        j = pos.get(slot)
        if j is None:
            if delta < 0:
                return
            j = int(self.used[row])
            if j == self.slots.shape[1]:
                self.slots = np.pad(self.slots, ((0, 0), (0, j)))
                self.counts = np.pad(self.counts, ((0, 0), (0, j)))
            pos[slot] = j
            self.slots[row, j] = slot
            self.used[row] += 1
        self.counts[row, j] += delta
        self.totals[row] += delta
        if self.counts[row, j] <= 0:
            last = int(self.used[row]) - 1
            moved = int(self.slots[row, last])
            self.slots[row, j], self.counts[row, j] = moved, self.counts[row, last]
            self.slots[row, last], self.counts[row, last] = 0, 0.0
            pos[moved] = j
            del pos[slot]
            self.used[row] = last
        if not self._zones_dirty:
            column = self._snap.label(self._zone_label)
            z = int(column.codes[slot])
            if z >= self.by_zone.shape[1]:
                self._zones_dirty = True
            elif z >= 0 and self._snap.live[slot]:
                self.by_zone[row, z] += delta
