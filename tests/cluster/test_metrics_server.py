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
