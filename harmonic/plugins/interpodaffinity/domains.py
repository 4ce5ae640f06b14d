"""Per-topology-domain sums of per-slot arrays, and reading them back per node.

A domain is a value of a node label (``topologyKey``); its index is the value's code in the snapshot's
``LabelColumn``. Only nodes of the snapshot that carry the key count, as upstream only counts pairs
``(key, node.Labels[key])`` of nodes that have the label.
"""

from __future__ import annotations

import numpy as np

from harmonic.framework.snapshot import LabelColumn, Snapshot

I64 = np.int64


class DomainMapper:
    """Slots carrying a topology key and their domain codes, per key, valid for one node generation."""

    def __init__(self, snap: Snapshot) -> None:
        self.snapshot = snap
        self._generation = -1
        self._keyed: dict[str, tuple[LabelColumn, np.ndarray, np.ndarray]] = {}

    def column(self, key: str) -> tuple[LabelColumn, np.ndarray, np.ndarray]:
        """(label column, slots of the nodes that have ``key``, their value codes)."""
        snap = self.snapshot
        if self._generation != snap.node_generation:
            self._keyed.clear()
            self._generation = snap.node_generation
        hit = self._keyed.get(key)
        if hit is None:
            col = snap.label(key)
            slots = np.flatnonzero(col.codes >= 0)
            hit = self._keyed[key] = (col, slots, col.codes[slots].astype(np.intp))
        return hit

    def sums(self, key: str, per_slot: np.ndarray) -> np.ndarray:
        """Sum of ``per_slot`` over the nodes of each domain of ``key`` (int64, one entry per value)."""
        col, slots, codes = self.column(key)
        if len(slots) == 0:
            return np.zeros(len(col.vocab), dtype=I64)
        return np.bincount(codes, weights=per_slot[slots], minlength=len(col.vocab)).astype(I64)

    def any_on_keyed_nodes(self, key: str, per_slot: np.ndarray) -> bool:
        """Whether ``per_slot`` is non-zero on some node that has ``key``."""
        _, slots, _ = self.column(key)
        return bool(np.any(per_slot[slots]))


def gather(domain: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``domain[code]`` per node, 0 where the node lacks the key (code -1) or the domain is unknown."""
    n = len(domain)
    ok = (codes >= 0) & (codes < n)
    if ok.all():
        return domain[codes]
    return np.where(ok, domain[np.where(ok, codes, 0)] if n else 0, 0)
