"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): load, default, validate, expand.

The result is what the scheduler needs per profile: for each extension point, the ordered plugin names
after kube-scheduler's defaulting (default plugins merged with the user's sets, ``"*"`` disables) and
MultiPoint expansion, the Score weights, and each plugin's validated args. Each error is one line naming
the file and the field path, e.g. ``sched.yaml: profiles[0].plugins.score.enabled[1]: unknown plugin
"Foo" (known plugins: ...)``.

Faithful to apis/config/v1 (defaults, mergePluginSet, validation) and to frameworkImpl (plugin lists,
MultiPoint expansion, weights), with two deliberate differences: plugins of the default profile that
Harmonic does not implement are left out of it rather than failing, and a pluginConfig entry for a
plugin that is not registered is a warning (upstream ignores it silently).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from harmonic import safeyaml
from harmonic.framework.args import PluginArgs
from harmonic.framework.interface import EXTENSION_POINTS, MAX_NODE_SCORE, Plugin
from harmonic.framework.registry import Registry, args_model

log = logging.getLogger(__name__)

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
MAX_TOTAL_SCORE = 2**63 - 1

#: Plugins removed from kube-scheduler; naming one is an error (invalidPluginsByVersion).
INVALID_PLUGINS = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})

#: kube-scheduler's default profile (apis/config/v1/default_plugins.go), as MultiPoint with weights.
#: Plugins not in the registry (not implemented by Harmonic) are left out when the profile is resolved.
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
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, strict=True)


class PluginRef(_V1):
    name: str = Field(min_length=1)
    #: int32 in the API; 0 or unset means 1.
    weight: int | None = Field(default=None, ge=0, le=2**31 - 1)


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
    #: Defaults to "default-scheduler" only when it is the one profile (SetDefaults_KubeSchedulerConfiguration).
    scheduler_name: str | None = None
    percentage_of_nodes_to_score: int | None = None
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
    qps: float | int = 50
    burst: int = 100


class KubeSchedulerConfigurationV1(_V1):
    api_version: str = API_VERSION
    kind: str = KIND
    parallelism: int = 16
    leader_election: LeaderElectionV1 = Field(default_factory=LeaderElectionV1)
    client_connection: ClientConnectionV1 = Field(default_factory=ClientConnectionV1)
    healthz_bind_address: str | None = None
    metrics_bind_address: str | None = None
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    profiles: list[ProfileV1] | None = None
    extenders: list[dict[str, Any]] = Field(default_factory=list)
    delay_cache_until_active: bool = False


#: Upstream fields Harmonic accepts, so that an existing file loads, but does not act on: camelCase path,
#: how to read it from the parsed document, upstream's default, and why it has no effect. A value other
#: than the default is a warning naming the field (``SchedulerConfiguration.warnings``).
IGNORED_FIELDS: tuple[tuple[str, Callable[[KubeSchedulerConfigurationV1], object], object, str], ...] = (
    (
        "parallelism",
        lambda d: d.parallelism,
        16,
        "Filter and Score run over all nodes at once as numpy arrays, not on a pool of goroutines",
    ),
    (
        "clientConnection.contentType",
        lambda d: d.client_connection.content_type,
        "application/vnd.kubernetes.protobuf",
        "Harmonic always sends JSON",
    ),
    (
        "clientConnection.acceptContentTypes",
        lambda d: d.client_connection.accept_content_types,
        "",
        "Harmonic always asks for JSON",
    ),
    (
        "healthzBindAddress",
        lambda d: d.healthz_bind_address,
        None,
        "deprecated upstream; Harmonic serves /healthz where --bind-address and --metrics-port say",
    ),
    (
        "metricsBindAddress",
        lambda d: d.metrics_bind_address,
        None,
        "deprecated upstream; Harmonic serves /metrics where --bind-address and --metrics-port say",
    ),
    ("enableProfiling", lambda d: d.enable_profiling, True, "Harmonic serves no profiling endpoint"),
    (
        "enableContentionProfiling",
        lambda d: d.enable_contention_profiling,
        True,
        "Harmonic serves no profiling endpoint",
    ),
    (
        "delayCacheUntilActive",
        lambda d: d.delay_cache_until_active,
        False,
        "Harmonic's informers always fill the cache before the lease is taken, so a standby replica "
        "is ready to schedule at once",
    ),
)


