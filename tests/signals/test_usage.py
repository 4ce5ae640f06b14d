"""Usage signals: the Prometheus source's queries and parsing, the model's spread and forecasts."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest

from harmonic.signals.forecast import holt_winters
from harmonic.signals.identity import WorkloadKey
from harmonic.signals.usage import (
    NodeStats,
    PrometheusUsageSource,
    UsageModel,
    UsageReading,
    prometheus_queries,
)

Q = prometheus_queries("15m", pod_window="5m")


def _vector(series: list[tuple[dict[str, str], float]]) -> httpx.Response:
    body = {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": m, "value": [0, str(v)]} for m, v in series]},
    }
    return httpx.Response(200, content=json.dumps(body).encode())


ANSWERS = {
    Q["node_cpu"]: [({"node": "n1"}, 1.5), ({"node": "n2"}, 0.25), ({"node": ""}, 9.0)],
    Q["node_cpu_std"]: [({"node": "n1"}, 0.2)],
    Q["node_memory"]: [({"node": "n1"}, 2e9), ({"node": "n2"}, "NaN")],
    Q["node_memory_std"]: [({"node": "n1"}, 1e8)],
    Q["pod_cpu"]: [({"namespace": "shop", "pod": "web-1"}, 0.125)],
    Q["pod_memory"]: [({"namespace": "shop", "pod": "web-1"}, 5e7), ({"namespace": "shop", "pod": "db-0"}, 1e9)],
}  # fmt: skip


def _handler(request: httpx.Request) -> httpx.Response:
    assert request.url.path == "/api/v1/query"
    return _vector(ANSWERS[request.url.params["query"]])


def test_queries_are_node_exporter_and_cadvisor():
    assert Q["node_cpu"] == 'sum by (node) (rate(node_cpu_seconds_total{mode!="idle"}[15m]))'
    assert (
        "container_cpu_usage_seconds_total" in Q["pod_cpu"]
        and "container_memory_working_set_bytes" in Q["pod_memory"]
    )
    assert prometheus_queries("5m", "instance")["node_cpu"].startswith("sum by (instance)")
    # The forecast's pod series rates over 5m by default; the node figures keep the source's window.
    assert PrometheusUsageSource("http://prom").queries == Q
    assert "[5m]" in Q["pod_cpu"] and "[15m]" in Q["node_cpu"]


def test_prometheus_source_reads_nodes_and_pods():
    src = PrometheusUsageSource("http://prom", transport=httpx.MockTransport(_handler))
    r = src.read()
    assert r.ok and r.has_spread
    assert r.nodes["n1"] == NodeStats(1500.0, 200.0, 2e9, 1e8)
    # NaN memory and the unlabelled series are dropped, never guessed.
    assert r.nodes["n2"] == NodeStats(250.0, 0.0, 0.0, 0.0) and "" not in r.nodes
    assert r.pods[("shop", "web-1")] == (125.0, 5e7) and r.pods[("shop", "db-0")] == (0.0, 1e9)


@pytest.mark.parametrize(
    ("handler", "reason"),
    [
        (lambda req: httpx.Response(500, content=b'{"status":"error","errorType":"internal","error":"boom"}'), "query failed: HTTP 500"),
        (lambda req: httpx.Response(200, content=b"<html>"), "bad response"),
        (lambda req: _vector([]), "no node_cpu_seconds_total series"),
    ],
)  # fmt: skip
def test_prometheus_failures_are_no_signal(handler, reason):
    r = PrometheusUsageSource("http://prom", transport=httpx.MockTransport(handler)).read()
    assert not r.ok and r.reason.startswith(reason)


def test_no_node_series_once_is_news_and_a_warning_when_it_lasts(caplog):
    # Prometheus answers with no series before its first scrapes of the node exporters
    empty = PrometheusUsageSource("http://prom", transport=httpx.MockTransport(lambda req: _vector([])))
    levels = []
    for _ in range(4):
        caplog.clear()
        with caplog.at_level("DEBUG", logger="harmonic.signals"):
            assert not empty.read().ok
        levels.append([r.levelno for r in caplog.records if r.name.startswith("harmonic.signals")])
    assert levels == [[20], [30], [10], [30]]
    broken = PrometheusUsageSource(
        "http://prom", transport=httpx.MockTransport(lambda req: httpx.Response(500))
    )
    caplog.clear()
    with caplog.at_level("INFO", logger="harmonic.signals"):
        broken.read()
    assert [r.levelno for r in caplog.records if r.name.startswith("harmonic.signals")] == [30]


class _Seq:
    """A source replaying readings (a test double of the source protocol, not of the model)."""

    name = "seq"

    def __init__(self, readings: list[UsageReading]) -> None:
        self.readings = readings

    def read(self) -> UsageReading:
        return self.readings.pop(0)


def test_model_keeps_a_spread_for_sources_without_one_and_marks_failures_stale():
    readings = [UsageReading({"n1": NodeStats(c, 0, 0, 0)}, {}, has_spread=False) for c in (100.0, 300.0)]
    model = UsageModel(
        _Seq([*readings, UsageReading.no_signal("down")]), lambda ns, p: None, window_seconds=600
    )
    model.refresh(0.0)
    v = model.refresh(60.0)
    assert v.nodes["n1"].cpu_mean == 200.0 and v.nodes["n1"].cpu_std == 100.0
    assert v.fresh_at(100.0, 300) and not v.fresh_at(400.0, 300)
    down = model.refresh(120.0)
    assert not down.fresh and down.reason == "down" and down.nodes == v.nodes


def test_model_forecasts_per_pod_usage_of_each_workload_and_scores_itself():
    key = WorkloadKey("shop", "web")
    season = 12
    readings = []
    for t in range(5 * season):
        cpu = 500 + 300 * np.sin(2 * np.pi * t / season)
        # two pods of the workload: the model works per pod
        readings.append(
            UsageReading(
                {}, {("shop", "web-1"): (cpu, 1e6), ("shop", "web-2"): (cpu, 1e6), ("x", "y"): (1, 1)}
            )
        )
    model = UsageModel(_Seq(readings), lambda ns, p: key if ns == "shop" else None, refresh_seconds=60, season_seconds=60 * season, horizon_seconds=60 * season)  # fmt: skip
    for t in range(5 * season):
        v = model.refresh(60.0 * t)
    f = v.workloads[key].cpu
    truth = 500 + 300 * np.sin(2 * np.pi * np.arange(5 * season, 6 * season) / season)
    assert np.abs(f.mean - truth).max() < 30
    assert set(v.workloads) == {key}
    mape = model.mape()
    assert mape is not None and mape < 0.5


def test_holt_winters_with_one_season_repeats_it():
    # 1.5 seasons of a 4-step cycle: the last four steps repeat; the spread is that of y[t] - y[t-4].
    y = np.array([10.0, 20.0, 30.0, 20.0, 12.0, 22.0])
    f = holt_winters(y, season=4, horizon=6)
    assert f.mean.tolist() == [30.0, 20.0, 12.0, 22.0, 30.0, 20.0]
    assert f.std == pytest.approx(0.0)
    g = holt_winters(np.array([10.0, 20.0, 30.0, 20.0, 14.0, 22.0]), season=4, horizon=2)
    assert g.std == pytest.approx(1.0)  # differences 4 and 2


def test_holt_winters_without_two_seasons_is_flat_with_the_spread():
    f = holt_winters(np.array([100.0, 120.0, 80.0, 100.0]), season=10, horizon=5)
    assert len(f.mean) == 5 and np.ptp(f.mean) == 0 and f.std > 0
    assert f.peak(3, 2.0) == pytest.approx(float(f.mean[0]) + 2 * f.std)
    assert holt_winters(np.zeros(0), 10, 3).mean.tolist() == [0.0, 0.0, 0.0]


def test_statsmodels_backend_fits_the_same_season():
    pytest.importorskip("statsmodels")
    t = np.arange(48)
    y = 100 + 40 * np.sin(2 * np.pi * t / 12)
    f = holt_winters(y, season=12, horizon=12, backend="statsmodels")
    truth = 100 + 40 * np.sin(2 * np.pi * np.arange(48, 60) / 12)
    assert np.abs(f.mean - truth).max() < 5
