"""scheduler_perf workloads against Harmonic's scheduler and the in-memory cluster.

    python benchmarks/scheduler_perf.py --workload SchedulingBasic --nodes 5000 --init-pods 1000 --pods 10000

Prints pods/s of the whole scheduling loop for the measured pods, p50/p99 per-pod latency and peak
RSS; with --json the last line is one JSON object with those figures.
"""

from __future__ import annotations

import sys

from harmonic.perf.cli import main

if __name__ == "__main__":
    sys.exit(main())
