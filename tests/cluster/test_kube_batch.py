"""Coscheduling and CapacityScheduling on a live cluster (the API-server double over HTTP): PodGroup and
ElasticQuota informers, gangs bound all together, quotas enforced, PodGroup status written."""

from __future__ import annotations

from typing import Any

from harmonic.cluster.podgroups import next_status
from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.testing import elastic_quota, node, pod, pod_group
from harmonic.testing.apiserver import ApiServerDouble

from .conftest import scheduling, wait_until


def _batch_config() -> Any:
    doc = {
        "leaderElection": {"leaderElect": False},
        "profiles": [
            {
                "schedulerName": "harmonic",
                "plugins": {
                    "multiPoint": {
                        "enabled": [{"name": "Coscheduling"}, {"name": "CapacityScheduling"}],
                        "disabled": [{"name": "PrioritySort"}],
                    }
                },
            }
        ],
    }
    return load_config(doc, default_registry(), source="<test>")


def _member(name: str, group: str, cpu: str = "1", ns: str = "default") -> dict[str, Any]:
    return pod(name).ns(ns).group(group).req(cpu=cpu).scheduler("harmonic").obj()


def test_gang_binds_together_and_its_status_is_written(api: ApiServerDouble, start_scheduler):
    api.create_many("nodes", [node(f"n{i}").cap(cpu="4", memory="16Gi", pods=110).obj() for i in range(2)])
    api.create("podgroups", pod_group("train").min_member(3).obj())
    with scheduling(start_scheduler, config=_batch_config()) as r:
        api.create_many("pods", [_member(f"w{i}", "train") for i in range(2)])
        # Two of three members: nothing binds, the group waits for its quorum.
        wait_until(
            lambda: (api.get("podgroups", "train", "default")["status"] or {}).get("phase") == "Pending"
        )
        assert not api.pod_placement()
        api.create("pods", _member("w2", "train"))
        wait_until(lambda: len(api.pod_placement()) == 3, what="the gang bound")
        wait_until(
            lambda: (api.get("podgroups", "train", "default")["status"] or {}).get("phase") == "Scheduling",
            what="phase Scheduling",
        )
        assert r.live.pod_group_status is not None and r.live.pod_group_status.failed == 0


def test_pod_naming_a_missing_pod_group_waits_and_binds_once_it_exists(api: ApiServerDouble, start_scheduler):
    api.create("nodes", node("n0").cap(cpu="4", memory="16Gi", pods=110).obj())
    with scheduling(start_scheduler, config=_batch_config()):
        api.create("pods", _member("x", "later"))
        failed = wait_until(lambda: api.events("FailedScheduling"), what="FailedScheduling")
        assert "PodGroup not found" in failed[0]["note"]
        api.create("podgroups", pod_group("later").min_member(1).obj())
        wait_until(lambda: api.pod_placement().get("default/x"), what="bound after the PodGroup appeared")


def test_elastic_quota_max_holds_on_a_live_cluster(api: ApiServerDouble, start_scheduler):
    api.create("nodes", node("n0").cap(cpu="8", memory="16Gi", pods=110).obj())
    api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    api.create("elasticquotas", elastic_quota("team").min(cpu=2, memory="4Gi").max(cpu=2, memory="4Gi").obj())
    with scheduling(start_scheduler, config=_batch_config()):
        api.create_many(
            "pods",
            [
                pod(f"t{i}").ns("team").req(cpu="1", memory="1Gi").scheduler("harmonic").obj()
                for i in range(3)
            ],
        )
        wait_until(lambda: len(api.pod_placement()) == 2, what="two pods within max")
        failed = wait_until(lambda: api.events("FailedScheduling"), what="the third refused")
        assert "ElasticQuota team is more than Max" in failed[0]["note"]
    assert len(api.pod_placement()) == 2


def test_pod_group_phases_follow_the_controller() -> None:
    pg = pod_group("g").min_member(2).obj()
    members = [pod(f"m{i}").group("g").phase("Running").obj() for i in range(2)]
    s1 = next_status(pg, members, "t")
    assert s1["phase"] == "Pending"
    s2 = next_status({**pg, "status": s1}, members, "t")
    assert s2["phase"] == "Scheduling"
    s3 = next_status({**pg, "status": s2}, members, "t")
    assert (s3["phase"], s3["running"]) == ("Running", 2)
    done = [pod(f"m{i}").group("g").phase("Succeeded").obj() for i in range(2)]
    assert next_status({**pg, "status": s3}, done, "t")["phase"] == "Finished"
    assert next_status({**pg, "status": s3}, members[:1], "t")["phase"] == "Pending"
