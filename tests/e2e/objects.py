"""Objects and reads the end-to-end tests share: pods, conditions, events, CRDs applied and established."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harmonic.testing.kube import KubeClient, load_manifests

MANIFESTS = Path(__file__).resolve().parent / "manifests"
IMAGE = "registry.invalid/pause"  # never pulled: no kubelet runs


def pod(
    name: str, scheduler: str, cpu: str = "100m", labels: Mapping[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": IMAGE, "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
    }


def pods_by_name(kube: KubeClient, namespace: str) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in kube.items(f"/api/v1/namespaces/{namespace}/pods")}


def condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


def events(kube: KubeClient, namespace: str, reason: str) -> list[dict[str, Any]]:
    """events.k8s.io/v1 Events of ``reason`` about pods of ``namespace`` (what both schedulers write)."""
    return [
        e
        for e in kube.items(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
        if e.get("reason") == reason and e["regarding"]["kind"] == "Pod"
    ]


def set_running(kube: KubeClient, namespace: str, name: str) -> None:
    """What a kubelet would report once the pod's containers start: phase Running, Ready."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ready = [
        {"type": t, "status": "True", "lastTransitionTime": now}
        for t in ("Initialized", "ContainersReady", "Ready")
    ]
    kube.patch(
        f"/api/v1/namespaces/{namespace}/pods/{name}/status",
        {"status": {"phase": "Running", "conditions": ready, "startTime": now}},
        content_type="application/strategic-merge-patch+json",
    )


def apply_crds(kube: KubeClient, file: str, timeout: float = 30.0) -> None:
    """Apply the CustomResourceDefinitions in ``manifests/<file>`` and wait until the server serves them."""
    crds = load_manifests(MANIFESTS / file)
    kube.apply(crds)
    deadline = time.monotonic() + timeout
    for crd in crds:
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}"
        while not (c := condition(kube.get(path), "Established")) or c["status"] != "True":
            if time.monotonic() > deadline:
                raise AssertionError(f"{crd['metadata']['name']} not established after {timeout} s")
            time.sleep(0.1)
