"""CommunicationAffinity — PreScore, Score (+NormalizeScore).

Scores a node by the share of the pod's workload traffic that would stay local if the pod ran there,
using the affinity graph learnt from service-mesh telemetry (no hand-written affinity rules).
Traffic to a peer workload is assumed spread evenly over the peer's running replicas, so placing
the pod on node ``n`` keeps local

    node_share(n) = sum_p w_p * replicas_p(n) / replicas_p  /  sum_p w_p
    zone_share(n) = sum_p w_p * replicas_p(zone(n)) / replicas_p  /  sum_p w_p

over the pod's peers ``p`` with affinity ``w_p``. The raw score is the weighted mean of the two levels
(``nodeWeight``, ``zoneWeight``) on 0..100; NormalizeScore scales the best node to 100 so the plugin's
profile weight sets its strength. It never piles a workload onto one node: while a workload runs on fewer than
``minNodesPerWorkload`` nodes (and has more replicas than that), nodes already hosting it get no pull;
nodes holding ``maxReplicasPerNode`` of its replicas score 0; and resource fit and spreading plugins
keep their say. A workload whose peers do not run yet (the first of an application to arrive) is
drawn toward its own replicas instead, so the peers that follow find them together. With no graph, or no peers for the workload, the plugin skips (no signal).

Args (CommunicationAffinityArgs): ``nodeWeight`` (default 2), ``zoneWeight`` (default 1),
``minNodesPerWorkload`` (default 2), ``maxReplicasPerNode`` (default 0 = no absolute cap), ``zoneLabel`` (default
``topology.kubernetes.io/zone``), ``telemetry`` (``harmonic.signals.config.TelemetryConfig``: Prometheus,
topology files, AppGroups, refresh interval, half-life). The graph comes from the handle service
``affinity_graph`` (an object with a ``view`` property returning a ``GraphView``), which the
scheduler's setup builds from ``telemetry``.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, model_validator

from harmonic.api.node import ZONE_LABEL
from harmonic.api.pod import Pod
from harmonic.framework.args import PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import MAX_NODE_SCORE, PreScorePlugin, ScorePlugin
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.plugins.communicationaffinity.placement import PeerPlacement
from harmonic.plugins.helpers import default_normalize_score
from harmonic.signals.config import TelemetryConfig
from harmonic.signals.graph import GraphView
from harmonic.signals.identity import workload_id

log = logging.getLogger(__name__)
_PRESCORE_KEY = "PreScoreCommunicationAffinity"
GRAPH_SERVICE = "affinity_graph"


class CommunicationAffinityArgs(PluginArgs):
    node_weight: float = Field(default=2.0, ge=0)
    zone_weight: float = Field(default=1.0, ge=0)
    max_replicas_per_node: int = Field(default=0, ge=0)
    min_nodes_per_workload: int = Field(default=2, ge=1)
    zone_label: str = Field(default=ZONE_LABEL, min_length=1)
    #: Where the graph comes from; used by the scheduler's setup to build the ``affinity_graph``
    #: service (the plugin itself does no I/O).
    telemetry: TelemetryConfig | None = None

    @model_validator(mode="after")
    def _some_weight(self) -> CommunicationAffinityArgs:
        if self.node_weight + self.zone_weight <= 0:
            raise ValueError("nodeWeight + zoneWeight must be > 0")
        return self


class CommunicationAffinity(PreScorePlugin, ScorePlugin):
    NAME: ClassVar[str] = "CommunicationAffinity"
    Args: ClassVar[type[PluginArgs]] = CommunicationAffinityArgs

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.cfg: CommunicationAffinityArgs = args
        self._placement = PeerPlacement(handle.snapshot, args.zone_label)
        self._warned = False

    def _graph(self) -> GraphView | None:
        try:
            view: GraphView = self.handle.service(GRAPH_SERVICE).view
            return view
        except KeyError:
            if not self._warned:
                log.warning("CommunicationAffinity: no %r service; the plugin has no signal", GRAPH_SERVICE)
                self._warned = True
            return None

    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        view = self._graph()
        if view is None:
            return Status(Code.SKIP)
        me = workload_id(pod)
        placement = self._placement
        placement.track(view)
        peers = placement.peer_rows.get(me)
        if peers is None:
            return Status(Code.SKIP)
        rows, weights = peers
        replicas = placement.totals[rows]
        running = replicas > 0
        if not running.any():
            # None of its peers runs yet (the first workload of an application to arrive): gather
            # the workload's own replicas, up to the cap, so the peers that follow find them together.
            own_row = placement.rows.get(me)
            if own_row is None or placement.totals[own_row] <= 0:
                return Status(Code.SKIP)
            rows, weights = np.asarray([own_row]), np.ones(1)
            replicas = placement.totals[rows]
            running = replicas > 0
        # Each peer's traffic share, spread evenly over its running replicas.
        frac = np.divide(weights, replicas * float(weights.sum()), out=np.zeros(len(rows)), where=running)
        node_share = placement.share_per_slot(rows, frac)[slots]
        zone_share = np.zeros(len(slots), dtype=np.float64)
        if self.cfg.zone_weight > 0:
            codes, by_zone = placement.zones()
            cand = codes[slots]
            known = cand >= 0
            if known.any():
                zone_share[known] = (frac @ by_zone[rows])[cand[known]]
        mix = (self.cfg.node_weight * node_share + self.cfg.zone_weight * zone_share) / (
            self.cfg.node_weight + self.cfg.zone_weight
        )
        raw = np.floor(np.clip(mix, 0.0, 1.0) * MAX_NODE_SCORE + 0.5).astype(np.int64)
        own = placement.sparse.get(me, {})
        crowded: list[int] = []
        if self.cfg.max_replicas_per_node > 0:
            crowded += [slot for slot, n in own.items() if n >= self.cfg.max_replicas_per_node]
        if own and len(own) < min(self.cfg.min_nodes_per_workload, sum(own.values()) + 1):
            # The workload still needs more distinct nodes: no pull toward nodes already hosting it.
            crowded += list(own)
        if crowded:
            mask = np.zeros(snap.capacity, dtype=bool)
            mask[crowded] = True
            raw[mask[slots]] = 0
        state.write(_PRESCORE_KEY, raw)
        return None

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        raw: np.ndarray = state.read(_PRESCORE_KEY)
        return raw

    def normalize_score(
        self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        return default_normalize_score(scores, reverse=False)
