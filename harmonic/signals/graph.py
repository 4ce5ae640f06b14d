"""The affinity graph: how strongly each pair of workloads talks, from telemetry, with decay.

Each directed edge keeps an exponentially decayed rate of requests/s and bytes/s: a new reading moves
it toward the observed value by ``1 - 2^(-dt / half_life)``, and edges missing from a reading decay
toward zero the same way, so the graph forgets traffic that stopped. Edges below ``min_rate`` are
dropped. Affinity between two workloads is symmetric: the traffic both ways, weighted by
``weight_by`` (requests, bytes, or both normalised and summed).

The graph is versioned (bumped per refresh) and inspectable (``top_edges``, ``explain``); plugins
read an immutable ``GraphView`` so a refresh never changes a scheduling cycle mid-way.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from harmonic.framework.services import ServiceKey, ViewSource
from harmonic.signals.identity import WORKLOAD_IDS, WorkloadKey
from harmonic.signals.metrics import GRAPH_EDGES, GRAPH_VERSION
from harmonic.signals.telemetry import Reading, TelemetrySource, TrafficSample, no_signal_level

log = logging.getLogger(__name__)


class WeightBy(StrEnum):
    REQUESTS = "requests"
    BYTES = "bytes"
    BOTH = "both"


@dataclass(slots=True)
class _Edge:
    requests: float
    bytes: float


_EMPTY = np.zeros(0, dtype=np.float64)
_NO_IDS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class GraphView:
    """An immutable snapshot of affinities: for each workload id, its peers' ids and affinity weights
    (ids from ``identity.WORKLOAD_IDS``)."""

    version: int
    peers: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def neighbour_ids(self, workload_id: int) -> tuple[np.ndarray, np.ndarray]:
        return self.peers.get(workload_id, (_NO_IDS, _EMPTY))

    def neighbours(self, w: WorkloadKey) -> tuple[tuple[WorkloadKey, ...], np.ndarray]:
        ids, weights = self.neighbour_ids(WORKLOAD_IDS.id_of(w))
        return tuple(WORKLOAD_IDS.key_of(int(i)) for i in ids), weights

    def __len__(self) -> int:
        return len(self.peers)


#: The handle service of the affinity graph (``signals.service.GraphService``), read by CommunicationAffinity.
AFFINITY_GRAPH: ServiceKey[ViewSource[GraphView]] = ServiceKey(
    "affinity_graph", "the affinity graph of workload-to-workload traffic", user_provided=True
)


class AffinityGraph:
    def __init__(
        self,
        half_life: float = 600.0,
        weight_by: WeightBy = WeightBy.REQUESTS,
        min_rate: float = 1e-6,
    ) -> None:
        if half_life <= 0:
            raise ValueError("half_life must be > 0 seconds")
        self.half_life = half_life
        self.weight_by = WeightBy(weight_by)
        self.min_rate = min_rate
        self.version = 0
        self._edges: dict[tuple[WorkloadKey, WorkloadKey], _Edge] = {}
        self._last: float | None = None
        self._view = GraphView(0)
        #: Refreshes in a row that no source gave a signal.
        self._silent = 0

    # ------------------------------------------------------------------ updates
    def observe(self, samples: Iterable[TrafficSample], now: float) -> None:
        """Blend one reading taken at ``now`` into the graph."""
        if self._last is None:
            alpha = 1.0
        else:
            dt = max(0.0, now - self._last)
            alpha = 1.0 - math.pow(2.0, -dt / self.half_life)
        self._last = now
        seen: dict[tuple[WorkloadKey, WorkloadKey], TrafficSample] = {}
        for s in samples:
            key = (s.src, s.dst)
            prev = seen.get(key)
            seen[key] = (
                s
                if prev is None
                else TrafficSample(s.src, s.dst, prev.requests + s.requests, prev.bytes + s.bytes)
            )
        for key in set(self._edges) | set(seen):
            e = self._edges.get(key) or _Edge(0.0, 0.0)
            obs = seen.get(key)
            r, b = (obs.requests, obs.bytes) if obs is not None else (0.0, 0.0)
            e.requests += alpha * (r - e.requests)
            e.bytes += alpha * (b - e.bytes)
            if max(e.requests, e.bytes) < self.min_rate:
                self._edges.pop(key, None)
            else:
                self._edges[key] = e
        self._publish()

    def refresh(self, sources: Sequence[TelemetrySource], now: float) -> list[Reading]:
        """Read every source and blend what came back. A source with no signal leaves the graph as
        it is (no decay from missing data), so an outage does not erase what was learned. Silence is
        logged as an empty result is (``no_signal_level``): news the first time, as when the scheduler
        starts with the application before its workloads called each other, then a warning that
        grows rarer; a failing source warns on its own."""
        readings = [s.read() for s in sources]
        good = [r for r in readings if r.ok]
        if good:
            self._silent = 0
            self.observe((x for r in good for x in r.samples), now)
        else:
            self._silent += 1
            again = f" ({self._silent} refreshes in a row)" if self._silent > 1 else ""
            log.log(
                no_signal_level(self._silent, empty=True),
                "affinity graph: no source gave a signal%s; keeping version %d",
                again,
                self.version,
            )
        return readings

    def _publish(self) -> None:
        self.version += 1
        weights = self._pair_weights()
        adj: dict[WorkloadKey, dict[WorkloadKey, float]] = {}
        for (a, b), weight in weights.items():
            adj.setdefault(a, {})[b] = adj.get(a, {}).get(b, 0.0) + weight
            adj.setdefault(b, {})[a] = adj.get(b, {}).get(a, 0.0) + weight
        peers: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for workload, nb in adj.items():
            order = sorted(nb)
            peers[WORKLOAD_IDS.id_of(workload)] = (
                np.asarray([WORKLOAD_IDS.id_of(k) for k in order], dtype=np.int64),
                np.asarray([nb[k] for k in order], dtype=np.float64),
            )
        self._view = GraphView(self.version, peers)
        GRAPH_EDGES.set(len(self._edges))
        GRAPH_VERSION.set(self.version)

    def _pair_weights(self) -> dict[tuple[WorkloadKey, WorkloadKey], float]:
        if not self._edges:
            return {}
        total_r = sum(e.requests for e in self._edges.values()) or 1.0
        total_b = sum(e.bytes for e in self._edges.values()) or 1.0
        out: dict[tuple[WorkloadKey, WorkloadKey], float] = {}
        for (a, b), e in self._edges.items():
            if self.weight_by == WeightBy.REQUESTS:
                w = e.requests
            elif self.weight_by == WeightBy.BYTES:
                w = e.bytes
            else:
                w = e.requests / total_r + e.bytes / total_b
            if w > 0:
                out[(a, b)] = w
        return out

    # ------------------------------------------------------------------ reading
    @property
    def view(self) -> GraphView:
        return self._view

    def edges(self) -> list[tuple[WorkloadKey, WorkloadKey, float, float]]:
        return [(a, b, e.requests, e.bytes) for (a, b), e in sorted(self._edges.items())]

    def top_edges(self, n: int = 20) -> list[dict[str, Any]]:
        """The ``n`` strongest directed edges by the configured weight."""
        weights = self._pair_weights()
        ranked = sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
        return [
            {
                "src": str(a),
                "dst": str(b),
                "weight": w,
                "requests_per_second": self._edges[(a, b)].requests,
                "bytes_per_second": self._edges[(a, b)].bytes,
            }
            for (a, b), w in ranked
        ]

    def explain(self, workload: WorkloadKey) -> dict[str, Any]:
        peers, weights = self._view.neighbours(workload)
        total = float(weights.sum()) if len(weights) else 0.0
        return {
            "workload": str(workload),
            "version": self.version,
            "peers": [
                {"workload": str(p), "affinity": float(w), "share": float(w) / total if total else 0.0}
                for p, w in sorted(zip(peers, weights.tolist(), strict=True), key=lambda x: -x[1])
            ],
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "half_life_seconds": self.half_life,
            "weight_by": str(self.weight_by),
            "edges": [
                {"src": str(a), "dst": str(b), "requests_per_second": r, "bytes_per_second": by}
                for a, b, r, by in self.edges()
            ],
        }
