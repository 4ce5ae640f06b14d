"""The fault suite (``tests/cluster/test_faults_live.py``) against a real kube-apiserver: the same tests,
with the fault proxy in front of the real control plane (HTTPS, the admin's client certificate)."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harmonic.testing.faultproxy import FaultProxy
from harmonic.testing.kube import AssetsMissing, ControlPlane, KubeClient, locate, prepare
from tests.cluster import test_faults_live as suite
from tests.cluster.test_faults_live import (  # noqa: F401  (the suite's tests and fixtures, collected here)
    harmonic,
    proxy,
    test_410_on_every_watch,
    test_429_with_retry_after,
    test_504_too_large_resource_version,
    test_dropped_binding_answer,
    test_every_stream_cut_again_and_again,
    test_hung_binding_answer,
    test_refused_lists_and_watches_make_readyz_fail_until_they_work,
    test_stalled_watch,
)

from .conftest import DEFAULT_ASSETS


class RealBackend:
    """A real control plane; pods in ``namespace``, nodes named ``faults-n<i>``."""

    def __init__(self, cp: ControlPlane, kube: KubeClient, namespace: str) -> None:
        self.cp, self.kube, self.namespace = cp, kube, namespace
        self.url, self.token, self.tls = cp.url, None, kube.transport.tls_context
        self.node_names: list[str] = []

    def nodes(self, n: int) -> None:
        self.node_names = [f"faults-n{i}" for i in range(n)]
        self.kube.ready_nodes(self.node_names, allocatable={"cpu": "8", "memory": "32Gi", "pods": "110"})

    def pods(self, names: list[str]) -> None:
        self.kube.create_all(f"/api/v1/namespaces/{self.namespace}/pods", [_pod(n) for n in names])

    def placement(self) -> dict[str, str]:
        pods = self.kube.items(f"/api/v1/namespaces/{self.namespace}/pods")
        return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")}

    def _events(self, reason: str) -> list[dict[str, Any]]:
        events = self.kube.items(f"/apis/events.k8s.io/v1/namespaces/{self.namespace}/events")
        return [e for e in events if e.get("reason") == reason]

    def bindings_per_pod(self) -> Counter[str]:
        # A second Binding of a pod is refused by the server (409): one Scheduled event per binding.
        return Counter(e["regarding"]["name"] for e in self._events("Scheduled"))

    def failed_scheduling(self) -> list[str]:
        return [str(e.get("note") or "") for e in self._events("FailedScheduling")]

    def pod_scheduled(self, name: str) -> list[str]:
        p = self.kube.get(f"/api/v1/namespaces/{self.namespace}/pods/{name}")
        return [c["status"] for c in p["status"].get("conditions") or [] if c["type"] == "PodScheduled"]

    def restart_with_fresh_state(self) -> None:
        self.cp.wipe_etcd(restart_apiserver=True)
        self.kube.namespace(self.namespace)
        if self.node_names:
            self.nodes(len(self.node_names))


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "harmonic",
            "containers": [
                {"name": "c", "image": "registry.invalid/pause", "resources": {"requests": {"cpu": "100m"}}}
            ],
        },
    }


@pytest.fixture
def backend(control_plane: ControlPlane, kube: KubeClient) -> Iterator[RealBackend]:
    # A namespace per test, named apart from the shared fixture's (which truncates parametrized names
    # to the same one: the second case would meet the first still terminating).
    namespace = f"faults-{next(_SERIAL)}"
    kube.namespace(namespace)
    b = RealBackend(control_plane, kube, namespace)
    yield b
    kube.transport.request(
        "DELETE", f"/api/v1/namespaces/{namespace}/pods", query={"gracePeriodSeconds": 0}, decode=False
    )
    kube.delete(f"/api/v1/namespaces/{namespace}")
    for name in b.node_names:
        kube.delete(f"/api/v1/nodes/{name}")


_SERIAL = itertools.count()
#: The wipe keeps kube-apiserver away longer than kube-scheduler's renew deadline (10 s): a scheduler
#: with leader election loses its lease and exits then, as upstream's does. This case is about what comes
#: back, so it runs without leader election.
NO_LEADER_ELECTION = {"leaderElect": False}


def test_server_restarted_with_fresh_state(tmp_path: Path):
    """etcd wiped and kube-apiserver restarted, on a control plane of its own (the shared one keeps the
    other tests' objects)."""
    try:
        folder = locate(DEFAULT_ASSETS)
    except AssetsMissing as e:
        pytest.skip(str(e))
    with ControlPlane(prepare(folder), tmp_path / "kube") as cp:
        kube = cp.client()
        kube.namespace("faults")
        backend = RealBackend(cp, kube, "faults")
        with (
            FaultProxy(backend.url, upstream_tls=backend.tls) as p,
            # kube-apiserver answers a list at a resourceVersion it has not reached after 3 s: the
            # suite's 1 s request timeout would never hear it.
            suite.harmonic_through(p, backend, tmp_path, NO_LEADER_ELECTION, timeout=10.0) as r,
        ):
            suite.test_server_restarted_with_fresh_state(backend, p, r)
