"""End-to-end tests on a real control plane (``harmonic.testing.kube``): etcd and kube-apiserver from
``$HARMONIC_KUBE_ASSETS``, else the repository's ``../shared/kube``; skipped, with one summary line, where
there are none.

One control plane per test process, started by the first test that asks for it (so under ``pytest -n 2``
each worker that gets an end-to-end test starts its own, ~300 MB; xdist's ``loadgroup``, which would
keep them on one worker, does not group tests with pytest 9.2 and xdist 3.8 here). Every test using
``control_plane`` is marked ``kube`` (``-m "not kube"`` leaves them out). Tests of one process share the
control plane one after another, so each cleans up what it made (``make_namespace`` and ``nodes``
delete theirs).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harmonic.cluster.transport import ApiStatusError
from harmonic.testing.kube import AssetsMissing, ControlPlane, KubeClient, locate, prepare

from .install import HarmonicInstall

REPO = Path(__file__).resolve().parents[2]
DEFAULT_ASSETS = REPO.parent / "shared" / "kube"
SKIP_PREFIX = "no Kubernetes binaries"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "control_plane" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.kube)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line for all tests skipped for want of binaries, without ``-rs``."""
    skipped = terminalreporter.stats.get("skipped", [])
    reasons = {str(r.longrepr[2]).removeprefix("Skipped: ") for r in skipped if isinstance(r.longrepr, tuple)}
    ours = sorted(r for r in reasons if r.startswith(SKIP_PREFIX))
    if ours:
        count = sum(1 for r in skipped if isinstance(r.longrepr, tuple) and SKIP_PREFIX in str(r.longrepr[2]))
        terminalreporter.write_line(f"{count} end-to-end tests skipped: {ours[0]}")


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    try:
        folder = locate(DEFAULT_ASSETS)
    except AssetsMissing as e:
        pytest.skip(str(e))
    with ControlPlane(prepare(folder), tmp_path_factory.mktemp("kube")) as cp:
        yield cp


@pytest.fixture
def kube(control_plane: ControlPlane) -> KubeClient:
    return control_plane.client()


def delete_if_present(kube: KubeClient, path: str) -> None:
    try:
        kube.delete(path)
    except ApiStatusError as e:
        if e.code != 404:
            raise


def delete_pods(kube: KubeClient, namespace: str) -> None:
    """Delete the namespace's pods at once (no kubelet would ever confirm a graceful deletion)."""
    kube.transport.request(
        "DELETE", f"/api/v1/namespaces/{namespace}/pods", query={"gracePeriodSeconds": 0}, decode=False
    )


@pytest.fixture
def make_namespace(kube: KubeClient, request: pytest.FixtureRequest) -> Iterator[Callable[[str], str]]:
    """``make_namespace(suffix)``: a namespace named after the test (with its default ServiceAccount);
    its pods are deleted afterwards, then the namespace."""
    made: list[str] = []
    # Readable, and unique per test (parametrized ids differ in their tails, which the cut may drop).
    digest = hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:6]
    base = (
        "e2e-"
        + re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:36].strip("-")
        + f"-{digest}"
    )

    def make(suffix: str = "") -> str:
        name = f"{base}-{suffix}" if suffix else base
        kube.namespace(name)
        made.append(name)
        return name

    yield make
    for name in made:
        delete_pods(kube, name)
        kube.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture
def namespace(make_namespace: Callable[[str], str]) -> str:
    """A namespace of the test's own (see ``make_namespace``)."""
    return make_namespace("")


@pytest.fixture
def nodes(kube: KubeClient) -> Iterator[Callable[..., list[dict[str, Any]]]]:
    """``nodes(names, allocatable=None, labels=None)``: Ready nodes, deleted after the test."""
    made: list[str] = []

    def make(names: list[str], **kwargs: Any) -> list[dict[str, Any]]:
        made.extend(names)
        return kube.ready_nodes(names, **kwargs)

    yield make
    for name in made:
        delete_if_present(kube, f"/api/v1/nodes/{name}")


@pytest.fixture
def controllers(control_plane: ControlPlane) -> ControlPlane:
    """kube-controller-manager running (started by the first test asking, kept for the session): the
    PV controller binds claims, the ephemeral-volume controller creates pods' claims."""
    control_plane.start_controller_manager()
    return control_plane


@pytest.fixture(scope="session")
def kube_scheduler(control_plane: ControlPlane) -> str:
    """The real kube-scheduler (default profile) running for the session; its schedulerName."""
    control_plane.start_kube_scheduler({"profiles": [{"schedulerName": "default-scheduler"}]})
    return "default-scheduler"


@pytest.fixture
def harmonic_install(control_plane: ControlPlane, tmp_path: Path) -> HarmonicInstall:
    """deploy/harmonic-scheduler.yaml applied (its RBAC, ServiceAccount and configuration); per test,
    as a fault test may have wiped etcd since."""
    return HarmonicInstall.apply(control_plane, REPO / "deploy" / "harmonic-scheduler.yaml", tmp_path)
