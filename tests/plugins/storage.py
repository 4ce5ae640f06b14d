"""Manifest builders for storage objects in the volume plugins' tests (upstream's makePVC/makePV...)."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
WFFC, IMMEDIATE = "WaitForFirstConsumer", "Immediate"


def pvc(
    name: str,
    *,
    namespace: str = "default",
    sc: str | None = None,
    size: str | None = "1Gi",
    volume: str = "",
    bound: bool = False,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    annotations: dict[str, str] | None = None,
    uid: str = "",
    phase: str = "",
    owner: str = "",
) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"}
    ann = dict(annotations or {})
    if bound:
        ann["pv.kubernetes.io/bind-completed"] = "yes"
    if ann:
        meta["annotations"] = ann
    if owner:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "p", "uid": owner, "controller": True}]
    spec: Obj = {"accessModes": list(modes)}
    if sc is not None:
        spec["storageClassName"] = sc
    if size is not None:
        spec["resources"] = {"requests": {"storage": size}}
    if volume:
        spec["volumeName"] = volume
    out: Obj = {"metadata": meta, "spec": spec}
    if phase or bound:
        out["status"] = {"phase": phase or "Bound"}
    return out


def pv(
    name: str,
    *,
    sc: str = "",
    size: str = "1Gi",
    claim: tuple[str, str] | None = None,
    claim_uid: str = "",
    phase: str = "Available",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    labels: dict[str, str] | None = None,
    affinity: dict[str, list[str]] | None = None,
    csi: tuple[str, str] | None = None,
    source: Obj | None = None,
) -> Obj:
    spec: Obj = {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": sc}
    if claim is not None:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1], "uid": claim_uid}
    if affinity:
        exprs = [{"key": k, "operator": "In", "values": v} for k, v in affinity.items()]
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}
    if csi is not None:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    if source:
        spec.update(source)
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def storage_class(
    name: str,
    mode: str | None = WFFC,
    provisioner: str = "kubernetes.io/no-provisioner",
    topologies: list[dict[str, list[str]]] | None = None,
) -> Obj:
    out: Obj = {"metadata": {"name": name}, "provisioner": provisioner}
    if mode is not None:
        out["volumeBindingMode"] = mode
    if topologies is not None:
        out["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": k, "values": v} for k, v in t.items()]} for t in topologies
        ]
    return out


def csi_node(name: str, limits: dict[str, int | None], annotations: dict[str, str] | None = None) -> Obj:
    drivers = []
    for driver, count in limits.items():
        d: Obj = {"name": driver, "nodeID": name}
        if count is not None:
            d["allocatable"] = {"count": count}
        drivers.append(d)
    meta: Obj = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": {"drivers": drivers}}


def claim_volume(claim: str, name: str = "") -> Obj:
    return {"name": name or claim, "persistentVolumeClaim": {"claimName": claim}}


def pod_with(name: str, volumes: list[Obj], node: str = "", namespace: str = "default") -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "pause"}], "volumes": volumes}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"}, "spec": spec}


def node(name: str, labels: dict[str, str] | None = None) -> Obj:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }
