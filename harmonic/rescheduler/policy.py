"""``descheduler/v1alpha2`` ``DeschedulerPolicy`` files, resolved with descheduler's defaults.

Each profile's ``plugins.{deschedule, balance, filter, preEvictionFilter, sort, presort}.enabled`` name
registered plugins implementing that extension point; ``pluginConfig`` gives their args (validated at
load, descheduler's defaults for the rest). DefaultEvictor is added to ``filter`` and
``preEvictionFilter`` of every profile, as descheduler does. Go decodes JSON keys case-insensitively,
so ``preevictionfilter`` (the json tag) and ``preEvictionFilter`` both work. Unknown fields, plugins or
args are errors naming the field (descheduler silently ignores unknown fields).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from harmonic import safeyaml
from harmonic.framework.args import PluginArgs
from harmonic.rescheduler import providers
from harmonic.rescheduler.evictor import NAME as DEFAULT_EVICTOR
from harmonic.rescheduler.evictor import DefaultEvictorArgs
from harmonic.rescheduler.framework import ReschedulerPlugin
from harmonic.rescheduler.plugins.registry import rescheduler_registry
from harmonic.rescheduler.selectors import parse_label_selector

API_VERSION = "descheduler/v1alpha2"
KIND = "DeschedulerPolicy"
POINTS = {
    "presort": "presort",
    "sort": "sort",
    "deschedule": "deschedule",
    "balance": "balance",
    "filter": "filter",
    "preevictionfilter": "preEvictionFilter",
}
_TOP = {
    "apiVersion",
    "kind",
    "profiles",
    "nodeSelector",
    "maxNoOfPodsToEvictPerNode",
    "maxNoOfPodsToEvictPerNamespace",
    "maxNoOfPodsToEvictTotal",
    "evictionFailureEventNotification",
    "metricsCollector",
    "metricsProviders",
    "gracePeriodSeconds",
}


class PolicyError(ValueError):
    """An invalid policy; the message names the file and the field."""


@dataclass(frozen=True)
class ProfilePolicy:
    name: str
    #: Extension point -> enabled plugin names, in order.
    plugins: dict[str, tuple[str, ...]]
    args: dict[str, PluginArgs]

    @property
    def evictor_args(self) -> DefaultEvictorArgs:
        a = self.args[DEFAULT_EVICTOR]
        assert isinstance(a, DefaultEvictorArgs)
        return a


@dataclass(frozen=True)
class Policy:
    profiles: tuple[ProfilePolicy, ...]
    node_selector: str = ""
    max_per_node: int | None = None
    max_per_namespace: int | None = None
    max_total: int | None = None
    eviction_failure_event_notification: bool = False
    grace_period_seconds: int | None = None
    source: str = "<policy>"
    metrics: providers.MetricsProvidersConfig = field(default_factory=providers.MetricsProvidersConfig)


def _uint(source: str, field: str, v: Any) -> int | None:
    if v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise PolicyError(f"{source}: {field}: {v!r} must be a non-negative integer")
    return v


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def plugin_args(source: str, path: str, plugin: str, model: type[PluginArgs], raw: Any) -> PluginArgs:
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise PolicyError(f"{source}: {path}: must be an object")
    raw = dict(raw)
    kind = raw.pop("kind", None)
    raw.pop("apiVersion", None)
    if kind is not None and kind != f"{plugin}Args":
        raise PolicyError(f"{source}: {path}.kind: expected {plugin}Args, got {kind!r}")
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        where = _loc(first["loc"])
        msg = (
            "unknown field"
            if first["type"] == "extra_forbidden"
            else first["msg"].removeprefix("Value error, ")
        )
        return _raise(f"{source}: {path}{'.' + where if where else ''}: {msg}")


def _raise(msg: str) -> PluginArgs:
    raise PolicyError(msg)


def _profile(source: str, i: int, raw: Any, registry: Mapping[str, type[ReschedulerPlugin]]) -> ProfilePolicy:
    where = f"profiles[{i}]"
    if not isinstance(raw, Mapping):
        raise PolicyError(f"{source}: {where}: must be an object")
    for k in raw:
        if k not in ("name", "pluginConfig", "plugins"):
            raise PolicyError(f"{source}: {where}.{k}: unknown field")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise PolicyError(f"{source}: {where}.name: Required value")
    plugins: dict[str, list[str]] = {p: [] for p in POINTS.values()}
    sets = raw.get("plugins") or {}
    if not isinstance(sets, Mapping):
        raise PolicyError(f"{source}: {where}.plugins: must be an object")
    for key, pset in sets.items():
        point = POINTS.get(str(key).lower())
        if point is None:
            raise PolicyError(
                f"{source}: {where}.plugins.{key}: unknown extension point (known: {', '.join(POINTS.values())})"
            )
        path = f"{where}.plugins.{key}"
        if not isinstance(pset, Mapping):
            raise PolicyError(f"{source}: {path}: must be an object with enabled/disabled")
        for k in pset:
            if k not in ("enabled", "disabled"):
                raise PolicyError(f"{source}: {path}.{k}: unknown field")
        disabled = set(pset.get("disabled") or ())
        for j, pname in enumerate(pset.get("enabled") or ()):
            cls = registry.get(pname) if pname != DEFAULT_EVICTOR else None
            if pname == DEFAULT_EVICTOR:
                if point not in ("filter", "preEvictionFilter"):
                    raise PolicyError(f"{source}: {path}.enabled[{j}]: {pname} is not a {point} plugin")
            elif cls is None:
                raise PolicyError(f"{source}: {path}.enabled[{j}]: plugin {pname!r} is not registered")
            elif point not in cls.POINTS:
                raise PolicyError(
                    f"{source}: {path}.enabled[{j}]: {pname} is not a {point} plugin (it is {', '.join(cls.POINTS)})"
                )
            if pname not in disabled and pname not in plugins[point]:
                plugins[point].append(pname)
    for point in ("filter", "preEvictionFilter"):
        if DEFAULT_EVICTOR not in plugins[point]:
            plugins[point].insert(0, DEFAULT_EVICTOR)
    configs: dict[str, Any] = {}
    for j, pc in enumerate(raw.get("pluginConfig") or ()):
        path = f"{where}.pluginConfig[{j}]"
        if not isinstance(pc, Mapping) or not isinstance(pc.get("name"), str):
            raise PolicyError(f"{source}: {path}.name: Required value")
        for k in pc:
            if k not in ("name", "args"):
                raise PolicyError(f"{source}: {path}.{k}: unknown field")
        pname = pc["name"]
        if pname != DEFAULT_EVICTOR and pname not in registry:
            raise PolicyError(f"{source}: {path}.name: plugin {pname!r} in pluginConfig not registered")
        if pname in configs:
            raise PolicyError(f"{source}: {path}.name: duplicate config for plugin {pname!r}")
        configs[pname] = (f"{path}.args", pc.get("args"))
    args: dict[str, PluginArgs] = {}
    used = {n for names in plugins.values() for n in names} | set(configs)
    for pname in sorted(used):
        model = DefaultEvictorArgs if pname == DEFAULT_EVICTOR else registry[pname].Args
        path, raw_args = configs.get(pname, (f"{where} default args of {pname}", {}))
        args[pname] = plugin_args(source, path, pname, model, raw_args)
    return ProfilePolicy(name, {k: tuple(v) for k, v in plugins.items()}, args)


def load_policy(
    data: Mapping[str, Any] | None,
    source: str = "<policy>",
    registry: Mapping[str, type[ReschedulerPlugin]] | None = None,
) -> Policy:
    registry = registry if registry is not None else rescheduler_registry()
    if not isinstance(data, Mapping):
        raise PolicyError(f"{source}: must be a {KIND} object")
    if data.get("apiVersion") != API_VERSION:
        raise PolicyError(f"{source}: apiVersion: expected {API_VERSION}, got {data.get('apiVersion')!r}")
    if data.get("kind") != KIND:
        raise PolicyError(f"{source}: kind: expected {KIND}, got {data.get('kind')!r}")
    for k in data:
        if k not in _TOP:
            raise PolicyError(f"{source}: {k}: unknown field")
    try:
        metrics = providers.parse(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = _loc(first["loc"]) or "metricsProviders"
        msg = (
            "unknown field"
            if first["type"] == "extra_forbidden"
            else first["msg"].removeprefix("Value error, ")
        )
        raise PolicyError(f"{source}: {where}: {msg}") from None
    node_selector = data.get("nodeSelector") or ""
    if not isinstance(node_selector, str):
        raise PolicyError(f"{source}: nodeSelector: must be a label selector string")
    try:
        parse_label_selector(source, "nodeSelector", node_selector)
    except ValueError as e:
        raise PolicyError(str(e)) from None
    profiles = data.get("profiles") or []
    if not isinstance(profiles, list):
        raise PolicyError(f"{source}: profiles: must be a list")
    resolved = tuple(_profile(source, i, p, registry) for i, p in enumerate(profiles))
    names = [p.name for p in resolved]
    for i, n in enumerate(names):
        if n in names[:i]:
            raise PolicyError(f"{source}: profiles[{i}].name: Duplicate value {n!r}")
    _check_metrics_sources(source, resolved, metrics)
    efn = data.get("evictionFailureEventNotification")
    if efn is not None and not isinstance(efn, bool):
        raise PolicyError(f"{source}: evictionFailureEventNotification: must be a boolean")
    return Policy(
        profiles=resolved,
        node_selector=node_selector,
        max_per_node=_uint(source, "maxNoOfPodsToEvictPerNode", data.get("maxNoOfPodsToEvictPerNode")),
        max_per_namespace=_uint(
            source, "maxNoOfPodsToEvictPerNamespace", data.get("maxNoOfPodsToEvictPerNamespace")
        ),
        max_total=_uint(source, "maxNoOfPodsToEvictTotal", data.get("maxNoOfPodsToEvictTotal")),
        eviction_failure_event_notification=bool(efn),
        grace_period_seconds=_uint(source, "gracePeriodSeconds", data.get("gracePeriodSeconds")),
        source=source,
        metrics=metrics,
    )


def _check_metrics_sources(
    source: str, profiles: tuple[ProfilePolicy, ...], metrics: providers.MetricsProvidersConfig
) -> None:
    """A plugin's ``metricsUtilization`` needs its source among the policy's providers (descheduler
    finds out at the first cycle: "metrics client not initialized")."""
    for i, prof in enumerate(profiles):
        for pname, args in prof.args.items():
            wanted = getattr(args, "metrics_source", None)
            if wanted and wanted not in metrics.sources:
                raise PolicyError(
                    f"{source}: profiles[{i}].pluginConfig {pname}.args.metricsUtilization: source {wanted} "
                    f"needs metricsProviders: [{{source: {wanted}}}] in the policy"
                )


def read_policy(path: str | Path) -> Policy:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise PolicyError(f"{path}: cannot read: {e.strerror}") from None
    try:
        data = safeyaml.load(text)
    except yaml.YAMLError as e:
        raise PolicyError(f"{path}: not valid YAML: {safeyaml.problem(e)}") from None
    return load_policy(data, str(path))
