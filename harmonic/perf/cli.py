"""Command line of the scheduler_perf benchmark (also behind ``benchmarks/scheduler_perf.py``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import yaml

from harmonic import safeyaml
from harmonic.framework.config import ConfigError
from harmonic.perf.runner import PerfResult, run_workload
from harmonic.perf.workloads import WORKLOADS
from harmonic.plugins.registry import default_registry

#: How the figures compare with upstream's: its scheduler_perf thresholds include a real API server
#: (etcd writes, watch fan-out, the client's rate limits); these runs are in-process.
UPSTREAM_NOTE = "  (in-process, in-memory cluster: no API server, unlike upstream scheduler_perf, whose thresholds include one)"


def format_result(r: PerfResult) -> str:
    s = "CPU s" if r.timer == "cpu" else "s"
    ms = "CPU ms" if r.timer == "cpu" else "ms"
    timer = "CPU time (process_time)" if r.timer == "cpu" else "wall time (perf_counter)"
    lines = [
        f"{r.workload}: {r.nodes} nodes, {r.init_pods} initial pods, {r.measured_pods} measured pods; timer: {timer}",
        f"  scheduled {r.scheduled}/{r.measured_pods} in {r.seconds:.2f} {s}: {r.pods_per_second:,.0f} scheduled pods/s"
        f" ({r.unscheduled} unscheduled, not counted)",
        f"  per-pod latency from measured start to bind: p50 {r.p50_ms:.1f} {ms}, p99 {r.p99_ms:.1f} {ms}",
        f"  per-attempt duration: p50 {r.attempt_p50_ms:.3f} {ms}, p99 {r.attempt_p99_ms:.3f} {ms}",
        f"  failed attempts (PostFilter ran): {r.unschedulable_attempts},"
        f" p50 {r.failed_attempt_p50_ms:.3f} {ms}, p99 {r.failed_attempt_p99_ms:.3f} {ms}",
    ]
    if r.idle_skipped_seconds > 0:
        lines.append(
            f"  the scheduler's clock jumped {r.idle_skipped_seconds:.2f} virtual s over idle backoff waits"
            " (not in the elapsed time)"
        )
    lines += [f"  peak RSS {r.peak_rss_mb:.0f} MB", UPSTREAM_NOTE]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scheduler_perf", description=__doc__)
    ap.add_argument("--workload", default="SchedulingBasic", choices=sorted(WORKLOADS))
    ap.add_argument("--nodes", type=int, help="number of nodes (workload default if omitted)")
    ap.add_argument("--init-pods", type=int, help="pods created and scheduled before measuring")
    ap.add_argument("--pods", type=int, help="measured pods")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="end with one JSON line of the figures")
    ap.add_argument(
        "--config",
        metavar="PATH",
        help="KubeSchedulerConfiguration to run instead of the workload's (e.g. benchmarks/configs/core-only.yaml)",
    )
    ap.add_argument(
        "--cpu-time",
        action="store_true",
        help="measure this process's CPU time instead of wall time (steadier on a shared machine)",
    )
    args = ap.parse_args(argv)
    factory, (dn, di, dp) = WORKLOADS[args.workload]
    nodes = args.nodes if args.nodes is not None else dn
    init = args.init_pods if args.init_pods is not None else di
    pods = args.pods if args.pods is not None else dp
    for name, v in (("--nodes", nodes), ("--init-pods", init), ("--pods", pods)):
        if v < 0:
            ap.error(f"{name} must be >= 0")
    timer = time.process_time if args.cpu_time else time.perf_counter
    workload = factory(nodes, init, pods)
    if args.config is not None:
        try:
            workload.config = safeyaml.load(Path(args.config).read_text())
        except (OSError, yaml.YAMLError) as e:
            ap.error(f"--config {args.config}: {' '.join(str(e).split())}")
    try:
        result = run_workload(workload, default_registry(), seed=args.seed, timer=timer)
    except ConfigError as e:
        ap.error(str(e))
    print(format_result(result))
    if args.json:
        print(json.dumps(result.as_dict()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
