"""The SLO-aware right-sizer: bisection on the flourish metric, with guardrails."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from harmonic.feedback.rightsizing import RightSizer, RightSizingArgs, RoundInput
from harmonic.signals.identity import WorkloadKey

W = WorkloadKey("svc", "api")
GiB = 2.0**30


def _in(cpu: float, costs: list[float], target: float | None = 2.0, use: float = 1000.0) -> RoundInput:
    return RoundInput(W, cpu, 4 * GiB, tuple(costs), target, (use,) * 5, (GiB,) * 5)


def test_cuts_by_the_step_while_the_slo_holds_with_room() -> None:
    s = RightSizer(RightSizingArgs(cooldownSeconds=0))
    d = s.decide(_in(9000, [1.0] * 10), 0)
    assert d is not None and d.cpu_to == pytest.approx(9000 * 0.7)
    assert d.reason.startswith("cut")


def test_a_regression_after_a_cut_reverts_halves_the_step_and_never_goes_back_below() -> None:
    s = RightSizer(RightSizingArgs(cooldownSeconds=0))
    s.decide(_in(9000, [1.0] * 10), 0)  # -> 6300
    d = s.decide(_in(6300, [2.5] * 10), 300)
    assert d is not None and d.cpu_to == 9000 and d.reason.startswith("revert")
    assert s.reverts == 1
    d = s.decide(_in(9000, [1.0] * 10), 600)
    assert d is not None and d.cpu_to == pytest.approx(9000 * 0.85)  # half the step
    # the failed request is a floor: with the step, the next cut stops above it
    d = s.decide(_in(7650, [1.0] * 10), 900)
    assert d is not None and d.cpu_to >= 6300 * 1.04


def test_a_violation_with_no_cut_to_undo_grows_the_request() -> None:
    s = RightSizer(RightSizingArgs(cooldownSeconds=0))
    d = s.decide(_in(1000, [3.0] * 10), 0)
    assert d is not None and d.cpu_to == pytest.approx(1500) and d.reason.startswith("grow")


@pytest.mark.parametrize(
    ("case", "inp", "args", "want"),
    [
        ("too few reports: no decision", _in(9000, [1.0] * 4), {}, None),
        ("tail near the SLO: hold", _in(9000, [1.95] * 10), {}, 9000),
        ("a cut stops at the observed peak use / maxUtilization", _in(1500, [1.0] * 10, use=1000), {}, 1250),
        (
            "at full utilisation allowed, at the peak use",
            _in(1200, [1.0] * 10, use=1000),
            {"maxUtilization": 1},
            1000,
        ),
        ("nothing to cut above peak use / maxUtilization: hold", _in(1200, [1.0] * 10, use=1000), {}, 1200),
        ("a cut stops at minCpu", _in(120, [1.0] * 10, use=1), {"minCpu": 100}, 100),
        ("a cut smaller than the smallest step is no cut", _in(1030, [1.0] * 10, use=800), {}, 1030),
        ("never above maxCpu", _in(7000, [5.0] * 10), {"maxCpu": 8000}, 8000),
        ("no SLO and no usage history: nothing", _in(9000, [1.0] * 10, target=None), {}, None),
    ],
)
def test_guardrails(case: str, inp: RoundInput, args: dict[str, float], want: float | None) -> None:
    d = RightSizer(RightSizingArgs.model_validate({"cooldownSeconds": 0, **args})).decide(inp, 0)
    assert (d.cpu_to if d is not None else None) == want, case


def test_cooldown_holds_changes_back_but_not_a_revert() -> None:
    s = RightSizer(RightSizingArgs(cooldownSeconds=600))
    assert s.decide(_in(9000, [1.0] * 10), 0) is not None
    assert s.decide(_in(6300, [1.0] * 10), 300) is None  # cooling down
    # between rounds, reports that break the SLO revert the cut at once
    d = s.check(_in(6300, [2.5] * 10), 360)
    assert d is not None and d.cpu_to == 9000
    assert s.check(_in(9000, [2.5] * 10), 420) is None  # nothing left to revert


@pytest.mark.parametrize(
    ("reports", "args", "reverted"), [(2, {}, False), (3, {}, True), (3, {"revertReports": 5}, False)]
)
def test_a_probe_below_the_slo_is_reverted_on_revert_reports_not_a_full_round(
    reports: int, args: dict[str, int], reverted: bool
) -> None:
    # a round needs minReports (5) to judge; undoing a failed cut needs only revertReports (3):
    # every report a failed probe gets is one more SLO violation
    s = RightSizer(RightSizingArgs.model_validate({"cooldownSeconds": 600, **args}))
    s.decide(_in(9000, [1.0] * 10), 0)  # -> 6300
    d = s.check(_in(6300, [2.5] * reports), 60)
    assert (d is not None and d.cpu_to == 9000) is reverted


def test_without_an_slo_the_vpa_style_target_is_used() -> None:
    s = RightSizer(RightSizingArgs(cooldownSeconds=0))
    for t in range(30):
        s.vpa.add(W, 2000.0, GiB, 9000.0, 60.0 * t)
    d = s.decide(_in(9000, [], target=None), 1800)
    assert d is not None and d.cpu_to == pytest.approx(2300, rel=0.06) and "no SLO" in d.reason


def test_memory_follows_the_peak_and_falls_by_at_most_the_step() -> None:
    s = RightSizer(RightSizingArgs(cooldownSeconds=0))
    d = s.decide(RoundInput(W, 9000, 8 * GiB, (1.0,) * 10, 2.0, (1000.0,), (GiB,)), 0)
    assert d is not None and d.memory_to == pytest.approx(8 * GiB * 0.7)
    d = s.decide(RoundInput(W, 9000, 2 * GiB, (1.0,) * 10, 2.0, (1000.0,), (1.9 * GiB,)), 300)
    assert d is not None and d.memory_to == pytest.approx(1.9 * GiB * 1.15)


@pytest.mark.parametrize(
    ("field", "value"),
    [("minCpu", 0), ("maxStepDown", 1.0), ("sloQuantile", 1.5), ("maxUtilization", 1.2), ("bogus", 1)],
)
def test_bad_args_name_the_field(field: str, value: float) -> None:
    with pytest.raises(ValidationError, match=field):
        RightSizingArgs.model_validate({field: value})


def _cost(cpu: float, need: float) -> float:
    """A stand-in application: cost 1 with room, rising steeply below ``need``."""
    return 1.0 if cpu >= need else 1.0 + 4 * (need - cpu) / need + 1.5


@settings(max_examples=60, deadline=None)
@given(
    start=st.floats(1000, 60_000),
    ratio=st.floats(0.05, 1.0),
)
def test_the_search_ends_near_the_smallest_slo_keeping_request_within_guardrails(
    start: float, ratio: float
) -> None:
    a = RightSizingArgs(cooldownSeconds=0)
    s = RightSizer(a)
    need = start * ratio
    cpu = start
    seen = []
    for t in range(40):
        d = s.decide(RoundInput(W, cpu, GiB, (_cost(cpu, need),) * 10, 2.0, (1.0,), (GiB,)), 300.0 * t)
        assert d is not None
        assert a.min_cpu <= d.cpu_to <= a.max_cpu
        if d.cpu_to < cpu:  # a cut never exceeds the step limit
            assert d.cpu_to >= cpu * (1 - a.max_step_down) - 1e-6
        cpu = d.cpu_to
        seen.append(cpu)
    # it keeps the SLO at the end, and is within 20% of the smallest request that does
    assert cpu >= need or math.isclose(cpu, a.min_cpu)
    assert cpu <= max(need, a.min_cpu) * 1.2
