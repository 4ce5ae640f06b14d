"""VolumeBinding — PreFilter, Filter, PreScore, Score, Reserve/Unreserve, PreBind.

Args (``VolumeBindingArgs``): ``bindTimeoutSeconds`` (default 600, not negative) and ``shape``
(utilization 0..100 -> score 0..10, utilizations increasing). Upstream scores only behind its
StorageCapacityScoring feature gate (off by default, so the default profile never scores); Harmonic has
no feature gates: a non-empty ``shape`` turns scoring on.

- PreFilter: Skip for pods without PVC or generic ephemeral volumes. A missing, lost or deleting claim,
  or an ephemeral claim the pod does not own, is UnschedulableAndUnresolvable; so is any claim not yet
  bound whose class does not bind WaitForFirstConsumer ("pod has unbound immediate
  PersistentVolumeClaims"). Bound local volumes whose node affinity names hosts narrow the nodes.
- Filter (UnschedulableAndUnresolvable, reasons in upstream's order): a bound claim's PV must exist
  ("pvc(s) bound to non-existent pv(s)") and its node affinity match the node ("node(s) had volume node
  affinity conflict"); each WaitForFirstConsumer claim needs a static PV for the node (pre-bound to it,
  else the smallest available PV of its class with enough capacity, the access modes, volume mode,
  selector and node affinity) or dynamic provisioning: a provisioner, the class's allowedTopologies, and
  enough CSIStorageCapacity when the driver asks for capacity tracking ("node(s) didn't find available
  persistent volumes to bind", "node(s) did not have enough free storage"). A claim already given a
  node for provisioning fits that node only.
- Score (``shape`` set): static bindings' requested / PV capacity per class, through the shape, averaged.
- Reserve assumes the chosen bindings (PV pre-bound to its claim; claim annotated with the selected
  node) in the plugin's assume caches; Unreserve reverts them.
- PreBind writes them through the cluster client (``VolumeBindingClient``) and waits until the claims
  are bound (the PV controller's job), up to ``bindTimeoutSeconds``.

Filter is vectorised over the candidate nodes: each PV's node affinity is one mask over all nodes, and
the per-node choice of static PVs is made for all nodes at once, claim by claim.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from pydantic import ValidationError, field_validator

from harmonic.api.pod import Pod
from harmonic.api.selectors import LabelSelector, NodeSelector
from harmonic.api.storage import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    CLAIM_LOST,
    EPHEMERAL,
    NOT_SUPPORTED_PROVISIONER,
    VOLUME_AVAILABLE,
    WAIT_FOR_FIRST_CONSUMER,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    access_modes_fit,
    ephemeral_owner_error,
    parse_pv,
    parse_pvc,
    pod_volumes,
)
from harmonic.framework.args import PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Hint, Resource
from harmonic.framework.interface import (
    FilterPlugin,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from harmonic.framework.nodemasks import requirement_mask
from harmonic.framework.services import VOLUME_NEEDS, Need
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.framework.volumes import VolumeBindingClient, VolumeLister, volumes_of
from harmonic.plugins.noderesourcesfit import (
    RequestedToCapacityRatioParam,
    UtilizationShapePoint,
    broken_linear,
)

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "pvc(s) bound to non-existent pv(s)"
ERR_REASON_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
#: Bit order = the order upstream appends reasons.
_REASONS = (
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
)
_NODE_CONFLICT, _BIND_CONFLICT, _NOT_ENOUGH_SPACE, _PV_NOT_EXIST = 1, 2, 4, 8
HOSTNAME_LABEL = "kubernetes.io/hostname"
MAX_UTILIZATION = 100
_STATE_KEY = "VolumeBinding"
_POLL_SECONDS = 1.0


class VolumeBindingArgs(PluginArgs):
    bind_timeout_seconds: int = 600
    shape: tuple[UtilizationShapePoint, ...] = ()

    @field_validator("bind_timeout_seconds")
    @classmethod
    def _timeout(cls, v: int) -> int:
        if v < 0:
            raise ValueError("invalid BindTimeoutSeconds, should not be a negative value")
        return v

    @field_validator("shape")
    @classmethod
    def _valid_shape(cls, shape: tuple[UtilizationShapePoint, ...]) -> tuple[UtilizationShapePoint, ...]:
        """validateFunctionShape, as for RequestedToCapacityRatio (an empty shape: no scoring)."""
        if shape:
            try:
                RequestedToCapacityRatioParam(shape=shape)
            except ValidationError as e:
                raise ValueError(str(e.errors()[0]["msg"]).removeprefix("Value error, ")) from None
        return shape


# =========================================================================== assume caches
class _Assumed:
    """Speculative versions of objects (AssumeCache): an assumed object shadows the stored one until
    the stored one changes (a newer version arrived) or the assumption is restored."""

    def __init__(self) -> None:
        self._objs: dict[str, tuple[Any, str]] = {}

    def assume(self, key: str, view: Any, base_version: str) -> None:
        self._objs[key] = (view, base_version)

    def restore(self, key: str) -> None:
        self._objs.pop(key, None)

    def resolve(self, key: str, stored: Any) -> Any:
        hit = self._objs.get(key)
        if hit is None:
            return stored
        if stored is None or stored.resource_version != hit[1]:
            del self._objs[key]
            return stored
        return hit[0]


@dataclass(slots=True)
class PodVolumes:
    """What one node needs for the pod: static PV bindings and claims to provision there."""

    static_bindings: list[tuple[PersistentVolume, PersistentVolumeClaim]] = field(default_factory=list)
    dynamic_provisions: list[PersistentVolumeClaim] = field(default_factory=list)


@dataclass(slots=True)
class _FilterRecord:
    """One Filter call's per-node results (positions align with ``slots``)."""

    slots: np.ndarray
    #: Per claim to match: (claim, PV candidates, index of the chosen PV per node or -1).
    static: list[tuple[PersistentVolumeClaim, list[PersistentVolume], np.ndarray]]
    #: Per claim that may be provisioned: (claim, nodes where it is).
    provisions: list[tuple[PersistentVolumeClaim, np.ndarray]]
    passed: np.ndarray


