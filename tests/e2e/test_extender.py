"""``harmonic extender`` behind the real kube-scheduler, configured with kube-scheduler's own
KubeSchedulerConfiguration ``extenders:`` stanza as deploy/kube-scheduler-config.yaml ships it (the URL
pointed at the local process), Harmonic installed from deploy/harmonic-extender.yaml and running as its
ServiceAccount: filter, prioritize, preempt and bind each called; a dead extender skipped when
``ignorable`` and failing the pod, in kube-scheduler's words, when not."""

from __future__ import annotations

import re
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harmonic.testing.kube import ControlPlane, KubeClient
from harmonic.testing.kube.controlplane import free_port
from harmonic.testing.kube.processes import Process

from .install import HarmonicInstall, wait_for
from .objects import condition, events, pod, pods_by_name

REPO = Path(__file__).resolve().parents[2]
#: The profile of the kube-scheduler that calls the extender, and of the extender's configuration (shipped
#: for default-scheduler; renamed so as not to compete with the session's plain kube-scheduler).
KUBE = "extended-scheduler"


def _stanza(url_prefix: str, **overrides: Any) -> dict[str, Any]:
    """The shipped ``extenders:`` entry, its URL replaced (and any field overridden)."""
    doc = yaml.safe_load((REPO / "deploy" / "kube-scheduler-config.yaml").read_text())
    (entry,) = doc["extenders"]
    return {**entry, "urlPrefix": url_prefix, **overrides}


