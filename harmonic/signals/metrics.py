"""Prometheus metrics about Harmonic's signals (exported by ``harmonic run``'s /metrics)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from harmonic.signals.freshness import Freshness

#: Their own registry: ``harmonic run`` serves it beside the scheduler's metrics.
REGISTRY = CollectorRegistry()

TELEMETRY_UP = Gauge(
    "harmonic_telemetry_up",
    "1 if the last read of a telemetry source gave a signal, else 0.",
    ["source"],
    registry=REGISTRY,
)
TELEMETRY_FAILURES = Counter(
    "harmonic_telemetry_failures_total",
    "Reads of a telemetry source that gave no signal.",
    ["source", "reason"],
    registry=REGISTRY,
)
TELEMETRY_SKIPPED_SERIES = Counter(
    "harmonic_telemetry_skipped_series_total",
    "Series a telemetry source skipped (odd labels, bad values).",
    ["source"],
    registry=REGISTRY,
)
#: Each source's last signal: its age on /metrics, its line on /readyz?verbose.
FRESHNESS = Freshness()
REGISTRY.register(FRESHNESS)
GRAPH_EDGES = Gauge("harmonic_affinity_graph_edges", "Edges in the affinity graph.", registry=REGISTRY)
GRAPH_VERSION = Gauge(
    "harmonic_affinity_graph_version",
    "Version of the affinity graph (bumped per refresh).",
    registry=REGISTRY,
)

FEEDBACK_OBSERVATIONS = Counter(
    "harmonic_feedback_observations",
    "Flourish reports the feedback loop learnt from.",
    registry=REGISTRY,
)
FEEDBACK_LEARNED = Gauge(
    "harmonic_dissonance_learned",
    "Learned slowdown of a victim class per unit of node CPU held by an aggressor class.",
    ["victim", "aggressor"],
    registry=REGISTRY,
)
FEEDBACK_LEARNED_SD = Gauge(
    "harmonic_dissonance_learned_sd",
    "Posterior standard deviation of harmonic_dissonance_learned.",
    ["victim", "aggressor"],
    registry=REGISTRY,
)
FEEDBACK_EVIDENCE = Gauge(
    "harmonic_dissonance_evidence",
    "1 where the feedback loop's reports have pinned the entry down (what a filter on evidence refuses by).",
    ["victim", "aggressor"],
    registry=REGISTRY,
)

FEEDBACK_MOVES = Counter(
    "harmonic_feedback_moves",
    "Moves the feedback loop asked for, by outcome: executed, recommended (not carried out), refused by "
    "a PodDisruptionBudget (pdb), a rate limit (budget) or the cool-down, declined, or an API error.",
    ["outcome"],
    registry=REGISTRY,
)
FEEDBACK_RESERVATIONS = Counter(
    "harmonic_feedback_reservations",
    "Nodes reserved for a moved pod's replacement, by outcome: landed (bound there), fell_back (bound "
    "elsewhere or deleted first), expired (no replacement in time), cancelled (the eviction failed).",
    ["outcome"],
    registry=REGISTRY,
)
FEEDBACK_RESERVATION_STORE = Counter(
    "harmonic_feedback_reservation_store",
    "Reads (op=load) and writes (op=write) of the ConfigMap keeping the open reservations, by result: ok, "
    "conflict (409, retried), failed, not_leader (write held back), skipped (a malformed entry), "
    "too_large (entries left out past the size limit).",
    ["op", "result"],
    registry=REGISTRY,
)


def exposition() -> bytes:
    """These metrics in the Prometheus text format."""
    return generate_latest(REGISTRY)