def ignored_field_warnings(source: str, doc: KubeSchedulerConfigurationV1) -> list[str]:
    """One warning per field of ``IGNORED_FIELDS`` set to something other than upstream's default."""
    out = []
    for path, read, default, why in IGNORED_FIELDS:
        value = read(doc)
        if value != default:
            out.append(f"{source}: {path}: {value!r} is ignored ({why})")
    return out


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
    #: Classes made for this profile by the registry's templates (e.g. WebAssembly guests), by name.
    plugin_classes: Mapping[str, type[Plugin]] = field(default_factory=dict)

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
    leader_election: LeaderElection
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    source: str = "<default>"
    warnings: tuple[str, ...] = field(default=())
    #: True when the one profile is "default-scheduler" by defaulting (no ``profiles``, or one without a
    #: schedulerName), not because the file names it: a second scheduler must not take those pods.
    implicit_default_profile: bool = False

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


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """mergePluginSet: the default plugins minus the disabled ones (all of them for ``"*"``), each
    replaced in place by the user's entry of the same name, then the user's other plugins in order.
    Disabled lists are kept (custom first): MultiPoint expansion reads them."""
    disabled = [*custom.disabled, *default.disabled]
    names = {p.name for p in disabled}
    custom_at = {p.name: i for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in names:
        for p in default.enabled:
            if p.name in names:
                continue
            if p.name in custom_at:
                i = custom_at[p.name]
                p = custom.enabled[i]
                replaced.add(i)
            enabled.append(p)
    enabled += [p for i, p in enumerate(custom.enabled) if i not in replaced]
    return PluginSet(enabled=enabled, disabled=disabled)


def score_weights(
    candidates: Sequence[PluginRef], is_scorer: Callable[[str], bool], max_total: int = MAX_TOTAL_SCORE
) -> dict[str, int]:
    """getScoreWeights over Score's then MultiPoint's plugins: the first weight given for a scorer
    counts, 0 or none means 1, and the weights times the maximum node score must fit ``max_total``.
    Raises ``ValueError`` on overflow."""
    weights: dict[str, int] = {}
    total = 0
    for p in candidates:
        if p.name in weights or not is_scorer(p.name):
            continue
        w = p.weight or 1
        if w * MAX_NODE_SCORE > max_total - total:
            raise ValueError("total score of Score plugins could overflow")
        weights[p.name] = w
        total += w * MAX_NODE_SCORE
    return weights


def _implements(plugin: type[Plugin], point: str) -> bool:
    return issubclass(plugin, EXTENSION_POINTS[point])


def _quote(name: str) -> str:
    """A name as Go's %q prints it."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def resolve_profile(
    source: str, index: int, prof: ProfileV1, registry: Registry, warnings: list[str]
) -> Profile:
    """Defaults, validation and MultiPoint expansion of one profile (setDefaults_KubeSchedulerProfile,
    validateKubeSchedulerProfile, NewFramework)."""
    where = f"{source}: profiles[{index}]"
    plugins = prof.plugins or Plugins()
    made, made_args = _templated_plugins(source, index, prof, registry)
    if made:
        registry = registry.merged(made.values())
    default_mp = PluginSet(
        enabled=[PluginRef(name=n, weight=w or None) for n, w in DEFAULT_MULTIPOINT if n in registry]
    )
    multipoint = merge_plugin_set(default_mp, plugins.multi_point)
    for i, p in enumerate(multipoint.enabled):
        custom = next((j for j, c in enumerate(plugins.multi_point.enabled) if c is p), None)
        _check_known(where, registry, p.name, f"multiPoint.enabled[{custom if custom is not None else i}]")
    points = _expand_points(where, plugins, multipoint, registry)
    try:
        all_weights = score_weights(
            [*plugins.score.enabled, *multipoint.enabled], lambda n: _implements(registry[n], "score")
        )
    except ValueError as e:
        raise ConfigError(f"{where}.plugins.score: {e}") from None
    _validate_required_points(where, points)
    used = {n for names in points.values() for n in names}
    args = _profile_args(source, index, prof, registry, used, made_args, warnings)
    return Profile(
        scheduler_name=prof.scheduler_name or "",
        points=points,
        weights={n: all_weights[n] for n in points["score"]},
        args={n: a for n, a in args.items() if n in used},
        percentage_of_nodes_to_score=prof.percentage_of_nodes_to_score,
        plugin_classes={n: c for n, c in made.items() if n in used},
    )


def _check_known(where: str, registry: Registry, plugin: str, path: str) -> type[Plugin]:
    """The plugin's class; an error naming ``path`` for a removed or unknown plugin."""
    if plugin in INVALID_PLUGINS:
        raise ConfigError(
            f"{where}.plugins.{path}: {_quote(plugin)} was invalid in version {_quote(API_VERSION)} "
            f"(KubeSchedulerConfiguration is version {_quote(API_VERSION)})"
        )
    if plugin not in registry:
        known = ", ".join(sorted(registry))
        raise ConfigError(f"{where}.plugins.{path}: unknown plugin {_quote(plugin)} (known plugins: {known})")
    return registry[plugin]


def _expand_points(
    where: str, plugins: Plugins, multipoint: PluginSet, registry: Registry
) -> dict[str, tuple[str, ...]]:
    """Each extension point's plugins in run order: its own enabled set, with MultiPoint expanded into it
    (frameworkImpl.expandMultiPointPlugins)."""
    points: dict[str, tuple[str, ...]] = {}
    for point in EXTENSION_POINTS:
        pset: PluginSet = getattr(plugins, _snake(point))
        explicit: list[str] = []
        for i, p in enumerate(pset.enabled):
            cls = _check_known(where, registry, p.name, f"{point}.enabled[{i}]")
            if not _implements(cls, point):
                raise ConfigError(
                    f"{where}.plugins.{point}.enabled[{i}]: plugin {_quote(p.name)} does not extend {point}"
                )
            if p.name in explicit:
                raise ConfigError(
                    f"{where}.plugins.{point}.enabled[{i}]: plugin {_quote(p.name)} already registered"
                )
            explicit.append(p.name)
        disabled = {p.name for p in pset.disabled}
        if "*" in disabled or not multipoint.enabled:
            points[point] = tuple(explicit)
            continue
        overrides: set[str] = set()
        from_multi: list[str] = []
        for p in multipoint.enabled:
            if not _implements(registry[p.name], point) or p.name in disabled:
                continue
            if p.name in explicit:
                overrides.add(p.name)
                continue
            if p.name in from_multi:
                raise ConfigError(
                    f"{where}.plugins.multiPoint: plugin {_quote(p.name)} already registered as {point}"
                )
            from_multi.append(p.name)
        # Explicitly configured MultiPoint plugins first (in their extension point's order), then
        # the other MultiPoint plugins, then the rest of the extension point's own.
        first = [n for n in explicit if n in overrides]
        points[point] = (*first, *from_multi, *(n for n in explicit if n not in overrides))
    return points


def _validate_required_points(where: str, points: Mapping[str, tuple[str, ...]]) -> None:
    """NewFramework's checks: one QueueSort plugin, at least one Bind plugin."""
    if len(points["queueSort"]) != 1:
        got = ", ".join(points["queueSort"]) or "none"
        raise ConfigError(f"{where}.plugins.queueSort: exactly one queue sort plugin is required, got {got}")
    if not points["bind"]:
        raise ConfigError(f"{where}.plugins.bind: at least one bind plugin is required")


def _profile_args(
    source: str,
    index: int,
    prof: ProfileV1,
    registry: Registry,
    used: set[str],
    made_args: Mapping[str, PluginArgs],
    warnings: list[str],
) -> dict[str, PluginArgs]:
    """Each plugin's validated args: its pluginConfig entry, or its defaults (validatePluginConfig and
    the args' defaulting); entries for unknown or unused plugins are warnings."""
    where = f"{source}: profiles[{index}]"
    entries: dict[str, int] = {}
    for i, entry in enumerate(prof.plugin_config):
        if entry.name in entries:
            raise ConfigError(f"{where}.pluginConfig[{i}]: duplicate config for plugin {_quote(entry.name)}")
        entries[entry.name] = i
        if entry.name in INVALID_PLUGINS:
            _check_known(where, registry, entry.name, f"pluginConfig[{i}]")
        if entry.name not in registry:
            warnings.append(
                f"{where}.pluginConfig[{i}]: unknown plugin {_quote(entry.name)}; its args are unused"
            )
        elif entry.name not in used:
            warnings.append(
                f"{where}.pluginConfig[{i}]: plugin {_quote(entry.name)} is not enabled; its args are unused"
            )
    args: dict[str, PluginArgs] = {}
    for plugin in sorted(used | (set(entries) & set(registry))):
        if plugin in made_args:
            args[plugin] = made_args[plugin]
            continue
        at = entries.get(plugin)
        if at is None:
            raw: dict[str, Any] = {}
            path = f"profiles[{index}] default args of {plugin}"
        else:
            raw = dict(prof.plugin_config[at].args or {})
            path = f"profiles[{index}].pluginConfig[{at}].args"
        args[plugin] = _plugin_args(source, path, registry[plugin], raw)
    return args


def _templated_plugins(
    source: str, index: int, prof: ProfileV1, registry: Registry
) -> tuple[dict[str, type[Plugin]], dict[str, PluginArgs]]:
    """Plugin classes the registry's templates make from this profile's pluginConfig: an entry whose
    name no plugin has and whose args a template claims (a ``guestURL``, say) defines a plugin of
    that name."""
    made: dict[str, type[Plugin]] = {}
    made_args: dict[str, PluginArgs] = {}
    for i, entry in enumerate(prof.plugin_config):
        raw = entry.args or {}
        if entry.name in registry or entry.name in made:
            continue
        template = next((t for t in registry.templates if t.claims(raw)), None)
        if template is None:
            continue
        path = f"profiles[{index}].pluginConfig[{i}].args"
        args = _validate_args(source, path, template.Args, template.KIND, dict(raw))
        try:
            made[entry.name] = template.make(entry.name, args)
        except ValueError as e:
            raise ConfigError(f"{source}: {path}.{e}") from None
        made_args[entry.name] = args
    return made, made_args


def _plugin_args(source: str, path: str, plugin: type[Plugin], raw: dict[str, Any]) -> PluginArgs:
    """Validate one plugin's args (defaults for the missing fields); ``kind`` and ``apiVersion`` are
    optional but must name this plugin's args type."""
    return _validate_args(source, path, args_model(plugin), f"{plugin.NAME}Args", raw)


def _validate_args(
    source: str, path: str, model: type[PluginArgs], expected: str, raw: dict[str, Any]
) -> PluginArgs:
    kind = raw.pop("kind", None)
    api_version = raw.pop("apiVersion", None)
    if kind is not None and kind != expected:
        raise ConfigError(f"{source}: {path}.kind: expected {expected}, got {_quote(str(kind))}")
    if api_version is not None and api_version != API_VERSION:
        raise ConfigError(
            f"{source}: {path}.apiVersion: expected {API_VERSION}, got {_quote(str(api_version))}"
        )
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        raise _pydantic_error(source, e, path) from None


def _snake(point: str) -> str:
    return re.sub(r"([A-Z])", r"_\1", point).lower()


def load_config(
    data: Mapping[str, Any] | None, registry: Registry, source: str = "<config>"
) -> SchedulerConfiguration:
    """Resolve a parsed KubeSchedulerConfiguration document (``None`` = all defaults)."""
    if data is not None and not isinstance(data, Mapping):
        raise ConfigError(
            f"{source}: expected a KubeSchedulerConfiguration object, got {type(data).__name__}"
        )
    data = dict(data or {})
    if data.get("apiVersion", API_VERSION) != API_VERSION:
        raise ConfigError(
            f"{source}: apiVersion: expected {API_VERSION}, got {_quote(str(data.get('apiVersion')))}"
        )
    if data.get("kind", KIND) != KIND:
        raise ConfigError(f"{source}: kind: expected {KIND}, got {_quote(str(data.get('kind')))}")
    try:
        doc = KubeSchedulerConfigurationV1.model_validate(data)
    except ValidationError as e:
        raise _pydantic_error(source, e) from None
    _validate_scalars(source, doc)
    if doc.extenders:
        raise ConfigError(
            f"{source}: extenders: Harmonic does not call scheduler extenders; "
            "run Harmonic itself as the extender (harmonic extender) or remove this field"
        )
    leader = _leader_election(source, doc.leader_election)

    warnings = ignored_field_warnings(source, doc)
    raw_profiles = doc.profiles if doc.profiles else [ProfileV1()]
    implicit = len(raw_profiles) == 1 and raw_profiles[0].scheduler_name is None
    if implicit:
        raw_profiles = [raw_profiles[0].model_copy(update={"scheduler_name": DEFAULT_SCHEDULER_NAME})]
    profiles = []
    seen: dict[str, int] = {}
    for i, p in enumerate(raw_profiles):
        if not p.scheduler_name:
            raise ConfigError(f"{source}: profiles[{i}].schedulerName: Required value")
        if p.scheduler_name in seen:
            raise ConfigError(
                f"{source}: profiles[{i}].schedulerName: Duplicate value: {_quote(p.scheduler_name)} "
                f"(also profiles[{seen[p.scheduler_name]}].schedulerName)"
            )
        seen[p.scheduler_name] = i
        pct = p.percentage_of_nodes_to_score
        if pct is not None and not 0 <= pct <= 100:
            raise ConfigError(
                f"{source}: profiles[{i}].percentageOfNodesToScore: {pct} not in valid range [0-100]"
            )
        profiles.append(resolve_profile(source, i, p, registry, warnings))
    _validate_common_queue_sort(source, raw_profiles)
    for w in warnings:
        log.warning("%s", w)
    return SchedulerConfiguration(
        profiles=tuple(profiles),
        percentage_of_nodes_to_score=doc.percentage_of_nodes_to_score or 0,
        pod_initial_backoff_seconds=float(doc.pod_initial_backoff_seconds),
        pod_max_backoff_seconds=float(doc.pod_max_backoff_seconds),
        leader_election=leader,
        client_connection=ClientConnection(
            kubeconfig=doc.client_connection.kubeconfig,
            qps=doc.client_connection.qps,
            burst=doc.client_connection.burst,
        ),
        source=source,
        warnings=tuple(warnings),
        implicit_default_profile=implicit,
    )


def _validate_scalars(source: str, doc: KubeSchedulerConfigurationV1) -> None:
    """ValidateKubeSchedulerConfiguration's checks of single fields, with its messages."""
    if doc.parallelism <= 0:
        raise ConfigError(
            f"{source}: parallelism: {doc.parallelism} should be an integer value greater than zero"
        )
    pct = doc.percentage_of_nodes_to_score
    if pct is not None and not 0 <= pct <= 100:
        raise ConfigError(f"{source}: percentageOfNodesToScore: {pct} not in valid range [0-100]")
    if doc.pod_initial_backoff_seconds <= 0:
        raise ConfigError(
            f"{source}: podInitialBackoffSeconds: {doc.pod_initial_backoff_seconds} must be greater than 0"
        )
    if doc.pod_max_backoff_seconds < doc.pod_initial_backoff_seconds:
        raise ConfigError(
            f"{source}: podMaxBackoffSeconds: {doc.pod_max_backoff_seconds} must be greater than or equal "
            "to podInitialBackoffSeconds"
        )


def _leader_election(source: str, le: LeaderElectionV1) -> LeaderElection:
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
    if leader.leader_elect and le.resource_lock != "leases":
        raise ConfigError(f'{source}: leaderElection.resourceLock: resourceLock value must be "leases"')
    return leader


def _validate_common_queue_sort(source: str, profiles: Sequence[ProfileV1]) -> None:
    """validateCommonQueueSort: every profile configures queueSort, and its plugin's args, as the first."""

    def queue_sort(p: ProfileV1) -> PluginSet:
        return p.plugins.queue_sort if p.plugins is not None else PluginSet()

    canon = queue_sort(profiles[0])
    if len(canon.enabled) > 1:
        raise ConfigError(
            f"{source}: profiles[0].plugins.queueSort.enabled: {len(canon.enabled)} only one queue sort "
            "plugin can be enabled"
        )
    sort_name = canon.enabled[0].name if canon.enabled else ""
    canon_args = next((c.args for c in profiles[0].plugin_config if c.name == sort_name), None)
    for i, p in enumerate(profiles[1:], start=1):
        if queue_sort(p) != canon:
            raise ConfigError(f"{source}: profiles[{i}].plugins.queueSort: must be the same for all profiles")
        for j, c in enumerate(p.plugin_config):
            if sort_name and c.name == sort_name and c.args != canon_args:
                raise ConfigError(
                    f"{source}: profiles[{i}].pluginConfig[{j}].args: queueSort must be the same for all profiles"
                )


def load_config_file(path: str | Path, registry: Registry) -> SchedulerConfiguration:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigError(f"{p}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: cannot read: not UTF-8 text") from None
    try:
        data = safeyaml.load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML: {safeyaml.problem(e)}") from None
    if data is not None and not isinstance(data, Mapping):
        raise ConfigError(f"{p}: expected a KubeSchedulerConfiguration object")
    # kube-scheduler decodes its file by apiVersion and kind, so a file without them (or an empty one)
    # is refused, not read as "all defaults".
    for key, want in (("apiVersion", API_VERSION), ("kind", KIND)):
        if not (data or {}).get(key):
            raise ConfigError(f"{p}: {key}: Required value (want {key}: {want})")
    return load_config(data, registry, source=str(p))
