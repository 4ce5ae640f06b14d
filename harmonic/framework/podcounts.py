"""Per-node counts of pods matching a selector, kept current as pods come and go.

Topology spreading and inter-pod affinity both ask "how many pods matching S are on each node (and so
in each topology domain)?" for the same few selectors over and over. ``PodCounts`` answers it from an
int array per selector (indexed by snapshot slot) maintained by a ``SnapshotListener``: the first
question about a selector scans the pods once, after that every assume/forget/bind/delete updates the
arrays, so a scheduling cycle never rescans pods. Domain counts follow with one ``np.bincount`` over a
label column's codes.

Arrays are kept for the most recently used ``max_entries`` matchers; older ones are dropped and rebuilt
on demand, which bounds memory when selectors churn (``matchLabelKeys`` on pod-template-hash, say).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.api.selectors import LabelSelector
from harmonic.framework.snapshot import Snapshot

COUNT_DTYPE = np.int32


@dataclass(frozen=True, slots=True)
class PodMatch:
    """Pods in ``namespaces`` (``None``: any namespace) whose labels match ``selector``.

    ``skip_terminating`` leaves out pods with a deletion timestamp, as PodTopologySpread's counting does.
    """

    namespaces: frozenset[str] | None
    selector: LabelSelector
    skip_terminating: bool = True

    def matches(self, pod: Pod) -> bool:
        if self.skip_terminating and pod.deleting:
            return False
        if self.namespaces is not None and pod.namespace not in self.namespaces:
            return False
        return self.selector.matches(pod.labels)


class PodCounts:
    """Per-slot counts of matching pods for recently used ``PodMatch``es; one instance per snapshot."""

    def __init__(self, snap: Snapshot, max_entries: int = 512) -> None:
        self._snap = snap
        self.max_entries = max_entries
        self._lru: OrderedDict[PodMatch, np.ndarray] = OrderedDict()
        #: Matchers by namespace, so a pod event only tests the matchers that can count it.
        self._by_ns: dict[str, dict[PodMatch, np.ndarray]] = {}
        self._any_ns: dict[PodMatch, np.ndarray] = {}

    @classmethod
    def of(cls, snap: Snapshot) -> PodCounts:
        """The snapshot's shared instance, registered as its listener on first use."""
        for lst in snap.listeners:
            if isinstance(lst, PodCounts):
                return lst
        inst = cls(snap)
        snap.listeners.append(inst)
        return inst

    def counts(self, match: PodMatch) -> np.ndarray:
        """Matching pods per slot (length ``snap.capacity``). Read-only: the array is live state."""
        arr = self._lru.get(match)
        if arr is None:
            arr = self._build(match)
        else:
            self._lru.move_to_end(match)
            if len(arr) < self._snap.capacity:
                arr = self._regrow(match, arr)
        return arr

    def __len__(self) -> int:
        return len(self._lru)

    # ------------------------------------------------------------------ SnapshotListener
    def pod_added(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        self._apply(slot, pod, 1)

    def pod_removed(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        self._apply(slot, pod, -1)

    def node_changed(self, snap: Snapshot, slot: int, old: Node | None, new: Node | None) -> None:
        return None

    # ------------------------------------------------------------------ internals
    def _apply(self, slot: int, pod: Pod, delta: int) -> None:
        for table in (self._by_ns.get(pod.namespace), self._any_ns):
            if not table:
                continue
            for match, arr in table.items():
                if match.matches(pod):
                    if slot >= len(arr):
                        arr = self._regrow(match, arr)
                    arr[slot] += delta

    def _build(self, match: PodMatch) -> np.ndarray:
        arr = np.zeros(self._snap.capacity, dtype=COUNT_DTYPE)
        for slot, pods in enumerate(self._snap.pods):
            for p in pods.values():
                if match.matches(p):
                    arr[slot] += 1
        self._store(match, arr)
        while len(self._lru) > self.max_entries:
            old, _ = self._lru.popitem(last=False)
            self._unindex(old)
        return arr

    def _regrow(self, match: PodMatch, arr: np.ndarray) -> np.ndarray:
        grown = np.zeros(max(self._snap.capacity, len(arr)), dtype=COUNT_DTYPE)
        grown[: len(arr)] = arr
        self._store(match, grown)
        return grown

    def _store(self, match: PodMatch, arr: np.ndarray) -> None:
        self._lru[match] = arr
        if match.namespaces is None:
            self._any_ns[match] = arr
        else:
            for ns in match.namespaces:
                self._by_ns.setdefault(ns, {})[match] = arr

    def _unindex(self, match: PodMatch) -> None:
        if match.namespaces is None:
            self._any_ns.pop(match, None)
            return
        for ns in match.namespaces:
            table = self._by_ns.get(ns)
            if table is not None:
                table.pop(match, None)
                if not table:
                    del self._by_ns[ns]
