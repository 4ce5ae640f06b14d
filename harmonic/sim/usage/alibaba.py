"""Usage from Alibaba cluster-trace-v2018 files, and a generator of files in the trace's schema.

Read (files without a header, columns by position as in the trace's ``schema.md``):

- ``container_usage.csv``: container_id, machine_id, time_stamp, cpu_util_percent, mem_util_percent, cpi,
  mem_gps, mpki, net_in, net_out, disk_io_percent. Used: container_id, time_stamp, cpu_util_percent (of
  the container's cpu_request) and mem_util_percent (of its mem_size). Each app_du's containers are
  averaged per time stamp into one series of fractions of the request, which its pods follow.
- ``batch_instance.csv``: instance_name, task_name, job_name, task_type, status, start_time, end_time,
  machine_id, seq_no, total_seq_no, cpu_avg, cpu_max, mem_avg, mem_max. Used: task_name, job_name,
  cpu_avg and cpu_max (100 = 1 core), mem_avg (normalised like plan_mem). A task's instances are averaged
  into one profile: mean CPU ``cpu_avg / plan_cpu``, bursting to ``cpu_max`` (one tick in ten), memory
  ``mem_avg / plan_mem``.

Rows with empty usage fields or the trace's abnormal ``-1``/``101`` are counted as skipped; malformed rows
(wrong column count, non-numbers) are errors naming the file and line. The real trace is too large to
ship; ``write_trace`` writes a small one with the same columns (``python -m harmonic.sim.usage.alibaba
DIR``).
"""

from __future__ import annotations

import argparse
import csv
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from harmonic.sim import trace as tr
from harmonic.sim.errors import ScenarioError
from harmonic.sim.scenario import AlibabaTraceWorkload, UsageProfile

CONTAINER_USAGE_COLUMNS = (
    "container_id",
    "machine_id",
    "time_stamp",
    "cpu_util_percent",
    "mem_util_percent",
    "cpi",
    "mem_gps",
    "mpki",
    "net_in",
    "net_out",
    "disk_io_percent",
)
BATCH_INSTANCE_COLUMNS = (
    "instance_name",
    "task_name",
    "job_name",
    "task_type",
    "status",
    "start_time",
    "end_time",
    "machine_id",
    "seq_no",
    "total_seq_no",
    "cpu_avg",
    "cpu_max",
    "mem_avg",
    "mem_max",
)
#: Share of ticks a batch task spends at its instances' cpu_max.
BATCH_BURST_PROBABILITY = 0.1


@dataclass(frozen=True)
class UsageSeries:
    """Usage over trace time as fractions of the request (times ascending, seconds)."""

    times: np.ndarray
    cpu: np.ndarray
    memory: np.ndarray


@dataclass(frozen=True)
class TaskUsage:
    """A batch task's instances on average: cores and normalised memory."""

    cpu_avg: float
    cpu_max: float
    mem_avg: float


def _check_columns(path: Path, line: int, row: list[str], columns: tuple[str, ...]) -> None:
    if len(row) != len(columns):
        raise ScenarioError(
            f"{path}:{line}", "", f"expected {len(columns)} columns ({', '.join(columns)}), got {len(row)}"
        )


def _percent(path: Path, line: int, column: str, text: str) -> float | None:
    v = tr._number(path, line, column, text, True)
    if v is None or v < 0 or v > 100:
        return None  # the trace marks missing readings with -1 or 101
    return v


def read_container_usage(path: Path, app_of: dict[str, str], skipped: Counter[str]) -> dict[str, UsageSeries]:
    """app_du -> its containers' mean usage per time stamp, as fractions of their requests."""
    sums: dict[str, dict[float, list[float]]] = defaultdict(dict)
    for line, row in tr._rows(path):
        _check_columns(path, line, row, CONTAINER_USAGE_COLUMNS)
        cid, _machine, ts = row[0], row[1], row[2]
        t = tr._number(path, line, "time_stamp", ts, True)
        cpu = _percent(path, line, "cpu_util_percent", row[3])
        mem = _percent(path, line, "mem_util_percent", row[4])
        for i, column in enumerate(CONTAINER_USAGE_COLUMNS[5:], start=5):
            tr._number(path, line, column, row[i], True)
        if t is None or cpu is None or mem is None:
            skipped["container_usage: no time_stamp or a missing reading"] += 1
            continue
        app = app_of.get(cid)
        if app is None:
            skipped["container_usage: container not in container_meta"] += 1
            continue
        acc = sums[app].setdefault(t, [0.0, 0.0, 0.0])
        acc[0] += cpu / 100
        acc[1] += mem / 100
        acc[2] += 1
    out = {}
    for app, by_time in sums.items():
        times = np.asarray(sorted(by_time))
        vals = np.asarray([by_time[t] for t in times.tolist()])
        out[app] = UsageSeries(times, vals[:, 0] / vals[:, 2], vals[:, 1] / vals[:, 2])
    return out