@dataclass(slots=True)
class _State:
    bound: list[PersistentVolumeClaim] = field(default_factory=list)
    delayed: list[PersistentVolumeClaim] = field(default_factory=list)
    pvs_by_class: dict[str, list[PersistentVolume]] = field(default_factory=dict)
    records: list[_FilterRecord] = field(default_factory=list)
    has_static_bindings: bool = False
    all_bound: bool = False
    #: Node name -> the PodVolumes Reserve assumed (what PreBind binds and Unreserve reverts).
    reserved: dict[str, PodVolumes] = field(default_factory=dict)

    def clone(self) -> _State:
        return self

    def pod_volumes(self, snap: Snapshot, node_name: str) -> PodVolumes | None:
        """podVolumesByNode[node]: the volumes Filter found for a node that passed it."""
        slot = snap.slot_of.get(node_name)
        if slot is None:
            return None
        for rec in reversed(self.records):
            hit = np.flatnonzero(rec.slots == slot)
            if len(hit) == 0 or not rec.passed[hit[0]]:
                continue
            i = int(hit[0])
            pv = PodVolumes()
            for claim, pvs, choice in rec.static:
                if choice[i] >= 0:
                    pv.static_bindings.append((pvs[int(choice[i])], claim))
            pv.dynamic_provisions = [c for c, where in rec.provisions if where[i]]
            return pv
        return None


# =========================================================================== masks
def _affinity_mask(snap: Snapshot, selector: NodeSelector | None) -> np.ndarray:
    """CheckNodeAffinity over all slots: judged on labels only (matchFields see an empty name)."""
    if selector is None:
        return np.ones(snap.capacity, dtype=bool)
    out = np.zeros(snap.capacity, dtype=bool)
    for term in selector.terms:
        if not all(r.matches({"metadata.name": ""}) for r in term.fields):
            continue
        m = np.ones(snap.capacity, dtype=bool)
        for r in term.expressions:
            m &= requirement_mask(snap, r)
        out |= m
    return out


def _label_selector_mask(snap: Snapshot, selector: LabelSelector) -> np.ndarray:
    if selector.nothing:
        return np.zeros(snap.capacity, dtype=bool)
    m = np.ones(snap.capacity, dtype=bool)
    for r in selector.requirements:
        m &= requirement_mask(snap, r)
    return m


def _topology_mask(snap: Snapshot, sc: StorageClass) -> np.ndarray:
    """MatchTopologySelectorTerms over all slots: no terms allow every node; an empty term none."""
    if not sc.allowed_topologies:
        return np.ones(snap.capacity, dtype=bool)
    out = np.zeros(snap.capacity, dtype=bool)
    for term in sc.allowed_topologies:
        if not term:
            continue
        m = np.ones(snap.capacity, dtype=bool)
        for r in term:
            m &= snap.label(r.key).in_mask(r.values)
        out |= m
    return out


