"""NodeVolumeLimits — PreFilter, Filter. No args.

CSI attach limits (upstream's CSILimits): a node's CSINode gives per driver how many volumes may be
attached (``spec.drivers[].allocatable.count``). Filter rejects (Unschedulable, "node(s) exceed max
volume count") nodes where, for some driver, the unique volumes already attached there plus the pod's
new ones exceed that count. Volumes are identified as ``<driver>/<handle>``:

- a claim's bound PV gives its CSI driver and handle; an in-tree AWS EBS, GCE PD, Azure Disk, Cinder
  or Portworx PV counts as the CSI driver it migrates to (migration is on whenever the node has a
  CSINode, as in current upstream); an unbound claim (or one whose PV is missing) counts as its
  class's provisioner with a handle unique to the claim;
- in-line volumes of those in-tree kinds count likewise;
- volumes of the node's VolumeAttachments count too, once.

Attached volumes are those of the pods on the node (missing claims there are not counted). The pod's
own volumes already attached on the node add nothing. A claim the pod names that does not exist is
UnschedulableAndUnresolvable. PreFilter returns Skip for pods without claims or migratable volumes.

Per-driver limits are arrays over node slots, rebuilt when storage objects or nodes change; only
nodes holding pods with such volumes (or VolumeAttachments) are examined one by one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from harmonic.api.pod import Pod
from harmonic.api.storage import (
    CSI_DRIVER_OF_PLUGIN,
    EPHEMERAL,
    CSINode,
    PersistentVolumeClaim,
    ephemeral_owner_error,
    pod_volumes,
)
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Hint, Resource
from harmonic.framework.interface import FilterPlugin, PreFilterPlugin, PreFilterResult
from harmonic.framework.services import VOLUME_NEEDS, Need
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.framework.volumes import VolumeLister, VolumeUsage, volumes_of

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
_IN_TREE_PLUGIN_NAMES = frozenset(
    (*CSI_DRIVER_OF_PLUGIN, "kubernetes.io/azure-file", "kubernetes.io/vsphere-volume", "kubernetes.io/rbd")
)
_NO_LIMIT = -1


class _Failure(Exception):
    def __init__(self, status: Status) -> None:
        self.status = status


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin):
    NAME: ClassVar[str] = "NodeVolumeLimits"
    NEEDS: ClassVar[tuple[Need, ...]] = VOLUME_NEEDS

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.usage = VolumeUsage.of(handle.snapshot)
        # Makes the handles of unbound claims unique (upstream: a random 32-character prefix).
        self._unbound_prefix = uuid.uuid4().hex
        self._limits_key: tuple[int, int, int] | None = None
        self._limits: dict[str, np.ndarray] = {}
        self._csi_nodes: list[CSINode | None] = []
        self._va_slots: set[int] = set()

    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        if any(v.uses_claim or v.migratable for v in pod_volumes(pod)):
            return None, None
        return None, Status(Code.SKIP)

    # ------------------------------------------------------------------ volumes -> driver/handle
    def _volumes(self, lister: VolumeLister, pod: Pod, csi_on: bool, new: bool) -> dict[str, str]:
        """filterAttachableVolumes: unique volume name -> driver, for a node with (``csi_on``) or
        without a CSINode. For the pod being scheduled (``new``) a missing claim is a failure."""
        out: dict[str, str] = {}
        for v in pod_volumes(pod):
            if not v.uses_claim:
                if v.in_tree is not None and csi_on and v.in_tree[0] in CSI_DRIVER_OF_PLUGIN:
                    driver = CSI_DRIVER_OF_PLUGIN[v.in_tree[0]]
                    out[f"{driver}/{v.in_tree[1]}"] = driver
                continue
            if not v.claim:
                raise _Failure(Status(Code.ERROR, "PersistentVolumeClaim had no name"))
            pvc = lister.pvc(pod.namespace, v.claim)
            if pvc is None:
                if new:
                    msg = f'looking up PVC {pod.namespace}/{v.claim}: persistentvolumeclaim "{v.claim}" not found'
                    raise _Failure(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg))
                continue
            if v.kind == EPHEMERAL:
                err = ephemeral_owner_error(pod, pvc)
                if err is not None:
                    raise _Failure(Status(Code.ERROR, err))
            driver, handle = self._driver_info(lister, pvc, csi_on)
            if driver and handle:
                out[f"{driver}/{handle}"] = driver
        return out

    def _driver_info(self, lister: VolumeLister, pvc: PersistentVolumeClaim, csi_on: bool) -> tuple[str, str]:
        pv = lister.pv(pvc.volume_name) if pvc.volume_name else None
        if pv is None:
            return self._driver_from_class(lister, pvc, csi_on)
        if pv.csi is not None:
            return pv.csi.driver, pv.csi.handle
        if pv.in_tree is None or not csi_on or pv.in_tree[0] not in CSI_DRIVER_OF_PLUGIN:
            return "", ""
        return CSI_DRIVER_OF_PLUGIN[pv.in_tree[0]], pv.in_tree[1]

    def _driver_from_class(
        self, lister: VolumeLister, pvc: PersistentVolumeClaim, csi_on: bool
    ) -> tuple[str, str]:
        if not pvc.storage_class:
            return "", ""
        sc = lister.storage_class(pvc.storage_class)
        if sc is None:
            return "", ""
        handle = f"{self._unbound_prefix}-{pvc.namespace}/{pvc.name}"
        if sc.provisioner in _IN_TREE_PLUGIN_NAMES:
            if not csi_on or sc.provisioner not in CSI_DRIVER_OF_PLUGIN:
                return "", ""
            return CSI_DRIVER_OF_PLUGIN[sc.provisioner], handle
        return sc.provisioner, handle

    # ------------------------------------------------------------------ node limits
    def _refresh(self, lister: VolumeLister, snap: Snapshot) -> None:
        """Per-driver limit arrays over slots (-1: no limit), the CSINode of each slot, and the slots
        with VolumeAttachments; rebuilt when storage objects or nodes changed."""
        key = (id(lister), lister.generation, snap.node_generation)
        if key == self._limits_key and len(self._csi_nodes) == snap.capacity:
            return
        limits: dict[str, np.ndarray] = {}
        csi_nodes: list[CSINode | None] = [None] * snap.capacity
        va_slots: set[int] = set()
        for slot, node in enumerate(snap.nodes):
            if node is None:
                continue
            csi = lister.csi_node(node.name)
            csi_nodes[slot] = csi
            if csi is not None:
                for driver, count in csi.limits.items():
                    arr = limits.get(driver)
                    if arr is None:
                        arr = limits[driver] = np.full(snap.capacity, _NO_LIMIT, dtype=np.int64)
                    arr[slot] = count
            if any(True for _ in lister.volume_attachments(node.name)):
                va_slots.add(slot)
        self._limits, self._csi_nodes, self._va_slots = limits, csi_nodes, va_slots
        self._limits_key = key

    def _attached(self, lister: VolumeLister, snap: Snapshot, slot: int) -> dict[str, str]:
        """Unique volumes attached on one node: its pods' and its VolumeAttachments'."""
        csi_on = self._csi_nodes[slot] is not None
        out: dict[str, str] = {}
        for p in self.usage.attachable.get(slot, {}).values():
            out.update(self._volumes(lister, p, csi_on, new=False))
        return out

    def _attachments(self, lister: VolumeLister, snap: Snapshot, slot: int) -> Iterable[tuple[str, str]]:
        for va in lister.volume_attachments(snap.node(slot).name):
            pv = lister.pv(va.pv_name) if va.pv_name else None
            if va.attacher and pv is not None and pv.csi is not None:
                yield f"{va.attacher}/{pv.csi.handle}", va.attacher

    # ------------------------------------------------------------------ filter
    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        if not pod_volumes(pod):
            return None
        lister = volumes_of(self.handle)
        try:
            with_csi = self._volumes(lister, pod, csi_on=True, new=True)
            without_csi = self._volumes(lister, pod, csi_on=False, new=True)
        except _Failure as f:
            return Verdicts.all(len(slots), f.status.code, *f.status.reasons)
        if not with_csi and not without_csi:
            return None
        self._refresh(lister, snap)
        drivers = {d for d in with_csi.values()} | {d for d in without_csi.values()}
        limited = [d for d in drivers if d in self._limits]
        if not limited:
            return None  # no node limits any of the pod's drivers
        has_csi = np.fromiter(
            (self._csi_nodes[int(s)] is not None for s in slots), dtype=bool, count=len(slots)
        )
        n = len(slots)
        attached = {d: np.zeros(n, dtype=np.int64) for d in limited}
        new = {
            d: np.where(
                has_csi,
                sum(1 for x in with_csi.values() if x == d),
                sum(1 for x in without_csi.values() if x == d),
            ).astype(np.int64)
            for d in limited
        }
        # Nodes with pods using such volumes, or with VolumeAttachments, are counted one by one.
        examine = (set(self.usage.attachable) | self._va_slots) & set(slots.tolist())
        if examine:
            pos = {int(s): i for i, s in enumerate(slots)}
            for slot in examine:
                i = pos[slot]
                try:
                    on_node = self._attached(lister, snap, slot)
                except _Failure as f:
                    return Verdicts.all(n, Code.ERROR, *f.status.reasons)
                pending = dict(with_csi if has_csi[i] else without_csi)
                for name in on_node:
                    pending.pop(name, None)
                for name, driver in self._attachments(lister, snap, slot):
                    on_node.setdefault(name, driver)
                for d in limited:
                    attached[d][i] = sum(1 for x in on_node.values() if x == d)
                    new[d][i] = sum(1 for x in pending.values() if x == d)
        bad = np.zeros(n, dtype=bool)
        for d in limited:
            limit = self._limits[d][slots]
            bad |= (limit != _NO_LIMIT) & (new[d] > 0) & (attached[d] + new[d] > limit)
        if not bad.any():
            return None
        return Verdicts.failing(bad, Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)

    def events_to_register(self) -> Sequence[EventWithHint]:
        return (
            EventWithHint(ClusterEvent(Resource.CSI_NODE, Action.ADD | Action.UPDATE)),
            EventWithHint(ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE), _after_pod_deleted),
            EventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, Action.ADD), _after_claim_added),
            EventWithHint(ClusterEvent(Resource.VOLUME_ATTACHMENT, Action.DELETE)),
        )


def _after_pod_deleted(pod: Pod, old: Any, new: Any) -> Hint:
    deleted = old if old is not None else new
    if not isinstance(deleted, Pod) or not deleted.node_name:
        return Hint.SKIP
    return Hint.QUEUE if any(v.uses_claim or v.migratable for v in pod_volumes(deleted)) else Hint.SKIP


def _after_claim_added(pod: Pod, old: Any, new: Any) -> Hint:
    if new is None or new.namespace != pod.namespace:
        return Hint.SKIP
    return Hint.QUEUE if any(v.uses_claim and v.claim == new.name for v in pod_volumes(pod)) else Hint.SKIP
