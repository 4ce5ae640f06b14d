"""NodeBandwidth — PreFilter, Filter, PreScore, Score.

Network and disk bandwidth as schedulable resources, in bytes per second, filtered and scored the way
NodeResourcesFit treats CPU and memory, so co-located chatty (or disk-heavy) pods do not saturate a NIC
(or a disk).

- **Capacity** of a node, per resource: its allocatable ``harmonic.dev/network-bandwidth`` /
  ``harmonic.dev/disk-bandwidth`` (an extended resource a device plugin or the node's status
  advertises), else a node label of the same name holding a quantity (``1250M``). A node advertising
  neither is not limited for that resource, and scores 0 for it.
- **Demand** of a pod: its request of the extended resource (summed over containers as requests
  are), else its annotation of the same name (a quantity of bytes/s); for the network, else the
  bandwidth CNI plugin's ``kubernetes.io/ingress-bandwidth`` plus ``kubernetes.io/egress-bandwidth``
  (bits/s, so divided by 8). The network figure is the NIC's in and out traffic together.
- **Filter**: a node advertising a resource must have room for the pod's demand beside the demands of
  the pods it holds (assumed pods included): "Insufficient harmonic.dev/network-bandwidth",
  Unschedulable, or UnschedulableAndUnresolvable when the demand exceeds the node's whole capacity.
  A pod declaring no bandwidth skips the plugin (PreFilter and PreScore return Skip). A malformed
  annotation rejects the pod (UnschedulableAndUnresolvable) with a reason naming the annotation.
- **Score**, by ``scoringStrategy.type`` over the resources the pod demands and the node advertises,
  weighted as ``scoringStrategy.resources`` says: ``LeastAllocated`` (default, spread the traffic)
  ``(capacity - demanded) * 100 / capacity``; ``MostAllocated`` ``demanded * 100 / capacity``.

Because the filter counts every pod's declared demand on a node, no score plugin (CommunicationAffinity
packing chatty peers together included) can place traffic past a node's bandwidth.

Args (NodeBandwidthArgs): ``scoringStrategy`` {``type`` LeastAllocated | MostAllocated, ``resources``
[{name, weight}] (default both resources at weight 1; names must be the two bandwidth resources;
weights 1..100, 0 means 1)}.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, ClassVar

import numpy as np
from pydantic import field_validator

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.api.quantity import QuantityError, parse_cached, value
from harmonic.framework.args import PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Resource
from harmonic.framework.interface import (
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.plugins.helpers import share
from harmonic.plugins.resourceallocation import ResourceSpec, default_weights

NAME = "NodeBandwidth"
NETWORK_BANDWIDTH = "harmonic.dev/network-bandwidth"
DISK_BANDWIDTH = "harmonic.dev/disk-bandwidth"
#: The resources, in column order.
BANDWIDTH_RESOURCES = (NETWORK_BANDWIDTH, DISK_BANDWIDTH)
#: The bandwidth CNI plugin's pod annotations (bits per second).
INGRESS_ANNOTATION = "kubernetes.io/ingress-bandwidth"
EGRESS_ANNOTATION = "kubernetes.io/egress-bandwidth"
_PREFILTER_KEY = "PreFilter" + NAME
_DEMAND_CACHE = "_bandwidth"


class BandwidthStrategyType(StrEnum):
    LEAST_ALLOCATED = "LeastAllocated"
    MOST_ALLOCATED = "MostAllocated"


class BandwidthStrategy(PluginArgs):
    type: BandwidthStrategyType = BandwidthStrategyType.LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = tuple(ResourceSpec(name=r, weight=1) for r in BANDWIDTH_RESOURCES)

    @field_validator("resources")
    @classmethod
    def _resources(cls, v: tuple[ResourceSpec, ...]) -> tuple[ResourceSpec, ...]:
        if not v:
            return tuple(ResourceSpec(name=r, weight=1) for r in BANDWIDTH_RESOURCES)
        v = default_weights(v)
        for i, r in enumerate(v):
            if r.name not in BANDWIDTH_RESOURCES:
                raise ValueError(f"[{i}].name: {r.name!r} is not one of {', '.join(BANDWIDTH_RESOURCES)}")
            if not 0 < r.weight <= 100:
                raise ValueError(f"[{i}].weight: {r.weight}: resource weight of {r.name} not in (0, 100]")
        return v


class NodeBandwidthArgs(PluginArgs):
    scoring_strategy: BandwidthStrategy = BandwidthStrategy()


def _quantity(text: str) -> int:
    return value(parse_cached(text))


def pod_bandwidth(pod: Pod) -> np.ndarray | str:
    """The pod's demand per resource (bytes/s, int64, in ``BANDWIDTH_RESOURCES`` order), or the reason a
    declaration is malformed. Cached on the pod."""
    cached = pod.extra.get(_DEMAND_CACHE)
    if cached is not None:
        out: np.ndarray | str = cached
        return out
    demand = np.zeros(len(BANDWIDTH_RESOURCES), dtype=np.int64)
    result: np.ndarray | str = demand
    ann = pod.annotations
    try:
        for j, name in enumerate(BANDWIDTH_RESOURCES):
            field = name
            requested = pod.requests.get(name, 0)
            if requested > 0:
                demand[j] = requested
            elif name in ann:
                demand[j] = _quantity(ann[name])
            elif name == NETWORK_BANDWIDTH:
                bits = 0
                for field in (INGRESS_ANNOTATION, EGRESS_ANNOTATION):
                    if field in ann:
                        bits += _quantity(ann[field])
                demand[j] = -(-bits // 8)
            if demand[j] < 0:
                raise QuantityError(f"{ann.get(field)!r} must not be negative")
    except QuantityError as e:
        result = f"pod {pod.key}: annotation {field}: {e}"
    pod.extra[_DEMAND_CACHE] = result
    return result


def node_bandwidth(node: Node) -> np.ndarray:
    """The node's capacity per resource (bytes/s), -1 where it advertises none (or a malformed label)."""
    out = np.full(len(BANDWIDTH_RESOURCES), -1, dtype=np.int64)
    for j, name in enumerate(BANDWIDTH_RESOURCES):
        if name in node.allocatable:
            out[j] = node.allocatable[name]
        elif name in node.labels:
            try:
                out[j] = max(0, _quantity(node.labels[name]))
            except QuantityError:
                out[j] = -1  # an unreadable label advertises nothing; the node is not limited
    return out


