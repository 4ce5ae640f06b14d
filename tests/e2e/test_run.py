"""``harmonic run`` on a real control plane, installed from deploy/ and running as its ServiceAccount."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from harmonic.testing.kube import KubeClient

from .install import HarmonicInstall, wait_for


def _pod(name: str, scheduler: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {"name": "c", "image": "registry.invalid/pause", "resources": {"requests": {"cpu": cpu}}}
            ],
        },
    }


def _condition(pod: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in pod.get("status", {}).get("conditions") or [] if c["type"] == kind), None)


def test_binds_each_pod_once_with_events_and_condition(
    kube: KubeClient, namespace: str, nodes: Callable[..., Any], harmonic_install: HarmonicInstall
):
    names = [f"bind-{i}" for i in range(3)]
    nodes(names, allocatable={"cpu": "2", "memory": "8Gi", "pods": "110"})
    scheduler = harmonic_install.config["profiles"][0]["schedulerName"]
    pods = [f"p{i}" for i in range(9)]
    kube.create_all(f"/api/v1/namespaces/{namespace}/pods", [_pod(p, scheduler, "500m") for p in pods])
    kube.create(f"/api/v1/namespaces/{namespace}/pods", _pod("too-big", scheduler, "64"))

    def listed() -> dict[str, dict[str, Any]]:
        return {p["metadata"]["name"]: p for p in kube.items(f"/api/v1/namespaces/{namespace}/pods")}

    def settled() -> dict[str, dict[str, Any]] | None:
        now = listed()
        bound = all(now[p]["spec"].get("nodeName") for p in pods)
        refused = _condition(now["too-big"], "PodScheduled")
        return now if bound and refused is not None else None

    with harmonic_install.running() as harmonic:
        final = wait_for(settled, 60, "every pod bound and too-big refused", harmonic)
        events = wait_for(
            lambda: _events_by_reason(kube, namespace, len(pods)), 30, "a Scheduled event per pod", harmonic
        )

    for p in pods:
        assert final[p]["spec"]["nodeName"] in names
        assert _condition(final[p], "PodScheduled") is not None
        assert _condition(final[p], "PodScheduled")["status"] == "True"
    # 9 pods of 500m on three 2-CPU nodes: the capacity holds all of them, however they are spread.
    assert max(Counter(final[p]["spec"]["nodeName"] for p in pods).values()) <= 4
    assert events["Scheduled"] == Counter(pods)  # exactly one each: each pod bound once
    refused = _condition(final["too-big"], "PodScheduled")
    assert refused is not None
    assert (refused["status"], refused["reason"]) == ("False", "Unschedulable")
    assert "too-big" not in events["Scheduled"] and events["FailedScheduling"]["too-big"] >= 1
    assert "nodeName" not in final["too-big"]["spec"]


def _events_by_reason(kube: KubeClient, namespace: str, scheduled: int) -> dict[str, Counter[str]] | None:
    """Pod name counts per reason, from events.k8s.io/v1 (what kube-scheduler and Harmonic write);
    None until ``scheduled`` Scheduled events and a FailedScheduling one are there."""
    out: dict[str, Counter[str]] = {"Scheduled": Counter(), "FailedScheduling": Counter()}
    for e in kube.items(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"):
        if e.get("reason") in out and e["regarding"]["kind"] == "Pod":
            out[e["reason"]][e["regarding"]["name"]] += 1
    done = sum(out["Scheduled"].values()) >= scheduled and out["FailedScheduling"]
    return out if done else None
