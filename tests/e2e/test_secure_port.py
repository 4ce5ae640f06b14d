"""The secure port on a real control plane, beside kube-scheduler's own: the same requests get the same
answers from both (delegated authentication by TokenReview, authorization by SubjectAccessReview of
the non-resource URL, the health paths always allowed), with the shipped RBAC for Harmonic."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import httpx
import pytest

from harmonic.testing.kube import ControlPlane, KubeClient

from .install import HarmonicInstall, wait_for

READER_ROLE = "e2e-metrics-reader"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def tokens(kube: KubeClient, namespace: str) -> Iterator[dict[str, str]]:
    """Bound tokens of two ServiceAccounts: ``allowed`` may get /metrics (nonResourceURLs), ``denied``
    may not."""
    kube.create(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        {
            "metadata": {"name": READER_ROLE},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
    )
    kube.create(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {
            "metadata": {"name": READER_ROLE},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READER_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": "allowed", "namespace": namespace}],
        },
    )
    for account in ("allowed", "denied"):
        kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": account}})
    yield {account: kube.token(namespace, account) for account in ("allowed", "denied")}
    kube.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{READER_ROLE}")
    kube.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{READER_ROLE}")


CASES = [
    # (path, credential, status)
    ("/metrics", "allowed", 200),
    ("/metrics", "denied", 403),
    ("/metrics", None, 403),  # anonymous: forbidden, as kube-scheduler answers
    ("/metrics", "garbage", 401),
    ("/healthz", None, 200),
    ("/livez", None, 200),
    ("/debug/decisions", "allowed", 403),  # the role grants /metrics only
]


def _answers(url: str, tokens: dict[str, str]) -> list[tuple[str, str | None, int]]:
    out = []
    for path, who, _ in CASES:
        token = tokens.get(who or "", "not-a-token") if who else None
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        out.append((path, who, httpx.get(url + path, headers=headers, verify=False, timeout=10).status_code))
    return out


def _serving(url: str) -> Callable[[], bool]:
    def up() -> bool:
        try:
            return httpx.get(url + "/healthz", verify=False, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    return up


def test_harmonic_run_answers_as_kube_scheduler(
    control_plane: ControlPlane, harmonic_install: HarmonicInstall, tokens: dict[str, str]
) -> None:
    ref_port = _free_port()
    ref = control_plane.start_kube_scheduler(
        {"profiles": [{"schedulerName": "e2e-secure-port"}]},
        name="kube-scheduler-secure-port",
        secure_port=ref_port,
    )
    try:
        wait_for(_serving(f"https://127.0.0.1:{ref_port}"), 60, "kube-scheduler serving", ref)
        reference = _answers(f"https://127.0.0.1:{ref_port}", tokens)
    finally:
        ref.stop()
    assert reference == CASES  # the expectations hold for kube-scheduler itself
    port = _free_port()
    with harmonic_install.running("secure-port", secure_port=port) as proc:
        url = f"https://127.0.0.1:{port}"
        wait_for(_serving(url), 60, "harmonic run serving", proc)
        assert _answers(url, tokens) == reference
        scraped = httpx.get(
            url + "/metrics", headers={"Authorization": f"Bearer {tokens['allowed']}"}, verify=False
        )
        assert "scheduler_pending_pods" in scraped.text
        anonymous = httpx.get(url + "/metrics", verify=False).json()
        assert anonymous["message"] == 'forbidden: User "system:anonymous" cannot get path "/metrics"'
