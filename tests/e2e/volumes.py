"""Storage objects for the volume tests, and the part of an external provisioner a test must play."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from harmonic.api.storage import ANN_SELECTED_NODE
from harmonic.cluster.transport import ApiStatusError
from harmonic.testing.kube import KubeClient

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def on_node(node: str) -> dict[str, Any]:
    """A PV's nodeAffinity to one node (what a local volume carries)."""
    term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
    return {"required": {"nodeSelectorTerms": [term]}}


def pv(
    name: str,
    *,
    size: str = "1Gi",
    storage_class: str = "",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    node: str | None = None,
    labels: Mapping[str, str] | None = None,
    csi_driver: str | None = None,
    claim: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A PersistentVolume: a local volume when ``node`` is given, a CSI one with ``csi_driver``, else a
    hostPath one; pre-bound to ``claim`` (a PVC as the server returned it) when given."""
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": storage_class,
        "persistentVolumeReclaimPolicy": "Retain",
    }
    if node is not None:
        spec["local"] = {"path": f"/mnt/{name}"}
        spec["nodeAffinity"] = on_node(node)
    elif csi_driver is not None:
        spec["csi"] = {"driver": csi_driver, "volumeHandle": name}
    else:
        spec["hostPath"] = {"path": f"/tmp/{name}"}
    if claim is not None:
        meta = claim["metadata"]
        spec["claimRef"] = {"namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
    }


def pvc(
    name: str, *, size: str = "1Gi", storage_class: str = "", modes: tuple[str, ...] = ("ReadWriteOnce",)
) -> dict[str, Any]:
    spec = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
        "storageClassName": storage_class,
    }
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}


def storage_class(name: str, provisioner: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def pod_with(
    name: str, scheduler: str, *claims: str, ephemeral: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A pod mounting ``claims`` (and a generic ephemeral volume from the ``ephemeral`` claim spec)."""
    volumes: list[dict[str, Any]] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    if ephemeral is not None:
        volumes.append({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": dict(ephemeral)}}})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "c",
                    "image": "registry.invalid/pause",
                    "volumeMounts": [{"name": v["name"], "mountPath": f"/{v['name']}"} for v in volumes],
                }
            ],
            "volumes": volumes,
        },
    }


class FakeProvisioner:
    """An external provisioner's part, for claims of ``storage_class`` (no CSI driver runs here): once a
    scheduler's VolumeBinding has written the selected-node annotation on a claim, create a local PV on
    that node pre-bound to it; kube-controller-manager's PV controller then binds the claim to it, and
    the scheduler's PreBind (waiting for exactly that) lets the pod bind."""

    def __init__(self, kube: KubeClient, storage_class: str, poll: float = 0.1) -> None:
        self.kube, self.storage_class, self.poll = kube, storage_class, poll
        self.provisioned: dict[str, str] = {}  # namespace/claim -> node
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-provisioner", daemon=True)

    def __enter__(self) -> FakeProvisioner:
        self._thread.start()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self.poll):
            for claim in self.kube.items("/api/v1/persistentvolumeclaims"):
                meta, spec = claim["metadata"], claim["spec"]
                key = f"{meta['namespace']}/{meta['name']}"
                node = (meta.get("annotations") or {}).get(ANN_SELECTED_NODE)
                if spec.get("storageClassName") != self.storage_class or not node or key in self.provisioned:
                    continue
                size = spec["resources"]["requests"]["storage"]
                volume = pv(
                    f"pvc-{meta['uid']}", size=size, storage_class=self.storage_class, node=node, claim=claim
                )
                try:
                    self.kube.create("/api/v1/persistentvolumes", volume)
                except ApiStatusError as e:
                    if e.code != 409:
                        raise
                self.provisioned[key] = node
