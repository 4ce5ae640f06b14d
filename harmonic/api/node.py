"""The scheduler's view of a Node, compiled once from its manifest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harmonic.api.errors import ObjectError, as_list
from harmonic.api.resources import Resources, resource_list
from harmonic.api.selectors import labels_of
from harmonic.api.taints import Taint, parse_taints

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
_LEGACY_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
_LEGACY_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"
HOSTNAME_LABEL = "kubernetes.io/hostname"


class Node:
    __slots__ = (
        "allocatable",
        "annotations",
        "images",
        "labels",
        "name",
        "raw",
        "taints",
        "uid",
        "unschedulable",
    )

    raw: Mapping[str, Any]
    name: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    allocatable: Resources
    #: Image name -> size in bytes, from ``status.images`` (every name of an image maps to its size).
    images: dict[str, int]

    def __repr__(self) -> str:
        return f"Node({self.name})"

    @property
    def zone_key(self) -> str:
        """Region and zone as one key (utilnode.GetZoneKey); "" when the node has neither."""
        region = self.labels.get(REGION_LABEL) or self.labels.get(_LEGACY_REGION_LABEL, "")
        zone = self.labels.get(ZONE_LABEL) or self.labels.get(_LEGACY_ZONE_LABEL, "")
        if not region and not zone:
            return ""
        return f"{region}:\x00:{zone}"


def parse_node(raw: Mapping[str, Any]) -> Node:
    """Compile a Node manifest. Allocatable falls back to capacity, as the API server defaults it."""
    if not isinstance(raw, Mapping):
        raise ObjectError("Node", "", "must be an object")
    meta = raw.get("metadata") or {}
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        raise ObjectError("Node", "metadata.name", "is required")
    obj = f"Node {name}"
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    if not isinstance(spec, Mapping):
        raise ObjectError(obj, "spec", "must be an object")
    if not isinstance(status, Mapping):
        raise ObjectError(obj, "status", "must be an object")
    n = Node.__new__(Node)
    n.raw = raw
    n.name = name
    n.uid = str(meta.get("uid") or name)
    n.labels = labels_of(obj, "metadata.labels", meta.get("labels"))
    n.annotations = labels_of(obj, "metadata.annotations", meta.get("annotations"))
    n.taints = parse_taints(obj, "spec.taints", spec.get("taints"))
    n.unschedulable = bool(spec.get("unschedulable"))
    if status.get("allocatable") is not None:
        n.allocatable = resource_list(obj, "status.allocatable", status.get("allocatable"))
    else:
        n.allocatable = resource_list(obj, "status.capacity", status.get("capacity"))
    images: dict[str, int] = {}
    for i, img in enumerate(as_list(obj, "status.images", status.get("images"))):
        size = img.get("sizeBytes", 0) if isinstance(img, Mapping) else None
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size < 2**63:
            raise ObjectError(obj, f"status.images[{i}].sizeBytes", f"{size!r} is not a 64-bit integer")
        for nm in as_list(obj, f"status.images[{i}].names", img.get("names")):
            images[str(nm)] = size
    n.images = images
    return n
