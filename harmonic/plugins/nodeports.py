"""NodePorts — PreFilter, Filter.

Filter rejects nodes where a pod already uses one of the incoming pod's host ports (same protocol and
port, and the same host IP or either side binding ``0.0.0.0``): "node(s) didn't have free ports for
the requested pod ports", Unschedulable. PreFilter returns Skip for pods without host ports. No args.

Host ports in use are indexed per (protocol, port) and host IP as counts over node slots, kept current
by a ``SnapshotListener``, so Filter is a few array lookups per requested port.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import HostPort, Pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Hint, Resource
from harmonic.framework.interface import FilterPlugin, PreFilterPlugin, PreFilterResult
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts

NAME = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
BIND_ALL = "0.0.0.0"
_PREFILTER_KEY = "PreFilter" + NAME


class HostPortIndex:
    """Counts of pods using each (protocol, port, host IP) per node slot (a SnapshotListener)."""

    def __init__(self, snap: Snapshot) -> None:
        #: (protocol, port) -> host IP -> count per slot.
        self.by_port: dict[tuple[str, int], dict[str, np.ndarray]] = {}
        for slot, pod in snap.all_pods():
            self.pod_added(snap, slot, pod)

    def _counts(self, snap: Snapshot, hp: HostPort) -> np.ndarray:
        ips = self.by_port.setdefault((hp.protocol, hp.port), {})
        arr = ips.get(hp.ip)
        if arr is None or len(arr) < snap.capacity:
            grown = np.zeros(snap.capacity, dtype=np.int32)
            if arr is not None:
                grown[: len(arr)] = arr
            arr = ips[hp.ip] = grown
        return arr

    def pod_added(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        for hp in pod.host_ports:
            self._counts(snap, hp)[slot] += 1

    def pod_removed(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        for hp in pod.host_ports:
            self._counts(snap, hp)[slot] -= 1

    def node_changed(self, snap: Snapshot, slot: int, old: Node | None, new: Node | None) -> None:
        return None

    def conflicts(self, snap: Snapshot, want: HostPort, slots: np.ndarray) -> np.ndarray:
        """HostPortInfo.CheckConflict for each slot in ``slots``."""
        ips = self.by_port.get((want.protocol, want.port))
        out = np.zeros(len(slots), dtype=bool)
        if not ips:
            return out
        for ip, counts in ips.items():
            if want.ip == BIND_ALL or ip in (BIND_ALL, want.ip):
                inside = slots < len(counts)
                out[inside] |= counts[slots[inside]] > 0
        return out


_INDEXES: weakref.WeakKeyDictionary[Snapshot, HostPortIndex] = weakref.WeakKeyDictionary()


def host_port_index(snap: Snapshot) -> HostPortIndex:
    """The snapshot's host-port index, created and registered as a listener on first use."""
    index = _INDEXES.get(snap)
    if index is None:
        index = _INDEXES[snap] = HostPortIndex(snap)
        snap.listeners.append(index)
    return index


def fits_ports(want: Sequence[HostPort], used: Sequence[HostPort]) -> bool:
    return not any(w.conflicts(u) for w in want for u in used)


class NodePorts(PreFilterPlugin, FilterPlugin):
    NAME: ClassVar[str] = NAME
    NODE_LOCAL: ClassVar[bool] = True

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.index = host_port_index(handle.snapshot)

    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.host_ports:
            return None, Status(Code.SKIP)
        state.write(_PREFILTER_KEY, pod.host_ports)
        return None, None

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        want: tuple[HostPort, ...] = state.get(_PREFILTER_KEY, pod.host_ports)
        if not want:
            return None
        index = self.index if snap is self.handle.snapshot else host_port_index(snap)
        bad = np.zeros(len(slots), dtype=bool)
        for hp in want:
            bad |= index.conflicts(snap, hp, slots)
        if not bad.any():
            return None
        return Verdicts.failing(bad, Code.UNSCHEDULABLE, ERR_REASON)

    def events_to_register(self) -> Sequence[EventWithHint]:
        return (
            # Host ports are immutable, so only deleting a pod can free one.
            EventWithHint(ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE), hint_pod_deleted),
            EventWithHint(ClusterEvent(Resource.NODE, Action.ADD)),
        )


def hint_pod_deleted(pod: Pod, old: Pod | None, new: Pod | None) -> Hint:
    """isSchedulableAfterPodDeleted: only a deleted pod holding one of this pod's host ports helps."""
    if old is None or (not old.node_name and not old.nominated_node_name):
        return Hint.SKIP
    if not old.host_ports or fits_ports(pod.host_ports, old.host_ports):
        return Hint.SKIP
    return Hint.QUEUE
