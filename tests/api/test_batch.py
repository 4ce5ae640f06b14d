"""PodGroup and ElasticQuota manifests: what is read, and bad input named by object and field."""

from __future__ import annotations

import pytest

from harmonic.api.batch import BatchObjects, parse_elastic_quota, parse_pod_group
from harmonic.api.errors import ObjectError
from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.testing import elastic_quota, pod_group


def test_pod_group_fields() -> None:
    pg = parse_pod_group(pod_group("g").ns("ml").min_member(8).min_resources(cpu="16").timeout(30).obj(), 5.0)
    assert (pg.full_name, pg.min_member, pg.min_resources, pg.schedule_timeout_seconds, pg.created) == (
        "ml/g",
        8,
        {"cpu": 16000},
        30,
        5.0,
    )


@pytest.mark.parametrize("mm", [0, -3])
def test_min_member_below_one_is_an_error(mm: int) -> None:
    with pytest.raises(ObjectError, match=r"PodGroup default/g: spec.minMember: must be at least 1"):
        parse_pod_group(pod_group("g").min_member(mm).obj())


def test_min_above_max_is_an_error() -> None:
    raw = elastic_quota("team").min(cpu=8).max(cpu=4).obj()
    with pytest.raises(
        ObjectError, match=r"ElasticQuota team/quota: spec.min.cpu: must not exceed spec.max.cpu"
    ):
        parse_elastic_quota(raw)


def test_store_keeps_one_quota_per_namespace_and_notifies() -> None:
    seen: list[tuple[str, bool, bool]] = []
    store = BatchObjects()
    store.listen(lambda kind, old, new: seen.append((kind, old is None, new is None)))
    store.apply(elastic_quota("team", "first").min(cpu=1).obj())
    store.apply(elastic_quota("team", "second").min(cpu=2).obj())
    store.apply(pod_group("g").obj())
    store.delete("PodGroup", "default", "g")
    assert store.quotas["team"].name == "first"
    assert seen == [("ElasticQuota", True, False), ("PodGroup", True, False), ("PodGroup", False, True)]


def test_bad_coscheduling_args_name_the_field() -> None:
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "batch",
                "plugins": {
                    "multiPoint": {
                        "enabled": [{"name": "Coscheduling"}],
                        "disabled": [{"name": "PrioritySort"}],
                    }
                },
                "pluginConfig": [{"name": "Coscheduling", "args": {"podGroupRejectPercentage": 101}}],
            }
        ],
    }
    with pytest.raises(Exception, match="podGroupRejectPercentage"):
        load_config(cfg, default_registry(), source="<test>")


def test_batch_profile_loads() -> None:
    from importlib.resources import files

    import yaml

    raw = yaml.safe_load((files("harmonic.data") / "profiles" / "batch.yaml").read_text())
    cfg = load_config(raw, default_registry(), source="batch.yaml")
    prof = cfg.profiles[0]
    assert list(prof.plugins_at("queueSort")) == ["Coscheduling"]
    assert "CapacityScheduling" in prof.plugins_at("preFilter")
    # CapacityScheduling is the profile's only preemption: DefaultPreemption would evict for a pod its
    # quota refused without freeing any quota (tests/extender/test_batch.py, the in-process half).
    assert list(prof.plugins_at("postFilter")) == ["Coscheduling", "CapacityScheduling"]
