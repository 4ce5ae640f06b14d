"""benchmarks/feedback.py: the learnt matrix's and a singled-out workload's error falls, per seed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.benchmark_scripts import load


def profile(matrix: tuple[float, float], own: tuple[float, float] | None, lc: float = 1.0) -> dict[str, Any]:
    feedback: dict[str, Any] = {
        "matrix_error_initial": matrix[0],
        "matrix_error_final": matrix[1],
        "rank_correlation_initial": 0.5,
        "rank_correlation_final": 1.0,
        "slo_violation_share": 0.1,
        "workload_errors": {} if own is None else {"shop/cart": {"initial": own[0], "final": own[1]}},
    }
    return {
        "feedback": feedback,
        "latency_critical_slowdown_truth": {"mean": lc},
        "user_request_latency_ms": {"shop": {"p50": 1.0, "p99": 10.0}},
        "pods_completed": 100,
    }


def test_falls_are_taken_per_seed_then_averaged(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load("feedback")
    runs = {
        # matrix: falls 0.5 and 0.7; cartservice's own row: 0.8 and 0.6 (not the fall of the means)
        "1": {
            "harmonic-feedback": profile((0.4, 0.2), (1.0, 0.2), lc=0.5),
            "harmonic": profile((0.4, 0.4), None),
        },
        "2": {
            "harmonic-feedback": profile((1.0, 0.3), (0.5, 0.2), lc=1.5),
            "harmonic": profile((1.0, 1.0), None),
        },
    }
    for run in runs.values():
        run["harmonic-limit-feedback"] = run["harmonic-feedback"]
        run["harmonic-limit"] = run["harmonic"]
    bench.report("toy", {"runs": {s: {"profiles": p} for s, p in runs.items()}})
    out = capsys.readouterr().out
    assert "fall 0.600 ± " in out  # the matrix
    assert "own row error 0.750 ± " in out and "-> 0.200 ± " in out and "; fall 0.700 ± " in out
    assert "LC slowdown (truth) x 1.000 ± " in out  # 0.5 and 1.5
