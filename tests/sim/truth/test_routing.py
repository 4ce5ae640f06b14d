"""Routing truth: Kubernetes ``trafficDistribution`` semantics (random / preferZone / preferNode).

Expected values are worked out by hand from the documented rules: random spreads calls over every
ready replica; preferZone keeps them in the caller's zone when any replica is ready there, else all;
preferNode keeps them on the caller's node, else its zone, else all. A node gets calls in proportion
to the replicas it runs.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.sim.truth.routing import arrivals_per_replica, callee_shares, edge_locality

# n1, n2 in z1; n3, n4 in z2; n5 alone in z3.
ZONES = {"n1": "z1", "n2": "z1", "n3": "z2", "n4": "z2", "n5": "z3"}
SPREAD = {"n1": 1, "n2": 1, "n3": 2}

SHARES = {
    "random is uniform by replica count": ("n1", SPREAD, "random", {"n1": 0.25, "n2": 0.25, "n3": 0.5}),
    "random from a node without callee": ("n5", SPREAD, "random", {"n1": 0.25, "n2": 0.25, "n3": 0.5}),
    "preferZone keeps the caller's zone": ("n1", SPREAD, "preferZone", {"n1": 0.5, "n2": 0.5}),
    "preferZone other zone": ("n4", SPREAD, "preferZone", {"n3": 1.0}),
    "preferZone with no replica in zone uses all": (
        "n1",
        {"n3": 1, "n4": 3},
        "preferZone",
        {"n3": 0.25, "n4": 0.75},
    ),
    "preferZone does not prefer the node": ("n3", {"n3": 1, "n4": 1}, "preferZone", {"n3": 0.5, "n4": 0.5}),
    "preferNode keeps the node": ("n1", SPREAD, "preferNode", {"n1": 1.0}),
    "preferNode falls back to the zone": ("n2", {"n1": 2, "n3": 1}, "preferNode", {"n1": 1.0}),
    "preferNode falls back to the zone by count": (
        "n4",
        {"n1": 1, "n3": 1, "n4": 0},
        "preferNode",
        {"n3": 1.0},
    ),
    "preferNode falls back to all": ("n1", {"n3": 1, "n4": 1}, "preferNode", {"n3": 0.5, "n4": 0.5}),
    "zero counts are no replicas (random)": ("n1", {"n1": 0, "n2": 2}, "random", {"n2": 1.0}),
    "zero counts are no replicas (preferZone)": ("n1", {"n1": 0, "n3": 1}, "preferZone", {"n3": 1.0}),
    "zero counts are no replicas (preferNode)": (
        "n1",
        {"n1": 0, "n2": 1, "n3": 1},
        "preferNode",
        {"n2": 1.0},
    ),
    "no replica anywhere": ("n1", {}, "random", {}),
    "no replica anywhere (preferNode)": ("n1", {"n1": 0}, "preferNode", {}),
}


@pytest.mark.parametrize(("caller", "callee", "mode", "expected"), SHARES.values(), ids=SHARES.keys())
def test_callee_shares(caller, callee, mode, expected):
    got = callee_shares(caller, callee, ZONES, mode)
    assert got.keys() == expected.keys()
    for node, share in expected.items():
        assert got[node] == pytest.approx(share)


LOCALITY = {
    # Each caller replica on a node that also runs a callee replica, one per zone.
    "co-located, random": ({"n1": 1, "n3": 1}, {"n1": 1, "n3": 1}, "random", (0.5, 0.5)),
    "co-located, preferZone": ({"n1": 1, "n3": 1}, {"n1": 1, "n3": 1}, "preferZone", (1.0, 1.0)),
    "co-located, preferNode": ({"n1": 1, "n3": 1}, {"n1": 1, "n3": 1}, "preferNode", (1.0, 1.0)),
    # Callers on n2 (z1); callees on n1 (z1) and n3 (z2).
    "zone only, random": ({"n2": 2}, {"n1": 1, "n3": 1}, "random", (0.0, 0.5)),
    "zone only, preferZone": ({"n2": 2}, {"n1": 1, "n3": 1}, "preferZone", (0.0, 1.0)),
    "zone only, preferNode": ({"n2": 2}, {"n1": 1, "n3": 1}, "preferNode", (0.0, 1.0)),
    # Callers on n1, n2; callees on all four nodes of z1 and z2.
    "four callees, random": ({"n1": 1, "n2": 1}, {"n1": 1, "n2": 1, "n3": 1, "n4": 1}, "random", (0.25, 0.5)),
    "four callees, preferZone": (
        {"n1": 1, "n2": 1},
        {"n1": 1, "n2": 1, "n3": 1, "n4": 1},
        "preferZone",
        (0.5, 1.0),
    ),
    "four callees, preferNode": (
        {"n1": 1, "n2": 1},
        {"n1": 1, "n2": 1, "n3": 1, "n4": 1},
        "preferNode",
        (1.0, 1.0),
    ),
    # Callers weighted by their replicas: 3 on n4 (z2, reaches n3 in zone), 1 on n1 (z1, nothing there).
    "weighted callers, random": ({"n4": 3, "n1": 1}, {"n3": 1}, "random", (0.0, 0.75)),
    "weighted callers, preferZone": ({"n4": 3, "n1": 1}, {"n3": 1}, "preferZone", (0.0, 0.75)),
    "weighted callers, preferNode": ({"n4": 3, "n1": 1}, {"n3": 1}, "preferNode", (0.0, 0.75)),
    "no caller": ({}, {"n1": 1}, "preferNode", (0.0, 0.0)),
    "no caller replica": ({"n1": 0}, {"n1": 1}, "random", (0.0, 0.0)),
}


@pytest.mark.parametrize(("caller", "callee", "mode", "expected"), LOCALITY.values(), ids=LOCALITY.keys())
def test_edge_locality(caller, callee, mode, expected):
    assert edge_locality(caller, callee, ZONES, mode) == pytest.approx(expected)


ARRIVALS = {
    # 10 calls/s from callers spread evenly over n1 and n3.
    "even, random": ([({"n1": 1, "n3": 1}, 10.0)], {"n1": 1, "n3": 1}, "random", {"n1": 5.0, "n3": 5.0}),
    # 8 calls/s from 3 caller replicas on n1 and 1 on n3: random still halves; locality follows callers.
    "skewed, random": ([({"n1": 3, "n3": 1}, 8.0)], {"n1": 1, "n3": 1}, "random", {"n1": 4.0, "n3": 4.0}),
    "skewed, preferZone": (
        [({"n1": 3, "n3": 1}, 8.0)],
        {"n1": 1, "n3": 1},
        "preferZone",
        {"n1": 6.0, "n3": 2.0},
    ),
    "skewed, preferNode": (
        [({"n1": 3, "n3": 1}, 8.0)],
        {"n1": 1, "n3": 1},
        "preferNode",
        {"n1": 6.0, "n3": 2.0},
    ),
    # Per replica: n1 runs two callee replicas that share what reaches the node.
    "two replicas on a node, random": (
        [({"n2": 1}, 9.0)],
        {"n1": 2, "n3": 1},
        "random",
        {"n1": 3.0, "n3": 3.0},
    ),
    "two replicas on a node, preferZone": ([({"n2": 1}, 9.0)], {"n1": 2, "n3": 1}, "preferZone", {"n1": 4.5}),
    # Two callers add up: 4 calls/s from n1 (preferNode: n1) and 6 from n4 (zone z2: n3).
    "two callers, preferNode": (
        [({"n1": 1}, 4.0), ({"n4": 2}, 6.0)],
        {"n1": 1, "n3": 1},
        "preferNode",
        {"n1": 4.0, "n3": 6.0},
    ),
    "caller without replicas sends nothing": ([({}, 5.0), ({"n1": 0}, 5.0)], {"n1": 1}, "random", {}),
    "zero rate": ([({"n1": 1}, 0.0)], {"n1": 1}, "random", {}),
    "no callee": ([({"n1": 1}, 3.0)], {}, "random", {}),
}


@pytest.mark.parametrize(("callers", "callee", "mode", "expected"), ARRIVALS.values(), ids=ARRIVALS.keys())
def test_arrivals_per_replica(callers, callee, mode, expected):
    got = arrivals_per_replica(callers, callee, ZONES, mode)
    nodes = set(got) | set(expected)
    assert {n: got.get(n, 0.0) for n in nodes} == pytest.approx({n: expected.get(n, 0.0) for n in nodes})


# ------------------------------------------------------------------ properties
NODES = sorted(ZONES)
MODES = ("random", "preferZone", "preferNode")
placements = st.dictionaries(
    st.sampled_from(NODES), st.integers(min_value=0, max_value=4), max_size=len(NODES)
)


@settings(max_examples=150, deadline=None)
@given(caller=st.sampled_from(NODES), callee=placements, mode=st.sampled_from(MODES))
def test_shares_are_a_distribution_over_ready_replicas(caller, callee, mode):
    shares = callee_shares(caller, callee, ZONES, mode)
    if not any(c > 0 for c in callee.values()):
        assert shares == {}
        return
    assert sum(shares.values()) == pytest.approx(1.0)
    assert all(p > 0 and callee.get(n, 0) > 0 for n, p in shares.items())
    # Locality modes only narrow the candidates; among them, calls go by replica count.
    random_support = callee_shares(caller, callee, ZONES, "random")
    assert set(shares) <= set(random_support)
    total = sum(callee[n] for n in shares)
    assert all(p == pytest.approx(callee[n] / total) for n, p in shares.items())


@settings(max_examples=150, deadline=None)
@given(caller=placements, callee=placements)
def test_locality_orders_the_modes(caller, callee):
    """Same-node share: preferNode >= preferZone >= random. Same-zone share: preferNode == preferZone
    >= random (preferNode's fallback is preferZone's rule)."""
    rnd = edge_locality(caller, callee, ZONES, "random")
    zone = edge_locality(caller, callee, ZONES, "preferZone")
    node = edge_locality(caller, callee, ZONES, "preferNode")
    eps = 1e-9
    for same_node, same_zone in (rnd, zone, node):
        assert -eps <= same_node <= same_zone + eps <= 1 + 2 * eps
    assert node[0] >= zone[0] - eps >= rnd[0] - 2 * eps
    assert node[1] == pytest.approx(zone[1])
    assert zone[1] >= rnd[1] - eps


@settings(max_examples=150, deadline=None)
@given(
    callers=st.lists(st.tuples(placements, st.floats(min_value=0, max_value=100)), max_size=3),
    callee=placements,
    mode=st.sampled_from(MODES),
)
def test_arrivals_conserve_calls(callers, callee, mode):
    """Every call made by a caller with running replicas reaches some callee replica (when any runs)."""
    got = arrivals_per_replica(callers, callee, ZONES, mode)
    assert all(r >= 0 for r in got.values())
    sent = sum(rate for p, rate in callers if sum(p.values()) > 0 and rate > 0)
    received = sum(r * callee[n] for n, r in got.items())
    if any(c > 0 for c in callee.values()):
        assert received == pytest.approx(sent)
    else:
        assert got == {}
