"""Storage objects as the volume plugins read them, compiled once from their manifests.

PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode, CSIDriver, CSIStorageCapacity and
VolumeAttachment views, the volumes of a pod (``pod_volumes``), and the storage helpers kube-scheduler
takes from ``k8s.io/component-helpers/storage/volume`` (claim class, access modes, PV node affinity,
``FindMatchingVolume``) and ``csi-translation-lib`` (in-tree volume -> CSI driver and handle).
Malformed objects raise ``ObjectError`` naming the object and field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from harmonic.api.errors import ObjectError, as_mapping
from harmonic.api.pod import Pod
from harmonic.api.quantity import QuantityError, parse_cached
from harmonic.api.selectors import (
    LabelSelector,
    NodeSelector,
    label_selector,
    labels_of,
    node_selector,
)

BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
FILESYSTEM = "Filesystem"
CLAIM_LOST = "Lost"
VOLUME_AVAILABLE = "Available"

#: In-tree volume plugin -> the CSI driver it migrates to (csi-translation-lib).
AWS_EBS, GCE_PD, AZURE_DISK, CINDER, PORTWORX = (
    "kubernetes.io/aws-ebs",
    "kubernetes.io/gce-pd",
    "kubernetes.io/azure-disk",
    "kubernetes.io/cinder",
    "kubernetes.io/portworx-volume",
)
CSI_DRIVER_OF_PLUGIN = {
    AWS_EBS: "ebs.csi.aws.com",
    GCE_PD: "pd.csi.storage.gke.io",
    AZURE_DISK: "disk.csi.azure.com",
    CINDER: "cinder.csi.openstack.org",
    PORTWORX: "pxd.portworx.com",
}
#: Volume source field -> in-tree plugin name, for sources csi-translation-lib can migrate.
_MIGRATABLE_SOURCES = {
    "awsElasticBlockStore": AWS_EBS,
    "gcePersistentDisk": GCE_PD,
    "azureDisk": AZURE_DISK,
    "cinder": CINDER,
    "portworxVolume": PORTWORX,
    # Migratable in the library, but no scheduler plugin counts them (not attachable or not GA).
    "azureFile": "kubernetes.io/azure-file",
    "vsphereVolume": "kubernetes.io/vsphere-volume",
    "rbd": "kubernetes.io/rbd",
}


_map = as_mapping


def _str(obj: str, field: str, raw: Any) -> str:
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise ObjectError(obj, field, f"must be a string, not {type(raw).__name__}")
    return raw


def _strings(obj: str, field: str, raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise ObjectError(obj, field, "must be a list of strings")
    return tuple(raw)


def _quantity(obj: str, field: str, raw: Any) -> Fraction:
    try:
        return parse_cached(raw)
    except QuantityError as e:
        raise ObjectError(obj, field, str(e)) from None


def _meta(kind: str, raw: Any, namespaced: bool) -> tuple[str, Mapping[str, Any], str, str]:
    if not isinstance(raw, Mapping):
        raise ObjectError(kind, "", "must be an object")
    meta = _map(kind, "metadata", raw.get("metadata"))
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ObjectError(kind, "metadata.name", "is required")
    namespace = str(meta.get("namespace") or "default") if namespaced else ""
    obj = f"{kind} {namespace}/{name}" if namespaced else f"{kind} {name}"
    return obj, meta, name, namespace


def _value(q: Fraction) -> int:
    """``Quantity.Value()``: whole units rounded up."""
    return -((-q.numerator) // q.denominator)


# =========================================================================== claims and volumes
@dataclass(frozen=True, slots=True)
class ClaimRef:
    namespace: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True, eq=False)
class PersistentVolumeClaim:
    raw: Mapping[str, Any]
    name: str
    namespace: str
    uid: str
    resource_version: str
    annotations: dict[str, str]
    #: GetPersistentVolumeClaimClass: the beta annotation wins over spec.storageClassName.
    storage_class: str
    access_modes: tuple[str, ...]
    #: spec.resources.requests.storage, or None when absent.
    request: Fraction | None
    volume_name: str
    volume_mode: str
    attributes_class: str
    selector: LabelSelector | None
    phase: str
    deleting: bool
    #: UID of the controlling owner (generic ephemeral volumes are owned by their pod).
    controller_uid: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def fully_bound(self) -> bool:
        return bool(self.volume_name) and ANN_BIND_COMPLETED in self.annotations

    @property
    def storage_bytes(self) -> int:
        return _value(self.request) if self.request is not None else 0


def parse_pvc(raw: Mapping[str, Any]) -> PersistentVolumeClaim:
    obj, meta, name, namespace = _meta("PersistentVolumeClaim", raw, namespaced=True)
    spec = _map(obj, "spec", raw.get("spec"))
    status = _map(obj, "status", raw.get("status"))
    annotations = labels_of(obj, "metadata.annotations", meta.get("annotations"))
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        sc = annotations[BETA_STORAGE_CLASS_ANNOTATION]
    else:
        sc = _str(obj, "spec.storageClassName", spec.get("storageClassName"))
    requests = _map(
        obj, "spec.resources.requests", _map(obj, "spec.resources", spec.get("resources")).get("requests")
    )
    request = requests.get("storage")
    selector = spec.get("selector")
    controller = ""
    for i, o in enumerate(meta.get("ownerReferences") or ()):
        o = _map(obj, f"metadata.ownerReferences[{i}]", o)
        if o.get("controller"):
            controller = str(o.get("uid") or "")
    return PersistentVolumeClaim(
        raw=raw,
        name=name,
        namespace=namespace,
        uid=str(meta.get("uid") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        annotations=annotations,
        storage_class=sc,
        access_modes=_strings(obj, "spec.accessModes", spec.get("accessModes")),
        request=_quantity(obj, "spec.resources.requests.storage", request) if request is not None else None,
        volume_name=_str(obj, "spec.volumeName", spec.get("volumeName")),
        volume_mode=_str(obj, "spec.volumeMode", spec.get("volumeMode")) or FILESYSTEM,
        attributes_class=_str(obj, "spec.volumeAttributesClassName", spec.get("volumeAttributesClassName")),
        selector=label_selector(obj, "spec.selector", selector) if selector is not None else None,
        phase=str(status.get("phase") or "Pending"),
        deleting=bool(meta.get("deletionTimestamp")),
        controller_uid=controller,
    )


@dataclass(frozen=True, slots=True)
class CSISource:
    driver: str
    handle: str


@dataclass(frozen=True, slots=True, eq=False)
class PersistentVolume:
    raw: Mapping[str, Any]
    name: str
    resource_version: str
    labels: dict[str, str]
    annotations: dict[str, str]
    storage_class: str
    capacity: Fraction
    access_modes: tuple[str, ...]
    claim_ref: ClaimRef | None
    phase: str
    deleting: bool
    volume_mode: str
    attributes_class: str
    #: spec.nodeAffinity.required; None when the volume has no node affinity.
    node_affinity: NodeSelector | None
    csi: CSISource | None
    #: (in-tree plugin, handle) of a migratable in-tree source, else None.
    in_tree: tuple[str, str] | None

    @property
    def capacity_bytes(self) -> int:
        return _value(self.capacity)

    def bound_to(self, claim: PersistentVolumeClaim) -> bool:
        """IsVolumeBoundToClaim."""
        ref = self.claim_ref
        if ref is None or ref.name != claim.name or ref.namespace != claim.namespace:
            return False
        return not ref.uid or ref.uid == claim.uid

    def node_affinity_matches(self, labels: Mapping[str, str]) -> bool:
        """CheckNodeAffinity: the node is judged by its labels only (matchFields see no name)."""
        return self.node_affinity is None or self.node_affinity.matches(labels, "")


def _in_tree_handle(obj: str, field: str, kind: str, src: Mapping[str, Any]) -> tuple[str, str] | None:
    """(plugin, CSI volume handle) as csi-translation-lib translates the in-tree source."""
    plugin = _MIGRATABLE_SOURCES[kind]
    if kind == "awsElasticBlockStore":
        vid = _str(obj, f"{field}.volumeID", src.get("volumeID"))
        # aws://<zone>/<id> forms translate to the bare volume id.
        return plugin, vid.rsplit("/", 1)[-1] if vid.startswith("aws://") else vid
    if kind == "gcePersistentDisk":
        return plugin, f"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{src.get('pdName', '')}"
    if kind == "azureDisk":
        return plugin, _str(obj, f"{field}.diskURI", src.get("diskURI"))
    if kind in ("cinder", "portworxVolume"):
        return plugin, _str(obj, f"{field}.volumeID", src.get("volumeID"))
    return None


def parse_pv(raw: Mapping[str, Any]) -> PersistentVolume:
    obj, meta, name, _ = _meta("PersistentVolume", raw, namespaced=False)
    spec = _map(obj, "spec", raw.get("spec"))
    status = _map(obj, "status", raw.get("status"))
    annotations = labels_of(obj, "metadata.annotations", meta.get("annotations"))
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        sc = annotations[BETA_STORAGE_CLASS_ANNOTATION]
    else:
        sc = _str(obj, "spec.storageClassName", spec.get("storageClassName"))
    capacity = _map(obj, "spec.capacity", spec.get("capacity")).get("storage")
    ref_raw = spec.get("claimRef")
    claim_ref = None
    if ref_raw is not None:
        ref = _map(obj, "spec.claimRef", ref_raw)
        claim_ref = ClaimRef(
            str(ref.get("namespace") or ""), str(ref.get("name") or ""), str(ref.get("uid") or "")
        )
    aff = _map(obj, "spec.nodeAffinity", spec.get("nodeAffinity")).get("required")
    csi_raw = spec.get("csi")
    csi = None
    if csi_raw is not None:
        c = _map(obj, "spec.csi", csi_raw)
        csi = CSISource(
            _str(obj, "spec.csi.driver", c.get("driver")),
            _str(obj, "spec.csi.volumeHandle", c.get("volumeHandle")),
        )
    in_tree = None
    for kind in _MIGRATABLE_SOURCES:
        if spec.get(kind) is not None:
            in_tree = _in_tree_handle(obj, f"spec.{kind}", kind, _map(obj, f"spec.{kind}", spec.get(kind)))
            break
    return PersistentVolume(
        raw=raw,
        name=name,
        resource_version=str(meta.get("resourceVersion") or ""),
        labels=labels_of(obj, "metadata.labels", meta.get("labels")),
        annotations=annotations,
        storage_class=sc,
        capacity=_quantity(obj, "spec.capacity.storage", capacity) if capacity is not None else Fraction(0),
        access_modes=_strings(obj, "spec.accessModes", spec.get("accessModes")),
        claim_ref=claim_ref,
        phase=str(status.get("phase") or ""),
        deleting=bool(meta.get("deletionTimestamp")),
        volume_mode=_str(obj, "spec.volumeMode", spec.get("volumeMode")) or FILESYSTEM,
        attributes_class=_str(obj, "spec.volumeAttributesClassName", spec.get("volumeAttributesClassName")),
        node_affinity=node_selector(obj, "spec.nodeAffinity.required", aff) if aff is not None else None,
        csi=csi,
        in_tree=in_tree,
    )


# =========================================================================== classes and CSI objects
@dataclass(frozen=True, slots=True)
class TopologyRequirement:
    key: str
    values: frozenset[str]


@dataclass(frozen=True, slots=True, eq=False)
class StorageClass:
    raw: Mapping[str, Any]
    name: str
    provisioner: str
    #: volumeBindingMode; "" when unset (the API server defaults it to Immediate).
    binding_mode: str
    #: allowedTopologies: terms ORed, each a conjunction of requirements (an empty term matches nothing).
    allowed_topologies: tuple[tuple[TopologyRequirement, ...], ...]


def parse_storage_class(raw: Mapping[str, Any]) -> StorageClass:
    obj, _, name, _ = _meta("StorageClass", raw, namespaced=False)
    mode = _str(obj, "volumeBindingMode", raw.get("volumeBindingMode"))
    if mode not in ("", IMMEDIATE, WAIT_FOR_FIRST_CONSUMER):
        raise ObjectError(obj, "volumeBindingMode", f"{mode!r} is not Immediate or WaitForFirstConsumer")
    terms = []
    for i, t in enumerate(raw.get("allowedTopologies") or ()):
        t = _map(obj, f"allowedTopologies[{i}]", t)
        reqs = []
        for j, e in enumerate(t.get("matchLabelExpressions") or ()):
            field = f"allowedTopologies[{i}].matchLabelExpressions[{j}]"
            e = _map(obj, field, e)
            reqs.append(
                TopologyRequirement(
                    _str(obj, f"{field}.key", e.get("key")),
                    frozenset(_strings(obj, f"{field}.values", e.get("values"))),
                )
            )
        terms.append(tuple(reqs))
    return StorageClass(
        raw=raw,
        name=name,
        provisioner=_str(obj, "provisioner", raw.get("provisioner")),
        binding_mode=mode,
        allowed_topologies=tuple(terms),
    )


@dataclass(frozen=True, slots=True, eq=False)
class CSINode:
    raw: Mapping[str, Any]
    name: str
    annotations: dict[str, str]
    #: Driver name -> spec.drivers[].allocatable.count (None when the driver reports no limit).
    drivers: dict[str, int | None]

    @property
    def limits(self) -> dict[str, int]:
        return {d: n for d, n in self.drivers.items() if n is not None}


def parse_csi_node(raw: Mapping[str, Any]) -> CSINode:
    obj, meta, name, _ = _meta("CSINode", raw, namespaced=False)
    spec = _map(obj, "spec", raw.get("spec"))
    drivers: dict[str, int | None] = {}
    for i, d in enumerate(spec.get("drivers") or ()):
        d = _map(obj, f"spec.drivers[{i}]", d)
        count = _map(obj, f"spec.drivers[{i}].allocatable", d.get("allocatable")).get("count")
        if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 0):
            raise ObjectError(obj, f"spec.drivers[{i}].allocatable.count", f"{count!r} is not a count")
        drivers[_str(obj, f"spec.drivers[{i}].name", d.get("name"))] = count
    return CSINode(raw, name, labels_of(obj, "metadata.annotations", meta.get("annotations")), drivers)


@dataclass(frozen=True, slots=True, eq=False)
class CSIDriver:
    raw: Mapping[str, Any]
    name: str
    #: spec.storageCapacity: the driver publishes CSIStorageCapacity objects to be checked.
    storage_capacity: bool


def parse_csi_driver(raw: Mapping[str, Any]) -> CSIDriver:
    obj, _, name, _ = _meta("CSIDriver", raw, namespaced=False)
    spec = _map(obj, "spec", raw.get("spec"))
    return CSIDriver(raw, name, spec.get("storageCapacity") is True)


@dataclass(frozen=True, slots=True, eq=False)
class CSIStorageCapacity:
    raw: Mapping[str, Any]
    name: str
    namespace: str
    storage_class: str
    node_topology: LabelSelector | None
    capacity: Fraction | None
    maximum_volume_size: Fraction | None

    @property
    def volume_limit(self) -> Fraction | None:
        """maximumVolumeSize when set (it is more precise), else capacity."""
        return self.maximum_volume_size if self.maximum_volume_size is not None else self.capacity


def parse_csi_storage_capacity(raw: Mapping[str, Any]) -> CSIStorageCapacity:
    obj, _, name, namespace = _meta("CSIStorageCapacity", raw, namespaced=True)
    topo = raw.get("nodeTopology")
    cap, mvs = raw.get("capacity"), raw.get("maximumVolumeSize")
    return CSIStorageCapacity(
        raw=raw,
        name=name,
        namespace=namespace,
        storage_class=_str(obj, "storageClassName", raw.get("storageClassName")),
        node_topology=label_selector(obj, "nodeTopology", topo) if topo is not None else None,
        capacity=_quantity(obj, "capacity", cap) if cap is not None else None,
        maximum_volume_size=_quantity(obj, "maximumVolumeSize", mvs) if mvs is not None else None,
    )


@dataclass(frozen=True, slots=True, eq=False)
class VolumeAttachment:
    raw: Mapping[str, Any]
    name: str
    attacher: str
    node_name: str
    pv_name: str


def parse_volume_attachment(raw: Mapping[str, Any]) -> VolumeAttachment:
    obj, _, name, _ = _meta("VolumeAttachment", raw, namespaced=False)
    spec = _map(obj, "spec", raw.get("spec"))
    source = _map(obj, "spec.source", spec.get("source"))
    return VolumeAttachment(
        raw=raw,
        name=name,
        attacher=_str(obj, "spec.attacher", spec.get("attacher")),
        node_name=_str(obj, "spec.nodeName", spec.get("nodeName")),
        pv_name=_str(obj, "spec.source.persistentVolumeName", source.get("persistentVolumeName")),
    )


# =========================================================================== pod volumes
PVC, EPHEMERAL, GCE, EBS, ISCSI, RBD, OTHER = "pvc", "ephemeral", "gce", "ebs", "iscsi", "rbd", "other"
#: In-line volume kinds VolumeRestrictions checks for conflicts between pods on one node.
DISK_KINDS = frozenset((GCE, EBS, ISCSI, RBD))


@dataclass(frozen=True, slots=True)
class PodVolume:
    """One entry of ``spec.volumes``: its kind and what the volume plugins compare.

    ``claim`` is the PVC name (for ephemeral volumes ``<pod>-<volume>``); ``ident`` identifies the disk
    of an in-line GCE PD (pdName), AWS EBS (volumeID), ISCSI (iqn) or RBD ((pool, image)) volume;
    ``monitors`` are RBD's Ceph monitors; ``in_tree`` the (plugin, CSI handle) of a migratable source.
    """

    name: str
    kind: str
    claim: str = ""
    ident: tuple[str, ...] = ()
    read_only: bool = False
    monitors: frozenset[str] = frozenset()
    in_tree: tuple[str, str] | None = None
    migratable: bool = False

    @property
    def uses_claim(self) -> bool:
        return self.kind in (PVC, EPHEMERAL)

    def conflicts(self, other: PodVolume) -> bool:
        """isVolumeConflict for one pair of in-line volumes."""
        if self.kind != other.kind or self.ident != other.ident:
            return False
        if self.kind == EBS:
            return True
        if self.kind == RBD and not self.monitors & other.monitors:
            return False
        if self.kind in (GCE, ISCSI, RBD):
            return not (self.read_only and other.read_only)
        return False


_VOLUMES_KEY = "storage/volumes"


def _pod_volume(obj: str, field: str, pod_name: str, raw: Mapping[str, Any]) -> PodVolume:
    name = str(raw.get("name") or "")
    if raw.get("persistentVolumeClaim") is not None:
        src = _map(obj, f"{field}.persistentVolumeClaim", raw["persistentVolumeClaim"])
        return PodVolume(
            name, PVC, claim=_str(obj, f"{field}.persistentVolumeClaim.claimName", src.get("claimName"))
        )
    if raw.get("ephemeral") is not None:
        return PodVolume(name, EPHEMERAL, claim=f"{pod_name}-{name}")
    for kind in _MIGRATABLE_SOURCES:
        if raw.get(kind) is not None:
            src = _map(obj, f"{field}.{kind}", raw[kind])
            ro = bool(src.get("readOnly"))
            in_tree = _in_tree_handle(obj, f"{field}.{kind}", kind, src)
            if kind == "gcePersistentDisk":
                return PodVolume(
                    name,
                    GCE,
                    ident=(str(src.get("pdName") or ""),),
                    read_only=ro,
                    in_tree=in_tree,
                    migratable=True,
                )
            if kind == "awsElasticBlockStore":
                return PodVolume(
                    name,
                    EBS,
                    ident=(str(src.get("volumeID") or ""),),
                    read_only=ro,
                    in_tree=in_tree,
                    migratable=True,
                )
            if kind == "rbd":
                mons = frozenset(_strings(obj, f"{field}.rbd.monitors", src.get("monitors")))
                ident = (str(src.get("pool") or "rbd"), str(src.get("image") or ""))
                return PodVolume(name, RBD, ident=ident, read_only=ro, monitors=mons, migratable=True)
            return PodVolume(name, OTHER, read_only=ro, in_tree=in_tree, migratable=True)
    if raw.get("iscsi") is not None:
        src = _map(obj, f"{field}.iscsi", raw["iscsi"])
        return PodVolume(name, ISCSI, ident=(str(src.get("iqn") or ""),), read_only=bool(src.get("readOnly")))
    return PodVolume(name, OTHER)


def pod_volumes(pod: Pod) -> tuple[PodVolume, ...]:
    """The pod's volumes, compiled once and cached on the pod (empty for pods without volumes)."""
    cached: tuple[PodVolume, ...] | None = pod.extra.get(_VOLUMES_KEY)
    if cached is not None:
        return cached
    raw = pod.spec.get("volumes")
    if not raw:
        pod.extra[_VOLUMES_KEY] = ()
        return ()
    obj = f"Pod {pod.key}"
    if not isinstance(raw, list):
        raise ObjectError(obj, "spec.volumes", "must be a list")
    vols = tuple(
        _pod_volume(obj, f"spec.volumes[{i}]", pod.name, _map(obj, f"spec.volumes[{i}]", v))
        for i, v in enumerate(raw)
    )
    pod.extra[_VOLUMES_KEY] = vols
    return vols


def ephemeral_owner_error(pod: Pod, pvc: PersistentVolumeClaim) -> str | None:
    """ephemeral.VolumeIsForPod: a generic ephemeral volume's PVC must be controlled by the pod."""
    if pvc.controller_uid != pod.uid:
        return f"PVC {pvc.namespace}/{pvc.name} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"
    return None


# =========================================================================== matching (pv_helpers.go)
def access_modes_fit(claim: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """CheckAccessModes: every mode the claim asks for is one the volume offers."""
    return all(m in pv.access_modes for m in claim.access_modes)