def _value(q: Fraction | None) -> int:
    if q is None:
        return 0
    return -((-q.numerator) // q.denominator)


def _local_node_names(pv: PersistentVolume) -> set[str] | None:
    """GetLocalPersistentVolumeNodeNames: hostnames the PV's affinity names with In (None: none)."""
    if pv.node_affinity is None:
        return None
    result: set[str] = set()
    for term in pv.node_affinity.terms:
        nodes: set[str] | None = None
        for r in term.expressions:
            if r.key == HOSTNAME_LABEL and r.op == "In":
                nodes = set(r.values) if nodes is None else nodes & r.values
        result |= nodes or set()
    return result


def _newer(a: str, b: str) -> bool:
    """CompareResourceVersion(a, b) > 0, for the in-memory integer versions ("" is oldest)."""
    try:
        return int(a or 0) > int(b or 0)
    except ValueError:
        return False


# =========================================================================== plugin
class VolumeBinding(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin, PreBindPlugin):
    NAME: ClassVar[str] = "VolumeBinding"
    NEEDS: ClassVar[tuple[Need, ...]] = VOLUME_NEEDS
    Args: ClassVar[type[PluginArgs]] = VolumeBindingArgs

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.pv_cache = _Assumed()
        self.pvc_cache = _Assumed()
        self.bind_timeout = float(args.bind_timeout_seconds)
        self.shape = [(p.utilization, p.score * 10) for p in args.shape]

    # ------------------------------------------------------------------ cached reads
    def _lister(self) -> VolumeLister:
        return volumes_of(self.handle)

    def _pv(self, lister: VolumeLister, name: str) -> PersistentVolume | None:
        pv: PersistentVolume | None = self.pv_cache.resolve(name, lister.pv(name))
        return pv

    def _pvc(self, lister: VolumeLister, namespace: str, name: str) -> PersistentVolumeClaim | None:
        pvc: PersistentVolumeClaim | None = self.pvc_cache.resolve(
            f"{namespace}/{name}", lister.pvc(namespace, name)
        )
        return pvc

    def _pvs_of_class(self, lister: VolumeLister, storage_class: str) -> list[PersistentVolume]:
        out = []
        for pv in lister.pvs_of_class(storage_class):
            pv = self.pv_cache.resolve(pv.name, pv)
            if pv is not None:
                out.append(pv)
        return out

    # ------------------------------------------------------------------ PreFilter
    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        vols = [v for v in pod_volumes(pod) if v.uses_claim]
        if not vols:
            state.write(_STATE_KEY, _State())
            return None, Status(Code.SKIP)
        lister = self._lister()
        for v in vols:
            pvc = lister.pvc(pod.namespace, v.claim)
            if pvc is None:
                if v.kind == EPHEMERAL:
                    msg = f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{v.claim}"'
                else:
                    msg = f'persistentvolumeclaim "{v.claim}" not found'
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)
            if pvc.phase == CLAIM_LOST:
                msg = f'persistentvolumeclaim "{pvc.name}" bound to non-existent persistentvolume "{pvc.volume_name}"'
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)
            if pvc.deleting:
                return None, Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    f'persistentvolumeclaim "{pvc.name}" is being deleted',
                )
            if v.kind == EPHEMERAL:
                err = ephemeral_owner_error(pod, pvc)
                if err is not None:
                    return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, err)
        s = _State()
        immediate = False
        for v in vols:
            pvc = self._pvc(lister, pod.namespace, v.claim)
            if pvc is None:
                return None, Status(Code.ERROR, f'error getting PVC "{pod.namespace}/{v.claim}": not found')
            if pvc.fully_bound:
                s.bound.append(pvc)
                continue
            delay = False
            if pvc.storage_class:
                sc = lister.storage_class(pvc.storage_class)
                if sc is not None:
                    if not sc.binding_mode:
                        return None, Status(
                            Code.ERROR, f'VolumeBindingMode not set for StorageClass "{pvc.storage_class}"'
                        )
                    delay = sc.binding_mode == WAIT_FOR_FIRST_CONSUMER
            if delay and not pvc.volume_name:
                s.delayed.append(pvc)
            else:
                immediate = True
        if immediate:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_IMMEDIATE)
        for pvc in s.delayed:
            s.pvs_by_class[pvc.storage_class] = self._pvs_of_class(lister, pvc.storage_class)
        state.write(_STATE_KEY, s)
        eligible = self._eligible_nodes(lister, s.bound)
        return (PreFilterResult(frozenset(eligible)) if eligible is not None else None), None

    def _eligible_nodes(self, lister: VolumeLister, bound: list[PersistentVolumeClaim]) -> set[str] | None:
        eligible: set[str] | None = None
        for pvc in bound:
            pv = self._pv(lister, pvc.volume_name)
            if pv is None:
                return None
            names = _local_node_names(pv)
            if names:
                eligible = set(names) if eligible is None else eligible & names
        return eligible

    # ------------------------------------------------------------------ Filter
    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        s: _State | None = state.get(_STATE_KEY)
        if s is None:
            return Verdicts.all(len(slots), Code.ERROR, f'reading "{_STATE_KEY}" from cycleState: not found')
        lister = self._lister()
        n = len(slots)
        bits = np.zeros(n, dtype=np.int64)
        decided = np.zeros(n, dtype=bool)
        for pvc in s.bound:
            pv = self._pv(lister, pvc.volume_name)
            if pv is None:
                bits[~decided] |= _PV_NOT_EXIST
                break
            mismatch = ~decided & ~_affinity_mask(snap, pv.node_affinity)[slots]
            bits[mismatch] |= _NODE_CONFLICT
            decided |= mismatch
        record = _FilterRecord(slots, [], [], np.ones(n, dtype=bool))
        if s.delayed:
            st = self._find_unbound(lister, s, snap, slots, bits, record)
            if st is not None:
                return st
        record.passed = bits == 0
        s.records.append(record)
        s.has_static_bindings = s.has_static_bindings or any(
            bool((choice[record.passed] >= 0).any()) for _, _, choice in record.static
        )
        if not bits.any():
            return None
        return Verdicts.from_bits(bits, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, _REASONS)

    def _find_unbound(
        self,
        lister: VolumeLister,
        s: _State,
        snap: Snapshot,
        slots: np.ndarray,
        bits: np.ndarray,
        record: _FilterRecord,
    ) -> Verdicts | None:
        """Static matching and provisioning of the WaitForFirstConsumer claims, for all nodes at once
        (FindPodVolumes: a claim with a selected node pins the pod there, then findMatchingVolumes, then
        checkVolumeProvisions for what no volume matched)."""
        names = snap.names()[slots]
        selected = [c for c in s.delayed if ANN_SELECTED_NODE in c.annotations]
        stopped = np.zeros(len(slots), dtype=bool)
        for c in selected:
            stopped |= names != c.annotations[ANN_SELECTED_NODE]
        bits[stopped] |= _BIND_CONFLICT
        active = ~stopped
        self._match_static(s, snap, slots, active, record)
        return self._check_provisions(lister, snap, slots, selected, active, bits, record)

    @staticmethod
    def _match_static(
        s: _State, snap: Snapshot, slots: np.ndarray, active: np.ndarray, record: _FilterRecord
    ) -> None:
        """findMatchingVolumes: per node, the smallest available volume for each claim (a volume pre-bound
        to the claim first), no volume given to two claims; ``record.static`` gets each claim's choice."""
        n = len(slots)
        # Claims to match sorted by requested size (upstream's sort is not stable; this one is).
        to_match = sorted(
            (c for c in s.delayed if ANN_SELECTED_NODE not in c.annotations),
            key=lambda c: c.request if c.request is not None else Fraction(0),
        )
        chosen: dict[str, np.ndarray] = {}
        affinity: dict[str, np.ndarray] = {}

        def fits(pv: PersistentVolume) -> np.ndarray:
            m = affinity.get(pv.name)
            if m is None:
                m = affinity[pv.name] = _affinity_mask(snap, pv.node_affinity)[slots]
            return m

        for c in to_match:
            pvs = s.pvs_by_class.get(c.storage_class, [])
            choice = np.full(n, -1, dtype=np.int64)
            requested = c.request if c.request is not None else Fraction(0)
            usable = [
                (i, pv)
                for i, pv in enumerate(pvs)
                if (pv.claim_ref is None or pv.bound_to(c))
                and pv.capacity >= requested
                and pv.volume_mode == c.volume_mode
                and not pv.deleting
            ]
            prebound = next(((i, pv) for i, pv in usable if pv.bound_to(c)), None)
            if prebound is not None:
                choice[active & fits(prebound[1])] = prebound[0]
            else:
                ranked = sorted(
                    (
                        (i, pv)
                        for i, pv in usable
                        if pv.phase == VOLUME_AVAILABLE
                        and (c.selector is None or c.selector.matches(pv.labels))
                        and pv.storage_class == c.storage_class
                        and pv.attributes_class == c.attributes_class
                        and access_modes_fit(c, pv)
                    ),
                    key=lambda ip: ip[1].capacity,
                )
                for i, pv in ranked:
                    free = active & (choice < 0) & fits(pv)
                    taken = chosen.get(pv.name)
                    if taken is not None:
                        free &= ~taken
                    choice[free] = i
            for i in np.unique(choice[choice >= 0]).tolist():
                hit = choice == i
                name = pvs[i].name
                chosen[name] = chosen[name] | hit if name in chosen else hit
            record.static.append((c, pvs, choice))

    def _check_provisions(
        self,
        lister: VolumeLister,
        snap: Snapshot,
        slots: np.ndarray,
        selected: list[PersistentVolumeClaim],
        active: np.ndarray,
        bits: np.ndarray,
        record: _FilterRecord,
    ) -> Verdicts | None:
        """checkVolumeProvisions: claims with a selected node first, then the unmatched ones, first failure
        wins per node; ``record.provisions`` gets where each claim can be provisioned."""
        n = len(slots)
        failed = np.zeros(n, dtype=bool)
        candidates = [(c, active) for c in selected] + [
            (c, active & (choice < 0)) for c, _, choice in record.static
        ]
        for c, where in candidates:
            needs = where & ~failed
            if not needs.any():
                continue
            if not c.storage_class:
                return Verdicts.all(n, Code.ERROR, f'no class for claim "{c.namespace}/{c.name}"')
            sc = lister.storage_class(c.storage_class)
            if sc is None:
                return Verdicts.all(n, Code.ERROR, f'failed to find storage class "{c.storage_class}"')
            if not sc.provisioner or sc.provisioner == NOT_SUPPORTED_PROVISIONER:
                bits[needs] |= _BIND_CONFLICT
                failed |= needs
                continue
            off_topology = needs & ~_topology_mask(snap, sc)[slots]
            bits[off_topology] |= _BIND_CONFLICT
            failed |= off_topology
            needs &= ~off_topology
            short = needs & ~self._enough_capacity(lister, snap, c, sc)[slots]
            bits[short] |= _NOT_ENOUGH_SPACE
            failed |= short
            record.provisions.append((c, needs & ~short))
        return None

    def _enough_capacity(
        self, lister: VolumeLister, snap: Snapshot, claim: PersistentVolumeClaim, sc: StorageClass
    ) -> np.ndarray:
        """hasEnoughCapacity over all slots: only for CSI drivers that publish storage capacity."""
        driver = lister.csi_driver(sc.provisioner)
        if claim.request is None or driver is None or not driver.storage_capacity:
            return np.ones(snap.capacity, dtype=bool)
        size = _value(claim.request)
        out = np.zeros(snap.capacity, dtype=bool)
        for cap in lister.storage_capacities():
            limit = cap.volume_limit
            if (
                cap.storage_class != sc.name
                or limit is None
                or _value(limit) < size
                or cap.node_topology is None
            ):
                continue
            out |= _label_selector_mask(snap, cap.node_topology)
        return out

    # ------------------------------------------------------------------ scoring
    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        if not self.shape:
            return Status(Code.SKIP)
        s: _State | None = state.get(_STATE_KEY)
        if s is None:
            return Status(Code.ERROR, f'reading "{_STATE_KEY}" from cycleState: not found')
        return None if s.has_static_bindings else Status(Code.SKIP)

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        out = np.zeros(len(slots), dtype=np.int64)
        s: _State | None = state.get(_STATE_KEY)
        if not self.shape or s is None:
            return out
        for i, name in enumerate(snap.node_names(slots)):
            volumes = s.pod_volumes(snap, name)
            if volumes is None or not volumes.static_bindings:
                continue
            by_class: dict[str, list[int]] = {}
            for pv, pvc in volumes.static_bindings:
                acc = by_class.setdefault(pv.storage_class, [0, 0])
                acc[0] += pvc.storage_bytes
                acc[1] += pv.capacity_bytes
            total = 0
            for requested, capacity in by_class.values():
                util = (
                    MAX_UTILIZATION
                    if capacity == 0 or requested > capacity
                    else requested * MAX_UTILIZATION // capacity
                )
                total += int(broken_linear(self.shape, np.array([util], dtype=np.int64))[0])
            # math.Round(total / classes): half away from zero on a non-negative quotient.
            q = Fraction(total, len(by_class))
            out[i] = int(q + Fraction(1, 2)) if q.denominator != 1 else int(q)
        return out

    # ------------------------------------------------------------------ reserve / bind
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s: _State | None = state.get(_STATE_KEY)
        if s is None:
            return Status(Code.ERROR, f'reading "{_STATE_KEY}" from cycleState: not found')
        volumes = s.pod_volumes(self.handle.snapshot, node_name)
        if volumes is None:
            s.all_bound = True
            return None
        lister = self._lister()
        if all(
            pvc is not None and pvc.fully_bound
            for pvc in (self._pvc(lister, pod.namespace, v.claim) for v in pod_volumes(pod) if v.uses_claim)
        ):
            s.all_bound = True
            s.reserved[node_name] = PodVolumes()
            return None
        assumed = PodVolumes()
        for pv, pvc in volumes.static_bindings:
            new_pv = _bind_volume_to_claim(pv, pvc)
            if new_pv is not None:
                self.pv_cache.assume(pv.name, new_pv, pv.resource_version)
                pv = new_pv
            assumed.static_bindings.append((pv, pvc))
        for pvc in volumes.dynamic_provisions:
            meta = dict(pvc.raw.get("metadata") or {})
            meta["annotations"] = {**(meta.get("annotations") or {}), ANN_SELECTED_NODE: node_name}
            clone = parse_pvc({**pvc.raw, "metadata": meta})
            self.pvc_cache.assume(pvc.key, clone, pvc.resource_version)
            assumed.dynamic_provisions.append(clone)
        s.all_bound = False
        s.reserved[node_name] = assumed
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        s: _State | None = state.get(_STATE_KEY)
        if s is None:
            return
        volumes = s.reserved.pop(node_name, None)
        if volumes is not None:
            self._revert(volumes.static_bindings, volumes.dynamic_provisions)

    def _revert(
        self,
        bindings: Sequence[tuple[PersistentVolume, PersistentVolumeClaim]],
        claims: Sequence[PersistentVolumeClaim],
    ) -> None:
        for pv, _ in bindings:
            self.pv_cache.restore(pv.name)
        for pvc in claims:
            self.pvc_cache.restore(pvc.key)

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s: _State | None = state.get(_STATE_KEY)
        if s is None:
            return Status(Code.ERROR, f'reading "{_STATE_KEY}" from cycleState: not found')
        if s.all_bound:
            return None
        volumes = s.reserved.get(node_name)
        if volumes is None:
            return Status(Code.ERROR, f'no pod volumes found for node "{node_name}"')
        err = self._bind(pod, node_name, volumes)
        return Status(Code.ERROR, err) if err is not None else None

    def _bind(self, pod: Pod, node_name: str, volumes: PodVolumes) -> str | None:
        """BindPodVolumes: the API updates, then wait for the PV controller to finish binding."""
        client = self.handle.client
        if not isinstance(client, VolumeBindingClient):
            self._revert(volumes.static_bindings, volumes.dynamic_provisions)
            return "the cluster client cannot bind volumes"
        bindings = list(volumes.static_bindings)
        claims = list(volumes.dynamic_provisions)
        for i, (pv, pvc) in enumerate(bindings):
            got = client.update_persistent_volume(pv.raw)
            if isinstance(got, Status):
                self._revert(bindings[i:], claims)
                return got.message
            bindings[i] = (parse_pv(got), pvc)
        for i, pvc in enumerate(claims):
            got = client.update_persistent_volume_claim(pvc.raw)
            if isinstance(got, Status):
                self._revert((), claims[i:])
                return got.message
            claims[i] = parse_pvc(got)
        deadline = time.monotonic() + self.bind_timeout
        while True:
            done, err = self._check_bindings(pod, node_name, bindings, claims)
            if err is not None:
                return f"binding volumes: {err}"
            if done:
                return None
            if time.monotonic() + _POLL_SECONDS > deadline:
                return "binding volumes: context deadline exceeded"
            time.sleep(_POLL_SECONDS)

    def _check_bindings(
        self,
        pod: Pod,
        node_name: str,
        bindings: Sequence[tuple[PersistentVolume, PersistentVolumeClaim]],
        claims: Sequence[PersistentVolumeClaim],
    ) -> tuple[bool, str | None]:
        """checkBindings against the stored objects (not the assume caches)."""
        snap = self.handle.snapshot
        if not snap.has_node(node_name):
            return False, f'failed to get node "{node_name}": node "{node_name}" not found'
        labels = snap.node(snap.slot(node_name)).labels
        lister = self._lister()
        for sent, pvc in bindings:
            pv = lister.pv(sent.name)
            if pv is None:
                return False, f'failed to check binding: persistentvolume "{sent.name}" not found'
            api_pvc = lister.pvc(pvc.namespace, pvc.name)
            if api_pvc is None:
                return False, f'failed to check binding: persistentvolumeclaim "{pvc.key}" not found'
            if _newer(sent.resource_version, pv.resource_version):
                return False, None
            if not pv.node_affinity_matches(labels):
                return (
                    False,
                    f'pv "{pv.name}" node affinity doesn\'t match node "{node_name}": no matching NodeSelectorTerms',
                )
            if pv.claim_ref is None or not pv.claim_ref.uid:
                return False, f'ClaimRef got reset for pv "{pv.name}"'
            if not api_pvc.fully_bound:
                return False, None
        for claim in claims:
            api_pvc = lister.pvc(claim.namespace, claim.name)
            if api_pvc is None:
                return (
                    False,
                    f'failed to check provisioning pvc: persistentvolumeclaim "{claim.key}" not found',
                )
            if _newer(claim.resource_version, api_pvc.resource_version):
                return False, None
            if api_pvc.annotations.get(ANN_SELECTED_NODE) != node_name:
                return False, f'provisioning failed for PVC "{api_pvc.name}"'
            if api_pvc.volume_name:
                pv = lister.pv(api_pvc.volume_name)
                if pv is None:
                    return False, None
                if not pv.node_affinity_matches(labels):
                    return (
                        False,
                        f'pv "{pv.name}" node affinity doesn\'t match node "{node_name}": no matching NodeSelectorTerms',
                    )
            if not api_pvc.fully_bound:
                return False, None
        return True, None

    def events_to_register(self) -> Sequence[EventWithHint]:
        return (
            EventWithHint(ClusterEvent(Resource.STORAGE_CLASS, Action.ADD | Action.UPDATE)),
            EventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, Action.ADD | Action.UPDATE)),
            EventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME, Action.ADD | Action.UPDATE), _after_pv_change
            ),
            EventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL | Action.UPDATE_NODE_TAINT)
            ),
            EventWithHint(ClusterEvent(Resource.CSI_NODE, Action.ADD | Action.UPDATE)),
            EventWithHint(ClusterEvent(Resource.CSI_DRIVER, Action.ADD | Action.UPDATE)),
            EventWithHint(ClusterEvent(Resource.CSI_STORAGE_CAPACITY, Action.ADD | Action.UPDATE)),
        )


