"""The judge: samples the ground truth of one world over virtual time and summarises it.

Placements come from the simulated cluster (the pods the in-memory API server holds and the nodes they
are bound to), never from the scheduler's cache, so a cache bug shows up here. A replica counts as
running — able to answer calls — when its node has not failed. Every sample records, per topology, the
traffic locality under the routing in force, the end-to-end latency of sampled user requests and the
share that could be served; the true slowdown of every running latency-critical pod; and which
Deployments and StatefulSets would survive losing one zone or one node. The same measures are also taken
in perturbed worlds (``interference.perturbations``): the same placements judged with the truth's
pressure matrix changed, so a profile that wins only at one set of numbers shows it.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import parse_pod
from harmonic.api.resources import CPU, MEMORY
from harmonic.cluster.memory import InMemoryCluster
from harmonic.signals.identity import WorkloadKey
from harmonic.sim.plan import Plan
from harmonic.sim.records import PodRecord
from harmonic.sim.topology import TopologyInstance
from harmonic.sim.truth.interference import LATENCY_CRITICAL, Interference, PodTruth, perturbations
from harmonic.sim.truth.latency import (
    RHO_MAX,
    CallGraph,
    Replicas,
    RequestSampler,
    arrival_rates,
    call_graph,
    mean_sojourn_ms,
    pooled_wait_ms,
    utilisation,
)
from harmonic.sim.truth.routing import edge_locality

TRUTH = "truth"
_SERVING_KINDS = ("Deployment/", "StatefulSet/")


@dataclass
class TrafficSeries:
    """One topology's traffic over the samples (None where nothing was served)."""

    cross_node: list[float | None] = field(default_factory=list)
    cross_zone: list[float | None] = field(default_factory=list)
    latency_ms: list[float | None] = field(default_factory=list)
    served: float = 0.0
    total: float = 0.0
    cross_node_sum: float = 0.0
    cross_zone_sum: float = 0.0
    latency_sum: float = 0.0
    latency_samples: int = 0


@dataclass
class WorldSeries:
    """What one world (the truth, or a perturbed copy) measured over the samples."""

    lc_slowdown: list[float | None] = field(default_factory=list)
    lc_slowdown_all: list[np.ndarray] = field(default_factory=list)
    #: Every (sample, running batch pod) slowdown, and the pod's CPU request (the weights).
    batch_slowdown_all: list[np.ndarray] = field(default_factory=list)
    batch_cpu_all: list[np.ndarray] = field(default_factory=list)
    #: app -> latencies (ms) of every served sampled request.
    latency: dict[str, list[np.ndarray]] = field(default_factory=lambda: defaultdict(list))
    #: app -> p99 per sample, for the plots.
    latency_p99: dict[str, list[float | None]] = field(default_factory=lambda: defaultdict(list))


@dataclass
class TruthSeries:
    worlds: dict[str, WorldSeries]
    traffic: dict[str, TrafficSeries] = field(default_factory=dict)
    zone_survivable: list[float | None] = field(default_factory=list)
    node_survivable: list[float | None] = field(default_factory=list)
    #: app -> (sampled requests, served) while a zone was down.
    outage: dict[str, list[int]] = field(default_factory=dict)
    #: app -> latencies (ms) of every served sampled request under the second model (M/M/c per service).
    latency_pooled: dict[str, list[np.ndarray]] = field(default_factory=lambda: defaultdict(list))
    #: app -> [calls x utilisation, calls, calls to saturated replicas] over the samples.
    utilisation: dict[str, list[float]] = field(default_factory=dict)
    #: app -> utilisation of its busiest replica, per sample.
    busiest: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


