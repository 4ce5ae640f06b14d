"""Alibaba v2018 usage files: the generator's files in the trace's schema, read back; bad rows."""

from __future__ import annotations

import csv
from collections import Counter

import pytest

from harmonic.sim.errors import ScenarioError
from harmonic.sim.scenario import UsageProfile
from harmonic.sim.usage.alibaba import (
    BATCH_INSTANCE_COLUMNS,
    CONTAINER_USAGE_COLUMNS,
    UsageSeries,
    read_batch_instances,
    read_container_usage,
    write_trace,
)

from ..helpers import plan_of, run, scenario


def _scenario(tmp_path, **extra) -> dict:
    w = {
        "type": "alibabaTrace",
        "memoryAt100": "64Gi",
        "containerMeta": "container_meta.csv",
        "batchTask": "batch_task.csv",
        "containerUsage": "container_usage.csv",
        "batchInstance": "batch_instance.csv",
        **extra,
    }
    return scenario([w], nodes=4, cpu="16", memory="128Gi", duration="1h", usage={})


def test_generated_files_have_the_trace_columns(tmp_path):
    write_trace(tmp_path, seed=3, apps=2, jobs=3, hours=0.5)
    widths = {
        "container_usage.csv": len(CONTAINER_USAGE_COLUMNS),
        "batch_instance.csv": len(BATCH_INSTANCE_COLUMNS),
    }
    widths |= {"container_meta.csv": 8, "batch_task.csv": 9}
    for name, width in widths.items():
        rows = list(csv.reader((tmp_path / name).open()))
        assert rows and all(len(r) == width for r in rows), name


def test_generator_rolls_containers_out_and_aligns_peaks(tmp_path):
    write_trace(
        tmp_path,
        seed=4,
        apps=3,
        containers_per_app=4,
        jobs=1,
        hours=3,
        swing=0.8,
        phase_spread=0.0,
        rollout_hours=2,
    )
    meta = list(csv.reader((tmp_path / "container_meta.csv").open()))
    # Container c of every app starts c x 30 min after the trace's start (plus up to 10 min).
    for i, row in enumerate(meta):
        offset = int(row[2]) - 86400 - (i % 4) * 1800
        assert 0 <= offset < 600, row
    # With no phase spread every app peaks at the same time: a quarter period in, all above their means.
    usage = list(csv.reader((tmp_path / "container_usage.csv").open()))
    first = {r[0]: int(r[2]) for r in reversed(usage)}
    peak = [
        int(r[3]) for r in usage if 86400 + 900 - 60 < int(r[2]) <= 86400 + 900 and first[r[0]] < 86400 + 600
    ]
    trough = [
        int(r[3])
        for r in usage
        if 86400 + 2700 - 60 < int(r[2]) <= 86400 + 2700 and first[r[0]] < 86400 + 600
    ]
    assert len(peak) == len(trough) == 3 and all(p > 2 * t for p, t in zip(peak, trough, strict=True))


def test_usage_files_give_workloads_series_and_profiles(tmp_path):
    write_trace(tmp_path, seed=1, apps=2, containers_per_app=2, jobs=2, hours=0.5)
    plan = plan_of(_scenario(tmp_path), tmp_path)
    series = {k: v for k, v in plan.trace_usage.items() if isinstance(v, UsageSeries)}
    profiles = {k: v for k, v in plan.trace_usage.items() if isinstance(v, UsageProfile)}
    assert series and all(k.startswith("ReplicaSet/alibaba/app-") for k in series)
    assert profiles and all(k.startswith("Job/alibaba/j-") for k in profiles)
    for s in series.values():
        # The generator's apps use 25-50% of their request on average, swinging +-60%.
        assert 0.05 < float(s.cpu.mean()) < 0.8 and s.times[0] >= -600
    for p in profiles.values():
        # Batch instances use 60-100% of plan_cpu, bursting up to 1.6x.
        assert 0.5 <= p.cpu <= 1.05 and p.burst_factor >= 1.0


def test_trace_replay_runs_with_usage(tmp_path):
    write_trace(tmp_path, seed=2, apps=2, containers_per_app=2, jobs=3, hours=0.5)
    w = run(_scenario(tmp_path, traceEnd=86400 + 1800), tmp_path)
    m = w.usage.summary()
    assert m["actual_cpu_utilisation"]["mean"] > 0


def test_missing_readings_are_skipped_and_counted(tmp_path):
    path = tmp_path / "container_usage.csv"
    path.write_text(
        "c_1,m_1,100,-1,50,1,1,1,1,1,1\nc_1,m_1,160,40,101,1,1,1,1,1,1\nc_1,m_1,220,30,50,1,1,1,1,1,1\nc_9,m_1,220,30,50,1,1,1,1,1,1\n"
    )
    skipped: Counter[str] = Counter()
    series = read_container_usage(path, {"c_1": "app_1"}, skipped)
    assert list(series["app_1"].times) == [220.0]
    assert series["app_1"].cpu[0] == pytest.approx(0.3)
    assert skipped["container_usage: no time_stamp or a missing reading"] == 2
    assert skipped["container_usage: container not in container_meta"] == 1


@pytest.mark.parametrize(
    ("reader", "text", "where", "message"),
    [
        ("container", "c_1,m_1,100,40,50\n", ":1", "expected 11 columns"),
        ("container", "c_1,m_1,100,40,50,1,1,1,1,1,1\nc_1,m_1,x,40,50,1,1,1,1,1,1\n", ":2", "'x' is not a number"),
        ("batch", "i,M1,j_1,1,T,1,2,m,1,1,abc,1,1,1\n", ":1", "'abc' is not a number"),
        ("batch", "i,M1,j_1\n", ":1", "expected 14 columns"),
    ],
)  # fmt: skip
def test_malformed_rows_name_file_and_line(tmp_path, reader, text, where, message):
    path = tmp_path / "usage.csv"
    path.write_text(text)
    with pytest.raises(ScenarioError) as e:
        if reader == "container":
            read_container_usage(path, {"c_1": "app_1"}, Counter())
        else:
            read_batch_instances(path, Counter())
    assert f"{path}{where}" in str(e.value) and message in str(e.value)


def test_usage_files_need_their_meta_files(tmp_path):
    sc = scenario(
        [{"type": "alibabaTrace", "memoryAt100": "64Gi", "batchTask": "b.csv", "containerUsage": "u.csv"}],
        duration="1h",
    )
    with pytest.raises(ScenarioError, match="containerUsage needs containerMeta"):
        plan_of(sc, tmp_path)
