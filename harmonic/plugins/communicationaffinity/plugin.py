"""CommunicationAffinity — PreScore, Score (+NormalizeScore).

Scores a node by the share of the pod's workload traffic that would stay on that node, and in its zone,
if the pod ran there — using the affinity graph learnt from service-mesh telemetry (no hand-written
affinity rules). How calls pick a replica of a peer is the ``routing`` the cluster uses (Service
``trafficDistribution``, Istio locality load balancing), so the plugin models it:

- ``preferZone`` (default): a call goes to the peer's replicas in the caller's zone when there are any,
  so placing the pod on node ``n`` of zone ``z`` keeps local
  ``node_share(n) = sum_p w_p * replicas_p(n) / replicas_p(z)`` and ``zone_share(z) = sum_p w_p * [replicas_p(z) > 0]``;
  with ``zoneLoadShare`` s > 0, ``zone_share(z) = sum_p w_p * ((1 - s) [replicas_p(z) > 0] + s replicas_p(z) / replicas_p)``:
  a zone's calls all land on its own replicas, so a workload's replica beyond one per zone is drawn to
  the zone where its peers have theirs, and a callee's replicas follow its callers' (the node term
  still decides when that zone's cell node is full; docs/harmony.md, "zoneLoadShare");
- ``preferNode``: the peer's replica on the same node when there is one (``node_share = sum_p w_p * [replicas_p(n) > 0]``);
- ``random``: any replica (``node_share = sum_p w_p * replicas_p(n) / replicas_p``, zones likewise);

each over ``sum_p w_p``. The raw score is the weighted mean of the two (``nodeWeight``, ``zoneWeight``) on
0..100; NormalizeScore scales the best node to 100 so the plugin's profile weight sets its strength.
Under zone-preferring routing this builds *zonal cells*: every zone keeps replicas of the application's
services, and inside a zone chatty peers share nodes.

It never trades availability for locality: a zone already holding more of the workload's replicas
than its least-populated candidate zone gets no pull, and the least-populated zones always get some
(``zoneBalance``), so the workload spreads over zones at least as kube-scheduler's default spreading
would. Where its peers run in two zones or more, those zones alone count (zones where a peer ran
within ``peerZoneWindowSeconds`` included, so a zone whose replicas are being replaced after a node
failure keeps its place): a replica in a zone without peers would send every call out of the zone, and
two zones survive the loss of one. While a workload runs on fewer than
``minNodesPerWorkload`` nodes (and has more replicas than that), nodes already hosting it get no pull
— ``nodeFailureSpan`` nodes when the cluster has fewer zones than that, so that losing one node still
leaves the workload on two; nodes holding ``maxReplicasPerNode`` of its replicas score 0; filters are
never overridden.

Before telemetry knows an application (its pods are only now being created), the workloads whose pods
share the ``cohortLabel`` value (``app.kubernetes.io/part-of`` by default: the label Kubernetes recommends
for "the application this is part of") in the same namespace count as peers of equal weight; once the
graph knows a workload's peers they weigh ``cohortWeight`` of its graph traffic together. A workload
whose peers do not run yet is drawn toward its own replicas (the peers that follow then find them
together). With neither graph peers nor cohort, the plugin skips (no signal).

Args (CommunicationAffinityArgs): ``nodeWeight`` (default 2), ``zoneWeight`` (default 1),
``routing`` (``preferZone``), ``zoneLoadShare`` (0; 0..1, ``preferZone`` only), ``zoneBalance`` (true),
``minNodesPerWorkload`` (default 2),
``nodeFailureSpan`` (default 3; 0 disables), ``peerZoneWindowSeconds`` (default 600; 0: the floor
covers every zone),
``maxReplicasPerNode`` (default 0 = no absolute cap), ``cohortLabel``
(``app.kubernetes.io/part-of``; empty disables), ``cohortWeight`` (0.1), ``zoneLabel`` (default
``topology.kubernetes.io/zone``), ``telemetry`` (``harmonic.signals.config.TelemetryConfig``: Prometheus,
topology files, AppGroups, refresh interval, half-life). The graph comes from the handle service
``affinity_graph`` (an object with a ``view`` property returning a ``GraphView``), which the
scheduler's setup builds from ``telemetry``.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from harmonic.api.node import ZONE_LABEL
from harmonic.api.pod import Pod
from harmonic.framework.args import PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import MAX_NODE_SCORE, PreScorePlugin, ScorePlugin
from harmonic.framework.services import Need
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.plugins.communicationaffinity.placement import PeerPlacement
from harmonic.plugins.helpers import default_normalize_score
from harmonic.signals.config import TelemetryConfig
from harmonic.signals.graph import AFFINITY_GRAPH, GraphView
from harmonic.signals.identity import workload_id

log = logging.getLogger(__name__)
_PRESCORE_KEY = "PreScoreCommunicationAffinity"
GRAPH_SERVICE = AFFINITY_GRAPH.name


class CommunicationAffinityArgs(PluginArgs):
    node_weight: float = Field(default=2.0, ge=0)
    zone_weight: float = Field(default=1.0, ge=0)
    routing: Literal["preferZone", "preferNode", "random"] = "preferZone"
    zone_load_share: float = Field(default=0.0, ge=0, le=1)
    zone_balance: bool = True
    cohort_label: str = "app.kubernetes.io/part-of"
    cohort_weight: float = Field(default=0.1, ge=0)
    max_replicas_per_node: int = Field(default=0, ge=0)
    min_nodes_per_workload: int = Field(default=2, ge=1)
    node_failure_span: int = Field(default=3, ge=0)
    peer_zone_window_seconds: float = Field(default=600.0, ge=0)
    zone_label: str = Field(default=ZONE_LABEL, min_length=1)
    #: Where the graph comes from; used by the scheduler's setup to build the ``affinity_graph``
    #: service (the plugin itself does no I/O).
    telemetry: TelemetryConfig | None = None

    @model_validator(mode="after")
    def _consistent(self) -> CommunicationAffinityArgs:
        if self.node_weight + self.zone_weight <= 0:
            raise ValueError("nodeWeight + zoneWeight must be > 0")
        if self.zone_load_share > 0 and self.routing != "preferZone":
            raise ValueError(f"zoneLoadShare models zone-local routing; routing is {self.routing!r}")
        return self


def _replica_share(per_zone: np.ndarray, total: np.ndarray) -> np.ndarray:
    """[peer, zone]: the share of each peer's replicas in each zone (0 for a peer with none)."""
    share: np.ndarray = np.divide(
        per_zone, total[:, None], out=np.zeros_like(per_zone), where=total[:, None] > 0
    )
    return share


