"""``harmonic run`` on a real control plane beside the real kube-scheduler: what a user reads when a pod
does not fit, preemption, gangs, and pods that become schedulable when the cluster changes.

One Harmonic (the shipped configuration plus a ``batch`` profile, as its ServiceAccount) and one
kube-scheduler (the default profile, ``default-scheduler``) serve the whole module; each test has its
own namespace and nodes, so the two schedulers see the same cluster when they are compared.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harmonic.cluster.transport import STRATEGIC_MERGE_PATCH
from harmonic.testing.kube import ControlPlane, KubeClient
from harmonic.testing.kube.processes import Process

from .install import HarmonicInstall, wait_for
from .objects import apply_crds, condition, events, pod, pods_by_name, set_running

HARMONIC = "harmonic-scheduler"  # the shipped profile's schedulerName
BATCH = "batch"
SCHEDULER_MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "harmonic-scheduler.yaml"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PG_PATH = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups"
EQ_PATH = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/elasticquotas"
#: What kube-scheduler 1.36's DynamicResources plugin adds to a FitError's PostFilter message when it is
#: enabled (it is, by default): Harmonic has no DynamicResources plugin, so its message lacks it.
DRA_POSTFILTER = "no new claims to deallocate, "


@pytest.fixture(scope="module")
def harmonic(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    """The shipped install (applied once for the module) running with one more profile, ``batch``."""
    install = HarmonicInstall.apply(control_plane, SCHEDULER_MANIFEST, tmp_path_factory.mktemp("harmonic"))
    apply_crds(control_plane.client(), "scheduler-plugins-crds.yaml")
    batch = {
        "schedulerName": BATCH,
        "plugins": {
            "multiPoint": {
                "enabled": [{"name": "Coscheduling"}, {"name": "CapacityScheduling"}],
                "disabled": [{"name": "PrioritySort"}, {"name": "DefaultPreemption"}],
            }
        },
    }
    profiles = [*install.config["profiles"], batch]
    with install.running("harmonic-run", profiles=profiles) as proc:
        yield proc


@pytest.fixture
def priority_class(kube: KubeClient, request: pytest.FixtureRequest) -> Iterator[str]:
    name = "e2e-high-" + re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:40].strip("-")
    kube.create("/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": name}, "value": 1000})
    yield name
    kube.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


def _refusal(kube: KubeClient, ns: str, name: str) -> dict[str, Any] | None:
    c = condition(pods_by_name(kube, ns).get(name, {}), "PodScheduled")
    return c if c is not None and c["status"] == "False" else None


def test_a_pod_that_fits_nowhere_is_reported_in_kube_schedulers_words(
    kube: KubeClient,
    namespace: str,
    nodes: Callable[..., Any],
    harmonic: Process,
    kube_scheduler: str,
):
    """Three nodes, three different reasons: the PodScheduled condition and the FailedScheduling Event
    of Harmonic's pod and of kube-scheduler's twin read alike."""
    alloc = {"cpu": "2", "memory": "8Gi", "pods": "110"}
    nodes(["fit-small"], allocatable=alloc, labels={"disk": "ssd"})
    nodes(["fit-hdd"], allocatable={**alloc, "cpu": "8"}, labels={"disk": "hdd"})
    nodes(["fit-tainted"], allocatable={**alloc, "cpu": "8"}, labels={"disk": "ssd"})
    kube.patch(
        "/api/v1/nodes/fit-tainted",
        {"spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}},
    )
    for who, scheduler in (("h", HARMONIC), ("k", kube_scheduler)):
        kube.create(
            f"/api/v1/namespaces/{namespace}/pods",
            pod(f"{who}-big", scheduler, "4", nodeSelector={"disk": "ssd"}),
        )

    h = wait_for(lambda: _refusal(kube, namespace, "h-big"), 30, "Harmonic's refusal", harmonic)
    k = wait_for(lambda: _refusal(kube, namespace, "k-big"), 30, "kube-scheduler's refusal")
    assert (h["reason"], k["reason"]) == ("Unschedulable", "Unschedulable")
    # kube-scheduler 1.36 records the pod generation it judged (PodObservedGenerationTracking).
    assert h.get("observedGeneration") == k.get("observedGeneration") == 1
    assert h["message"] == k["message"].replace(DRA_POSTFILTER, "")
    assert h["message"].startswith("0/3 nodes are available: 1 Insufficient cpu, ")  # not vacuous

    def failed() -> dict[str, dict[str, Any]] | None:
        found = {e["regarding"]["name"]: e for e in events(kube, namespace, "FailedScheduling")}
        return found if {"h-big", "k-big"} <= found.keys() else None

    by_pod = wait_for(failed, 30, "both FailedScheduling events")
    he, ke = by_pod["h-big"], by_pod["k-big"]
    assert (he["type"], he["action"], he["reportingController"]) == ("Warning", "Scheduling", HARMONIC)
    assert (ke["type"], ke["action"], ke["reportingController"]) == ("Warning", "Scheduling", kube_scheduler)
    assert he["note"] == ke["note"].replace(DRA_POSTFILTER, "") == h["message"]


def test_preemption_nominates_and_deletes_the_victim_gracefully(
    kube: KubeClient, namespace: str, nodes: Callable[..., Any], harmonic: Process, priority_class: str
):
    nodes(["pre-a", "pre-b"], allocatable={"cpu": "2", "memory": "8Gi", "pods": "110"})
    for i in range(2):
        kube.create(f"/api/v1/namespaces/{namespace}/pods", pod(f"low-{i}", HARMONIC, "1500m"))
    wait_for(
        lambda: all(p["spec"].get("nodeName") for p in pods_by_name(kube, namespace).values()),
        30, "the low-priority pods bound", harmonic,
    )  # fmt: skip
    kube.create(
        f"/api/v1/namespaces/{namespace}/pods", pod("high", HARMONIC, "1", priorityClassName=priority_class)
    )

    def nominated() -> dict[str, dict[str, Any]] | None:
        now = pods_by_name(kube, namespace)
        node = now["high"]["status"].get("nominatedNodeName")
        victims = [p for p in now.values() if p["metadata"].get("deletionTimestamp")]
        return now if node and victims else None

    now = wait_for(nominated, 30, "a nominated node and a victim being deleted", harmonic)
    node = now["high"]["status"]["nominatedNodeName"]
    (victim,) = [p for p in now.values() if p["metadata"].get("deletionTimestamp")]
    # Graceful: the pod stays, terminating, until its kubelet confirms (none here) -- not force-deleted.
    assert victim["spec"]["nodeName"] == node
    assert victim["metadata"]["deletionGracePeriodSeconds"] == 30
    target = condition(victim, "DisruptionTarget")
    assert target is not None and target["status"] == "True"
    survivor = next(p for n, p in now.items() if n not in ("high", victim["metadata"]["name"]))
    assert not survivor["metadata"].get("deletionTimestamp")
    assert "nodeName" not in now["high"]["spec"]  # waits for the victim to go
    preempted = wait_for(lambda: events(kube, namespace, "Preempted"), 30, "the victim's Preempted event")
    assert [e["regarding"]["name"] for e in preempted] == [victim["metadata"]["name"]]

    # The kubelet's part: the victim's containers stopped, the pod removed.
    kube.transport.request(
        "DELETE",
        f"/api/v1/namespaces/{namespace}/pods/{victim['metadata']['name']}",
        query={"gracePeriodSeconds": 0},
        decode=False,
    )
    bound = wait_for(
        lambda: pods_by_name(kube, namespace)["high"]["spec"].get("nodeName"),
        30,
        "the preemptor bound",
        harmonic,
    )
    assert bound == node


@pytest.mark.xfail(
    strict=True,
    reason="Harmonic evicts victims through the Eviction API (which honours PodDisruptionBudgets): the "
    "server marks them DisruptionTarget=EvictionByEvictionAPI; kube-scheduler patches "
    "PreemptionByScheduler and deletes",
)
def test_preemption_victims_are_marked_as_kube_scheduler_marks_them(
    kube: KubeClient, namespace: str, nodes: Callable[..., Any], harmonic: Process, priority_class: str
):
    nodes(["mark-a"], allocatable={"cpu": "2", "memory": "8Gi", "pods": "110"})
    kube.create(f"/api/v1/namespaces/{namespace}/pods", pod("low", HARMONIC, "1500m"))
    wait_for(lambda: pods_by_name(kube, namespace)["low"]["spec"].get("nodeName"), 30, "low bound", harmonic)
    kube.create(
        f"/api/v1/namespaces/{namespace}/pods", pod("high", HARMONIC, "1", priorityClassName=priority_class)
    )
    victim = wait_for(
        lambda: (p := pods_by_name(kube, namespace)["low"])["metadata"].get("deletionTimestamp") and p,
        30, "the victim terminating", harmonic,
    )  # fmt: skip
    target = condition(victim, "DisruptionTarget")
    assert target is not None
    assert (target["reason"], target["message"]) == (
        "PreemptionByScheduler",
        f"{HARMONIC}: preempting to accommodate a higher priority pod",
    )


def test_a_preemptor_waiting_for_its_victim_does_not_preempt_again(
    kube: KubeClient, namespace: str, nodes: Callable[..., Any], harmonic: Process, priority_class: str
):
    """While a victim terminates (no kubelet here finishes it), a retry of the preemptor must not evict
    more pods elsewhere: kube-scheduler's PodEligibleToPreemptOthers waits for the victims on the
    nominated node."""
    nodes(["again-a", "again-b", "again-c"], allocatable={"cpu": "2", "memory": "8Gi", "pods": "110"})
    lows = [f"low-{i}" for i in range(3)]
    kube.create_all(f"/api/v1/namespaces/{namespace}/pods", [pod(n, HARMONIC, "1500m") for n in lows])
    kube.create(f"/api/v1/namespaces/{namespace}/pods", pod("tiny", HARMONIC, "10m"))
    wait_for(
        lambda: all(p["spec"].get("nodeName") for p in pods_by_name(kube, namespace).values()),
        30, "the pods bound", harmonic,
    )  # fmt: skip
    kube.create(
        f"/api/v1/namespaces/{namespace}/pods", pod("high", HARMONIC, "1", priorityClassName=priority_class)
    )

    def victims() -> list[str]:
        return [n for n, p in pods_by_name(kube, namespace).items() if p["metadata"].get("deletionTimestamp")]

    wait_for(victims, 30, "a victim terminating", harmonic)
    # An assigned pod deleted requeues the preemptor (NodeResourcesFit's hint) while its victim
    # still terminates.
    kube.transport.request(
        "DELETE", f"/api/v1/namespaces/{namespace}/pods/tiny", query={"gracePeriodSeconds": 0}, decode=False
    )
    wait_for(lambda: _attempts(kube, namespace, "high") >= 2, 30, "the preemptor retried", harmonic)
    assert len(victims()) == 1


def _attempts(kube: KubeClient, ns: str, name: str) -> int:
    """Failed scheduling attempts of a pod, from its FailedScheduling events (a repeated one counted by
    its series)."""
    return sum(
        (e.get("series") or {}).get("count", 1)
        for e in events(kube, ns, "FailedScheduling")
        if e["regarding"]["name"] == name
    )


def test_a_gang_waits_for_its_members_and_its_podgroup_status_is_written(
    kube: KubeClient, namespace: str, nodes: Callable[..., Any], harmonic: Process
):
    nodes(["gang-a", "gang-b"], allocatable={"cpu": "2", "memory": "8Gi", "pods": "110"})
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "g"}}
    kube.create(PG_PATH.format(ns=namespace), {**group, "spec": {"minMember": 3}})
    quota = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "ElasticQuota", "metadata": {"name": "q"}}
    kube.create(EQ_PATH.format(ns=namespace), {**quota, "spec": {"min": {"cpu": "2"}, "max": {"cpu": "2"}}})
    member = {GROUP_LABEL: "g"}
    for i in range(2):
        kube.create(f"/api/v1/namespaces/{namespace}/pods", pod(f"m{i}", BATCH, "500m", labels=member))

    def group_status() -> dict[str, Any]:
        got: dict[str, Any] = kube.get(f"{PG_PATH.format(ns=namespace)}/g").get("status") or {}
        return got

    refusal = wait_for(lambda: _refusal(kube, namespace, "m0"), 30, "m0 refused", harmonic)
    assert "cannot find enough sibling pods" in refusal["message"]
    assert wait_for(lambda: group_status().get("phase"), 30, "the group's phase") == "Pending"
    assert not any(p["spec"].get("nodeName") for p in pods_by_name(kube, namespace).values())

    kube.create(f"/api/v1/namespaces/{namespace}/pods", pod("m2", BATCH, "500m", labels=member))
    wait_for(
        lambda: all(p["spec"].get("nodeName") for p in pods_by_name(kube, namespace).values()),
        30, "the whole gang bound", harmonic,
    )  # fmt: skip
    assert wait_for(lambda: group_status().get("phase") == "Scheduling" and group_status(), 30, "Scheduling")
    for name in ("m0", "m1", "m2"):
        set_running(kube, namespace, name)
    running = wait_for(lambda: (s := group_status()).get("phase") == "Running" and s, 30, "Running", harmonic)
    assert running["running"] == 3
    assert running["scheduleStartTime"]

    # The quota's max (2 CPUs) holds 1.5 used + 0.5 more, not 1 more.
    kube.create(f"/api/v1/namespaces/{namespace}/pods", pod("over", BATCH, "1"))
    over = wait_for(lambda: _refusal(kube, namespace, "over"), 30, "the pod over quota refused", harmonic)
    assert (
        f"because ElasticQuota {namespace} is more than Max" in over["message"]
    )  # upstream names the namespace


@pytest.mark.parametrize("change", ["label an existing node", "add a node"])
def test_an_unschedulable_pod_is_bound_as_soon_as_the_cluster_changes(
    change: str, kube: KubeClient, namespace: str, nodes: Callable[..., Any], harmonic: Process
):
    """Queueing hints: the node event moves the pod back to the active queue at once, long before the
    five minutes after which unschedulable pods are retried anyway."""
    nodes(["hint-a"], allocatable={"cpu": "2", "memory": "8Gi", "pods": "110"})
    kube.create(
        f"/api/v1/namespaces/{namespace}/pods", pod("wants-ssd", HARMONIC, nodeSelector={"disk": "ssd"})
    )
    wait_for(lambda: _refusal(kube, namespace, "wants-ssd"), 30, "the pod refused first", harmonic)
    if change == "add a node":
        nodes(["hint-b"], labels={"disk": "ssd"})
        expected = "hint-b"
    else:
        kube.patch(
            "/api/v1/nodes/hint-a",
            {"metadata": {"labels": {"disk": "ssd"}}},
            content_type=STRATEGIC_MERGE_PATCH,
        )
        expected = "hint-a"
    got = wait_for(
        lambda: pods_by_name(kube, namespace)["wants-ssd"]["spec"].get("nodeName"),
        30,
        "the pod bound",
        harmonic,
    )
    assert got == expected
    scheduled = wait_for(lambda: events(kube, namespace, "Scheduled"), 30, "the Scheduled event")
    assert [e["regarding"]["name"] for e in scheduled] == ["wants-ssd"]
