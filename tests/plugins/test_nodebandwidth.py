"""NodeBandwidth: expectations worked by hand from the documented rules (NodeResourcesFit's arithmetic)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.conformance import build
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code
from harmonic.plugins.nodebandwidth import DISK_BANDWIDTH, NETWORK_BANDWIDTH, NodeBandwidth
from harmonic.testing import node, pod
from tests.plugins.conftest import config_error

NET, DISK = NETWORK_BANDWIDTH, DISK_BANDWIDTH
UNSCHED, UNRESOLVABLE = int(Code.UNSCHEDULABLE), int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

# a: 1000 bytes/s of NIC as an extended resource; b: 1000 as a label, disk 400; c: advertises nothing.
NODES = [
    node("a").cap(**{NET: "1000"}).obj(),
    node("b").label(NET, "1000").label(DISK, "400").obj(),
    node("c").obj(),
]
# a holds 600 declared by annotation; b holds 200 (network) and 300 (disk).
EXISTING = [
    pod("chatty").annotation(NET, "600").node("a").obj(),
    pod("talker").annotation(NET, "200").annotation(DISK, "300").node("b").obj(),
    pod("quiet").req(cpu="1").node("c").obj(),
]


def _case(incoming: dict[str, Any], args: dict[str, Any] | None = None) -> tuple[Any, Any, Any, list[str]]:
    return build({"plugin": "NodeBandwidth", "args": args or {}, "pod": incoming, "nodes": NODES, "existingPods": EXISTING})  # fmt: skip


def _filter(incoming: dict[str, Any]) -> dict[str, tuple[int, tuple[str, ...]]] | str:
    plugin, p, snap, names = _case(incoming)
    state = CycleState()
    _, status = plugin.pre_filter(state, p, snap)
    if status is not None:
        return f"{status.code.name}: {status.message}" if status.code != Code.SKIP else "Skip"
    v = plugin.filter(state, p, snap, np.asarray([snap.slot(n) for n in names]))
    if v is None:
        return {n: (0, ()) for n in names}
    return {n: (int(v.code[i]), v.reasons[v.reason[i]] if v.code[i] else ()) for i, n in enumerate(names)}


def _score(incoming: dict[str, Any], args: dict[str, Any] | None = None) -> dict[str, int] | str:
    plugin, p, snap, names = _case(incoming, args)
    state = CycleState()
    slots = np.asarray([snap.slot(n) for n in names])
    status = plugin.pre_score(state, p, snap, slots)
    if status is not None:
        return status.code.name
    return dict(zip(names, plugin.score(state, p, snap, slots).tolist(), strict=True))


OK = (0, ())
SHORT_NET = (UNSCHED, (f"Insufficient {NET}",))

FILTER_CASES = [
    ("no declared bandwidth skips", pod("x").req(cpu="1").obj(), "Skip"),
    # a: 600 + 300 <= 1000; b: 200 + 300 <= 1000; c: not limited
    ("fits everywhere", pod("x").annotation(NET, "300").obj(), {"a": OK, "b": OK, "c": OK}),
    # a: 600 + 500 > 1000; b: 200 + 500 fits
    ("a NIC past its capacity", pod("x").annotation(NET, "500").obj(), {"a": SHORT_NET, "b": OK, "c": OK}),
    # the extended-resource request counts like the annotation
    ("extended resource request", pod("x").req(**{NET: "500"}).obj(), {"a": SHORT_NET, "b": OK, "c": OK}),
    # bandwidth CNI annotations, bits/s: (2400 + 1600) / 8 = 500 bytes/s
    ("CNI ingress + egress bits", pod("x").annotation("kubernetes.io/ingress-bandwidth", "2400").annotation("kubernetes.io/egress-bandwidth", "1600").obj(), {"a": SHORT_NET, "b": OK, "c": OK}),
    # more than any node's whole NIC: no eviction can help
    ("beyond capacity", pod("x").annotation(NET, "1500").obj(), {"a": (UNRESOLVABLE, (f"Insufficient {NET}",)), "b": (UNRESOLVABLE, (f"Insufficient {NET}",)), "c": OK}),
    # disk: only b advertises it (300 used of 400)
    ("disk", pod("x").annotation(DISK, "200").obj(), {"a": OK, "b": (UNSCHED, (f"Insufficient {DISK}",)), "c": OK}),
    ("both short", pod("x").annotation(NET, "900").annotation(DISK, "200").obj(), {"a": SHORT_NET, "b": (UNSCHED, (f"Insufficient {NET}", f"Insufficient {DISK}")), "c": OK}),
    ("malformed annotation", pod("x").annotation(NET, "fast").obj(), f"UNSCHEDULABLE_AND_UNRESOLVABLE: pod default/x: annotation {NET}: 'fast' is not a quantity (expected e.g. '500m', '2Gi', '1.5', '1e3')"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "incoming", "want"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_filter(name: str, incoming: dict[str, Any], want: object) -> None:
    assert _filter(incoming) == want


SCORE_CASES = [
    ("no declared bandwidth skips", pod("x").req(cpu="1").obj(), None, "SKIP"),
    # LeastAllocated: a (1000 - 900) * 100 / 1000 = 10; b (1000 - 500) -> 50; c advertises nothing -> 0
    ("least allocated", pod("x").annotation(NET, "300").obj(), None, {"a": 10, "b": 50, "c": 0}),
    ("most allocated", pod("x").annotation(NET, "300").obj(), {"scoringStrategy": {"type": "MostAllocated"}}, {"a": 90, "b": 50, "c": 0}),
    # net and disk on b: (50 * 1 + (400 - 350) * 100 // 400 * 3) / 4 = (50 + 36) / 4 = 21; a: only net -> 10
    ("weighted resources", pod("x").annotation(NET, "300").annotation(DISK, "50").obj(), {"scoringStrategy": {"resources": [{"name": NET, "weight": 1}, {"name": DISK, "weight": 3}]}}, {"a": 10, "b": 21, "c": 0}),
    # a resource left out of the strategy is not scored: disk only, and a pod asking no disk skips
    ("resource not scored", pod("x").annotation(NET, "300").obj(), {"scoringStrategy": {"resources": [{"name": DISK, "weight": 1}]}}, "SKIP"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "incoming", "args", "want"), SCORE_CASES, ids=[c[0] for c in SCORE_CASES])
def test_score(name: str, incoming: dict[str, Any], args: dict[str, Any] | None, want: object) -> None:
    assert _score(incoming, args) == want


def test_args_are_validated_at_load() -> None:
    assert "harmonic.dev/gpu" in config_error(
        "NodeBandwidth", {"scoringStrategy": {"resources": [{"name": "harmonic.dev/gpu", "weight": 1}]}}
    )
    assert "weight" in config_error(
        "NodeBandwidth", {"scoringStrategy": {"resources": [{"name": NET, "weight": 101}]}}
    )
    assert "scoringStrategy.type" in config_error(
        "NodeBandwidth", {"scoringStrategy": {"type": "RequestedToCapacityRatio"}}
    )


class _Handle:
    def __init__(self, snap: Snapshot) -> None:
        self.snapshot = snap


def test_index_follows_pods_and_node_changes_after_construction() -> None:
    snap = Snapshot()
    snap.set_node(parse_node(node("a").label(NET, "1000").obj()))
    plugin = NodeBandwidth(NodeBandwidth.Args(), _Handle(snap))
    incoming = parse_pod(pod("x").annotation(NET, "500").obj())
    holder = parse_pod(pod("h").annotation(NET, "600").obj())
    slots = np.asarray([snap.slot("a")])

    def passes() -> bool:
        state = CycleState()
        plugin.pre_filter(state, incoming, snap)
        v = plugin.filter(state, incoming, snap, slots)
        return v is None or bool(v.passed[0])

    assert passes()
    snap.add_pod(holder, "a")
    assert not passes()
    snap.set_node(parse_node(node("a").label(NET, "2000").obj()))  # the NIC upgraded (label changed)
    assert passes()
    snap.set_node(parse_node(node("a").label(NET, "1000").obj()))
    snap.remove_pod(holder, "a")
    assert passes()
    for i in range(40):  # the snapshot grows past its first capacity: the index follows
        snap.set_node(parse_node(node(f"n{i}").label(NET, "100").obj()))
    state = CycleState()
    plugin.pre_filter(state, incoming, snap)
    v = plugin.filter(state, incoming, snap, np.asarray([snap.slot("n39"), snap.slot("a")]))
    assert v is not None and v.passed.tolist() == [False, True]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 700), min_size=1, max_size=12), st.integers(1, 700))
def test_placing_only_where_filter_passes_never_exceeds_capacity(demands: list[int], capacity: int) -> None:
    """Property: pods bound one by one only to nodes the filter passes never take a node's declared
    bandwidth past its capacity (the invariant CommunicationAffinity's packing relies on)."""
    snap = Snapshot()
    for n in ("a", "b"):
        snap.set_node(parse_node(node(n).label(NET, str(capacity)).obj()))
    plugin = NodeBandwidth(NodeBandwidth.Args(), _Handle(snap))
    slots = np.asarray([snap.slot("a"), snap.slot("b")])
    for i, d in enumerate(demands):
        p = parse_pod(pod(f"p{i}").annotation(NET, str(d)).obj())
        state = CycleState()
        _, status = plugin.pre_filter(state, p, snap)
        v = None if status is not None else plugin.filter(state, p, snap, slots)
        ok = [True, True] if v is None else v.passed.tolist()
        if any(ok):
            snap.add_pod(p, "a" if ok[0] else "b")
    used = plugin.index.rows(snap, slots)[1][:, 0]
    assert (used <= capacity).all()
