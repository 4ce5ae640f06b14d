"""Traffic samples and the interface every telemetry source implements."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Protocol

from harmonic.signals.identity import WorkloadKey

#: The reason of a read whose query matched no series.
EMPTY = "empty result"


def no_signal_level(streak: int, empty: bool) -> int:
    """How loudly to log the ``streak``-th read in a row without a signal (``empty``: the query ran and
    matched nothing). An empty result is how a mesh or a fresh Prometheus answers before anything was
    scraped, so the first one is news (INFO) where any other failure warns at once. A lasting one warns
    at the 2nd, 4th, 8th... read in a row and is DEBUG between, so a source silent for hours does not
    flood the log (each read is still counted in ``harmonic_telemetry_failures_total``)."""
    if streak & (streak - 1):
        return logging.DEBUG
    return logging.INFO if streak == 1 and empty else logging.WARNING


@dataclass(frozen=True, slots=True)
class TrafficSample:
    """Traffic from one workload to another, as rates: requests/s and bytes/s (either may be 0)."""

    src: WorkloadKey
    dst: WorkloadKey
    requests: float = 0.0
    bytes: float = 0.0


@dataclass(frozen=True, slots=True)
class Reading:
    """What a source returned: samples, or no signal with the reason why (never an exception)."""

    samples: tuple[TrafficSample, ...] = ()
    ok: bool = True
    reason: str = ""
    #: Series the source skipped (odd labels, NaN values...), with why.
    skipped: tuple[str, ...] = field(default=())

    @classmethod
    def no_signal(cls, reason: str) -> Reading:
        return cls((), False, reason)


class TelemetrySource(Protocol):
    """A source of workload-to-workload traffic. ``read`` must not raise: failures are a Reading with
    ``ok=False`` so scheduling never stops because telemetry is missing."""

    name: str

    def read(self) -> Reading: ...
