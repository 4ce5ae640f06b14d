"""Read the objects a scenario snapshot needs from a live API server (``harmonic snapshot``).

Every kind is listed with ``limit``/``continue`` paging, per namespace when namespaces are given.
A 404 means the server does not serve that resource (scheduler-plugins' PodGroup and ElasticQuota
CRDs are often absent); it is recorded, not an error, so the snapshot can say what it could not read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harmonic.cluster.transport import ApiStatusError, Transport, object_path

Obj = dict[str, Any]
#: Objects per list page: big enough for few round trips, small enough for the server's memory.
PAGE = 500


@dataclass(frozen=True)
class Resource:
    kind: str
    api_version: str
    plural: str
    namespaced: bool


#: What a snapshot reads, in the order it reads them.
RESOURCES = (
    Resource("Node", "v1", "nodes", False),
    Resource("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", False),
    Resource("Pod", "v1", "pods", True),
    Resource("Service", "v1", "services", True),
    Resource("Deployment", "apps/v1", "deployments", True),
    Resource("ReplicaSet", "apps/v1", "replicasets", True),
    Resource("StatefulSet", "apps/v1", "statefulsets", True),
    Resource("DaemonSet", "apps/v1", "daemonsets", True),
    Resource("Job", "batch/v1", "jobs", True),
    Resource("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", True),
    Resource("PodGroup", "scheduling.x-k8s.io/v1alpha1", "podgroups", True),
    Resource("ElasticQuota", "scheduling.x-k8s.io/v1alpha1", "elasticquotas", True),
)


@dataclass
class Listing:
    """Objects by kind (each with ``kind``/``apiVersion`` set: list items come without them)."""

    objects: dict[str, list[Obj]] = field(default_factory=dict)
    #: Kinds the server answered 404 for (no such resource: typically a CRD not installed).
    not_served: list[str] = field(default_factory=list)

    def of(self, kind: str) -> list[Obj]:
        return self.objects.get(kind, [])


def _list(transport: Transport, path: str) -> list[Obj]:
    out: list[Obj] = []
    token: str | None = None
    while True:
        query: dict[str, Any] = {"limit": PAGE}
        if token:
            query["continue"] = token
        page = transport.request("GET", path, query=query) or {}
        out += page.get("items") or []
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return out


def read_cluster(transport: Transport, namespaces: Sequence[str] = ()) -> Listing:
    """Every object of ``RESOURCES`` (namespaced ones only from ``namespaces`` when given)."""
    listing = Listing()
    for res in RESOURCES:
        scopes: Sequence[str | None] = namespaces if (res.namespaced and namespaces) else [None]
        items: list[Obj] = []
        try:
            for ns in scopes:
                items += _list(transport, object_path(res.api_version, res.plural, ns))
        except ApiStatusError as e:
            if e.code != 404:
                raise
            listing.not_served.append(res.kind)
            continue
        listing.objects[res.kind] = [{**o, "apiVersion": res.api_version, "kind": res.kind} for o in items]
    return listing
