"""The feedback loop inside the simulator: simulated applications report their cost through the
simulated Prometheus, the loop learns, learning profiles' Dissonance reads the learnt model, and
metrics.json's ``feedback`` block judges the learnt matrix against the truth."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from harmonic.plugins.dissonance import MODEL_SERVICE
from harmonic.sim.errors import ScenarioError
from harmonic.sim.metrics import WALL_CLOCK_KEYS, summarize
from tests.sim.helpers import plan_of, run_worlds

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "feedback"
LIMIT = str(EXAMPLES / "harmonic-limit.yaml")
LIMIT_LEARNING = str(EXAMPLES / "harmonic-limit-feedback.yaml")
LONE_SERVICE = EXAMPLES / "lone-service.yaml"
FEEDBACK = str(EXAMPLES / "harmonic-feedback.yaml")
EVIDENCE = str(EXAMPLES / "harmonic-evidence-feedback.yaml")
KEYS = {
    "learning",
    "rounds",
    "no_signal_rounds",
    "observations",
    "matrix_error_initial",
    "matrix_error_final",
    "rank_correlation_initial",
    "rank_correlation_final",
    "workload_error_initial",
    "workload_error_final",
    "workload_errors",
    "workload_rows",
    "resizes",
    "rightsizing",
    "moves",
    "move_recommendations",
    "slo_violation_share",
}


def antagonist(**feedback: Any) -> dict[str, Any]:
    """examples/feedback/lone-service.yaml: one web Deployment beside etl Jobs annotated io-intensive (a
    mild antagonist for the prior) that really saturate memory bandwidth; ``feedback`` keys added."""
    sc = yaml.safe_load(LONE_SERVICE.read_text())
    sc["feedback"].update(feedback)
    return dict(sc)


@pytest.fixture(scope="module")
def worlds() -> dict[str, Any]:
    return run_worlds(antagonist(), configs=(LIMIT, LIMIT_LEARNING))


def test_the_loop_reports_its_block(worlds):
    for name, world in worlds.items():
        block = summarize(world)["feedback"]
        assert set(block) == KEYS
        assert block["learning"] == (name == "harmonic-limit-feedback")
        assert block["rounds"] == 59 and block["no_signal_rounds"] == 0 and block["observations"] > 1000
        assert 0 <= block["slo_violation_share"] <= 1
    # the default profile has no Dissonance to learn for; it observes all the same
    assert summarize(worlds["default-scheduler"])["feedback"]["learning"] is False


@pytest.mark.xfail(
    strict=True,
    reason="issue 35: since batch work advances at the truth's slowdown, the etl Jobs' run times and so "
    "the placements the observers learn from changed, and on this one-hour, one-seed scenario an "
    "observer's workload error falls 9% (0.395 -> 0.358), short of 25%; not re-tuned here",
)
def test_the_loop_learns_what_the_truth_says(worlds):
    for world in worlds.values():
        block = summarize(world)["feedback"]
        # the prior underrates the etl Jobs; an hour of reports brings the matrix closer to the truth
        # (the two-hour, ten-seed figures are in docs/feedback.md)
        assert block["matrix_error_final"] < 0.85 * block["matrix_error_initial"], block
        assert block["workload_error_final"] < 0.75 * block["workload_error_initial"], block


def test_only_learning_profiles_read_the_learnt_model(worlds):
    learning, fixed = worlds["harmonic-limit-feedback"], worlds["harmonic-limit"]
    assert learning.scheduler.services[MODEL_SERVICE] is learning.feedback.model
    assert learning.feedback.model.version > 1
    assert MODEL_SERVICE not in fixed.scheduler.services


def test_an_observing_profile_places_as_without_the_loop(worlds):
    sc = antagonist()
    del sc["feedback"]
    without = run_worlds(sc, configs=(LIMIT,))["harmonic-limit"]
    a, b = summarize(worlds["harmonic-limit"]), summarize(without)
    a.pop("feedback")
    for key in WALL_CLOCK_KEYS:
        a.pop(key, None), b.pop(key, None)
    assert a == b


def test_learning_changes_placements_where_the_prior_is_wrong(worlds):
    """With the prior, the filter lets etl Jobs beside the web replicas; learnt, it keeps them away."""
    fixed = summarize(worlds["harmonic-limit"])["latency_critical_slowdown_truth"]["mean"]
    learnt = summarize(worlds["harmonic-limit-feedback"])["latency_critical_slowdown_truth"]["mean"]
    assert learnt < 0.75 * fixed


def test_same_seed_same_feedback_block(worlds):
    again = run_worlds(antagonist(), configs=(LIMIT_LEARNING,))["harmonic-limit-feedback"]
    assert summarize(again)["feedback"] == summarize(worlds["harmonic-limit-feedback"])["feedback"]


def test_feedback_needs_a_duration():
    sc = antagonist()
    del sc["duration"]
    with pytest.raises(ScenarioError, match="feedback needs a duration"):
        plan_of(sc)


@pytest.mark.parametrize(
    ("field", "value"),
    [("interval", "0s"), ("sloFactor", 1.0), ("observationNoise", 0), ("noise", -1), ("unknown", 1)],
)
def test_bad_feedback_keys_name_the_field(field, value):
    sc = copy.deepcopy(antagonist())
    sc["feedback"][field] = value
    with pytest.raises(ScenarioError, match="feedback"):
        plan_of(sc)


def _placement_figures(world: Any) -> dict[str, Any]:
    out = summarize(world)
    out.pop("feedback")
    for key in WALL_CLOCK_KEYS:
        out.pop(key, None)
    return out


def test_a_filter_on_evidence_refuses_nothing_until_the_loop_has_learnt():
    # Nobody learns: the evidence filter has no entry to refuse on and places as its twin without one.
    neither = run_worlds(antagonist(learn=[]), configs=(FEEDBACK, EVIDENCE))
    assert _placement_figures(neither["harmonic-evidence-feedback"]) == _placement_figures(
        neither["harmonic-feedback"]
    )
    # Learning, it keeps the etl Jobs off the web replicas' nodes once the reports have pinned etl down.
    learnt = run_worlds(antagonist(learn=["harmonic-evidence-feedback"]), configs=(EVIDENCE,))
    slowdown = summarize(learnt["harmonic-evidence-feedback"])["latency_critical_slowdown_truth"]["mean"]
    assert (
        slowdown < 0.75 * summarize(neither["harmonic-feedback"])["latency_critical_slowdown_truth"]["mean"]
    )
    assert learnt["harmonic-evidence-feedback"].feedback.model.evidence.any()
