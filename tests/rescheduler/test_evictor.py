"""DefaultEvictor's filter and preEvictionFilter, one table (descheduler's defaultevictor semantics)."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.api.pod import parse_pod
from harmonic.rescheduler.evictor import DefaultEvictor, DefaultEvictorArgs
from harmonic.rescheduler.state import from_manifests
from harmonic.testing.builders import node, pod
from tests.rescheduler.helpers import NOW, ts


def owned(b: Any) -> Any:
    return b.owner("ReplicaSet", "rs", uid="rs-1")


def started(seconds_ago: float):
    def f(o: dict[str, Any]) -> dict[str, Any]:
        o.setdefault("status", {})["startTime"] = ts(seconds_ago)
        return o

    return f


CASES: list[tuple[str, dict[str, Any], Any, bool]] = [
    ("owned pod is evictable", {}, owned(pod("a")).node("n1").obj(), True),
    ("bare pod is protected", {}, pod("a").node("n1").obj(), False),
    ("bare failed pod: protected by default", {}, pod("a").node("n1").phase("Failed").obj(), False),
    (
        "bare failed pod with FailedBarePods disabled",
        {"podProtections": {"defaultDisabled": ["FailedBarePods"]}},
        pod("a").node("n1").phase("Failed").obj(),
        True,
    ),
    (
        "bare failed pod with evictFailedBarePods (deprecated)",
        {"evictFailedBarePods": True},
        pod("a").node("n1").phase("Failed").obj(),
        True,
    ),
    ("daemonset pod", {}, pod("a").owner("DaemonSet", "ds").node("n1").obj(), False),
    (
        "daemonset pod with DaemonSetPods disabled",
        {"podProtections": {"defaultDisabled": ["DaemonSetPods"]}},
        pod("a").owner("DaemonSet", "ds").node("n1").obj(),
        True,
    ),
    (
        "mirror pod",
        {},
        owned(pod("a")).annotation("kubernetes.io/config.mirror", "x").node("n1").obj(),
        False,
    ),
    (
        "static pod",
        {},
        owned(pod("a")).annotation("kubernetes.io/config.source", "file").node("n1").obj(),
        False,
    ),
    ("system critical pod", {}, owned(pod("a")).priority(2_000_000_000).node("n1").obj(), False),
    (
        "system critical with protection disabled",
        {"evictSystemCriticalPods": True},
        owned(pod("a")).priority(2_000_000_000).node("n1").obj(),
        True,
    ),
    (
        "priority at the threshold",
        {"priorityThreshold": {"value": 100}},
        owned(pod("a")).priority(100).node("n1").obj(),
        False,
    ),
    (
        "priority below the threshold",
        {"priorityThreshold": {"value": 100}},
        owned(pod("a")).priority(99).node("n1").obj(),
        True,
    ),
    (
        "local storage",
        {},
        owned(pod("a")).spec(volumes=[{"name": "v", "emptyDir": {}}]).node("n1").obj(),
        False,
    ),
    (
        "local storage allowed",
        {"evictLocalStoragePods": True},
        owned(pod("a")).spec(volumes=[{"name": "v", "emptyDir": {}}]).node("n1").obj(),
        True,
    ),
    (
        "pvc pod, PodsWithPVC enabled",
        {"podProtections": {"extraEnabled": ["PodsWithPVC"]}},
        owned(pod("a"))
        .spec(volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}])
        .node("n1")
        .obj(),
        False,
    ),
    (
        "no PDB, PodsWithoutPDB enabled",
        {"podProtections": {"extraEnabled": ["PodsWithoutPDB"]}},
        owned(pod("a")).node("n1").obj(),
        False,
    ),
    (
        "evict annotation overrides protections",
        {},
        pod("a").annotation("descheduler.alpha.kubernetes.io/evict", "").node("n1").obj(),
        True,
    ),
    (
        "prefer-no-eviction, Mandatory",
        {"noEvictionPolicy": "Mandatory"},
        owned(pod("a")).annotation("descheduler.alpha.kubernetes.io/prefer-no-eviction", "").node("n1").obj(),
        False,
    ),
    (
        "prefer-no-eviction, Preferred",
        {"noEvictionPolicy": "Preferred"},
        owned(pod("a")).annotation("descheduler.alpha.kubernetes.io/prefer-no-eviction", "").node("n1").obj(),
        True,
    ),
    (
        "label selector mismatch",
        {"labelSelector": {"matchLabels": {"app": "x"}}},
        owned(pod("a")).label("app", "y").node("n1").obj(),
        False,
    ),
    ("minPodAge not reached", {"minPodAge": "10m"}, started(60)(owned(pod("a")).node("n1").obj()), False),
    ("minPodAge reached", {"minPodAge": "10m"}, started(3600)(owned(pod("a")).node("n1").obj()), True),
    (
        "terminating pod",
        {},
        {
            **owned(pod("a")).node("n1").obj(),
            "metadata": {**owned(pod("a")).obj()["metadata"], "deletionTimestamp": ts(1)},
        },
        False,
    ),
]


@pytest.mark.parametrize(("name", "args", "manifest", "want"), CASES, ids=[c[0] for c in CASES])
def test_filter(name, args, manifest, want):
    state = from_manifests([{**node("n1").obj(), "kind": "Node"}, {**manifest, "kind": "Pod"}], now=NOW)
    ev = DefaultEvictor(DefaultEvictorArgs.model_validate(args), state)
    assert ev.filter(parse_pod(manifest)) is want, ev.why_not(parse_pod(manifest))


def test_min_replicas_counts_pods_of_the_same_owner():
    pods = [owned(pod(f"p{i}")).node("n1").obj() for i in range(2)]
    state = from_manifests(
        [{**node("n1").obj(), "kind": "Node"}] + [{**p, "kind": "Pod"} for p in pods], now=NOW
    )
    assert not DefaultEvictor(DefaultEvictorArgs(min_replicas=3), state).filter(parse_pod(pods[0]))
    assert DefaultEvictor(DefaultEvictorArgs(min_replicas=2), state).filter(parse_pod(pods[0]))


def test_namespace_label_selector():
    p = owned(pod("a")).ns("prod").node("n1").obj()
    objs = [
        {**node("n1").obj(), "kind": "Node"},
        {**p, "kind": "Pod"},
        {"kind": "Namespace", "metadata": {"name": "prod", "labels": {"tier": "prod"}}},
    ]
    state = from_manifests(objs, now=NOW)
    yes = DefaultEvictorArgs.model_validate({"namespaceLabelSelector": {"matchLabels": {"tier": "prod"}}})
    no = DefaultEvictorArgs.model_validate({"namespaceLabelSelector": {"matchLabels": {"tier": "dev"}}})
    assert DefaultEvictor(yes, state).pre_eviction_filter(parse_pod(p))
    assert not DefaultEvictor(no, state).pre_eviction_filter(parse_pod(p))
