"""kube-scheduler's Prometheus metrics (pkg/scheduler/metrics), same names, labels and buckets.

``SchedulerMetrics`` is both the ``Scheduler``'s observer (attempt results and durations) and the
frameworks' ``ExtensionPointRecorder`` (extension point and sampled plugin durations). Each instance
owns its own ``CollectorRegistry`` so several schedulers in one process (tests) do not collide. The
duration histograms, observed several times per pod, are ``histogram.Histogram`` (same exposition,
a fraction of prometheus_client's cost per observation).
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    disable_created_metrics,
    generate_latest,
)

from harmonic.framework.cycle_state import CycleState
from harmonic.framework.runtime import ExtensionPointRecorder
from harmonic.scheduler.histogram import Histogram, HistogramChild

#: Upstream times plugins in this percentage of scheduling cycles (pluginMetricsSamplePercent).
PLUGIN_SAMPLE_PERCENT = 10
PENDING_QUEUES = ("active", "backoff", "unschedulable", "gated")


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """prometheus.ExponentialBuckets."""
    return [start * factor**i for i in range(count)]


class SchedulerMetrics(ExtensionPointRecorder):
    def __init__(
        self, registry: CollectorRegistry | None = None, plugin_sample_percent: int = PLUGIN_SAMPLE_PERCENT
    ) -> None:
        # kube-scheduler exposes no ``_created`` series; this is a process-wide prometheus_client switch.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = registry if registry is not None else CollectorRegistry()
        self.plugin_sample_percent = plugin_sample_percent
        r = self.registry
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=r,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            exponential_buckets(0.001, 2, 15),
            r,
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
            "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods "
            "that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable "
            "pods that the scheduler never attempted to schedule because they are gated.",
            ["queue"],
            registry=r,
        )
        self.extension_point_duration = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            exponential_buckets(0.0001, 2, 12),
            r,
        )
        self.plugin_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            exponential_buckets(0.00001, 1.5, 20),
            r,
        )
        # Not kube-scheduler's (client-go drops a full broadcaster's events silently): a saturated
        # Event pipeline loses Events only, never pods or bindings, and this says how many.
        self.events_dropped = Counter(
            "harmonic_events_dropped",
            "Number of Events dropped because the queue of Events waiting to be written was full.",
            registry=r,
        )
        for q in PENDING_QUEUES:
            self.pending_pods.labels(q).set(0)
        #: Label children by label values: ``labels()`` costs more than ``observe()`` on the hot path.
        self._points: dict[tuple[str, str, str], HistogramChild] = {}
        self._plugins: dict[tuple[str, str, str], HistogramChild] = {}
        self._attempts: dict[tuple[str, str], tuple[Counter, HistogramChild]] = {}

    # ------------------------------------------------------------------ Scheduler observer
    def attempt(self, profile: str, result: str, seconds: float) -> None:
        key = (result, profile)
        children = self._attempts.get(key)
        if children is None:
            children = self._attempts[key] = (
                self.schedule_attempts.labels(result, profile),
                self.attempt_duration.labels(result, profile),
            )
        children[0].inc()
        children[1].observe(seconds)

    def set_pending(self, counts: Mapping[str, int]) -> None:
        for q in PENDING_QUEUES:
            self.pending_pods.labels(q).set(counts.get(q, 0))

    # ------------------------------------------------------------------ ExtensionPointRecorder
    def extension_point(self, profile: str, point: str, status: str, seconds: float) -> None:
        key = (point, status, profile)
        child = self._points.get(key)
        if child is None:
            child = self._points[key] = self.extension_point_duration.labels(point, status, profile)
        child.observe(seconds)

    def plugin(self, point: str, plugin: str, status: str, seconds: float) -> None:
        key = (plugin, point, status)
        child = self._plugins.get(key)
        if child is None:
            child = self._plugins[key] = self.plugin_duration.labels(plugin, point, status)
        child.observe(seconds)

    def sample_plugins(self, state: CycleState) -> bool:
        # A hash of the cycle number: the same answer at every extension point of one cycle, spread
        # evenly, and without drawing from the scheduler's seeded tie-break generator.
        return (state.cycle * 2654435761) % 4294967296 % 100 < self.plugin_sample_percent

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)
