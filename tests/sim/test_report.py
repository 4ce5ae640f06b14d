"""The HTML report renders in a real browser (headless Debian chromium) without script errors."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harmonic.sim.report import format_table, write_report
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
