"""Trace replay: Alibaba cluster-trace-v2018 tables and arrival CSVs (small generated files)."""

from __future__ import annotations

import pytest

from harmonic.sim.errors import ScenarioError
from harmonic.sim.plan import CreateObject, Scale

from .helpers import plan_of, run_recorded, scenario

GI = 1024**3


def _alibaba(tmp_path, batch: str | None = None, containers: str | None = None, **extra) -> dict:
    w = {"type": "alibabaTrace", "memoryAt100": "100Gi", **extra}
    if batch is not None:
        (tmp_path / "batch_task.csv").write_text(batch)
        w["batchTask"] = "batch_task.csv"
    if containers is not None:
        (tmp_path / "container_meta.csv").write_text(containers)
        w["containerMeta"] = "container_meta.csv"
    return scenario([w], nodes=4, cpu="16", memory="128Gi")


BATCH = """\
M1,2,j_1,1,Terminated,1000,1060,100,0.50
R2_1,1,j_1,1,Terminated,1070,1100,50,1.00
M1,3,j_2,1,Terminated,0,0,100,0.5
task_x,1,j_3,1,Terminated,1200,1100,100,0.5
M5,1,j_4,1,Waiting,1300,1400,,
"""

CONTAINERS = """\
c_1,m_1,1000,app_7,started,400,400,2.0
c_2,m_2,1030,app_7,started,400,400,2.0
c_1,m_3,1500,app_7,started,400,400,2.0
c_3,m_4,1040,app_9,allocated,200,200,1.0
c_4,m_5,1050,app_7,started,800,800,2.0
"""


def test_batch_tasks_become_jobs_with_requests_durations_and_start_times(tmp_path):
    plan = plan_of(_alibaba(tmp_path, batch=BATCH), tmp_path)
    jobs = [(t.time, t.action.obj) for t in plan.timeline if isinstance(t.action, CreateObject)]
    assert [(t, o.name) for t, o in jobs] == [(0.0, "j-1-m1"), (70.0, "j-1-r2-1")]
    first = jobs[0][1]
    assert (first.spec["parallelism"], first.spec["completions"]) == (2, 2)
    res = first.spec["template"]["spec"]["containers"][0]["resources"]["requests"]
    assert res == {"cpu": "1000m", "memory": str(GI // 2)}
    assert first.duration is not None and first.duration.value == 60
    assert plan.trace_skipped == {
        "batch_task: end_time before start_time": 1,
        "batch_task: no plan_cpu or plan_mem": 1,
        "batch_task: no start_time or end_time": 1,
    }
    world, rec = run_recorded(_alibaba(tmp_path, batch=BATCH), tmp_path)
    assert world.stats["pods_completed"] == 3
    assert sorted((t, k.split("/")[1].rsplit("-", 1)[0]) for t, k in rec.deleted) == [
        (60, "j-1-m1"),
        (60, "j-1-m1"),
        (100, "j-1-r2-1"),
    ]


def test_containers_become_replicasets_per_app_du_scaled_as_containers_appear(tmp_path):
    plan = plan_of(_alibaba(tmp_path, containers=CONTAINERS), tmp_path)
    steps = []
    for t in plan.timeline:
        a = t.action
        if isinstance(a, CreateObject):
            steps.append((t.time, "create", a.obj.name, a.obj.spec["replicas"]))
        elif isinstance(a, Scale):
            steps.append((t.time, "scale", a.key, a.replicas))
    # c_1 counts once (its first row); app_7's 8-core container is a second shape.
    assert steps == [
        (0.0, "create", "app-7", 1),
        (30.0, "scale", "ReplicaSet/alibaba/app-7", 2),
        (40.0, "create", "app-9", 1),
        (50.0, "create", "app-7-2", 1),
    ]
    world, _ = run_recorded(_alibaba(tmp_path, containers=CONTAINERS), tmp_path)
    assert len(world.placement()) == 4


def test_trace_window_and_start(tmp_path):
    sc = _alibaba(tmp_path, batch=BATCH, traceStart=1050, traceEnd=1080)
    plan = plan_of(sc, tmp_path)
    names = [t.action.obj.name for t in plan.timeline if isinstance(t.action, CreateObject)]
    assert names == ["j-1-r2-1"] and plan.timeline[0].time == 20.0
    assert plan.trace_skipped["batch_task: outside traceStart..traceEnd"] == 1


def test_malformed_trace_rows_name_file_and_line(tmp_path):
    with pytest.raises(ScenarioError) as e:
        plan_of(_alibaba(tmp_path, batch="M1,1,j_1,1,Terminated,10,20,100\n"), tmp_path)
    assert "batch_task.csv:1" in str(e.value) and "expected 9 columns" in str(e.value)
    with pytest.raises(ScenarioError) as e:
        plan_of(_alibaba(tmp_path, containers="c_1,m,ten,app,started,1,1,1\n"), tmp_path)
    assert "container_meta.csv:1: time_stamp: 'ten' is not a number" in str(e.value)


def _arrivals(**kw) -> dict:
    template = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"labels": {"app": "burst"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}],
        },
    }
    return {"type": "arrivals", "name": "burst", "template": template, **kw}


