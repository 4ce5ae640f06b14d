"""The gang contention scenario: with the gang guard no two gangs hold part of the cluster at once and
every gang that fits the empty cluster runs; scheduler-plugins' semantics (gangGuard: false) on the
same gangs show the pattern the guard prevents."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.sim.gangs import GangScenario, run_gangs, workload

SCENARIO = GangScenario(nodes=4, node_cpu=16, load=3.0, seed=1)


def _config(guard: bool) -> Any:
    doc = {
        "profiles": [
            {
                "schedulerName": "batch" if guard else "scheduler-plugins",
                "plugins": {
                    "multiPoint": {
                        "enabled": [{"name": "Coscheduling"}, {"name": "CapacityScheduling"}],
                        "disabled": [{"name": "PrioritySort"}],
                    }
                },
                "pluginConfig": [{"name": "Coscheduling", "args": {"gangGuard": guard}}],
            }
        ]
    }
    return load_config(doc, default_registry(), source="<test>")


@pytest.fixture(scope="module")
def reports() -> dict[bool, Any]:
    logging.disable(logging.WARNING)
    try:
        return {g: run_gangs(SCENARIO, _config(g), default_registry()) for g in (True, False)}
    finally:
        logging.disable(logging.NOTSET)


def test_workload_asks_for_three_times_the_cluster() -> None:
    gangs = workload(SCENARIO)
    assert sum(size for *_, size in gangs) >= 3 * 4 * 16
    assert {size for *_, size in gangs} <= {4, 8, 16, 32, 64}


def test_guard_runs_every_gang_without_two_holding_at_once(reports: dict[bool, Any]) -> None:
    g = reports[True].gangs
    assert g["partially_bound_max"] == 0
    assert g["multi_held_seconds"] == 0
    assert g["unfinished"] == 0 and g["completed"] == g["total"]


def test_upstream_semantics_hold_gangs_against_each_other(reports: dict[bool, Any]) -> None:
    g = reports[False].gangs
    assert g["partially_bound_max"] == 0  # Permit never binds a gang short of its quorum
    assert g["multi_held_seconds"] > 0
    assert reports[True].gangs["pods_per_hour"] > 0
    assert set(reports[True].quota) == {"borrowed_share", "reclaim_preemptions", "min_violation_seconds"}
