"""The simulated mesh behind a Prometheus API: delay, window, noise, errors, and the real
PrometheusSource parsing its answers."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import numpy as np
import pytest

from harmonic.plugins.registry import default_registry
from harmonic.scheduler.clock import ManualClock
from harmonic.signals.identity import WorkloadKey
from harmonic.signals.prometheus import PrometheusSource
from harmonic.signals.telemetry import TrafficSample
from harmonic.sim.engine import World
from harmonic.sim.mesh import MESH_URL, MeshCounters, SimulatedPrometheus
from harmonic.sim.profiles import profile_runs
from harmonic.sim.scenario import MeshTelemetry
from harmonic.sim.truth.config import GroundTruth

from ..helpers import plan_of, scenario

A, B, C = WorkloadKey("shop", "front"), WorkloadKey("shop", "cart"), WorkloadKey("shop", "db")
ISTIO_QUERY = (
    "sum by (source_workload, source_workload_namespace, destination_workload, "
    'destination_workload_namespace) (rate(istio_requests_total{reporter="source"}[60s]))'
)


class FakeTruth:
    def __init__(self) -> None:
        self.traffic: dict[tuple[WorkloadKey, WorkloadKey], float] = {}

    def workload_traffic(self) -> dict[tuple[WorkloadKey, WorkloadKey], float]:
        return dict(self.traffic)


def fake_world(delay: float = 30, window: float = 60, noise: float | None = 0.0, measurement: float = 0.1):
    return SimpleNamespace(
        clock=ManualClock(),
        truth=FakeTruth(),
        plan=SimpleNamespace(
            mesh=MeshTelemetry(delay=delay, window=window, noise=noise),
            ground_truth=GroundTruth(measurementNoise=measurement),
            seed=1,
        ),
    )


def at(world: Any, counters: MeshCounters, t: float, traffic: dict | None = None) -> None:
    world.clock.set(t)
    if traffic is not None:
        world.truth.traffic = traffic
    counters.observe(t)


def ask(
    transport: SimulatedPrometheus, query: str = ISTIO_QUERY, path: str = "/api/v1/query"
) -> httpx.Response:
    with httpx.Client(base_url=MESH_URL, transport=transport) as client:
        return client.get(path, params={"query": query})


def rates(resp: httpx.Response) -> dict[tuple[WorkloadKey, WorkloadKey], float]:
    body = resp.json()
    assert resp.status_code == 200 and body["status"] == "success"
    assert body["data"]["resultType"] == "vector"
    out = {}
    for s in body["data"]["result"]:
        m = s["metric"]
        key = (
            WorkloadKey(m["source_workload_namespace"], m["source_workload"]),
            WorkloadKey(m["destination_workload_namespace"], m["destination_workload"]),
        )
        out[key] = float(s["value"][1])
    return out


def test_delay_then_edge_rates():
    """front -> cart runs from t=0 at 5/s; cart -> db starts at t=100 at 3/s. Delay 30 s, window 60 s."""
    w = fake_world(delay=30, window=60)
    counters = MeshCounters(w)
    prom = SimulatedPrometheus(w, counters)
    at(w, counters, 0, {(A, B): 5.0})
    # Before the delay has passed, the mesh has nothing to say: an empty vector.
    for t in (0, 10, 29.9, 30):
        w.clock.set(t)
        assert rates(ask(prom)) == {}
    w.clock.set(45)
    assert rates(ask(prom)) == {(A, B): 5.0}
    at(w, counters, 100, {(A, B): 5.0, (B, C): 3.0})
    # Up to 100 + delay the new edge is not visible.
    w.clock.set(129)
    assert rates(ask(prom)) == {(A, B): 5.0}
    # Half the window after it became visible: rate over [100 - 30, 100 + 30] -> 3 x 30/60.
    w.clock.set(160)
    assert rates(ask(prom)) == pytest.approx({(A, B): 5.0, (B, C): 1.5})
    # A full window after: exact.
    w.clock.set(190)
    assert rates(ask(prom)) == pytest.approx({(A, B): 5.0, (B, C): 3.0})
    # The edge stops at 200 (its end lost its replicas): it fades out over the window.
    at(w, counters, 200, {(A, B): 5.0})
    w.clock.set(230 + 60)
    assert rates(ask(prom)) == pytest.approx({(A, B): 5.0})


def test_noise_defaults_to_the_truths_measurement_noise():
    w = fake_world(noise=None, measurement=0.0)
    counters = MeshCounters(w)
    at(w, counters, 0, {(A, B): 5.0})
    w.clock.set(100)
    assert rates(ask(SimulatedPrometheus(w, counters))) == {(A, B): 5.0}


def test_noise_is_relative_and_unbiased():
    w = fake_world(noise=0.2)
    counters = MeshCounters(w)
    at(w, counters, 0, {(A, B): 10.0})
    w.clock.set(100)
    prom = SimulatedPrometheus(w, counters)
    values = np.asarray([rates(ask(prom))[(A, B)] for _ in range(300)])
    assert (values >= 0).all()
    assert len(set(values.tolist())) > 250
    assert values.mean() == pytest.approx(10.0, abs=0.5)  # se ~ 0.12
    assert values.std() == pytest.approx(2.0, rel=0.2)


def test_errors_look_like_prometheus():
    w = fake_world()
    prom = SimulatedPrometheus(w, MeshCounters(w))
    resp = ask(prom, query="up")
    assert resp.status_code == 400
    body = resp.json()
    assert body["status"] == "error" and body["errorType"] == "bad_data" and body["error"]
    resp = ask(prom, path="/api/v1/query_range")
    assert resp.status_code == 404 and resp.json()["status"] == "error"
    # The byte counter is known, and empty.
    assert rates(ask(prom, query="rate(istio_tcp_sent_bytes_total[5m])")) == {}


def test_prometheus_source_parses_the_answers():
    w = fake_world(delay=30, window=60)
    counters = MeshCounters(w)
    at(w, counters, 0, {(A, B): 5.0, (B, C): 2.5})
    source = PrometheusSource(
        MESH_URL, mesh="istio", window="60s", transport=SimulatedPrometheus(w, counters)
    )
    try:
        w.clock.set(10)
        before = source.read()
        assert not before.ok and before.samples == ()
        w.clock.set(100)
        reading = source.read()
    finally:
        source.close()
    assert reading.ok
    assert sorted(reading.samples, key=lambda s: (s.src, s.dst)) == sorted(
        [TrafficSample(A, B, 5.0, 0.0), TrafficSample(B, C, 2.5, 0.0)], key=lambda s: (s.src, s.dst)
    )


def test_a_world_counts_the_truths_traffic(tmp_path: Path):
    """A real world: the mesh counts weight x userRate on every edge whose two ends run."""
    topo = {
        "name": "app",
        "services": [{"name": n, "cpu_request": "100m"} for n in ("a", "b", "c")],
        "edges": [{"src": "a", "dst": "b", "weight": 2}, {"src": "b", "dst": "c", "weight": 0.5}],
    }
    (tmp_path / "app.json").write_text(json.dumps(topo))
    sc = scenario(
        [{"type": "topology", "topology": "app.json", "namespace": "app", "userRate": 4}],
        duration=400,
        mesh={"delay": 20, "window": 100, "noise": 0},
    )
    registry = default_registry()
    world = World(plan_of(sc, tmp_path), profile_runs((), registry)[0], registry)
    counters = MeshCounters(world)
    world.mesh_counters = counters
    world.run()
    assert world.clock.now() == 400
    got = rates(ask(SimulatedPrometheus(world, counters)))
    a, b, c = (WorkloadKey("app", n) for n in "abc")
    assert got == pytest.approx({(a, b): 8.0, (b, c): 2.0})
    assert world.truth.workload_traffic() == pytest.approx({(a, b): 8.0, (b, c): 2.0})
