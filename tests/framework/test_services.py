"""Handle services: plugins declare what they read, and a profile is refused (required service) or
runs with its degraded mode logged once (declared degraded mode) when its scheduler lacks one."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from harmonic.cluster.memory import InMemoryCluster
from harmonic.framework import services
from harmonic.framework.config import load_config
from harmonic.framework.services import BATCH, NAMESPACES, WORKLOADS, MissingServiceError, Need
from harmonic.plugins.podtopologyspread import PodTopologySpread
from harmonic.plugins.podtopologyspread.args import PodTopologySpreadArgs
from harmonic.plugins.registry import in_tree_registry
from harmonic.scheduler.scheduler import Scheduler

GANGS: dict[str, Any] = {
    "profiles": [
        {
            "schedulerName": "gangs",
            "plugins": {
                "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
                "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
            },
        }
    ]
}


def _scheduler(config: dict[str, Any] | None, drop: tuple[str, ...] = ()) -> Scheduler:
    cluster = InMemoryCluster()
    offered = {k: v for k, v in cluster.scheduler_services().items() if k not in drop}
    return Scheduler(load_config(config, in_tree_registry()), in_tree_registry(), cluster, services=offered)


@pytest.fixture(autouse=True)
def _fresh_log_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(services, "_logged", set())


def _degraded(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "harmonic.framework.services"]


def test_a_required_service_missing_refuses_the_profile_naming_plugin_and_service() -> None:
    with pytest.raises(MissingServiceError) as e:
        _scheduler(GANGS, drop=(BATCH.name,))
    assert str(e.value) == (
        "profile gangs: plugin Coscheduling needs the 'batch' service (PodGroups and ElasticQuotas), "
        "which this scheduler does not provide"
    )


def test_the_in_memory_cluster_offers_everything_the_default_profile_reads(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        _scheduler(None)
        _scheduler(GANGS)
    assert _degraded(caplog) == []


def test_a_degraded_mode_is_logged_once_per_plugin_and_service(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            _scheduler(None, drop=(NAMESPACES.name, WORKLOADS.name))
    assert _degraded(caplog) == [
        "profile default-scheduler: plugin PodTopologySpread runs without the 'workloads' service "
        "(the selectors of Services, ReplicationControllers, ReplicaSets and StatefulSets): pods that "
        "declare no constraints get none, as if no workload selected them",
        "profile default-scheduler: plugin InterPodAffinity runs without the 'namespaces' service "
        "(namespace labels): every namespace counts as unlabelled: only an empty namespaceSelector "
        "selects it",
    ]


@pytest.mark.parametrize(
    ("args", "needs"),
    [
        # System defaulting spreads by the workloads selecting the pod.
        (PodTopologySpreadArgs(), (WORKLOADS,)),
        # List defaulting with no default constraints never reads them.
        (PodTopologySpreadArgs(defaulting_type="List"), ()),
    ],
)
def test_needs_follow_the_args(args: PodTopologySpreadArgs, needs: tuple[Any, ...]) -> None:
    assert tuple(n.key for n in PodTopologySpread.needs(args)) == needs


def test_every_in_tree_need_names_a_known_key_and_says_what_degrades() -> None:
    keys = {v.name for v in vars(services).values() if isinstance(v, services.ServiceKey)}
    for cls in in_tree_registry().values():
        for need in cls.NEEDS:
            assert isinstance(need, Need)
            assert need.key.name in keys | {"affinity_graph", "dissonance"}, cls.NAME
            assert need.without is None or need.without.strip(), cls.NAME
