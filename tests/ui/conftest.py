"""Fixtures of the decision explorer's tests: a recorded simulation, a live scheduler serving
/debug/decisions, the explorer serving either, and headless Chromium driven by Playwright."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harmonic.cluster.health import HealthServer
from harmonic.framework.decisions import DecisionLog
from harmonic.framework.decisions import endpoint as decisions_endpoint
from harmonic.plugins.registry import default_registry
from harmonic.sim.profiles import profile_runs
from harmonic.sim.run import simulate
from harmonic.testing import node, pod
from harmonic.testing.harness import Harness
from harmonic.ui.app import create_app
from harmonic.ui.server import UIServer
from harmonic.ui.sources import LiveSource, ReportSource, Source
from tests.chromium import chromium
from tests.scheduler.test_decisions import TWO_SCORERS
from tests.sim.helpers import deployment, objects, plan_of, scenario


@pytest.fixture(scope="session")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Online Boutique, a two-replica web Deployment and a pod asking for more CPU than any node has,
    under the default and bin-packing profiles, with decisions recorded."""
    sc = scenario(
        [
            {"type": "topology", "topology": "online-boutique", "userRate": 5},
            objects(deployment("web", 2)),
            objects(deployment("huge", 1, cpu="64")),
        ],
        duration=600,
    )
    registry = default_registry()
    folder = tmp_path_factory.mktemp("ui-report")
    simulate(
        plan_of(sc),
        [r for r in profile_runs((), registry) if r.name in ("default-scheduler", "bin-packing")],
        registry,
        folder,
        record_decisions=1000,
    )
    return folder


@pytest.fixture
def live_scheduler() -> Iterator[tuple[Harness, str]]:
    """A scheduler that has placed one pod and failed another, its decisions served at /debug/decisions
    as `harmonic run --decisions-buffer` serves them."""
    h = Harness(TWO_SCORERS)
    log = h.scheduler.decisions = DecisionLog(50)
    h.add_nodes(
        [
            node("small").cap(cpu="1", memory="2Gi").obj(),
            node("tainted").cap(cpu="4", memory="4Gi").taint("dedicated", "gpu").obj(),
            node("a").cap(cpu="4", memory="4Gi").taint("soft", "yes", "PreferNoSchedule").obj(),
            node("b").cap(cpu="8", memory="4Gi").obj(),
        ]
    )
    h.add_pods([pod("web").req(cpu="2", memory="1Gi").obj(), pod("huge").req(cpu="16").obj()])
    h.schedule()
    server = HealthServer(
        "127.0.0.1",
        0,
        lambda: b"",
        {},
        {},
        {"/debug/decisions": lambda q: (*decisions_endpoint(log, q), "application/json")},
    )
    server.start()
    try:
        yield h, f"http://127.0.0.1:{server.port}"
    finally:
        server.stop()


@pytest.fixture
def explorer() -> Iterator[Callable[..., str]]:
    """``url = explorer(source, token=None)``: the explorer served on a free loopback port."""
    servers: list[tuple[UIServer, Source]] = []

    def start(source: Source, token: str | None = None) -> str:
        server = UIServer(create_app(source, token), port=0)
        server.start()
        servers.append((server, source))
        return server.url

    yield start
    for server, source in servers:
        server.stop()
        if isinstance(source, LiveSource):
            source.close()


@pytest.fixture
def report_explorer(report_dir: Path, explorer: Callable[..., str]) -> str:
    return explorer(ReportSource(report_dir))


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """The system's Chromium, headless, driven by Playwright (no browser download)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page; any script error on it fails the test."""
    context = browser.new_context()
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.set_default_timeout(20_000)
    try:
        yield pg
    finally:
        context.close()
    assert errors == []
