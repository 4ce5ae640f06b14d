"""Harmonic installed from the shipped manifests and run as a process with its ServiceAccount's token."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harmonic.testing.kube import ControlPlane, load_manifests
from harmonic.testing.kube.processes import Process

#: Objects of the manifests that need a kubelet; Harmonic runs as a local process instead of their pods.
NOT_APPLIED = {"Deployment"}


@dataclass
class HarmonicInstall:
    """The manifests' objects applied; ``config`` is their KubeSchedulerConfiguration (from the
    ConfigMap) and ``kubeconfig`` authenticates as their ServiceAccount."""

    control_plane: ControlPlane
    config: dict[str, Any]
    kubeconfig: Path
    folder: Path

    @classmethod
    def apply(cls, cp: ControlPlane, manifest: Path, folder: Path) -> HarmonicInstall:
        objects = load_manifests(manifest)
        kube = cp.client()
        kube.apply(o for o in objects if o["kind"] not in NOT_APPLIED)
        (config_map,) = (o for o in objects if o["kind"] == "ConfigMap")
        (deployment,) = (o for o in objects if o["kind"] == "Deployment")
        account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
        namespace = deployment["metadata"]["namespace"]
        config = yaml.safe_load(config_map["data"]["config.yaml"])
        kubeconfig = kube.service_account_kubeconfig(folder / "sa.kubeconfig", namespace, account, cp.pki.ca)
        return cls(cp, config, kubeconfig, folder)

    @contextmanager
    def running(self, name: str = "harmonic", **overrides: Any) -> Iterator[Process]:
        """``harmonic run`` with the shipped configuration (``overrides`` replace its top-level fields),
        as the ServiceAccount; stopped by SIGTERM afterwards (which releases the lease)."""
        config = {**self.config, **overrides, "clientConnection": {"kubeconfig": str(self.kubeconfig)}}
        path = self.folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config))
        argv = [
            sys.executable,
            "-m",
            "harmonic",
            "run",
            f"--config={path}",
            "--metrics-port=0",
            f"--identity={name}",
        ]
        proc = Process(name, argv, self.folder / f"{name}.log")
        proc.start()
        try:
            yield proc
        finally:
            proc.stop()


def wait_for(cond: Callable[[], Any], timeout: float, what: str, proc: Process | None = None) -> Any:
    """``cond()``'s first truthy value; fails after ``timeout`` s (with the process's log if it died)."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if proc is not None and not proc.alive():
            raise AssertionError(f"{proc.name} exited while waiting for {what}:\n{proc.tail(40)}")
        if time.monotonic() > deadline:
            log = f"\n{proc.name}'s log:\n{proc.tail(40)}" if proc is not None else ""
            raise AssertionError(f"timed out after {timeout} s waiting for {what}{log}")
        time.sleep(0.1)
