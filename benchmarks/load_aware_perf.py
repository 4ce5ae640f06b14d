"""Scheduling throughput with LoadAware on, against kube-scheduler's default profile (SchedulingBasic).

    python benchmarks/load_aware_perf.py --nodes 5000 --init-pods 1000 --pods 2000 --cpu-time

Runs the scheduler_perf SchedulingBasic workload twice: the default profile, then the default profile
plus LoadAware (weight 5) reading a ``node_usage`` service that holds a fresh reading for every node and
seasonal forecasts (60 steps) for ``--workloads`` workloads, the benchmark's own pods among them, so
every cycle takes the forecast path (no fallback). Prints pods/s of each and their ratio; with
``--cpu-time`` the process's CPU time is measured instead of wall time (steadier on a shared machine).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from harmonic.perf.runner import run_workload
from harmonic.perf.workloads import WORKLOADS
from harmonic.plugins.registry import default_registry
from harmonic.signals.forecast import Forecast
from harmonic.signals.identity import WorkloadKey
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


def _service(nodes: int, workloads: int, namespace: str, names: list[str]) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    stats = {f"node-{i}": NodeStats(float(rng.uniform(0, 2000)), 100.0, 1e9, 1e8) for i in range(nodes)}
    keys = [WorkloadKey(namespace, n) for n in names] + [
        WorkloadKey("other", f"w{i}") for i in range(workloads)
    ]
    forecasts = {
        k: WorkloadForecast(
            Forecast(rng.uniform(50, 500, 60), 20.0), Forecast(rng.uniform(1e7, 1e8, 60), 1e6)
        )
        for k in keys
    }
    return {"node_usage": _Usage(UsageView(1, 0.0, True, stats, forecasts, 60.0))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--init-pods", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--workloads", type=int, default=20)
    ap.add_argument("--cpu-time", action="store_true")
    a = ap.parse_args()
    timer = time.process_time if a.cpu_time else time.perf_counter
    factory, _ = WORKLOADS["SchedulingBasic"]
    base = factory(a.nodes, a.init_pods, a.pods)
    registry = default_registry()
    first = next(iter(base.measured_pods()))
    meta = first.get("metadata") or {}
    labels = meta.get("labels") or {}
    names = sorted({str(labels.get("app") or labels.get("name") or meta.get("name"))})
    namespace = str(meta.get("namespace") or "default")
    default = run_workload(base, registry, timer=timer)
    with_la = run_workload(
        replace(
            factory(a.nodes, a.init_pods, a.pods),
            config=LOAD_AWARE,
            services=lambda: _service(a.nodes, a.workloads, namespace, names),
        ),
        registry,
        timer=timer,
    )
    clock = "CPU" if a.cpu_time else "wall"
    print(f"SchedulingBasic {a.nodes} nodes, {a.init_pods} init pods, {a.pods} measured ({clock} time)")
    print(f"  default profile:     {default.pods_per_second:8.1f} pods/s  p99 {default.p99_ms:.2f} ms")
    print(f"  default + LoadAware: {with_la.pods_per_second:8.1f} pods/s  p99 {with_la.p99_ms:.2f} ms")
    print(f"  ratio: {with_la.pods_per_second / default.pods_per_second:.3f}")


if __name__ == "__main__":
    main()