class _PodTable:
    """Running pods' truth in parallel arrays (slots reused), so a sample is vectorised over pods."""

    def __init__(self) -> None:
        self.node = np.full(256, -1, dtype=np.int64)  # node id; -1: free slot
        self.klass = np.zeros(256, dtype=np.int64)
        self.cpu = np.zeros(256)
        self.mult = np.zeros(256)
        #: Runs a given amount of work (a Job's pod, a bare pod with a duration): batch.
        self.works = np.zeros(256, dtype=bool)
        self.workload: list[str] = [""] * 256
        self.slot_of: dict[str, int] = {}
        self._free: list[int] = []
        self.used = 0

    def add(self, key: str, node: int, truth: PodTruth, works: bool) -> None:
        if self._free:
            slot = self._free.pop()
        else:
            slot = self.used
            self.used += 1
            if slot == len(self.node):
                grow = len(self.node)
                self.node = np.concatenate([self.node, np.full(grow, -1, dtype=np.int64)])
                self.klass = np.concatenate([self.klass, np.zeros(grow, dtype=np.int64)])
                self.cpu = np.concatenate([self.cpu, np.zeros(grow)])
                self.mult = np.concatenate([self.mult, np.zeros(grow)])
                self.works = np.concatenate([self.works, np.zeros(grow, dtype=bool)])
                self.workload += [""] * grow
        self.slot_of[key] = slot
        self.node[slot] = node
        self.klass[slot] = truth.klass
        self.cpu[slot] = truth.cpu_millis
        self.mult[slot] = truth.multiplier
        self.works[slot] = works
        self.workload[slot] = truth.workload

    def remove(self, key: str) -> None:
        slot = self.slot_of.pop(key, None)
        if slot is not None:
            self.node[slot] = -1
            self._free.append(slot)


class ObservedWorld(Protocol):
    """What the ground truth reads of a profile's simulated world (``engine.World``): a protocol, so that
    this module does not import the engine, which imports it."""

    @property
    def plan(self) -> Plan: ...

    @property
    def cluster(self) -> InMemoryCluster: ...

    @property
    def replicas_on(self) -> Mapping[str, Counter[str]]: ...

    @property
    def failed_nodes(self) -> Collection[str]: ...

    @property
    def failed_zones(self) -> Collection[str]: ...

    @property
    def node_views(self) -> Mapping[str, Node]: ...

    def zone_of(self) -> Mapping[str, str]: ...


