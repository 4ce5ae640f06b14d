"""Node state as numpy arrays over all nodes: what array-at-a-time plugins read.

Every node occupies a *slot* (a row in each array). Slots are stable while a node exists, so plugins
and indexes can keep per-slot data; ``order`` lists the schedulable nodes' slots in kube-scheduler's
node-tree order (zones interleaved), which is the order filtering walks them in.

The scheduler mutates a snapshot only between scheduling cycles (cluster events and binding results
are applied by the scheduling loop), so what a cycle reads is exactly kube-scheduler's per-cycle
snapshot without copying it. Preemption's what-if evaluation removes and re-adds pods in place.

Plugins with state derived from pods on nodes (per-topology-domain counts, say) keep it current by
registering a ``SnapshotListener``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import HostPort, Pod
from harmonic.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from harmonic.api.taints import Taint

I64 = np.int64
CORE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
CPU_COL, MEMORY_COL, EPHEMERAL_COL, PODS_COL = 0, 1, 2, 3


class SnapshotListener(Protocol):
    def pod_added(self, snap: Snapshot, slot: int, pod: Pod) -> None: ...
    def pod_removed(self, snap: Snapshot, slot: int, pod: Pod) -> None: ...
    def node_changed(self, snap: Snapshot, slot: int, old: Node | None, new: Node | None) -> None: ...


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One node with its pods, for per-node plugins and diagnostics (framework.NodeInfo)."""

    slot: int
    node: Node
    pods: tuple[Pod, ...]
    requested: dict[str, int]
    nonzero_cpu: int
    nonzero_memory: int

    @property
    def name(self) -> str:
        return self.node.name


class LabelColumn:
    """One label key over all slots: ``codes[slot]`` is the value's id in ``vocab``, -1 when absent."""

    __slots__ = ("codes", "ints", "key", "vocab")

    def __init__(self, key: str, capacity: int) -> None:
        self.key = key
        self.codes = np.full(capacity, -1, dtype=np.int32)
        self.vocab: dict[str, int] = {}
        #: Lazily built integer view for Gt/Lt: (values, valid) per slot.
        self.ints: tuple[np.ndarray, np.ndarray] | None = None

    def set(self, slot: int, value: str | None) -> None:
        if value is None:
            self.codes[slot] = -1
        else:
            code = self.vocab.get(value)
            if code is None:
                code = self.vocab[value] = len(self.vocab)
            self.codes[slot] = code
        self.ints = None

    def codes_of(self, values: Iterable[str]) -> np.ndarray:
        return np.fromiter((self.vocab[v] for v in values if v in self.vocab), dtype=np.int32)

    def in_mask(self, values: Iterable[str]) -> np.ndarray:
        """Slots whose label value is one of ``values`` (absent label: False)."""
        wanted = self.codes_of(values)
        if len(wanted) == 0:
            return np.zeros(len(self.codes), dtype=bool)
        if len(wanted) == 1:
            return self.codes == wanted[0]
        return np.isin(self.codes, wanted)

    def integer_values(self) -> tuple[np.ndarray, np.ndarray]:
        """Label values parsed as base-10 int64, and which slots parsed (strconv.ParseInt semantics)."""
        if self.ints is None:
            table = np.zeros(len(self.vocab) + 1, dtype=I64)
            ok = np.zeros(len(self.vocab) + 1, dtype=bool)
            for v, code in self.vocab.items():
                try:
                    n = int(v, 10)
                except ValueError:
                    continue
                if -(2**63) <= n < 2**63 and v.strip() == v and "_" not in v:
                    table[code], ok[code] = n, True
            self.ints = (table[self.codes], ok[self.codes])
        return self.ints


