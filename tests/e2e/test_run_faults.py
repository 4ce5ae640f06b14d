"""``harmonic run`` across control-plane faults: kube-apiserver restarted on the same port, and etcd
wiped and recreated under it (every object gone, resourceVersions starting again from the beginning,
what restoring an old backup or rebuilding etcd looks like). Harmonic runs as its ServiceAccount from a
kubeconfig whose ``tokenFile`` the test rewrites, as a kubelet rotates a mounted token, so it can
authenticate again once the wipe has re-created its ServiceAccount."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from harmonic.testing.kube import ControlPlane, KubeClient
from harmonic.testing.kube.pki import kubeconfig
from harmonic.testing.kube.processes import Process

from .install import HarmonicInstall, wait_for
from .objects import events, pod, pods_by_name

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "deploy" / "harmonic-scheduler.yaml"
ALLOC = {"cpu": "8", "memory": "32Gi", "pods": "110"}


class _Harmonic:
    def __init__(self, install: HarmonicInstall, kube: KubeClient, folder: Path) -> None:
        self.install, self.kube = install, kube
        self.token = folder / "token"
        self.kubeconfig = kubeconfig(
            folder / "rotating.kubeconfig",
            kube.transport.host,
            install.control_plane.pki.ca,
            {"tokenFile": str(self.token)},
        )
        self.config = folder / "config.yaml"
        # The shipped leader election (kube-scheduler's 15 s / 10 s / 2 s): a restart shorter than the
        # renew deadline must not cost the lease.
        client = {"kubeconfig": str(self.kubeconfig)}
        self.config.write_text(yaml.safe_dump({**install.config, "clientConnection": client}))
        self.scheduler: str = install.config["profiles"][0]["schedulerName"]
        self.rotate()

    def rotate(self) -> None:
        """A fresh token of the ServiceAccount in the token file."""
        self.token.write_text(self.kube.token("harmonic-system", "harmonic-scheduler"))

    @contextmanager
    def running(self, folder: Path) -> Iterator[Process]:
        argv = [
            sys.executable,
            "-m",
            "harmonic",
            "run",
            f"--config={self.config}",
            "--metrics-port=0",
            "--identity=faults",
        ]
        proc = Process("harmonic-faults", argv, folder / "harmonic-faults.log")
        proc.start()
        try:
            yield proc
        finally:
            proc.stop()


@pytest.fixture
def harmonic(
    harmonic_install: HarmonicInstall, kube: KubeClient, tmp_path: Path
) -> Iterator[tuple[_Harmonic, Process]]:
    h = _Harmonic(harmonic_install, kube, tmp_path)
    with h.running(tmp_path) as proc:
        yield h, proc


def _wave(kube: KubeClient, ns: str, scheduler: str, names: list[str], proc: Process) -> int:
    """Create ``names`` and wait until all are bound, restarting Harmonic whenever it exits (as the
    kubelet restarts its container: Harmonic, like kube-scheduler, exits 1 when it loses its lease);
    returns how many restarts that took."""
    restarts = 0

    def bound() -> bool:
        nonlocal restarts
        if not proc.alive():
            restarts += 1
            proc.start()
        return all(pods_by_name(kube, ns)[n]["spec"].get("nodeName") for n in names)

    kube.create_all(f"/api/v1/namespaces/{ns}/pods", [pod(n, scheduler) for n in names])
    wait_for(bound, 90, f"{names} bound")
    return restarts


def _scheduled_once(kube: KubeClient, ns: str, names: list[str]) -> None:
    got = wait_for(
        # Events written while the API server was away are retried with backoff: give them time.
        lambda: len(e := events(kube, ns, "Scheduled")) >= len(names) and e,
        90,
        "Scheduled events",
    )
    assert Counter(e["regarding"]["name"] for e in got) == Counter(names)


def test_scheduling_resumes_after_an_apiserver_restart(
    control_plane: ControlPlane,
    kube: KubeClient,
    namespace: str,
    nodes: Callable[..., Any],
    harmonic: tuple[_Harmonic, Process],
):
    h, proc = harmonic
    nodes(["restart-a", "restart-b"], allocatable=ALLOC)
    _wave(kube, namespace, h.scheduler, ["before-0", "before-1", "before-2"], proc)
    control_plane.restart_apiserver()
    _wave(kube, namespace, h.scheduler, ["after-0", "after-1", "after-2"], proc)
    _scheduled_once(kube, namespace, ["before-0", "before-1", "before-2", "after-0", "after-1", "after-2"])


def test_scheduling_resumes_after_etcd_is_wiped(
    control_plane: ControlPlane,
    kube: KubeClient,
    namespace: str,
    nodes: Callable[..., Any],
    harmonic: tuple[_Harmonic, Process],
):
    h, proc = harmonic
    nodes(["wipe-a"], allocatable=ALLOC)
    _wave(kube, namespace, h.scheduler, ["old-0", "old-1"], proc)
    # Restored as etcd's restore procedure says, kube-apiserver restarted over the new etcd (without
    # the restart it keeps serving lists from its watch cache of the old one: a pod created after the
    # wipe is not listed). resourceVersions start again from the beginning.
    control_plane.wipe_etcd()
    # The session's other clients of the old etcd (kube-scheduler, kube-controller-manager) restart too,
    # as the restore procedure says, so later tests find them working.
    for other in [p for p in control_plane.schedulers if p.alive()]:  # not those tests stopped
        other.stop()
        other.start()
    control_plane.stop_controller_manager()  # the ``controllers`` fixture starts it again on demand
    # What an operator restoring the cluster re-creates: Harmonic's install, the namespace, the nodes
    # (the session's install is re-applied in place, so later tests find it).
    HarmonicInstall.apply(control_plane, MANIFEST, h.install.folder)
    h.rotate()
    kube.namespace(namespace)
    nodes(["wipe-a"], allocatable=ALLOC)
    # Fewer objects than before: every resourceVersion now is older than those Harmonic last saw.
    _wave(kube, namespace, h.scheduler, ["new-0"], proc)
    _scheduled_once(kube, namespace, ["new-0"])
