"""Traffic samples and the interface every telemetry source implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from harmonic.signals.identity import WorkloadKey


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
