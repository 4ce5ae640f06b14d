"""The HTML report renders in a real browser (headless Debian chromium) without script errors."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harmonic.sim.report import format_table, profile_summaries, rows_of, write_report
from tests.chromium import chromium

from .helpers import deployment, job, objects, plan_of, scenario

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--enable-logging=stderr",
    "--virtual-time-budget=10000",
]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    sc = scenario(
        [
            {"type": "topology", "topology": "online-boutique", "userRate": 5},
            objects(deployment("web", 4)),
            objects(job("batch", parallelism=2, completions=6), duration=120),
        ],
        events=[{"type": "nodeAdded", "at": 300, "pool": "n", "count": 1}],
        duration=900,
    )
    from harmonic.plugins.registry import default_registry
    from harmonic.sim.engine import Simulation
    from harmonic.sim.profiles import profile_runs

    registry = default_registry()
    worlds = Simulation(plan_of(sc), profile_runs((), registry), registry).run()
    out = tmp_path_factory.mktemp("report")
    doc = write_report(out, plan_of(sc), worlds)
    assert "default-scheduler" in format_table(doc)
    return out


def test_report_files_and_table(report):
    html = (report / "report.html").read_text()
    assert (report / "metrics.json").exists()
    assert html.count('class="fig"') == 8
    assert "Plotly.newPlot('fig0'" in html and "bin-packing" in html
    assert "<script src=" not in html  # single file: nothing fetched


def test_report_renders_in_headless_chromium(report, tmp_path):
    exe = chromium()
    url = (report / "report.html").as_uri()
    profile = tmp_path / "profile"
    profile.mkdir()
    dom = subprocess.run(
        [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    # Plotly draws an SVG per figure; a script error would stop before them.
    assert dom.stdout.count('class="main-svg"') >= 8
    assert "Uncaught" not in dom.stderr
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            exe,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--window-size=1200,2400",
            f"--screenshot={shot}",
            url,
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 50_000


def test_report_marks_the_scenarios_events_on_timelines(report):
    html = (report / "report.html").read_text()
    # The scenario adds one node at 300 s: a dotted line at minute 5 labelled so, on each timeline.
    assert '"text":"1 node added"' in html and '"x0":5.0' in html


def _metrics(**over: object) -> dict[str, object]:
    """A profile's metrics.json entry with the fields the side-by-side table reads."""
    m: dict[str, object] = {
        "pods_scheduled": 10,
        "pods_pending": 0,
        "pods_completed": 4,
        "pods_evicted": 0,
        "pods_preempted": 0,
        "nodes_in_use": 5.0,
        "nodes_in_use_peak": 6,
        "cpu_seconds_completed": 100.0,
        "zone_failure_survivable_share": 0.5,
        "node_failure_survivable_share": 1.0,
        "cross_node_traffic_share": 0.6,
        "cross_zone_traffic_share": 0.3,
        "added_latency_ms_per_user_request": 2.0,
        "user_request_latency_ms": {},
        "latency_critical_slowdown_truth": {"mean": 0.1, "p95": 0.2},
        "batch_slowdown_truth": {"mean": 0.3, "p95": 0.5},
        "user_request_latency_ms_pooled": {},
        "application_utilisation": {},
        "truth_perturbed": {
            v: {"latency_critical_slowdown_truth": {"mean": 0.1}} for v in ("x0.5", "x2", "mixed")
        },
        "latency_critical_slowdown": 0.1,
        "time_to_schedule_seconds": {"p50": 0.0, "p99": 1.0},
        "allocation": {"cpu": {"mean": 0.4, "stdev": 0.1}, "memory": {"mean": 0.3, "stdev": 0.1}},
        "fragmentation": {"unusable_cpu_share": 0.0},
        "stranded_cpu_cores_while_pending": 0.0,
        "decisions_per_second": 1000,
    }
    m.update(over)
    return m


@pytest.mark.parametrize(
    ("label", "values", "best"),
    [
        ("nodes in use (mean)", (5.0, 3.0, 3.0), {1, 2}),  # lower is better; ties all highlighted
        ("cross-zone traffic share", (0.3, 0.1, 0.2), {1}),
        ("pods completed", (4, 9, 4), {1}),  # higher is better
        ("pods scheduled", (10, 12, 11), set()),  # no direction: nothing highlighted
        ("nodes in use (peak)", (6, 6, 6), set()),  # every profile ties: nothing stands out
    ],
)
def test_best_value_per_row(label: str, values: tuple[object, ...], best: set[int]) -> None:
    key = {
        "nodes in use (mean)": "nodes_in_use",
        "cross-zone traffic share": "cross_zone_traffic_share",
        "pods completed": "pods_completed",
        "pods scheduled": "pods_scheduled",
        "nodes in use (peak)": "nodes_in_use_peak",
    }[label]
    doc = {"profiles": {f"p{i}": _metrics(**{key: v}) for i, v in enumerate(values)}}
    (row,) = [r for r in rows_of(doc) if r.label == label]
    assert row.best() == best
    assert row.definition  # every row says what it measures


def test_profile_summary_names_gains_and_costs_against_the_first_profile() -> None:
    doc = {
        "profiles": {
            "default-scheduler": _metrics(),
            "bin-packing": _metrics(nodes_in_use=2.5, cross_zone_traffic_share=0.45),
        }
    }
    assert profile_summaries(doc) == {
        "bin-packing": "against default-scheduler: better on nodes in use (mean) 5 → 2.5. "
        "Worse on cross-zone traffic share 30.0% → 45.0%."
    }
