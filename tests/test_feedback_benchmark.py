"""benchmarks/feedback.py: the learnt matrix's and a singled-out workload's error falls, per seed."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.benchmark_scripts import load


def feedback_bench() -> ModuleType:
    load("feedback_moves")  # imported by name inside the script
    return load("feedback")


def profile(
    matrix: tuple[float, float], own: tuple[float, float] | None, lc: float = 1.0, learning: bool = True
) -> dict[str, Any]:
    feedback: dict[str, Any] = {
        "learning": learning,
        "matrix_error_initial": matrix[0],
        "matrix_error_final": matrix[1],
        "workload_error_initial": 2 * matrix[0],
        "workload_error_final": 2 * matrix[1],
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
    bench = feedback_bench()
    runs = {
        # matrix: falls 0.5 and 0.7; cartservice's own row: 0.8 and 0.6 (not the fall of the means)
        "1": {
            "harmonic-feedback": profile((0.4, 0.2), (1.0, 0.2), lc=0.5),
            "harmonic": profile((0.4, 0.4), None, learning=False),
        },
        "2": {
            "harmonic-feedback": profile((1.0, 0.3), (0.5, 0.2), lc=1.5),
            "harmonic": profile((1.0, 1.0), None, learning=False),
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
    # the prior twin only observes: its matrix did not move
    assert "harmonic (observes): matrix error initial 0.700 ± " in out and "fall 0.000 ± " in out
    assert "own rows, mean over workloads: initial 1.400 ± " in out and "-> final 0.500 ± " in out


def test_a_held_out_sweep_reports_the_one_pair_it_ran(capsys: pytest.CaptureFixture[str]) -> None:
    bench = feedback_bench()
    runs = {
        "1": {
            "profiles": {
                "harmonic-feedback": profile((0.5, 0.1), None, lc=0.8),
                "harmonic": profile((0.5, 0.5), None, learning=False),
            }
        }
    }
    bench.report("held", {"runs": runs})
    out = capsys.readouterr().out
    assert "harmonic-feedback: matrix error initial 0.500" in out and "fall 0.800" in out
    assert "harmonic-feedback / harmonic: LC slowdown (truth) x 0.800" in out
    assert "harmonic-limit" not in out


@pytest.mark.parametrize(
    ("pairs", "expected", "error"),
    [
        ([], {}, None),
        (
            ["observationNoise=0.2", "sensitivitySpread=0.5"],
            {"observationNoise": 0.2, "sensitivitySpread": 0.5},
            None,
        ),
        (["noise=0.2"], None, "KEY one of observationNoise"),
        (["observationNoise"], None, "expected KEY=VALUE"),
        (["priorSpread=wide"], None, "'wide' is not a number"),
    ],
)
def test_learner_settings(pairs: list[str], expected: dict[str, float] | None, error: str | None) -> None:
    bench = feedback_bench()
    if error is None:
        assert bench.learner_settings(pairs) == expected
    else:
        with pytest.raises(ValueError, match=error):
            bench.learner_settings(pairs)


def test_scenario_doc_sets_the_learner_and_gives_a_held_out_scenario_a_feedback_block(tmp_path: Path) -> None:
    bench = feedback_bench()
    written = tmp_path / "plain.yaml"
    written.write_text(yaml.safe_dump({"name": "plain", "duration": "1h"}))
    doc = bench.scenario_doc(written, {"observationNoise": 0.2}, held_out=True)
    assert doc["feedback"]["learn"] == ["harmonic-feedback"]
    assert doc["feedback"]["observationNoise"] == 0.2
    assert "feedback" not in yaml.safe_load(written.read_text())  # the file itself is left alone

    looped = tmp_path / "looped.yaml"
    looped.write_text(
        yaml.safe_dump({"name": "looped", "feedback": {"interval": "1m", "moves": {"maxPerRound": 1}}})
    )
    doc = bench.scenario_doc(looped, {"sensitivitySpread": 0.5}, held_out=False)
    assert doc["feedback"] == {
        "interval": "1m",
        "sensitivitySpread": 0.5,
    }  # moves left out, as feedback_moves does
    with pytest.raises(ValueError, match="has a feedback block"):
        bench.scenario_doc(looped, {}, held_out=True)
    with pytest.raises(ValueError, match="no feedback block"):
        bench.scenario_doc(written, {}, held_out=False)
    (tmp_path / "list.yaml").write_text("- a\n")
    with pytest.raises(ValueError, match="not a scenario"):
        bench.scenario_doc(tmp_path / "list.yaml", {}, held_out=True)


def test_a_learning_profile_is_added_to_the_learners_and_paired_with_harmonic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = feedback_bench()
    config = tmp_path / "extra.yaml"
    config.write_text(yaml.safe_dump({"profiles": [{"schedulerName": "harmonic-extra"}]}))
    assert bench.profile_names(config) == ["harmonic-extra"]
    (tmp_path / "none.yaml").write_text(yaml.safe_dump({"profiles": [{"plugins": {}}]}))
    with pytest.raises(ValueError, match="no profiles with a schedulerName"):
        bench.profile_names(tmp_path / "none.yaml")

    looped = tmp_path / "looped.yaml"
    looped.write_text(yaml.safe_dump({"name": "looped", "feedback": {"learn": ["harmonic-feedback"]}}))
    doc = bench.scenario_doc(looped, {}, held_out=False, learners=["harmonic-extra"])
    assert doc["feedback"]["learn"] == ["harmonic-feedback", "harmonic-extra"]

    runs = {
        "1": {
            "profiles": {
                "harmonic": profile((0.5, 0.5), None, lc=1.0, learning=False),
                "harmonic-extra": profile((0.5, 0.25), None, lc=0.4),
            }
        }
    }
    runs["1"]["profiles"]["default-scheduler"] = {
        **profile((0.5, 0.5), None, learning=False),
        "pods_completed": 80,
        "cpu_seconds_completed": 1000.0,
        "nodes_in_use": 4.0,
        "zone_failure_survivable_share": 0.9,
    }
    runs["1"]["profiles"]["harmonic-extra"] |= {
        "cpu_seconds_completed": 900.0,
        "nodes_in_use": 5.0,
        "zone_failure_survivable_share": 0.8,
    }
    bench.report("extra", {"runs": runs}, ["harmonic-extra"])
    out = capsys.readouterr().out
    # what it costs against kube-scheduler's default: 100/80 pods, 900/1000 CPU-seconds, 5/4 nodes
    assert "against default-scheduler: pods completed x 1.250" in out
    assert "CPU-seconds completed x 0.900" in out and "nodes in use x 1.250" in out
    assert "zone-failure survivable share, difference -0.100" in out
    assert "node-failure" not in out  # no figure, no line
    assert "harmonic-extra: matrix error initial 0.500" in out and "fall 0.500" in out
    assert "harmonic-extra / harmonic: LC slowdown (truth) x 0.400" in out
