"""The scheduler's view of a Pod, compiled once from its manifest."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harmonic.api.errors import ObjectError, as_list, as_mapping
from harmonic.api.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    MEMORY,
    Resources,
    pod_requests_and_nonzero,
)
from harmonic.api.selectors import (
    NodeSelector,
    NodeSelectorTerm,
    labels_of,
    node_selector,
    node_selector_term,
)
from harmonic.api.taints import Toleration, parse_tolerations

DEFAULT_SCHEDULER_NAME = "default-scheduler"
_NONZERO_DEFAULTS = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str  # "0.0.0.0" when unset
    protocol: str  # TCP when unset
    port: int

    def conflicts(self, other: HostPort) -> bool:
        if self.port != other.port or self.protocol != other.protocol:
            return False
        return self.ip == other.ip or "0.0.0.0" in (self.ip, other.ip)


@dataclass(frozen=True, slots=True)
class OwnerRef:
    kind: str
    name: str
    uid: str
    controller: bool


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    weight: int
    term: NodeSelectorTerm | None  # None: an empty term, which matches nothing


class Pod:
    """Immutable compiled pod. ``raw`` is the manifest it came from (never mutated here)."""

    __slots__ = (
        "annotations",
        "creation_timestamp",
        "deleting",
        "extra",
        "host_ports",
        "images",
        "key",
        "labels",
        "name",
        "namespace",
        "node_name",
        "node_selector",
        "nominated_node_name",
        "nonzero_cpu",
        "nonzero_memory",
        "owners",
        "phase",
        "preemption_policy",
        "preferred_affinity",
        "priority",
        "raw",
        "requests",
        "required_affinity",
        "scheduler_name",
        "scheduling_gates",
        "spec",
        "tolerations",
        "uid",
    )

    raw: Mapping[str, Any]
    spec: Mapping[str, Any]
    name: str
    namespace: str
    key: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    node_name: str
    nominated_node_name: str
    scheduler_name: str
    priority: int
    preemption_policy: str
    requests: Resources
    nonzero_cpu: int
    nonzero_memory: int
    tolerations: tuple[Toleration, ...]
    node_selector: dict[str, str]
    required_affinity: NodeSelector | None
    preferred_affinity: tuple[PreferredTerm, ...]
    host_ports: tuple[HostPort, ...]
    images: tuple[str, ...]
    scheduling_gates: tuple[str, ...]
    owners: tuple[OwnerRef, ...]
    phase: str
    deleting: bool
    creation_timestamp: str
    #: Per-plugin compiled data about this pod (e.g. parsed affinity terms), filled lazily by plugins.
    extra: dict[str, Any]

    def __repr__(self) -> str:
        return f"Pod({self.key})"

    @property
    def controller(self) -> OwnerRef | None:
        for o in self.owners:
            if o.controller:
                return o
        return None

    @property
    def is_terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")


_map = as_mapping


def _host_ports(obj: str, spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    ports: list[HostPort] = []
    containers: list[tuple[str, Mapping[str, Any]]] = []
    for field in ("spec.containers", "spec.initContainers"):
        for i, raw in enumerate(as_list(obj, field, spec.get(field.split(".")[1]))):
            if not isinstance(raw, Mapping):
                raise ObjectError(obj, f"{field}[{i}]", "must be an object")
            if field == "spec.containers" or raw.get("restartPolicy") == "Always":
                containers.append((field, raw))
    for field, c in containers:
        where = f"{field}[{c.get('name')}].ports"
        for j, raw in enumerate(as_list(obj, where, c.get("ports"))):
            p = _map(obj, f"{where}[{j}]", raw)
            hp = p.get("hostPort")
            if not hp:
                continue
            if not isinstance(hp, int) or not 0 < hp < 65536:
                raise ObjectError(obj, f"{where}[{j}].hostPort", f"{hp!r} is not a port")
            ports.append(HostPort(str(p.get("hostIP") or "0.0.0.0"), str(p.get("protocol") or "TCP"), hp))
    return tuple(ports)


def parse_pod(raw: Mapping[str, Any]) -> Pod:
    """Compile a Pod manifest. Raises ``ObjectError`` naming the pod and field on malformed input."""
    if not isinstance(raw, Mapping):
        raise ObjectError("Pod", "", "must be an object")
    meta = _map("Pod", "metadata", raw.get("metadata"))
    name = meta.get("name")
    namespace = meta.get("namespace") or "default"
    if not isinstance(name, str) or not name:
        raise ObjectError("Pod", "metadata.name", "is required")
    obj = f"Pod {namespace}/{name}"
    spec = _map(obj, "spec", raw.get("spec"))
    status = _map(obj, "status", raw.get("status"))
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise ObjectError(obj, "spec.containers", "must list at least one container")

    p = Pod.__new__(Pod)
    p.raw = raw
    p.spec = spec
    p.name = name
    p.namespace = str(namespace)
    p.key = f"{namespace}/{name}"
    p.uid = str(meta.get("uid") or p.key)
    p.labels = labels_of(obj, "metadata.labels", meta.get("labels"))
    p.annotations = labels_of(obj, "metadata.annotations", meta.get("annotations"))
    p.node_name = str(spec.get("nodeName") or "")
    p.nominated_node_name = str(status.get("nominatedNodeName") or "")
    p.scheduler_name = str(spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME)
    priority = spec.get("priority", 0)
    if priority is None:
        priority = 0
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise ObjectError(obj, "spec.priority", f"{priority!r} is not an integer")
    if not -(2**31) <= priority < 2**31:  # Go's int32: the API server would not have stored it
        raise ObjectError(obj, "spec.priority", f"{priority!r} is not a 32-bit integer")
    p.priority = priority
    p.preemption_policy = str(spec.get("preemptionPolicy") or "PreemptLowerPriority")
    p.requests, nonzero = pod_requests_and_nonzero(obj, spec, _NONZERO_DEFAULTS)
    p.nonzero_cpu = nonzero.get(CPU, 0)
    p.nonzero_memory = nonzero.get(MEMORY, 0)
    p.tolerations = parse_tolerations(obj, "spec.tolerations", spec.get("tolerations"))
    p.node_selector = labels_of(obj, "spec.nodeSelector", spec.get("nodeSelector"))

    node_aff = _map(
        obj,
        "spec.affinity.nodeAffinity",
        _map(obj, "spec.affinity", spec.get("affinity")).get("nodeAffinity"),
    )
    req = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution")
    field = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    p.required_affinity = node_selector(obj, field, req) if req is not None else None
    prefs = []
    field = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    for i, t in enumerate(as_list(obj, field, node_aff.get(field.rsplit(".", 1)[1]))):
        w = t.get("weight") if isinstance(t, Mapping) else None
        if not isinstance(w, int) or not 1 <= w <= 100:
            raise ObjectError(obj, f"{field}[{i}].weight", f"{w!r} must be an integer in 1..100")
        prefs.append(
            PreferredTerm(w, node_selector_term(obj, f"{field}[{i}].preference", t.get("preference") or {}))
        )
    p.preferred_affinity = tuple(prefs)

    p.host_ports = _host_ports(obj, spec)
    images = [c.get("image") for c in containers]
    images += [c.get("image") for c in spec.get("initContainers") or ()]
    p.images = tuple(str(i) for i in images if i)
    gates = as_list(obj, "spec.schedulingGates", spec.get("schedulingGates"))
    p.scheduling_gates = tuple(
        str(_map(obj, f"spec.schedulingGates[{i}]", g).get("name")) for i, g in enumerate(gates)
    )
    owners = as_list(obj, "metadata.ownerReferences", meta.get("ownerReferences"))
    p.owners = tuple(
        OwnerRef(
            str(o.get("kind", "")), str(o.get("name", "")), str(o.get("uid", "")), bool(o.get("controller"))
        )
        for o in (_map(obj, f"metadata.ownerReferences[{i}]", o) for i, o in enumerate(owners))
    )
    p.phase = str(status.get("phase") or "Pending")
    p.deleting = bool(meta.get("deletionTimestamp"))
    p.creation_timestamp = str(meta.get("creationTimestamp") or "")
    p.extra = {}
    return p


def reparse_pod(prev: Pod, raw: Mapping[str, Any]) -> Pod:
    """``parse_pod(raw)`` for a new version of ``prev``. When only ``spec.nodeName``, the server's
    bookkeeping in the metadata (``resourceVersion``, ``generation``, ``managedFields``) and status
    fields other than the phase and nominated node changed (a binding, a condition written), the
    compiled data of ``prev`` is reused, ``extra`` included: binding confirmations cost no parsing."""
    meta, spec, status = raw.get("metadata"), raw.get("spec"), raw.get("status")
    old_raw = prev.raw
    if (
        isinstance(spec, Mapping)
        and isinstance(status, Mapping | None)
        and _same_meta(meta, old_raw.get("metadata"))
        and _same_but_node(spec, prev.spec)
        and str((status or {}).get("phase") or "Pending") == prev.phase
        and str((status or {}).get("nominatedNodeName") or "") == prev.nominated_node_name
    ):
        p = clone_pod(prev)
        p.raw = raw
        p.spec = spec
        p.node_name = str(spec.get("nodeName") or "")
        return p
    return parse_pod(raw)


def _same(a: object, b: object) -> bool:
    return a is b or a == b


#: Metadata the API server changes on every write, and that nothing compiled from a pod reads. A
#: binding always changes the resourceVersion, so comparing it would make every confirmation a parse.
_BOOKKEEPING = frozenset({"resourceVersion", "generation", "managedFields"})


def _same_meta(new: object, old: object) -> bool:
    if new is old:
        return True
    if not isinstance(new, Mapping) or not isinstance(old, Mapping):
        return new == old
    kept = [k for k in new if k not in _BOOKKEEPING]
    if len(kept) != sum(1 for k in old if k not in _BOOKKEEPING):
        return False
    return all(k in old and _same(new[k], old[k]) for k in kept)


def _same_but_node(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    n = len(new) - ("nodeName" in new)
    if n != len(old) - ("nodeName" in old):
        return False
    return all(k == "nodeName" or (k in old and _same(v, old[k])) for k, v in new.items())


def _compile_cloner() -> Callable[[Pod], Pod]:
    # One assignment per slot in straight-line code: several times faster than a getattr loop, and
    # scheduling clones every pod it binds (the assumed pod) and every binding it sees confirmed.
    body = "\n".join(f"    c.{a} = p.{a}" for a in Pod.__slots__)
    namespace: dict[str, Any] = {"new": object.__new__, "Pod": Pod}
    exec(f"def clone(p):\n    c = new(Pod)\n{body}\n    return c", namespace)
    cloner: Callable[[Pod], Pod] = namespace["clone"]
    return cloner


#: A shallow copy of a compiled pod (every field shared, ``extra`` included).
clone_pod = _compile_cloner()
