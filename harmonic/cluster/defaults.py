"""What the API server fills in on create, so manifests behave as they would in a real cluster."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def default_pod(raw: Mapping[str, Any], uid: str, created: str) -> dict[str, Any]:
    """Namespace, uid, creationTimestamp, phase; container requests default to limits where unset."""
    meta = dict(raw.get("metadata") or {})
    meta.setdefault("namespace", "default")
    meta.setdefault("uid", uid)
    meta.setdefault("creationTimestamp", created)
    spec = dict(raw.get("spec") or {})
    for field in ("containers", "initContainers"):
        if spec.get(field):
            spec[field] = [_default_container(c) for c in spec[field]]
    status = dict(raw.get("status") or {})
    status.setdefault("phase", "Pending")
    return {
        **raw,
        "apiVersion": raw.get("apiVersion", "v1"),
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": status,
    }


def _default_container(c: Mapping[str, Any]) -> Mapping[str, Any]:
    res = c.get("resources") or {}
    limits = res.get("limits") or {}
    if not limits:
        return c
    requests = dict(res.get("requests") or {})
    missing = {k: v for k, v in limits.items() if k not in requests}
    if not missing:
        return c
    requests.update(missing)
    return {**c, "resources": {**res, "requests": requests}}


def default_node(raw: Mapping[str, Any], uid: str, created: str) -> dict[str, Any]:
    meta = dict(raw.get("metadata") or {})
    meta.setdefault("uid", uid)
    meta.setdefault("creationTimestamp", created)
    labels = dict(meta.get("labels") or {})
    if "name" in meta:
        labels.setdefault("kubernetes.io/hostname", meta["name"])
    meta["labels"] = labels
    status = dict(raw.get("status") or {})
    if "allocatable" not in status and "capacity" in status:
        status["allocatable"] = status["capacity"]
    return {
        **raw,
        "apiVersion": raw.get("apiVersion", "v1"),
        "kind": "Node",
        "metadata": meta,
        "status": status,
    }
