"""Latency truth: the call graph, the M/M/1 sojourn, the M/M/c wait per service, utilisation and sampled
request paths."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from harmonic.sim.scenario import NetworkModel
from harmonic.sim.topology import Edge, TopologyInstance
from harmonic.sim.truth.latency import (
    MIN_CORES,
    RHO_MAX,
    Replicas,
    RequestSampler,
    arrival_rates,
    call_graph,
    mean_sojourn_ms,
    pooled_wait_ms,
    utilisation,
)

ZONES = {"n1": "z1", "n2": "z1", "n3": "z2"}
ZERO_NET = NetworkModel(same_node_ms=0.0, cross_node_ms=0.0, cross_zone_ms=0.0)
NET = NetworkModel(same_node_ms=0.1, cross_node_ms=0.5, cross_zone_ms=2.0)


def topo(services: str, edges: list[tuple[str, str, float]], routing: str = "random", rate: float = 10.0):
    return TopologyInstance(
        name="t",
        namespace="t",
        user_rate=rate,
        services=tuple(services.split()),
        edges=tuple(Edge(s, d, w) for s, d, w in edges),
        routing=routing,
    )


GRAPHS = {
    "chain": (
        "a b c",
        [("a", "b", 1), ("b", "c", 1)],
        ("a",),
        ("a", "b", "c"),
        {"b": "a", "c": "b"},
    ),
    "listed out of order": (
        "c b a",
        [("a", "b", 1), ("b", "c", 1)],
        ("a",),
        ("a", "b", "c"),
        {"b": "a", "c": "b"},
    ),
    # d is called by b (weight 1) and c (weight 3): its main caller is the heaviest earlier one.
    "heaviest caller is primary": (
        "a b c d",
        [("a", "b", 1), ("a", "c", 1), ("b", "d", 1), ("c", "d", 3)],
        ("a",),
        ("a", "b", "c", "d"),
        {"b": "a", "c": "a", "d": "c"},
    ),
    # b <-> c cycle below the entry a: the edge closing it (c -> b) never makes c b's main caller.
    "cycle below an entry": (
        "a b c",
        [("a", "b", 1), ("b", "c", 1), ("c", "b", 5)],
        ("a",),
        ("a", "b", "c"),
        {"b": "a", "c": "b"},
    ),
    # A pure cycle has no entry: the first listed service is taken as one.
    "pure cycle": (
        "x y z",
        [("x", "y", 1), ("y", "z", 1), ("z", "x", 1)],
        ("x",),
        ("x", "y", "z"),
        {"y": "x", "z": "y"},
    ),
    # A cycle unreachable from the entry comes last; its first service there acts as its entry.
    "detached cycle": (
        "a b c d",
        [("a", "b", 1), ("c", "d", 1), ("d", "c", 1)],
        ("a",),
        ("a", "b", "c", "d"),
        {"b": "a", "d": "c"},
    ),
    # Self-calls and zero-weight edges are no edges; two entries.
    "self and zero edges": (
        "a b c",
        [("a", "a", 2), ("b", "c", 0), ("a", "c", 1)],
        ("a", "b"),
        ("a", "b", "c"),
        {"c": "a"},
    ),
    "no edges": ("a b", [], ("a", "b"), ("a", "b"), {}),
}


@pytest.mark.parametrize(
    ("services", "edges", "entries", "order", "primary"), GRAPHS.values(), ids=GRAPHS.keys()
)
def test_call_graph(services, edges, entries, order, primary):
    g = call_graph(topo(services, edges))
    assert g.entries == entries
    assert g.order == order
    assert dict(g.primary) == primary
    assert all(s != d and w > 0 for s, d, w in g.edges)
    assert set(g.services) == set(services.split())


SOJOURN = {
    # effective = S (1 + slowdown); rho = calls/s x effective / 1000 / max(cores, 1); mean = eff / (1 - rho)
    "idle": (2.0, 0.0, 0.0, 1.0, 2.0),
    "slowdown only": (2.0, 0.5, 0.0, 1.0, 3.0),
    "rho 0.3": (2.0, 0.5, 100.0, 1.0, 3.0 / 0.7),
    "small request bursts to one core": (2.0, 0.5, 100.0, 0.25, 3.0 / 0.7),
    "two cores": (2.0, 0.5, 100.0, 2.0, 3.0 / 0.85),
    "rho 0.5": (5.0, 0.0, 100.0, 1.0, 10.0),
    "saturated is capped": (2.0, 0.5, 1000.0, 1.0, 3.0 / (1 - RHO_MAX)),
    "exactly at the cap": (1.0, 0.0, 950.0, 1.0, 1.0 / (1 - RHO_MAX)),
}


@pytest.mark.parametrize(
    ("service", "slowdown", "rate", "cores", "expected"), SOJOURN.values(), ids=SOJOURN.keys()
)
def test_mean_sojourn(service, slowdown, rate, cores, expected):
    assert RHO_MAX == 0.95 and MIN_CORES == 1.0
    assert mean_sojourn_ms(service, slowdown, rate, cores) == pytest.approx(expected)


def test_mean_sojourn_is_monotone_and_bounded():
    rates = np.linspace(0, 2000, 101)
    values = [mean_sojourn_ms(2.0, 0.2, r, 1.0) for r in rates]
    assert all(b >= a for a, b in itertools.pairwise(values))
    assert max(values) == pytest.approx(2.4 / (1 - RHO_MAX))


POOLED = {
    # name: (service ms, replicas (count, cores, slowdown, calls/s each), expected mean wait ms)
    # One server: M/M/1's wait, rho S / (1 - rho): rho = 50/s x 10 ms = 0.5.
    "one core, half busy": (10.0, [(1, 1.0, 0.0, 50.0)], 0.5 * 10.0 / 0.5),
    # Two servers at offered load 1 (100/s x 10 ms): Erlang C = 1/3, wait C x S / (c - a) = 10/3.
    "two replicas of one core": (10.0, [(2, 1.0, 0.0, 50.0)], 10.0 / 3),
    "one replica of two cores": (10.0, [(1, 2.0, 0.0, 100.0)], 10.0 / 3),
    # A replica requesting less than a core still has one (MIN_CORES).
    "small requests count as one core": (10.0, [(2, 0.25, 0.0, 50.0)], 10.0 / 3),
    # Slowdown 1 doubles the service time: 25/s x 20 ms = 0.5 on one server: wait 20.
    "slowdown lengthens service": (10.0, [(1, 1.0, 1.0, 25.0)], 0.5 * 20.0 / 0.5),
    # Overloaded as a whole: the load is capped at RHO_MAX of the servers, as the first model caps rho.
    "overloaded service is capped": (10.0, [(1, 1.0, 0.0, 500.0)], RHO_MAX * 10.0 / (1 - RHO_MAX)),
    "no calls, no wait": (10.0, [(3, 1.0, 0.5, 0.0)], 0.0),
}


@pytest.mark.parametrize(("service", "replicas", "expected"), POOLED.values(), ids=POOLED.keys())
def test_pooled_wait_is_erlang_c(service, replicas, expected):
    assert pooled_wait_ms(service, [Replicas(*r) for r in replicas]) == pytest.approx(expected)


def test_pooled_wait_on_one_server_is_the_first_models_queueing():
    for rate in (10.0, 40.0, 80.0, 99.0):
        wait = pooled_wait_ms(10.0, [Replicas(1, 1.0, 0.0, rate)])
        assert wait + 10.0 == pytest.approx(mean_sojourn_ms(10.0, 0.0, rate, 1.0))


def test_pooling_never_waits_longer_than_separate_queues():
    """Four replicas at per-replica utilisation rho: one queue of four servers waits less than M/M/1."""
    for rate in (20.0, 50.0, 80.0, 94.0):
        pooled = pooled_wait_ms(10.0, [Replicas(4, 1.0, 0.0, rate)])
        assert pooled < mean_sojourn_ms(10.0, 0.0, rate, 1.0) - 10.0


UTILISATION = {
    "half busy": (10.0, 0.0, 50.0, 1.0, 0.5),
    "uncapped above 1": (10.0, 0.0, 200.0, 1.0, 2.0),
    "slowdown counts": (10.0, 0.5, 50.0, 1.0, 0.75),
    "two cores": (10.0, 0.0, 50.0, 2.0, 0.25),
    "small request: one core": (10.0, 0.0, 50.0, 0.1, 0.5),
}


@pytest.mark.parametrize(
    ("service", "slowdown", "rate", "cores", "expected"), UTILISATION.values(), ids=UTILISATION.keys()
)
def test_utilisation(service, slowdown, rate, cores, expected):
    assert utilisation(service, slowdown, rate, cores) == pytest.approx(expected)


def test_arrival_rates_follow_routing():
    """a (on n1) calls b 2x per user action at 10 actions/s: 20 calls/s. b has replicas on n1 and n3."""
    place = {"a": {"n1": 1}, "b": {"n1": 1, "n3": 1}}
    t = topo("a b", [("a", "b", 2)])
    assert arrival_rates(t, call_graph(t), place, ZONES) == {"b": pytest.approx({"n1": 10.0, "n3": 10.0})}
    t = topo("a b", [("a", "b", 2)], routing="preferZone")
    assert arrival_rates(t, call_graph(t), place, ZONES) == {"b": pytest.approx({"n1": 20.0})}


def _sampler(t: TopologyInstance, place, net=ZERO_NET) -> RequestSampler:
    return RequestSampler(t, call_graph(t), place, ZONES, net)


def _sojourn(sampler: RequestSampler, per_service: dict[str, float]) -> dict[str, np.ndarray]:
    return {s: np.full(len(sampler.names), per_service.get(s, 0.0)) for s in sampler.graph.services}


def test_single_node_latency_is_the_sum_of_exponential_sojourns():
    """All on n1, no network cost: a request is Exp(mean b) + Exp(mean c); the entry's own time is not
    a call. Over 40 000 requests the mean is within 2% (sd of the sum ~ 5.4, se ~ 0.03 on 7)."""
    t = topo("a b c", [("a", "b", 1), ("b", "c", 1)])
    s = _sampler(t, {"a": {"n1": 1}, "b": {"n1": 2}, "c": {"n1": 1}})
    paths = s.paths(40_000, np.random.default_rng(11))
    assert not paths.failed.any()
    lat = paths.latency_ms(_sojourn(s, {"a": 100.0, "b": 2.0, "c": 5.0}))
    assert lat.mean() == pytest.approx(7.0, rel=0.02)
    # A single exponential: mean = sd, median = mean x ln 2.
    t1 = topo("a b", [("a", "b", 1)])
    s1 = _sampler(t1, {"a": {"n1": 1}, "b": {"n1": 1}})
    lat1 = s1.paths(40_000, np.random.default_rng(12)).latency_ms(_sojourn(s1, {"b": 4.0}))
    assert lat1.mean() == pytest.approx(4.0, rel=0.02)
    assert lat1.std() == pytest.approx(4.0, rel=0.03)
    assert np.median(lat1) == pytest.approx(4.0 * np.log(2), rel=0.03)


@pytest.mark.parametrize(("weight", "mean_calls"), [(0.5, 0.5), (1.0, 1.0), (2.0, 2.0), (2.25, 2.25)])
def test_fractional_weights_make_that_many_calls_on_average(weight, mean_calls):
    t = topo("a b", [("a", "b", weight)])
    s = _sampler(t, {"a": {"n1": 1}, "b": {"n1": 1}}, NET)
    paths = s.paths(20_000, np.random.default_rng(3))
    # Sojourn 0 at every replica: latency is hops only, 0.1 ms each (same node).
    lat = paths.latency_ms(_sojourn(s, {}))
    assert lat.mean() == pytest.approx(0.1 * mean_calls, rel=0.03)
    whole = int(weight)
    calls_per_request = np.round(lat / 0.1).astype(int)
    assert set(np.unique(calls_per_request)) <= {whole, whole + 1}


HOPS = {
    # caller a on n1 (z1); b's only replica decides the hop.
    "same node": ({"n1": 1}, "random", 0.1),
    "other node, same zone": ({"n2": 1}, "random", 0.5),
    "other zone": ({"n3": 1}, "random", 2.0),
    # b on n1, n2, n3 with preferNode: a on n1 always calls n1.
    "preferNode keeps the node": ({"n1": 1, "n2": 1, "n3": 1}, "preferNode", 0.1),
    # b on n2, n3 with preferZone: always n2 (same zone, other node).
    "preferZone keeps the zone": ({"n2": 1, "n3": 1}, "preferZone", 0.5),
}


@pytest.mark.parametrize(("b_place", "routing", "hop"), HOPS.values(), ids=HOPS.keys())
def test_hop_cost_by_relation(b_place, routing, hop):
    t = topo("a b", [("a", "b", 1)], routing=routing)
    s = _sampler(t, {"a": {"n1": 1}, "b": b_place}, NET)
    lat = s.paths(500, np.random.default_rng(0)).latency_ms(_sojourn(s, {}))
    assert lat == pytest.approx(np.full(500, hop))


def test_random_routing_mixes_hops_by_replica_count():
    """b on n1 (1 replica), n2 (1), n3 (2): a call from n1 costs 0.1 w.p. 1/4, 0.5 w.p. 1/4, 2.0 w.p. 1/2."""
    t = topo("a b", [("a", "b", 1)])
    s = _sampler(t, {"a": {"n1": 1}, "b": {"n1": 1, "n2": 1, "n3": 2}}, NET)
    lat = s.paths(40_000, np.random.default_rng(5)).latency_ms(_sojourn(s, {}))
    assert lat.mean() == pytest.approx(0.1 / 4 + 0.5 / 4 + 2.0 / 2, rel=0.02)
    for value, p in ((0.1, 0.25), (0.5, 0.25), (2.0, 0.5)):
        assert np.isclose(lat, value).mean() == pytest.approx(p, abs=0.015)


def test_request_fails_when_a_callee_has_no_replica():
    t = topo("a b c", [("a", "b", 1), ("b", "c", 1)])
    s = _sampler(t, {"a": {"n1": 1}, "b": {"n1": 1}, "c": {}})
    paths = s.paths(200, np.random.default_rng(0))
    assert paths.failed.all()
    # No replica of the entry: nothing can be served.
    s = _sampler(t, {"b": {"n1": 1}, "c": {"n1": 1}})
    assert s.paths(200, np.random.default_rng(0)).failed.all()
    # A callee reached on half the requests (weight 0.5) fails about half of them.
    t = topo("a b c", [("a", "b", 1), ("a", "c", 0.5)])
    s = _sampler(t, {"a": {"n1": 1}, "b": {"n1": 1}, "c": {"n2": 0}})
    failed = s.paths(20_000, np.random.default_rng(1)).failed
    assert failed.mean() == pytest.approx(0.5, abs=0.02)
    # Everything placed: nothing fails.
    s = _sampler(t, {"a": {"n1": 1}, "b": {"n2": 1}, "c": {"n3": 1}})
    assert not s.paths(500, np.random.default_rng(1)).failed.any()


def test_same_draws_same_paths():
    t = topo("a b c", [("a", "b", 1.5), ("b", "c", 1)])
    place = {"a": {"n1": 1}, "b": {"n1": 1, "n3": 1}, "c": {"n2": 2}}
    s = _sampler(t, place, NET)
    soj = _sojourn(s, {"b": 1.0, "c": 3.0})
    one = s.paths(300, np.random.default_rng([4, 0, 0])).latency_ms(soj)
    two = s.paths(300, np.random.default_rng([4, 0, 0])).latency_ms(soj)
    np.testing.assert_array_equal(one, two)


def test_the_replica_that_answers_a_call_makes_the_next_calls():
    """a on n3 calls b (random routing: n1 or n2 with equal odds); b calls c with preferNode-like
    placement: c runs on both b nodes, so under preferNode c's call stays on b's node. The replica of b
    that answered a's call must be the one whose node c's call leaves from."""
    t = topo("a b c", [("a", "b", 1), ("b", "c", 1)], routing="preferNode")
    place = {"a": {"n3": 1}, "b": {"n1": 1, "n2": 1}, "c": {"n1": 1, "n2": 1}}
    s = _sampler(t, place, NET)
    paths = s.paths(2000, np.random.default_rng(9))
    by_service = {c.service: c for c in paths.calls}
    ab, bc = by_service["b"], by_service["c"]
    np.testing.assert_array_equal(ab.request, np.arange(2000))
    np.testing.assert_array_equal(bc.request, np.arange(2000))
    # preferNode from b's replica keeps c on the same node, so c's node is b's handling replica.
    np.testing.assert_array_equal(ab.callee, bc.callee)
