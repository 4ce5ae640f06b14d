"""End-to-end tests on a real control plane (``harmonic.testing.kube``): etcd and kube-apiserver from
``$HARMONIC_KUBE_ASSETS``, else the repository's ``../shared/kube``; skipped, with one summary line, where
there are none.

One control plane per test process, started by the first test that asks for it: every test using
``control_plane`` is marked ``kube`` and put in one xdist group, so under ``pytest -n 2`` (``--dist
loadgroup``) one worker runs them all against one control plane. Tests share it one after another, so
each cleans up what it made (``namespace`` and ``nodes`` delete theirs).
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

from .harmonic import HarmonicInstall

REPO = Path(__file__).resolve().parents[2]
DEFAULT_ASSETS = REPO.parent / "shared" / "kube"
SKIP_PREFIX = "no Kubernetes binaries"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "control_plane" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.kube)
            item.add_marker(pytest.mark.xdist_group("kube"))


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


@pytest.fixture
def namespace(kube: KubeClient, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the test's own (with its default ServiceAccount); its pods are deleted at once
    afterwards (no kubelet would ever confirm a graceful deletion)."""
    # Truncated names would collide (parametrized tests share a prefix) with a namespace still
    # terminating, which refuses new content: a digest of the full test id keeps each unique.
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:44].strip("-")
    name = f"e2e-{slug}-{hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:6]}"
    kube.namespace(name)
    yield name
    kube.transport.request(
        "DELETE", f"/api/v1/namespaces/{name}/pods", query={"gracePeriodSeconds": 0}, decode=False
    )
    kube.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture
def nodes(kube: KubeClient) -> Iterator[Callable[..., list[dict[str, Any]]]]:
    """``nodes(names, allocatable=None, labels=None)``: Ready nodes, deleted after the test."""
    made: list[str] = []

    def make(names: list[str], **kwargs: Any) -> list[dict[str, Any]]:
        made.extend(names)
        return kube.ready_nodes(names, **kwargs)

    yield make
    for name in made:
        try:
            kube.delete(f"/api/v1/nodes/{name}")
        except ApiStatusError as e:
            if e.code != 404:
                raise


@pytest.fixture(scope="session")
def harmonic_install(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> HarmonicInstall:
    """deploy/harmonic-scheduler.yaml applied (its RBAC, ServiceAccount and configuration)."""
    return HarmonicInstall.apply(
        control_plane, REPO / "deploy" / "harmonic-scheduler.yaml", tmp_path_factory.mktemp("harmonic")
    )
