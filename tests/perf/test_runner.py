"""What the scheduler_perf runner reports: scheduled pods per second, unscheduled ones apart."""

from __future__ import annotations

import time

from harmonic.perf.cli import format_result
from harmonic.perf.runner import Workload, run_workload
from harmonic.plugins.registry import in_tree_registry
from harmonic.testing import node, pod


def _workload() -> Workload:
    # One 2-CPU node: two of the five measured 1-CPU pods fit, three never do.
    return Workload(
        name="t",
        nodes=lambda: [node("n").cap(cpu="2", memory="8Gi", pods=110).obj()],
        init_pods=lambda: [],
        measured_pods=lambda: [pod(f"p{i}").req(cpu="1").obj() for i in range(5)],
        num_measured=5,
    )


def test_rate_counts_scheduled_pods_only_and_reports_the_unscheduled() -> None:
    r = run_workload(_workload(), in_tree_registry(), timer=time.process_time)
    assert (r.scheduled, r.unscheduled) == (2, 3)
    assert r.pods_per_second == 2 / r.seconds
    assert r.timer == "cpu"
    text = format_result(r)
    assert "scheduled 2/5" in text and "3 unscheduled, not counted" in text
    assert "CPU ms" in text and "timer: CPU time (process_time)" in text
    assert "no API server" in text


def test_wall_timer_is_named() -> None:
    r = run_workload(_workload(), in_tree_registry())
    assert r.timer == "wall"
    assert "timer: wall time (perf_counter)" in format_result(r)