class Snapshot:
    """Nodes and the pods on them, as arrays indexed by slot."""

    def __init__(self, capacity: int = 64) -> None:
        self.resource_names: list[str] = list(CORE_RESOURCES)
        self.resource_index: dict[str, int] = {n: i for i, n in enumerate(CORE_RESOURCES)}
        self._cap = max(capacity, 8)
        cap = self._cap
        self.nodes: list[Node | None] = [None] * cap
        self.slot_of: dict[str, int] = {}
        self.live = np.zeros(cap, dtype=bool)
        self.allocatable = np.zeros((cap, len(CORE_RESOURCES)), dtype=I64)
        self.requested = np.zeros((cap, len(CORE_RESOURCES)), dtype=I64)
        #: Non-zero CPU and memory requested (defaults for unset requests), used by scoring.
        self.nonzero = np.zeros((cap, 2), dtype=I64)
        self.unschedulable = np.zeros(cap, dtype=bool)
        #: Id of the node's taint list in ``taint_sets`` (nodes share few distinct lists).
        self.taint_set = np.zeros(cap, dtype=np.int32)
        self.taint_sets: list[tuple[Taint, ...]] = [()]
        self._taint_set_ids: dict[tuple[Taint, ...], int] = {(): 0}
        self.pods: list[dict[str, Pod]] = [{} for _ in range(cap)]
        self.host_ports: list[list[HostPort]] = [[] for _ in range(cap)]
        self._order = np.zeros(0, dtype=I64)
        self._order_dirty = False
        self._slot_name: list[str | None] = [None] * cap
        self._zones: dict[str, list[int]] = {}
        self._free: list[int] = []
        self._next_slot = 0
        self._labels: dict[str, LabelColumn] = {}
        self._names: np.ndarray | None = None
        self._images: dict[str, tuple[np.ndarray, int]] = {}
        self.listeners: list[SnapshotListener] = []
        #: Bumped on every change; plugins may key caches on it.
        self.generation = 0
        self.node_generation = 0

    # ----------------------------------------------------------------- reading
    @property
    def capacity(self) -> int:
        return self._cap

    @property
    def order(self) -> np.ndarray:
        """Slots of the listed nodes in node-tree order: zones in order of first appearance, nodes taken
        round-robin across zones (NodeTree.list)."""
        if self._order_dirty:
            zones = list(self._zones.values())
            out: list[int] = []
            depth = max((len(z) for z in zones), default=0)
            for i in range(depth):
                for z in zones:
                    if i < len(z):
                        out.append(z[i])
            self._order = np.asarray(out, dtype=I64)
            self._order_dirty = False
        return self._order

    @property
    def num_nodes(self) -> int:
        return len(self.order)

    def node(self, slot: int) -> Node:
        n = self.nodes[slot]
        if n is None:
            raise KeyError(f"slot {slot} holds no node")
        return n

    def slot(self, name: str) -> int:
        return self.slot_of[name]

    def node_names(self, slots: Iterable[int]) -> list[str]:
        nodes = self.nodes
        return [nodes[int(s)].name for s in slots]  # type: ignore[union-attr]

    def names(self) -> np.ndarray:
        """Node names by slot as an object array ("" for empty slots)."""
        if self._names is None:
            self._names = np.array([n.name if n is not None else "" for n in self.nodes], dtype=object)
        return self._names

    def iter_nodes(self) -> Iterator[tuple[int, Node]]:
        for s in self.order:
            yield int(s), self.nodes[int(s)]  # type: ignore[misc]

    def column(self, resource: str) -> int | None:
        return self.resource_index.get(resource)

    def request_vector(self, requests: dict[str, int]) -> np.ndarray:
        """A pod's requests aligned to the resource columns (pods column = 1); unknown resources grow the table."""
        for name in requests:
            if name not in self.resource_index:
                self._add_resource(name)
        vec = np.zeros(len(self.resource_names), dtype=I64)
        for name, v in requests.items():
            vec[self.resource_index[name]] = v
        vec[PODS_COL] = 1
        return vec

    def label(self, key: str) -> LabelColumn:
        """The column of label ``key`` over all slots, built on first use and kept current after."""
        col = self._labels.get(key)
        if col is None:
            col = LabelColumn(key, self._cap)
            for slot, n in enumerate(self.nodes):
                if n is not None:
                    v = n.labels.get(key)
                    if v is not None:
                        col.set(slot, v)
            self._labels[key] = col
        return col

    def image(self, name: str) -> tuple[np.ndarray, int]:
        """(size of image ``name`` per slot (0 when absent), number of nodes that have it)."""
        hit = self._images.get(name)
        if hit is None:
            sizes = np.zeros(self._cap, dtype=I64)
            count = 0
            for slot, n in enumerate(self.nodes):
                if n is not None and self.live[slot] and name in n.images:
                    sizes[slot] = n.images[name]
                    count += 1
            hit = (sizes, count)
            self._images[name] = hit
        return hit

    def taint_set_id(self, taints: tuple[Taint, ...]) -> int:
        tid = self._taint_set_ids.get(taints)
        if tid is None:
            tid = self._taint_set_ids[taints] = len(self.taint_sets)
            self.taint_sets.append(taints)
        return tid

    def node_info(self, slot: int) -> NodeInfo:
        req = {
            n: int(self.requested[slot, i])
            for i, n in enumerate(self.resource_names)
            if self.requested[slot, i]
        }
        return NodeInfo(
            slot,
            self.node(slot),
            tuple(self.pods[slot].values()),
            req,
            int(self.nonzero[slot, 0]),
            int(self.nonzero[slot, 1]),
        )

    def pods_on(self, slot: int) -> Iterable[Pod]:
        return self.pods[slot].values()

    def all_pods(self) -> Iterator[tuple[int, Pod]]:
        for slot, pods in enumerate(self.pods):
            for p in pods.values():
                yield slot, p

    # ----------------------------------------------------------------- nodes
    def set_node(self, node: Node) -> int:
        """Add or replace a node; returns its slot."""
        slot = self.slot_of.get(node.name)
        old = self.nodes[slot] if slot is not None else None
        if slot is None:
            slot = self._new_slot()
            self.slot_of[node.name] = slot
            self._slot_name[slot] = node.name
        was_live = bool(self.live[slot])
        self.nodes[slot] = node
        self.live[slot] = True
        for name in node.allocatable:
            if name not in self.resource_index:
                self._add_resource(name)
        row = np.zeros(len(self.resource_names), dtype=I64)
        for name, v in node.allocatable.items():
            row[self.resource_index[name]] = v
        self.allocatable[slot] = row
        self.unschedulable[slot] = node.unschedulable
        self.taint_set[slot] = self.taint_set_id(node.taints)
        if old is None or old.labels != node.labels:
            for key, col in self._labels.items():
                col.set(slot, node.labels.get(key))
        if old is None or old.images != node.images:
            self._images.clear()
        if not was_live or old is None or old.zone_key != node.zone_key:
            if was_live and old is not None:
                self._zone_remove(old.zone_key, slot)
            self._zones.setdefault(node.zone_key, []).append(slot)
            self._order_dirty = True
        self._names = None
        self._changed()
        self.node_generation += 1
        for lst in self.listeners:
            lst.node_changed(self, slot, old, node)
        return slot

    def remove_node(self, name: str) -> None:
        """Remove a node. Its pods stay accounted to the (now unlisted) slot until they are removed."""
        slot = self.slot_of.get(name)
        if slot is None or not self.live[slot]:
            return
        old = self.nodes[slot]
        assert old is not None
        self.live[slot] = False
        self._zone_remove(old.zone_key, slot)
        self._order_dirty = True
        self._images.clear()
        for col in self._labels.values():
            col.set(slot, None)
        self.allocatable[slot] = 0
        self.unschedulable[slot] = False
        self.taint_set[slot] = 0
        self._changed()
        self.node_generation += 1
        for lst in self.listeners:
            lst.node_changed(self, slot, old, None)
        if not self.pods[slot]:
            self._release(slot)

    def has_node(self, name: str) -> bool:
        slot = self.slot_of.get(name)
        return slot is not None and bool(self.live[slot])

    # ----------------------------------------------------------------- pods
    def add_pod(self, pod: Pod, node_name: str) -> int:
        """Account ``pod`` on ``node_name`` (which may not exist yet: a ghost slot holds it)."""
        slot = self.slot_of.get(node_name)
        if slot is None:
            slot = self._new_slot()
            self.slot_of[node_name] = slot
            self._slot_name[slot] = node_name
            self.nodes[slot] = None
        vec = self.pod_vector(pod)
        self.requested[slot, : len(vec)] += vec
        self.nonzero[slot, 0] += pod.nonzero_cpu
        self.nonzero[slot, 1] += pod.nonzero_memory
        self.pods[slot][pod.uid] = pod
        if pod.host_ports:
            self.host_ports[slot].extend(pod.host_ports)
        self._changed()
        for lst in self.listeners:
            lst.pod_added(self, slot, pod)
        return slot

    def swap_pod(self, pod: Pod, node_name: str) -> bool:
        """Store ``pod`` in place of the version accounted on ``node_name`` when it is the same pod for
        scheduling (its compiled fields are shared with that version, as ``reparse_pod`` makes them
        when only the binding or the status changed). Nothing is recomputed and listeners are not
        told. Returns False, changing nothing, when the pod is not there or differs."""
        slot = self.slot_of.get(node_name)
        if slot is None:
            return False
        on_node = self.pods[slot]
        stored = on_node.get(pod.uid)
        if stored is None or stored.extra is not pod.extra:
            return False
        on_node[pod.uid] = pod
        return True

    def remove_pod(self, pod: Pod, node_name: str) -> None:
        slot = self.slot_of.get(node_name)
        if slot is None:
            return
        stored = self.pods[slot].pop(pod.uid, None)
        if stored is None:
            return
        vec = self.pod_vector(stored)
        self.requested[slot, : len(vec)] -= vec
        self.nonzero[slot, 0] -= stored.nonzero_cpu
        self.nonzero[slot, 1] -= stored.nonzero_memory
        if stored.host_ports:
            ports = self.host_ports[slot]
            for hp in stored.host_ports:
                ports.remove(hp)
        self._changed()
        for lst in self.listeners:
            lst.pod_removed(self, slot, stored)
        if not self.live[slot] and not self.pods[slot]:
            self._release(slot)

    def add_pods_at(self, pods: Sequence[tuple[int, Pod]]) -> None:
        """``add_pod`` for many pods on existing slots at once (what-if evaluations such as preemption's
        dry run, which add and remove thousands of pods per attempt)."""
        if not pods:
            return
        self._account(pods, add=True)
        for slot, pod in pods:
            self.pods[slot][pod.uid] = pod
            if pod.host_ports:
                self.host_ports[slot].extend(pod.host_ports)
        self._changed()
        for lst in self.listeners:
            for slot, pod in pods:
                lst.pod_added(self, slot, pod)

    def remove_pods_at(self, pods: Sequence[tuple[int, Pod]]) -> None:
        """``remove_pod`` for many pods known to be on the given live slots."""
        if not pods:
            return
        stored = [(slot, self.pods[slot].pop(pod.uid)) for slot, pod in pods]
        self._account(stored, add=False)
        for slot, pod in stored:
            if pod.host_ports:
                ports = self.host_ports[slot]
                for hp in pod.host_ports:
                    ports.remove(hp)
        self._changed()
        for lst in self.listeners:
            for slot, pod in stored:
                lst.pod_removed(self, slot, pod)

    def _account(self, pods: Sequence[tuple[int, Pod]], add: bool) -> None:
        width = len(self.resource_names)
        slots = np.array([s for s, _ in pods], dtype=I64)
        rows = []
        for _, p in pods:
            cached = p.extra.get("_reqrow")
            if cached is None or cached[0] != width:
                row = np.concatenate((self.pod_vector(p), [p.nonzero_cpu, p.nonzero_memory])).astype(I64)
                cached = p.extra["_reqrow"] = (width, row)
            rows.append(cached[1])
        table = np.concatenate(rows).reshape(len(pods), width + 2)
        op = np.add if add else np.subtract
        op.at(self.requested, slots, table[:, :width])
        op.at(self.nonzero, slots, table[:, width:])

    def pod_vector(self, pod: Pod) -> np.ndarray:
        """The pod's request vector, cached on the pod for the current resource table."""
        cached = pod.extra.get("_reqvec")
        if cached is not None and cached[0] == len(self.resource_names):
            vec: np.ndarray = cached[1]
            return vec
        vec = self.request_vector(pod.requests)
        pod.extra["_reqvec"] = (len(self.resource_names), vec)
        return vec

    # ----------------------------------------------------------------- internals
    def _changed(self) -> None:
        self.generation += 1

    def _new_slot(self) -> int:
        if self._free:
            return self._free.pop()
        if self._next_slot == self._cap:
            self._grow(self._cap * 2)
        slot = self._next_slot
        self._next_slot += 1
        return slot

    def _release(self, slot: int) -> None:
        name = self._slot_name[slot]
        if name is not None:
            self.slot_of.pop(name, None)
        self._slot_name[slot] = None
        self.nodes[slot] = None
        self.requested[slot] = 0
        self.nonzero[slot] = 0
        self._names = None
        self._free.append(slot)

    def _grow(self, cap: int) -> None:
        extra = cap - self._cap

        def grow(a: np.ndarray) -> np.ndarray:
            pad = [(0, extra)] + [(0, 0)] * (a.ndim - 1)
            return np.pad(a, pad)

        self.live = grow(self.live)
        self.allocatable = grow(self.allocatable)
        self.requested = grow(self.requested)
        self.nonzero = grow(self.nonzero)
        self.unschedulable = grow(self.unschedulable)
        self.taint_set = grow(self.taint_set)
        self.nodes.extend([None] * extra)
        self.pods.extend({} for _ in range(extra))
        self.host_ports.extend([] for _ in range(extra))
        self._slot_name.extend([None] * extra)
        for col in self._labels.values():
            col.codes = np.concatenate([col.codes, np.full(extra, -1, dtype=np.int32)])
            col.ints = None
        self._images.clear()
        self._names = None
        self._cap = cap

    def _add_resource(self, name: str) -> None:
        self.resource_index[name] = len(self.resource_names)
        self.resource_names.append(name)
        self.allocatable = np.pad(self.allocatable, [(0, 0), (0, 1)])
        self.requested = np.pad(self.requested, [(0, 0), (0, 1)])

    def _zone_remove(self, zone: str, slot: int) -> None:
        members = self._zones.get(zone)
        if members is not None and slot in members:
            members.remove(slot)
            if not members:
                del self._zones[zone]


def extra_key(plugin: str, what: str) -> str:
    """Key under which a plugin caches compiled per-pod data in ``Pod.extra``."""
    return f"{plugin}/{what}"
