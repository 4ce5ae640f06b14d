"""etcd + kube-apiserver (+ kube-controller-manager, kube-scheduler on demand) on loopback for tests.

``ControlPlane(assets, folder)`` starts on free ports with fresh certificates in ``folder`` and
writes kubeconfigs for an admin (``system:masters``), kube-scheduler and kube-controller-manager. The
fault helpers keep every port, so kubeconfigs stay valid: ``restart_apiserver()``, ``stop_apiserver()``
/ ``start_apiserver()``, and ``wipe_etcd()`` (an empty etcd: every object gone and resourceVersions
starting again from the beginning, what a restore from an old backup or a rebuilt etcd looks like).
"""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from harmonic.cluster.transport import Transport, load_client
from harmonic.testing.kube.assets import Assets
from harmonic.testing.kube.client import KubeClient
from harmonic.testing.kube.pki import Pki, client_kubeconfig, make_pki
from harmonic.testing.kube.processes import Process

START_TIMEOUT = 90.0


class ControlPlaneError(RuntimeError):
    """A component did not come up; the message ends with its log's last lines."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _etcd_flags(etcd: Path) -> str:
    """etcd's usage text: a release etcd needs advertise URLs that the embed-based test build lacks."""
    out = subprocess.run([str(etcd), "--help"], capture_output=True, text=True, timeout=30, check=False)
    return out.stdout + out.stderr