class TruthObserver:
    def __init__(self, world: ObservedWorld) -> None:
        self.world = world
        plan = world.plan
        self.interference = Interference(plan.ground_truth, plan.seed)
        self.variants: dict[str, np.ndarray | None] = {TRUTH: None, **perturbations(plan.seed)}
        self.series = TruthSeries({name: WorldSeries() for name in self.variants})
        self.graphs: dict[str, CallGraph] = {t.namespace: call_graph(t) for t in plan.topologies}
        self.table = _PodTable()
        self.node_ids: dict[str, int] = {}
        #: Pod requests of templated workloads (every pod of a controller shares its template).
        self._requests: dict[str, tuple[float, float]] = {}
        self.topology_workloads = frozenset(t.workload(s) for t in plan.topologies for s in t.services)
        self._sample_index = 0
        #: Wall seconds spent judging (sampling and bookkeeping), for the overhead the truth adds.
        self.seconds = 0.0

    # ------------------------------------------------------------------ world events
    def bound(self, rec: PodRecord) -> PodTruth:
        """Note that ``rec`` now runs on its node; its truth (class, CPU, own sensitivity)."""
        assert rec.node is not None
        t0 = time.perf_counter()
        templated = rec.owner is not None and not rec.workload.startswith("Pod/")
        req = self._requests.get(rec.workload) if templated else None
        if req is None:
            pod = parse_pod(self.world.cluster.pods[rec.key])
            req = (float(pod.requests.get(CPU, 0)), float(pod.requests.get(MEMORY, 0)))
            if templated:
                self._requests[rec.workload] = req
        truth = self.interference.pod(rec.workload, rec.daemon, req[0], req[1])
        node = self.node_ids.setdefault(rec.node, len(self.node_ids))
        self.table.add(rec.key, node, truth, rec.run_for is not None)
        self.seconds += time.perf_counter() - t0
        return truth

    def gone(self, rec: PodRecord) -> None:
        self.table.remove(rec.key)

    def workload_traffic(self) -> dict[tuple[WorkloadKey, WorkloadKey], float]:
        """Requests/s between workloads right now: every topology edge whose two ends have a running
        replica carries ``weight x userRate`` (what the mesh's sidecars count)."""
        w = self.world
        out: dict[tuple[WorkloadKey, WorkloadKey], float] = {}
        for topo in w.plan.topologies:
            up = {s for s in topo.services if self._running(topo.workload(s))}
            for e in topo.edges:
                if e.src != e.dst and e.weight > 0 and e.src in up and e.dst in up:
                    key = (WorkloadKey(topo.namespace, e.src), WorkloadKey(topo.namespace, e.dst))
                    out[key] = out.get(key, 0.0) + e.weight * topo.user_rate
        return out

    def _running(self, workload: str) -> bool:
        nodes = self.world.replicas_on.get(workload)
        failed = self.world.failed_nodes
        return nodes is not None and any(c > 0 and n not in failed for n, c in nodes.items())

    # ------------------------------------------------------------------ sampling
    def _live_nodes(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Every node id's name, whether it is up (present and not failed), and its allocatable CPU."""
        w = self.world
        for n in w.node_views:
            self.node_ids.setdefault(n, len(self.node_ids))
        names = [""] * len(self.node_ids)
        for n, i in self.node_ids.items():
            names[i] = n
        up = np.zeros(len(names), dtype=bool)
        alloc = np.zeros(len(names))
        for n, view in w.node_views.items():
            i = self.node_ids[n]
            up[i] = n not in w.failed_nodes
            alloc[i] = float(view.allocatable.get(CPU, 0))
        return names, up, alloc

    def sample(self) -> None:
        t0 = time.perf_counter()
        self._sample()
        self.seconds += time.perf_counter() - t0

    def _sample(self) -> None:
        w = self.world
        names, up, alloc = self._live_nodes()
        t = self.table
        rows = np.flatnonzero(t.node[: t.used] >= 0)
        rows = rows[up[t.node[rows]]]
        node_idx, klass = t.node[rows], t.klass[rows]
        slow = {
            variant: self.interference.slowdown_arrays(
                node_idx, klass, t.cpu[rows], t.mult[rows], alloc, scale
            )
            for variant, scale in self.variants.items()
        }
        lc = klass == LATENCY_CRITICAL
        works = t.works[rows]
        batch_cpu = t.cpu[rows][works]
        for variant, ws in self.series.worlds.items():
            values = slow[variant][lc]
            ws.lc_slowdown.append(float(values.mean()) if len(values) else None)
            ws.lc_slowdown_all.append(values)
            ws.batch_slowdown_all.append(slow[variant][works])
            ws.batch_cpu_all.append(batch_cpu)
        live = {n for n, i in self.node_ids.items() if up[i]}
        placements = self._placements(live)
        zone_of = w.zone_of()
        if w.plan.topologies:
            replicas = self._replica_means(rows, names, slow)
            outage = bool(w.failed_zones)
            for i, topo in enumerate(w.plan.topologies):
                self._sample_topology(i, topo, placements, replicas, zone_of, outage)
        self._availability(placements, zone_of)
        self._sample_index += 1

    def _replica_means(
        self, rows: np.ndarray, names: list[str], slow: Mapping[str, np.ndarray]
    ) -> dict[tuple[str, str], tuple[float, dict[str, float]]]:
        """(workload, node) -> (mean cores its replicas there request, variant -> their mean slowdown),
        for the topologies' workloads."""
        t = self.table
        mine = [k for k, r in enumerate(rows.tolist()) if t.workload[r] in self.topology_workloads]
        if not mine:
            return {}
        groups: dict[tuple[str, str], int] = {}
        picked = rows[mine]
        gid = np.fromiter(
            (groups.setdefault((t.workload[r], names[t.node[r]]), len(groups)) for r in picked.tolist()),
            dtype=np.int64,
            count=len(picked),
        )
        count = np.bincount(gid, minlength=len(groups))
        cores = np.bincount(gid, weights=t.cpu[picked] / 1000, minlength=len(groups)) / count
        means = {
            v: (np.bincount(gid, weights=x[mine], minlength=len(groups)) / count).tolist()
            for v, x in slow.items()
        }
        return {place: (float(cores[g]), {v: m[g] for v, m in means.items()}) for place, g in groups.items()}

    def _placements(self, live: set[str]) -> dict[str, Counter[str]]:
        """workload -> node -> running replicas, on nodes that have not failed."""
        out: dict[str, Counter[str]] = {}
        for workload, nodes in self.world.replicas_on.items():
            up = Counter({n: c for n, c in nodes.items() if c > 0 and n in live})
            if up:
                out[workload] = up
        return out

    def _sample_topology(
        self,
        which: int,
        topo: TopologyInstance,
        placements: Mapping[str, Counter[str]],
        replicas: Mapping[tuple[str, str], tuple[float, dict[str, float]]],
        zone_of: Mapping[str, str],
        outage: bool,
    ) -> None:
        w = self.world
        gt = w.plan.ground_truth
        graph = self.graphs[topo.namespace]
        svc_place: dict[str, Counter[str]] = {
            s: placements.get(topo.workload(s), Counter()) for s in topo.services
        }
        self._traffic(topo, svc_place, zone_of)
        rates = arrival_rates(topo, graph, svc_place, zone_of)
        sampler = RequestSampler(topo, graph, svc_place, zone_of, w.plan.network)
        service_ms = dict(topo.service_time_ms)
        # The same draws for every variant and every profile: differences come from placements alone.
        rng = np.random.default_rng([w.plan.seed, self._sample_index, which])
        paths = sampler.paths(gt.requests_per_sample, rng)
        served = ~paths.failed
        if outage:
            acc = self.series.outage.setdefault(topo.namespace, [0, 0])
            acc[0] += paths.k
            acc[1] += int(served.sum())
        busiest = 0.0
        for variant, ws in self.series.worlds.items():
            sojourn: dict[str, np.ndarray] = {}
            pooled: dict[str, np.ndarray] = {}
            for s in topo.services:
                arr = np.zeros(len(sampler.names))
                own = np.zeros(len(sampler.names))
                here: list[Replicas] = []
                svc_ms = service_ms.get(s, gt.service_time_ms)
                for node, count in svc_place[s].items():
                    cores, sd_of = replicas.get((topo.workload(s), node), (0.0, {}))
                    sd = sd_of.get(variant, 0.0)
                    lam = rates.get(s, {}).get(node, 0.0)
                    arr[sampler.index[node]] = mean_sojourn_ms(svc_ms, sd, lam, cores)
                    own[sampler.index[node]] = svc_ms * (1.0 + sd)
                    here.append(Replicas(count, cores, sd, lam))
                sojourn[s] = arr
                if variant == TRUTH:
                    pooled[s] = own + pooled_wait_ms(svc_ms, here)
                    busiest = max(busiest, self._utilisation(topo.namespace, svc_ms, here))
            ok = paths.latency_ms(sojourn)[served]
            ws.latency[topo.namespace].append(ok)
            ws.latency_p99[topo.namespace].append(float(np.percentile(ok, 99)) if len(ok) else None)
            if variant == TRUTH:
                self.series.latency_pooled[topo.namespace].append(paths.latency_ms(pooled)[served])
        if busiest > 0:  # samples where the application served no call say nothing of its load
            self.series.busiest[topo.namespace].append(busiest)

    def _utilisation(self, app: str, service_ms: float, replicas: list[Replicas]) -> float:
        """Add one service's replicas at this sample to its application's utilisation figures; the
        utilisation of its busiest replica."""
        acc = self.series.utilisation.setdefault(app, [0.0, 0.0, 0.0])
        busiest = 0.0
        for r in replicas:
            rho = utilisation(service_ms, r.slowdown, r.calls_per_second, r.cores)
            calls = r.count * r.calls_per_second
            acc[0] += calls * rho
            acc[1] += calls
            acc[2] += calls if rho >= RHO_MAX else 0.0
            busiest = max(busiest, rho)
        return busiest

    def _traffic(
        self, topo: TopologyInstance, svc_place: Mapping[str, Counter[str]], zone_of: Mapping[str, str]
    ) -> None:
        net = self.world.plan.network
        ts = self.series.traffic.setdefault(topo.namespace, TrafficSeries())
        total = served = cross_node = cross_zone = latency = 0.0
        for e in topo.edges:
            rate = e.weight * topo.user_rate
            total += rate
            src, dst = svc_place.get(e.src), svc_place.get(e.dst)
            if not src or not dst:
                continue
            same_node, same_zone = edge_locality(src, dst, zone_of, topo.routing)
            served += rate
            cross_node += rate * (1.0 - same_node)
            cross_zone += rate * (1.0 - same_zone)
            latency += e.weight * (
                same_node * net.same_node_ms
                + (same_zone - same_node) * net.cross_node_ms
                + (1.0 - same_zone) * net.cross_zone_ms
            )
        ts.total += total
        if served > 0:
            ts.served += served
            ts.cross_node_sum += cross_node
            ts.cross_zone_sum += cross_zone
            ts.latency_sum += latency
            ts.latency_samples += 1
            ts.cross_node.append(cross_node / served)
            ts.cross_zone.append(cross_zone / served)
            ts.latency_ms.append(latency)
        else:
            ts.cross_node.append(None)
            ts.cross_zone.append(None)
            ts.latency_ms.append(None)

    def _availability(self, placements: Mapping[str, Counter[str]], zone_of: Mapping[str, str]) -> None:
        multi = [p for wl, p in placements.items() if wl.startswith(_SERVING_KINDS) and sum(p.values()) >= 2]
        if not multi:
            self.series.zone_survivable.append(None)
            self.series.node_survivable.append(None)
            return
        zones = [len({zone_of.get(n, "") for n in p}) >= 2 for p in multi]
        nodes = [len(p) >= 2 for p in multi]
        self.series.zone_survivable.append(sum(zones) / len(multi))
        self.series.node_survivable.append(sum(nodes) / len(multi))

    # ------------------------------------------------------------------ summary
    def summary(self) -> dict[str, Any]:
        s = self.series
        truth = _world_summary(s.worlds[TRUTH])
        out: dict[str, Any] = {
            "latency_critical_slowdown_truth": truth["latency_critical_slowdown_truth"],
            "batch_slowdown_truth": truth["batch_slowdown_truth"],
            "user_request_latency_ms": truth["user_request_latency_ms"],
            "zone_failure_survivable_share": _mean(s.zone_survivable),
            "node_failure_survivable_share": _mean(s.node_survivable),
            "user_request_latency_ms_pooled": {
                app: _percentiles(chunks) for app, chunks in sorted(s.latency_pooled.items())
            },
            "application_utilisation": {
                app: {
                    "mean": _share(acc[0], acc[1]),
                    "busiest": _mean(list(s.busiest.get(app, []))),
                    "saturated_call_share": _share(acc[2], acc[1]),
                }
                for app, acc in sorted(s.utilisation.items())
            },
            "truth_perturbed": {name: _world_summary(ws) for name, ws in s.worlds.items() if name != TRUTH},
        }
        if self.world.plan.has_zone_outage:
            out["requests_served_during_outage"] = {
                app: (round(acc[1] / acc[0], 6) if acc[0] else None) for app, acc in sorted(s.outage.items())
            } or {t.namespace: None for t in self.world.plan.topologies}
        return out


def _world_summary(ws: WorldSeries) -> dict[str, Any]:
    lc = np.concatenate(ws.lc_slowdown_all) if ws.lc_slowdown_all else np.zeros(0)
    latency = {app: _percentiles(chunks) for app, chunks in sorted(ws.latency.items())}
    batch = np.concatenate(ws.batch_slowdown_all) if ws.batch_slowdown_all else np.zeros(0)
    cpu = np.concatenate(ws.batch_cpu_all) if ws.batch_cpu_all else np.zeros(0)
    return {
        "latency_critical_slowdown_truth": {
            "mean": _round(np.mean(lc)) if len(lc) else None,
            "p95": _round(np.percentile(lc, 95)) if len(lc) else None,
        },
        "batch_slowdown_truth": cpu_weighted(batch, cpu),
        "user_request_latency_ms": latency,
    }


def _percentiles(chunks: list[np.ndarray]) -> dict[str, float | None]:
    values = np.concatenate(chunks) if chunks else np.zeros(0)
    if not len(values):
        return {"p50": None, "p99": None}
    return {"p50": _round(np.percentile(values, 50)), "p99": _round(np.percentile(values, 99))}


def _share(num: float, den: float) -> float | None:
    return _round(num / den) if den > 0 else None


def cpu_weighted(slowdown: np.ndarray, cpu: np.ndarray) -> dict[str, float | None]:
    """Mean and p95 of ``slowdown`` with each value weighted by ``cpu`` (a pod holding more cores
    loses more work); pods requesting no CPU count as one millicore, so they are not invisible."""
    if not len(slowdown):
        return {"mean": None, "p95": None}
    w = np.maximum(cpu, 1.0)
    order = np.argsort(slowdown, kind="stable")
    cum = np.cumsum(w[order])
    p95 = slowdown[order][int(np.searchsorted(cum, 0.95 * cum[-1]))]
    return {"mean": _round(np.average(slowdown, weights=w)), "p95": _round(p95)}


def _round(x: Any) -> float:
    return round(float(x), 6)


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return _round(np.mean(known)) if known else None
