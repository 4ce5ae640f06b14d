"""The Prometheus source against a real Prometheus server scraping Istio/Linkerd-shaped series."""

from __future__ import annotations

import pytest

from harmonic.signals.graph import AffinityGraph
from harmonic.signals.identity import WorkloadKey
from harmonic.signals.prometheus import PrometheusSource

SHOP = "shop"


def _edges(reading):
    return {(str(s.src), str(s.dst)): s for s in reading.samples}


def test_istio_source_reads_request_and_byte_rates(prometheus):
    src = PrometheusSource(prometheus, mesh="istio", window="5s")
    r = src.read()
    assert r.ok, r.reason
    edges = _edges(r)
    assert set(edges) == {
        ("shop/frontend", "shop/cartservice"),
        ("shop/frontend", "shop/productcatalog"),
        ("shop/checkout", "shop/cartservice"),
    }
    # rate() over a 5 s window of 1 s scrapes: within 25% of the published rates
    assert edges[("shop/frontend", "shop/productcatalog")].requests == pytest.approx(60.0, rel=0.25)
    assert edges[("shop/frontend", "shop/cartservice")].requests == pytest.approx(20.0, rel=0.25)
    assert edges[("shop/frontend", "shop/productcatalog")].bytes == pytest.approx(4096.0, rel=0.25)
    assert edges[("shop/checkout", "shop/cartservice")].bytes == 0.0
    # the 'unknown' source series is skipped and reported, not guessed
    assert any("unknown" in s for s in r.skipped)


def test_reporter_choice_counts_each_call_once(prometheus):
    dest = PrometheusSource(prometheus, mesh="istio", reporter="destination", window="5s").read()
    assert dest.ok
    assert set(_edges(dest)) == {("shop/frontend", "shop/cartservice")}


def test_linkerd_source_uses_outbound_deployment_labels(prometheus):
    r = PrometheusSource(prometheus, mesh="linkerd", window="5s").read()
    assert r.ok, r.reason
    edges = _edges(r)
    assert set(edges) == {("emojivoto/web", "emojivoto/emoji"), ("emojivoto/web", "emojivoto/voting")}
    assert edges[("emojivoto/web", "emojivoto/emoji")].requests == pytest.approx(12.0, rel=0.25)


def test_graph_the_plugin_sees(prometheus):
    graph = AffinityGraph(half_life=60)
    readings = graph.refresh([PrometheusSource(prometheus, mesh="istio", window="5s")], now=0.0)
    assert readings[0].ok
    peers, weights = graph.view.neighbours(WorkloadKey(SHOP, "frontend"))
    got = dict(zip(map(str, peers), weights.tolist(), strict=True))
    assert set(got) == {"shop/cartservice", "shop/productcatalog"}
    assert got["shop/productcatalog"] > 2 * got["shop/cartservice"]
    cart_peers, _ = graph.view.neighbours(WorkloadKey(SHOP, "cartservice"))
    assert set(map(str, cart_peers)) == {"shop/frontend", "shop/checkout"}  # affinity is symmetric


@pytest.mark.parametrize(
    "query",
    [
        "this is not promql(",
        "sum by (source_workload) (rate(istio_requests_total[5s]))",  # labels missing for the other end
        "sum(rate(no_such_metric_total[5s]))",  # empty result
    ],
)
def test_bad_queries_degrade_to_no_signal(prometheus, query):
    from harmonic.signals.prometheus import PRESETS, MeshQueries

    base = PRESETS["istio"]
    q = MeshQueries(query, None, base.src, base.src_namespace, base.dst, base.dst_namespace)
    r = PrometheusSource(prometheus, queries=q, window="5s").read()
    assert not r.ok
    assert r.reason


def test_unreachable_prometheus_is_no_signal_and_graph_keeps_its_edges(prometheus):
    graph = AffinityGraph(half_life=60)
    graph.refresh([PrometheusSource(prometheus, window="5s")], now=0.0)
    before = graph.view
    dead = PrometheusSource("http://127.0.0.1:9", window="5s", timeout=0.5)
    readings = graph.refresh([dead], now=30.0)
    assert not readings[0].ok and readings[0].reason.startswith("unreachable")
    assert graph.view is before


def test_one_empty_result_is_news_a_lasting_one_warns_ever_more_rarely(prometheus, caplog):
    # a mesh whose workloads have not called each other yet answers with no series: the first read in
    # a row logs at INFO, the 2nd, 4th, 8th... warn and the ones between are DEBUG; a failure other
    # than an empty result warns at once
    from harmonic.signals.prometheus import PRESETS, MeshQueries

    base = PRESETS["istio"]
    empty = MeshQueries(
        "sum(rate(no_such_metric_total[5s]))",
        None,
        base.src,
        base.src_namespace,
        base.dst,
        base.dst_namespace,
    )
    quiet = PrometheusSource(prometheus, queries=empty, window="5s", name="quiet")
    graph = AffinityGraph(half_life=60)

    def levels(now: float) -> dict[str, int]:
        caplog.clear()
        with caplog.at_level("DEBUG", logger="harmonic.signals"):
            graph.refresh([quiet], now=now)
        return {
            r.getMessage().split(":")[0]: r.levelno
            for r in caplog.records
            if r.name.startswith("harmonic.signals")
        }

    info, warning, debug = 20, 30, 10
    seen = [levels(30.0 * i) for i in range(5)]
    assert seen == [{"quiet": lvl, "affinity graph": lvl} for lvl in (info, warning, debug, warning, debug)]
    # a signal ends the silence: the graph's next silent refresh is news again
    graph.refresh([PrometheusSource(prometheus, mesh="istio", window="5s")], now=200.0)
    assert levels(230.0) == {"quiet": debug, "affinity graph": info}
    broken = PrometheusSource("http://127.0.0.1:9", window="5s", timeout=0.5, name="broken")
    caplog.clear()
    with caplog.at_level("INFO", logger="harmonic.signals"):
        assert not broken.read().ok
    assert [r.levelno for r in caplog.records if r.name.startswith("harmonic.signals")] == [warning]
