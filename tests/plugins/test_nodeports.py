"""NodePorts behaviour beyond upstream's filter table (translated/NodePorts.json)."""

from __future__ import annotations

import numpy as np
import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import Pod, parse_pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Hint
from harmonic.framework.snapshot import Snapshot
from harmonic.plugins.nodeports import NodePorts, hint_pod_deleted
from harmonic.testing import node, pod
from harmonic.testing.harness import Harness

WANTS_8080 = parse_pod(pod("p").host_port(8080).obj())

# Test_isSchedulableAfterPodDeleted (node_ports_test.go); the wrong-object case has no equivalent.
HINTS = [
    ("skip-queue-on-unscheduled", pod("d").obj(), Hint.SKIP),
    ("skip-queue-on-non-hostport", pod("d").node("fake-node").obj(), Hint.SKIP),
    ("skip-queue-on-unrelated-hostport", pod("d").node("fake-node").host_port(8081).obj(), Hint.SKIP),
    ("queue-on-released-hostport", pod("d").node("fake-node").host_port(8080).obj(), Hint.QUEUE),
]


@pytest.mark.parametrize(("name", "deleted", "want"), HINTS, ids=[h[0] for h in HINTS])
def test_queueing_hint(name: str, deleted: dict[str, object], want: Hint) -> None:
    assert hint_pod_deleted(WANTS_8080, parse_pod(deleted), None) == want


class _Handle:
    def __init__(self, snap: Snapshot) -> None:
        self.snapshot = snap


def _verdict(plugin: NodePorts, snap: Snapshot, p: Pod, run_pre_filter: bool = True) -> list[bool]:
    state = CycleState()
    if run_pre_filter:
        plugin.pre_filter(state, p, snap)
    slots = np.asarray([snap.slot(n) for n in ("a", "b")])
    v = plugin.filter(state, p, snap, slots)
    return [True, True] if v is None else v.passed.tolist()


def test_index_follows_pods_added_and_removed_after_construction() -> None:
    snap = Snapshot()
    for name in ("a", "b"):
        snap.set_node(parse_node(node(name).obj()))
    plugin = NodePorts(None, _Handle(snap))
    holder = parse_pod(pod("holder").host_port(8080, ip="10.0.0.1").obj())
    snap.add_pod(holder, "a")
    assert _verdict(plugin, snap, WANTS_8080) == [False, True]
    other_ip = parse_pod(pod("q").host_port(8080, ip="10.0.0.2").obj())
    assert _verdict(plugin, snap, other_ip) == [True, True]
    snap.remove_pod(holder, "a")
    assert _verdict(plugin, snap, WANTS_8080) == [True, True]


def test_filter_without_pre_filter_reads_the_pod() -> None:
    snap = Snapshot()
    for name in ("a", "b"):
        snap.set_node(parse_node(node(name).obj()))
    snap.add_pod(parse_pod(pod("holder").host_port(8080, protocol="UDP").obj()), "b")
    plugin = NodePorts(None, _Handle(snap))
    udp = parse_pod(pod("p").host_port(8080, protocol="UDP").obj())
    assert _verdict(plugin, snap, udp, run_pre_filter=False) == [True, False]


def test_scheduler_spreads_pods_sharing_a_host_port() -> None:
    h = Harness()
    h.add_nodes([node("a").obj(), node("b").obj()])
    h.add_pods([pod(f"p{i}").host_port(9000).obj() for i in range(3)])
    h.schedule()
    placed = h.placement()
    assert sorted(placed.values()) == ["a", "b"]
    (left,) = {"default/p0", "default/p1", "default/p2"} - set(placed)
    msg = h.failure(left.split("/")[1])
    assert msg is not None and "2 node(s) didn't have free ports for the requested pod ports" in msg
