"""How fresh each signal is (mesh telemetry, usage, flourish reports), for ``/metrics`` and ``/readyz``.

Every source reports each read here: ``signal_ok`` when it gave a signal, ``signal_failed`` (through
``prometheus.count_no_signal``) when it did not. From that:

- ``/metrics``: ``harmonic_telemetry_last_success_timestamp_seconds{source}`` and
  ``harmonic_telemetry_age_seconds{source}`` (seconds since the last read that gave a signal, or since
  the first read when none has; computed at scrape time, so it grows even when the reads stop
  altogether, e.g. a refresher stuck on a server), beside ``harmonic_telemetry_up`` and
  ``harmonic_telemetry_failures_total``;
- ``/readyz?verbose``: one line per signal, ``ok`` or ``degraded`` with why and for how long.

A stale signal does not make the component unready. kube-scheduler's readiness covers what it cannot
schedule without (its informers, its lease), not its plugins' optional inputs, and a readiness probe
that follows an outside server would take every replica out of service together for something the
plugins already survive (they score without it and say so). So degraded signals are reported, never
failed: a readiness that flaps with Prometheus would be worse than none.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

#: A signal with no read that gave one for this long is degraded even if its last read did not fail
#: (its reads have stopped): ten refreshes at the graph's and the usage model's default 30 s.
STALE_AFTER_SECONDS = 300.0


@dataclass
class _State:
    first_read: float
    last_ok: float | None = None
    #: Why the last read gave no signal ("" when it gave one).
    last_failure: str = ""


class Freshness(Collector):
    """The signals' reads, by source; a Prometheus collector of their age."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._states: dict[str, _State] = {}

    def _state(self, source: str, now: float) -> _State:
        state = self._states.get(source)
        if state is None:
            state = self._states[source] = _State(first_read=now)
        return state

    def ok(self, source: str) -> None:
        now = self._clock()
        with self._lock:
            state = self._state(source, now)
            state.last_ok, state.last_failure = now, ""

    def failed(self, source: str, reason: str) -> None:
        with self._lock:
            self._state(source, self._clock()).last_failure = reason or "no signal"

    def notes(self) -> list[str]:
        """``/readyz?verbose`` lines, one per signal: ``[+]signal SOURCE ok`` or ``... degraded: why``
        (always ``[+]``: they never fail readiness)."""
        now = self._clock()
        out = []
        with self._lock:
            for source, state in sorted(self._states.items()):
                since = state.last_ok if state.last_ok is not None else state.first_read
                age = now - since
                if not state.last_failure and age <= STALE_AFTER_SECONDS:
                    out.append(f"[+]signal {source} ok")
                    continue
                what = "no signal yet" if state.last_ok is None else "no signal"
                why = state.last_failure or "no read completed"
                out.append(
                    f"[+]signal {source} degraded: {what} for {age:.0f}s ({why}); the plugins reading it "
                    "score without it, readiness does not depend on it"
                )
        return out

    def collect(self) -> Iterator[Metric]:
        now = self._clock()
        last = GaugeMetricFamily(
            "harmonic_telemetry_last_success_timestamp_seconds",
            "Unix time of the last read of a telemetry source that gave a signal.",
            labels=["source"],
        )
        age = GaugeMetricFamily(
            "harmonic_telemetry_age_seconds",
            "Seconds since a telemetry source last gave a signal (since its first read if it never has).",
            labels=["source"],
        )
        with self._lock:
            for source, state in sorted(self._states.items()):
                if state.last_ok is not None:
                    last.add_metric([source], state.last_ok)
                since = state.last_ok if state.last_ok is not None else state.first_read
                age.add_metric([source], max(0.0, now - since))
        yield last
        yield age