def read_batch_instances(path: Path, skipped: Counter[str]) -> dict[tuple[str, str], TaskUsage]:
    """(job_name, task_name) -> its instances' mean cpu_avg, cpu_max (cores x 100) and mem_avg."""
    acc: dict[tuple[str, str], list[float]] = {}
    for line, row in tr._rows(path):
        _check_columns(path, line, row, BATCH_INSTANCE_COLUMNS)
        task, job = row[1], row[2]
        for i in (5, 6, 8, 9):
            tr._number(path, line, BATCH_INSTANCE_COLUMNS[i], row[i], True)
        cpu_avg = tr._number(path, line, "cpu_avg", row[10], True)
        cpu_max = tr._number(path, line, "cpu_max", row[11], True)
        mem_avg = tr._number(path, line, "mem_avg", row[12], True)
        tr._number(path, line, "mem_max", row[13], True)
        if not task or not job or cpu_avg is None or mem_avg is None or cpu_avg < 0 or mem_avg < 0:
            skipped["batch_instance: no task, job, cpu_avg or mem_avg"] += 1
            continue
        a = acc.setdefault((job, task), [0.0, 0.0, 0.0, 0.0])
        a[0] += cpu_avg
        a[1] += cpu_max if cpu_max is not None and cpu_max >= cpu_avg else cpu_avg
        a[2] += mem_avg
        a[3] += 1
    return {k: TaskUsage(a[0] / a[3], a[1] / a[3], a[2] / a[3]) for k, a in acc.items()}


def container_apps(path: Path) -> dict[str, str]:
    """container_id -> app_du, from container_meta.csv (already validated by the trace reader)."""
    out: dict[str, str] = {}
    with path.open(newline="") as f:
        for row in csv.reader(f):
            if len(row) >= 4 and row[0].strip() and row[3].strip():
                out.setdefault(row[0].strip(), row[3].strip())
    return out


