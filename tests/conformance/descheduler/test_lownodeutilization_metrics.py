"""descheduler ``lownodeutilization_test.go`` with actual usage: every case of ``TestLowNodeUtilization``
"with metrics enabled" (``metricsUtilization: {source: KubernetesMetrics}``, its NodeMetrics and
PodMetrics, collected once), every case of ``TestLowNodeUtilizationWithPrometheusMetrics`` and
``TestLowNodeUtilizationPrometheusClientNilAtCreation``, translated (expected counts are upstream's).

Upstream's fake metrics client and fake Prometheus client become a metrics collector over fixed
readings and a query function returning the case's samples; the connections to the real sources are
tested in ``tests/rescheduler/test_providers.py``."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.rescheduler.providers import METRICS_SERVICE, MetricsCollector, MetricsProviders
from harmonic.rescheduler.runner import RunOptions
from harmonic.signals.usage import NodeStats, UsageReading
from tests.conformance.descheduler.test_lownodeutilization import (
    CASES,
    CPU_PODS,
    INCLUDE_DEFAULT,
    nodes3,
    rs,
    with_critical,
    with_local_storage,
)
from tests.conformance.descheduler.upstream import build_node, build_pod, ds_owner, profile
from tests.rescheduler.helpers import policy, run


class Readings:
    """metrics-server's answers for one case: NodeMetrics (millicores, bytes) and PodMetrics in default."""

    name = "fixed"

    def __init__(self, nodes: dict[str, tuple[int, int]], pods: dict[str, tuple[int, int]]) -> None:
        self.nodes, self.pods = nodes, pods

    def read(self) -> UsageReading:
        return UsageReading(
            {n: NodeStats(c, 0.0, m, 0.0) for n, (c, m) in self.nodes.items()},
            {("default", p): (float(c), float(m)) for p, (c, m) in self.pods.items()},
            has_spread=False,
        )


def metrics_server(nodes, pods) -> MetricsProviders:
    collector = MetricsCollector(Readings(nodes, pods))
    assert collector.collect()
    return MetricsProviders(collector=collector)


def usual(n3: int | None = 11, n1: int = 3201, pod_cpu: int = 401, count: int = 5):
    nodes = {"n1": (n1, 0), "n2": (401, 0)}
    if n3 is not None:
        nodes["n3"] = (n3, 0)
    return nodes, {f"p{i}": (pod_cpu, 0) for i in range(1, count + 1)}


#: Upstream's nodemetricses, podmetricses and expectedPodsWithMetricsEvicted, by case name.
WITH_METRICS: dict[str, tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]], int]] = {
    "no evictable pods": (
        {"n1": (2401, 1714978816), "n2": (401, 1714978816), "n3": (10, 1714978816)},
        {f"p{i}": (401, 0) for i in range(1, 6)},
        0,
    ),
    "without priorities": (*usual(), 4),
    "without priorities, but excluding namespaces": (*usual(), 0),
    "without priorities stop when cpu capacity is depleted": (*usual(n3=0), 4),
    "with priorities": (*usual(), 4),
    "without priorities evicting best-effort pods only": (*usual(), 4),
    "with extended resource": (*usual(), 0),
    "with extended resource in some of nodes": (*usual(), 0),
    "with extended resource in some of nodes with deviation": (*usual(), 0),
    "without priorities, but only other node is unschedulable": (*usual(n3=None), 0),
    "without priorities, but only other node doesn't match pod node selector for p4 and p5": (
        *usual(n3=None, count=3),
        3,
    ),
    "without priorities, but only other node doesn't match pod node affinity for p4 and p5": (
        *usual(n3=None, count=3),
        3,
    ),
    "deviation thresholds": (*usual(), 2),
    "deviation thresholds and overevicting memory": (
        {n: (4000, 3000) for n in ("n1", "n2", "n3")},
        {**{f"p{i}": (400, 375) for i in range(1, 9)}, "p9": (400, 3000)},
        0,
    ),
    "without priorities different evictions for requested and actual resources": (
        *usual(n3=None, pod_cpu=801, count=3),
        2,
    ),
    "without priorities with node eviction limit": (*usual(), 2),
}


def with_metrics_source(plugin_args: dict[str, Any]) -> dict[str, Any]:
    return {**plugin_args, "metricsUtilization": {"source": "KubernetesMetrics"}}


def balance(plugin_args, objects, services, top=None):
    pol = policy(profile("balance", "LowNodeUtilization", plugin_args, {"nodeFit": True}), **(top or {}))
    return run(pol, objects, options=RunOptions(min_nodes=0, churn_check=False), services=services)


KUBERNETES = {"metricsProviders": [{"source": "KubernetesMetrics"}]}


@pytest.mark.parametrize(
    ("plugin_args", "nodes", "pods", "evicted"),
    [
        pytest.param(c.values[0], c.values[1], c.values[2], c.values[4], id=f"{c.id} with metrics enabled")
        for c in CASES
    ],
)
def test_upstream_case_with_metrics_enabled(request, plugin_args, nodes, pods, evicted):
    name = request.node.callspec.id.removesuffix(" with metrics enabled")
    node_metrics, pod_metrics, want = WITH_METRICS[name]
    services = {METRICS_SERVICE: metrics_server(node_metrics, pod_metrics)}
    r = balance(with_metrics_source(plugin_args), nodes + pods, services, KUBERNETES)
    assert len(r.log.evictions) == want
    if evicted:
        assert {e.pod.name for e in r.log.evictions} <= set(evicted)


