"""``harmonic reschedule`` on a real control plane with kube-controller-manager: evictions through the
Eviction API against a PodDisruptionBudget whose status the disruption controller keeps, and the
ReplicaSet controller's replacement bound by ``harmonic run`` where the rescheduler's what-if said.

The rescheduler is installed from deploy/harmonic-rescheduler.yaml (its policy, configuration, RBAC)
and runs as its ServiceAccount; no kubelet runs, so the test reports the pods Running and Ready itself
(the disruption controller counts only those as healthy).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harmonic.cluster.transport import ApiStatusError, Transport, load_client
from harmonic.testing.apiserver import ApiServerDouble
from harmonic.testing.kube import ControlPlane, KubeClient, load_manifests
from harmonic.testing.kube.processes import Process

from .install import HarmonicInstall, wait_for
from .objects import pod, pods_by_name, set_running

REPO = Path(__file__).resolve().parents[2]
TAINT = {"key": "e2e/drain", "value": "yes", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def harmonic(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    manifest = REPO / "deploy" / "harmonic-scheduler.yaml"
    install = HarmonicInstall.apply(control_plane, manifest, tmp_path_factory.mktemp("harmonic"))
    with install.running("harmonic-for-reschedule") as proc:
        yield proc


@pytest.fixture(scope="module")
def rescheduler(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Any]:
    """``reschedule(*flags)``: one ``harmonic reschedule --once --json`` cycle with the shipped policy
    and configuration, as the rescheduler's ServiceAccount; returns the plan."""
    folder = tmp_path_factory.mktemp("rescheduler")
    manifest = REPO / "deploy" / "harmonic-rescheduler.yaml"
    install = HarmonicInstall.apply(control_plane, manifest, folder)
    (config_map,) = (o for o in load_manifests(manifest) if o["kind"] == "ConfigMap")
    policy = folder / "policy.yaml"
    policy.write_text(config_map["data"]["policy.yaml"])
    config = folder / "config.yaml"
    config.write_text(yaml.safe_dump(install.config))

    def reschedule(*flags: str) -> dict[str, Any]:
        argv = [sys.executable, "-m", "harmonic", "reschedule", f"--policy={policy}", f"--config={config}",
                f"--kubeconfig={install.kubeconfig}", "--once", "--json", "--port=0", *flags]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        plan: dict[str, Any] = json.loads(done.stdout)
        return plan

    return reschedule


def _replica_set(name: str, replicas: int, scheduler: str) -> dict[str, Any]:
    template = pod(name, scheduler, "500m", labels={"app": name})
    template["metadata"].pop("name")
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template},
    }


def _active(kube: KubeClient, ns: str) -> dict[str, dict[str, Any]]:
    return {n: p for n, p in pods_by_name(kube, ns).items() if not p["metadata"].get("deletionTimestamp")}


def test_evictions_keep_the_budget_and_replacements_land_where_the_what_if_said(
    kube: KubeClient,
    namespace: str,
    nodes: Callable[..., Any],
    controllers: ControlPlane,
    harmonic: Process,
    rescheduler: Callable[..., dict[str, Any]],
):
    names = ["rs-a", "rs-b", "rs-c"]
    nodes(names, allocatable={"cpu": "2", "memory": "8Gi", "pods": "110"})
    scheduler = "harmonic-scheduler"
    kube.create(f"/apis/apps/v1/namespaces/{namespace}/replicasets", _replica_set("web", 3, scheduler))
    placed = wait_for(
        lambda: len(got := _active(kube, namespace)) == 3 and all(p["spec"].get("nodeName") for p in got.values()) and got,
        60, "three replicas bound", harmonic,
    )  # fmt: skip
    for name in placed:
        set_running(kube, namespace, name)
    pdb_path = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"
    kube.create(
        pdb_path,
        {
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
        },
    )

    def budget() -> dict[str, Any]:
        status: dict[str, Any] = kube.get(f"{pdb_path}/web").get("status") or {}
        return status

    # The disruption controller's accounting, not the test's: 3 healthy, 2 desired, 1 disruption allowed.
    wait_for(
        lambda: budget().get("currentHealthy") == 3 and budget().get("disruptionsAllowed") == 1,
        60,
        "PDB status",
    )

    # Two nodes drained by a taint the pods do not tolerate: the policy's RemovePodsViolatingNodeTaints
    # wants both pods off them; the budget allows one.
    by_node = {p["spec"]["nodeName"]: n for n, p in placed.items()}
    drained = sorted(by_node)[:2]
    for node in drained:
        kube.patch(f"/api/v1/nodes/{node}", {"spec": {"taints": [TAINT]}})

    dry = rescheduler("--dry-run")
    candidates = {e["pod"].split("/")[1] for e in dry["evictions"]}
    assert candidates <= {by_node[n] for n in drained} and candidates

    done = rescheduler()
    (evicted,) = done["evictions"]  # the budget allows one
    victim = evicted["pod"].split("/")[1]
    assert evicted["from"] in drained and evicted["to"]
    assert evicted["to"] not in drained
    gone = pods_by_name(kube, namespace)[victim]
    assert gone["metadata"].get("deletionTimestamp")  # graceful: the kubelet would finish it
    assert wait_for(lambda: budget().get("disruptionsAllowed") == 0 and budget(), 30, "the budget spent")

    # The other drained pod: the Eviction API itself refuses, with 429 and the budget as the cause.
    other = next(by_node[n] for n in drained if by_node[n] != victim)
    with pytest.raises(ApiStatusError) as refused:
        kube.create(
            f"/api/v1/namespaces/{namespace}/pods/{other}/eviction",
            {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": other, "namespace": namespace},
            },
        )
    assert refused.value.code == 429
    assert "Cannot evict pod as it would violate the pod's disruption budget." in str(refused.value)

    # The ReplicaSet controller replaces the evicted pod at once (a terminating pod is not active);
    # Harmonic binds the replacement where the rescheduler's what-if put it.
    def replacement() -> dict[str, Any] | None:
        new = [p for n, p in _active(kube, namespace).items() if n not in placed]
        return new[0] if new and new[0]["spec"].get("nodeName") else None

    new = wait_for(replacement, 60, "the replacement bound", harmonic)
    assert new["spec"]["nodeName"] == evicted["to"]


