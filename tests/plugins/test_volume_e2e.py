"""End to end: pods with claims scheduled by the default profile against the in-memory cluster."""

from __future__ import annotations

from harmonic.testing.harness import Harness
from tests.plugins.storage import IMMEDIATE, WFFC, claim_volume, node, pod_with, pv, pvc, storage_class


def _harness(objs: list[tuple[str, dict]]) -> Harness:
    h = Harness()
    for kind, raw in objs:
        h.cluster.storage.apply({**raw, "kind": kind})
    return h


def test_wait_for_first_consumer_claim_binds_static_pv_on_its_node():
    h = _harness(
        [
            ("StorageClass", storage_class("local", WFFC)),
            (
                "PersistentVolume",
                pv("pv-b", sc="local", size="10Gi", affinity={"kubernetes.io/hostname": ["b"]}),
            ),
            ("PersistentVolumeClaim", pvc("data", sc="local", size="5Gi")),
        ]
    )
    h.add_nodes([node("a"), node("b"), node("c")])
    h.add_pods([pod_with("web", [claim_volume("data")])])
    h.schedule()
    assert h.placement() == {"default/web": "b"}
    claim = h.cluster.storage.pvc("default", "data")
    assert claim.volume_name == "pv-b" and claim.fully_bound
    bound = h.cluster.storage.pv("pv-b")
    assert bound.claim_ref is not None and bound.claim_ref.name == "data"
    assert bound.annotations.get("pv.kubernetes.io/bound-by-controller") == "yes"


def test_wait_for_first_consumer_claim_is_provisioned_on_the_chosen_node():
    h = _harness(
        [
            (
                "StorageClass",
                storage_class("fast", WFFC, provisioner="csi.example.com", topologies=[{"zone": ["z2"]}]),
            ),
            ("PersistentVolumeClaim", pvc("data", sc="fast")),
        ]
    )
    h.add_nodes([node("a", {"zone": "z1"}), node("b", {"zone": "z2"})])
    h.add_pods([pod_with("web", [claim_volume("data")])])
    h.schedule()
    assert h.placement() == {"default/web": "b"}
    claim = h.cluster.storage.pvc("default", "data")
    assert claim.annotations["volume.kubernetes.io/selected-node"] == "b"
    assert claim.fully_bound


def test_unbound_immediate_claim_waits_until_it_is_bound():
    h = _harness(
        [
            ("StorageClass", storage_class("std", IMMEDIATE)),
            ("PersistentVolumeClaim", pvc("data", sc="std")),
        ]
    )
    h.add_nodes([node("a")])
    h.add_pods([pod_with("web", [claim_volume("data")])])
    h.schedule()
    assert h.placement() == {}
    assert (
        h.failure("web")
        == "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    h.cluster.storage.apply(
        {**pv("pv1", sc="std", claim=("default", "data"), phase="Bound"), "kind": "PersistentVolume"}
    )
    h.cluster.storage.apply(
        {**pvc("data", sc="std", volume="pv1", bound=True), "kind": "PersistentVolumeClaim"}
    )
    h.settle(30)
    assert h.placement() == {"default/web": "a"}


def test_missing_claim_fails_as_upstream_and_a_new_claim_requeues():
    h = Harness()
    h.add_nodes([node("a")])
    h.add_pods([pod_with("web", [claim_volume("data")])])
    h.schedule()
    assert 'persistentvolumeclaim "data" not found' in (h.failure("web") or "")
    h.cluster.storage.apply({**pvc("data", sc="", volume="pv1", bound=True), "kind": "PersistentVolumeClaim"})
    h.cluster.storage.apply(
        {**pv("pv1", claim=("default", "data"), phase="Bound"), "kind": "PersistentVolume"}
    )
    h.settle(30)
    assert h.placement() == {"default/web": "a"}


def test_bind_timeout_without_pv_controller_unreserves_and_retries():
    h = Harness(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"pluginConfig": [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 0}}]}],
        }
    )
    h.cluster.storage.pv_controller = False
    h.cluster.storage.apply({**storage_class("local", WFFC), "kind": "StorageClass"})
    h.cluster.storage.apply({**pv("pv-a", sc="local"), "kind": "PersistentVolume"})
    h.cluster.storage.apply({**pvc("data", sc="local"), "kind": "PersistentVolumeClaim"})
    h.add_nodes([node("a")])
    h.add_pods([pod_with("web", [claim_volume("data")])])
    h.schedule()
    assert h.placement() == {}
    assert "binding volumes: context deadline exceeded" in (h.failure("web") or "")
    # The PV was pre-bound through the API; the claim is still waiting for the PV controller.
    assert h.cluster.storage.pv("pv-a").claim_ref.name == "data"
    assert not h.cluster.storage.pvc("default", "data").fully_bound
