"""The right-sizing loop: SLOs in the metric's unit, whichever way the metric points."""

from __future__ import annotations

import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import Pod, parse_pod
from harmonic.feedback.rightsizing import RightSizer
from harmonic.feedback.rightsizing_loop import RightSizingLoop, slo_target
from harmonic.framework.snapshot import Snapshot
from harmonic.signals.feedback.observation import Goal
from harmonic.signals.feedback.placement import PlacementView
from harmonic.signals.identity import WorkloadKey
from harmonic.testing import node, pod

TRAINER = WorkloadKey("ml", "trainer")
START = 10_000.0


def _pod(annotations: dict[str, str], name: str = "trainer-0") -> Pod:
    b = pod(name).ns("ml").label("app", "trainer").owner("StatefulSet", "trainer").req(cpu="2", memory="1Gi")
    for k, v in annotations.items():
        b = b.annotation(k, v)
    return parse_pod(b.obj())


@pytest.mark.parametrize(
    ("annotations", "goal", "want"),
    [
        ({"harmonic.dev/flourish-target": "250"}, None, 250.0),
        ({"harmonic.dev/flourish-target": "250", "harmonic.dev/flourish-goal": "minimize"}, None, 250.0),
        ({"harmonic.dev/flourish-target": "200", "harmonic.dev/flourish-goal": "maximize"}, None, 0.005),
        # the goal the reports carry wins over the annotation (a POST says which way its metric points)
        ({"harmonic.dev/flourish-target": "200"}, "maximize", 0.005),
        (
            {"harmonic.dev/flourish-target": "200", "harmonic.dev/flourish-goal": "maximize"},
            "minimize",
            200.0,
        ),
        ({}, None, None),
        ({"harmonic.dev/flourish-target": "fast"}, None, None),
        ({"harmonic.dev/flourish-target": "0"}, "maximize", None),
        ({"harmonic.dev/flourish-target": "-3"}, None, None),
        ({"harmonic.dev/flourish-target": "inf"}, "maximize", None),
    ],
)
def test_slo_target_is_a_cost(annotations: dict[str, str], goal: Goal | None, want: float | None) -> None:
    got = slo_target(_pod(annotations), goal)
    assert got == (pytest.approx(want) if want is not None else None)


def _round(annotations: dict[str, str], value: float, goal: Goal) -> tuple[float, str]:
    """The CPU request (millicores) the loop gives the trainer after one round of reports at
    ``value`` (samples/s or ms), posted with ``goal``, and the decision's reason."""
    snap = Snapshot()
    snap.set_node(parse_node(node("a").cap(cpu="8", memory="32Gi", pods=110).obj()))
    trainer = _pod({"harmonic.dev/resize": "auto", **annotations})
    snap.add_pod(trainer, "a")
    view = PlacementView(snap)
    sizer = RightSizer()
    loop = RightSizingLoop(sizer, interval=300.0)
    assert loop.observe(view, [], {}, START) == []
    reports = [view.observation(trainer.key, "samples", value, goal, START + i) for i in range(10)]
    usage = {("ml", "trainer-0"): (500.0, 2.0**29)}
    [action] = loop.observe(view, [o for o in reports if o is not None], usage, START + 300.0)
    assert action.workload == TRAINER
    return action.cpu_millis, sizer.log[-1].reason


@pytest.mark.parametrize(
    ("annotations", "goal"),
    [
        ({"harmonic.dev/flourish-target": "200", "harmonic.dev/flourish-goal": "maximize"}, "maximize"),
        # posted as maximize to a pod whose template does not say so
        ({"harmonic.dev/flourish-target": "200"}, "maximize"),
    ],
)
def test_a_throughput_slo_grows_a_starved_workload_and_cuts_a_comfortable_one(
    annotations: dict[str, str], goal: Goal
) -> None:
    cpu, why = _round(annotations, value=120.0, goal=goal)
    assert cpu > 2000.0 and why == "grow: P5 value 120 < SLO 200"  # below 200/s: the SLO is broken
    cpu, why = _round(annotations, value=900.0, goal=goal)
    assert cpu < 2000.0 and why == "cut: P5 value 900 >= SLO 200 / 95%"  # far above: room to cut


def test_a_latency_slo_grows_a_slow_workload_and_cuts_a_fast_one() -> None:
    slo = {"harmonic.dev/flourish-target": "200"}
    cpu, why = _round(slo, value=350.0, goal="minimize")
    assert cpu > 2000.0 and why == "grow: P95 cost 350 > SLO 200"
    cpu, why = _round(slo, value=40.0, goal="minimize")
    assert cpu < 2000.0 and why == "cut: P95 cost 40 <= 95% of SLO 200"
