"""Traces: arrival-time CSV files, and the Alibaba cluster-trace-v2018 ``container_meta`` and
``batch_task`` tables.

Arrival CSV (``arrivals`` workloads with ``process: trace``): a header row, then one row per arrival.
Columns: ``time`` (seconds after the entry's ``start``, required), ``duration`` (seconds; overrides the
entry's duration), ``cpu`` and ``memory`` (quantities; override the first container's requests).

Alibaba cluster-trace-v2018 (files without a header, columns by position as in its schema.md):

- ``container_meta.csv``: container_id, machine_id, time_stamp, app_du, status, cpu_request, cpu_limit,
  mem_size. Used: container_id, time_stamp (first row of a container = its creation), app_du,
  cpu_request (100 = 1 core) and mem_size (normalised 0..100, times ``memoryAt100``/100). Each app_du
  becomes a ReplicaSet (one per distinct request shape within it) scaled up by one at each new
  container's first time stamp; its pods run to the end. machine_id (Sigma's placement), status and
  cpu_limit are not used: the scheduler under test places the pods.
- ``batch_task.csv``: task_name, instance_num, job_name, task_type, status, start_time, end_time, plan_cpu,
  plan_mem. Each task becomes a Job ``<job_name>-<task_name>`` (lower-cased, ``_`` as ``-``) created at
  start_time with instance_num pods running in parallel for end_time - start_time seconds, requesting
  plan_cpu (100 = 1 core) and plan_mem (normalised like mem_size). The DAG in task_name is honoured only
  through the trace's own start times. task_type and status are not used.

Rows that cannot be replayed (no start or end time, end before start, no requests, outside the
``traceStart``..``traceEnd`` window) are counted by reason in the metrics, never dropped silently;
malformed rows (wrong column count, non-numbers) are errors naming the file and line.
"""

from __future__ import annotations

import csv
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from harmonic.api.quantity import QuantityError, parse_quantity
from harmonic.api.resources import to_units
from harmonic.sim.errors import ScenarioError

CONTAINER_META_COLUMNS = (
    "container_id",
    "machine_id",
    "time_stamp",
    "app_du",
    "status",
    "cpu_request",
    "cpu_limit",
    "mem_size",
)
BATCH_TASK_COLUMNS = (
    "task_name",
    "instance_num",
    "job_name",
    "task_type",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
)


@dataclass(frozen=True)
class Arrival:
    time: float
    duration: float | None
    cpu: str | None
    memory: str | None


def _rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    try:
        f = path.open(newline="")
    except OSError as e:
        raise ScenarioError(str(path), "", f"cannot read: {e.strerror}") from None
    line = 0
    with f:
        try:
            for line, row in enumerate(csv.reader(f), start=1):
                if row and any(c.strip() for c in row):
                    yield line, [c.strip() for c in row]
        except (UnicodeDecodeError, csv.Error) as e:
            reason = "not UTF-8 text" if isinstance(e, UnicodeDecodeError) else str(e)
            raise ScenarioError(f"{path}:{line + 1}", "", f"cannot read: {reason}") from None


def _number(path: Path, line: int, column: str, text: str, allow_empty: bool = False) -> float | None:
    if text == "" and allow_empty:
        return None
    try:
        v = float(text)
    except ValueError:
        raise ScenarioError(f"{path}:{line}", column, f"{text!r} is not a number") from None
    if not math.isfinite(v):
        raise ScenarioError(f"{path}:{line}", column, f"{text!r} is not a finite number")
    return v


def read_arrivals(path: Path) -> list[Arrival]:
    rows = _rows(path)
    header_line, header = next(rows, (0, []))
    if "time" not in header:
        raise ScenarioError(f"{path}:{header_line or 1}", "", "needs a header row with a 'time' column")
    unknown = [c for c in header if c not in ("time", "duration", "cpu", "memory")]
    if unknown:
        raise ScenarioError(
            f"{path}:{header_line}", unknown[0], "unknown column (time, duration, cpu, memory)"
        )
    col = {c: i for i, c in enumerate(header)}
    out = []
    for line, row in rows:
        if len(row) != len(header):
            raise ScenarioError(f"{path}:{line}", "", f"expected {len(header)} columns, got {len(row)}")
        t = _number(path, line, "time", row[col["time"]])
        assert t is not None
        if t < 0:
            raise ScenarioError(f"{path}:{line}", "time", "must be >= 0")
        d = _number(path, line, "duration", row[col["duration"]], True) if "duration" in col else None
        if d is not None and d < 0:
            raise ScenarioError(f"{path}:{line}", "duration", "must be >= 0")
        cpu = row[col["cpu"]] or None if "cpu" in col else None
        mem = row[col["memory"]] or None if "memory" in col else None
        for name, q in (("cpu", cpu), ("memory", mem)):
            if q is not None:
                try:
                    to_units(name, q)  # what the pod made from it must be a valid pod
                except QuantityError as e:
                    raise ScenarioError(f"{path}:{line}", name, str(e)) from None
        out.append(Arrival(t, d, cpu, mem))
    out.sort(key=lambda a: a.time)
    return out


