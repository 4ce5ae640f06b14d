"""Move recommendations from the learnt model: when, where, and when not."""

from __future__ import annotations

import numpy as np
import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.feedback.moves import MoveAdvisor, MoveSettings
from harmonic.framework.snapshot import Snapshot
from harmonic.signals.classes import CLASS_INDEX, CLASSES, WorkloadClass
from harmonic.signals.dissonance import DissonanceModel
from harmonic.signals.feedback.learning import InterferenceLearner
from harmonic.signals.feedback.observation import Observation
from harmonic.signals.feedback.placement import PlacementView
from harmonic.signals.identity import WorkloadKey
from harmonic.testing import node, pod

LC = CLASS_INDEX[WorkloadClass.LATENCY_CRITICAL]
BM = CLASS_INDEX[WorkloadClass.BATCH_MEMORY]
WEB = WorkloadKey("default", "web")


def view(free_elsewhere: bool = True) -> PlacementView:
    snap = Snapshot()
    for name in ("a", "b"):
        snap.set_node(parse_node(node(name).cap(cpu="8", memory="64Gi", pods=110).obj()))
    web = pod("web-0").label("app", "web").owner("StatefulSet", "web").req(cpu="1")
    snap.add_pod(parse_pod(web.obj()), "a")
    snap.add_pod(parse_pod(pod("scan-0").owner("Job", "scan").req(cpu="4", memory="40Gi").obj()), "a")
    if not free_elsewhere:
        snap.add_pod(parse_pod(pod("hog").req(cpu="8").obj()), "b")
    return PlacementView(snap)


def learnt(bm_slowdown: float, n: int) -> InterferenceLearner:
    """A learner that saw ``n`` reports of web whose cost rises by ``bm_slowdown`` per unit of node CPU
    held by batch-memory."""
    learner = InterferenceLearner(DissonanceModel())
    rng = np.random.default_rng(0)
    reports = []
    for i in range(n):
        x = np.zeros(len(CLASSES))
        x[BM] = rng.uniform(0, 0.6)
        reports.append(
            Observation(WEB, LC, "ms", 10 * (1 + bm_slowdown * x[BM]), "minimize", i, neighbours=x)
        )
    learner.observe(reports)
    return learner


def test_recommends_the_node_where_the_model_predicts_it_flourishes():
    advisor = MoveAdvisor()
    [advice] = advisor.advise(view(), learnt(3.0, 500), now=100.0)
    assert (advice.pod, advice.node, advice.target) == ("default/web-0", "a", "b")
    # on a, 4 of 8 CPUs of batch-memory at about 3.0 per unit: a slowdown near 1.5, none on b
    assert advice.here == pytest.approx(1.5, abs=0.15) and advice.there == pytest.approx(0.0, abs=0.05)
    assert advice.gain == pytest.approx(1.5 / 2.5, abs=0.05)
    assert "recommended; not executed" in advice.explain() and advisor.issued == 1


@pytest.mark.parametrize(
    ("case", "learner", "free", "settings"),
    [
        ("no reports: no model of its own", InterferenceLearner(DissonanceModel()), True, MoveSettings()),
        ("nowhere with room", learnt(3.0, 500), False, MoveSettings()),
        (
            "gain below the restart's cost",
            learnt(3.0, 500),
            True,
            MoveSettings(restart_seconds=3000, horizon_seconds=3600),
        ),
        ("gain below the minimum", learnt(0.1, 500), True, MoveSettings()),
        ("too uncertain", learnt(3.0, 1), True, MoveSettings(min_gain=0.0)),
    ],
)
def test_no_recommendation(case, learner, free, settings):
    assert MoveAdvisor(settings).advise(view(free), learner, now=0.0) == [], case


def test_one_recommendation_per_workload_per_cooldown():
    advisor, learner = MoveAdvisor(MoveSettings(cooldown_seconds=600)), learnt(3.0, 500)
    assert len(advisor.advise(view(), learner, now=0.0)) == 1
    assert advisor.advise(view(), learner, now=599.0) == []
    assert len(advisor.advise(view(), learner, now=600.0)) == 1
