"""Scenario manifests with PodGroups and ElasticQuotas: gangs formed by a Job's pods, the ``gangs`` and
``quota`` metrics, and bad objects named by file and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harmonic.sim.errors import ScenarioError

from .helpers import container, objects, plan_of, run_worlds, scenario

ROOT = Path(__file__).resolve().parents[2]
BATCH = str(ROOT / "harmonic" / "data" / "profiles" / "batch.yaml")
UPSTREAM = str(ROOT / "examples" / "batch-upstream-semantics.yaml")


def _gang(name: str, size: int, cpu: str = "1") -> list[dict[str, Any]]:
    label = {"scheduling.x-k8s.io/pod-group": name}
    return [
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"minMember": size},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": {
                "parallelism": size,
                "completions": size,
                "template": {
                    "metadata": {"labels": label},
                    "spec": {"restartPolicy": "Never", "containers": [container(cpu)]},
                },
            },
        },
    ]


def _quota(ns: str, lo: str, hi: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "quota", "namespace": ns},
        "spec": {"min": {"cpu": lo, "memory": "8Gi"}, "max": {"cpu": hi, "memory": "16Gi"}},
    }


def _contention(quotas: bool = False) -> dict[str, Any]:
    """Two gangs of 6 x 1 cpu on 2 nodes of 4 cpu, arriving together: room for one at a time."""
    entries = [
        objects(*_gang("a", 6), namespace="team-a", duration="5m"),
        objects(*_gang("b", 6), namespace="team-b", duration="5m", at="1s"),
    ]
    if quotas:
        entries.insert(0, objects(_quota("team-a", "4", "8"), _quota("team-b", "4", "8")))
    return scenario(entries, nodes=2, zones=("a",))


def test_gangs_under_the_batch_profiles() -> None:
    worlds = run_worlds(_contention(), configs=(BATCH, UPSTREAM))
    batch = worlds["batch"].batch.metrics()
    assert batch["gangs"]["total"] == 2 and batch["gangs"]["completed"] == 2
    assert batch["gangs"]["partially_bound_max"] == 0
    assert batch["gangs"]["multi_held_seconds"] == 0
    assert "quota" not in batch
    upstream = worlds["scheduler-plugins"].batch.metrics()
    assert upstream["gangs"]["partially_bound_max"] == 0
    # kube-scheduler's default profile knows no gangs: it binds parts of them.
    assert worlds["default-scheduler"].batch.metrics()["gangs"]["partially_bound_max"] > 0


def test_team_below_min_reclaims_borrowed_capacity() -> None:
    """Team A's gang borrows 2 cpus beyond its min; team B's gang then reclaims them by preemption."""
    world = run_worlds(_contention(quotas=True), configs=(BATCH,))["batch"]
    m = world.batch.metrics()
    assert m["quota"]["reclaim_preemptions"] > 0 and m["quota"]["borrowed_share"] > 0
    assert m["gangs"]["completed"] == 2 and m["gangs"]["multi_held_seconds"] == 0


def test_scenarios_without_batch_objects_report_no_batch_metrics() -> None:
    worlds = run_worlds(
        scenario(
            [
                objects(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": "p"},
                        "spec": {"containers": [container()]},
                    }
                )
            ]
        )
    )
    assert next(iter(worlds.values())).batch.metrics() == {}


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        (
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": "g"},
                "spec": {"minMember": 0},
            },
            "spec.minMember",
        ),
        (_quota("t", "8", "4"), "spec.min.cpu"),
    ],
)
def test_bad_batch_objects_name_the_field(obj: dict[str, Any], field: str) -> None:
    with pytest.raises(ScenarioError, match=field.replace(".", r"\.")):
        plan_of(scenario([objects(obj)]))
