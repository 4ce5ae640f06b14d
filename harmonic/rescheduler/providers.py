"""The policy's ``metricsProviders`` (and the deprecated ``metricsCollector.enabled``): where
LowNodeUtilization's ``metricsUtilization`` reads actual usage, and the connections made from them.

- ``KubernetesMetrics`` (or ``metricsCollector.enabled``): the ``metrics.k8s.io`` API (metrics-server),
  read through ``signals.usage.MetricsServerSource``. A ``MetricsCollector`` refreshes node usage every
  5 seconds with descheduler's weighted average (new = round(0.9 x old + 0.1 x reading); the first reading
  is taken as is; a node missing from a reading keeps its value) and keeps the latest pod usage.
- ``Prometheus``: ``url`` and an optional ``authToken.secretReference`` (namespace and name of a Secret
  whose ``prometheus-auth-token`` key holds a bearer token; without one, the service account's token file
  if present, as descheduler). Each plugin sends its own instant query (``signals.promquery.PrometheusClient``).

Validation is descheduler's ``validateDeschedulerConfiguration``: each source once, not both the
deprecated collector and a KubernetesMetrics provider, a Prometheus provider needs a parseable ``url``, a
token reference needs both namespace and name. Unknown fields are errors.

The connections reach plugins as the run's ``services[METRICS_SERVICE]`` (a ``MetricsProviders``).
"""

from __future__ import annotations

import base64
import logging
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

import httpx
from pydantic import model_validator

from harmonic.api.quantity import QuantityError, parse_quantity
from harmonic.framework.args import PluginArgs
from harmonic.signals.periodic import Periodic
from harmonic.signals.promquery import PrometheusClient
from harmonic.signals.usage import METRICS_API, MetricsServerSource, UsageSource

log = logging.getLogger(__name__)

METRICS_SERVICE = "rescheduler_metrics"
#: descheduler's metrics collector: the sync period and the weight of the previous value.
COLLECT_SECONDS = 5.0
BETA = 0.9
#: The key of the Secret holding the Prometheus bearer token (descheduler's ``prometheusAuthTokenSecretKey``).
TOKEN_KEY = "prometheus-auth-token"
SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")

Source = Literal["KubernetesMetrics", "Prometheus"]


class SecretReference(PluginArgs):
    namespace: str = ""
    name: str = ""


class AuthToken(PluginArgs):
    secret_reference: SecretReference | None = None


class PrometheusProvider(PluginArgs):
    url: str = ""
    auth_token: AuthToken | None = None


class MetricsProvider(PluginArgs):
    source: Source
    prometheus: PrometheusProvider | None = None


class MetricsProvidersConfig(PluginArgs):
    """The two policy fields together (``metricsCollector`` is ``{enabled: bool}``)."""

    metrics_collector: dict[str, bool] | None = None
    metrics_providers: tuple[MetricsProvider, ...] = ()

    @model_validator(mode="after")
    def _valid(self) -> MetricsProvidersConfig:
        seen: set[str] = set()
        for p in self.metrics_providers:
            if p.source in seen:
                raise ValueError(
                    f"metric provider {p.source!r} is already configured, each source can be configured only once"
                )
            seen.add(p.source)
        if self.metrics_collector is not None and set(self.metrics_collector) - {"enabled"}:
            raise ValueError("metricsCollector: only the enabled field is known")
        if "KubernetesMetrics" in seen and self.collector_enabled:
            raise ValueError(
                "it is not allowed to combine metrics provider when metrics collector is enabled"
            )
        prom = self.prometheus
        if "Prometheus" in seen:
            if prom is None:
                raise ValueError("prometheus configuration is required when prometheus source is enabled")
            if not prom.url:
                raise ValueError("prometheus URL is required when prometheus is enabled")
            parsed = urlparse(prom.url)
            if not parsed.scheme or not parsed.netloc:
                raise ValueError(f"error parsing prometheus URL: {prom.url!r} is not an absolute URL")
            if prom.auth_token is not None:
                ref = prom.auth_token.secret_reference
                if ref is None:
                    raise ValueError(
                        "prometheus authToken secret is expected to be set when authToken field is"
                    )
                if not ref.name or not ref.namespace:
                    raise ValueError(
                        "prometheus authToken secret reference does not set both namespace and name"
                    )
        return self

    @property
    def collector_enabled(self) -> bool:
        return bool((self.metrics_collector or {}).get("enabled"))

    @property
    def kubernetes(self) -> bool:
        return self.collector_enabled or any(p.source == "KubernetesMetrics" for p in self.metrics_providers)

    @property
    def prometheus(self) -> PrometheusProvider | None:
        return next((p.prometheus for p in self.metrics_providers if p.source == "Prometheus"), None)

    @property
    def sources(self) -> set[str]:
        out = {p.source for p in self.metrics_providers}
        return out | ({"KubernetesMetrics"} if self.collector_enabled else set())


# --------------------------------------------------------------------------- the connections
PodReader = Callable[[str, str], "tuple[float, float] | None"]


