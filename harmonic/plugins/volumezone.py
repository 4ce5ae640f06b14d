"""VolumeZone — PreFilter, Filter. No args.

PreFilter collects the zone and region labels (GA ``topology.kubernetes.io/*`` and beta
``failure-domain.beta.kubernetes.io/*``) of the PersistentVolumes bound to the pod's claims; a label
value may list several zones joined by ``__``. Skip when there are none. Claims not yet bound are
skipped when their class binds WaitForFirstConsumer; any other unbound claim, a missing claim, class or
volume is UnschedulableAndUnresolvable. Filter rejects (UnschedulableAndUnresolvable, "node(s) had no
available volume zone") nodes that carry some topology label but not a value the volume allows (a beta
volume label is also compared with the node's GA label). Nodes without any topology label pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from harmonic.api.node import REGION_LABEL, ZONE_LABEL
from harmonic.api.pod import Pod
from harmonic.api.storage import PVC, WAIT_FOR_FIRST_CONSUMER, pod_volumes
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Hint, Resource
from harmonic.framework.interface import FilterPlugin, PreFilterPlugin, PreFilterResult
from harmonic.framework.services import VOLUME_NEEDS, Need
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.framework.volumes import volumes_of

ERR_REASON_CONFLICT = "node(s) had no available volume zone"
BETA_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"
#: Upstream's order: the PV's labels are read in this order.
TOPOLOGY_LABELS = (BETA_ZONE_LABEL, BETA_REGION_LABEL, ZONE_LABEL, REGION_LABEL)
_GA = {BETA_ZONE_LABEL: ZONE_LABEL, BETA_REGION_LABEL: REGION_LABEL}
_STATE_KEY = "PreFilterVolumeZone"


@dataclass(frozen=True, slots=True)
class PVTopology:
    pv: str
    key: str
    values: frozenset[str]


def label_zones(value: str) -> frozenset[str] | None:
    """volumehelpers.LabelZonesToSet: ``a__b`` lists zones; None when an entry is empty."""
    zones = [z.strip() for z in value.split("__")]
    if any(not z for z in zones):
        return None
    return frozenset(zones)


class VolumeZone(PreFilterPlugin, FilterPlugin):
    NAME: ClassVar[str] = "VolumeZone"
    NEEDS: ClassVar[tuple[Need, ...]] = VOLUME_NEEDS

    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod_volumes(pod):
            return None, Status(Code.SKIP)
        topologies, st = self.topologies(pod)
        if st is not None:
            return None, st
        if not topologies:
            return None, Status(Code.SKIP)
        state.write(_STATE_KEY, topologies)
        return None, None

    def topologies(self, pod: Pod) -> tuple[list[PVTopology], Status | None]:
        """getPVbyPod: the topology labels of the volumes bound to the pod's PVC volumes."""
        lister = volumes_of(self.handle)
        out: list[PVTopology] = []
        for v in pod_volumes(pod):
            if v.kind != PVC:
                continue
            if not v.claim:
                return [], Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "PersistentVolumeClaim had no name")
            pvc = lister.pvc(pod.namespace, v.claim)
            if pvc is None:
                return [], _not_found("persistentvolumeclaim", v.claim)
            if not pvc.volume_name:
                if not pvc.storage_class:
                    return [], Status(
                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                        "PersistentVolumeClaim had no pv name and storageClass name",
                    )
                sc = lister.storage_class(pvc.storage_class)
                if sc is None:
                    return [], _not_found("storageclass.storage.k8s.io", pvc.storage_class)
                if not sc.binding_mode:
                    return [], Status(
                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                        f'VolumeBindingMode not set for StorageClass "{sc.name}"',
                    )
                if sc.binding_mode == WAIT_FOR_FIRST_CONSUMER:
                    continue
                return [], Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "PersistentVolume had no name")
            pv = lister.pv(pvc.volume_name)
            if pv is None:
                return [], _not_found("persistentvolume", pvc.volume_name)
            for key in TOPOLOGY_LABELS:
                value = pv.labels.get(key)
                if value is None:
                    continue
                zones = label_zones(value)
                if zones is not None:  # upstream logs and ignores an unparsable label
                    out.append(PVTopology(pv.name, key, zones))
        return out, None

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        if not pod_volumes(pod):
            return None
        topologies: list[PVTopology] | None = state.get(_STATE_KEY)
        if topologies is None:
            topologies, st = self.topologies(pod)
            if st is not None:
                return Verdicts.all(len(slots), st.code, *st.reasons)
        if not topologies:
            return None
        constrained = np.zeros(len(slots), dtype=bool)
        for key in TOPOLOGY_LABELS:
            constrained |= snap.label(key).codes[slots] >= 0
        bad = np.zeros(len(slots), dtype=bool)
        for t in topologies:
            col = snap.label(t.key)
            has = col.codes[slots] >= 0
            ok = col.in_mask(t.values)[slots]
            ga = _GA.get(t.key)
            if ga is not None:
                ok |= ~has & snap.label(ga).in_mask(t.values)[slots]
            bad |= ~ok
        bad &= constrained
        if not bad.any():
            return None
        return Verdicts.failing(bad, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)

    def events_to_register(self) -> Sequence[EventWithHint]:
        return (
            EventWithHint(ClusterEvent(Resource.STORAGE_CLASS, Action.ADD), _after_class_added),
            EventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL | Action.UPDATE_NODE_TAINT)
            ),
            EventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, Action.ADD | Action.UPDATE),
                _after_claim_change,
            ),
            EventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME, Action.ADD | Action.UPDATE), _after_pv_change
            ),
        )


def _not_found(resource: str, name: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f'{resource} "{name}" not found')


def _after_claim_change(pod: Pod, old: Any, new: Any) -> Hint:
    if new is None or new.namespace != pod.namespace:
        return Hint.SKIP
    return Hint.QUEUE if any(v.kind == PVC and v.claim == new.name for v in pod_volumes(pod)) else Hint.SKIP


def _after_class_added(pod: Pod, old: Any, new: Any) -> Hint:
    """Only a WaitForFirstConsumer class lets an unbound claim through PreFilter."""
    return Hint.QUEUE if new is not None and new.binding_mode == WAIT_FOR_FIRST_CONSUMER else Hint.SKIP


def _pv_topology(pv: Any) -> dict[str, str]:
    return {k: pv.labels[k] for k in TOPOLOGY_LABELS if k in pv.labels}


def _after_pv_change(pod: Pod, old: Any, new: Any) -> Hint:
    """A new PV, or a PV whose zone/region labels changed."""
    if old is None or new is None:
        return Hint.QUEUE
    return Hint.QUEUE if _pv_topology(old) != _pv_topology(new) else Hint.SKIP