# --------------------------------------------------------------------------- Alibaba v2018
@dataclass(frozen=True)
class BatchTask:
    job: str
    task: str
    instances: int
    start: float
    end: float
    cpu_milli: int
    memory_bytes: int


@dataclass(frozen=True)
class Container:
    container_id: str
    app_du: str
    time: float
    cpu_milli: int
    memory_bytes: int


def dns_name(text: str) -> str:
    """A trace identifier as a Kubernetes name: lower case, ``_`` and other symbols as ``-``."""
    s = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return s or "x"


def _memory(normalised: float, memory_at_100: Fraction) -> int:
    return int(Fraction(normalised) * memory_at_100 / 100)


_INT64_MAX = 2**63 - 1


def _requests(
    where: str, cpu: tuple[str, float], mem: tuple[str, float], memory_at_100: Fraction
) -> tuple[int, int]:
    """(milli-CPU, memory bytes) of normalised (column, value) cells; Kubernetes quantities are int64."""
    for column, value in ((cpu[0], cpu[1] * 10), (mem[0], mem[1] * float(memory_at_100) / 100)):
        if not abs(value) <= _INT64_MAX:
            raise ScenarioError(where, column, "is more than a Kubernetes quantity can hold")
    return round(cpu[1] * 10), _memory(mem[1], memory_at_100)


def read_batch_tasks(path: Path, memory_at_100: Fraction, skipped: Counter[str]) -> list[BatchTask]:
    out = []
    for line, row in _rows(path):
        if len(row) != len(BATCH_TASK_COLUMNS):
            raise ScenarioError(
                f"{path}:{line}",
                "",
                f"expected {len(BATCH_TASK_COLUMNS)} columns ({', '.join(BATCH_TASK_COLUMNS)}), got {len(row)}",
            )
        task, instances, job, _type, _status, start, end, cpu, mem = row
        n = _number(path, line, "instance_num", instances, True)
        t0 = _number(path, line, "start_time", start, True)
        t1 = _number(path, line, "end_time", end, True)
        c = _number(path, line, "plan_cpu", cpu, True)
        m = _number(path, line, "plan_mem", mem, True)
        if not t0 or not t1:
            skipped["batch_task: no start_time or end_time"] += 1
            continue
        if t1 < t0:
            skipped["batch_task: end_time before start_time"] += 1
            continue
        if not n or n < 1:
            skipped["batch_task: no instances"] += 1
            continue
        if c is None or m is None or c <= 0:
            skipped["batch_task: no plan_cpu or plan_mem"] += 1
            continue
        cpu_milli, memory_bytes = _requests(f"{path}:{line}", ("plan_cpu", c), ("plan_mem", m), memory_at_100)
        out.append(
            BatchTask(
                job=job,
                task=task,
                instances=int(n),
                start=t0,
                end=t1,
                cpu_milli=cpu_milli,
                memory_bytes=memory_bytes,
            )
        )
    return out


def read_containers(path: Path, memory_at_100: Fraction, skipped: Counter[str]) -> list[Container]:
    first: dict[str, Container] = {}
    for line, row in _rows(path):
        if len(row) != len(CONTAINER_META_COLUMNS):
            raise ScenarioError(
                f"{path}:{line}",
                "",
                f"expected {len(CONTAINER_META_COLUMNS)} columns ({', '.join(CONTAINER_META_COLUMNS)}), got {len(row)}",
            )
        cid, _machine, ts, app_du, _status, cpu, _limit, mem = row
        t = _number(path, line, "time_stamp", ts, True)
        c = _number(path, line, "cpu_request", cpu, True)
        m = _number(path, line, "mem_size", mem, True)
        if t is None or not app_du or not cid:
            skipped["container_meta: no time_stamp, app_du or container_id"] += 1
            continue
        if c is None or m is None or c <= 0:
            skipped["container_meta: no cpu_request or mem_size"] += 1
            continue
        seen = first.get(cid)
        if seen is None or t < seen.time:
            first[cid] = Container(
                cid,
                app_du,
                t,
                *_requests(f"{path}:{line}", ("cpu_request", c), ("mem_size", m), memory_at_100),
            )
    return sorted(first.values(), key=lambda c: (c.time, c.container_id))


def memory_quantity(text: str, source: str, path: str) -> Fraction:
    try:
        q = parse_quantity(text)
    except QuantityError as e:
        raise ScenarioError(source, path, str(e)) from None
    if q <= 0:
        raise ScenarioError(source, path, "must be > 0")
    return q


def requests(cpu_milli: int, memory_bytes: int) -> dict[str, Any]:
    return {"cpu": f"{cpu_milli}m", "memory": str(memory_bytes)}
