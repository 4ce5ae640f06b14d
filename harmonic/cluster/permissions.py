"""The Kubernetes API access Harmonic needs, per way of running it: the source of its RBAC rules.

The deploy manifests and the Helm chart grant exactly these (tests check both ways: every call the
clients make is allowed, every granted rule is listed here). Compared with kube-scheduler's
``system:kube-scheduler`` and ``system:volume-scheduler`` roles, Harmonic needs no pod deletion
(preemption goes through the Eviction API, which honours PodDisruptionBudgets), no Dynamic Resource
Allocation objects (it has no DRA plugin), and only ``update`` of PersistentVolumes and claims
(VolumeBinding's PreBind replaces them whole; kube-scheduler's role also grants ``patch``).

``request_attributes`` maps an HTTP request to what the API server authorizes (its RequestInfo):
verb, API group, resource (with subresource), so recorded client calls can be checked against rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

READ = ("get", "list", "watch")


@dataclass(frozen=True)
class Permission:
    group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    why: str
    #: Granted by a Role in Harmonic's own namespace rather than cluster-wide.
    namespaced: bool = False
    #: Restricts the verbs to these object names (RBAC resourceNames); empty means any.
    names: tuple[str, ...] = ()


#: The "workloads" service's informers (cluster.services.LiveServices), in both modes.
_WORKLOAD_SELECTORS = (
    Permission(
        "",
        ("services", "replicationcontrollers"),
        READ,
        "default topology spreading selects a pod's siblings through its owners and services",
    ),
    Permission("apps", ("replicasets", "statefulsets"), READ, "default topology spreading (owners)"),
)


#: The "volumes" service's informers (profiles running VolumeBinding, VolumeRestrictions, VolumeZone or
#: NodeVolumeLimits, so every default profile), in both modes: kube-scheduler's storage listers.
_STORAGE_OBJECTS = (
    Permission(
        "",
        ("persistentvolumes", "persistentvolumeclaims"),
        READ,
        "the volume plugins read a pod's claims and their volumes",
    ),
    Permission(
        "storage.k8s.io",
        ("storageclasses", "csinodes", "csidrivers", "csistoragecapacities", "volumeattachments"),
        READ,
        "volume binding (classes, capacity), attach limits (CSINodes, drivers, attachments)",
    ),
)


#: The "batch" service's informers (profiles with Coscheduling or CapacityScheduling), in both modes.
_BATCH_OBJECTS = Permission(
    "scheduling.x-k8s.io",
    ("podgroups", "elasticquotas"),
    READ,
    "Coscheduling reads PodGroups, CapacityScheduling ElasticQuotas (scheduler-plugins' CRDs)",
)


def scheduler_permissions(lease_name: str) -> tuple[Permission, ...]:
    """``harmonic run``: informers, binding, status, events, eviction, leader election, reservations."""
    return (
        Permission("", ("nodes",), READ, "node informer"),
        Permission("", ("pods",), READ, "pod informer: assigned pods feed the cache, pending ones the queue"),
        Permission("", ("pods/binding",), ("create",), "bind a pod to its node"),
        Permission("", ("pods/status",), ("patch", "update"), "PodScheduled condition, nominatedNodeName"),
        Permission("", ("pods/eviction",), ("create",), "preemption evicts victims through the Eviction API"),
        Permission("", ("namespaces",), READ, "namespace selectors of pod (anti-)affinity terms"),
        Permission("policy", ("poddisruptionbudgets",), READ, "preemption counts PDB violations"),
        *_WORKLOAD_SELECTORS,
        *_STORAGE_OBJECTS,
        Permission(
            "",
            ("persistentvolumes", "persistentvolumeclaims"),
            ("update",),
            "VolumeBinding's PreBind: a PV pre-bound to its claim, a claim given the node to provision on",
        ),
        _BATCH_OBJECTS,
        Permission(
            "scheduling.x-k8s.io",
            ("podgroups/status",),
            ("patch",),
            "PodGroup status (phase, running counts), as scheduler-plugins' controller writes it",
        ),
        Permission("", ("events",), ("create", "patch", "update"), "Scheduled / FailedScheduling events"),
        Permission("events.k8s.io", ("events",), ("create", "patch", "update"), "the same, events.k8s.io/v1"),
        *leader_election_permissions(lease_name),
        *reservation_permissions(lease_name),
    )


def reservation_permissions(lease_name: str) -> tuple[Permission, ...]:
    """Moved pods' reservations, kept in the ConfigMap ``<lease>-reservations`` beside the lease
    (``cluster.reservation_store``): create it, then read and rewrite only that one."""
    return (
        Permission(
            "",
            ("configmaps",),
            ("create",),
            "moved pods' reservations: create their ConfigMap (RBAC cannot restrict create by name)",
            namespaced=True,
        ),
        Permission(
            "",
            ("configmaps",),
            ("get", "update", "patch"),
            "moved pods' reservations: restore and rewrite their own ConfigMap only",
            namespaced=True,
            names=(f"{lease_name}-reservations",),
        ),
    )


def rightsizing_permissions() -> tuple[Permission, ...]:
    """``harmonic run --feedback-rightsizing`` on top of ``scheduler_permissions``: opt-in, so not in the
    bundled manifests (docs/feedback.md, "Right-sizing")."""
    return (
        Permission("", ("pods/resize",), ("patch",), "in-place resize of pods that opted in"),
        Permission("", ("pods",), ("patch",), "the harmonic.dev/recommendation annotation of the others"),
        Permission("metrics.k8s.io", ("pods", "nodes"), READ, "pods' use, without a Prometheus"),
    )


def leader_election_permissions(lease_name: str) -> tuple[Permission, ...]:
    """A Lease of one's own, in one's namespace: create it, then touch only that one."""
    return (
        Permission(
            "coordination.k8s.io",
            ("leases",),
            ("create",),
            "leader election creates its lease (RBAC cannot restrict create by name)",
            namespaced=True,
        ),
        Permission(
            "coordination.k8s.io",
            ("leases",),
            ("get", "update", "patch"),
            "leader election renews its own lease only",
            namespaced=True,
            names=(lease_name,),
        ),
    )


def extender_permissions() -> tuple[Permission, ...]:
    """``harmonic extender``: its cluster cache, the plugins' services and the bind verb; kube-scheduler
    does the rest (events, conditions, evictions)."""
    return (
        Permission("", ("nodes",), READ, "node cache (nodeCacheCapable: true)"),
        Permission("", ("pods",), READ, "pods on nodes: requested resources, ports, affinity, spreading"),
        Permission("", ("pods/binding",), ("create",), "the bind verb"),
        Permission("", ("namespaces",), READ, "namespace selectors of pod (anti-)affinity terms"),
        Permission("policy", ("poddisruptionbudgets",), READ, "the pdbs service plugins read"),
        *_WORKLOAD_SELECTORS,
        *_STORAGE_OBJECTS,
        _BATCH_OBJECTS,
    )


def rbac_rules(perms: Iterable[Permission], namespaced: bool) -> list[dict[str, Any]]:
    """PolicyRules (ClusterRole for ``namespaced=False``, Role otherwise) in the manifests' form."""
    out: list[dict[str, Any]] = []
    for p in perms:
        if p.namespaced != namespaced:
            continue
        rule: dict[str, Any] = {"apiGroups": [p.group], "resources": list(p.resources)}
        if p.names:
            rule["resourceNames"] = list(p.names)
        rule["verbs"] = list(p.verbs)
        out.append(rule)
    return out


