"""CommunicationAffinity: expected scores worked out by hand from the formula in the module docstring."""

from __future__ import annotations

import numpy as np
import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.conformance import build
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code
from harmonic.plugins.communicationaffinity.placement import PeerPlacement
from harmonic.signals.graph import AffinityGraph
from harmonic.signals.identity import WorkloadKey, workload_id
from harmonic.signals.telemetry import TrafficSample
from harmonic.testing import node, pod

SHOP = "shop"


class _Service:
    def __init__(self, edges):
        self.graph = AffinityGraph()
        self.graph.observe(
            [TrafficSample(WorkloadKey(SHOP, a), WorkloadKey(SHOP, b), r) for a, b, r in edges], now=0
        )

    @property
    def view(self):
        return self.graph.view


def replica(workload: str, i: int, node_name: str | None = None, app: str | None = None):
    b = (
        pod(f"{workload}-h{i}-x")
        .ns(SHOP)
        .owner("ReplicaSet", f"{workload}-h{i}")
        .label("pod-template-hash", f"h{i}")
    )
    if app:
        b.label("app.kubernetes.io/part-of", app)
    b.req(cpu="100m")
    if node_name:
        b.node(node_name)
    return b.obj()


NODES = [node("n1").zone("a").obj(), node("n2").zone("a").obj(), node("n3").zone("b").obj(), node("n4").obj()]
EDGES = [("frontend", "cart", 10.0), ("catalog", "frontend", 30.0)]


#: The first tables check the uniform-routing formula alone, without the availability guards.
RANDOM = {"routing": "random", "zoneBalance": False, "cohortLabel": ""}


def _scores(existing, args=None, edges=EDGES, services=True, incoming=None, nodes=NODES):
    case = {
        "plugin": "CommunicationAffinity",
        "args": RANDOM if args is None else args,
        "pod": incoming or replica("frontend", 9),
        "nodes": nodes,
        "existingPods": existing,
        "services": {"affinity_graph": _Service(edges)} if services else {},
    }
    plugin, p, snap, names = build(case)
    slots = np.asarray([snap.slot(n) for n in names])
    state = CycleState()
    st = plugin.pre_score(state, p, snap, slots)
    if st is not None:
        return st.code
    raw = plugin.score(state, p, snap, slots)
    return dict(zip(names, plugin.normalize_score(state, p, snap, slots, raw).tolist(), strict=True))


@pytest.mark.parametrize(
    ("name", "existing", "args", "expected"),
    [
        (
            # shares: n1 node .25 zone .25 -> 25; n2 zone .25 -> 8; n3 .75/.75 -> 75; n4 no zone -> 0;
            # normalised by the best (75)
            "traffic share at node and zone level",
            [replica("cart", 0, "n1"), replica("catalog", 0, "n3")],
            {},
            {"n1": 33, "n2": 10, "n3": 100, "n4": 0},
        ),
        (
            # catalog split over n1 and n3: n1 node .25+.375=.625 zone .625 -> 63 (62.5 rounds up);
            # n2 zone .625/3 -> 21; n3 (2*.375+.375)/3 -> 38; normalised by 63
            "traffic spread over replicas",
            [replica("cart", 0, "n1"), replica("catalog", 0, "n3"), replica("catalog", 1, "n1")],
            {},
            {"n1": 100, "n2": 33, "n3": 60, "n4": 0},
        ),
        (
            "node level only",
            [replica("cart", 0, "n1"), replica("catalog", 0, "n3")],
            {**RANDOM, "zoneWeight": 0},
            {"n1": 33, "n2": 0, "n3": 100, "n4": 0},
        ),
        (
            "cap on the pod's own replicas per node",
            [
                replica("cart", 0, "n1"),
                replica("catalog", 0, "n3"),
                replica("frontend", 0, "n3"),
                replica("frontend", 1, "n3"),
            ],
            {**RANDOM, "maxReplicasPerNode": 2},
            {"n1": 100, "n2": 32, "n3": 0, "n4": 0},
        ),
    ],
)
def test_scores(name, existing, args, expected):
    assert _scores(existing, {**RANDOM, **args}) == expected, name


CATALOG_SPLIT = [replica("cart", 0, "n1"), replica("catalog", 0, "n3"), replica("catalog", 1, "n1")]
CATALOG_IN_A = [replica("cart", 0, "n1"), replica("catalog", 0, "n1"), replica("catalog", 1, "n2")]
NO_GUARDS = {"zoneBalance": False, "cohortLabel": ""}


