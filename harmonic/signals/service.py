"""The affinity graph as a scheduler service: sources + graph + refresh interval.

Built from ``CommunicationAffinityArgs.telemetry`` (or directly), registered under the handle service
name ``affinity_graph``. Plugins read ``view`` (an immutable ``GraphView``, swapped atomically); the
refresh does the I/O, on a background thread for live clusters or driven by the simulator's clock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from harmonic.signals.graph import AffinityGraph, GraphView
from harmonic.signals.periodic import Periodic
from harmonic.signals.telemetry import Reading, TelemetrySource

log = logging.getLogger(__name__)


class GraphService:
    def __init__(
        self, graph: AffinityGraph, sources: Sequence[TelemetrySource], refresh_seconds: float = 30.0
    ) -> None:
        if refresh_seconds <= 0:
            raise ValueError("refresh_seconds must be > 0")
        self.graph = graph
        self.sources = list(sources)
        self.refresh_seconds = refresh_seconds
        self.last_refresh: float | None = None
        self.last_readings: list[Reading] = []
        self._refresher = Periodic("affinity-graph", lambda: self.refresh(time.monotonic()), refresh_seconds)

    @property
    def view(self) -> GraphView:
        return self.graph.view

    def refresh(self, now: float) -> list[Reading]:
        self.last_readings = self.graph.refresh(self.sources, now)
        self.last_refresh = now
        return self.last_readings

    def maybe_refresh(self, now: float) -> bool:
        """Refresh if ``refresh_seconds`` passed since the last one (for virtual clocks)."""
        if self.last_refresh is None or now - self.last_refresh >= self.refresh_seconds:
            self.refresh(now)
            return True
        return False

    def start(self) -> None:
        """Refresh on a daemon thread every ``refresh_seconds`` until ``stop``."""
        self._refresher.start()

    def stop(self) -> None:
        self._refresher.stop()