class BandwidthIndex:
    """Per node slot, bandwidth capacity (-1: not advertised) and the demand of the pods it holds (a
    SnapshotListener, so Filter and Score are array lookups)."""

    def __init__(self, snap: Snapshot) -> None:
        k = len(BANDWIDTH_RESOURCES)
        self.capacity = np.full((snap.capacity, k), -1, dtype=np.int64)
        self.used = np.zeros((snap.capacity, k), dtype=np.int64)
        for slot, node in enumerate(snap.nodes):
            if node is not None:
                self.capacity[slot] = node_bandwidth(node)
        for slot, pod in snap.all_pods():
            self.pod_added(snap, slot, pod)

    def _fit(self, snap: Snapshot) -> None:
        extra = snap.capacity - len(self.used)
        if extra > 0:
            self.capacity = np.concatenate([self.capacity, np.full((extra, self.capacity.shape[1]), -1)])
            self.used = np.concatenate([self.used, np.zeros((extra, self.used.shape[1]), dtype=np.int64)])

    def _change(self, snap: Snapshot, slot: int, pod: Pod, sign: int) -> None:
        demand = pod_bandwidth(pod)
        if isinstance(demand, str) or not demand.any():
            return
        self._fit(snap)
        self.used[slot] += sign * demand

    def pod_added(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        self._change(snap, slot, pod, 1)

    def pod_removed(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        self._change(snap, slot, pod, -1)

    def node_changed(self, snap: Snapshot, slot: int, old: Node | None, new: Node | None) -> None:
        self._fit(snap)
        self.capacity[slot] = node_bandwidth(new) if new is not None else -1

    def rows(self, snap: Snapshot, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Capacity and demand in use for ``slots`` ([n, resources] each)."""
        self._fit(snap)
        return self.capacity[slots], self.used[slots]


_INDEXES: weakref.WeakKeyDictionary[Snapshot, BandwidthIndex] = weakref.WeakKeyDictionary()


def bandwidth_index(snap: Snapshot) -> BandwidthIndex:
    """The snapshot's bandwidth index, created and registered as a listener on first use (the
    rescheduler's and preemption's snapshot copies get their own)."""
    index = _INDEXES.get(snap)
    if index is None:
        index = _INDEXES[snap] = BandwidthIndex(snap)
        snap.listeners.append(index)
    return index


class NodeBandwidth(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    NAME: ClassVar[str] = NAME
    NODE_LOCAL: ClassVar[bool] = True
    Args: ClassVar[type[PluginArgs]] = NodeBandwidthArgs

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        strategy: BandwidthStrategy = args.scoring_strategy
        self.most = strategy.type == BandwidthStrategyType.MOST_ALLOCATED
        self.weights = np.zeros(len(BANDWIDTH_RESOURCES), dtype=np.int64)
        for r in strategy.resources:
            self.weights[BANDWIDTH_RESOURCES.index(r.name)] = r.weight
        self.reasons = tuple(f"Insufficient {r}" for r in BANDWIDTH_RESOURCES)
        self.index = bandwidth_index(handle.snapshot)

    def _index(self, snap: Snapshot) -> BandwidthIndex:
        return self.index if snap is self.handle.snapshot else bandwidth_index(snap)

    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        demand = pod_bandwidth(pod)
        if isinstance(demand, str):
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, demand)
        if not demand.any():
            return None, Status(Code.SKIP)
        state.write(_PREFILTER_KEY, demand)
        return None, None

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        demand = state.get(_PREFILTER_KEY)
        if demand is None:  # Filter without PreFilter (or a pod that skipped it)
            demand = pod_bandwidth(pod)
            if isinstance(demand, str) or not demand.any():
                return None
        capacity, used = self._index(snap).rows(snap, slots)
        limited = (capacity >= 0) & (demand > 0)
        short = limited & (used + demand > capacity)
        if not short.any():
            return None
        bits = short.astype(np.int64) @ (np.int64(1) << np.arange(len(BANDWIDTH_RESOURCES), dtype=np.int64))
        v = Verdicts.from_bits(bits, Code.UNSCHEDULABLE, self.reasons)
        # A demand beyond the node's whole capacity cannot be met by evicting pods.
        beyond = (limited & (demand > capacity)).any(axis=1)
        if beyond.any():
            v.code = np.where(beyond, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), v.code).astype(np.int8)
        return v

    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        demand = pod_bandwidth(pod)
        if isinstance(demand, str) or not (demand * self.weights).any():
            return Status(Code.SKIP)
        return None

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        demand = pod_bandwidth(pod)
        if isinstance(demand, str):
            return np.zeros(len(slots), dtype=np.int64)
        capacity, used = self._index(snap).rows(snap, slots)
        requested = used + demand
        has = (capacity > 0) & (demand > 0) & (self.weights > 0)
        safe = np.maximum(capacity, 1)
        if self.most:
            per = share(np.minimum(requested, capacity), safe)
        else:
            per = share(np.maximum(capacity - requested, 0), safe)
        w = np.where(has, self.weights, 0)
        total = (np.where(has, per, 0) * w).sum(axis=1)
        # A node scoring no resource (it advertises none the pod uses) scores 0, as NodeResourcesFit's.
        out: np.ndarray = total // np.maximum(w.sum(axis=1), 1)
        return out

    def events_to_register(self) -> Sequence[EventWithHint]:
        return (
            EventWithHint(ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE)),
            EventWithHint(
                ClusterEvent(
                    Resource.NODE, Action.ADD | Action.UPDATE_NODE_ALLOCATABLE | Action.UPDATE_NODE_LABEL
                )
            ),
        )