def test_arrivals_from_a_csv_trace_with_duration_and_request_overrides(tmp_path):
    (tmp_path / "arrivals.csv").write_text("time,duration,cpu,memory\n5,10,250m,1Gi\n1,,,\n")
    sc = scenario([_arrivals(process="trace", trace="arrivals.csv", start=100, duration=30)])
    _world, rec = run_recorded(sc, tmp_path)
    assert [(t, p["metadata"]["name"]) for t, p in rec.created] == [(101.0, "burst-0"), (105.0, "burst-1")]
    assert rec.created[1][1]["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "250m",
        "memory": "1Gi",
    }
    assert sorted(rec.deleted) == [(115.0, "default/burst-1"), (131.0, "default/burst-0")]


def test_poisson_arrivals_are_seeded_and_bounded(tmp_path):
    sc = scenario([_arrivals(rate=0.1, end=3600, duration={"distribution": "exponential", "mean": 60})])
    times = [t.time for t in plan_of(sc).timeline]
    assert times == [t.time for t in plan_of(sc).timeline]
    assert all(0 < t < 3600 for t in times) and times == sorted(times)
    # A Poisson process at 0.1/s over an hour: 360 expected; 4 sigma is ~76.
    assert 284 < len(times) < 436
    other = dict(sc, seed=99)
    assert [t.time for t in plan_of(other).timeline] != times
    counted = scenario([_arrivals(rate=1, count=7)])
    assert len(plan_of(counted).timeline) == 7


def test_bad_arrival_csv(tmp_path):
    (tmp_path / "a.csv").write_text("when\n1\n")
    with pytest.raises(ScenarioError, match=r"a.csv:1: needs a header row with a 'time' column"):
        plan_of(scenario([_arrivals(process="trace", trace="a.csv")]), tmp_path)
    (tmp_path / "b.csv").write_text("time,cpu\n1,lots\n")
    with pytest.raises(ScenarioError, match=r"b.csv:2: cpu: "):
        plan_of(scenario([_arrivals(process="trace", trace="b.csv")]), tmp_path)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("1,-1", r"c.csv:2: cpu: '-1': must be greater than or equal to 0"),
        ("1,1e100", r"c.csv:2: cpu: '1e100' is too large"),
    ],
)
def test_arrival_csv_amounts_a_pod_cannot_have_are_refused_at_load(tmp_path, row, message):
    (tmp_path / "c.csv").write_text(f"time,cpu\n{row}\n")
    with pytest.raises(ScenarioError, match=message):
        plan_of(scenario([_arrivals(process="trace", trace="c.csv")]), tmp_path)
