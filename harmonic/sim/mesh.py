"""Harmonic's signals inside the simulator: the simulated service mesh, the affinity graph, and the
predicted slowdown of latency-critical pods.

``SimMesh`` is the simulator's telemetry source, behind the same ``TelemetrySource`` interface as the
Prometheus source: for every topology edge whose two workloads both have running replicas, a sample
of ``weight * userRate`` requests/s (the traffic the simulator's traffic model carries). The
``TopologySeed`` source reports every edge of the scenario's topologies whether or not replicas run
yet — the static seed an operator gives with a topology file or AppGroup, so the first replicas of an
application are placed knowing who will talk to whom.

``graph_service_for`` builds the ``affinity_graph`` handle service of a profile that enables
CommunicationAffinity: the sources from the plugin's ``telemetry`` args when given, else the seed and
the simulated mesh; the world refreshes it on its virtual clock every ``refreshSeconds``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from harmonic.framework.config import Profile
from harmonic.framework.snapshot import CPU_COL
from harmonic.plugins.communicationaffinity.setup import PLUGIN, profile_telemetry
from harmonic.signals.classes import CLASS_INDEX, CLASSES, WorkloadClass, classify
from harmonic.signals.config import TelemetryConfig
from harmonic.signals.dissonance import DissonanceModel
from harmonic.signals.graph import AffinityGraph
from harmonic.signals.identity import WorkloadKey
from harmonic.signals.service import GraphService
from harmonic.signals.telemetry import Reading, TelemetrySource, TrafficSample
from harmonic.sim.topology import TopologyInstance

if TYPE_CHECKING:
    from harmonic.sim.engine import World


def _samples(topo: TopologyInstance, running_only: bool, world: World | None) -> list[TrafficSample]:
    out = []
    for e in topo.edges:
        if e.src == e.dst:
            continue
        if running_only:
            assert world is not None
            if not world.replicas_on.get(topo.workload(e.src)) or not world.replicas_on.get(
                topo.workload(e.dst)
            ):
                continue
        out.append(
            TrafficSample(
                WorkloadKey(topo.namespace, e.src),
                WorkloadKey(topo.namespace, e.dst),
                e.weight * topo.user_rate,
            )
        )
    return out


class SimMesh:
    """Traffic between the running replicas of the scenario's topologies."""

    name = "sim/mesh"

    def __init__(self, world: World) -> None:
        self._world = world

    def read(self) -> Reading:
        samples = [s for topo in self._world.plan.topologies for s in _samples(topo, True, self._world)]
        return (
            Reading(tuple(samples)) if samples else Reading.no_signal("no topology edge has running replicas")
        )


class TopologySeed:
    """Every edge of the scenario's topologies, as a static seed."""

    name = "sim/topology-seed"

    def __init__(self, topologies: list[TopologyInstance]) -> None:
        self._samples = tuple(s for topo in topologies for s in _samples(topo, False, None))

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
    sources: list[TelemetrySource] = [TopologySeed(world.plan.topologies), SimMesh(world)]
    graph = AffinityGraph(half_life=cfg.half_life_seconds, weight_by=cfg.weight_by)
    return GraphService(graph, sources, cfg.refresh_seconds)


def latency_critical_slowdowns(world: World) -> list[float]:
    """Predicted slowdown of every running latency-critical pod, from the dissonance model's defaults:
    each pod's node's CPU held by each workload class (the pod itself excluded), times the model's
    latency-critical row. The same model for every profile, so profiles compare on one scale."""
    snap = world.scheduler.cache.snapshot
    model = _MODEL
    lc = CLASS_INDEX[WorkloadClass.LATENCY_CRITICAL]
    row = model.matrix[lc]
    out: list[float] = []
    for slot, pods in enumerate(snap.pods):
        if not pods or not snap.live[slot]:
            continue
        alloc = float(snap.allocatable[slot, CPU_COL])
        if alloc <= 0:
            continue
        load = np.zeros(len(CLASSES))
        lc_cpu: list[float] = []
        for p in pods.values():
            c = CLASS_INDEX[classify(p)]
            load[c] += p.nonzero_cpu
            if c == lc:
                lc_cpu.append(p.nonzero_cpu)
        if not lc_cpu:
            continue
        base = float(load @ row) / alloc
        out.extend(base - row[lc] * cpu / alloc for cpu in lc_cpu)
    return out


_MODEL = DissonanceModel()
