"""Coscheduling and CapacityScheduling answering the extender's filter and preempt verbs from its
informer-fed cache, with the bundled ``batch`` profile."""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

import pytest
import yaml

from harmonic.api.batch import BatchObjects
from harmonic.cluster.memory import InMemoryCluster
from harmonic.extender.cache import ClusterCache
from harmonic.extender.engine import Extender
from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.testing import elastic_quota, node, pod, pod_group
from harmonic.testing.harness import Harness

BATCH_PROFILE: dict[str, Any] = yaml.safe_load(
    (files("harmonic.data") / "profiles" / "batch.yaml").read_text()
)


def _extender() -> tuple[Extender, InMemoryCluster, BatchObjects]:
    cluster = InMemoryCluster()
    cache = ClusterCache()
    cluster.subscribe(cache.on_node, cache.on_pod)
    batch = BatchObjects()
    cfg = load_config(BATCH_PROFILE, default_registry(), source="batch.yaml")
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


# ---------------------------------------------------------------- preempt
def _quota(ns: str, lo: int, hi: int) -> dict[str, Any]:
    return elastic_quota(ns).min(cpu=lo, memory="8Gi").max(cpu=hi, memory="8Gi").obj()


def _running(name: str, ns: str, priority: int, cpu: int = 1) -> dict[str, Any]:
    return pod(name).ns(ns).uid(name).req(cpu=str(cpu), memory="1Gi").priority(priority).node("n0").obj()


@pytest.mark.parametrize(
    ("case", "quotas", "running", "preemptor", "proposed", "victims"),
    [
        (
            # team is at its max: only its own lower-priority pods free quota, and the least important
            # goes, not the quota-blind pick of another team's pod.
            "same namespace, over min",
            [_quota("team", 2, 2), _quota("other", 2, 2)],
            [("other0", "other", 0), ("other1", "other", 1), ("team0", "team", 50), ("team1", "team", 51)],
            ("team", 100, 1),
            ["other0"],
            ["team0"],
        ),
        (
            # team stays within its min of 2: it reclaims from other, which borrows (3 used, min 2);
            # other's least important pod goes, not team's own lowest-priority pod.
            "cross namespace, borrowed",
            [_quota("team", 2, 4), _quota("other", 2, 4)],
            [("team0", "team", 0), *((f"other{i}", "other", 10 + i) for i in range(3))],
            ("team", 100, 1),
            ["team0"],
            ["other0"],
        ),
        (
            # team within its min, but no namespace uses more than its min and pods without a quota are
            # never a quota's victims: nothing to reclaim, the node is dropped.
            "within min, nothing borrowed",
            [_quota("team", 2, 4), _quota("other", 2, 4)],
            [("other0", "other", 0), ("other1", "other", 0), ("free0", "free", 0), ("free1", "free", 0)],
            ("team", 100, 1),
            ["free0"],
            None,
        ),
        (
            # a 2-cpu pod in a namespace whose max is 1 cpu exceeds it even with its namespace emptied.
            "over max",
            [_quota("team", 1, 1), _quota("other", 2, 4)],
            [("team0", "team", 0), ("other0", "other", 0), ("other1", "other", 0)],
            ("team", 100, 2),
            ["team0"],
            None,
        ),
        (
            # no quota on either side: lower-priority pods without a quota, as DefaultPreemption would.
            "no quota",
            [_quota("team", 2, 4)],
            [(f"free{i}", "free", i) for i in range(4)],
            ("free", 100, 1),
            ["free0"],
            ["free0"],
        ),
    ],
)
def test_preempt_answers_with_capacity_scheduling_victims(
    case: str,
    quotas: list[dict[str, Any]],
    running: list[tuple[str, str, int]],
    preemptor: tuple[str, int, int],
    proposed: list[str],
    victims: list[str] | None,
) -> None:
    """kube-scheduler's DefaultPreemption proposes ``proposed`` (quota-blind); the extender answers with
    CapacityScheduling's own victims on the node (the dry run of ``harmonic run``'s PostFilter), or
    drops the node where CapacityScheduling would not preempt."""
    ns, priority, cpu = preemptor
    pending = pod("p").ns(ns).uid("p").req(cpu=str(cpu), memory="1Gi").priority(priority).scheduler("batch")
    ext, cluster, batch = _extender()
    for q in quotas:
        batch.apply(q)
    on_node = [_running(*r) for r in running]
    for r in on_node:
        cluster.create_pod(r)
    cluster.create_pod(pending.obj())
    body = {
        "Pod": cluster.pods[f"{ns}/p"],
        "NodeNameToMetaVictims": {"n0": {"Pods": [{"UID": u} for u in proposed], "NumPDBViolations": 0}},
    }
    got = json.loads(ext.preempt(json.dumps(body).encode()))
    want = {} if victims is None else {"n0": {"Pods": [{"UID": u} for u in victims], "NumPDBViolations": 0}}
    assert got == {"NodeNameToMetaVictims": want}

    # The same world scheduled in process: PostFilter evicts exactly those victims.
    h = Harness(BATCH_PROFILE)
    h.add_nodes([node("n0").cap(cpu="4", memory="8Gi", pods=110).obj()])
    for q in quotas:
        h.cluster.apply_batch(q)
    h.add_pods(on_node)
    h.schedule()
    h.add_pods([pending.obj()])
    h.settle(5)
    evicted = sorted(
        r["metadata"]["name"]
        for r in on_node
        if f"{r['metadata']['namespace']}/{r['metadata']['name']}" not in h.cluster.pods
    )
    assert evicted == (victims or [])


def test_preempt_keeps_kube_schedulers_victims_where_the_profile_already_accepts_the_pod() -> None:
    """Harmonic's filters pass the pod on the node (kube-scheduler's own filters did not): Harmonic has no
    preemption of its own to run there, and keeps kube-scheduler's victims if the pod still passes."""
    ext, cluster, batch = _extender()
    batch.apply(_quota("team", 2, 4))
    cluster.create_pod(_running("team0", "team", 0))
    cluster.create_pod(
        pod("p").ns("team").uid("p").req(cpu="1", memory="1Gi").priority(100).scheduler("batch").obj()
    )
    body = {
        "Pod": cluster.pods["team/p"],
        "NodeNameToMetaVictims": {"n0": {"Pods": [{"UID": "team0"}], "NumPDBViolations": 1}},
    }
    got = json.loads(ext.preempt(json.dumps(body).encode()))
    assert got == {"NodeNameToMetaVictims": body["NodeNameToMetaVictims"]}
