"""benchmarks/feedback_moves.py: per-seed ratios of the run with moves against the run without, and
the moves counted per run."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType

import pytest

from tests.benchmark_scripts import BENCHMARKS, load


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load("feedback_moves")


def metrics(lc: float, p99: float, pods: int, cpu_s: float, asked: int = 0, executed: int = 0) -> dict:
    return {
        "latency_critical_slowdown_truth": {"mean": lc},
        "user_request_latency_ms": {"shop": {"p50": 1.0, "p99": p99}},
        "pods_completed": pods,
        "cpu_seconds_completed": cpu_s,
        "feedback": {"moves": {"asked": asked, "executed": executed}},
    }


def test_ratios_are_paired_by_seed(bench: ModuleType) -> None:
    with_moves = {1: metrics(0.6, 30.0, 90, 900.0, 10, 2), 2: metrics(0.2, 10.0, 50, 500.0, 20, 4)}
    without = {1: metrics(0.3, 20.0, 100, 1000.0), 2: metrics(0.4, 20.0, 50, 500.0), 3: metrics(1, 1, 1, 1)}
    row = bench.rows(with_moves, without)
    # seed 1: 2.0, seed 2: 0.5 -> mean 1.25 (seed 3 has no run with moves and is left out)
    assert row["LC slowdown (truth)"].startswith("x 1.250 ± ") and row["LC slowdown (truth)"].endswith(
        "(n=2)"
    )
    assert row["p99"].startswith("x 1.000 ± ")  # 1.5 and 0.5
    assert row["pods completed"].startswith("x 0.950 ± ")  # 0.9 and 1.0
    assert (
        row["moves asked / carried out"].startswith("15.0 ± ")
        and " / 3.0 ± " in row["moves asked / carried out"]
    )


def test_a_scenario_without_feedback_is_refused(tmp_path) -> None:
    plain = tmp_path / "plain.yaml"
    plain.write_text("apiVersion: harmonic.dev/v1alpha1\nkind: Scenario\nname: plain\n")
    run = subprocess.run(
        [sys.executable, str(BENCHMARKS / "feedback_moves.py"), "--scenario", str(plain)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and "no `feedback` block" in run.stderr


def test_add_feedback_gives_a_plain_scenario_the_loop_and_keeps_a_written_block(bench: ModuleType) -> None:
    plain = {"kind": "Scenario", "name": "plain"}
    assert bench.with_feedback(plain, add=False) is None
    added = bench.with_feedback(plain, add=True)
    assert added["feedback"] == {"interval": "1m", "learn": ["harmonic-feedback"]} and "feedback" not in plain
    written = {"name": "w", "feedback": {"interval": "30s", "learn": ["x"], "moves": {"maxPerRound": 3}}}
    # A written block is kept as written, whatever the flag; the moves are the benchmark's to set.
    for add in (False, True):
        assert bench.with_feedback(written, add)["feedback"] == {"interval": "30s", "learn": ["x"]}
    assert written["feedback"]["moves"] == {"maxPerRound": 3}


def test_a_file_that_is_no_scenario_is_refused(tmp_path) -> None:
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n")
    run = subprocess.run(
        [sys.executable, str(BENCHMARKS / "feedback_moves.py"), "--scenario", str(listed), "--add-feedback"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and "not a scenario" in run.stderr and "Traceback" not in run.stderr
