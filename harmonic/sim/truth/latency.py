"""End-to-end latency of user requests through an application's call graph.

A user action makes, on every edge ``src -> dst`` of the topology, ``weight`` calls on average (the
whole part always, the fraction with that probability). Each request follows its own path: every
service handling it runs on one replica, chosen from its main caller's replica by the routing in force
(entry services — no callers — on a uniformly chosen replica); each call goes from the caller's replica
to a callee replica chosen by routing, and costs the network hop (``network``: same node, same zone,
across zones) plus the callee's sojourn time. Sojourn times are exponential (first model: an M/M/1 server per replica) with mean
``S * (1 + slowdown) / (1 - rho)``: ``S`` the service's own service time, ``slowdown`` the interference
the replica really suffers, and ``rho`` its utilisation, ``calls/s reaching it x S * (1 + slowdown)``
over the cores it can use — its CPU request, and at least ``MIN_CORES`` (a request-serving container
bursts into idle CPU beyond a small request) — capped at ``RHO_MAX``. Calls are added up as if made one after another (an
upper bound: real fan-out overlaps). A request fails when a call finds no running replica of its callee.

The second latency model (``pooled_wait_ms``) is M/M/c per service: a call's sojourn is its replica's
effective service time plus the wait of one queue served by all the service's cores. The same sampled
paths and draws serve both models; docs/simulator.md says why two and why this one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from harmonic.sim.scenario import NetworkModel
from harmonic.sim.topology import TopologyInstance
from harmonic.sim.truth.routing import Placement, arrivals_per_replica, callee_shares

#: Utilisation at which a replica counts as saturated (its queue would grow without bound).
RHO_MAX = 0.95
#: The CPU a replica can use when it requests less: one core.
MIN_CORES = 1.0


@dataclass(frozen=True)
class CallGraph:
    """A topology's edges in the order requests traverse them."""

    services: tuple[str, ...]
    entries: tuple[str, ...]
    #: Services in traversal order (entries first; edges closing a cycle are kept, their callers are
    #: simply placed later).
    order: tuple[str, ...]
    #: Each non-entry service's main caller (its heaviest incoming edge from earlier in ``order``).
    primary: Mapping[str, str]
    #: (src, dst, weight) with src != dst and weight > 0.
    edges: tuple[tuple[str, str, float], ...]


def call_graph(topo: TopologyInstance) -> CallGraph:
    edges = tuple((e.src, e.dst, e.weight) for e in topo.edges if e.src != e.dst and e.weight > 0)
    callers: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for src, dst, w in edges:
        callers[dst].append((src, w))
    entries = tuple(s for s in topo.services if s not in callers) or topo.services[:1]
    order: list[str] = list(entries)
    seen = set(order)
    frontier = list(entries)
    out: dict[str, list[str]] = defaultdict(list)
    for src, dst, _ in edges:
        out[src].append(dst)
    while frontier:
        nxt = []
        for s in frontier:
            for d in out[s]:
                if d not in seen:
                    seen.add(d)
                    order.append(d)
                    nxt.append(d)
        frontier = nxt
    order += [s for s in topo.services if s not in seen]
    pos = {s: i for i, s in enumerate(order)}
    primary: dict[str, str] = {}
    for s in order:
        earlier = [(w, src) for src, w in callers.get(s, ()) if pos[src] < pos[s]]
        if earlier:
            primary[s] = max(earlier)[1]
    return CallGraph(topo.services, entries, tuple(order), primary, edges)


def arrival_rates(
    topo: TopologyInstance, graph: CallGraph, placements: Mapping[str, Placement], zone_of: Mapping[str, str]
) -> dict[str, dict[str, float]]:
    """service -> node -> calls/s reaching each of its replicas there."""
    incoming: dict[str, list[tuple[Placement, float]]] = defaultdict(list)
    for src, dst, w in graph.edges:
        incoming[dst].append((placements.get(src, {}), w * topo.user_rate))
    return {
        s: arrivals_per_replica(incoming[s], placements.get(s, {}), zone_of, topo.routing)
        for s in graph.services
        if s in incoming
    }


def utilisation(service_ms: float, slowdown: float, calls_per_second: float, cores: float) -> float:
    """A replica's utilisation, uncapped: calls/s x its effective service time over its usable cores."""
    return calls_per_second * service_ms * (1.0 + slowdown) / 1000.0 / max(cores, MIN_CORES)


def mean_sojourn_ms(service_ms: float, slowdown: float, calls_per_second: float, cores: float) -> float:
    """M/M/1 per replica (the first latency model)."""
    effective = service_ms * (1.0 + slowdown)
    rho = min(utilisation(service_ms, slowdown, calls_per_second, cores), RHO_MAX)
    return effective / (1.0 - rho)


@dataclass(frozen=True, slots=True)
class Replicas:
    """A service's running replicas on one node, as the pooled model sees them."""

    count: int
    cores: float
    slowdown: float
    calls_per_second: float  # reaching each replica


