"""CommunicationAffinity — PreScore, Score (+NormalizeScore).

Scores a node by the share of the pod's workload traffic that would stay local if the pod ran there,
using the affinity graph learnt from service-mesh telemetry (no hand-written affinity rules).
Traffic to a peer workload is assumed spread evenly over the peer's running replicas, so placing
the pod on node ``n`` keeps local

    node_share(n) = sum_p w_p * replicas_p(n) / replicas_p  /  sum_p w_p
    zone_share(n) = sum_p w_p * replicas_p(zone(n)) / replicas_p  /  sum_p w_p

over the pod's peers ``p`` with affinity ``w_p``. The raw score is the weighted mean of the two levels
(``nodeWeight``, ``zoneWeight``) on 0..100; NormalizeScore scales the best node to 100 so the plugin's
profile weight sets its strength. It never piles a workload onto one node: nodes that already run
``maxReplicasPerNode`` replicas of the pod's own workload score 0, and resource fit and spreading
plugins keep their say. With no graph, or no peers for the workload, the plugin skips (no signal).

Args (CommunicationAffinityArgs): ``nodeWeight`` (default 2), ``zoneWeight`` (default 1),
``maxReplicasPerNode`` (default 2; 0 disables the cap), ``zoneLabel`` (default
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
from harmonic.framework.pod_index import PodIndex
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.plugins.helpers import default_normalize_score
from harmonic.signals.config import TelemetryConfig
from harmonic.signals.graph import GraphView
from harmonic.signals.identity import workload_of

log = logging.getLogger(__name__)
_PRESCORE_KEY = "PreScoreCommunicationAffinity"
GRAPH_SERVICE = "affinity_graph"


class CommunicationAffinityArgs(PluginArgs):
    node_weight: float = Field(default=2.0, ge=0)
    zone_weight: float = Field(default=1.0, ge=0)
    max_replicas_per_node: int = Field(default=2, ge=0)
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
        self._index = PodIndex(handle.snapshot, workload_of)
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
        me = workload_of(pod)
        peers, weights = view.neighbours(me)
        if not peers:
            return Status(Code.SKIP)
        total_w = float(weights.sum())
        zones = snap.label(self.cfg.zone_label).codes
        # Accumulate each peer's replicas, weighted by its share of the traffic, per slot and per
        # zone from the sparse index (peers run few replicas), then gather for the candidates.
        node_acc = np.zeros(snap.capacity, dtype=np.float64)
        zone_acc: dict[int, float] = {}
        any_peer = False
        for peer, w in zip(peers, weights.tolist(), strict=True):
            where = self._index.where(peer)
            if not where:
                continue
            any_peer = True
            frac = w / (self._index.total(peer) * total_w)
            for slot, n in where.items():
                node_acc[slot] += n * frac
                z = int(zones[slot])
                if z >= 0 and snap.live[slot]:
                    zone_acc[z] = zone_acc.get(z, 0.0) + n * frac
        if not any_peer:
            return Status(Code.SKIP)
        node_share = node_acc[slots]
        zone_share = np.zeros(len(slots), dtype=np.float64)
        if zone_acc:
            table = np.zeros(max(zone_acc) + 1, dtype=np.float64)
            for z, v in zone_acc.items():
                table[z] = v
            cand = zones[slots]
            known = (cand >= 0) & (cand < len(table))
            zone_share[known] = table[cand[known]]
        mix = (self.cfg.node_weight * node_share + self.cfg.zone_weight * zone_share) / (
            self.cfg.node_weight + self.cfg.zone_weight
        )
        raw = np.floor(np.clip(mix, 0.0, 1.0) * MAX_NODE_SCORE + 0.5).astype(np.int64)
        cap = self.cfg.max_replicas_per_node
        if cap > 0:
            own = self._index.per_slot(me)
            if own is not None:
                raw[own[slots] >= cap] = 0
        state.write(_PRESCORE_KEY, raw)
        return None

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        raw: np.ndarray = state.read(_PRESCORE_KEY)
        return raw

    def normalize_score(
        self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        return default_normalize_score(scores, reverse=False)
