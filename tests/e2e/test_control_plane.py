"""The fixture's fault helpers do to the control plane what they say."""

from __future__ import annotations

from harmonic.cluster.transport import ApiStatusError
from harmonic.testing.kube import ControlPlane, KubeClient


def _rv(obj: dict) -> int:
    return int(obj["metadata"]["resourceVersion"])


def test_restart_keeps_objects_and_kubeconfigs(control_plane: ControlPlane, kube: KubeClient, namespace: str):
    before = kube.get(f"/api/v1/namespaces/{namespace}")
    control_plane.restart_apiserver()
    after = kube.get(f"/api/v1/namespaces/{namespace}")
    assert after["metadata"]["uid"] == before["metadata"]["uid"]


def test_wipe_etcd_empties_the_store_and_starts_resource_versions_again(
    control_plane: ControlPlane, kube: KubeClient
):
    kube.namespace("before-wipe")
    kube.create("/api/v1/namespaces/before-wipe/configmaps", {"metadata": {"name": "c"}})
    # Writes enough that the old store is ahead of the new one by more than its bootstrap's writes, so
    # the comparison holds whichever test ran first.
    for i in range(100):
        high = _rv(kube.patch("/api/v1/namespaces/before-wipe/configmaps/c", {"data": {"i": str(i)}}))
    control_plane.wipe_etcd()
    try:
        kube.get("/api/v1/namespaces/before-wipe")
        raise AssertionError("the namespace outlived the wipe")
    except ApiStatusError as e:
        assert e.code == 404
    kube.namespace("after-wipe")
    low = _rv(kube.create("/api/v1/namespaces/after-wipe/configmaps", {"metadata": {"name": "c"}}))
    assert low < high
    # The restarted kube-apiserver re-created its bootstrap RBAC: a ServiceAccount token can be minted.
    assert kube.token("after-wipe", "default")