def pooled_wait_ms(service_ms: float, replicas: list[Replicas]) -> float:
    """Mean queueing delay of a call under M/M/c per service (the second latency model): every usable
    core of every replica serves one queue, as a least-request balancer approximates; ``c`` is the
    service's usable cores (each replica at least ``MIN_CORES``) rounded to a whole number of servers,
    the offered load its calls x their effective service times, capped, as in the first model, at
    utilisation ``RHO_MAX``. Erlang C, by the Erlang B recursion (stable for any ``c``)."""
    calls = sum(r.count * r.calls_per_second for r in replicas)
    if calls <= 0:
        return 0.0
    cores = sum(r.count * max(r.cores, MIN_CORES) for r in replicas)
    servers = max(1, round(cores))
    mean_ms = sum(r.count * r.calls_per_second * service_ms * (1.0 + r.slowdown) for r in replicas) / calls
    load = min(calls * mean_ms / 1000.0, RHO_MAX * servers)
    b = 1.0
    for k in range(1, servers + 1):
        b = load * b / (k + load * b)
    rho = load / servers
    waiting = b / (1.0 - rho * (1.0 - b))
    return waiting * mean_ms / (servers - load)


@dataclass(frozen=True)
class Calls:
    """The calls of sampled requests to one callee service (one topology edge)."""

    service: str
    request: np.ndarray  # which sampled request made the call
    callee: np.ndarray  # node index of the replica that answered
    hop_ms: np.ndarray  # network round trip
    draw: np.ndarray  # unit exponential: sojourn = draw x mean sojourn at the callee


@dataclass(frozen=True)
class Paths:
    """Where the calls of ``k`` sampled requests went; ``failed`` marks requests a call of which found
    no running replica."""

    k: int
    failed: np.ndarray
    calls: list[Calls]

    def latency_ms(self, sojourn_ms: Mapping[str, np.ndarray]) -> np.ndarray:
        """Each request's latency, given the mean sojourn at every service's replica on each node index."""
        total = np.zeros(self.k)
        for c in self.calls:
            np.add.at(total, c.request, c.hop_ms + c.draw * sojourn_ms[c.service][c.callee])
        return total


class RequestSampler:
    """Samples user requests through one application for one placement of its replicas."""

    def __init__(
        self,
        topo: TopologyInstance,
        graph: CallGraph,
        placements: Mapping[str, Placement],
        zone_of: Mapping[str, str],
        network: NetworkModel,
    ) -> None:
        self.topo = topo
        self.graph = graph
        self.placements = placements
        self.network = network
        nodes = sorted({n for p in placements.values() for n, c in p.items() if c > 0})
        self.names = nodes
        self.index = {n: i for i, n in enumerate(nodes)}
        zones = sorted({zone_of.get(n, "") for n in nodes})
        zone_code = {z: i for i, z in enumerate(zones)}
        self.zone = np.asarray([zone_code[zone_of.get(n, "")] for n in nodes], dtype=np.int64)
        # Per callee service: cumulative routing probabilities, one row per caller node.
        self._cum: dict[str, np.ndarray] = {}
        for s in graph.services:
            callee = placements.get(s, {})
            table = np.zeros((len(nodes), len(nodes)))
            if any(c > 0 for c in callee.values()):
                for i, caller in enumerate(nodes):
                    for dst, p in callee_shares(caller, callee, zone_of, topo.routing).items():
                        table[i, self.index[dst]] = p
            self._cum[s] = np.cumsum(table, axis=1)

    def _route(self, service: str, callers: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A callee node index per call made from ``callers`` (node indices), -1 where none runs."""
        out = np.full(len(callers), -1, dtype=np.int64)
        cum = self._cum[service]
        if not len(callers) or not cum.size or cum[:, -1].max() <= 0:
            return out
        known = callers >= 0
        rows = cum[callers[known]]
        u = rng.random(len(rows)) * rows[:, -1]
        picked = (u[:, None] >= rows).sum(axis=1)
        picked[rows[:, -1] <= 0] = -1
        out[known] = picked
        return out

    def _entry(self, service: str, k: int, rng: np.random.Generator) -> np.ndarray:
        callee = self.placements.get(service, {})
        nodes = [self.index[n] for n, c in callee.items() if c > 0]
        if not nodes:
            return np.full(k, -1, dtype=np.int64)
        weights = np.asarray([callee[self.names[i]] for i in nodes], dtype=np.float64)
        return np.asarray(nodes, dtype=np.int64)[rng.choice(len(nodes), size=k, p=weights / weights.sum())]

    def paths(self, k: int, rng: np.random.Generator) -> Paths:
        g = self.graph
        at: dict[str, np.ndarray] = {}
        for s in g.order:
            parent = g.primary.get(s)
            at[s] = self._entry(s, k, rng) if parent is None else self._route(s, at[parent], rng)
        failed = np.zeros(k, dtype=bool)
        net = self.network
        hop_ms = np.asarray([net.same_node_ms, net.cross_node_ms, net.cross_zone_ms])
        calls: list[Calls] = []
        for src, dst, w in g.edges:
            whole = int(w)
            count = np.full(k, whole, dtype=np.int64)
            if w > whole:
                count += rng.random(k) < (w - whole)
            if not count.any():
                continue
            request = np.repeat(np.arange(k), count)
            caller = at[src][request]
            callee = self._route(dst, caller, rng)
            if g.primary.get(dst) == src:
                # The replica that answers a request's first call from its main caller is the one
                # that handles the request from there on (and makes its calls).
                first = np.flatnonzero(np.r_[True, request[1:] != request[:-1]])
                callee[first] = at[dst][request[first]]
            missing = callee < 0
            if missing.any():
                failed[request[missing]] = True
                keep = ~missing
                request, caller, callee = request[keep], caller[keep], callee[keep]
            if not len(request):
                continue
            relation = np.where(caller == callee, 0, np.where(self.zone[caller] == self.zone[callee], 1, 2))
            calls.append(
                Calls(dst, request, callee, hop_ms[relation], rng.standard_exponential(len(request)))
            )
        return Paths(k, failed, calls)
