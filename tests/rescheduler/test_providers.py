"""The policy's metricsProviders connected for real: metrics-server's API on the API-server double
over HTTP (with descheduler's weighted collector), a bearer token read from a Secret there, and
LowNodeUtilization's Prometheus query answered by the real Prometheus the suite starts."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest

from harmonic.rescheduler.policy import load_policy
from harmonic.rescheduler.providers import (
    METRICS_SERVICE,
    MetricsCollector,
    MetricsProvidersConfig,
    connect,
    prometheus_token,
)
from harmonic.signals.usage import NodeStats, UsageReading
from tests.rescheduler.helpers import policy, profile, run
from tests.rescheduler.test_live import live, load
from tests.rescheduler.test_plugins import N, P
from tests.signals.conftest import prometheus  # noqa: F401  (the session's real Prometheus)


def node_metrics(name: str, cpu: str, memory: str = "1Gi") -> dict[str, Any]:
    return {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "NodeMetrics",
        "metadata": {"name": name},
        "window": "20s",
        "usage": {"cpu": cpu, "memory": memory},
    }


def pod_metrics(name: str, cpu: str, memory: str = "100Mi") -> dict[str, Any]:
    return {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "PodMetrics",
        "metadata": {"name": name, "namespace": "default"},
        "containers": [{"name": "c", "usage": {"cpu": cpu, "memory": memory}}],
    }


class Sequence:
    name = "sequence"

    def __init__(self, *readings: dict[str, int]) -> None:
        self.readings = list(readings)

    def read(self) -> UsageReading:
        r = self.readings.pop(0)
        if not r:
            return UsageReading.no_signal("down")
        return UsageReading({n: NodeStats(c, 0, 2 * c, 0) for n, c in r.items()}, {}, has_spread=False)


def test_collector_smooths_as_descheduler():
    """First reading as is, then round(0.9 x old + 0.1 x new); a failed reading or a missing node
    keeps the previous value."""
    c = MetricsCollector(Sequence({"a": 1000, "b": 500}, {"a": 2000}, {}, {"a": 2000, "b": 1500}))
    assert c.collect() and c.node_usage() == {"a": (1000, 2000), "b": (500, 1000)}
    assert c.collect() and c.node_usage() == {"a": (1100, 2200), "b": (500, 1000)}
    assert not c.collect() and c.node_usage()["a"] == (1100, 2200)
    assert c.collect() and c.node_usage() == {"a": (1190, 2380), "b": (600, 1200)}


def test_policy_providers_parse():
    pol = load_policy(
        policy(
            metricsProviders=[
                {"source": "KubernetesMetrics"},
                {
                    "source": "Prometheus",
                    "prometheus": {
                        "url": "https://prometheus.monitoring:9090",
                        "authToken": {"secretReference": {"namespace": "kube-system", "name": "prom-token"}},
                    },
                },
            ]
        )
    )
    assert pol.metrics.sources == {"KubernetesMetrics", "Prometheus"}
    assert pol.metrics.prometheus is not None and pol.metrics.prometheus.url.startswith("https://")
    assert load_policy(policy(metricsCollector={"enabled": True})).metrics.kubernetes


ACTUAL = {
    "thresholds": {"cpu": 30, "pods": 30},
    "targetThresholds": {"cpu": 50, "pods": 50},
    "metricsUtilization": {"source": "KubernetesMetrics"},
}


def hot_n1() -> list[dict[str, Any]]:
    """By requests the nodes are balanced (one 1-CPU pod on each of n1, n2); by use n1 is hot."""
    return [N("n1"), N("n2"), N("n3"), P("a", "n1"), P("b", "n1"), P("c", "n2")]


def test_metrics_server_on_the_api_server(api, transport):
    load(api, hot_n1())
    for m in (node_metrics("n1", "3500m"), node_metrics("n2", "1000m"), node_metrics("n3", "100m")):
        api.create("metrics.k8s.io/nodes", m)
    for m in (pod_metrics("a", "1500m"), pod_metrics("b", "1500m"), pod_metrics("c", "900m")):
        api.create("metrics.k8s.io/pods", m)
    cfg = MetricsProvidersConfig(metrics_providers=[{"source": "KubernetesMetrics"}])
    metrics = connect(cfg, lambda path: transport.request("GET", path))
    assert metrics.collector is not None and metrics.collector.collect()
    assert metrics.collector.node_usage()["n1"] == (3500, 1024**3)
    pol = policy(
        profile("balance", "LowNodeUtilization", ACTUAL), metricsProviders=[{"source": "KubernetesMetrics"}]
    )
    by_requests = policy(
        profile(
            "balance", "LowNodeUtilization", {k: v for k, v in ACTUAL.items() if k != "metricsUtilization"}
        )
    )
    assert live(transport, by_requests, dry_run=True).cycle().result.log.evictions == []
    report = live(transport, pol, dry_run=True, services={METRICS_SERVICE: metrics}).cycle()
    assert [(e.pod.node_name, e.to) for e in report.result.log.evictions] == [("n1", "n3")]


def test_pod_usage_is_read_when_asked(api, transport):
    """Descheduler GETs a pod's PodMetrics at eviction time: a pod measured after the collection counts,
    one without metrics (or missing a resource) has no usage."""
    api.create("metrics.k8s.io/nodes", node_metrics("n1", "1"))
    cfg = MetricsProvidersConfig(metrics_providers=[{"source": "KubernetesMetrics"}])
    metrics = connect(cfg, lambda path: transport.request("GET", path))
    assert metrics.collector is not None and metrics.collector.collect()
    api.create("metrics.k8s.io/pods", pod_metrics("late", "250m", "64Mi"))
    assert metrics.collector.pod_usage("default", "late") == (250.0, 64 * 1024**2)
    assert metrics.collector.pod_usage("default", "unmeasured") is None
    partial = pod_metrics("partial", "100m")
    del partial["containers"][0]["usage"]["memory"]
    api.create("metrics.k8s.io/pods", partial)
    assert metrics.collector.pod_usage("default", "partial") is None


def test_without_a_connection_the_plugin_says_why():
    pol = policy(
        profile("balance", "LowNodeUtilization", ACTUAL), metricsProviders=[{"source": "KubernetesMetrics"}]
    )
    r = run(pol, hot_n1())
    assert r.log.evictions == [] and r.log.plans == [
        ("LowNodeUtilization", "error", "error getting node usage: metrics client not initialized")
    ]


def test_prometheus_token_from_the_referenced_secret(api, transport):
    api.create(
        "secrets",
        {
            "metadata": {"name": "prom-token", "namespace": "kube-system"},
            "data": {"prometheus-auth-token": base64.b64encode(b"s3cret\n").decode()},
        },
    )
    cfg = MetricsProvidersConfig.model_validate(
        {
            "metricsProviders": [
                {
                    "source": "Prometheus",
                    "prometheus": {
                        "url": "http://127.0.0.1:9",
                        "authToken": {"secretReference": {"namespace": "kube-system", "name": "prom-token"}},
                    },
                }
            ]
        }
    )
    assert cfg.prometheus is not None
    assert prometheus_token(cfg.prometheus, lambda path: transport.request("GET", path)) == "s3cret"


def vector_query(values: dict[str, float]) -> str:
    """A PromQL expression whose instant vector has one sample per node, labelled ``instance``."""
    parts = [f'label_replace(vector({v}), "instance", "{n}", "", "")' for n, v in values.items()]
    return " or ".join(parts)


def test_prometheus_query_on_the_real_server(prometheus):  # noqa: F811
    query = vector_query({"n1": 0.62, "n2": 0.41, "n3": 0.12})
    providers = [{"source": "Prometheus", "prometheus": {"url": prometheus}}]
    args = {
        "thresholds": {"MetricResource": 30},
        "targetThresholds": {"MetricResource": 50},
        "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": query}},
    }
    pol = policy(profile("balance", "LowNodeUtilization", args), metricsProviders=providers)
    metrics = connect(load_policy(pol).metrics, lambda path: pytest.fail(f"no API read expected: {path}"))
    try:
        assert metrics.prometheus is not None
        answer = metrics.prometheus(query)
        assert not isinstance(answer, str)
        assert {s["metric"]["instance"] for s in answer} == {"n1", "n2", "n3"}
        objs = [N("n1"), N("n2"), N("n3"), P("a", "n1"), P("b", "n1"), P("c", "n2")]
        r = run(pol, objs, services={METRICS_SERVICE: metrics})
        # Pod usage is unknown with Prometheus: one pod leaves the one node over target, for n3.
        assert [(e.pod.node_name, e.to) for e in r.log.evictions] == [("n1", "n3")]
    finally:
        metrics.stop()


def test_prometheus_unreachable_stops_the_plugin():
    providers = [{"source": "Prometheus", "prometheus": {"url": "http://127.0.0.1:9"}}]
    args = {
        "thresholds": {"MetricResource": 30},
        "targetThresholds": {"MetricResource": 50},
        "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": "up"}},
    }
    pol = policy(profile("balance", "LowNodeUtilization", args), metricsProviders=providers)
    metrics = connect(load_policy(pol).metrics, lambda path: {}, transport=httpx.HTTPTransport(retries=0))
    try:
        r = run(pol, hot_n1(), services={METRICS_SERVICE: metrics})
    finally:
        metrics.stop()
    assert r.log.evictions == []
    assert r.log.plans[0][2].startswith(
        "error getting node usage: unable to capture prometheus metrics: unreachable"
    )
