"""MetricsServerSource against the API-server double over real HTTP (metrics.k8s.io/v1beta1)."""

from __future__ import annotations

from harmonic.cluster.transport import Transport
from harmonic.signals.usage import MetricsServerSource
from harmonic.testing.apiserver import ApiServerDouble


def _source(transport: Transport) -> MetricsServerSource:
    return MetricsServerSource(lambda path: transport.request("GET", path))


def test_node_and_pod_usage(api: ApiServerDouble, transport: Transport) -> None:
    api.create(
        "metrics.k8s.io/nodes",
        {"apiVersion": "metrics.k8s.io/v1beta1", "kind": "NodeMetrics", "metadata": {"name": "n1"},
         "timestamp": "2026-01-01T00:00:00Z", "window": "20s", "usage": {"cpu": "1500m", "memory": "2Gi"}},
    )  # fmt: skip
    api.create(
        "metrics.k8s.io/pods",
        {"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics", "metadata": {"name": "web-1", "namespace": "shop"},
         "containers": [{"name": "a", "usage": {"cpu": "250m", "memory": "100Mi"}},
                        {"name": "b", "usage": {"cpu": "120000n", "memory": "1Mi"}}]},
    )  # fmt: skip
    reading = _source(transport).read()
    assert reading.ok and not reading.has_spread
    assert reading.nodes["n1"].cpu_mean == 1500 and reading.nodes["n1"].memory_mean == 2 * 1024**3
    cpu, mem = reading.pods[("shop", "web-1")]
    assert cpu == 250.12 and mem == 101 * 1024**2


def test_no_metrics_is_no_signal(api: ApiServerDouble, transport: Transport) -> None:
    reading = _source(transport).read()
    assert not reading.ok and reading.reason == "no NodeMetrics"


def test_unreachable_is_no_signal() -> None:
    def broken(path: str) -> None:
        raise ConnectionError("refused")

    reading = MetricsServerSource(broken).read()
    assert not reading.ok and "unreachable" in reading.reason


def _config(*providers: dict | None):
    from harmonic.framework.config import load_config
    from harmonic.plugins.registry import default_registry

    profiles = []
    for i, provider in enumerate(providers):
        args = {"metricProvider": provider} if provider is not None else {}
        profiles.append(
            {"schedulerName": f"p{i}", "plugins": {"multiPoint": {"enabled": [{"name": "LoadAware"}]}},
             "pluginConfig": [{"name": "LoadAware", "args": {"seasonSeconds": 600, **args}}]}
        )  # fmt: skip
    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": profiles,
    }
    return load_config(raw, default_registry())


def test_harmonic_run_builds_one_usage_model_from_the_metrics_api(
    api: ApiServerDouble, transport: Transport
) -> None:
    from harmonic.plugins.usage_setup import usage_services
    from harmonic.signals.identity import WorkloadKey

    api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "namespace": "shop",
               "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u", "controller": True}]},
               "spec": {"containers": [{"name": "c", "image": "i"}]}})  # fmt: skip
    api.create("metrics.k8s.io/nodes", {"metadata": {"name": "n1"}, "usage": {"cpu": "1", "memory": "1Gi"}})
    api.create("metrics.k8s.io/pods", {"metadata": {"name": "web-1", "namespace": "shop"}, "containers": [{"name": "c", "usage": {"cpu": "300m", "memory": "1Mi"}}]})  # fmt: skip
    services = usage_services(_config(None, None), lambda path: transport.request("GET", path))
    model = services["node_usage"]
    view = model.refresh(0.0)
    assert view.fresh and view.nodes["n1"].cpu_mean == 1000
    assert view.workloads[WorkloadKey("shop", "web")].cpu.mean[0] == 300


def test_profiles_must_agree_on_the_metric_provider() -> None:
    import pytest

    from harmonic.framework.config import ConfigError
    from harmonic.plugins.usage_setup import usage_services

    cfg = _config(None, {"type": "Prometheus", "address": "http://prom:9090"})
    with pytest.raises(ConfigError, match="different metricProvider"):
        usage_services(cfg, lambda path: None)
    assert usage_services(_config(), lambda path: None) == {}