class MetricsCollector:
    """metricscollector.MetricsCollector: node CPU (millicores) and memory (bytes), smoothed. A pod's
    usage is read when asked (``read_pod``: its PodMetrics now, as descheduler's actualUsageClient
    does), else taken from the latest reading."""

    def __init__(
        self, source: UsageSource, interval: float = COLLECT_SECONDS, read_pod: PodReader | None = None
    ) -> None:
        self.source = source
        self.read_pod = read_pod
        self.nodes: dict[str, tuple[int, int]] = {}
        self.pods: dict[tuple[str, str], tuple[float, float]] = {}
        self.synced = threading.Event()
        self._lock = threading.Lock()
        self._refresher = Periodic("rescheduler-metrics", self.collect, interval)

    def collect(self) -> bool:
        reading = self.source.read()
        if not reading.ok:
            return False  # descheduler keeps the previous values of nodes it could not read
        with self._lock:
            for name, stats in reading.nodes.items():
                cpu, mem = round(stats.cpu_mean), int(stats.memory_mean)
                prev = self.nodes.get(name)
                if prev is not None:
                    cpu, mem = _weighted(prev[0], cpu), _weighted(prev[1], mem)
                self.nodes[name] = (cpu, mem)
            self.pods = dict(reading.pods)
        self.synced.set()
        return True

    def node_usage(self) -> dict[str, tuple[int, int]]:
        with self._lock:
            return dict(self.nodes)

    def pod_usage(self, namespace: str, name: str) -> tuple[float, float] | None:
        if self.read_pod is not None:
            return self.read_pod(namespace, name)
        with self._lock:
            return self.pods.get((namespace, name))

    def start(self) -> None:
        self._refresher.start()

    def stop(self) -> None:
        self._refresher.stop()


def _weighted(prev: int, value: int) -> int:
    return math.floor(BETA * prev + (1 - BETA) * value + 0.5)


PrometheusQuery = Callable[[str], "list[dict[str, Any]] | str"]


@dataclass
class MetricsProviders:
    """What the plugins read: None where the policy configured no such source."""

    collector: MetricsCollector | None = None
    prometheus: PrometheusQuery | None = None
    _closers: list[Callable[[], None]] = field(default_factory=list)

    def start(self) -> None:
        if self.collector is not None:
            self.collector.start()

    def stop(self) -> None:
        if self.collector is not None:
            self.collector.stop()
        for close in self._closers:
            close()


def pod_metrics_usage(body: Any) -> tuple[float, float] | None:
    """A PodMetrics' CPU (millicores) and memory (bytes) summed over its containers; None when a
    container lacks either (descheduler: "container is missing resource")."""
    cpu = mem = 0.0
    for c in (body or {}).get("containers") or ():
        usage = c.get("usage") or {}
        if "cpu" not in usage or "memory" not in usage:
            return None
        try:
            cpu += float(parse_quantity(usage["cpu"]) * 1000)
            mem += float(parse_quantity(usage["memory"]))
        except QuantityError:
            return None
    return cpu, mem


def prometheus_token(provider: PrometheusProvider, get: Callable[[str], Any]) -> str:
    """The bearer token: the referenced Secret's key, else the service account's token file, else none."""
    ref = provider.auth_token.secret_reference if provider.auth_token else None
    if ref is not None:
        secret = get(f"/api/v1/namespaces/{ref.namespace}/secrets/{ref.name}")
        data = (secret or {}).get("data") or {}
        if TOKEN_KEY not in data:
            raise ValueError(f"Secret {ref.namespace}/{ref.name} has no {TOKEN_KEY!r} key")
        return base64.b64decode(data[TOKEN_KEY]).decode().strip()
    if SERVICE_ACCOUNT_TOKEN.is_file():
        return SERVICE_ACCOUNT_TOKEN.read_text().strip()
    return ""


def connect(
    config: MetricsProvidersConfig,
    get: Callable[[str], Any],
    *,
    transport: httpx.BaseTransport | None = None,
    collect_seconds: float = COLLECT_SECONDS,
) -> MetricsProviders:
    """Open the policy's providers: ``get(path)`` reads the API server (metrics.k8s.io, Secrets)."""
    out = MetricsProviders()
    if config.kubernetes:

        def read_pod(namespace: str, name: str) -> tuple[float, float] | None:
            try:
                return pod_metrics_usage(get(f"{METRICS_API}/namespaces/{namespace}/pods/{name}"))
            except Exception:  # gone, not yet measured, or the API unreachable: no usage for this pod
                return None

        source = MetricsServerSource(get, name="rescheduler/metrics-server")
        out.collector = MetricsCollector(source, collect_seconds, read_pod)
    prom = config.prometheus
    if prom is not None:
        token = prometheus_token(prom, get)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        client = PrometheusClient(prom.url, 10.0, headers, transport)
        out.prometheus = client.query
        out._closers.append(client.close)
    return out


def parse(raw: Mapping[str, Any]) -> MetricsProvidersConfig:
    """The two fields of a policy document (absent ones are empty); raises pydantic's ValidationError."""
    return MetricsProvidersConfig.model_validate(
        {k: raw[k] for k in ("metricsCollector", "metricsProviders") if raw.get(k) is not None}
    )