def test_upstream_include_only_default_namespace_with_metrics_enabled():
    """As ``test_upstream_include_only_default_namespace`` (include is refused at load): 2 evictions."""
    args = with_metrics_source({"thresholds": CPU_PODS[0], "targetThresholds": CPU_PODS[1]})
    services = {METRICS_SERVICE: metrics_server(*usual())}
    r = balance(args, nodes3() + INCLUDE_DEFAULT, services, KUBERNETES)
    assert sorted(e.pod.name for e in r.log.evictions) == ["p1", "p2"]


def test_every_upstream_case_has_its_metrics():
    assert {c.id for c in CASES} == set(WITH_METRICS)


# --------------------------------------------------------------------------- Prometheus
QUERY = "instance:node_cpu:rate:sum"
PROMETHEUS = {"metricsProviders": [{"source": "Prometheus", "prometheus": {"url": "http://prometheus:9090"}}]}


def samples(**values: float) -> list[dict[str, Any]]:
    """An instant vector as the Prometheus HTTP API returns it (upstream's ``sample(...)``)."""
    return [
        {"metric": {"__name__": QUERY, "instance": n}, "value": [1700000000, str(v)]}
        for n, v in values.items()
    ]


def fake_prometheus(result: list[dict[str, Any]]) -> MetricsProviders:
    asked: list[str] = []

    def query(promql: str) -> list[dict[str, Any]] | str:
        asked.append(promql)
        return result

    out = MetricsProviders(prometheus=query)
    out.asked = asked  # type: ignore[attr-defined]
    return out


def prom_args(low: float, high: float, **extra: Any) -> dict[str, Any]:
    return {
        "thresholds": {"MetricResource": low},
        "targetThresholds": {"MetricResource": high},
        "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": QUERY}},
        **extra,
    }


def prom_nodes() -> list[dict[str, Any]]:
    return [
        build_node("n1", 4000, 3000, 9),
        build_node("n2", 4000, 3000, 10),
        build_node("n3", 4000, 3000, 10),
    ]


PROM_PODS = [
    *[rs(f"p{i}", 400) for i in range(1, 6)],
    build_pod("p6", 400, 0, "n1", ds_owner),
    build_pod("p7", 400, 0, "n1", with_local_storage),
    build_pod("p8", 400, 0, "n1", with_critical),
    rs("p9", 400, "n2"),
]
SAMPLED = dict(n1=0.5695757575757561, n2=0.4245454545454522, n3=0.20381818181818104)
PROM_CASES = [
    pytest.param(prom_args(30, 50), SAMPLED, 1, id="with instance:node_cpu:rate:sum query"),
    pytest.param(
        prom_args(30, 50, evictionLimits={"node": 3}),
        SAMPLED,
        3,
        id="with instance:node_cpu:rate:sum query with more evictions",
    ),
    pytest.param(
        prom_args(5, 5, evictionLimits={"node": 2}, useDeviationThresholds=True),
        SAMPLED,
        2,
        id="with instance:node_cpu:rate:sum query with deviation",
    ),
    pytest.param(
        prom_args(10, 10, useDeviationThresholds=True),
        dict(n1=1, n2=0.5, n3=0),
        1,
        id="with instance:node_cpu:rate:sum query and deviation thresholds",
    ),
]


@pytest.mark.parametrize(("plugin_args", "values", "want"), PROM_CASES)
def test_upstream_prometheus_case(plugin_args, values, want):
    prom = fake_prometheus(samples(**values))
    r = balance(plugin_args, prom_nodes() + PROM_PODS, {METRICS_SERVICE: prom}, PROMETHEUS)
    assert prom.asked == [QUERY]  # type: ignore[attr-defined]
    assert len(r.log.evictions) == want


def test_upstream_prometheus_client_nil_at_creation():
    """The plugin is created (the policy loads) with no Prometheus connection; the one given to the run
    is used: 3 nodes over, over, under the thresholds, at least one eviction."""
    from harmonic.rescheduler.policy import load_policy

    load_policy(
        policy(profile("balance", "LowNodeUtilization", prom_args(30, 50), {"nodeFit": True}), **PROMETHEUS)
    )
    pods = [*[rs(f"p{i}", 400) for i in range(1, 6)], rs("p6", 400, "n2")]
    prom = fake_prometheus(samples(n1=0.57, n2=0.42, n3=0.20))
    r = balance(prom_args(30, 50), prom_nodes() + pods, {METRICS_SERVICE: prom}, PROMETHEUS)
    assert len(r.log.evictions) >= 1


@pytest.mark.parametrize(
    ("result", "why"),
    [
        ([{"metric": {"node": "n1"}, "value": [0, "0.5"]}], "missing 'instance' key"),
        (samples(n1=1.5, n2=0.1, n3=0.1), "outside of <0; 1> interval"),
        (samples(n1=0.5, n2=0.1), "unable to find metric entry for n3"),
        ("query failed: HTTP 400: bad_data", "unable to capture prometheus metrics"),
    ],
)
def test_prometheus_answers_upstream_refuses_stop_the_plugin(result, why):
    """Upstream's Balance returns an error and evicts nothing; the run says why."""
    prom = fake_prometheus(result)  # type: ignore[arg-type]
    r = balance(prom_args(30, 50), prom_nodes() + PROM_PODS, {METRICS_SERVICE: prom}, PROMETHEUS)
    assert r.log.evictions == []
    assert [(p, o) for p, o, _ in r.log.plans] == [("LowNodeUtilization", "error")]
    assert why in r.log.plans[0][2]
