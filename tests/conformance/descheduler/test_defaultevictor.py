"""descheduler ``pkg/framework/plugins/defaultevictor/defaultevictor_test.go``: every case of
``TestDefaultEvictorPreEvictionFilter``, ``TestDefaultEvictorFilter``, ``TestReinitialization``,
``TestGetEffectivePodProtections_TableDriven``, ``TestMultipleProfilesWithDifferentNamespaceLabelSelectors``
and ``TestNamespaceLabelSelectorAllOperations``, translated (expected results are upstream's).

``Test_protectedPVCStorageClasses`` reads a private helper's return value; its three cases are checked
on the parsed args (``podProtections.config.PodsWithPVC.protectedStorageClasses``) instead.

Upstream builds its args with ``PriorityThreshold{Value: nil}`` when a case sets no threshold; the
translation leaves ``priorityThreshold`` out then, which is the same."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.rescheduler.evictor import DefaultEvictorArgs
from tests.conformance.descheduler.upstream import (
    build_node,
    build_pod,
    chain,
    critical,
    default_evictor,
    ds_owner,
    in_namespace,
    labels,
    local_storage,
    mirror,
    normal_owner,
    phase,
    priority,
    pvc,
    rs_owner,
)
from tests.rescheduler.helpers import NOW, pdb, ts

EVICT = "descheduler.alpha.kubernetes.io/evict"
SOFT_NO_EVICTION = "descheduler.alpha.kubernetes.io/prefer-no-eviction"
LOW, HIGH = 800, 900


def node(name: str, apply=None) -> dict[str, Any]:
    return build_node(name, 1000, 2000, 13, apply)


def pod(name: str, apply=None, cpu: int = 400, mem: int = 0, on: str = "node1") -> dict[str, Any]:
    return build_pod(name, cpu, mem, on, apply)


def annotate(**kv: str):
    def f(p):
        p["metadata"].setdefault("annotations", {}).update(kv)

    return f


EVICT_ME = annotate(**{EVICT: "true"})


def gpu_taint(n):
    n["spec"]["taints"] = [{"key": "hardware", "value": "gpu", "effect": "NoSchedule"}]


def east(n):
    n["metadata"]["labels"] = {"datacenter": "east"}


def selector(value: str):
    def f(p):
        p["spec"]["nodeSelector"] = {"datacenter": value}

    return f


def namespace(name: str, **extra: str) -> dict[str, Any]:
    """``test.BuildTestNamespace`` (plus labels)."""
    return {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **extra}},
    }


def claim(name: str, storage_class: str) -> dict[str, Any]:
    """``test.BuildTestPVC``."""
    return {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"storageClassName": storage_class, "accessModes": ["ReadWriteOnce"]},
    }


def owner_uid(uid: str):
    def f(p):
        p["metadata"]["ownerReferences"][0]["uid"] = uid

    return f


def two_owners(p):
    normal_owner(p)
    p["metadata"]["ownerReferences"] = p["metadata"]["ownerReferences"] * 2
    p["metadata"]["ownerReferences"][0] = {**p["metadata"]["ownerReferences"][0], "uid": "owner-uuid"}


def started(seconds_ago: float):
    def f(p):
        p["status"]["startTime"] = ts(seconds_ago)

    return f


def volumes(*vs: dict[str, Any]):
    def f(p):
        p["spec"]["volumes"] = list(vs)

    return f


def protections(disabled=(), extra=(), protected=()) -> dict[str, Any]:
    pp: dict[str, Any] = {"defaultDisabled": list(disabled), "extraEnabled": list(extra)}
    if protected:
        pp["config"] = {"PodsWithPVC": {"protectedStorageClasses": [{"name": n} for n in protected]}}
    return {"podProtections": pp}


def C(name, pods, want, nodes=(), others=(), **args):
    return pytest.param(list(pods), want, list(nodes), list(others), args, id=name)


PRE_EVICTION = [
    C(
        "Pod with no tolerations running on normal node, all other nodes tainted",
        [pod("p1", normal_owner)],
        False,
        [node("node2", gpu_taint), node("node3", gpu_taint)],
        nodeFit=True,
    ),
    C(
        "Pod with correct tolerations running on normal node, all other nodes tainted",
        [
            pod(
                "p1",
                chain(
                    normal_owner,
                    lambda p: p["spec"].__setitem__(
                        "tolerations", [{"key": "hardware", "value": "gpu", "effect": "NoSchedule"}]
                    ),
                ),
            )
        ],
        True,
        [node("node2", gpu_taint), node("node3", gpu_taint)],
        nodeFit=True,
    ),
    C(
        "Pod with incorrect node selector",
        [pod("p1", chain(normal_owner, selector("fail")))],
        False,
        [node("node2", east), node("node3", east)],
        nodeFit=True,
    ),
    C(
        "Pod with correct node selector",
        [pod("p1", chain(normal_owner, selector("east")))],
        True,
        [node("node2", east), node("node3", east)],
        nodeFit=True,
    ),
    C(
        "Pod with correct node selector, but only available node doesn't have enough CPU",
        [pod("p1", chain(normal_owner, selector("east")), cpu=12, mem=8)],
        False,
        [build_node("node2-TEST", 10, 16, 10, east), build_node("node3-TEST", 10, 16, 10, east)],
        nodeFit=True,
    ),
    C(
        "Pod with correct node selector, and one node has enough memory",
        [
            pod("p1", chain(normal_owner, selector("east")), cpu=12, mem=8),
            pod("node2-pod-10GB-mem", labels(test="true"), cpu=20, mem=10, on="node2"),
            pod("node3-pod-10GB-mem", labels(test="true"), cpu=20, mem=10, on="node3"),
        ],
        True,
        [build_node("node2", 100, 16, 10, east), build_node("node3", 100, 20, 10, east)],
        nodeFit=True,
    ),
    C(
        "Pod with correct node selector, but both nodes don't have enough memory",
        [
            pod("p1", chain(normal_owner, selector("east")), cpu=12, mem=8),
            pod("node2-pod-10GB-mem", labels(test="true"), cpu=10, mem=10, on="node2"),
            pod("node3-pod-10GB-mem", labels(test="true"), cpu=10, mem=10, on="node3"),
        ],
        False,
        [build_node("node2", 100, 16, 10, east), build_node("node3", 100, 16, 10, east)],
        nodeFit=True,
    ),
    C(
        "Pod with incorrect node selector, but nodefit false, should still be evicted",
        [pod("p1", chain(normal_owner, selector("fail")))],
        True,
        [node("node2", east), node("node3", east)],
    ),
    C(
        "Pod with namespace matched namespace selector, should be evicted",
        [pod("p1", chain(in_namespace("test"), normal_owner, selector("east")))],
        True,
        [node("node2", east), node("node3", east)],
        [namespace("default"), namespace("test")],
        nodeFit=True,
        namespaceLabelSelector={"matchLabels": {"kubernetes.io/metadata.name": "test"}},
    ),
    C(
        "Pod with namespace does not matched namespace selector, should not be evicted",
        [pod("p1", chain(normal_owner, selector("fail")))],
        False,
        [node("node2", east), node("node3", east)],
        [namespace("default"), namespace("test")],
        nodeFit=True,
        namespaceLabelSelector={"matchLabels": {"kubernetes.io/metadata.name": "test"}},
    ),
]


@pytest.mark.parametrize(("pods", "want", "nodes", "others", "args"), PRE_EVICTION)
def test_upstream_pre_eviction_filter(pods, want, nodes, others, args):
    ev = default_evictor(args, nodes + pods + others)
    assert ev.pre_eviction_filter(ev.state.pods[0]) is want


FILTER = [
    C("Failed pod eviction with no ownerRefs", [pod("bare_pod_failed", phase("Failed"))], False),
    C(
        "Normal pod eviction with no ownerRefs and evictFailedBarePods enabled",
        [pod("bare_pod")],
        False,
        evictFailedBarePods=True,
    ),
    C(
        "Failed pod eviction with no ownerRefs (evictFailedBarePods enabled)",
        [pod("bare_pod_failed_but_can_be_evicted", phase("Failed"))],
        True,
        evictFailedBarePods=True,
    ),
    C("Normal pod eviction with normal ownerRefs", [pod("p1", normal_owner)], True),
    C(
        f"Normal pod eviction with normal ownerRefs and {EVICT} annotation",
        [pod("p2", chain(EVICT_ME, normal_owner))],
        True,
    ),
    C(
        f"Normal pod eviction with normal ownerRefs and {SOFT_NO_EVICTION} annotation (preference)",
        [pod("p2", chain(annotate(**{SOFT_NO_EVICTION: ""}), normal_owner))],
        True,
    ),
    C(
        f"Normal pod eviction with normal ownerRefs and {SOFT_NO_EVICTION} annotation (mandatory)",
        [pod("p2", chain(annotate(**{SOFT_NO_EVICTION: ""}), normal_owner))],
        False,
        noEvictionPolicy="Mandatory",
    ),
    C("Normal pod eviction with replicaSet ownerRefs", [pod("p3", normal_owner)], True),
    C(
        f"Normal pod eviction with replicaSet ownerRefs and {EVICT} annotation",
        [pod("p4", chain(EVICT_ME, rs_owner))],
        True,
    ),
    C("Normal pod eviction with statefulSet ownerRefs", [pod("p18", normal_owner)], True),
    C(
        f"Normal pod eviction with statefulSet ownerRefs and {EVICT} annotation",
        [
            pod(
                "p19",
                chain(
                    EVICT_ME,
                    lambda p: p["metadata"].__setitem__(
                        "ownerReferences",
                        [{"kind": "StatefulSet", "apiVersion": "v1", "name": "statefulset-1"}],
                    ),
                ),
            )
        ],
        True,
    ),
    C(
        "Pod not evicted because it is bound to a PV and evictLocalStoragePods = false",
        [pod("p5", chain(normal_owner, local_storage))],
        False,
    ),
    C(
        "Pod is evicted because it is bound to a PV and evictLocalStoragePods = true",
        [pod("p6", chain(normal_owner, local_storage))],
        True,
        evictLocalStoragePods=True,
    ),
    C(
        "Pod is evicted because it is bound to a PV and evictLocalStoragePods = false, but it has scheduler.alpha.kubernetes.io/evict annotation",
        [pod("p7", chain(EVICT_ME, normal_owner, local_storage))],
        True,
    ),
    C("Pod not evicted because it is part of a daemonSet", [pod("p8", ds_owner)], False),
    C(
        "Pod is evicted because it is part of a daemonSet, but it has scheduler.alpha.kubernetes.io/evict annotation",
        [pod("p9", chain(EVICT_ME, ds_owner))],
        True,
    ),
    C("Pod not evicted because it is a mirror poddsa", [pod("p10", chain(normal_owner, mirror))], False),
    C(
        "Pod is evicted because it is a mirror pod, but it has scheduler.alpha.kubernetes.io/evict annotation",
        [pod("p11", chain(normal_owner, mirror, EVICT_ME))],
        True,
    ),
    C(
        "Pod not evicted because it has system critical priority",
        [pod("p12", chain(normal_owner, critical))],
        False,
    ),
    C(
        "Pod is evicted because it has system critical priority, but it has scheduler.alpha.kubernetes.io/evict annotation",
        [pod("p13", chain(normal_owner, critical, EVICT_ME))],
        True,
    ),
    C(
        "Pod not evicted because it has a priority higher than the configured priority threshold",
        [pod("p14", chain(normal_owner, priority(HIGH)))],
        False,
        priorityThreshold={"value": LOW},
    ),
    C(
        "Pod is evicted because it has a priority higher than the configured priority threshold, but it has scheduler.alpha.kubernetes.io/evict annotation",
        [pod("p15", chain(normal_owner, EVICT_ME, priority(HIGH)))],
        True,
        priorityThreshold={"value": LOW},
    ),
    C(
        "Pod is evicted because it has system critical priority, but evictSystemCriticalPods = true",
        [pod("p16", chain(normal_owner, critical))],
        True,
        evictSystemCriticalPods=True,
    ),
    C(
        "Pod is evicted because it has system critical priority, but evictSystemCriticalPods = true and it has scheduler.alpha.kubernetes.io/evict annotation",
        [pod("p16", chain(normal_owner, EVICT_ME, critical))],
        True,
        evictSystemCriticalPods=True,
    ),
    C(
        "Pod is evicted because it has a priority higher than the configured priority threshold, but evictSystemCriticalPods = true",
        [pod("p17", chain(normal_owner, priority(HIGH)))],
        True,
        evictSystemCriticalPods=True,
        priorityThreshold={"value": LOW},
    ),
    C(
        "Pod is evicted because it has a priority higher than the configured priority threshold, but evictSystemCriticalPods = true and it has scheduler.alpha.kubernetes.io/evict annotation",
        [pod("p17", chain(normal_owner, EVICT_ME, priority(HIGH)))],
        True,
        evictSystemCriticalPods=True,
        priorityThreshold={"value": LOW},
    ),
    C(
        "Pod with no tolerations running on normal node, all other nodes tainted, no PreEvictionFilter, should ignore nodeFit",
        [pod("p1", normal_owner)],
        True,
        [node("node2", gpu_taint), node("node3", gpu_taint)],
        nodeFit=True,
    ),
    C(
        "minReplicas of 2, owner with 2 replicas, evicts",
        [pod(f"p{i}", chain(normal_owner, owner_uid("owner-uuid")), cpu=1, mem=1) for i in (1, 2)],
        True,
        minReplicas=2,
    ),
    C(
        "minReplicas of 3, owner with 2 replicas, no eviction",
        [pod(f"p{i}", chain(normal_owner, owner_uid("owner-uuid")), cpu=1, mem=1) for i in (1, 2)],
        False,
        minReplicas=3,
    ),
    C(
        "minReplicas of 2, multiple owners, no eviction",
        [pod("p1", two_owners, cpu=1, mem=1), pod("p2", normal_owner, cpu=1, mem=1)],
        True,
        minReplicas=2,
    ),
    C(
        "minPodAge of 50, pod created 10 minutes ago, no eviction",
        [pod("p1", chain(normal_owner, started(600)), cpu=1, mem=1)],
        False,
        minPodAge="50m",
    ),
    C(
        "minPodAge of 50, pod created 60 minutes ago, evicts",
        [pod("p1", chain(normal_owner, started(3600)), cpu=1, mem=1)],
        True,
        minPodAge="50m",
    ),
    C(
        "nil minPodAge, pod created 60 minutes ago, evicts",
        [pod("p1", chain(normal_owner, started(3600)), cpu=1, mem=1)],
        True,
    ),
    C(
        "ignorePodsWithoutPDB, pod with no PDBs, no eviction",
        [pod("p1", chain(normal_owner, labels(app="foo")), cpu=1, mem=1)],
        False,
        ignorePodsWithoutPDB=True,
    ),
    C(
        "ignorePodsWithoutPDB, pod with PDBs, evicts",
        [pod("p1", chain(normal_owner, labels(app="foo")), cpu=1, mem=1)],
        True,
        others=[pdb("pdb1", "foo", maxUnavailable=1)],
        ignorePodsWithoutPDB=True,
    ),
    C(
        "ignorePvcPods is set, pod with PVC, not evicts",
        [pod("p15", chain(normal_owner, pvc()))],
        False,
        ignorePvcPods=True,
    ),
    C("ignorePvcPods is not set, pod with PVC, evicts", [pod("p15", chain(normal_owner, pvc()))], True),
    C(
        "Pod with local storage is evicted because 'PodsWithLocalStorage' is in DefaultDisabled",
        [pod("p18", chain(normal_owner, volumes({"name": "local-storage", "emptyDir": {}})))],
        True,
        **protections(disabled=["PodsWithLocalStorage"]),
    ),
    C(
        "DaemonSet pod is evicted because 'DaemonSetPods' is in DefaultDisabled",
        [
            pod(
                "p19",
                lambda p: p["metadata"].__setitem__(
                    "ownerReferences",
                    [{"kind": "DaemonSet", "name": "daemonset-test", "uid": "daemonset-uid"}],
                ),
            )
        ],
        True,
        **protections(disabled=["DaemonSetPods"]),
    ),
    C(
        "Pod with PVC is not evicted because 'PodsWithPVC' is in ExtraEnabled",
        [pod("p20", chain(normal_owner, pvc()))],
        False,
        **protections(extra=["PodsWithPVC"]),
    ),
    C(
        "Pod without PDB is not evicted because 'PodsWithoutPDB' is in ExtraEnabled",
        [pod("p21", normal_owner)],
        False,
        **protections(extra=["PodsWithoutPDB"]),
    ),
    C(
        "Pod with ResourceClaims is not evicted because 'PodsWithResourceClaims' is in ExtraEnabled",
        [
            pod(
                "p20",
                chain(
                    normal_owner,
                    lambda p: p["spec"].__setitem__(
                        "resourceClaims", [{"name": "test-claim", "resourceClaimName": "test-resource-claim"}]
                    ),
                ),
            )
        ],
        False,
        **protections(extra=["PodsWithResourceClaims"]),
    ),
    C(
        "Pod using StorageClass is not evicted because 'PodsWithPVC' is in ExtraEnabled",
        [pod("p23", chain(normal_owner, pvc()))],
        False,
        others=[claim("foo", "standard")],
        **protections(extra=["PodsWithPVC"], protected=["standard"]),
    ),
    C(
        "Pod using unprotected StorageClass is evicted even though 'PodsWithPVC' is in ExtraEnabled",
        [pod("p24", chain(normal_owner, pvc()))],
        True,
        others=[claim("foo", "unprotected")],
        **protections(extra=["PodsWithPVC"], protected=["protected"]),
    ),
    C(
        "Pod using unexisting PVC is not evicted because we cannot determine if storage class is protected or not",
        [pod("p25", chain(normal_owner, pvc()))],
        False,
        **protections(extra=["PodsWithPVC"], protected=["protected"]),
    ),
    C(
        "Pod using protected and unprotected StorageClasses is not evicted",
        [
            pod(
                "p26",
                chain(
                    normal_owner,
                    volumes(
                        {"name": "protected-pvc", "persistentVolumeClaim": {"claimName": "protected"}},
                        {"name": "unprotected-pvc", "persistentVolumeClaim": {"claimName": "unprotected"}},
                    ),
                ),
            )
        ],
        False,
        others=[claim("protected", "protected"), claim("unprotected", "unprotected")],
        **protections(extra=["PodsWithPVC"], protected=["protected"]),
    ),
    # TestReinitialization: the same args build a second evictor (upstream: New(args, handle) again).
    C(
        "TestReinitialization: minReplicas of 2, multiple owners, eviction",
        [pod("p1", two_owners, cpu=1, mem=1), pod("p2", normal_owner, cpu=1, mem=1)],
        True,
        minReplicas=2,
    ),
]


@pytest.mark.parametrize(("pods", "want", "nodes", "others", "args"), FILTER)
def test_upstream_filter(pods, want, nodes, others, args):
    objs = [node("node1"), *nodes, *pods, *others]
    for _ in range(2):  # TestReinitialization: building twice from the same args changes nothing
        ev = default_evictor(args, objs, now=NOW)
        assert (
            ev.filter(ev.state.pods[[p.name for p in ev.state.pods].index(pods[0]["metadata"]["name"])])
            is want
        )


DEFAULT_SET = {"PodsWithLocalStorage", "DaemonSetPods", "SystemCriticalPods", "FailedBarePods"}
EFFECTIVE = [
    ("NewConfig_EmptyConfig_ReturnsDefault", [], [], DEFAULT_SET),
    (
        "NewConfig_DisableOneDefault_ReturnsDefaultMinusOne",
        ["PodsWithLocalStorage"],
        [],
        {"DaemonSetPods", "SystemCriticalPods", "FailedBarePods"},
    ),
    (
        "NewConfig_DisableMultipleDefaults_ReturnsDefaultMinusMultiple",
        ["DaemonSetPods", "SystemCriticalPods"],
        [],
        {"PodsWithLocalStorage", "FailedBarePods"},
    ),
    ("NewConfig_EnableOneExtra_ReturnsDefaultPlusOne", [], ["PodsWithPVC"], DEFAULT_SET | {"PodsWithPVC"}),
    (
        "NewConfig_EnableMultipleExtra_ReturnsDefaultPlusMultiple",
        [],
        ["PodsWithPVC", "PodsWithoutPDB"],
        DEFAULT_SET | {"PodsWithPVC", "PodsWithoutPDB"},
    ),
    (
        "NewConfig_DisableAndEnable_ReturnsModifiedSet",
        ["FailedBarePods", "DaemonSetPods"],
        ["PodsWithPVC"],
        {"PodsWithLocalStorage", "SystemCriticalPods", "PodsWithPVC"},
    ),
    (
        "NewConfig_EnableOneExtra(PodsWithResourceClaims)_ReturnsDefaultPlusOne",
        [],
        ["PodsWithResourceClaims"],
        DEFAULT_SET | {"PodsWithResourceClaims"},
    ),
    (
        "NewConfig_DisableAndEnable_ReturnsModifiedSet (with PodsWithResourceClaims)",
        ["FailedBarePods", "DaemonSetPods"],
        ["PodsWithPVC", "PodsWithResourceClaims"],
        {"PodsWithLocalStorage", "SystemCriticalPods", "PodsWithPVC", "PodsWithResourceClaims"},
    ),
]


@pytest.mark.parametrize(("disabled", "extra", "want"), [pytest.param(*c[1:], id=c[0]) for c in EFFECTIVE])
def test_upstream_effective_pod_protections(disabled, extra, want):
    args = DefaultEvictorArgs.model_validate(protections(disabled, extra))
    assert args.protections() == want


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param({}, [], id="no PodProtections config"),
        pytest.param({"podProtections": {"config": {}}}, [], id="no PodsWithPVC config"),
        pytest.param(
            {
                "podProtections": {
                    "config": {"PodsWithPVC": {"protectedStorageClasses": [{"name": "sc1"}, {"name": "sc2"}]}}
                }
            },
            ["sc1", "sc2"],
            id="storage classes specified",
        ),
    ],
)
def test_upstream_protected_pvc_storage_classes(raw, want):
    cfg = DefaultEvictorArgs.model_validate(raw).pod_protections.config
    classes = cfg.pods_with_pvc.protected_storage_classes if cfg and cfg.pods_with_pvc else ()
    assert [c.name for c in classes] == want


def test_upstream_multiple_profiles_with_different_namespace_label_selectors():
    objs = [
        build_node("node1", 1000, 2000, 10),
        namespace("ns-prod", env="prod"),
        namespace("ns-test", env="test"),
        namespace("ns-backend", team="backend"),
        *[
            build_pod(f"pod-in-{ns}", 100, 100, "node1", chain(in_namespace(f"ns-{ns}"), normal_owner))
            for ns in ("prod", "test", "backend")
        ],
    ]
    prod = default_evictor({"namespaceLabelSelector": {"matchLabels": {"env": "prod"}}}, objs)
    backend = default_evictor({"namespaceLabelSelector": {"matchLabels": {"team": "backend"}}}, objs)
    by_name = {p.name: p for p in prod.state.pods}
    assert [prod.pre_eviction_filter(by_name[f"pod-in-{ns}"]) for ns in ("backend", "test", "prod")] == [
        False,
        False,
        True,
    ]
    assert [backend.pre_eviction_filter(by_name[f"pod-in-{ns}"]) for ns in ("prod", "test", "backend")] == [
        False,
        False,
        True,
    ]


SELECTOR_NAMESPACES = [
    namespace("ns-prod", env="prod", tier="frontend"),
    namespace("ns-staging", env="staging", tier="backend"),
    namespace("ns-test", env="test"),
    {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "ns-nolabels", "labels": {}}},
]
ALL_OPERATIONS = [
    (
        "MatchLabels and MatchExpressions In",
        {
            "matchLabels": {"tier": "frontend"},
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "staging"]}],
        },
        ["prod"],
        ["staging", "test"],
    ),
    (
        "MatchLabels and MatchExpressions Exists",
        {"matchLabels": {"tier": "backend"}, "matchExpressions": [{"key": "env", "operator": "Exists"}]},
        ["staging"],
        ["prod", "test"],
    ),
    (
        "Exists and In",
        {
            "matchExpressions": [
                {"key": "tier", "operator": "Exists"},
                {"key": "env", "operator": "In", "values": ["staging"]},
            ]
        },
        ["staging"],
        ["prod", "test"],
    ),
    (
        "DoesNotExist",
        {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
        ["test", "nolabels"],
        ["prod", "staging"],
    ),
    (
        "NotIn",
        {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod", "test"]}]},
        ["staging"],
        ["prod", "test"],
    ),
]


@pytest.mark.parametrize(
    ("sel", "passing", "failing"), [pytest.param(*c[1:], id=c[0]) for c in ALL_OPERATIONS]
)
def test_upstream_namespace_label_selector_all_operations(sel, passing, failing):
    objs = [
        build_node("node1", 1000, 2000, 10),
        *SELECTOR_NAMESPACES,
        *[
            build_pod(f"pod-in-{ns}", 100, 100, "node1", chain(in_namespace(f"ns-{ns}"), normal_owner))
            for ns in ("prod", "staging", "test", "nolabels")
        ],
    ]
    ev = default_evictor({"namespaceLabelSelector": sel}, objs)
    by_name = {p.name: p for p in ev.state.pods}
    assert all(ev.pre_eviction_filter(by_name[f"pod-in-{ns}"]) for ns in passing)
    assert not any(ev.pre_eviction_filter(by_name[f"pod-in-{ns}"]) for ns in failing)
