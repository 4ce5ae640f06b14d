"""Where the affinity graph's telemetry comes from, as written in CommunicationAffinity's args.

pluginConfig:
- name: CommunicationAffinity
  args:
    telemetry:
      prometheus:
        url: http://prometheus.istio-system:9090
        mesh: istio            # or linkerd
        reporter: source
        window: 5m
        queryDeadlineSeconds: 20         # the whole query, connect to last byte
        maxResponseBytes: 67108864       # larger answers are dropped unread
      topologies:
      - file: /etc/harmonic/online-boutique.json
        namespace: shop
        userRate: 20
      appGroupFiles: [/etc/harmonic/appgroups.yaml]
      refreshSeconds: 30
      halfLifeSeconds: 600
      weightBy: requests       # requests | bytes | both
"""

from __future__ import annotations

from pydantic import Field

from harmonic.framework.args import PluginArgs
from harmonic.signals.graph import AffinityGraph, WeightBy
from harmonic.signals.prometheus import PRESETS, MeshQueries, PrometheusSource
from harmonic.signals.promquery import QueryLimits
from harmonic.signals.service import GraphService
from harmonic.signals.static import MAX_USER_RATE, AppGroupSource, TopologySource, load_topology
from harmonic.signals.telemetry import TelemetrySource


class QueryOverrides(PluginArgs):
    requests: str | None = None
    bytes: str | None = None
    src: str | None = None
    src_namespace: str | None = None
    dst: str | None = None
    dst_namespace: str | None = None


class PrometheusConfig(PluginArgs):
    url: str = Field(min_length=1)
    mesh: str = "istio"
    reporter: str = "source"
    window: str = "5m"
    timeout_seconds: float = Field(default=5.0, gt=0)
    #: The whole query's deadline and the largest answer read (default: the process's, see
    #: ``harmonic.signals.promquery``).
    query_deadline_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    max_response_bytes: int | None = Field(default=None, gt=0)
    queries: QueryOverrides = QueryOverrides()

    def source(self) -> PrometheusSource:
        if self.mesh not in PRESETS:
            raise ValueError(f"mesh {self.mesh!r} is not one of {', '.join(sorted(PRESETS))}")
        base = PRESETS[self.mesh]
        o = self.queries
        q = MeshQueries(
            requests=o.requests or base.requests,
            bytes=o.bytes if o.bytes is not None else base.bytes,
            src=o.src or base.src,
            src_namespace=o.src_namespace or base.src_namespace,
            dst=o.dst or base.dst,
            dst_namespace=o.dst_namespace or base.dst_namespace,
        )
        process = QueryLimits.from_env()
        limits = QueryLimits(
            self.query_deadline_seconds or process.deadline_seconds,
            self.max_response_bytes or process.max_body_bytes,
        )
        return PrometheusSource(
            self.url, self.mesh, self.reporter, self.window, self.timeout_seconds, q, limits=limits
        )


class TopologyConfig(PluginArgs):
    file: str = Field(min_length=1)
    namespace: str = "default"
    user_rate: float = Field(default=1.0, ge=0, le=MAX_USER_RATE, allow_inf_nan=False)


class TelemetryConfig(PluginArgs):
    prometheus: PrometheusConfig | None = None
    topologies: tuple[TopologyConfig, ...] = ()
    app_group_files: tuple[str, ...] = ()
    refresh_seconds: float = Field(default=30.0, gt=0)
    half_life_seconds: float = Field(default=600.0, gt=0)
    weight_by: WeightBy = WeightBy.REQUESTS

    @property
    def has_sources(self) -> bool:
        return self.prometheus is not None or bool(self.topologies) or bool(self.app_group_files)

    def build(self) -> GraphService:
        """Sources and graph as configured (reads topology/AppGroup files now; errors name them)."""
        sources: list[TelemetrySource] = []
        if self.prometheus is not None:
            sources.append(self.prometheus.source())
        for t in self.topologies:
            sources.append(TopologySource(load_topology(t.file), t.namespace, t.user_rate))
        for f in self.app_group_files:
            sources.append(AppGroupSource.from_file(f))
        graph = AffinityGraph(half_life=self.half_life_seconds, weight_by=self.weight_by)
        return GraphService(graph, sources, self.refresh_seconds)
