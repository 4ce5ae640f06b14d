"""The signals the simulator gives schedulers about traffic: a simulated service mesh behind a
Prometheus API, and (for runs labelled as seeded) the scenario's topologies as a static seed.

The mesh counts what the ground truth's traffic really was — Istio's ``istio_requests_total`` per
source and destination workload, the calls made on every topology edge whose two ends have running
replicas — and ``SimulatedPrometheus`` answers the Prometheus HTTP API's instant queries over it:
``rate(...[window])`` evaluated ``delay`` seconds behind the world's clock (scrape interval, rule
evaluation and the query's own window make telemetry lag in a real cluster too), with relative noise.
CommunicationAffinity reads it through the very ``PrometheusSource`` it uses on a live cluster (same
queries, same response parsing), so a simulated run learns the graph the way a real one would: not at
all before the first pods run, and with delay afterwards.

``graph_service_for`` builds the ``affinity_graph`` handle service of a profile that enables
CommunicationAffinity: the sources from the plugin's ``telemetry`` args when given, else this mesh
(plus the topology seed with ``mesh.seedTopology``); the world refreshes it on its virtual clock.
"""

from __future__ import annotations

import json
from typing import Protocol

import httpx
import numpy as np

from harmonic.framework.config import Profile
from harmonic.plugins.communicationaffinity.setup import PLUGIN, profile_telemetry
from harmonic.scheduler.clock import ManualClock
from harmonic.signals.config import TelemetryConfig
from harmonic.signals.graph import AffinityGraph
from harmonic.signals.identity import WorkloadKey
from harmonic.signals.prometheus import PRESETS, PrometheusSource
from harmonic.signals.service import GraphService
from harmonic.signals.telemetry import Reading, TelemetrySource, TrafficSample
from harmonic.sim.plan import Plan
from harmonic.sim.topology import TopologyInstance
from harmonic.sim.truth.observer import TruthObserver


class World(Protocol):
    """What the mesh reads of a profile's simulated world (``engine.World``): a protocol, so that this
    module does not import the engine, which imports it."""

    mesh_counters: MeshCounters | None

    @property
    def plan(self) -> Plan: ...

    @property
    def truth(self) -> TruthObserver: ...

    @property
    def clock(self) -> ManualClock: ...


Edge = tuple[WorkloadKey, WorkloadKey]
MESH_URL = "http://prometheus.mesh.simulated"
_ISTIO = PRESETS["istio"]


class MeshCounters:
    """The mesh's request counters: the truth's workload-to-workload rates as a step function of time."""

    def __init__(self, world: World) -> None:
        self._world = world
        self.times: list[float] = []
        self.rates: list[dict[Edge, float]] = []

    def observe(self, now: float) -> None:
        rates = self._world.truth.workload_traffic()
        if self.rates and self.rates[-1] == rates:
            return
        if self.times and self.times[-1] == now:
            self.rates[-1] = rates
            return
        self.times.append(now)
        self.rates.append(rates)

    def mean_rates(self, start: float, end: float) -> dict[Edge, float]:
        """Time-averaged rate of every edge over [start, end] (the part of it the mesh has seen)."""
        out: dict[Edge, float] = {}
        covered = 0.0
        for i, t0 in enumerate(self.times):
            t1 = self.times[i + 1] if i + 1 < len(self.times) else end
            lo, hi = max(t0, start), min(t1, end)
            if hi <= lo:
                continue
            covered += hi - lo
            for edge, r in self.rates[i].items():
                out[edge] = out.get(edge, 0.0) + r * (hi - lo)
        return {e: v / covered for e, v in out.items()} if covered > 0 else {}


class SimulatedPrometheus(httpx.BaseTransport):
    """Answers ``GET /api/v1/query`` for Istio's request and TCP byte counters from ``MeshCounters``."""

    def __init__(self, world: World, counters: MeshCounters) -> None:
        self._world = world
        self._counters = counters
        mesh = world.plan.mesh
        self._delay = mesh.delay
        self._window = mesh.window
        self._noise = mesh.noise if mesh.noise is not None else world.plan.ground_truth.measurement_noise
        self._queries = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path != "/api/v1/query":
            return _error(
                404, "not_found", f"the simulated mesh serves /api/v1/query only, not {request.url.path}"
            )
        query = request.url.params.get("query", "")
        now = self._world.clock.now()
        self._counters.observe(now)
        if "istio_tcp_sent_bytes_total" in query:
            return _vector(now, [])
        if "istio_requests_total" not in query:
            return _error(
                400,
                "bad_data",
                "the simulated mesh exports istio_requests_total and istio_tcp_sent_bytes_total",
            )
        end = now - self._delay
        rates = self._counters.mean_rates(end - self._window, end) if end > 0 else {}
        self._queries += 1
        rng = np.random.default_rng([self._world.plan.seed, self._queries])
        series: list[dict[str, object]] = []
        for (src, dst), rate in sorted(rates.items()):
            noisy = max(0.0, rate * (1.0 + self._noise * rng.standard_normal()))
            series.append(
                {
                    "metric": {
                        _ISTIO.src: src.name,
                        _ISTIO.src_namespace: src.namespace,
                        _ISTIO.dst: dst.name,
                        _ISTIO.dst_namespace: dst.namespace,
                    },
                    "value": [now, repr(noisy)],
                }
            )
        return _vector(now, series)


def _vector(now: float, series: list[dict[str, object]]) -> httpx.Response:
    body = {"status": "success", "data": {"resultType": "vector", "result": series}}
    return httpx.Response(
        200, content=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )


def _error(status: int, kind: str, message: str) -> httpx.Response:
    body = {"status": "error", "errorType": kind, "error": message}
    return httpx.Response(
        status, content=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )


class TopologySeed:
    """Every edge of the scenario's topologies, as a static seed (perfect foresight)."""

    name = "sim/topology-seed"

    def __init__(self, topologies: list[TopologyInstance]) -> None:
        self._samples = tuple(
            TrafficSample(
                WorkloadKey(t.namespace, e.src), WorkloadKey(t.namespace, e.dst), e.weight * t.user_rate
            )
            for t in topologies
            for e in t.edges
            if e.src != e.dst
        )

    def read(self) -> Reading:
        return (
            Reading(self._samples) if self._samples else Reading.no_signal("the scenario has no topologies")
        )


def graph_service_for(profile: Profile, world: World) -> GraphService | None:
    """The ``affinity_graph`` service for a profile that enables CommunicationAffinity, else None."""
    if PLUGIN not in profile.plugin_names:
        return None
    telemetry = profile_telemetry(profile)
    if telemetry is not None and telemetry.has_sources:
        return telemetry.build()
    cfg = telemetry or TelemetryConfig()
    mesh = world.plan.mesh
    counters = MeshCounters(world)
    world.mesh_counters = counters
    sources: list[TelemetrySource] = [
        PrometheusSource(
            MESH_URL,
            mesh="istio",
            window=f"{mesh.window:g}s",
            transport=SimulatedPrometheus(world, counters),
            name="sim/mesh",
        )
    ]
    if mesh.seed_topology:
        sources.append(TopologySeed(world.plan.topologies))
    graph = AffinityGraph(half_life=cfg.half_life_seconds, weight_by=cfg.weight_by)
    return GraphService(graph, sources, cfg.refresh_seconds)
