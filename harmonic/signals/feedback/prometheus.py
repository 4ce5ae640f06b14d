"""Flourish metrics read from Prometheus, as named by annotations on a workload's pod template.

- ``harmonic.dev/flourish-query``: PromQL returning an instant vector, one series per pod (labels
  ``namespace`` and ``pod``) or per workload (labels ``namespace`` and ``workload``);
- ``harmonic.dev/flourish-goal``: ``minimize`` (a latency; the default) or ``maximize`` (a throughput);
- ``harmonic.dev/flourish-target``: optional, the SLO the value should stay on the good side of.

Failures (unreachable server, HTTP or PromQL errors, an empty result) are "no signal" — logged and
counted in ``harmonic_telemetry_failures_total`` as mesh telemetry is — never an exception; series
with missing labels or values ``check_value`` refuses are skipped and counted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

import httpx

from harmonic.signals.feedback.observation import GOALS, BadValue, Goal, check_value
from harmonic.signals.metrics import TELEMETRY_SKIPPED_SERIES
from harmonic.signals.prometheus import count_no_signal, count_signal, series_value
from harmonic.signals.promquery import PrometheusClient, QueryLimits
from harmonic.signals.telemetry import EMPTY

log = logging.getLogger(__name__)

QUERY_ANNOTATION = "harmonic.dev/flourish-query"
GOAL_ANNOTATION = "harmonic.dev/flourish-goal"
TARGET_ANNOTATION = "harmonic.dev/flourish-target"


class FeedbackSpecError(ValueError):
    """A flourish annotation that cannot be used; the message names the object and annotation."""


@dataclass(frozen=True, slots=True)
class FlourishSpec:
    query: str
    goal: Goal = "minimize"
    target: float | None = None

    def violates(self, value: float) -> bool:
        if self.target is None:
            return False
        return value > self.target if self.goal == "minimize" else value < self.target


def spec_from_annotations(obj: str, annotations: Mapping[str, str]) -> FlourishSpec | None:
    """The flourish spec a pod template's annotations declare (None without a query)."""
    query = (annotations.get(QUERY_ANNOTATION) or "").strip()
    if not query:
        return None
    goal = annotations.get(GOAL_ANNOTATION, "minimize").strip()
    if goal not in GOALS:
        raise FeedbackSpecError(
            f"{obj}: metadata.annotations[{GOAL_ANNOTATION}]: must be one of {', '.join(GOALS)}, got {goal!r}"
        )
    target: float | None = None
    raw = annotations.get(TARGET_ANNOTATION)
    if raw is not None:
        try:
            target = check_value(raw.strip())
        except BadValue as e:
            raise FeedbackSpecError(f"{obj}: metadata.annotations[{TARGET_ANNOTATION}]: {e}") from None
    return FlourishSpec(query, "maximize" if goal == "maximize" else "minimize", target)


@dataclass(frozen=True, slots=True)
class Report:
    """One value: of a pod (``pod`` set) or of a whole workload (``workload`` set)."""

    namespace: str
    value: float
    pod: str = ""
    workload: str = ""


@dataclass
class FlourishSource:
    """Runs flourish queries against one Prometheus server."""

    url: str
    timeout: float = 5.0
    headers: Mapping[str, str] = field(default_factory=dict)
    name: str = "prometheus/flourish"
    #: How requests reach the server (default: the network); the simulator answers them itself.
    transport: httpx.BaseTransport | None = None
    #: The query deadline and body limit (default: the process's, ``QueryLimits.from_env``).
    limits: QueryLimits | None = None

    def __post_init__(self) -> None:
        self._client = PrometheusClient(self.url, self.timeout, self.headers, self.transport, self.limits)
        #: Per query, reads in a row that gave no signal.
        self._silent: dict[str, int] = {}

    def close(self) -> None:
        self._client.close()

    def read(self, query: str) -> list[Report] | str:
        """The reports the query returns, or why there is no signal."""
        result = self._client.query(query)
        if isinstance(result, str):
            return self._fail(query, result)
        out: list[Report] = []
        skipped: list[str] = []
        for s in result:
            metric = s.get("metric") or {}
            ns, pod, wl = (str(metric.get(k, "")) for k in ("namespace", "pod", "workload"))
            if not ns or not (pod or wl):
                skipped.append(f"no namespace and pod/workload labels in {metric}")
                continue
            try:
                v = check_value(series_value(s))
            except BadValue as e:
                skipped.append(f"value of {metric}: {e}")
                continue
            out.append(Report(ns, v, pod, "" if pod else wl))
        if skipped:
            TELEMETRY_SKIPPED_SERIES.labels(self.name).inc(len(skipped))
            log.warning("%s: skipped %d series, e.g. %s", self.name, len(skipped), skipped[0])
        if not out:
            return self._fail(query, EMPTY if not skipped else f"no usable series ({len(skipped)} skipped)")
        self._silent.pop(query, None)
        count_signal(self.name)
        return out

    def _fail(self, query: str, reason: str) -> str:
        streak = self._silent[query] = self._silent.get(query, 0) + 1
        count_no_signal(self.name, reason, streak, empty=reason == EMPTY)
        return reason