def _bind_volume_to_claim(pv: PersistentVolume, claim: PersistentVolumeClaim) -> PersistentVolume | None:
    """GetBindVolumeToClaim: the PV with its claimRef set to the claim (and marked bound by the
    controller when it was not pre-bound); None when nothing changes."""
    raw: dict[str, Any] = dict(pv.raw)
    spec = dict(raw.get("spec") or {})
    meta = dict(raw.get("metadata") or {})
    dirty = False
    ref = pv.claim_ref
    if ref is None or ref.name != claim.name or ref.namespace != claim.namespace or ref.uid != claim.uid:
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": claim.namespace,
            "name": claim.name,
            "uid": claim.uid,
            "resourceVersion": claim.resource_version,
        }
        dirty = True
    annotations: Mapping[str, Any] = meta.get("annotations") or {}
    if not pv.bound_to(claim) and ANN_BOUND_BY_CONTROLLER not in annotations:
        meta["annotations"] = {**annotations, ANN_BOUND_BY_CONTROLLER: "yes"}
        dirty = True
    if not dirty:
        return None
    raw["spec"], raw["metadata"] = spec, meta
    return parse_pv(raw)


def _after_pv_change(pod: Pod, old: Any, new: Any) -> Hint:
    return Hint.QUEUE if any(v.uses_claim for v in pod_volumes(pod)) else Hint.SKIP
