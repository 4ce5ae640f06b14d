"""Build the ``node_usage`` service the load-aware plugins read, for ``harmonic run``.

Every profile enabling TargetLoadPacking, LoadVariationRiskBalancing or LoadAware shares one usage
model (handle services are per scheduler), read from the ``metricProvider`` of the first such plugin
configured: ``Prometheus`` (``address``, ``token`` as a bearer token) or ``KubernetesMetricsServer``
(the ``metrics.k8s.io`` API through the scheduler's own API connection, ``get``). Profiles that
configure different providers are an error. Pods are mapped to their workloads by reading them from the
API server once each. LoadAware's ``seasonSeconds``, ``horizonSeconds`` and ``forecastBackend`` shape
the forecast. The caller starts the model's refresher thread and stops it on shutdown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harmonic.api.pod import parse_pod
from harmonic.framework.config import ConfigError, SchedulerConfiguration
from harmonic.signals.identity import WorkloadKey, workload_of
from harmonic.signals.usage import (
    NODE_USAGE,
    MetricsServerSource,
    PrometheusUsageSource,
    UsageModel,
    UsageSource,
)

LOAD_AWARE_PLUGINS = ("TargetLoadPacking", "LoadVariationRiskBalancing", "LoadAware")


def usage_services(config: SchedulerConfiguration, get: Callable[[str], Any]) -> dict[str, UsageModel]:
    """``{"node_usage": model}`` when a profile enables a load-aware plugin, else ``{}``."""
    found: list[tuple[str, Any]] = []
    load_aware: Any = None
    for profile in config.profiles:
        for name in LOAD_AWARE_PLUGINS:
            if name in profile.plugin_names:
                args = profile.args[name]
                found.append((f"{profile.scheduler_name}/{name}", getattr(args, "metric_provider", None)))
                if name == "LoadAware" and load_aware is None:
                    load_aware = args
    if not found:
        return {}
    first_name, provider = found[0]
    for name, other in found[1:]:
        if other != provider:
            raise ConfigError(
                f"{config.source}: {first_name} and {name} give different metricProvider args; one usage "
                "model serves every profile, so give them the same"
            )
    source: UsageSource
    if provider is not None and provider.type == "Prometheus":
        headers = {"Authorization": f"Bearer {provider.token}"} if provider.token else {}
        source = PrometheusUsageSource(provider.address, headers=headers)
    else:
        source = MetricsServerSource(get)
    known: dict[str, WorkloadKey | None] = {}

    def resolve(namespace: str, name: str) -> WorkloadKey | None:
        key = f"{namespace}/{name}"
        if key not in known:
            try:
                known[key] = workload_of(parse_pod(get(f"/api/v1/namespaces/{namespace}/pods/{name}")))
            except Exception:  # a pod gone or unreadable has no workload: its usage is left out
                known[key] = None
        return known[key]

    model = UsageModel(
        source,
        resolve,
        season_seconds=getattr(load_aware, "season_seconds", 86400.0),
        horizon_seconds=getattr(load_aware, "horizon_seconds", 3600.0),
        backend=getattr(load_aware, "forecast_backend", "numpy"),
    )
    return {NODE_USAGE.name: model}
