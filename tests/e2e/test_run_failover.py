"""Two ``harmonic run`` replicas with the shipped leader election (its Lease and RBAC), on a real control
plane: one schedules, the other takes over when the leader stops (SIGTERM: the lease is released) or dies
(SIGKILL: the lease expires), and every pod is bound exactly once across the hand-overs."""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from harmonic.cluster.transport import ApiStatusError
from harmonic.testing.kube import KubeClient
from harmonic.testing.kube.processes import Process

from .install import HarmonicInstall, wait_for
from .objects import events, pod, pods_by_name

#: kube-scheduler's 15 s / 10 s / 2 s scaled down 10x, so a SIGKILLed leader's lease expires in seconds.
FAST = {"leaseDuration": "1.5s", "renewDeadline": "1s", "retryPeriod": "0.2s"}


def _holder(kube: KubeClient, lease: dict[str, Any]) -> str:
    path = (
        f"/apis/coordination.k8s.io/v1/namespaces/{lease['resourceNamespace']}/leases/{lease['resourceName']}"
    )
    try:
        got: str = (kube.get(path).get("spec") or {}).get("holderIdentity") or ""
    except ApiStatusError as e:
        if e.code == 404:  # not taken yet
            return ""
        raise
    return got


def test_two_replicas_hand_over_on_sigterm_and_sigkill_and_bind_each_pod_once(
    kube: KubeClient, namespace: str, nodes: Callable[..., Any], harmonic_install: HarmonicInstall
):
    nodes([f"fo-{i}" for i in range(3)], allocatable={"cpu": "8", "memory": "32Gi", "pods": "110"})
    lease = {**harmonic_install.config["leaderElection"], **FAST}
    scheduler = harmonic_install.config["profiles"][0]["schedulerName"]
    created: list[str] = []

    def wave(tag: str, who: Process) -> None:
        names = [f"{tag}-{i}" for i in range(6)]
        kube.create_all(f"/api/v1/namespaces/{namespace}/pods", [pod(n, scheduler) for n in names])
        created.extend(names)
        wait_for(
            lambda: all(p["spec"].get("nodeName") for p in pods_by_name(kube, namespace).values()),
            30, f"wave {tag} bound", who,
        )  # fmt: skip

    with ExitStack() as stack:
        a = stack.enter_context(harmonic_install.running("replica-a", leaderElection=lease))
        wait_for(lambda: _holder(kube, lease) == "replica-a", 30, "replica-a leading", a)
        b = stack.enter_context(harmonic_install.running("replica-b", leaderElection=lease))
        wave("first", a)

        a.stop()  # SIGTERM: the leader releases the lease, the standby takes it at its next retry
        wait_for(lambda: _holder(kube, lease) == "replica-b", 30, "replica-b leading after SIGTERM", b)
        wave("second", b)

        c = stack.enter_context(harmonic_install.running("replica-c", leaderElection=lease))
        assert b.popen is not None
        os.killpg(b.popen.pid, signal.SIGKILL)  # no release: replica-c waits for the lease to expire
        wait_for(lambda: _holder(kube, lease) == "replica-c", 30, "replica-c leading after SIGKILL", c)
        wave("third", c)

        scheduled = wait_for(
            lambda: (got := events(kube, namespace, "Scheduled")) and len(got) >= len(created) and got,
            30, "a Scheduled event per pod",
        )  # fmt: skip
    per_pod = Counter(e["regarding"]["name"] for e in scheduled)
    assert per_pod == Counter(created)  # each exactly once
    final = pods_by_name(kube, namespace)
    assert all(final[n]["spec"]["nodeName"].startswith("fo-") for n in created)
