"""VolumeRestrictions — PreFilter (+AddPod/RemovePod), Filter. No args.

Filter rejects nodes where a pod already uses an in-line volume the pod's own volumes conflict with
(Unschedulable, "node(s) had no available disk"): the same GCE PD or ISCSI IQN unless both mount it
read-only, the same AWS EBS volume always, the same RBD pool/image sharing a Ceph monitor unless both
are read-only. It also rejects every node while another pod uses one of the pod's ReadWriteOncePod
claims (Unschedulable). PreFilter returns Skip for pods with neither kind of volume, and
UnschedulableAndUnresolvable when a claim the pod names does not exist.

Disk conflicts are answered from ``VolumeUsage``'s index of in-line disks by node, so only the nodes
using the same disk are examined.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from harmonic.api.pod import Pod
from harmonic.api.storage import DISK_KINDS, PVC, READ_WRITE_ONCE_POD, pod_volumes
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Hint, Resource
from harmonic.framework.interface import FilterPlugin, PreFilterPlugin, PreFilterResult
from harmonic.framework.services import VOLUME_NEEDS, Need
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.framework.volumes import VolumeUsage, volumes_of

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
#: kube-scheduler 1.36's wording (what the real binary reports; earlier releases said "node has pod using
#: PersistentVolumeClaim with the same name and ReadWriteOncePod access mode").
ERR_REASON_RWOP_CONFLICT = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
_STATE_KEY = "PreFilterVolumeRestrictions"


class _State:
    """ReadWriteOncePod claims of the pod and how many scheduled pods use them."""

    __slots__ = ("conflicts", "rwop_claims")

    def __init__(self, rwop_claims: frozenset[str], conflicts: int) -> None:
        self.rwop_claims = rwop_claims
        self.conflicts = conflicts

    def clone(self) -> _State:
        return _State(self.rwop_claims, self.conflicts)

    def update(self, pod: Pod, sign: int) -> None:
        # Upstream counts claim names regardless of the other pod's namespace.
        self.conflicts += sign * sum(
            1 for v in pod_volumes(pod) if v.kind == PVC and v.claim in self.rwop_claims
        )


class VolumeRestrictions(PreFilterPlugin, FilterPlugin):
    NAME: ClassVar[str] = "VolumeRestrictions"
    NEEDS: ClassVar[tuple[Need, ...]] = VOLUME_NEEDS

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.usage = VolumeUsage.of(handle.snapshot)

    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        vols = pod_volumes(pod)
        if not vols:
            return None, Status(Code.SKIP)
        needs_check = any(v.kind in DISK_KINDS for v in vols)
        lister = volumes_of(self.handle)
        rwop: set[str] = set()
        for v in vols:
            if v.kind != PVC:
                continue
            pvc = lister.pvc(pod.namespace, v.claim)
            if pvc is None:
                return None, Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f'persistentvolumeclaim "{v.claim}" not found'
                )
            if READ_WRITE_ONCE_POD in pvc.access_modes:
                rwop.add(pvc.name)
        conflicts = sum(1 for c in rwop if self.usage.claim_used(pod.namespace, c))
        if not needs_check and conflicts == 0:
            return None, Status(Code.SKIP)
        state.write(_STATE_KEY, _State(frozenset(rwop), conflicts))
        return None, None

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, slot: int) -> Status | None:
        s = state.get(_STATE_KEY)
        if s is None:
            return Status(Code.ERROR, f'cannot read "{_STATE_KEY}" from cycleState')
        s.update(added, 1)
        return None

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, slot: int) -> Status | None:
        s = state.get(_STATE_KEY)
        if s is None:
            return Status(Code.ERROR, f'cannot read "{_STATE_KEY}" from cycleState')
        s.update(removed, -1)
        return None

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        bad = self._disk_conflicts(pod, snap, slots)
        s: _State | None = state.get(_STATE_KEY)
        if s is None:
            # Filter without PreFilter: disk conflicts are still found, the rest is an error.
            failed = np.zeros(len(slots), dtype=bool) if bad is None else bad
            codes = np.where(failed, np.int8(Code.UNSCHEDULABLE), np.int8(Code.ERROR)).astype(np.int8)
            reasons = [(f'cannot read "{_STATE_KEY}" from cycleState',), (ERR_REASON_DISK_CONFLICT,)]
            return Verdicts(codes, failed.astype(np.int32), reasons)
        if s.conflicts <= 0:
            if bad is None:
                return None
            return Verdicts.failing(bad, Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
        if bad is None:
            return Verdicts.all(len(slots), Code.UNSCHEDULABLE, ERR_REASON_RWOP_CONFLICT)
        reasons = [(ERR_REASON_RWOP_CONFLICT,), (ERR_REASON_DISK_CONFLICT,)]
        return Verdicts(np.full(len(slots), np.int8(Code.UNSCHEDULABLE)), bad.astype(np.int32), reasons)

    def _disk_conflicts(self, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray | None:
        """Candidates where a pod already uses a disk one of this pod's in-line volumes conflicts with."""
        hit: set[int] = set()
        for v in pod_volumes(pod):
            if v.kind not in DISK_KINDS:
                continue
            for slot, used in self.usage.disks.get((v.kind, v.ident), {}).items():
                if slot not in hit and any(v.conflicts(u) for u in used):
                    hit.add(slot)
        if not hit:
            return None
        bad = np.isin(slots, np.fromiter(hit, dtype=np.int64, count=len(hit)))
        return bad if bad.any() else None

    def events_to_register(self) -> Sequence[EventWithHint]:
        return (
            EventWithHint(ClusterEvent(Resource.POD, Action.DELETE), _after_pod_deleted),
            EventWithHint(ClusterEvent(Resource.NODE, Action.ADD)),
            EventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, Action.ADD), _after_claim_added),
        )


def _after_claim_added(pod: Pod, old: Any, new: Any) -> Hint:
    if new is None or new.namespace != pod.namespace:
        return Hint.SKIP
    return Hint.QUEUE if any(v.kind == PVC and v.claim == new.name for v in pod_volumes(pod)) else Hint.SKIP


def _after_pod_deleted(pod: Pod, old: Any, new: Any) -> Hint:
    deleted = old if old is not None else new
    if not isinstance(deleted, Pod) or deleted.namespace != pod.namespace:
        return Hint.SKIP
    theirs = pod_volumes(deleted)
    mine = pod_volumes(pod)
    if any(m.kind in DISK_KINDS and any(m.conflicts(t) for t in theirs) for m in mine):
        return Hint.QUEUE
    # A deleted pod using one of the same claims may have held it ReadWriteOncePod.
    claims = {t.claim for t in theirs if t.kind == PVC}
    return Hint.QUEUE if any(m.kind == PVC and m.claim in claims for m in mine) else Hint.SKIP