class CommunicationAffinity(PreScorePlugin, ScorePlugin):
    NAME: ClassVar[str] = "CommunicationAffinity"
    Args: ClassVar[type[PluginArgs]] = CommunicationAffinityArgs
    NEEDS: ClassVar[tuple[Need, ...]] = (
        Need(AFFINITY_GRAPH, "no traffic signal: only the cohort label brings peers together"),
    )

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.cfg: CommunicationAffinityArgs = args
        self._placement = PeerPlacement(
            handle.snapshot,
            args.zone_label,
            args.cohort_label,
            clock=lambda: handle.clock.now(),
            window=args.peer_zone_window_seconds,
        )
        self._zones_key: tuple[int, int] | None = None
        self._zones = 0

    def _min_nodes(self, snap: Snapshot) -> int:
        """How many nodes a workload must span before its own nodes pull again. With fewer zones than
        ``nodeFailureSpan``, spreading over zones cannot keep a workload on two failure domains after
        one node fails (three replicas on two zones: two share a zone, and the cell puts them on one
        node), so nodes must: the workload spans ``nodeFailureSpan`` nodes first."""
        need = self.cfg.min_nodes_per_workload
        if self.cfg.node_failure_span <= need:
            return need
        key = (id(snap), snap.node_generation)
        if self._zones_key != key:
            codes = snap.label(self.cfg.zone_label).codes
            codes = codes[snap.live[: len(codes)]]
            # Nodes without the label are one more failure domain together, as the score treats them.
            self._zones = len(np.unique(codes[codes >= 0])) + int((codes < 0).any())
            self._zones_key = key
        return self.cfg.node_failure_span if self._zones < self.cfg.node_failure_span else need

    def _peer_zones(
        self, peer_ids: list[int], per_zone: np.ndarray, zones: int, cand_zone: np.ndarray
    ) -> np.ndarray | None:
        """Candidates in zones where the pod's peers run, or ran within ``peerZoneWindowSeconds`` (a
        replica being replaced still marks its zone); None — every zone — when that leaves fewer than
        two candidate zones or the window is 0. A replica in a zone without peers would send all its
        calls out of the zone, and the zones with peers are enough to survive a zone's loss."""
        window = self.cfg.peer_zone_window_seconds
        if window <= 0:
            return None
        theirs = per_zone.sum(axis=0) > 0
        for z in self._placement.recent_zones(peer_ids, self.handle.clock.now() - window):
            theirs[z if z >= 0 else zones - 1] = True
        pool = theirs[cand_zone]
        if len(np.unique(cand_zone[pool])) < 2:
            return None
        return pool

    def _graph(self) -> GraphView | None:
        source = self.handle.optional_service(AFFINITY_GRAPH)
        return None if source is None else source.view

    def _peers(
        self, pod: Pod, me: int, view: GraphView | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[int]]:
        """The pod's peers' weights and every (peer, slot, replicas) they run on: graph peers, then its
        application cohort's other workloads; and the peers' workload ids."""
        placement = self._placement
        weights: list[np.ndarray] = []
        peer: list[np.ndarray] = []
        slot: list[np.ndarray] = []
        count: list[np.ndarray] = []
        known: set[int] = {me}
        graph_total = 0.0
        graph = placement.peer_rows.get(me) if view is not None else None
        if graph is not None:
            rows, w = graph
            p, sl, c = placement.entries(rows)
            weights.append(w)
            peer.append(p)
            slot.append(sl)
            count.append(c)
            graph_total = float(w.sum())
            assert view is not None
            known.update(int(x) for x in view.peers[me][0])
        # The incoming pod is not placed yet: its application comes from its own labels.
        app = pod.labels.get(self.cfg.cohort_label) if self.cfg.cohort_label else None
        cohort = placement.cohorts.get((pod.namespace, app), set()) if app else set()
        members = [m for m in cohort if m not in known]
        if members and self.cfg.cohort_weight > 0:
            each = (self.cfg.cohort_weight * graph_total if graph_total > 0 else 1.0) / len(members)
            base = sum(len(w) for w in weights)
            for k, m in enumerate(sorted(members)):
                placed = placement.sparse.get(m, {})
                peer.append(np.full(len(placed), base + k, dtype=np.int64))
                slot.append(np.fromiter(placed.keys(), dtype=np.int64, count=len(placed)))
                count.append(np.fromiter(placed.values(), dtype=np.float64, count=len(placed)))
            weights.append(np.full(len(members), each))
        ids = sorted(known - {me}) + sorted(members)
        if not weights:
            empty = np.zeros(0, dtype=np.int64)
            return np.zeros(0), empty, empty, np.zeros(0), ids
        return (
            np.concatenate(weights),
            np.concatenate(peer),
            np.concatenate(slot),
            np.concatenate(count),
            ids,
        )

    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        view = self._graph()
        me = workload_id(pod)
        placement = self._placement
        if view is not None:
            placement.track(view)
        weights, peer, where, count, peer_ids = self._peers(pod, me, view)
        peers_run = bool(len(count)) and count.sum() > 0
        if not peers_run:
            # None of its peers runs yet (the first workload of an application to arrive): gather
            # the workload's own replicas, up to the cap, so the peers that follow find them together.
            own = placement.sparse.get(me)
            if not own:
                return Status(Code.SKIP)
            weights = np.ones(1)
            where = np.fromiter(own.keys(), dtype=np.int64, count=len(own))
            count = np.fromiter(own.values(), dtype=np.float64, count=len(own))
            peer = np.zeros(len(own), dtype=np.int64)
        codes = snap.label(self.cfg.zone_label).codes
        zones = int(codes.max()) + 2 if len(codes) else 1
        # Zone index per entry; unlabelled nodes share the last index.
        zone = codes[where].astype(np.int64)
        zone[zone < 0] = zones - 1
        cand_zone = codes[slots].astype(np.int64)
        cand_zone[cand_zone < 0] = zones - 1
        n_peers = len(weights)
        per_zone = np.bincount(peer * zones + zone, weights=count, minlength=n_peers * zones).reshape(
            n_peers, zones
        )
        total = per_zone.sum(axis=1)
        routing = self.cfg.routing
        if routing == "random":
            denom = total[peer]
            zone_frac = _replica_share(per_zone, total)
        else:
            denom = per_zone[peer, zone]
            zone_frac = (per_zone > 0).astype(np.float64)
            load = self.cfg.zone_load_share  # > 0 only under preferZone (validated)
            if load > 0:
                zone_frac = (1.0 - load) * zone_frac + load * _replica_share(per_zone, total)
        if routing == "preferNode":
            contrib = weights[peer] * (count > 0)
        else:
            contrib = weights[peer] * np.divide(count, denom, out=np.zeros(len(count)), where=denom > 0)
        wsum = float(weights.sum())
        node_share = np.bincount(where, weights=contrib, minlength=snap.capacity)[slots] / wsum
        zone_share = (weights @ zone_frac)[cand_zone] / wsum
        mix = (self.cfg.node_weight * node_share + self.cfg.zone_weight * zone_share) / (
            self.cfg.node_weight + self.cfg.zone_weight
        )
        raw = np.floor(np.clip(mix, 0.0, 1.0) * MAX_NODE_SCORE + 0.5).astype(np.int64)
        own = placement.sparse.get(me, {})
        crowded: list[int] = []
        if self.cfg.max_replicas_per_node > 0:
            crowded += [slot for slot, n in own.items() if n >= self.cfg.max_replicas_per_node]
        if own and len(own) < min(self._min_nodes(snap), sum(own.values()) + 1):
            # The workload still needs more distinct nodes: no pull toward nodes already hosting it.
            crowded += list(own)
        if crowded:
            mask = np.zeros(snap.capacity, dtype=bool)
            mask[crowded] = True
            raw[mask[slots]] = 0
        if own and self.cfg.zone_balance:
            # No pull into a zone holding more of this workload than its least-populated candidate zone.
            own_slots = np.fromiter(own.keys(), dtype=np.int64, count=len(own))
            own_zone = codes[own_slots].astype(np.int64)
            own_zone[own_zone < 0] = zones - 1
            mine = np.bincount(
                own_zone, weights=np.fromiter(own.values(), dtype=np.float64, count=len(own)), minlength=zones
            )
            here = mine[cand_zone]
            pool = self._peer_zones(peer_ids, per_zone, zones, cand_zone) if peers_run else None
            if pool is None:
                pool = np.ones(len(here), dtype=bool)
            least = pool & (here == here[pool].min())
            raw[~least] = 0
            # And a pull into the least-populated zones even where traffic gives none (a workload
            # without peers, or peers only elsewhere): replicas keep spreading over zones when the
            # other scores would stack them, so one zone's outage never takes them all.
            np.maximum(raw, least.astype(np.int64), out=raw)
        state.write(_PRESCORE_KEY, raw)
        return None

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        raw: np.ndarray = state.read(_PRESCORE_KEY)
        return raw

    def normalize_score(
        self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        return default_normalize_score(scores, reverse=False)