@pytest.mark.parametrize(
    ("name", "existing", "routing", "expected"),
    [
        (
            # A call goes to the peer's replicas in the caller's zone. n1 (zone a): cart 1/1 of zone a,
            # catalog 1/1 of zone a -> node (10+30)/40 = 1, zone 1 -> 100; n2: zone 1 -> 33; n3 (zone
            # b): catalog 1/1 of zone b -> .75, zone .75 -> 75 (uniform routing gave 60: 1/2 of catalog).
            "preferZone counts the peer's replicas in the candidate's zone",
            CATALOG_SPLIT,
            "preferZone",
            {"n1": 100, "n2": 33, "n3": 75, "n4": 0},
        ),
        (
            # n1: cart 1/1*10 + catalog 1/2*30 -> .625, zone 1 -> 75; n2: catalog 15 -> .375, zone 1 ->
            # 58; normalised by 75 (floor): 100, 77.
            "preferZone inside one zone",
            CATALOG_IN_A,
            "preferZone",
            {"n1": 100, "n2": 77, "n3": 0, "n4": 0},
        ),
        (
            # A call stays on the node whenever the peer runs there: n1 (10+30)/40 -> 100; n2 30/40
            # node, zone 1 -> (1.5+1)/3 -> 83.
            "preferNode counts any replica on the node as all of the peer's traffic",
            CATALOG_IN_A,
            "preferNode",
            {"n1": 100, "n2": 83, "n3": 0, "n4": 0},
        ),
    ],
)
def test_routing_modes(name, existing, routing, expected):
    assert _scores(existing, {**NO_GUARDS, "routing": routing}) == expected, name


@pytest.mark.parametrize(
    ("balance", "expected"),
    [
        # frontend already runs on n1 (zone a); zone b and the unzoned n4 hold none, so zone a gets no
        # pull; n3: cart 1/1 of zone b -> .25, zone .25 -> 25 -> 100; n4, where no peer runs, gets
        # nothing (its peers run in two zones, a and b: test_peer_zones).
        (True, {"n1": 0, "n2": 0, "n3": 100, "n4": 0}),
        # Without the guard zone a pulls n2 (zone share .25 -> 8, normalised 32); n1 is still
        # excluded until the workload runs on two nodes.
        (False, {"n1": 0, "n2": 32, "n3": 100, "n4": 0}),
    ],
)
def test_zone_balance_keeps_replicas_spread_over_zones(balance, expected):
    existing = [replica("cart", 0, "n1"), replica("cart", 1, "n3"), replica("frontend", 0, "n1")]
    assert _scores(existing, {"zoneBalance": balance, "cohortLabel": ""}) == expected


THREE_ZONES = [node("z1").zone("a").obj(), node("z2").zone("b").obj(), node("z3").zone("c").obj()]
#: catalog runs 4 replicas on 3 zones, two in zone b; frontend runs one in each zone.
CATALOG_DOUBLED_IN_B = [
    replica("catalog", 0, "z1"),
    replica("catalog", 1, "z2"),
    replica("catalog", 2, "z2"),
    replica("catalog", 3, "z3"),
    replica("frontend", 0, "z1"),
    replica("frontend", 1, "z2"),
    replica("frontend", 2, "z3"),
]


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        (
            # Every zone holds one frontend (the floor lets all three pull) and each node all of its
            # zone's catalogs (node share 30/40 everywhere); the catalog is in every zone (presence
            # 30/40 everywhere): no zone is preferred.
            "presence only (the default)",
            {},
            {"z1": 100, "z2": 100, "z3": 100},
        ),
        (
            # Zone b serves half the catalog's replicas: zone term 30*(.5 + .5*2/4)/40 = .5625 against
            # 30*(.5 + .5/4)/40 = .46875 -> (1.5 + .5625)/3 = 69 against 66; normalised 100 and 95.
            "zoneLoadShare .5: the fourth frontend joins the zone that doubles its callee",
            {"zoneLoadShare": 0.5},
            {"z1": 95, "z2": 100, "z3": 95},
        ),
        (
            # Share only: 30*(2/4)/40 = .375 against 30*(1/4)/40 = .1875 -> (1.5 + .375)/3 = 63 against
            # (1.5 + .1875)/3 = 56; normalised 100 and 88.
            "zoneLoadShare 1",
            {"zoneLoadShare": 1.0},
            {"z1": 88, "z2": 100, "z3": 88},
        ),
    ],
)
def test_zone_load_share_follows_the_peers_zone_shares(name, args, expected):
    scores = _scores(CATALOG_DOUBLED_IN_B, {"cohortLabel": "", **args}, nodes=THREE_ZONES)
    assert scores == expected, name


