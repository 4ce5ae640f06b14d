"""The whole Node for batched guests: ``harmonic.io/nodes.fields``, one read for every candidate.

A guest names the sections it wants (``taints,allocatable``); each comes back as a *list column*: per
candidate node, a list of entries of a fixed number of strings (its arity), in call order:

    u32 n | u32 end[n] | string column of every entry's strings, flattened

node ``i``'s entries are ``end[i-1]..end[i]`` (``end[-1]`` = 0), entry ``e``'s strings are
``arity*e .. arity*e + arity - 1`` of the string column (``abi.StringTable``'s format). Numbers are
decimal strings in Harmonic's integer units (CPU in millicores, everything else in whole units: bytes,
counts). The strings of every node are flattened once per change of the nodes (``Snapshot.node_generation``),
and a call only gathers its candidates' ranges, as the label columns do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from harmonic.api.node import Node
from harmonic.api.resources import resource_list
from harmonic.framework.snapshot import Snapshot
from harmonic.plugins.wasm import abi


def _pairs(d: Any) -> list[str]:
    return [s for k in sorted(d) for s in (str(k), str(d[k]))]


def _capacity(n: Node) -> list[str]:
    raw = (n.raw.get("status") or {}).get("capacity")
    return _pairs(resource_list(n.name, "status.capacity", raw)) if raw else []


def _conditions(n: Node) -> list[str]:
    conds = (n.raw.get("status") or {}).get("conditions") or []
    return [s for c in conds for s in (str(c.get("type", "")), str(c.get("status", "")))]


#: Section name -> (strings per entry, the node's entries flattened).
SECTIONS: dict[str, tuple[int, Callable[[Node], list[str]]]] = {
    "labels": (2, lambda n: _pairs(n.labels)),
    "annotations": (2, lambda n: _pairs(n.annotations)),
    "taints": (3, lambda n: [s for t in n.taints for s in (t.key, t.value, t.effect)]),
    "allocatable": (2, lambda n: _pairs(n.allocatable)),
    "capacity": (2, _capacity),
    "images": (2, lambda n: _pairs(n.images)),
    "conditions": (2, _conditions),
}


class _Table:
    """One section over every slot of a snapshot: entry counts, first strings, the strings."""

    __slots__ = ("count", "first", "generation", "snap", "strings")

    def __init__(self, snap: Snapshot, arity: int, entries: Callable[[Node], list[str]]) -> None:
        self.snap = snap
        self.generation = snap.node_generation
        self.count = np.zeros(snap.capacity, dtype=np.int64)
        self.first = np.zeros(snap.capacity, dtype=np.int64)
        flat: list[str] = []
        for slot, node in enumerate(snap.nodes):
            self.first[slot] = len(flat)
            if node is not None:
                got = entries(node)
                self.count[slot] = len(got) // arity
                flat.extend(got)
        self.strings = abi.StringTable(flat)

    def fresh(self, snap: Snapshot) -> bool:
        return (
            self.snap is snap and self.generation == snap.node_generation and len(self.count) == snap.capacity
        )


class NodeFields:
    """Encodes sections for a call's candidates, keeping each section's flattened strings per snapshot."""

    def __init__(self) -> None:
        self._tables: dict[str, _Table] = {}

    def section(self, snap: Snapshot, name: str, slots: np.ndarray) -> bytes:
        arity, entries = SECTIONS[name]
        table = self._tables.get(name)
        if table is None or not table.fresh(snap):
            table = self._tables[name] = _Table(snap, arity, entries)
        slots = np.asarray(slots, dtype=np.int64)
        counts = table.count[slots]
        ends = np.cumsum(counts, dtype=np.int64)
        nstr = counts * arity
        total = int(nstr.sum())
        if total:
            begins = np.cumsum(nstr) - nstr
            codes = np.repeat(table.first[slots] - begins, nstr) + np.arange(total, dtype=np.int64)
        else:
            codes = np.zeros(0, dtype=np.int64)
        return abi.u32(len(slots)) + ends.astype("<u4").tobytes() + table.strings.column(codes)
