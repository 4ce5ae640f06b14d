"""The existing pods' (anti-)affinity terms, per term signature and node, kept current incrementally.

Upstream walks every pod with affinity on every node in each PreFilter and PreScore to find the terms
that match the incoming pod. Pods of one workload carry equal terms, so Harmonic keeps, for each
distinct term (``AffinityTerm`` is its own signature) and each use of it, an int array over snapshot
slots counting the pods on each node that carry it:

- ``ANTI``: required anti-affinity terms (Filter: the incoming pod must not land in their domains);
- ``HARD``: required affinity terms (Score, times ``hardPodAffinityWeight``);
- ``PREFERRED``: preferred affinity terms (+weight) and preferred anti-affinity terms (-weight), summed,
  with ``PREFERRED_TERMS`` counting the terms themselves (a +w and a -w cancel in the sum but still make
  upstream's topology score map non-empty).

A cycle then tests each distinct term that can apply to the incoming pod's namespace (terms listing it,
and terms with a namespace selector) once and adds the arrays of the matching ones: its cost grows with
the number of distinct terms, not with the number of pods. The index is a
``SnapshotListener`` shared by every profile of a snapshot; assumed, bound, deleted and what-if pods all
pass through it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.framework.snapshot import Snapshot
from harmonic.plugins.interpodaffinity.terms import AffinityTerm, pod_terms

ANTI, HARD, PREFERRED, PREFERRED_TERMS = 0, 1, 2, 3
_KINDS = 4
COUNT_DTYPE = np.int64


class ExistingTerms:
    """Per-slot arrays per (use, term) of the snapshot's pods; one instance per snapshot."""

    def __init__(self, snap: Snapshot) -> None:
        self._snap = snap
        #: use -> term -> counts (or weight sums) per slot.
        self._arrays: list[dict[AffinityTerm, np.ndarray]] = [{} for _ in range(_KINDS)]
        #: Number of pods carrying each (use, term): the array is dropped when it reaches zero.
        self._refs: list[dict[AffinityTerm, int]] = [{} for _ in range(_KINDS)]
        #: Per use, the terms that can match a pod of a namespace: by listed namespace, and those whose
        #: namespace selector may match any namespace.
        self._by_namespace: list[dict[str, set[AffinityTerm]]] = [{} for _ in range(_KINDS)]
        self._selecting: list[set[AffinityTerm]] = [set() for _ in range(_KINDS)]
        for slot, pods in enumerate(snap.pods):
            for p in pods.values():
                self._apply(slot, p, 1)

    @classmethod
    def of(cls, snap: Snapshot) -> ExistingTerms:
        """The snapshot's shared instance, registered as its listener on first use."""
        for lst in snap.listeners:
            if isinstance(lst, ExistingTerms):
                return lst
        inst = cls(snap)
        snap.listeners.append(inst)
        return inst

    def has(self, kind: int) -> bool:
        return bool(self._arrays[kind])

    def matching(
        self, kind: int, pod: Pod, ns_labels: Mapping[str, str]
    ) -> list[tuple[AffinityTerm, np.ndarray]]:
        """The terms of ``kind`` that match ``pod`` (whose namespace has ``ns_labels``), with their
        per-slot arrays (read-only, at least ``snap.capacity`` long)."""
        out = []
        cap = self._snap.capacity
        table = self._arrays[kind]
        listed = self._by_namespace[kind].get(pod.namespace, ())
        selecting = self._selecting[kind]
        candidates = listed if not selecting else (selecting.union(listed) if listed else selecting)
        for term in candidates:
            if term.matches(pod, ns_labels):
                arr = table[term]
                if len(arr) < cap:
                    arr = table[term] = _grow(arr, cap)
                out.append((term, arr))
        return out

    def array(self, kind: int, term: AffinityTerm) -> np.ndarray:
        arr = self._arrays[kind][term]
        if len(arr) < self._snap.capacity:
            arr = self._arrays[kind][term] = _grow(arr, self._snap.capacity)
        return arr

    # ------------------------------------------------------------------ SnapshotListener
    def pod_added(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        self._apply(slot, pod, 1)

    def pod_removed(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        self._apply(slot, pod, -1)

    def node_changed(self, snap: Snapshot, slot: int, old: Node | None, new: Node | None) -> None:
        return None

    # ------------------------------------------------------------------ internals
    def _apply(self, slot: int, pod: Pod, delta: int) -> None:
        terms = pod_terms(pod)
        if terms.empty:
            return
        for t in terms.required_anti:
            self._add(ANTI, t, slot, delta)
        for t in terms.required_affinity:
            self._add(HARD, t, slot, delta)
        for w in terms.preferred_affinity:
            self._add(PREFERRED, w.term, slot, delta * w.weight, delta)
            self._add(PREFERRED_TERMS, w.term, slot, delta)
        for w in terms.preferred_anti:
            self._add(PREFERRED, w.term, slot, -delta * w.weight, delta)
            self._add(PREFERRED_TERMS, w.term, slot, delta)

    def _add(self, kind: int, term: AffinityTerm, slot: int, value: int, ref: int | None = None) -> None:
        table, refs = self._arrays[kind], self._refs[kind]
        arr = table.get(term)
        if arr is None:
            arr = table[term] = np.zeros(max(self._snap.capacity, slot + 1), dtype=COUNT_DTYPE)
            self._index(kind, term, add=True)
        elif slot >= len(arr):
            arr = table[term] = _grow(arr, max(self._snap.capacity, slot + 1))
        arr[slot] += value
        n = refs.get(term, 0) + (value if ref is None else ref)
        if n == 0:
            del table[term]
            refs.pop(term, None)
            self._index(kind, term, add=False)
        else:
            refs[term] = n

    def _index(self, kind: int, term: AffinityTerm, add: bool) -> None:
        if not term.ns_selector.nothing:
            if add:
                self._selecting[kind].add(term)
            else:
                self._selecting[kind].discard(term)
        by_namespace = self._by_namespace[kind]
        for ns in term.namespaces:
            if add:
                by_namespace.setdefault(ns, set()).add(term)
            else:
                terms = by_namespace.get(ns)
                if terms is not None:
                    terms.discard(term)
                    if not terms:
                        del by_namespace[ns]


def _grow(arr: np.ndarray, size: int) -> np.ndarray:
    grown = np.zeros(size, dtype=arr.dtype)
    grown[: len(arr)] = arr
    return grown