def allows(rules: Sequence[Mapping[str, Any]], verb: str, group: str, resource: str, name: str = "") -> bool:
    """Whether RBAC ``rules`` grant ``verb`` on ``group``/``resource`` (``pods/binding`` form) [named]."""
    for r in rules:
        if not _match(r.get("verbs"), verb) or not _match(r.get("apiGroups"), group):
            continue
        if not _match(r.get("resources"), resource):
            continue
        names = r.get("resourceNames") or []
        if names and name not in names:
            continue
        return True
    return False


def _match(values: Any, wanted: str) -> bool:
    return isinstance(values, list) and (wanted in values or "*" in values)


@dataclass(frozen=True)
class RequestAttributes:
    verb: str
    group: str
    resource: str
    namespace: str
    name: str


def request_attributes(method: str, url: str) -> RequestAttributes | None:
    """kube-apiserver's RequestInfo for a resource request; None for non-resource paths (discovery,
    /healthz), which every authenticated user may read (system:discovery)."""
    parts = urlsplit(url)
    segs = [s for s in parts.path.split("/") if s]
    if len(segs) >= 2 and segs[0] == "api":
        group, rest = "", segs[2:]
    elif len(segs) >= 3 and segs[0] == "apis":
        group, rest = segs[1], segs[3:]
    else:
        return None
    if not rest:
        return None
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    if len(rest) > 2:
        resource = f"{resource}/{rest[2]}"
    query = parse_qs(parts.query)
    method = method.upper()
    if method == "GET":
        watching = query.get("watch", ["false"])[0] in ("true", "1")
        verb = "watch" if watching else ("get" if name else "list")
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
            method, method.lower()
        )
        if verb == "delete" and not name:
            verb = "deletecollection"
    return RequestAttributes(verb, group, resource, namespace, name)