@pytest.fixture(scope="module")
def extender(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``harmonic extender`` with the shipped configuration and RBAC; yields its base URL."""
    folder = tmp_path_factory.mktemp("extender")
    install = HarmonicInstall.apply(control_plane, REPO / "deploy" / "harmonic-extender.yaml", folder)
    config = folder / "config.yaml"
    (profile,) = install.config["profiles"]
    config.write_text(yaml.safe_dump({**install.config, "profiles": [{**profile, "schedulerName": KUBE}]}))
    port = free_port()
    argv = [
        sys.executable, "-m", "harmonic", "extender", f"--config={config}", f"--kubeconfig={install.kubeconfig}",
        "--bind=127.0.0.1", f"--port={port}", "--log-format=text",
    ]  # fmt: skip
    proc = Process("harmonic-extender", argv, folder / "extender.log")
    proc.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _get(f"{url}/readyz") == "ok", 60, "the extender ready", proc)
        yield url
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def kube_scheduler(control_plane: ControlPlane, extender: str) -> Iterator[Process]:
    proc = control_plane.start_kube_scheduler(
        {"profiles": [{"schedulerName": KUBE}], "extenders": [_stanza(f"{extender}/scheduler")]},
        name="kube-scheduler-with-extender",
    )
    yield proc
    proc.stop()


def _get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return str(r.read().decode())
    except OSError:
        return ""


def _calls(extender: str) -> dict[str, int]:
    """Successful extender calls per verb, from its /metrics."""
    out: dict[str, int] = {}
    for m in re.finditer(
        r'harmonic_extender_requests_total\{code="200",verb="(\w+)"\} ([0-9.e+]+)',
        _get(f"{extender}/metrics"),
    ):
        out[m.group(1)] = int(float(m.group(2)))
    return out


def _bound(kube: KubeClient, namespace: str, names: list[str]) -> dict[str, str] | None:
    now = pods_by_name(kube, namespace)
    placed = {n: now[n]["spec"].get("nodeName") for n in names}
    return placed if all(placed.values()) else None  # type: ignore[return-value]


def test_kube_scheduler_filters_prioritizes_and_binds_through_harmonic(
    kube: KubeClient, namespace: str, nodes: Callable[..., Any], extender: str, kube_scheduler: Process
):
    nodes(["ext-a", "ext-b", "ext-c"], allocatable={"cpu": "2", "memory": "8Gi", "pods": "110"})
    before = _calls(extender)
    names = [f"p{i}" for i in range(6)]
    kube.create_all(f"/api/v1/namespaces/{namespace}/pods", [pod(n, KUBE, "500m") for n in names])
    placed = wait_for(lambda: _bound(kube, namespace, names), 30, "the pods bound", kube_scheduler)
    assert set(placed.values()) <= {"ext-a", "ext-b", "ext-c"}

    # The extender counts a call when it has answered it, which can trail the binding a watch sees.
    def counted() -> dict[str, int] | None:
        now = _calls(extender)
        done = all(now.get(v, 0) - before.get(v, 0) >= len(names) for v in ("filter", "prioritize", "bind"))
        return now if done else None

    after = wait_for(counted, 30, "every verb counted for every pod", kube_scheduler)
    for verb in ("filter", "prioritize", "bind"):
        assert after.get(verb, 0) - before.get(verb, 0) >= len(names), (verb, before, after)
    # With a bindVerb kube-scheduler does not bind itself: a pod bound means Harmonic's binding held.
    scheduled = wait_for(
        lambda: len(got := events(kube, namespace, "Scheduled")) >= len(names) and got, 30, "events"
    )
    assert sorted(e["regarding"]["name"] for e in scheduled) == names


def test_kube_scheduler_asks_harmonic_which_preemption_victims_help(
    kube: KubeClient, namespace: str, nodes: Callable[..., Any], extender: str, kube_scheduler: Process
):
    nodes(["xpre-a", "xpre-b"], allocatable={"cpu": "2", "memory": "8Gi", "pods": "110"})
    kube.create(
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        {"metadata": {"name": "e2e-extender-high"}, "value": 1000},
    )
    try:
        lows = ["low-0", "low-1"]
        kube.create_all(f"/api/v1/namespaces/{namespace}/pods", [pod(n, KUBE, "1500m") for n in lows])
        wait_for(lambda: _bound(kube, namespace, lows), 30, "the low-priority pods bound", kube_scheduler)
        before = _calls(extender).get("preempt", 0)
        kube.create(
            f"/api/v1/namespaces/{namespace}/pods",
            pod("high", KUBE, "1", priorityClassName="e2e-extender-high"),
        )
        now = wait_for(
            # kube-scheduler 1.36 preempts asynchronously: the nomination is written before the deletion
            lambda: (got := pods_by_name(kube, namespace))["high"]["status"].get("nominatedNodeName")
            and any(got[n]["metadata"].get("deletionTimestamp") for n in lows) and got,
            30, "the preemptor nominated and a victim terminating", kube_scheduler,
        )  # fmt: skip
        assert _calls(extender).get("preempt", 0) > before
        victims = [n for n in lows if now[n]["metadata"].get("deletionTimestamp")]
        assert len(victims) == 1
        assert now[victims[0]]["spec"]["nodeName"] == now["high"]["status"]["nominatedNodeName"]
    finally:
        kube.delete("/apis/scheduling.k8s.io/v1/priorityclasses/e2e-extender-high")


def test_a_dead_extender_is_skipped_when_ignorable_and_fails_the_pod_when_not(
    control_plane: ControlPlane, kube: KubeClient, namespace: str, nodes: Callable[..., Any]
):
    nodes(["dead-a"], allocatable={"cpu": "2", "memory": "8Gi", "pods": "110"})
    dead = f"http://127.0.0.1:{free_port()}/scheduler"  # nothing listens there
    schedulers = [
        control_plane.start_kube_scheduler(
            {"profiles": [{"schedulerName": name}], "extenders": [_stanza(dead, ignorable=ignorable)]},
            name=f"kube-scheduler-{name}",
        )
        for name, ignorable in (("ignorable", True), ("strict", False))
    ]
    try:
        kube.create(f"/api/v1/namespaces/{namespace}/pods", pod("skips-it", "ignorable"))
        kube.create(f"/api/v1/namespaces/{namespace}/pods", pod("needs-it", "strict"))
        placed = wait_for(
            lambda: _bound(kube, namespace, ["skips-it"]), 60, "the pod bound without the extender"
        )
        assert placed == {"skips-it": "dead-a"}

        def refused() -> dict[str, Any] | None:
            c = condition(pods_by_name(kube, namespace)["needs-it"], "PodScheduled")
            return c if c is not None and c["status"] == "False" else None

        c = wait_for(refused, 60, "the pod refused for want of the extender", schedulers[1])
        assert c["reason"] == "SchedulerError"
        assert f'Post "{dead}/filter"' in c["message"] and "connection refused" in c["message"]
        assert "nodeName" not in pods_by_name(kube, namespace)["needs-it"]["spec"]
    finally:
        for s in schedulers:
            s.stop()
