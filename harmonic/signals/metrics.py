"""Prometheus metrics about Harmonic's signals (exported by ``harmonic run``'s /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

TELEMETRY_UP = Gauge(
    "harmonic_telemetry_up", "1 if the last read of a telemetry source gave a signal, else 0.", ["source"]
)
TELEMETRY_FAILURES = Counter(
    "harmonic_telemetry_failures_total",
    "Reads of a telemetry source that gave no signal.",
    ["source", "reason"],
)
TELEMETRY_SKIPPED_SERIES = Counter(
    "harmonic_telemetry_skipped_series_total",
    "Series a telemetry source skipped (odd labels, bad values).",
    ["source"],
)
GRAPH_EDGES = Gauge("harmonic_affinity_graph_edges", "Edges in the affinity graph.")
GRAPH_VERSION = Gauge(
    "harmonic_affinity_graph_version", "Version of the affinity graph (bumped per refresh)."
)
