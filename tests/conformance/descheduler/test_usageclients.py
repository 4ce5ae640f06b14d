"""descheduler ``pkg/framework/plugins/nodeutilization/usageclients_test.go``: ``TestActualUsageClient``
and every case of ``TestPrometheusUsageClient``, translated (expected values are upstream's).

Upstream's fake metrics clientset and fake Prometheus client become a metrics collector over readings
the test changes, and a query function returning the case's answer; error texts are upstream's where
Harmonic produces the error itself (the "not a vector" one comes from the Prometheus HTTP reader)."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.rescheduler.plugins.usageclients import (
    METRIC_RESOURCE,
    ActualUsage,
    PrometheusUsage,
    UsageError,
)
from harmonic.rescheduler.providers import MetricsCollector
from harmonic.signals.usage import NodeStats, UsageReading
from tests.conformance.descheduler.upstream import build_node, build_pod


class NodeMetrics:
    """A metrics-server whose NodeMetrics the test updates (upstream: ``Tracker().Update``)."""

    name = "fake"

    def __init__(self, **cpu: int) -> None:
        self.cpu = dict(cpu)

    def read(self) -> UsageReading:
        return UsageReading({n: NodeStats(c, 0.0, 1714978816, 0.0) for n, c in self.cpu.items()}, {})


def test_upstream_actual_usage_client():
    nodes = [parse_node(build_node(n, 2000, 3000, 10)) for n in ("n1", "n2", "n3")]
    pods = [
        [parse_pod(build_pod("p1", 400, 0, "n1"))],
        [parse_pod(build_pod("p21", 400, 0, "n2")), parse_pod(build_pod("p22", 400, 0, "n2"))],
        [parse_pod(build_pod("p3", 400, 0, "n3"))],
    ]
    source = NodeMetrics(n1=400, n2=1400, n3=300)
    collector = MetricsCollector(source)
    client = ActualUsage(collector)
    # updateMetricsAndCheckNodeUtilization(new n2 CPU, expected n2 CPU): the weighted average.
    for new, want in ((1400, 1400), (500, 1310), (900, 1269)):
        source.cpu["n2"] = new
        assert collector.collect()
        used = client.node_usage(nodes, pods, ["cpu", "memory"])
        assert used[1].tolist() == [want, 1714978816]


NAMES = ("ip-10-0-17-165.ec2.internal", "ip-10-0-51-101.ec2.internal", "ip-10-0-94-25.ec2.internal")


def sample(name: str | None, value: float) -> dict[str, Any]:
    metric = {"__name__": "instance:node_cpu:rate:sum"}
    if name is not None:
        metric["instance"] = name
    return {"metric": metric, "value": [1728991761.711, repr(value)]}


@pytest.mark.parametrize(
    ("answer", "usage", "error"),
    [
        pytest.param(
            [
                sample(NAMES[1], 0.20381818181818104),
                sample(NAMES[0], 0.4245454545454522),
                sample(NAMES[2], 0.5695757575757561),
            ],
            {NAMES[1]: 20, NAMES[0]: 42, NAMES[2]: 56},
            None,
            id="valid data",
        ),
        pytest.param(
            [sample(None, 0.20381818181818104)],
            None,
            "the collected metrics sample is missing 'instance' key",
            id="invalid data missing instance label",
        ),
        pytest.param(
            [sample(NAMES[1], 1.20381818181818104)],
            None,
            f"the collected metrics sample for {NAMES[1]!r} has value 1.203818181818181 outside of <0; 1> interval",
            id="invalid data value out of range",
        ),
        pytest.param(
            "query failed: expected an instant vector, got 'scalar'",
            None,
            "unable to capture prometheus metrics: query failed: expected an instant vector, got 'scalar'",
            id="invalid data not a vector",
        ),
    ],
)
def test_upstream_prometheus_usage_client(answer, usage, error):
    nodes = [parse_node(build_node(n, 2000, 3000, 10)) for n in NAMES]
    client = PrometheusUsage(lambda q: answer, "instance:node_cpu:rate:sum")
    if error is not None:
        with pytest.raises(UsageError) as e:
            client.node_usage(nodes, [[], [], []], [METRIC_RESOURCE])
        assert str(e.value) == error
        return
    used = client.node_usage(nodes, [[], [], []], [METRIC_RESOURCE])
    assert dict(zip(NAMES, used[:, 0].tolist(), strict=True)) == usage
    assert client.pod_usage(parse_pod(build_pod("p1", 400, 0, NAMES[0])), [METRIC_RESOURCE]) is None
