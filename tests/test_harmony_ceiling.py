"""benchmarks/harmony_ceiling.py switches the truth's interference off and nothing else: the same world
with nobody slowed by anybody, and the placements unchanged (no profile reads the truth)."""

from __future__ import annotations

import dataclasses
from types import ModuleType

import pytest

from harmonic.plugins.registry import default_registry
from harmonic.sim.engine import Simulation
from harmonic.sim.metrics import summarize
from harmonic.sim.profiles import profile_runs
from harmonic.sim.truth.config import TRUTH_CLASSES, GroundTruth
from tests.benchmark_scripts import load
from tests.sim.helpers import deployment, job, objects, plan_of, scenario


@pytest.fixture(scope="module")
def ceiling() -> ModuleType:
    return load("harmony_ceiling")


def test_only_the_sensitivities_change(ceiling: ModuleType) -> None:
    truth = GroundTruth.model_validate({"convexity": 2.0, "serviceTimeMs": 3.0, "measurementNoise": 0.2})
    quiet = ceiling.without_interference(truth)
    assert all(quiet.sensitivity_of(c) == (0.0, 0.0, 0.0) for c in TRUTH_CLASSES)
    assert any(truth.sensitivity_of(c) != (0.0, 0.0, 0.0) for c in TRUTH_CLASSES)
    unchanged = (
        "convexity",
        "service_time_ms",
        "measurement_noise",
        "pressure",
        "workload_sensitivity_spread",
    )
    assert {k: getattr(quiet, k) for k in unchanged} == {k: getattr(truth, k) for k in unchanged}


def test_nobody_is_slowed_and_placements_stay(ceiling: ModuleType) -> None:
    sc = scenario(
        [
            objects(deployment("web", 6, cpu="1"), namespace="shop"),
            objects(job("crunch", cpu="2", parallelism=4, completions=4), namespace="batch", duration="10m"),
        ],
        nodes=3,
        cpu="8",
        seed=1,
        duration="20m",
    )
    plan = plan_of(sc)
    registry = default_registry()
    runs = profile_runs((), registry)[:1]
    written = next(iter(Simulation(plan, runs, registry).run().values()))
    quiet_plan = dataclasses.replace(plan, ground_truth=ceiling.without_interference(plan.ground_truth))
    quiet = next(iter(Simulation(quiet_plan, runs, registry).run().values()))
    assert summarize(written)["latency_critical_slowdown_truth"]["mean"] > 0
    assert summarize(quiet)["latency_critical_slowdown_truth"]["mean"] == 0
    assert quiet.replicas_on == written.replicas_on
