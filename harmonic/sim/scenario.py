"""The scenario file: its model (pydantic, camelCase keys, unknown keys refused) and its loading.

A scenario names a cluster (node pools and/or Node manifests), workloads (Kubernetes manifests,
application topologies, synthetic arrivals, an Alibaba trace) and events over virtual time. The JSON
Schema in ``harmonic/data/schemas/scenario.schema.json`` is generated from these models
(``python -m harmonic.sim.scenario`` prints it) and documented in ``docs/simulator.md``.

Every error names the file and the path inside it (``scenario.yaml: workloads[2].userRate: ...``).
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue

from harmonic import safeyaml
from harmonic.framework.config import parse_duration
from harmonic.signals.feedback.learning import LearningConfig
from harmonic.signals.static import MAX_USER_RATE
from harmonic.sim.errors import ScenarioError
from harmonic.sim.truth.config import GroundTruth, Routing
from harmonic.sim.truth.interference import workload_matches

API_VERSION = "harmonic.dev/v1alpha1"
KIND = "Scenario"
_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


def _seconds(v: Any) -> float:
    if isinstance(v, bool):
        raise ValueError("must be a duration (seconds, or a string like 90s, 10m, 1h30m)")
    if isinstance(v, int | float):
        if v < 0 or not math.isfinite(v):
            raise ValueError("must be a finite number of seconds >= 0")
        return float(v)
    if isinstance(v, str):
        return parse_duration(v)
    raise ValueError("must be a duration (seconds, or a string like 90s, 10m, 1h30m)")


_SECONDS_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "number", "minimum": 0},
        {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"},
    ],
    "description": "seconds, or a duration string such as 90s, 10m, 1h30m",
}

#: A time span: seconds as a number, or a Go duration string (``90s``, ``10m``, ``1h30m``).
Seconds = Annotated[
    float,
    BeforeValidator(_seconds),
    WithJsonSchema(_SECONDS_SCHEMA),
]


class _M(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True, allow_inf_nan=False
    )


class Distribution(_M):
    """A random duration: ``fixed`` (value), ``exponential`` (mean), ``uniform`` (min, max) or
    ``lognormal`` (median, sigma: the standard deviation of the underlying normal)."""

    distribution: Literal["fixed", "exponential", "uniform", "lognormal"]
    value: Seconds | None = None
    mean: Seconds | None = None
    min: Seconds | None = None
    max: Seconds | None = None
    median: Seconds | None = None
    sigma: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _fields(self) -> Distribution:
        need = {
            "fixed": ("value",),
            "exponential": ("mean",),
            "uniform": ("min", "max"),
            "lognormal": ("median", "sigma"),
        }[self.distribution]
        for name in ("value", "mean", "min", "max", "median", "sigma"):
            given = getattr(self, name) is not None
            if name in need and not given:
                raise ValueError(f"a {self.distribution} distribution needs {name!r}")
            if name not in need and given:
                raise ValueError(f"{name!r} is not a parameter of a {self.distribution} distribution")
        if (
            self.distribution == "uniform"
            and self.min is not None
            and self.max is not None
            and self.max < self.min
        ):
            raise ValueError("uniform: max must be >= min")
        return self

    def sample(self, rng: random.Random) -> float:
        if self.distribution == "fixed":
            assert self.value is not None
            return self.value
        if self.distribution == "exponential":
            assert self.mean is not None
            return rng.expovariate(1.0 / self.mean) if self.mean > 0 else 0.0
        if self.distribution == "uniform":
            assert self.min is not None and self.max is not None
            return rng.uniform(self.min, self.max)
        assert self.median is not None and self.sigma is not None
        return self.median * math.exp(rng.gauss(0.0, self.sigma))


def _duration_spec(v: Any) -> Any:
    if isinstance(v, Mapping | Distribution):
        return v
    return {"distribution": "fixed", "value": v}


class _OrSeconds:
    """JSON Schema of a field that takes a duration or a ``Distribution``."""

    def __get_pydantic_json_schema__(self, core: Any, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {"anyOf": [dict(_SECONDS_SCHEMA), handler(core)]}


#: A fixed duration (seconds or a duration string) or a ``Distribution`` object.
DurationSpec = Annotated[Distribution, BeforeValidator(_duration_spec), _OrSeconds()]


class NetworkModel(_M):
    """Added round-trip latency of one call by where its two ends run (see docs/simulator.md)."""

    same_node_ms: float = Field(default=0.0, ge=0)
    cross_node_ms: float = Field(default=0.2, ge=0)
    cross_zone_ms: float = Field(default=1.0, ge=0)


class TaintSpec(_M):
    key: str = Field(min_length=1)
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class NodePool(_M):
    """``count`` identical nodes named ``<name>-<i>``, spread round-robin over ``zones``."""

    name: str = Field(pattern=_DNS_LABEL, max_length=50)
    count: int = Field(ge=0)
    allocatable: dict[str, str | int | float] = Field(min_length=1)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[TaintSpec] = Field(default_factory=list)
    zones: list[str] = Field(default_factory=list)
    region: str | None = None


class Cluster(_M):
    node_pools: list[NodePool] = Field(default_factory=list)
    #: Node manifests, inline.
    nodes: list[dict[str, Any]] = Field(default_factory=list)
    #: Files of Node manifests (multi-document YAML, JSON, or a ``kind: List`` as kubectl prints).
    node_files: list[str] = Field(default_factory=list)


class ManifestsWorkload(_M):
    """Kubernetes objects from files and/or inline, created at ``at``."""

    type: Literal["manifests"]
    files: list[str] = Field(default_factory=list)
    objects: list[dict[str, Any]] = Field(default_factory=list)
    namespace: str = Field(default="default", pattern=_DNS_LABEL)
    at: Seconds = 0.0
    #: How long each pod of a Pod or Job runs before it succeeds.
    duration: DurationSpec | None = None
    #: Delete the objects (and so their pods) this long after they were created.
    lifetime: Seconds | None = None
    #: Pods already running when the objects are created (as ``harmonic snapshot`` writes them): for a
    #: Deployment, ReplicaSet, StatefulSet or Job of ``objects`` (``Kind/namespace/name``), the nodes its
    #: first pods are created bound to, in creation order (a StatefulSet's by ordinal from
    #: ``ordinals.start``); ``null``: that pod is created pending. Bare Pods use ``spec.nodeName``.
    placement: dict[str, list[str | None]] = Field(default_factory=dict)


class TopologyWorkload(_M):
    """An application topology (``online-boutique`` or a JSON file in that format)."""

    type: Literal["topology"]
    topology: str = Field(min_length=1)
    namespace: str | None = Field(default=None, pattern=_DNS_LABEL)
    #: User actions per second; each edge carries ``weight * userRate`` requests per second.
    user_rate: float = Field(gt=0, le=MAX_USER_RATE)
    #: Replicas of every service (default: each service's own ``replicas``).
    replicas: int | None = Field(default=None, ge=1)
    at: Seconds = 0.0
    #: How its calls pick a replica of the callee (default: the scenario's ``routing``).
    routing: Routing | None = None


class ArrivalsWorkload(_M):
    """Copies of ``template`` arriving as a Poisson process or at the times of a CSV trace."""

    type: Literal["arrivals"]
    name: str = Field(pattern=_DNS_LABEL, max_length=40)
    namespace: str = Field(default="default", pattern=_DNS_LABEL)
    template: dict[str, Any]
    process: Literal["poisson", "trace"] = "poisson"
    #: Mean arrivals per second (poisson).
    rate: float | None = Field(default=None, gt=0)
    start: Seconds = 0.0
    end: Seconds | None = None
    count: int | None = Field(default=None, ge=0)
    #: CSV with a header: ``time`` (seconds), optional ``duration`` (seconds), ``cpu``, ``memory``.
    trace: str | None = None
    duration: DurationSpec | None = None
    lifetime: Seconds | None = None

    @model_validator(mode="after")
    def _process(self) -> ArrivalsWorkload:
        if self.process == "poisson":
            if self.rate is None:
                raise ValueError("a poisson process needs 'rate' (arrivals per second)")
            if self.end is None and self.count is None:
                raise ValueError("a poisson process needs 'end' or 'count'")
            if self.trace is not None:
                raise ValueError("'trace' is for process: trace")
        else:
            if self.trace is None:
                raise ValueError("process: trace needs 'trace' (a CSV file)")
            if self.rate is not None:
                raise ValueError("'rate' is for process: poisson")
        return self


class AlibabaTraceWorkload(_M):
    """Alibaba cluster-trace-v2018 ``container_meta`` / ``batch_task`` CSV files (docs/simulator.md)."""

    type: Literal["alibabaTrace"]
    container_meta: str | None = None
    batch_task: str | None = None
    #: Memory that the trace's normalised 100 stands for (a quantity, e.g. 96Gi).
    memory_at100: str = Field(alias="memoryAt100")
    namespace: str = Field(default="alibaba", pattern=_DNS_LABEL)
    #: Trace seconds mapped to virtual time 0 (default: the earliest time in the files).
    trace_start: float | None = None
    #: Trace rows at or after this trace second are left out (counted in the metrics).
    trace_end: float | None = None
    #: Usage files (docs/load-aware.md): per-container utilisation, per-instance batch usage.
    container_usage: str | None = None
    batch_instance: str | None = None

    @model_validator(mode="after")
    def _files(self) -> AlibabaTraceWorkload:
        if self.container_meta is None and self.batch_task is None:
            raise ValueError("give containerMeta and/or batchTask")
        if self.container_usage is not None and self.container_meta is None:
            raise ValueError("containerUsage needs containerMeta (the containers it measures)")
        if self.batch_instance is not None and self.batch_task is None:
            raise ValueError("batchInstance needs batchTask (the tasks its instances belong to)")
        return self


Workload = Annotated[
    ManifestsWorkload | TopologyWorkload | ArrivalsWorkload | AlibabaTraceWorkload,
    Field(discriminator="type"),
]


class NodeAdded(_M):
    """New nodes: ``count`` more of a pool (names continue its numbering), or Node manifests."""

    type: Literal["nodeAdded"]
    at: Seconds
    pool: str | None = None
    count: int = Field(default=1, ge=1)
    nodes: list[dict[str, Any]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one(self) -> NodeAdded:
        if (self.pool is None) == (not self.nodes):
            raise ValueError("give either 'pool' (with 'count') or 'nodes'")
        return self


class NodeDrained(_M):
    """``kubectl drain``: cordon, then evict every pod but DaemonSet pods through the Eviction API."""

    type: Literal["nodeDrained"]
    at: Seconds
    node: str
    #: Give up on pods whose eviction is still refused (disruption budgets) after this long.
    timeout: Seconds = 300.0
    #: Also delete pods no controller manages (kubectl drain --force).
    force: bool = False


class NodeFailed(_M):
    """The node stops responding: it turns NotReady and is tainted ``unreachable``; pods that do not
    tolerate the NoExecute taint are evicted when their toleration runs out."""

    type: Literal["nodeFailed"]
    at: Seconds
    node: str


class DeploymentScaled(_M):
    type: Literal["deploymentScaled"]
    at: Seconds
    kind: Literal["Deployment", "ReplicaSet", "StatefulSet"] = "Deployment"
    namespace: str = "default"
    name: str
    replicas: int = Field(ge=0)


class PodsDeleted(_M):
    """Delete pods by name and/or label selector (``count`` of them, chosen at random by the seed)."""

    type: Literal["podsDeleted"]
    at: Seconds
    namespace: str = "default"
    names: list[str] = Field(default_factory=list)
    selector: dict[str, Any] | None = None
    count: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _what(self) -> PodsDeleted:
        if not self.names and self.selector is None:
            raise ValueError("give 'names' and/or 'selector'")
        return self


class ZoneFailed(_M):
    """Every node of ``zone`` fails at once (as ``nodeFailed`` does for one node)."""

    type: Literal["zoneFailed"]
    at: Seconds
    zone: str = Field(min_length=1)


class ZoneRestored(_M):
    """The failed nodes of ``zone`` come back: Ready again, the ``unreachable`` taints removed."""

    type: Literal["zoneRestored"]
    at: Seconds
    zone: str = Field(min_length=1)


Event = Annotated[
    NodeAdded | NodeDrained | NodeFailed | DeploymentScaled | PodsDeleted | ZoneFailed | ZoneRestored,
    Field(discriminator="type"),
]


class MeshTelemetry(_M):
    """How the simulated service mesh reports the traffic the ground truth produced: Istio request
    counters read through the Prometheus source (``rate`` over ``window``), ``delay`` behind the world,
    with relative noise ``noise`` (default: the ground truth's ``measurementNoise``). ``seedTopology``
    also hands CommunicationAffinity every topology edge before any pod runs: perfect foresight, for
    runs labelled as seeded."""

    delay: Seconds = 30.0
    window: Seconds = 300.0
    noise: float | None = Field(default=None, ge=0, le=2)
    seed_topology: bool = False

    @model_validator(mode="after")
    def _window(self) -> MeshTelemetry:
        if self.window < 1:
            raise ValueError("window must be at least 1s")
        return self


class ReschedulerSpec(_M):
    """``rescheduler:``: run ``harmonic reschedule`` inside the simulation, under every profile."""

    #: A descheduler/v1alpha2 DeschedulerPolicy file, relative to the scenario.
    policy: str = Field(min_length=1)
    interval: Seconds = 120.0
    #: Global eviction rate per run (``--max-evictions-per-run``); unset: only the policy's limits.
    max_evictions_per_run: int | None = Field(default=None, ge=0)
    cooldown: Seconds = 600.0


class Limits(_M):
    """Bounds on what a scenario may ask for, checked when it is loaded (before anything is generated)
    so a typo such as ``replicas: 10000000`` fails at once with the count instead of exhausting memory.
    The defaults are Kubernetes' own scalability thresholds (5,000 nodes, 150,000 pods); raise them
    here to simulate more."""

    #: Nodes at their most: the cluster's plus every nodeAdded event's.
    max_nodes: int = Field(default=5000, ge=1)
    #: Pods the workloads ask for: each object at its largest size (replicas, a Job's parallelism, one
    #: per node for a DaemonSet), summed over every object the scenario creates.
    max_pods: int = Field(default=150_000, ge=1)
    #: Metric samples: the simulated time over ``sampleInterval``.
    max_samples: int = Field(default=100_000, ge=1)


class RightSizingSpec(_M):
    """``feedback.rightsizing``: the loop right-sizes the workloads whose pods carry an SLO
    (``harmonic.dev/flourish-target``) every ``interval`` (docs/feedback.md, "Right-sizing"). Pods
    annotated ``harmonic.dev/resize: auto`` are resized in place; the others get recommendations.
    ``recommender: vpa`` runs the VPA-style baseline (usage P90 + 15%) instead, with the same
    guardrails. The simulated applications' cost grows as a pod's CPU use nears its request (a
    queue: docs/feedback.md), which requires ``usage:``."""

    interval: Seconds = 300.0
    recommender: Literal["harmonic", "vpa"] = "harmonic"
    #: The right-sizer's guardrails (``RightSizingArgs``: minCpu, maxStepDown, cooldownSeconds, ...).
    args: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _args(self) -> RightSizingSpec:
        from harmonic.feedback.rightsizing import RightSizingArgs

        if self.interval < 1:
            raise ValueError("interval must be at least 1s")
        RightSizingArgs.model_validate(self.args)  # raises naming the field
        return self


class FeedbackMovesSpec(_M):
    """``feedback.moves``: carry the moves the loop asks for out through the rescheduler's evictor
    (docs/feedback.md, "Moves"): at most ``maxPerRound`` evictions a feedback round, none of a pod
    moved within ``cooldown``; each replacement is reserved the node the what-if chose for
    ``reservationSeconds`` (0: not reserved), as ``harmonic run --feedback-moves`` reserves it."""

    execute: bool = True
    max_per_round: int = Field(default=1, ge=1)
    cooldown: Seconds = 600.0
    reservation_seconds: Seconds = 60.0


class FeedbackSpec(_M):
    """``feedback:``: simulated applications report how they flourish and the feedback loop learns
    from it (docs/feedback.md). Every running pod but best-effort ones reports its cost — a topology
    service its mean call latency (ms), any other pod its seconds per unit of work (1 undisturbed) —
    the truth times (1 + its slowdown) with relative noise ``noise``, every ``interval``."""

    interval: Seconds = 60.0
    #: Relative noise of the reports (default: ``groundTruth.measurementNoise``).
    noise: float | None = Field(default=None, ge=0, le=2)
    #: The PromQL the simulated pods' ``harmonic.dev/flourish-query`` annotation names.
    query: str = Field(default="app_flourish_cost", min_length=1)
    #: Each application's SLO: this many times its undisturbed cost.
    slo_factor: float = Field(default=1.5, gt=1)
    #: Profiles whose Dissonance reads the learned model (default: every profile enabling Dissonance);
    #: the others only observe, as a baseline.
    learn: list[str] | None = None
    #: The learner's relative noise of one report, and the prior's spread (docs/feedback.md); the
    #: defaults are the live loop's.
    observation_noise: float = Field(default=LearningConfig.observation_noise, gt=0)
    prior_spread: float = Field(default=LearningConfig.prior_spread, ge=0)
    prior_floor: float = Field(default=LearningConfig.prior_floor, gt=0)
    sensitivity_spread: float = Field(default=LearningConfig.sensitivity_spread, ge=0)
    rightsizing: RightSizingSpec | None = None
    moves: FeedbackMovesSpec | None = None

    @model_validator(mode="after")
    def _interval(self) -> FeedbackSpec:
        if self.interval < 1:
            raise ValueError("interval must be at least 1s")
        return self


# --------------------------------------------------------------------------- usage (docs/load-aware.md)
#: Fields of a usage profile a ``usage.workloads`` entry may override.
USAGE_PROFILE_FIELDS = (
    "cpu",
    "memory",
    "amplitude",
    "memory_amplitude",
    "period",
    "phase",
    "noise",
    "burst_probability",
    "burst_factor",
    "network",
    "disk",
)


class UsageProfile(_M):
    """What a pod really uses, relative to its requests. CPU demand at time ``t`` is
    ``request * cpu * (1 + amplitude * sin(2 pi (t + phase) / period)) * (1 + noise * z)``, times
    ``burstFactor`` in a burst (probability ``burstProbability`` per tick); memory likewise with
    ``memory`` and ``memoryAmplitude``."""

    #: Mean CPU use as a fraction of the CPU request (Borg and Alibaba 2018: 0.2-0.4 for services).
    cpu: float = Field(default=0.35, ge=0, le=20)
    #: Mean memory use as a fraction of the memory request.
    memory: float = Field(default=0.6, ge=0, le=20)
    #: Relative amplitude of the periodic (diurnal) CPU swing.
    amplitude: float = Field(default=0.5, ge=0, le=1)
    memory_amplitude: float = Field(default=0.1, ge=0, le=1)
    period: Seconds = 86400.0
    phase: Seconds = 0.0
    #: Relative standard deviation of the per-tick noise.
    noise: float = Field(default=0.1, ge=0, le=2)
    burst_probability: float = Field(default=0.0, ge=0, le=1)
    burst_factor: float = Field(default=2.0, ge=1, le=20)
    #: Mean network / disk use as a fraction of the bandwidth the pod declares (NodeBandwidth's
    #: request or annotation); topology services use what their traffic carries instead.
    network: float = Field(default=1.0, ge=0, le=20)
    disk: float = Field(default=1.0, ge=0, le=20)


class WorkloadUsage(_M):
    """One workload's profile: the fields given override ``default``."""

    workload: str = Field(min_length=3)
    cpu: float | None = Field(default=None, ge=0, le=20)
    memory: float | None = Field(default=None, ge=0, le=20)
    amplitude: float | None = Field(default=None, ge=0, le=1)
    memory_amplitude: float | None = Field(default=None, ge=0, le=1)
    period: Seconds | None = None
    phase: Seconds | None = None
    noise: float | None = Field(default=None, ge=0, le=2)
    burst_probability: float | None = Field(default=None, ge=0, le=1)
    burst_factor: float | None = Field(default=None, ge=1, le=20)
    network: float | None = Field(default=None, ge=0, le=20)
    disk: float | None = Field(default=None, ge=0, le=20)

    def over(self, base: UsageProfile) -> UsageProfile:
        changes: dict[str, Any] = {
            f: getattr(self, f) for f in USAGE_PROFILE_FIELDS if getattr(self, f) is not None
        }
        return base.model_copy(update=changes)


class BandwidthSpec(_M):
    """``usage.bandwidth``: what topology traffic weighs on NICs (docs/load-aware.md)."""

    #: Bytes one call moves (request and response) on a topology edge that gives no ``bytes``.
    bytes_per_call: float = Field(default=16384.0, gt=0, le=1e9)
    #: Topology pods declare their share of their service's traffic as the annotation
    #: ``harmonic.dev/network-bandwidth`` (every call counted as crossing the NIC).
    declare: bool = True


class UsageSpec(_M):
    """``usage:`` of a scenario (docs/load-aware.md)."""

    #: How often the world recomputes usage (default: the scenario's sampleInterval).
    interval: Seconds | None = None
    default: UsageProfile = Field(default_factory=UsageProfile)
    workloads: list[WorkloadUsage] = Field(default_factory=list)
    #: A node is hot while its actual CPU use exceeds this share of its allocatable CPU.
    hot_threshold: float = Field(default=0.8, gt=0, le=1)
    #: Kubelet evicts pods when a node's memory use exceeds its allocatable memory.
    evictions: bool = True
    #: How the simulated node-exporter/cAdvisor/metrics-server report: reporting delay and noise.
    exporter_delay: Seconds = 60.0
    exporter_noise: float = Field(default=0.02, ge=0, le=1)
    bandwidth: BandwidthSpec = Field(default_factory=BandwidthSpec)

    def profile_for(self, workload: str) -> UsageProfile:
        """The first ``workloads`` rule matching ``workload`` (``Kind/namespace/name``) over ``default``."""
        rule = next((r for r in self.workloads if workload_matches(r.workload, workload)), None)
        return rule.over(self.default) if rule is not None else self.default


class Scenario(_M):
    api_version: Literal["harmonic.dev/v1alpha1"]
    kind: Literal["Scenario"]
    name: str = Field(min_length=1)
    description: str = ""
    seed: int = 0
    #: Virtual time to simulate; without it the run ends when nothing more can happen.
    duration: Seconds | None = None
    #: Period of the samples behind time-averaged metrics and plots.
    sample_interval: Seconds = 60.0
    network: NetworkModel = Field(default_factory=NetworkModel)
    #: How calls between topology services pick a replica (each topology workload may override it).
    routing: Routing = "random"
    #: The world's real interference, service times and measurement noise (docs/simulator.md).
    ground_truth: GroundTruth = Field(default_factory=GroundTruth)
    #: How the simulated mesh reports traffic to CommunicationAffinity.
    mesh: MeshTelemetry = Field(default_factory=MeshTelemetry)
    cluster: Cluster
    workloads: list[Workload] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    rescheduler: ReschedulerSpec | None = None
    limits: Limits = Field(default_factory=Limits)
    feedback: FeedbackSpec | None = None
    #: What pods really use (docs/load-aware.md); without it the world has no usage.
    usage: UsageSpec | None = None

    @model_validator(mode="after")
    def _positive(self) -> Scenario:
        if self.sample_interval <= 0:
            raise ValueError("sampleInterval must be > 0")
        if self.duration is not None and self.duration / self.sample_interval > self.limits.max_samples:
            raise ValueError(
                f"duration / sampleInterval is {self.duration / self.sample_interval:.0f} samples, more "
                f"than limits.maxSamples ({self.limits.max_samples}); raise sampleInterval or the limit"
            )
        if self.feedback is not None and self.duration is None:
            raise ValueError("feedback needs a duration: the loop reports until the run ends")
        if self.feedback is not None and self.feedback.rightsizing is not None and self.usage is None:
            raise ValueError("feedback.rightsizing needs usage: pods' CPU use decides their queueing")
        if self.usage is not None and self.duration is None:
            raise ValueError(
                "usage needs a duration (usage keeps changing, so the run never runs out of events)"
            )
        return self


# --------------------------------------------------------------------------- loading
def _loc(data: Any, loc: Sequence[int | str]) -> str:
    """The error's path in the user's document: union member names and tags pydantic inserts into
    ``loc`` are dropped by walking the input alongside."""
    out = ""
    cur: Any = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if i and isinstance(loc[i - 1], int) and isinstance(cur, Mapping) and cur.get("type") == part:
            continue  # the tag of a discriminated union
        if isinstance(part, int):
            out += f"[{part}]"
            cur = cur[part] if isinstance(cur, list) and part < len(cur) else None
            continue
        if isinstance(cur, Mapping) and part in cur:
            out += ("." if out else "") + part
            cur = cur[part]
        elif (cur is None or (last and isinstance(cur, Mapping))) and not any(c in part for c in "[("):
            out += ("." if out else "") + part
            cur = None
    return out


def validation_error(source: str, data: Any, e: ValidationError, prefix: str = "") -> ScenarioError:
    first = e.errors()[0]
    path = _loc(data, first["loc"])
    if prefix:
        path = f"{prefix}.{path}" if path and not path.startswith("[") else prefix + path
    msg = str(first["msg"])
    if first["type"] == "extra_forbidden":
        msg = "unknown field"
    msg = msg.removeprefix("Value error, ")
    more = f" (and {len(e.errors()) - 1} more)" if len(e.errors()) > 1 else ""
    return ScenarioError(source, path, msg + more)


def parse_scenario(data: Any, source: str) -> Scenario:
    if not isinstance(data, Mapping):
        raise ScenarioError(source, "", "expected a Scenario object (apiVersion, kind, cluster, ...)")
    if data.get("apiVersion") != API_VERSION:
        raise ScenarioError(source, "apiVersion", f"expected {API_VERSION}, got {data.get('apiVersion')!r}")
    if data.get("kind") != KIND:
        raise ScenarioError(source, "kind", f"expected {KIND}, got {data.get('kind')!r}")
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise validation_error(source, data, e) from None


def read_yaml(path: Path, what: str = "file") -> Any:
    try:
        text = path.read_text()
    except OSError as e:
        raise ScenarioError(str(path), "", f"cannot read {what}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ScenarioError(str(path), "", f"cannot read {what}: not UTF-8 text (byte {e.start})") from None
    try:
        return safeyaml.load(text)
    except yaml.YAMLError as e:
        raise ScenarioError(str(path), "", f"not valid YAML: {safeyaml.problem(e)}") from None


def load_scenario_file(path: str | Path) -> Scenario:
    p = Path(path)
    return parse_scenario(read_yaml(p, "scenario"), str(p))


def json_schema() -> dict[str, Any]:
    schema = Scenario.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Harmonic simulator scenario"
    return schema


if __name__ == "__main__":
    json.dump(json_schema(), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