# --------------------------------------------------------------------------- generator
def write_trace(
    out: Path,
    seed: int = 0,
    apps: int = 6,
    containers_per_app: int = 4,
    jobs: int = 12,
    hours: float = 4.0,
    period_hours: float = 1.0,
    step: float = 60.0,
    swing: float = 0.6,
    phase_spread: float = 2 * math.pi,
    rollout_hours: float = 0.0,
) -> list[Path]:
    """Write container_meta, container_usage, batch_task and batch_instance CSV files in the trace's
        schema: online apps requesting 2-4x what they use with a periodic peak (relative amplitude
        ``swing``; each app's phase drawn from ``[0, phase_spread)`` radians, so a small spread makes the
        apps peak together), batch tasks using about what they plan. With ``rollout_hours`` an app's containers
    start one after another over that time (a rolling scale-up), else all within the first ten minutes.
    Returns the files written."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    t0 = 86400.0  # the real trace's time stamps start after a day of warm-up
    end = t0 + hours * 3600
    meta: list[list[object]] = []
    usage: list[list[object]] = []
    for a in range(apps):
        app = f"app_{a + 1}"
        cpu_req = int(rng.choice([100, 200, 400]))
        mem = round(float(rng.uniform(1.0, 4.0)), 2)
        mean = float(rng.uniform(0.25, 0.5))
        phase = float(rng.uniform(0, phase_spread))
        for c in range(containers_per_app):
            cid = f"c_{a * containers_per_app + c + 1}"
            created = t0 + float(rng.integers(0, 600)) + c * rollout_hours * 3600 / containers_per_app
            meta.append([cid, f"m_{c + 1}", int(created), app, "started", cpu_req, cpu_req, mem])
            for t in np.arange(created, end, step):
                wave = 1 + swing * math.sin(2 * math.pi * (t - t0) / (period_hours * 3600) + phase)
                cpu = min(100, max(0, round(100 * mean * wave * (1 + 0.1 * rng.standard_normal()))))
                memu = min(100, max(0, round(100 * (0.5 + 0.05 * rng.standard_normal()))))
                usage.append(
                    [cid, f"m_{c + 1}", int(t), cpu, memu, 1.2, 3.1, 2, 20.5, 20.1, 5.0 if t % 7 else -1]
                )
    tasks: list[list[object]] = []
    instances: list[list[object]] = []
    for j in range(jobs):
        job = f"j_{j + 1}"
        start = int(t0 + rng.uniform(0, hours * 3600 * 0.8))
        length = int(rng.uniform(300, 1800))
        n = int(rng.integers(1, 5))
        plan_cpu = float(rng.choice([50, 100, 200]))
        plan_mem = round(float(rng.uniform(0.5, 2.0)), 2)
        tasks.append(["M1", n, job, "1", "Terminated", start, start + length, plan_cpu, plan_mem])
        for i in range(n):
            avg = plan_cpu * float(rng.uniform(0.6, 1.0))
            peak = min(plan_cpu * 1.5, avg * float(rng.uniform(1.1, 1.6)))
            mem_avg = plan_mem * float(rng.uniform(0.5, 0.9))
            instances.append(
                [f"ins_{j}_{i}", "M1", job, "1", "Terminated", start, start + length, f"m_{i + 1}",
                 1, 1, round(avg, 2), round(peak, 2), round(mem_avg, 3), round(mem_avg * 1.1, 3)]
            )  # fmt: skip
    files = {
        "container_meta.csv": meta,
        "container_usage.csv": usage,
        "batch_task.csv": tasks,
        "batch_instance.csv": instances,
    }
    written = []
    for name, rows in files.items():
        path = out / name
        with path.open("w", newline="") as f:
            csv.writer(f).writerows(rows)
        written.append(path)
    return written


def _main() -> None:
    p = argparse.ArgumentParser(description="Write a small trace in Alibaba cluster-trace-v2018's schema.")
    p.add_argument("out", type=Path)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--apps", type=int, default=6)
    p.add_argument("--jobs", type=int, default=12)
    p.add_argument("--hours", type=float, default=4.0)
    p.add_argument("--containers", type=int, default=4, help="containers per app")
    p.add_argument("--swing", type=float, default=0.6, help="relative amplitude of the apps' hourly swing")
    p.add_argument(
        "--phase-spread", type=float, default=2 * math.pi, help="apps' phases drawn from [0, this) radians"
    )
    p.add_argument("--rollout-hours", type=float, default=0.0, help="start each app's containers over this")
    a = p.parse_args()
    written = write_trace(
        a.out,
        a.seed,
        a.apps,
        a.containers,
        a.jobs,
        a.hours,
        swing=a.swing,
        phase_spread=a.phase_spread,
        rollout_hours=a.rollout_hours,
    )
    for path in written:
        print(path)


if __name__ == "__main__":
    _main()


def trace_usage(
    w: AlibabaTraceWorkload,
    base: Path,
    source: str,
    where: str,
    t0: float,
    replica_sets: dict[str, list[str]],
    jobs: dict[tuple[str, str], tuple[str, int, int]],
    memory_at_100: Fraction,
    skipped: Counter[str],
) -> dict[str, UsageSeries | UsageProfile]:
    """Workload (``Kind/namespace/name``) -> what the trace says it uses: a series for each app_du's
    ReplicaSets (``replica_sets``: app_du -> names), a profile for each task's Job (``jobs``: (job, task)
    -> (name, plan CPU millicores, plan memory bytes)). Trace times become virtual times (minus ``t0``)."""
    out: dict[str, UsageSeries | UsageProfile] = {}
    if w.container_usage is not None:
        assert w.container_meta is not None
        path = _existing(base, w.container_usage, source, where + ".containerUsage")
        series = read_container_usage(path, container_apps(base / w.container_meta), skipped)
        for app, s in series.items():
            shifted = UsageSeries(s.times - t0, s.cpu, s.memory)
            for name in replica_sets.get(app, ()):
                out[f"ReplicaSet/{w.namespace}/{name}"] = shifted
    if w.batch_instance is not None:
        path = _existing(base, w.batch_instance, source, where + ".batchInstance")
        for key, u in read_batch_instances(path, skipped).items():
            job = jobs.get(key)
            if job is None:
                skipped["batch_instance: task not in batch_task"] += 1
                continue
            name, cpu_milli, mem_bytes = job
            mem = float(u.mem_avg * memory_at_100 / 100)
            out[f"Job/{w.namespace}/{name}"] = UsageProfile(
                cpu=min(20.0, u.cpu_avg * 10 / cpu_milli),
                memory=min(20.0, mem / mem_bytes) if mem_bytes > 0 else 0.0,
                amplitude=0.0,
                memory_amplitude=0.0,
                noise=0.05,
                burst_probability=BATCH_BURST_PROBABILITY if u.cpu_max > u.cpu_avg > 0 else 0.0,
                burst_factor=min(20.0, u.cpu_max / u.cpu_avg) if u.cpu_max > u.cpu_avg > 0 else 1.0,
            )
    return out


def _existing(base: Path, name: str, source: str, where: str) -> Path:
    path = base / name
    if not path.exists():
        raise ScenarioError(source, where, f"{name}: no such file")
    return path