class ControlPlane:
    def __init__(self, assets: Assets, folder: Path, *, verbosity: int = 1) -> None:
        self.assets, self.folder, self.verbosity = assets, folder, verbosity
        self.logs = folder / "logs"
        self.etcd_data = folder / "etcd"
        self.etcd_port, self.peer_port, self.api_port = free_port(), free_port(), free_port()
        self.url = f"https://127.0.0.1:{self.api_port}"
        self.pki: Pki = make_pki(folder / "pki")
        self.kubeconfigs = {
            name: client_kubeconfig(folder / f"{name}.kubeconfig", self.url, self.pki, name)
            for name in ("admin", "kube-scheduler", "kube-controller-manager")
        }
        self.etcd = Process("etcd", self._etcd_argv(), self.logs / "etcd.log")
        self.apiserver = Process("kube-apiserver", self._apiserver_argv(), self.logs / "kube-apiserver.log")
        self.controller_manager: Process | None = None
        self.schedulers: list[Process] = []
        tls = ssl.create_default_context(cafile=str(self.pki.ca))
        tls.load_cert_chain(*map(str, self.pki.client("admin")))
        # No proxy from the environment: everything here is on loopback.
        self._open = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=tls)
        ).open

    # ------------------------------------------------------------------ argv
    def _etcd_argv(self) -> list[str]:
        client, peer = f"http://127.0.0.1:{self.etcd_port}", f"http://127.0.0.1:{self.peer_port}"
        argv = [
            str(self.assets.etcd),
            f"--data-dir={self.etcd_data}",
            f"--listen-client-urls={client}",
            f"--listen-peer-urls={peer}",
            "--unsafe-no-fsync",
            "--log-level=error",
        ]
        if "--advertise-client-urls" in _etcd_flags(self.assets.etcd):
            argv += [
                f"--advertise-client-urls={client}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=default={peer}",
                "--name=default",
            ]
        return argv

    def _apiserver_argv(self) -> list[str]:
        cert, key = self.pki.serving
        return [
            str(self.assets.kube_apiserver),
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.api_port}",
            f"--tls-cert-file={cert}",
            f"--tls-private-key-file={key}",
            f"--client-ca-file={self.pki.ca}",
            f"--service-account-key-file={self.pki.sa_key}",
            f"--service-account-signing-key-file={self.pki.sa_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--authorization-mode=Node,RBAC",
            "--service-cluster-ip-range=10.0.0.0/24",
            f"--cert-dir={self.folder / 'apiserver-certs'}",
            "--profiling=false",
            f"--v={self.verbosity}",
        ]

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> ControlPlane:
        try:
            self.start_etcd()
            self.start_apiserver()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop everything started, schedulers and controllers first; safe to call twice."""
        for p in [*self.schedulers, self.controller_manager, self.apiserver, self.etcd]:
            if p is not None:
                p.stop()
        self.schedulers.clear()

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start_etcd(self) -> None:
        self.etcd.start()
        self._wait(self.etcd, lambda: self._etcd_healthy())

    def start_apiserver(self) -> None:
        self.apiserver.start()
        self._wait(self.apiserver, lambda: self._get("/readyz") == 200)

    def stop_apiserver(self) -> None:
        self.apiserver.stop()

    def restart_apiserver(self) -> None:
        self.stop_apiserver()
        self.start_apiserver()

    def wipe_etcd(self, restart_apiserver: bool = True) -> None:
        """Replace etcd with an empty one on the same port. With ``restart_apiserver`` (what a restore
        procedure does) kube-apiserver restarts and re-creates its bootstrap objects (namespaces, RBAC
        roles); without, it keeps serving over the empty store."""
        if restart_apiserver:
            self.stop_apiserver()
        self.etcd.stop()
        shutil.rmtree(self.etcd_data, ignore_errors=True)
        self.start_etcd()
        if restart_apiserver:
            self.start_apiserver()

    def start_controller_manager(
        self, controllers: str = "*,-node-lifecycle-controller,-taint-eviction-controller"
    ) -> None:
        """kube-controller-manager (ReplicaSets, Jobs, PDB status, service accounts, garbage collection),
        without the controllers that would mark kubelet-less nodes NotReady and evict their pods."""
        if self.assets.kube_controller_manager is None:
            raise ControlPlaneError("no kube-controller-manager binary among the assets")
        if self.controller_manager is not None and self.controller_manager.alive():
            return
        kubeconfig = self.kubeconfigs["kube-controller-manager"]
        self.controller_manager = Process(
            "kube-controller-manager",
            [
                str(self.assets.kube_controller_manager),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                f"--service-account-private-key-file={self.pki.sa_key}",
                f"--root-ca-file={self.pki.ca}",
                "--use-service-account-credentials=true",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                "--secure-port=0",
                f"--controllers={controllers}",
                # A claim created just after its volume, before the PV controller's cache has the volume,
                # waits for the next resync to bind: 1 s here, not the default 15 s.
                "--pvclaimbinder-sync-period=1s",
                f"--v={self.verbosity}",
            ],
            self.logs / "kube-controller-manager.log",
        )
        self.controller_manager.start()

    def stop_controller_manager(self) -> None:
        if self.controller_manager is not None:
            self.controller_manager.stop()
            self.controller_manager = None

    def start_kube_scheduler(self, config: dict[str, Any], name: str = "kube-scheduler") -> Process:
        """kube-scheduler with ``config`` (a KubeSchedulerConfiguration; its clientConnection.kubeconfig
        defaults to the system:kube-scheduler one). Stopped with the control plane, or by ``.stop()``."""
        if self.assets.kube_scheduler is None:
            raise ControlPlaneError("no kube-scheduler binary among the assets")
        kubeconfig = self.kubeconfigs["kube-scheduler"]
        doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", **config}
        doc.setdefault("clientConnection", {}).setdefault("kubeconfig", str(kubeconfig))
        doc.setdefault("leaderElection", {"leaderElect": False})
        path = self.folder / f"{name}.config.json"
        path.write_text(json.dumps(doc))
        p = Process(
            name,
            [
                str(self.assets.kube_scheduler),
                f"--config={path}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                "--secure-port=0",
                f"--v={self.verbosity}",
            ],
            self.logs / f"{name}.log",
        )
        p.start()
        self.schedulers.append(p)
        return p

    # ------------------------------------------------------------------ clients
    def transport(
        self, kubeconfig: str = "admin", qps: float = -1, user_agent: str = "harmonic-e2e"
    ) -> Transport:
        return Transport(
            load_client(str(self.kubeconfigs[kubeconfig])), qps=qps, burst=1000, user_agent=user_agent
        )

    def client(self) -> KubeClient:
        """An admin client (no client-side rate limit)."""
        return KubeClient(self.transport())

    # ------------------------------------------------------------------ readiness
    def _get(self, path: str) -> int:
        try:
            with self._open(self.url + path, timeout=5) as r:
                status: int = r.status
                return status
        except urllib.error.HTTPError as e:
            return e.code
        except (OSError, urllib.error.URLError):
            return 0

    def _etcd_healthy(self) -> bool:
        try:
            with self._open(f"http://127.0.0.1:{self.etcd_port}/health", timeout=5) as r:
                return bool(json.loads(r.read()).get("health") == "true")
        except (OSError, ValueError):
            return False

    def _wait(self, process: Process, ready: Any) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not ready():
            if not process.alive():
                raise ControlPlaneError(f"{process.name} exited; {process.log}:\n{process.tail()}")
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"{process.name} not ready after {START_TIMEOUT:.0f} s:\n{process.tail()}"
                )
            time.sleep(0.1)