def test_a_job_pod_evicted_off_a_tainted_node_is_replaced_where_the_what_if_said(
    kube: KubeClient,
    namespace: str,
    nodes: Callable[..., Any],
    controllers: ControlPlane,
    harmonic: Process,
    rescheduler: Callable[..., dict[str, Any]],
):
    nodes(["job-a", "job-b"], allocatable={"cpu": "2", "memory": "8Gi", "pods": "110"})
    template = pod("worker", "harmonic-scheduler", "500m", labels={"app": "worker"}, restartPolicy="Never")
    template["metadata"].pop("name")
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "worker"},
        "spec": {"template": template},
    }
    kube.create(f"/apis/batch/v1/namespaces/{namespace}/jobs", job)
    (first,) = wait_for(
        lambda: [p for p in _active(kube, namespace).values() if p["spec"].get("nodeName")],
        60, "the Job's pod bound", harmonic,
    )  # fmt: skip
    name = first["metadata"]["name"]
    set_running(kube, namespace, name)
    kube.patch(f"/api/v1/nodes/{first['spec']['nodeName']}", {"spec": {"taints": [TAINT]}})

    (evicted,) = rescheduler()["evictions"]
    assert evicted["pod"] == f"{namespace}/{name}"
    assert evicted["from"] == first["spec"]["nodeName"] and evicted["to"] not in ("", None, evicted["from"])
    # The Job controller counts the evicted pod as failed and starts another (after its failure backoff).
    new = wait_for(
        lambda: [p for n, p in _active(kube, namespace).items() if n != name and p["spec"].get("nodeName")],
        90, "the replacement bound", harmonic,
    )  # fmt: skip
    assert [p["spec"]["nodeName"] for p in new] == [evicted["to"]]


def test_the_double_refuses_an_eviction_as_kube_apiserver_does(
    kube: KubeClient, namespace: str, nodes: Callable[..., Any], controllers: ControlPlane, tmp_path: Path
):
    """A PodDisruptionBudget with no disruption allowed: the same 429, reason, message and causes from
    the double as from kube-apiserver (the double given the status the disruption controller wrote)."""
    nodes(["evict-a"])
    web = pod("web", "harmonic-scheduler", labels={"app": "web"}, nodeName="evict-a")
    kube.create(f"/api/v1/namespaces/{namespace}/pods", web)
    set_running(kube, namespace, "web")
    pdb = {
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    }
    pdb_path = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"
    kube.create(pdb_path, pdb)
    status = wait_for(
        lambda: (s := kube.get(f"{pdb_path}/web").get("status") or {}).get("currentHealthy") == 1 and s,
        60, "the disruption controller's status",
    )  # fmt: skip
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web", "namespace": namespace},
    }

    def refusal(t: Transport, ns: str) -> tuple[Any, ...]:
        with pytest.raises(ApiStatusError) as err:
            t.request(
                "POST",
                f"/api/v1/namespaces/{ns}/pods/web/eviction",
                body={**eviction, "metadata": {"name": "web", "namespace": ns}},
            )
        e = err.value
        return e.code, e.reason, e.message, e.details.get("causes")

    real = refusal(kube.transport, namespace)
    with ApiServerDouble() as api:
        api.create(
            "pods",
            {**web, "metadata": {**web["metadata"], "namespace": "default"}, "status": {"phase": "Running"}},
        )
        api.create(
            "poddisruptionbudgets",
            {**pdb, "metadata": {"name": "web", "namespace": "default"}, "status": status},
        )
        t = Transport(load_client(str(api.kubeconfig(tmp_path / "double.kubeconfig"))), qps=-1)
        assert refusal(t, "default") == real
