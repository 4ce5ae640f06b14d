"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): load, default, validate, expand.

The result is what the scheduler needs per profile: for each extension point, the ordered plugin names
after kube-scheduler's defaulting (default plugins merged with the user's sets, ``"*"`` disables) and
MultiPoint expansion, the Score weights, and each plugin's validated args. Errors name the file and
the field path, e.g. ``sched.yaml: profiles[0].plugins.score.enabled[1]: unknown plugin 'Foo'``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from harmonic.framework.args import PluginArgs
from harmonic.framework.interface import EXTENSION_POINTS, MAX_NODE_SCORE, Plugin
from harmonic.framework.registry import Registry, args_model

log = logging.getLogger(__name__)

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
MAX_TOTAL_SCORE = 2**63 - 1

#: kube-scheduler's default profile (apis/config/v1/default_plugins.go), as MultiPoint with weights.
#: Plugins Harmonic does not implement yet are absent; see ``DEFAULT_PLUGINS_NOT_IMPLEMENTED``.
DEFAULT_MULTIPOINT: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
)


class ConfigError(ValueError):
    """An invalid configuration; the message names the source and field."""


# --------------------------------------------------------------------------- v1 document shape
class _V1(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class PluginRef(_V1):
    name: str = Field(min_length=1)
    weight: int | None = Field(default=None, ge=0)


class PluginSet(_V1):
    enabled: list[PluginRef] = Field(default_factory=list)
    disabled: list[PluginRef] = Field(default_factory=list)


class Plugins(_V1):
    pre_enqueue: PluginSet = Field(default_factory=PluginSet)
    queue_sort: PluginSet = Field(default_factory=PluginSet)
    pre_filter: PluginSet = Field(default_factory=PluginSet)
    filter: PluginSet = Field(default_factory=PluginSet)
    post_filter: PluginSet = Field(default_factory=PluginSet)
    pre_score: PluginSet = Field(default_factory=PluginSet)
    score: PluginSet = Field(default_factory=PluginSet)
    reserve: PluginSet = Field(default_factory=PluginSet)
    permit: PluginSet = Field(default_factory=PluginSet)
    pre_bind: PluginSet = Field(default_factory=PluginSet)
    bind: PluginSet = Field(default_factory=PluginSet)
    post_bind: PluginSet = Field(default_factory=PluginSet)
    multi_point: PluginSet = Field(default_factory=PluginSet)


class PluginConfigEntry(_V1):
    name: str = Field(min_length=1)
    args: dict[str, Any] | None = None


class ProfileV1(_V1):
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    percentage_of_nodes_to_score: int | None = Field(default=None, ge=0, le=100)
    plugins: Plugins | None = None
    plugin_config: list[PluginConfigEntry] = Field(default_factory=list)


class LeaderElectionV1(_V1):
    leader_elect: bool = True
    lease_duration: str = "15s"
    renew_deadline: str = "10s"
    retry_period: str = "2s"
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


class ClientConnectionV1(_V1):
    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/vnd.kubernetes.protobuf"
    qps: float = 50
    burst: int = 100


class KubeSchedulerConfigurationV1(_V1):
    api_version: str = API_VERSION
    kind: str = KIND
    parallelism: int = Field(default=16, gt=0)
    leader_election: LeaderElectionV1 = Field(default_factory=LeaderElectionV1)
    client_connection: ClientConnectionV1 = Field(default_factory=ClientConnectionV1)
    healthz_bind_address: str | None = None
    metrics_bind_address: str | None = None
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    percentage_of_nodes_to_score: int | None = Field(default=None, ge=0, le=100)
    pod_initial_backoff_seconds: int = Field(default=1, gt=0)
    pod_max_backoff_seconds: int = Field(default=10, gt=0)
    profiles: list[ProfileV1] | None = None
    extenders: list[dict[str, Any]] = Field(default_factory=list)
    delay_cache_until_active: bool = False


# --------------------------------------------------------------------------- resolved form
@dataclass(frozen=True)
class LeaderElection:
    leader_elect: bool
    lease_duration: float
    renew_deadline: float
    retry_period: float
    resource_name: str
    resource_namespace: str


@dataclass(frozen=True)
class ClientConnection:
    """clientConnection: how the live scheduler talks to the API server (bodies are always JSON)."""

    kubeconfig: str = ""
    qps: float = 50.0
    burst: int = 100


@dataclass(frozen=True)
class Profile:
    """One resolved profile: plugins per extension point in run order, weights, validated args."""

    scheduler_name: str
    points: Mapping[str, tuple[str, ...]]
    weights: Mapping[str, int]
    args: Mapping[str, PluginArgs]
    percentage_of_nodes_to_score: int | None

    def plugins_at(self, point: str) -> tuple[str, ...]:
        return self.points.get(point, ())

    @property
    def plugin_names(self) -> list[str]:
        seen: dict[str, None] = {}
        for names in self.points.values():
            for n in names:
                seen.setdefault(n)
        return list(seen)


@dataclass(frozen=True)
class SchedulerConfiguration:
    profiles: tuple[Profile, ...]
    percentage_of_nodes_to_score: int
    pod_initial_backoff_seconds: float
    pod_max_backoff_seconds: float
    parallelism: int
    leader_election: LeaderElection
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    source: str = "<default>"
    warnings: tuple[str, ...] = field(default=())

    def profile(self, scheduler_name: str) -> Profile:
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        raise KeyError(scheduler_name)


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """A Go ``time.Duration`` string (``15s``, ``1m30s``, ``250ms``) in seconds."""
    s = text.strip()
    if s in ("0", ""):
        return 0.0
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    if pos != len(s) or pos == 0:
        raise ValueError(f"{text!r} is not a duration (e.g. 15s, 1m30s, 250ms)")
    return total


def _loc(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _pydantic_error(source: str, e: ValidationError, prefix: str = "") -> ConfigError:
    first = e.errors()[0]
    where = _loc(first["loc"])
    path = f"{prefix}.{where}" if prefix and where else (prefix or where)
    msg = first["msg"]
    if first["type"] == "extra_forbidden":
        msg = "unknown field"
    more = f" (and {len(e.errors()) - 1} more)" if len(e.errors()) > 1 else ""
    return ConfigError(f"{source}: {path}: {msg}{more}")


def _merge_set(default: list[PluginRef], custom: PluginSet) -> tuple[list[PluginRef], set[str]]:
    """mergePluginSet: defaults minus disabled ("*" = all), overridden in place, then custom additions."""
    disabled = {p.name for p in custom.disabled}
    custom_by_name = {p.name: i for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled:
        for p in default:
            if p.name in disabled:
                continue
            if p.name in custom_by_name:
                idx = custom_by_name[p.name]
                p = custom.enabled[idx]
                replaced.add(idx)
            enabled.append(p)
    enabled += [p for i, p in enumerate(custom.enabled) if i not in replaced]
    return enabled, disabled


def _implements(plugin: type[Plugin], point: str) -> bool:
    return issubclass(plugin, EXTENSION_POINTS[point])


def resolve_profile(
    source: str, index: int, prof: ProfileV1, registry: Registry, warnings: list[str]
) -> Profile:
    where = f"{source}: profiles[{index}]"
    plugins = prof.plugins or Plugins()
    default_mp = [PluginRef(name=n, weight=w or None) for n, w in DEFAULT_MULTIPOINT if n in registry]
    multipoint, _ = _merge_set(default_mp, plugins.multi_point)

    def check_known(name: str, path: str) -> type[Plugin]:
        if name not in registry:
            known = ", ".join(sorted(registry))
            raise ConfigError(f"{where}.plugins.{path}: unknown plugin {name!r} (known plugins: {known})")
        return registry[name]

    for i, p in enumerate(multipoint):
        check_known(p.name, f"multiPoint.enabled[{i}]")

    points: dict[str, tuple[str, ...]] = {}
    specific: dict[str, list[PluginRef]] = {}
    for point in EXTENSION_POINTS:
        pset: PluginSet = getattr(plugins, _snake(point))
        enabled = list(pset.enabled)
        disabled = {p.name for p in pset.disabled}
        seen: set[str] = set()
        for i, p in enumerate(enabled):
            cls = check_known(p.name, f"{point}.enabled[{i}]")
            if not _implements(cls, point):
                raise ConfigError(
                    f"{where}.plugins.{point}.enabled[{i}]: plugin {p.name!r} does not extend {point}"
                )
            if p.name in seen:
                raise ConfigError(f"{where}.plugins.{point}.enabled[{i}]: plugin {p.name!r} is enabled twice")
            seen.add(p.name)
            if p.weight is not None and point != "score":
                raise ConfigError(
                    f"{where}.plugins.{point}.enabled[{i}].weight: weights apply to score plugins only"
                )
        specific[point] = enabled
        if "*" in disabled:
            points[point] = tuple(p.name for p in enabled)
            continue
        explicit = [p.name for p in enabled]
        override: list[str] = []
        from_multi: list[str] = []
        for p in multipoint:
            cls = registry[p.name]
            if not _implements(cls, point) or p.name in disabled:
                continue
            if p.name in explicit:
                if p.name not in override:
                    override.append(p.name)
                continue
            if p.name in from_multi:
                raise ConfigError(f"{where}.plugins.multiPoint: plugin {p.name!r} is enabled twice")
            from_multi.append(p.name)
        rest = [n for n in explicit if n not in override]
        points[point] = tuple(override + from_multi + rest)

    weights: dict[str, int] = {}
    total = 0
    for p in [*specific["score"], *multipoint]:
        if p.name in weights or p.name not in points["score"]:
            continue
        w = p.weight or 1
        weights[p.name] = w
        total += w * MAX_NODE_SCORE
        if total > MAX_TOTAL_SCORE:
            raise ConfigError(f"{where}.plugins.score: total score of Score plugins could overflow")

    if len(points["queueSort"]) != 1:
        raise ConfigError(
            f"{where}.plugins.queueSort: exactly one queue sort plugin is required, got {list(points['queueSort'])}"
        )
    if not points["bind"]:
        raise ConfigError(f"{where}.plugins.bind: at least one bind plugin is required")

    used = {n for names in points.values() for n in names}
    configs: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(prof.plugin_config):
        if entry.name in configs:
            raise ConfigError(f"{where}.pluginConfig[{i}].name: repeated config for plugin {entry.name!r}")
        configs[entry.name] = dict(entry.args or {})
        if entry.name not in used:
            warnings.append(
                f"{where}.pluginConfig[{i}]: plugin {entry.name!r} is not enabled; its args are unused"
            )

    args: dict[str, PluginArgs] = {}
    for name in sorted(used):
        model = args_model(registry[name])
        raw = configs.get(name, {})
        idx = next((i for i, e in enumerate(prof.plugin_config) if e.name == name), None)
        path = (
            f"profiles[{index}].pluginConfig[{idx}].args"
            if idx is not None
            else f"profiles[{index}] {name} args"
        )
        kind = raw.pop("kind", None)
        raw.pop("apiVersion", None)
        if kind is not None and kind != f"{name}Args":
            raise ConfigError(f"{source}: {path}.kind: expected {name}Args, got {kind!r}")
        try:
            args[name] = model.model_validate(raw)
        except ValidationError as e:
            raise _pydantic_error(source, e, path) from None

    return Profile(
        scheduler_name=prof.scheduler_name,
        points=points,
        weights=weights,
        args=args,
        percentage_of_nodes_to_score=prof.percentage_of_nodes_to_score,
    )


def _snake(point: str) -> str:
    return re.sub(r"([A-Z])", r"_\1", point).lower()


def load_config(
    data: Mapping[str, Any] | None, registry: Registry, source: str = "<config>"
) -> SchedulerConfiguration:
    """Resolve a parsed KubeSchedulerConfiguration document (``None`` = all defaults)."""
    data = dict(data or {})
    if data.get("apiVersion", API_VERSION) != API_VERSION:
        raise ConfigError(f"{source}: apiVersion: expected {API_VERSION}, got {data.get('apiVersion')!r}")
    if data.get("kind", KIND) != KIND:
        raise ConfigError(f"{source}: kind: expected {KIND}, got {data.get('kind')!r}")
    try:
        doc = KubeSchedulerConfigurationV1.model_validate(data)
    except ValidationError as e:
        raise _pydantic_error(source, e) from None
    if doc.pod_max_backoff_seconds < doc.pod_initial_backoff_seconds:
        raise ConfigError(f"{source}: podMaxBackoffSeconds: must be >= podInitialBackoffSeconds")
    if doc.extenders:
        raise ConfigError(
            f"{source}: extenders: Harmonic does not call scheduler extenders; "
            "run Harmonic itself as the extender (harmonic extender) or remove this field"
        )
    le = doc.leader_election
    try:
        leader = LeaderElection(
            leader_elect=le.leader_elect,
            lease_duration=parse_duration(le.lease_duration),
            renew_deadline=parse_duration(le.renew_deadline),
            retry_period=parse_duration(le.retry_period),
            resource_name=le.resource_name,
            resource_namespace=le.resource_namespace,
        )
    except ValueError as e:
        raise ConfigError(f"{source}: leaderElection: {e}") from None
    if leader.leader_elect and not leader.lease_duration > leader.renew_deadline > leader.retry_period > 0:
        raise ConfigError(f"{source}: leaderElection: need leaseDuration > renewDeadline > retryPeriod > 0")
    if le.resource_lock != "leases":
        raise ConfigError(f"{source}: leaderElection.resourceLock: only 'leases' is supported")

    warnings: list[str] = []
    raw_profiles = doc.profiles if doc.profiles else [ProfileV1()]
    profiles = []
    names: set[str] = set()
    for i, p in enumerate(raw_profiles):
        if not p.scheduler_name:
            raise ConfigError(f"{source}: profiles[{i}].schedulerName: is required")
        if p.scheduler_name in names:
            raise ConfigError(
                f"{source}: profiles[{i}].schedulerName: duplicate profile {p.scheduler_name!r}"
            )
        names.add(p.scheduler_name)
        profiles.append(resolve_profile(source, i, p, registry, warnings))
    sorts = {p.plugins_at("queueSort") for p in profiles}
    if len(sorts) > 1:
        raise ConfigError(f"{source}: profiles: every profile must use the same queueSort plugin")
    for w in warnings:
        log.warning("%s", w)
    return SchedulerConfiguration(
        profiles=tuple(profiles),
        percentage_of_nodes_to_score=doc.percentage_of_nodes_to_score or 0,
        pod_initial_backoff_seconds=float(doc.pod_initial_backoff_seconds),
        pod_max_backoff_seconds=float(doc.pod_max_backoff_seconds),
        parallelism=doc.parallelism,
        leader_election=leader,
        client_connection=ClientConnection(
            kubeconfig=doc.client_connection.kubeconfig,
            qps=doc.client_connection.qps,
            burst=doc.client_connection.burst,
        ),
        source=source,
        warnings=tuple(warnings),
    )


def load_config_file(path: str | Path, registry: Registry) -> SchedulerConfiguration:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigError(f"{p}: cannot read: {e.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML: {e}") from None
    if data is not None and not isinstance(data, Mapping):
        raise ConfigError(f"{p}: expected a KubeSchedulerConfiguration object")
    return load_config(data, registry, source=str(p))
