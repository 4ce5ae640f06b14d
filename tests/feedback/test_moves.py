"""Move recommendations from the learnt model: when, where, and when not."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.feedback.moves import MoveAdvisor, MoveSettings, _felt_by, _neighbours_price
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


def learnt(bm_slowdown: float, n: int, workload: WorkloadKey = WEB, klass: int = LC) -> InterferenceLearner:
    """A learner that saw ``n`` reports of ``workload`` (of class ``klass``) whose cost rises by
    ``bm_slowdown`` per unit of node CPU held by batch-memory."""
    learner = InterferenceLearner(DissonanceModel())
    rng = np.random.default_rng(0)
    reports = []
    for i in range(n):
        x = np.zeros(len(CLASSES))
        x[BM] = rng.uniform(0, 0.6)
        reports.append(
            Observation(workload, klass, "ms", 10 * (1 + bm_slowdown * x[BM]), "minimize", i, neighbours=x)
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


def crowded_view(web_cpu: str, neighbours: dict[str, list[tuple[str, str, str]]]) -> PlacementView:
    """web (latency-critical) on a beside a 4-CPU batch-memory Job pod; other nodes hold ``neighbours``:
    node -> (pod name, owner kind, CPU request)."""
    snap = Snapshot()
    for name in ("a", *neighbours):
        snap.set_node(parse_node(node(name).cap(cpu="8", memory="64Gi", pods=110).obj()))
    web = pod("web-0").label("app", "web").owner("StatefulSet", "web").req(cpu=web_cpu)
    snap.add_pod(parse_pod(web.obj()), "a")
    snap.add_pod(parse_pod(pod("scan-0").owner("Job", "scan").req(cpu="4", memory="40Gi").obj()), "a")
    for where, pods in neighbours.items():
        for name, kind, cpu in pods:
            snap.add_pod(parse_pod(pod(name).owner(kind, name).req(cpu=cpu).obj()), where)
    return PlacementView(snap)


def lc_sensitive_learner() -> InterferenceLearner:
    """``learnt(3.0, 500)`` with a prior in which latency-critical pods slow each other by 2.0 per unit of
    node CPU (the reports never vary that share, so web's own row keeps it)."""
    learner = learnt(3.0, 500)
    learner.model.set("latency-critical", "latency-critical", 2.0)
    learner.prior[LC, LC] = 2.0
    return learner


@pytest.mark.parametrize(
    ("case", "price", "target"),
    [
        # web's learnt row: about 0.2 per unit of latency-critical share, 1.1 of batch-cpu share.
        # b: sixteen 50m serving pods (LC share 0.1) -> web's own slowdown there about 0.02, and web's
        # 1 CPU (1/8 of the node) costs each of them 0.1 (the class matrix) x 1/8: 0.2 in all.
        # c: one 1-CPU batch-cpu Job pod (share 1/8) -> web's own slowdown about 0.14, and web costs it
        # 0.05 x 1/8 at importance 0.25: 0.0016.
        ("own slowdown only: the serving pods' node", False, "b"),
        ("with the neighbours: b's sixteen pods lose more than web gains over c", True, "c"),
    ],
)
def test_neighbours_decide_the_target(case, price, target):
    neighbours = {
        "b": [(f"svc-{i}", "Deployment", "50m") for i in range(16)],
        "c": [("crunch-0", "Job", "1")],
    }
    [advice] = MoveAdvisor(MoveSettings(price_neighbours=price)).advise(
        crowded_view("1", neighbours), learnt(3.0, 500), now=0.0
    )
    assert advice.target == target, case
    assert (advice.inflicted > 0) == price


@pytest.mark.parametrize(("price", "moves"), [(False, 1), (True, 0)])
def test_a_move_that_hurts_its_new_neighbours_more_than_it_gains_is_not_recommended(price, moves):
    # With latency-critical pods slowing each other by 2.0: web (2 CPUs, a quarter of b) would add
    # 4 x 2.0 x 0.25 = 2.0 to b's pods against its own fall of about 1.3 (about 1.5 on a, 0.2 on b).
    view = crowded_view("2", {"b": [(f"svc-{i}", "Deployment", "100m") for i in range(4)]})
    advice = MoveAdvisor(MoveSettings(price_neighbours=price)).advise(view, lc_sensitive_learner(), now=0.0)
    assert len(advice) == moves


ETL = WorkloadKey("default", "etl")
STARTED = 1_700_000_000.0  # epoch seconds: 2023-11-14T22:13:20Z


def job_view(start_time: str | None) -> PlacementView:
    """etl-0 (a Job's pod, batch-memory) on a beside a 4-CPU batch-memory scan; b empty."""
    snap = Snapshot()
    for name in ("a", "b"):
        snap.set_node(parse_node(node(name).cap(cpu="8", memory="64Gi", pods=110).obj()))
    etl = pod("etl-0").owner("Job", "etl").req(cpu="1", memory="10Gi").obj()
    if start_time is not None:
        etl["status"] = {"startTime": start_time}
    snap.add_pod(parse_pod(etl), "a")
    snap.add_pod(parse_pod(pod("scan-0").owner("Job", "scan").req(cpu="4", memory="40Gi").obj()), "a")
    return PlacementView(snap)


@pytest.mark.parametrize(
    ("case", "start_time", "since_start", "moves"),
    [
        # etl's cost rises by 3.0 per unit of batch-memory share: about 1.5 on a, so a gain of about
        # 1.5 / 2.5 = 60%, against the hour's horizon.
        ("started a minute ago: 30 s + 60 s lost is 2.5% of the hour", "2023-11-14T22:13:20Z", 60, 1),
        ("ran 45 minutes: 30 s + 2700 s lost is 76% of the hour", "2023-11-14T22:13:20Z", 2700, 0),
        ("no start time: its price cannot be told", None, 60, 0),
        ("a start time that is no time: the same", "yesterday", 60, 0),
    ],
)
def test_a_run_to_completion_pod_pays_for_the_work_it_loses(case, start_time, since_start, moves):
    learner = learnt(3.0, 500, ETL, BM)
    advice = MoveAdvisor().advise(job_view(start_time), learner, now=STARTED + since_start)
    assert len(advice) == moves, case
    if advice:
        assert advice[0].lost_seconds == since_start and "60 s of work lost" in advice[0].describe()


def cell_view(
    pending: list[tuple[str, str, list[str]]], started: list[tuple[str, str, float]] = ()
) -> PlacementView:
    """web (1 CPU) on a with six 100m serving pods and a 4-CPU batch-memory scan: 2.4 CPU free there,
    b empty. ``pending``: (name, CPU, scheduling gates) of pods waiting, each a batch-memory Job's;
    ``started``: (name, CPU, seconds before ``STARTED``) of such pods running on c, an 8-CPU node."""
    snap = Snapshot()
    for name in ("a", "b", "c"):
        snap.set_node(parse_node(node(name).cap(cpu="8", memory="64Gi", pods=110).obj()))
    for name, cpu, ago in started:
        running = pod(name).owner("Job", "load").req(cpu=cpu, memory="30Gi").obj()
        running["status"] = {"startTime": datetime.fromtimestamp(STARTED - ago, UTC).isoformat()}
        snap.add_pod(parse_pod(running), "c")
    snap.add_pod(
        parse_pod(pod("web-0").label("app", "web").owner("StatefulSet", "web").req(cpu="1").obj()), "a"
    )
    snap.add_pod(parse_pod(pod("scan-0").owner("Job", "scan").req(cpu="4", memory="40Gi").obj()), "a")
    for i in range(6):
        snap.add_pod(parse_pod(pod(f"svc-{i}").owner("Deployment", "svc").req(cpu="100m").obj()), "a")
    waiting = []
    for name, cpu, gates in pending:
        p = pod(name).owner("Job", "load").req(cpu=cpu, memory="30Gi")
        waiting.append(parse_pod((p.gate(*gates) if gates else p).obj()))
    return PlacementView(snap, waiting)


@pytest.mark.parametrize(
    ("case", "pending", "moves"),
    [
        ("nothing waits", [], 1),
        # 3 CPU fits a only once web's 1 CPU is free: the six serving pods would each take 1.5 (the
        # matrix's latency-critical <- batch-memory) x 3/8, 3.4 in all, against web's gain of about 1.4.
        ("a pending pod the freed room lets in", [("load-0", "3", [])], 0),
        ("a pending pod that fits already: the move changes nothing for it", [("load-0", "2", [])], 1),
        # 1.7 CPU fits in 2.4 once; in 3.4, twice: more of that shape keep coming, so one more gets in.
        ("room for a second pod of a shape that fits once already", [("load-0", "1.7", [])], 0),
        ("room for neither a second 1.2-CPU pod nor a third", [("load-0", "1.2", [])], 1),
        ("a pending pod too big even then", [("load-0", "4", [])], 1),
        ("a gated pending pod is not scheduled", [("load-0", "3", ["wait"])], 1),
    ],
)
def test_the_room_a_move_frees_prices_the_pending_pod_it_lets_in(case, pending, moves):
    advice = MoveAdvisor().advise(cell_view(pending), learnt(3.0, 500), now=STARTED)
    assert len(advice) == moves, case
    assert MoveAdvisor(MoveSettings(price_neighbours=False)).advise(
        cell_view(pending), learnt(3.0, 500), now=STARTED
    )


@pytest.mark.parametrize(
    ("case", "started", "window", "moves"),
    [
        # Nothing waits, but a 3-CPU pod of the kind started 5 minutes ago: the next may come any time.
        ("a pod of that shape started 5 minutes ago", [("load-0", "3", 300)], 600, 0),
        ("started 20 minutes ago: the stream may have stopped", [("load-0", "3", 1200)], 600, 1),
        ("no window: only the queue counts", [("load-0", "3", 300)], 0, 1),
        ("a shape that fits already", [("load-0", "2", 300)], 600, 1),
    ],
)
def test_pods_just_started_count_as_arriving(case, started, window, moves):
    settings = MoveSettings(refill_window_seconds=window)
    advice = MoveAdvisor(settings).advise(cell_view([], started), learnt(3.0, 500), now=STARTED)
    assert len(advice) == moves, case
    if advice:
        assert advice[0].target == "b", case


@settings(max_examples=200, deadline=None)
@given(
    free=st.floats(0, 8000),
    moved=st.tuples(st.floats(1, 4000), st.floats(1, 4000)).map(sorted),
    arriving=st.lists(st.tuples(st.sampled_from(range(len(CLASSES))), st.floats(1, 8000)), max_size=6),
)
def test_freeing_more_room_never_lets_in_less(free, moved, arriving):
    """What the freed room lets in grows with the room: every pod a smaller move lets in, a larger one
    does too; and a move whose room completes no slot of any arriving shape lets in nothing."""
    model = DissonanceModel()
    counts = np.zeros((2, len(CLASSES)))
    counts[0, LC] = 5  # the moved pod and four left behind on node 0
    klass = np.asarray([k for k, _ in arriving], dtype=np.int64)
    cpu = np.asarray([c for _, c in arriving], dtype=np.float64)
    felt = _felt_by(LC, model.matrix, model.importance)
    inv = np.full(2, 1 / 8000)
    free_at = np.asarray([free, 8000.0])
    small, large = (_neighbours_price(m, LC, 0, felt, counts, inv, free_at, (klass, cpu))[1] for m in moved)
    assert 0.0 <= small <= large
    if not any(np.floor((free + moved[1]) / c) > np.floor(free / c) for c in cpu):
        assert large == 0.0
