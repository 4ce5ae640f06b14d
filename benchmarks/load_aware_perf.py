"""Scheduling throughput with LoadAware on, against kube-scheduler's default profile (SchedulingBasic).

    python benchmarks/load_aware_perf.py --nodes 5000 --init-pods 1000 --pods 2000 --cpu-time

Runs the scheduler_perf SchedulingBasic workload twice: the default profile, then the default profile
plus LoadAware (weight 5) reading a ``node_usage`` service that holds a fresh reading for every node and
seasonal forecasts (60 steps) for ``--workloads`` workloads, so no cycle falls back to requests.
SchedulingBasic's pods are bare pods, each its own workload, which the forecast does not know: they take
LoadAware's flat-forecast path. With ``--known`` every pod is annotated into one of the forecast
workloads (``harmonic.dev/workload``), so every cycle and every node takes the seasonal path. Prints
pods/s of each and their ratio; with ``--cpu-time`` the process's CPU time is measured instead of wall
time (steadier on a shared machine); ``--repeat N`` alternates N runs of each and keeps each's best.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from harmonic.perf.runner import run_workload
from harmonic.perf.workloads import WORKLOADS
from harmonic.plugins.registry import default_registry
from harmonic.signals.forecast import Forecast
from harmonic.signals.identity import WORKLOAD_ANNOTATION, WorkloadKey
from harmonic.signals.usage import NodeStats, UsageView, WorkloadForecast

LOAD_AWARE = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {"multiPoint": {"enabled": [{"name": "LoadAware", "weight": 5}]}},
            "pluginConfig": [{"name": "LoadAware", "args": {"staleSeconds": 1e12}}],
        }
    ],
}


@dataclass
class _Usage:
    view: UsageView


def _service(nodes: int, names: list[str]) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    stats = {f"node-{i}": NodeStats(float(rng.uniform(0, 2000)), 100.0, 1e9, 1e8) for i in range(nodes)}
    # SchedulingBasic's init and measured pods live in namespaces sched-0 and sched-1.
    keys = [WorkloadKey(ns, n) for ns in ("sched-0", "sched-1") for n in names]
    forecasts = {
        k: WorkloadForecast(
            Forecast(rng.uniform(50, 500, 60), 20.0), Forecast(rng.uniform(1e7, 1e8, 60), 1e6)
        )
        for k in keys
    }
    return {"node_usage": _Usage(UsageView(1, 0.0, True, stats, forecasts, 60.0))}


def _annotated(
    pods: Callable[[], Iterable[dict[str, Any]]], names: list[str]
) -> Callable[[], Iterator[dict[str, Any]]]:
    def make() -> Iterator[dict[str, Any]]:
        for i, p in enumerate(pods()):
            meta = dict(p.get("metadata") or {})
            meta["annotations"] = {
                **(meta.get("annotations") or {}),
                WORKLOAD_ANNOTATION: names[i % len(names)],
            }
            yield {**p, "metadata": meta}

    return make


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--init-pods", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--workloads", type=int, default=20)
    ap.add_argument("--cpu-time", action="store_true")
    ap.add_argument("--known", action="store_true", help="pods belong to the forecast workloads")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each profile this many times, alternating; keep each's best",
    )
    a = ap.parse_args()
    timer = time.process_time if a.cpu_time else time.perf_counter
    factory, _ = WORKLOADS["SchedulingBasic"]
    base = factory(a.nodes, a.init_pods, a.pods)
    registry = default_registry()
    names = [f"w{i}" for i in range(a.workloads)]
    la = replace(
        factory(a.nodes, a.init_pods, a.pods),
        config=LOAD_AWARE,
        services=lambda: _service(a.nodes, names),
    )
    if a.known:
        la = replace(
            la, init_pods=_annotated(la.init_pods, names), measured_pods=_annotated(la.measured_pods, names)
        )
    runs = []
    for _ in range(max(1, a.repeat)):
        # Alternating keeps a shared machine's changing load from favouring one profile.
        runs.append((run_workload(base, registry, timer=timer), run_workload(la, registry, timer=timer)))
    default = max((d for d, _ in runs), key=lambda r: r.pods_per_second)
    with_la = max((w for _, w in runs), key=lambda r: r.pods_per_second)
    clock = "CPU" if a.cpu_time else "wall"
    path = "seasonal (--known)" if a.known else "flat"
    print(
        f"SchedulingBasic {a.nodes} nodes, {a.init_pods} init pods, {a.pods} measured ({clock} time, {path} path)"
    )
    print(f"  default profile:     {default.pods_per_second:8.1f} pods/s  p99 {default.p99_ms:.2f} ms")
    print(f"  default + LoadAware: {with_la.pods_per_second:8.1f} pods/s  p99 {with_la.p99_ms:.2f} ms")
    print(f"  ratio: {with_la.pods_per_second / default.pods_per_second:.3f}")


if __name__ == "__main__":
    main()