def test_zone_balance_spreads_a_workload_traffic_says_nothing_about():
    # db has no peers in the graph and no cohort; its one replica runs on n1 (zone a). Traffic gives
    # no pull anywhere, so the least-populated zones (b, and the unzoned n4) get the floor of 1,
    # normalised to 100: the next replica goes to another zone rather than wherever other scores
    # would stack it. Without the guard the workload is drawn to its own replica: n1 is excluded until
    # it runs on two nodes, n2 shares its zone -> 100.
    existing = [replica("db", 0, "n1"), replica("frontend", 0, "n2")]
    balanced = _scores(existing, {"cohortLabel": ""}, incoming=replica("db", 1))
    assert balanced == {"n1": 0, "n2": 0, "n3": 100, "n4": 100}
    unguarded = _scores(existing, {"zoneBalance": False, "cohortLabel": ""}, incoming=replica("db", 1))
    assert unguarded == {"n1": 0, "n2": 100, "n3": 0, "n4": 0}


@pytest.mark.parametrize(
    ("cohort_label", "incoming_app", "expected"),
    [
        # No telemetry about frontend yet: cart, of the same application, is its only peer: n3 -> 100.
        ("app.kubernetes.io/part-of", "shop", {"n1": 0, "n2": 0, "n3": 100, "n4": 0}),
        # Another application's workloads are not peers; nothing else is known: no signal.
        ("app.kubernetes.io/part-of", "news", Code.SKIP),
        # The cohort is off.
        ("", "shop", Code.SKIP),
    ],
)
def test_application_cohort_stands_in_before_telemetry(cohort_label, incoming_app, expected):
    existing = [replica("cart", 0, "n3", app="shop"), replica("ads", 0, "n1", app="blog")]
    got = _scores(
        existing,
        {"cohortLabel": cohort_label},
        edges=[("x", "y", 1.0)],
        incoming=replica("frontend", 9, app=incoming_app),
    )
    assert got == expected


def test_no_graph_service_and_no_cohort_skips():
    assert _scores([replica("cart", 0, "n1")], services=False) == Code.SKIP


def test_no_running_peers_and_no_own_replicas_skips():
    assert _scores([replica("other", 0, "n1")]) == Code.SKIP


@pytest.mark.parametrize(
    ("own", "expected"),
    [
        # second replica: n2 already hosts the only one and the workload needs 2 nodes, so no pull
        # there; its zone (a) still pulls n1: zone share 1 -> (0*2 + 1)/3 -> 33 -> normalised 100
        (["n2"], {"n1": 100, "n2": 0, "n3": 0, "n4": 0}),
        # third replica: two nodes used, gathering allowed: n1/n2 node .5 zone 1 -> 67 each
        (["n1", "n2"], {"n1": 100, "n2": 100, "n3": 0, "n4": 0}),
    ],
)
def test_first_workload_of_an_app_gathers_its_own_replicas(own, expected):
    assert _scores([replica("frontend", i, n) for i, n in enumerate(own)]) == expected


TWO_ZONES = [
    node("n1").zone("a").obj(),
    node("n2").zone("a").obj(),
    node("n3").zone("b").obj(),
    node("n5").zone("b").obj(),
]


@pytest.mark.parametrize(
    ("nodes", "span", "expected"),
    [
        # Two zones: a third replica beside either of the first two would leave the workload on one
        # node once the other fails, so the nodes hosting it get no pull until it spans three.
        (TWO_ZONES, 3, {"n1": 0, "n2": 100, "n3": 0, "n5": 100}),
        # Switched off: its own nodes pull (node .5, zone .5 -> 50) twice as hard as their zones'
        # other nodes (zone .5 -> 17, normalised against 50 -> 34).
        (TWO_ZONES, 0, {"n1": 100, "n2": 34, "n3": 100, "n5": 34}),
        # Three failure domains (zones a, b and the unlabelled n4): zones already give the spread.
        (NODES, 3, {"n1": 100, "n2": 34, "n3": 100, "n4": 0}),
    ],
)
def test_with_fewer_zones_than_the_node_failure_span_a_workload_spreads_over_nodes(nodes, span, expected):
    existing = [replica("frontend", 0, "n1"), replica("frontend", 1, "n3")]
    assert _scores(existing, {**RANDOM, "nodeFailureSpan": span}, nodes=nodes) == expected


def test_unknown_workload_skips():
    assert _scores([replica("cart", 0, "n1")], edges=[("x", "y", 1.0)]) == Code.SKIP


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"nodeWeight": -1}, "nodeWeight"),
        ({"nodeWeight": 0, "zoneWeight": 0}, "zoneWeight"),
        ({"bogus": 1}, "bogus"),
        ({"nodeFailureSpan": -1}, "nodeFailureSpan"),
        ({"zoneLoadShare": 1.5}, "zoneLoadShare"),
        ({"zoneLoadShare": -0.1}, "zoneLoadShare"),
        ({"zoneLoadShare": 0.5, "routing": "random"}, "zoneLoadShare"),
    ],
)
def test_bad_args(args, field):
    from pydantic import ValidationError

    from harmonic.plugins.communicationaffinity import CommunicationAffinityArgs

    with pytest.raises(ValidationError) as e:
        CommunicationAffinityArgs.model_validate(args)
    assert field in str(e.value) or "nodeWeight + zoneWeight" in str(e.value)


