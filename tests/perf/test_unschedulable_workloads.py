"""The Unschedulable scheduler_perf workloads at small sizes (upstream's integration-test size is
5 nodes / 1 init / 10 measured)."""

from pathlib import Path

from harmonic.perf.runner import run_workload
from harmonic.perf.workloads import WORKLOADS
from harmonic.perf.workloads.unschedulable import unschedulable, unschedulable_pool
from harmonic.plugins.registry import default_registry


def test_registered_with_upstream_sizes():
    assert WORKLOADS["Unschedulable"][1] == (5000, 20000, 10000)
    assert WORKLOADS["UnschedulablePool"][1] == (5000, 20000, 10000)


def test_unschedulable_measures_the_default_pods():
    r = run_workload(unschedulable(5, 1, 10), default_registry())
    assert r.scheduled == 10 and r.measured_pods == 10


def test_unschedulable_pool_schedules_every_measured_pod_past_the_pool():
    workload = unschedulable_pool(5, 30, 10)
    # Every init pod asks for more CPU than any node has.
    assert all(p["spec"]["containers"][0]["resources"]["requests"]["cpu"] == 9 for p in workload.init_pods())
    r = run_workload(workload, default_registry())
    assert r.scheduled == 10 and r.unschedulable_attempts == 0


def test_benchmark_runs_a_given_configuration(capsys):
    from harmonic.perf.cli import main

    config = Path(__file__).parents[2] / "benchmarks" / "configs" / "core-only.yaml"
    args = ["--nodes", "5", "--init-pods", "2", "--pods", "10", "--config", str(config)]
    assert main(args) == 0
    assert "scheduled 10/10" in capsys.readouterr().out
