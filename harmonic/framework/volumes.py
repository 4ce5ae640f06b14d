"""The ``"volumes"`` handle service: storage objects as the volume plugins read them.

``VolumeLister`` is what plugins ask (upstream's PVC, PV, StorageClass, CSINode, CSIDriver,
CSIStorageCapacity and VolumeAttachment listers, over compiled ``harmonic.api.storage`` views);
``generation`` changes whenever any object does, so plugins may key caches on it. A scheduler without
the service sees no storage objects (``volumes_of`` gives an empty lister): a pod referencing a PVC
then fails as upstream does when the claim is not found.

``InMemoryVolumes`` holds manifests for tests, the in-memory cluster and the simulator, and tells
subscribers about every change as a ``ClusterEvent`` (for requeueing pods).
``VolumeBindingClient`` is the cluster-client side VolumeBinding's PreBind writes through.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from harmonic.api.errors import ObjectError
from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.api.storage import (
    DISK_KINDS,
    PVC,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    PodVolume,
    StorageClass,
    VolumeAttachment,
    parse_csi_driver,
    parse_csi_node,
    parse_csi_storage_capacity,
    parse_pv,
    parse_pvc,
    parse_storage_class,
    parse_volume_attachment,
    pod_volumes,
)
from harmonic.framework.events import Action, ClusterEvent, Resource
from harmonic.framework.services import VOLUMES
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Status

if TYPE_CHECKING:
    from harmonic.framework.interface import Handle

VOLUMES_SERVICE = VOLUMES.name

Obj = Mapping[str, Any]


class VolumeLister(Protocol):
    @property
    def generation(self) -> int: ...

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None: ...

    def pv(self, name: str) -> PersistentVolume | None: ...

    def pvs_of_class(self, storage_class: str) -> list[PersistentVolume]:
        """PVs of one storage class ("" for class-less volumes)."""
        ...

    def storage_class(self, name: str) -> StorageClass | None: ...

    def csi_node(self, name: str) -> CSINode | None: ...

    def csi_driver(self, name: str) -> CSIDriver | None: ...

    def storage_capacities(self) -> Iterable[CSIStorageCapacity]: ...

    def volume_attachments(self, node_name: str) -> Iterable[VolumeAttachment]: ...


@runtime_checkable
class VolumeBindingClient(Protocol):
    """API writes of VolumeBinding's PreBind: a PV pre-bound to its claim (``spec.claimRef``), and a
    claim annotated with the node chosen for provisioning. Each returns the stored object's new
    manifest, or a Status when the API refused."""

    def update_persistent_volume(self, raw: Obj) -> Obj | Status: ...

    def update_persistent_volume_claim(self, raw: Obj) -> Obj | Status: ...


# Manifest kind -> (event resource, parser, namespaced).
_KINDS: dict[str, tuple[Resource, Callable[[Obj], Any], bool]] = {
    "PersistentVolumeClaim": (Resource.PERSISTENT_VOLUME_CLAIM, parse_pvc, True),
    "PersistentVolume": (Resource.PERSISTENT_VOLUME, parse_pv, False),
    "StorageClass": (Resource.STORAGE_CLASS, parse_storage_class, False),
    "CSINode": (Resource.CSI_NODE, parse_csi_node, False),
    "CSIDriver": (Resource.CSI_DRIVER, parse_csi_driver, False),
    "CSIStorageCapacity": (Resource.CSI_STORAGE_CAPACITY, parse_csi_storage_capacity, True),
    "VolumeAttachment": (Resource.VOLUME_ATTACHMENT, parse_volume_attachment, False),
}
StorageListener = Callable[[ClusterEvent, Any, Any], None]


def _key(raw: Obj, namespaced: bool) -> str:
    meta = raw.get("metadata") or {}
    name = str(meta.get("name") or "")
    return f"{meta.get('namespace') or 'default'}/{name}" if namespaced else name


class InMemoryVolumes:
    """Storage objects held in memory; implements ``VolumeLister``. Objects are replaced, never mutated."""

    def __init__(self, objects: Iterable[Obj] = ()) -> None:
        self._objs: dict[str, dict[str, Any]] = {kind: {} for kind in _KINDS}
        self._by_class: dict[str, dict[str, PersistentVolume]] = {}
        self._va_by_node: dict[str, dict[str, VolumeAttachment]] = {}
        self._listeners: list[StorageListener] = []
        self._generation = 0
        for raw in objects:
            self.apply(raw)

    # ------------------------------------------------------------------ writes
    def subscribe(self, listener: StorageListener) -> None:
        self._listeners.append(listener)

    def apply(self, raw: Obj) -> Any:
        """Create or replace an object (its ``kind`` says which), stamping a new
        ``metadata.resourceVersion`` as the API server does; returns the compiled view."""
        meta = raw.get("metadata") if isinstance(raw, Mapping) else None
        if isinstance(meta, Mapping):
            raw = {**raw, "metadata": {**meta, "resourceVersion": str(self._generation + 1)}}
        return self.put(raw)

    def put(self, raw: Obj) -> Any:
        """Store an object as the API server sent it (its own resourceVersion kept: a live adapter's
        informers feed these); returns the compiled view. Raises ``ObjectError`` for a malformed one."""
        kind = raw.get("kind") if isinstance(raw, Mapping) else None
        if kind not in _KINDS:
            raise ObjectError(str(kind or "object"), "kind", f"must be one of {', '.join(_KINDS)}")
        resource, parse, namespaced = _KINDS[kind]
        view = parse(raw)
        key = _key(raw, namespaced)
        old = self._objs[kind].get(key)
        self._objs[kind][key] = view
        self._index(old, remove=True)
        self._index(view, remove=False)
        self._changed(ClusterEvent(resource, Action.ADD if old is None else Action.UPDATE), old, view)
        return view

    def _index(self, view: Any, remove: bool) -> None:
        if isinstance(view, PersistentVolume):
            by_class = self._by_class.setdefault(view.storage_class, {})
            if remove:
                by_class.pop(view.name, None)
            else:
                by_class[view.name] = view
        elif isinstance(view, VolumeAttachment):
            by_node = self._va_by_node.setdefault(view.node_name, {})
            if remove:
                by_node.pop(view.name, None)
            else:
                by_node[view.name] = view

    def get(self, kind: str, name: str, namespace: str = "") -> Any:
        """The compiled view of one object (None when absent)."""
        _, _, namespaced = _KINDS[kind]
        return self._objs[kind].get(f"{namespace or 'default'}/{name}" if namespaced else name)

    def delete(self, kind: str, name: str, namespace: str = "") -> None:
        if kind not in _KINDS:
            raise ObjectError(kind, "kind", f"must be one of {', '.join(_KINDS)}")
        resource, _, namespaced = _KINDS[kind]
        old = self._objs[kind].pop(f"{namespace or 'default'}/{name}" if namespaced else name, None)
        if old is None:
            return
        self._index(old, remove=True)
        self._changed(ClusterEvent(resource, Action.DELETE), old, None)

    def _changed(self, event: ClusterEvent, old: Any, new: Any) -> None:
        self._generation += 1
        for fn in self._listeners:
            fn(event, old, new)

    # ------------------------------------------------------------------ VolumeLister
    @property
    def generation(self) -> int:
        return self._generation

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        got: PersistentVolumeClaim | None = self._objs["PersistentVolumeClaim"].get(f"{namespace}/{name}")
        return got

    def pvs_of_class(self, storage_class: str) -> list[PersistentVolume]:
        return list(self._by_class.get(storage_class, {}).values())

    def pv(self, name: str) -> PersistentVolume | None:
        got: PersistentVolume | None = self._objs["PersistentVolume"].get(name)
        return got

    def storage_class(self, name: str) -> StorageClass | None:
        got: StorageClass | None = self._objs["StorageClass"].get(name)
        return got

    def csi_node(self, name: str) -> CSINode | None:
        got: CSINode | None = self._objs["CSINode"].get(name)
        return got

    def csi_driver(self, name: str) -> CSIDriver | None:
        got: CSIDriver | None = self._objs["CSIDriver"].get(name)
        return got

    def storage_capacities(self) -> Iterable[CSIStorageCapacity]:
        return list(self._objs["CSIStorageCapacity"].values())

    def volume_attachments(self, node_name: str) -> Iterable[VolumeAttachment]:
        return list(self._va_by_node.get(node_name, {}).values())


#: The lister of a scheduler that has no storage objects.
NO_VOLUMES = InMemoryVolumes()


def volumes_of(handle: Handle) -> VolumeLister:
    """The handle's ``volumes`` service, or an empty lister when the cluster offers none (a degraded
    mode the volume plugins declare, see ``services.VOLUME_NEEDS``)."""
    lister = handle.optional_service(VOLUMES)
    return NO_VOLUMES if lister is None else lister


class VolumeUsage:
    """Which volumes the pods on each node use, kept current by a ``SnapshotListener``.

    - ``claims``: namespace/claim -> number of pods (on any node, assumed ones included) whose
      ``persistentVolumeClaim`` volumes name it (StorageInfos.IsPVCUsedByPods);
    - ``disks``: (kind, identity) of in-line GCE PD / AWS EBS / ISCSI / RBD volumes -> slot -> those
      volumes, for VolumeRestrictions' disk conflicts;
    - ``attachable``: slot -> pods there with volumes that may count against CSI attach limits.

    Pods without volumes cost one cached lookup.
    """

    def __init__(self) -> None:
        self.claims: dict[str, int] = {}
        self.disks: dict[tuple[str, tuple[str, ...]], dict[int, list[PodVolume]]] = {}
        self.attachable: dict[int, dict[str, Pod]] = {}

    @classmethod
    def of(cls, snap: Snapshot) -> VolumeUsage:
        """The snapshot's shared instance, registered as its listener (and filled) on first use."""
        for lst in snap.listeners:
            if isinstance(lst, VolumeUsage):
                return lst
        inst = cls()
        for slot, pod in snap.all_pods():
            inst.pod_added(snap, slot, pod)
        snap.listeners.append(inst)
        return inst

    def claim_used(self, namespace: str, name: str) -> bool:
        return self.claims.get(f"{namespace}/{name}", 0) > 0

    def pod_added(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        vols = pod_volumes(pod)
        if vols:
            self._account(slot, pod, vols, 1)

    def pod_removed(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        vols = pod_volumes(pod)
        if vols:
            self._account(slot, pod, vols, -1)

    def node_changed(self, snap: Snapshot, slot: int, old: Node | None, new: Node | None) -> None:
        return None

    def _account(self, slot: int, pod: Pod, vols: tuple[PodVolume, ...], sign: int) -> None:
        attachable = False
        for v in vols:
            if v.kind == PVC:
                key = f"{pod.namespace}/{v.claim}"
                n = self.claims.get(key, 0) + sign
                if n:
                    self.claims[key] = n
                else:
                    del self.claims[key]
            if v.kind in DISK_KINDS:
                by_slot = self.disks.setdefault((v.kind, v.ident), {})
                if sign > 0:
                    by_slot.setdefault(slot, []).append(v)
                else:
                    on = by_slot.get(slot, [])
                    if v in on:
                        on.remove(v)
                    if not on:
                        by_slot.pop(slot, None)
                    if not by_slot:
                        del self.disks[(v.kind, v.ident)]
            attachable = attachable or v.uses_claim or v.migratable
        if attachable:
            if sign > 0:
                self.attachable.setdefault(slot, {})[pod.uid] = pod
            else:
                on_slot = self.attachable.get(slot)
                if on_slot is not None:
                    on_slot.pop(pod.uid, None)
                    if not on_slot:
                        del self.attachable[slot]
