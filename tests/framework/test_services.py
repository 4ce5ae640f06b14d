"""Handle services: plugins declare what they read, and a profile is refused (required service) or
runs with its degraded mode logged once (declared degraded mode) when its scheduler lacks one."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from harmonic.api.batch import BatchObjects
from harmonic.cluster.memory import InMemoryCluster
from harmonic.extender.cache import ClusterCache
from harmonic.extender.engine import Extender
from harmonic.framework import services
from harmonic.framework.config import load_config
from harmonic.framework.services import (
    BATCH,
    NAMESPACES,
    PDBS,
    VOLUMES,
    WORKLOADS,
    MissingServiceError,
    Need,
)
from harmonic.plugins.podtopologyspread import PodTopologySpread
from harmonic.plugins.podtopologyspread.args import PodTopologySpreadArgs
from harmonic.plugins.registry import in_tree_registry
from harmonic.scheduler.scheduler import Scheduler
from harmonic.signals import dissonance, graph, usage

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
    with caplog.at_level(logging.DEBUG):
        for _ in range(3):
            _scheduler(None, drop=(NAMESPACES.name, WORKLOADS.name))
    assert _degraded(caplog) == [
        "profile default-scheduler: plugin PodTopologySpread runs without the 'workloads' service "
        "(the selectors of Services, ReplicationControllers, ReplicaSets and StatefulSets): pods that "
        "declare no constraints get none, as if no workload selected them",
        "profile default-scheduler: plugin InterPodAffinity runs without the 'namespaces' service "
        "(namespace labels): every namespace counts as unlabelled: only an empty namespaceSelector "
        "selects it",
        "profile default-scheduler: 2 plugins run without services this scheduler does not offer "
        "('workloads', 'namespaces'); -vv logs what each does without",
    ]


@pytest.mark.parametrize(
    ("drop", "levels"),
    [
        # The adapter offers no such service whatever the user sets: each plugin's detail at debug, one
        # summary line at info, no warning.
        ((VOLUMES.name,), [logging.DEBUG] * 4 + [logging.INFO]),
        ((PDBS.name, NAMESPACES.name), [logging.DEBUG, logging.DEBUG, logging.INFO]),
        ((), []),
    ],
)
def test_a_service_the_adapter_does_not_offer_is_no_warning(
    drop: tuple[str, ...], levels: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        _scheduler(None, drop=drop)
    assert [r.levelno for r in caplog.records if r.name == "harmonic.framework.services"] == levels


def test_the_rescheduler_dry_run_warns_of_nothing_it_cannot_change(caplog: pytest.LogCaptureFixture) -> None:
    """The README's rescheduler example: its what-if scheduler offers no volumes, workloads, namespaces
    or PodDisruptionBudgets (it guards budgets itself), which no flag changes."""
    from click.testing import CliRunner

    from harmonic.cli import main

    examples = Path(__file__).resolve().parents[2] / "examples" / "rescheduler"
    args = ["reschedule", "--policy", str(examples / "make-room.yaml")]
    args += ["--manifests", str(examples / "fragmented-cluster.yaml"), "--once", "--dry-run"]
    with caplog.at_level(logging.INFO):
        result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert [m for m in _degraded(caplog) if "plugin" in m and "runs without" in m] == []
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


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
    modules = (services, graph, usage, dissonance)
    keys = {v for m in modules for v in vars(m).values() if isinstance(v, services.ServiceKey)}
    for cls in in_tree_registry().values():
        for need in cls.NEEDS:
            assert isinstance(need, Need)
            assert need.key in keys, cls.NAME
            assert need.without is None or need.without.strip(), cls.NAME


def test_the_extender_runs_coscheduling_without_a_queue_or_permit(caplog: pytest.LogCaptureFixture) -> None:
    """The extender offers neither ``activate`` nor ``waiting_pods``: Coscheduling's degraded modes are
    logged, not hidden behind a no-op."""
    with caplog.at_level(logging.DEBUG):
        Extender(
            load_config(GANGS, in_tree_registry()),
            in_tree_registry(),
            cache=ClusterCache(),
            services={BATCH.name: BatchObjects()},
        )
    assert [m for m in _degraded(caplog) if "Coscheduling" in m] == [
        "profile gangs: plugin Coscheduling runs without the 'activate' service (moves pods to the active "
        "scheduling queue): a gang's pods turned away are retried on the next cluster event, not at once",
        "profile gangs: plugin Coscheduling runs without the 'waiting_pods' service (the pods waiting at "
        "Permit): a failing member releases no waiting siblings (no pod waits at Permit)",
    ]


@pytest.mark.parametrize("plugin", ["TargetLoadPacking", "LoadVariationRiskBalancing", "LoadAware"])
def test_a_load_aware_plugin_without_usage_logs_that_it_scores_from_requests(
    plugin: str, caplog: pytest.LogCaptureFixture
) -> None:
    config = {
        "profiles": [{"schedulerName": "load", "plugins": {"multiPoint": {"enabled": [{"name": plugin}]}}}]
    }
    with caplog.at_level(logging.WARNING):
        _scheduler(config)
    assert _degraded(caplog) == [
        f"profile load: plugin {plugin} runs without the 'node_usage' service (observed node usage and "
        "workload forecasts): no node has metrics: every node is scored from requests"
    ]


def test_an_optional_service_absent_is_logged_at_info_not_as_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Dissonance without the feedback loop's model is the ordinary configuration: said at info, so
    `harmonic simulate` and `harmonic run` do not warn about it on every start."""
    config = {
        "profiles": [{"schedulerName": "h", "plugins": {"multiPoint": {"enabled": [{"name": "Dissonance"}]}}}]
    }
    with caplog.at_level(logging.INFO):
        _scheduler(config)
    mine = [
        r
        for r in caplog.records
        if r.name == "harmonic.framework.services" and "Dissonance" in r.getMessage()
    ]
    assert [r.levelno for r in mine] == [logging.INFO]
    assert "'dissonance' service" in mine[0].getMessage()
