"""The scenario blocks that configure the ground truth: ``groundTruth``, ``routing`` and ``mesh``.

Interference (docs/simulator.md, "Ground truth"): each workload class puts ``pressure`` on three shared
resources — CPU, memory bandwidth and I/O — per unit of the node's CPU it holds; each class has a
``sensitivity`` to each resource. A pod's slowdown on a node is

    slowdown = multiplier * sum_r sensitivity[class][r] * P_r * (1 + convexity * P_r)

with ``P_r`` the pressure its neighbours (not itself) put on resource ``r``: the sum over them of
``pressure[their class][r] * their CPU request / node allocatable CPU``. ``multiplier`` is the pod's
workload's own sensitivity: drawn once per workload from a lognormal of sigma
``workloadSensitivitySpread`` (the scenario's seed decides), or set in ``workloads``. Contention is
convex: a saturated memory bus hurts more than twice a half-saturated one.

Default numbers are read from published co-location measurements (see ``DEFAULT_PRESSURE``) and are
not the Dissonance plugin's: the truth has the resource decomposition, the convexity and per-workload
sensitivities the plugin's class matrix lacks.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

#: The truth's workload classes (the same names users see elsewhere; its own rules decide them).
TRUTH_CLASSES = ("latency-critical", "batch-cpu", "batch-memory", "batch-io", "best-effort", "general")
RESOURCES = ("cpu", "memoryBandwidth", "io")
Routing = Literal["random", "preferZone", "preferNode"]

#: Aggressor class -> pressure per unit of node CPU share it requests. Batch CPU work saturates cores
#: and hyperthreads; analytics saturates memory bandwidth and the LLC; ETL saturates disks and NICs
#: (Heracles, ISCA 2015; Bubble-Up, MICRO 2011; Paragon, ASPLOS 2013; CPI², EuroSys 2013). Pressure
#: follows use, not requests: batch tasks use about what they request, request-serving pods a fraction
#: of it (20-40% in Google's Borg and Alibaba's 2018 traces), hence their lower row.
DEFAULT_PRESSURE: dict[str, dict[str, float]] = {
    "latency-critical": {"cpu": 0.3, "memoryBandwidth": 0.15, "io": 0.05},
    "batch-cpu": {"cpu": 1.0, "memoryBandwidth": 0.35, "io": 0.05},
    "batch-memory": {"cpu": 0.6, "memoryBandwidth": 1.0, "io": 0.1},
    "batch-io": {"cpu": 0.3, "memoryBandwidth": 0.2, "io": 1.0},
    "best-effort": {"cpu": 0.6, "memoryBandwidth": 0.3, "io": 0.2},
    "general": {"cpu": 0.3, "memoryBandwidth": 0.2, "io": 0.1},
}
#: Victim class -> slowdown at full pressure on each resource. Request-serving tails are most
#: sensitive to memory bandwidth (several-fold at saturation in Heracles), then to CPU/hyperthread
#: sharing; batch throughput degrades mostly with the resource it is bound by.
DEFAULT_SENSITIVITY: dict[str, dict[str, float]] = {
    "latency-critical": {"cpu": 0.35, "memoryBandwidth": 0.9, "io": 0.25},
    "batch-cpu": {"cpu": 0.3, "memoryBandwidth": 0.25, "io": 0.05},
    "batch-memory": {"cpu": 0.2, "memoryBandwidth": 0.6, "io": 0.05},
    "batch-io": {"cpu": 0.05, "memoryBandwidth": 0.1, "io": 0.6},
    "best-effort": {"cpu": 0.0, "memoryBandwidth": 0.0, "io": 0.0},
    "general": {"cpu": 0.2, "memoryBandwidth": 0.3, "io": 0.2},
}


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)


class ResourceVector(_M):
    cpu: float = Field(default=0.0, ge=0)
    memory_bandwidth: float = Field(default=0.0, ge=0)
    io: float = Field(default=0.0, ge=0)

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.cpu, self.memory_bandwidth, self.io)


def _check_classes(v: dict[str, ResourceVector]) -> dict[str, ResourceVector]:
    for name in v:
        if name not in TRUTH_CLASSES:
            raise ValueError(f"unknown workload class {name!r}; one of {', '.join(TRUTH_CLASSES)}")
    return v


class WorkloadTruth(_M):
    """The truth about one workload, overriding what the truth's rules would infer."""

    #: ``namespace/name`` of a Deployment, StatefulSet, ReplicaSet, DaemonSet, Job or Pod (or
    #: ``Kind/namespace/name`` when names clash), or a topology's ``namespace/service``.
    workload: str = Field(min_length=3)
    #: Its real class (default: the truth's rules).
    class_: str | None = Field(default=None, alias="class")
    #: Its sensitivity multiplier (default: drawn from the seed).
    sensitivity: float | None = Field(default=None, ge=0)

    @field_validator("class_")
    @classmethod
    def _class(cls, v: str | None) -> str | None:
        if v is not None and v not in TRUTH_CLASSES:
            raise ValueError(f"unknown workload class {v!r}; one of {', '.join(TRUTH_CLASSES)}")
        return v


class GroundTruth(_M):
    """How the simulated world really behaves (the yardstick; no scheduler reads it)."""

    #: Aggressor class -> pressure per unit of node CPU (entries override ``DEFAULT_PRESSURE``).
    pressure: dict[str, ResourceVector] = Field(default_factory=dict)
    #: Victim class -> slowdown at full pressure (entries override ``DEFAULT_SENSITIVITY``).
    sensitivity: dict[str, ResourceVector] = Field(default_factory=dict)
    #: Extra slowdown per unit of squared pressure (0: linear contention).
    convexity: float = Field(default=1.0, ge=0)
    #: Sigma of the lognormal per-workload sensitivity multiplier (0: every workload exactly its class).
    workload_sensitivity_spread: float = Field(default=0.3, ge=0, le=3)
    workloads: list[WorkloadTruth] = Field(default_factory=list)
    #: Relative standard deviation of what the world reports about itself (mesh telemetry).
    measurement_noise: float = Field(default=0.1, ge=0, le=2)
    #: Service time of one call at an idle, undisturbed replica, for services that give none.
    service_time_ms: float = Field(default=2.0, gt=0)
    #: Sampled user requests per application per metrics sample (latency percentiles).
    requests_per_sample: int = Field(default=200, ge=10, le=100_000)

    @field_validator("pressure", "sensitivity")
    @classmethod
    def _classes(cls, v: dict[str, ResourceVector]) -> dict[str, ResourceVector]:
        return _check_classes(v)

    def pressure_of(self, cls: str) -> tuple[float, float, float]:
        given = self.pressure.get(cls)
        return given.as_tuple() if given is not None else _vec(DEFAULT_PRESSURE[cls])

    def sensitivity_of(self, cls: str) -> tuple[float, float, float]:
        given = self.sensitivity.get(cls)
        return given.as_tuple() if given is not None else _vec(DEFAULT_SENSITIVITY[cls])


def _vec(d: dict[str, float]) -> tuple[float, float, float]:
    return (d["cpu"], d["memoryBandwidth"], d["io"])
