"""Fixtures for the live-cluster tests: the API-server double, transports, running live schedulers."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from harmonic.cluster.informer import Backoff
from harmonic.cluster.kube import LiveScheduler
from harmonic.cluster.transport import Transport, load_client
from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.testing.apiserver import ApiServerDouble

#: Leader election scaled down 10x from kube-scheduler's 15 s / 10 s / 2 s, so tests take seconds.
FAST_LEASE = {
    "leaderElect": True,
    "leaseDuration": "1.5s",
    "renewDeadline": "1s",
    "retryPeriod": "0.2s",
    "resourceName": "harmonic",
    "resourceNamespace": "kube-system",
}


#: A token the double's TokenReviews authenticate as a system:masters member, which kube-scheduler's
#: delegated authorization lets through: the tests' credential for harmonic run's secure port.
SCRAPE_TOKEN = "scrape-token"


@pytest.fixture
def api() -> Iterator[ApiServerDouble]:
    with ApiServerDouble(bookmark_interval=0.2) as server:
        server.add_user(SCRAPE_TOKEN, "test-scraper", ["system:masters"])
        yield server


def scrape(method: str, url: str, **kw: Any) -> httpx.Response:
    """A request to harmonic run's secure port: its self-signed certificate not verified, the scrape
    token unless the caller sends its own Authorization header."""
    headers = {"Authorization": f"Bearer {SCRAPE_TOKEN}", **kw.pop("headers", {})}
    return httpx.request(method, url, verify=False, headers=headers, timeout=kw.pop("timeout", 10), **kw)


@pytest.fixture
def make_transport(api: ApiServerDouble, tmp_path: Path) -> Callable[..., Transport]:
    def make(agent: str = "harmonic-test", qps: float = -1, timeout: float = 10.0) -> Transport:
        kubeconfig = api.kubeconfig(tmp_path / f"kubeconfig-{agent}")
        return Transport(load_client(str(kubeconfig)), qps=qps, burst=100, user_agent=agent, timeout=timeout)

    return make


@pytest.fixture
def transport(make_transport: Callable[..., Transport]) -> Transport:
    return make_transport()


def run_config(api: ApiServerDouble, folder: Path, profiles: list[dict[str, Any]]) -> Path:
    """A config file for ``harmonic run`` against ``api`` (fast leader election) with ``profiles``."""
    config = folder / "sched.yaml"
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": FAST_LEASE,
        "clientConnection": {"kubeconfig": str(api.kubeconfig(folder / "kubeconfig"))},
        "profiles": profiles,
    }
    config.write_text(json.dumps(doc))
    return config


def client_flags(folder: Path) -> list[str]:
    """The flags of `harmonic model URL` / `harmonic ui --url` that reach harmonic run's secure port."""
    token = folder / "scrape-token"
    token.write_text(SCRAPE_TOKEN)
    return ["--insecure-skip-tls-verify", "--url-token-file", str(token)]


def harmonic_run(config: Path, identity: str, metrics_port: int = 0, *extra: str) -> subprocess.Popen[str]:
    """``harmonic run --config CONFIG [EXTRA...]`` as a process (stderr piped), serving on loopback."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harmonic",
            "run",
            "--config",
            str(config),
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            str(metrics_port),
            "--identity",
            identity,
            *extra,
        ],
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until(cond: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def scheduler_config(leader: bool = True, **extra: Any) -> Any:
    doc: dict[str, Any] = {
        "leaderElection": FAST_LEASE if leader else {"leaderElect": False},
        "profiles": [{"schedulerName": "harmonic"}],
        **extra,
    }
    return load_config(doc, default_registry(), source="<test>")


class Running:
    """A ``LiveScheduler`` on a thread; ``stop()`` shuts it down and returns its exit code."""

    def __init__(self, live: LiveScheduler) -> None:
        self.live = live
        self.thread = threading.Thread(target=live.run, name=f"live-{live.identity}", daemon=True)
        self.thread.start()

    def stop(self) -> int:
        self.live.stop()
        self.thread.join(20)
        assert not self.thread.is_alive(), "live scheduler did not stop"
        return self.live.exit_code


@pytest.fixture
def start_scheduler(make_transport: Callable[..., Transport]) -> Iterator[Callable[..., Running]]:
    running: list[Running] = []

    def start(identity: str = "a", leader: bool = True, config: Any = None, **kwargs: Any) -> Running:
        live = LiveScheduler(
            config or scheduler_config(leader),
            default_registry(),
            make_transport(agent=f"harmonic-{identity}"),
            identity=identity,
            informer_backoff=lambda: Backoff(0.02, 0.2),
            event_retry_sleep=0.05,
            bind_workers=4,
            **kwargs,
        )
        r = Running(live)
        running.append(r)
        return r

    yield start
    for r in running:
        if r.thread.is_alive():
            r.stop()


@contextmanager
def scheduling(start: Callable[..., Running], **kwargs: Any) -> Iterator[Running]:
    r = start(**kwargs)
    wait_until(lambda: r.live.synced.is_set() and r.live.is_leader, what="sync and leadership")
    yield r
