"""Coscheduling and CapacityScheduling answering the extender's filter verb from its informer-fed cache."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harmonic.api.batch import BatchObjects
from harmonic.cluster.memory import InMemoryCluster
from harmonic.extender.cache import ClusterCache
from harmonic.extender.engine import Extender
from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.testing import elastic_quota, node, pod, pod_group


def _extender() -> tuple[Extender, InMemoryCluster, BatchObjects]:
    cluster = InMemoryCluster()
    cache = ClusterCache()
    cluster.subscribe(cache.on_node, cache.on_pod)
    batch = BatchObjects()
    doc = {
        "profiles": [
            {
                "schedulerName": "batch",
                "plugins": {
                    "multiPoint": {
                        "enabled": [{"name": "Coscheduling"}, {"name": "CapacityScheduling"}],
                        "disabled": [{"name": "PrioritySort"}],
                    }
                },
            }
        ]
    }
    cfg = load_config(doc, default_registry(), source="<test>")
    ext = Extender(cfg, default_registry(), cache=cache, services={"batch": batch})
    cluster.add_node(node("n0").cap(cpu="4", memory="8Gi", pods=110).obj())
    cache.mark_synced()
    return ext, cluster, batch


def _filter(ext: Extender, manifest: dict[str, Any]) -> dict[str, Any]:
    body = {"Pod": manifest, "NodeNames": ["n0"]}
    out: dict[str, Any] = json.loads(ext.filter(json.dumps(body).encode()))
    return out


def test_gang_short_of_members_fails_every_node_as_unresolvable() -> None:
    ext, cluster, batch = _extender()
    batch.apply(pod_group("g").min_member(3).obj())
    for i in range(2):
        cluster.create_pod(pod(f"w{i}").group("g").req(cpu="1").scheduler("batch").obj())
    got = _filter(ext, cluster.pods["default/w0"])
    assert "cannot find enough sibling pods" in got["FailedAndUnresolvableNodes"]["n0"]
    cluster.create_pod(pod("w2").group("g").req(cpu="1").scheduler("batch").obj())
    got = _filter(ext, cluster.pods["default/w0"])
    assert got["NodeNames"] == ["n0"]


def test_quota_max_counts_bound_pods_from_the_cache() -> None:
    ext, cluster, batch = _extender()
    batch.apply(elastic_quota("team").min(cpu=2, memory="2Gi").max(cpu=2, memory="2Gi").obj())
    for i in range(2):
        cluster.create_pod(pod(f"t{i}").ns("team").req(cpu="1", memory="1Gi").node("n0").obj())
    cluster.create_pod(pod("t2").ns("team").req(cpu="1", memory="1Gi").scheduler("batch").obj())
    got = _filter(ext, cluster.pods["team/t2"])
    assert "ElasticQuota team is more than Max" in got["FailedNodes"]["n0"]


def test_missing_pod_group_is_not_refused_at_filter() -> None:
    """docs/batch.md: "PodGroup not found" is Permit's verdict, which the extender protocol lacks."""
    ext, cluster, _ = _extender()
    cluster.create_pod(pod("w0").group("nope").req(cpu="1").scheduler("batch").obj())
    assert _filter(ext, cluster.pods["default/w0"])["NodeNames"] == ["n0"]


def test_complete_gang_member_passes_alone() -> None:
    """No Permit: a member of a gang with enough pods passes filter while none of its siblings is placed."""
    ext, cluster, batch = _extender()
    batch.apply(pod_group("g").min_member(3).obj())
    for i in range(3):
        cluster.create_pod(pod(f"w{i}").group("g").req(cpu="2").scheduler("batch").obj())
    assert _filter(ext, cluster.pods["default/w0"])["NodeNames"] == ["n0"]


@pytest.mark.parametrize("with_quota", [True, False])
def test_preempt_keeps_no_node_for_a_pod_the_quota_refused(with_quota: bool) -> None:
    """docs/batch.md, "No reclaim preemption": the preempt verb re-runs PreFilter with the victims off
    the node, but the quota still counts them, so even a same-namespace lower-priority victim (which
    upstream's CapacityScheduling would preempt) does not make the node acceptable."""
    ext, cluster, batch = _extender()
    if with_quota:
        batch.apply(elastic_quota("team").min(cpu=2, memory="2Gi").max(cpu=2, memory="2Gi").obj())
    for i in range(2):
        cluster.create_pod(pod(f"t{i}").ns("team").uid(f"t{i}").req(cpu="1", memory="1Gi").node("n0").obj())
    cluster.create_pod(
        pod("t2").ns("team").uid("t2").req(cpu="1", memory="1Gi").priority(100).scheduler("batch").obj()
    )
    body = {
        "Pod": cluster.pods["team/t2"],
        "NodeNameToMetaVictims": {"n0": {"Pods": [{"UID": "t0"}], "NumPDBViolations": 0}},
    }
    got = json.loads(ext.preempt(json.dumps(body).encode()))
    kept = {"n0": {"Pods": [{"UID": "t0"}], "NumPDBViolations": 0}}
    assert got == {"NodeNameToMetaVictims": {} if with_quota else kept}