def _after_leaving(existing, args, leave: dict, seconds: float):
    """Scores once the pod ``leave`` has gone from its node and ``seconds`` have passed."""
    case = {
        "plugin": "CommunicationAffinity",
        "args": args,
        "pod": replica("frontend", 9),
        "nodes": NODES,
        "existingPods": [*existing, leave],
        "services": {"affinity_graph": _Service(EDGES)},
    }
    plugin, p, snap, names = build(case)
    gone = next(q for _, q in snap.all_pods() if q.name == leave["metadata"]["name"])
    snap.remove_pod(gone, leave["spec"]["nodeName"])
    plugin.handle.clock.advance(seconds)
    slots = np.asarray([snap.slot(n) for n in names])
    state = CycleState()
    plugin.pre_score(state, p, snap, slots)
    raw = plugin.score(state, p, snap, slots)
    return dict(zip(names, plugin.normalize_score(state, p, snap, slots, raw).tolist(), strict=True))


BALANCED = {"cohortLabel": "", "minNodesPerWorkload": 1, "nodeFailureSpan": 0}


@pytest.mark.parametrize(
    ("name", "existing", "args", "expected"),
    [
        (
            # cart runs in zones a and b, frontend in a: the floor and the pull go to zone b only, not
            # to the unzoned n4 where no peer runs (a replica there would call out of its zone).
            "peers in two zones: the floor stays in them",
            [replica("cart", 0, "n1"), replica("cart", 1, "n3"), replica("frontend", 0, "n1")],
            BALANCED,
            {"n1": 0, "n2": 0, "n3": 100, "n4": 0},
        ),
        (
            "window 0: every least-populated zone gets the floor",
            [replica("cart", 0, "n1"), replica("cart", 1, "n3"), replica("frontend", 0, "n1")],
            {**BALANCED, "peerZoneWindowSeconds": 0},
            {"n1": 0, "n2": 0, "n3": 100, "n4": 4},
        ),
        (
            # Peers in zone a alone are not enough zones to survive a's loss: the workload spreads as
            # without the window (b and the unzoned n4 get the floor; traffic gives none there).
            "peers in one zone: no restriction",
            [replica("cart", 0, "n1"), replica("frontend", 0, "n2")],
            BALANCED,
            {"n1": 0, "n2": 0, "n3": 100, "n4": 100},
        ),
    ],
)
def test_peer_zones(name, existing, args, expected):
    assert _scores(existing, args) == expected, name


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        # cart's replica in zone b went 5 minutes ago (its node failed, it is being replaced): zone b
        # still counts as the peers', so frontend's next replica goes there (the floor, as no peer
        # runs there now), not to n4.
        (300.0, {"n1": 0, "n2": 0, "n3": 100, "n4": 0}),
        # Gone for longer than the window: the peers run in zone a alone, so no restriction.
        (900.0, {"n1": 0, "n2": 0, "n3": 100, "n4": 100}),
    ],
)
def test_a_zone_peers_just_left_still_counts_as_theirs(seconds, expected):
    existing = [replica("cart", 0, "n1"), replica("frontend", 0, "n1")]
    assert _after_leaving(existing, BALANCED, replica("cart", 1, "n3"), seconds) == expected


def test_peer_zone_window_must_not_be_negative():
    with pytest.raises(ValueError, match="peerZoneWindowSeconds"):
        _scores([], {"peerZoneWindowSeconds": -1})


def test_departures_older_than_the_window_are_forgotten():
    # Every finished Job is a workload of its own; a long-running scheduler keeps only recent ones.
    now = [0.0]
    snap = Snapshot()
    snap.set_node(parse_node(node("n1").zone("a").obj()))
    placement = PeerPlacement(snap, "topology.kubernetes.io/zone", clock=lambda: now[0], window=60.0)
    jobs = [parse_pod(pod(f"job{i}-x").owner("Job", f"job{i}").node("n1").obj()) for i in range(1100)]
    for p in jobs[:1024]:
        snap.add_pod(p, "n1")
        snap.remove_pod(p, "n1")
    assert len(placement.left) == 1024
    now[0] = 100.0  # the first 1024 departures are now older than the window
    for p in jobs[1024:]:
        snap.add_pod(p, "n1")
        snap.remove_pod(p, "n1")
    assert len(placement.left) < 100
    zone_a = int(snap.label("topology.kubernetes.io/zone").codes[snap.slot("n1")])
    assert placement.recent_zones([workload_id(jobs[-1])], since=40.0) == {zone_a}
    assert placement.recent_zones([workload_id(jobs[0])], since=0.0) == set()
