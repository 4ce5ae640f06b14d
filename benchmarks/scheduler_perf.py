"""scheduler_perf workloads against Harmonic's scheduler and the in-memory cluster.

    python benchmarks/scheduler_perf.py --workload SchedulingBasic --nodes 5000 --init-pods 1000 --pods 10000

Prints scheduled (bound) measured pods per second of the whole scheduling loop and how many measured
pods stayed unscheduled, which timer measured it (wall perf_counter, or CPU process_time with
--cpu-time, durations then in CPU ms), how far the virtual clock jumped over idle backoff, p50/p99
per-pod latency and peak RSS; with --json the last line is one JSON object with those figures. The
runs are in-process against the in-memory cluster: upstream's scheduler_perf thresholds include a real
API server and are not directly comparable.
"""

from __future__ import annotations

import sys

from harmonic.perf.cli import main

if __name__ == "__main__":
    sys.exit(main())
