import math

import pytest

from harmonic.signals.graph import AffinityGraph, WeightBy
from harmonic.signals.identity import WorkloadKey
from harmonic.signals.telemetry import TrafficSample

A, B, C = (WorkloadKey("ns", n) for n in "abc")


def test_first_reading_sets_rates_and_peers_are_symmetric():
    g = AffinityGraph(half_life=60)
    g.observe([TrafficSample(A, B, 10.0), TrafficSample(B, A, 2.0), TrafficSample(A, C, 1.0)], now=0)
    peers, w = g.view.neighbours(A)
    assert dict(zip(peers, w.tolist(), strict=True)) == {B: 12.0, C: 1.0}
    peers, w = g.view.neighbours(C)
    assert dict(zip(peers, w.tolist(), strict=True)) == {A: 1.0}
    assert g.version == 1


@pytest.mark.parametrize(("dt", "expected"), [(60, 5.0), (120, 7.5), (0, 0.0)])
def test_readings_blend_with_half_life(dt, expected):
    g = AffinityGraph(half_life=60)
    g.observe([TrafficSample(A, B, 0.0001)], now=0)
    g.observe([TrafficSample(A, B, 10.0)], now=dt)
    # after one half-life the edge has moved half way to the new rate
    assert g.edges()[0][2] == pytest.approx(0.0001 + (10.0 - 0.0001) * (1 - math.pow(2, -dt / 60)), rel=1e-9)
    assert g.edges()[0][2] == pytest.approx(expected, abs=1e-3)


def test_edges_missing_from_a_reading_decay_and_vanish():
    g = AffinityGraph(half_life=10, min_rate=0.01)
    g.observe([TrafficSample(A, B, 1.0)], now=0)
    g.observe([TrafficSample(A, C, 1.0)], now=10)
    rates = {(a, b): r for a, b, r, _ in g.edges()}
    assert rates[(A, B)] == pytest.approx(0.5)
    g.observe([TrafficSample(A, C, 1.0)], now=200)
    assert (A, B) not in {(a, b) for a, b, _, _ in g.edges()}


def test_weight_by_bytes_and_both():
    samples = [TrafficSample(A, B, requests=10.0, bytes=0.0), TrafficSample(A, C, requests=1.0, bytes=1000.0)]
    g = AffinityGraph(weight_by=WeightBy.BYTES)
    g.observe(samples, now=0)
    assert [str(p) for p in g.view.neighbours(A)[0]] == ["ns/c"]
    g2 = AffinityGraph(weight_by=WeightBy.BOTH)
    g2.observe(samples, now=0)
    peers, w = g2.view.neighbours(A)
    got = dict(zip(peers, w.tolist(), strict=True))
    assert got[B] == pytest.approx(10 / 11)
    assert got[C] == pytest.approx(1 / 11 + 1.0)


def test_top_edges_and_explain():
    g = AffinityGraph()
    g.observe([TrafficSample(A, B, 3.0), TrafficSample(A, C, 9.0)], now=0)
    top = g.top_edges(1)
    assert top == [
        {"src": "ns/a", "dst": "ns/c", "weight": 9.0, "requests_per_second": 9.0, "bytes_per_second": 0.0}
    ]
    ex = g.explain(A)
    assert [p["workload"] for p in ex["peers"]] == ["ns/c", "ns/b"]
    assert ex["peers"][0]["share"] == pytest.approx(0.75)


def test_bad_half_life_is_rejected():
    with pytest.raises(ValueError, match="half_life"):
        AffinityGraph(half_life=0)
