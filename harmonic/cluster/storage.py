"""Storage objects of the in-memory cluster, with the API writes VolumeBinding's PreBind makes and a
stand-in for the PV controller that completes them.

``InMemoryStorage`` is the in-memory cluster's ``"volumes"`` service. ``update_persistent_volume`` /
``update_persistent_volume_claim`` store what the scheduler sends (a PV pre-bound to a claim; a claim
annotated with the node chosen for provisioning). With ``pv_controller`` on (the default) they are then
completed at once as kube-controller-manager's PV controller and an external provisioner would: the
claim is bound to the pre-bound PV, or a PV of the claim's size and class is provisioned for it (with
node affinity to the selected node's hostname). Turn it off to leave bindings pending.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harmonic.api.errors import ObjectError
from harmonic.api.storage import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    PersistentVolume,
    PersistentVolumeClaim,
)
from harmonic.framework.status import Code, Status
from harmonic.framework.volumes import InMemoryVolumes

Obj = Mapping[str, Any]
HOSTNAME_LABEL = "kubernetes.io/hostname"


class InMemoryStorage(InMemoryVolumes):
    def __init__(self) -> None:
        super().__init__()
        self.pv_controller = True

    # ------------------------------------------------------------------ VolumeBindingClient
    def update_persistent_volume(self, raw: Obj) -> Obj | Status:
        name = str((raw.get("metadata") or {}).get("name") or "")
        if self.get("PersistentVolume", name) is None:
            return Status(Code.ERROR, f'persistentvolumes "{name}" not found')
        try:
            pv: PersistentVolume = self.apply({**raw, "kind": "PersistentVolume"})
        except ObjectError as e:
            return Status(Code.ERROR, str(e))
        if self.pv_controller and pv.claim_ref is not None:
            claim = self.pvc(pv.claim_ref.namespace, pv.claim_ref.name)
            if claim is not None:
                self._bind(claim, pv)
        stored: PersistentVolume = self.get("PersistentVolume", name)
        return stored.raw

    def update_persistent_volume_claim(self, raw: Obj) -> Obj | Status:
        meta = raw.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        if self.pvc(namespace, name) is None:
            return Status(Code.ERROR, f'persistentvolumeclaims "{name}" not found')
        try:
            claim: PersistentVolumeClaim = self.apply({**raw, "kind": "PersistentVolumeClaim"})
        except ObjectError as e:
            return Status(Code.ERROR, str(e))
        node = claim.annotations.get(ANN_SELECTED_NODE)
        if self.pv_controller and node and not claim.volume_name:
            self._provision(claim, node)
        stored: PersistentVolumeClaim = self.get("PersistentVolumeClaim", name, namespace)
        return stored.raw

    # ------------------------------------------------------------------ the PV controller's part
    def _provision(self, claim: PersistentVolumeClaim, node: str) -> None:
        sc = self.storage_class(claim.storage_class)
        if sc is None:
            return
        spec: dict[str, Any] = {
            "capacity": {"storage": str(claim.storage_bytes)},
            "accessModes": list(claim.access_modes),
            "storageClassName": claim.storage_class,
            "volumeMode": claim.volume_mode,
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": [node]}]}
                    ]
                }
            },
            "claimRef": {"namespace": claim.namespace, "name": claim.name, "uid": claim.uid},
        }
        pv: PersistentVolume = self.apply(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {
                    "name": f"pvc-{claim.uid or claim.name}",
                    "annotations": {"pv.kubernetes.io/provisioned-by": sc.provisioner},
                },
                "spec": spec,
                "status": {"phase": "Bound"},
            }
        )
        self._bind(claim, pv)

    def _bind(self, claim: PersistentVolumeClaim, pv: PersistentVolume) -> None:
        meta = dict(claim.raw.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), ANN_BIND_COMPLETED: "yes"}
        spec = {**(claim.raw.get("spec") or {}), "volumeName": pv.name}
        status = {**(claim.raw.get("status") or {}), "phase": "Bound"}
        self.apply(
            {**claim.raw, "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec, "status": status}
        )
        pv_status = {**(pv.raw.get("status") or {}), "phase": "Bound"}
        self.apply({**pv.raw, "kind": "PersistentVolume", "status": pv_status})
