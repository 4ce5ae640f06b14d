"""PodCounts: incrementally maintained per-node counts equal a recount from scratch."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.api.node import parse_node
from harmonic.api.pod import Pod, parse_pod
from harmonic.api.selectors import EXISTS, IN, MATCH_EVERYTHING, LabelSelector, Requirement
from harmonic.framework.podcounts import PodCounts, PodMatch
from harmonic.framework.snapshot import Snapshot
from harmonic.testing import node, pod

MATCHES = [
    PodMatch(frozenset({"default"}), LabelSelector((Requirement("app", IN, frozenset({"a"})),))),
    PodMatch(frozenset({"default", "other"}), LabelSelector((Requirement("app", EXISTS, frozenset()),))),
    PodMatch(None, LabelSelector((Requirement("tier", IN, frozenset({"x", "y"})),))),
    PodMatch(None, MATCH_EVERYTHING, skip_terminating=False),
]


def _recount(snap: Snapshot, match: PodMatch) -> np.ndarray:
    out = np.zeros(snap.capacity, dtype=np.int64)
    for slot, p in snap.all_pods():
        out[slot] += match.matches(p)
    return out


_pod_specs = st.tuples(
    st.sampled_from(["default", "other", "third"]),
    st.sampled_from([{}, {"app": "a"}, {"app": "b"}, {"tier": "x"}, {"app": "a", "tier": "y"}]),
    st.booleans(),
    st.integers(0, 11),
)
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), _pod_specs),
        st.tuples(st.just("remove"), st.integers(0, 1000)),
        st.tuples(st.just("query"), st.integers(0, len(MATCHES) - 1)),
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(_ops, st.integers(1, 3))
def test_counts_equal_a_recount(ops: list[tuple[str, object]], max_entries: int) -> None:
    snap = Snapshot(capacity=8)  # 12 nodes below: the arrays must grow with the snapshot
    for i in range(12):
        snap.set_node(parse_node(node(f"n{i}").obj()))
    counts = PodCounts.of(snap)
    counts.max_entries = max_entries
    assert PodCounts.of(snap) is counts
    placed: list[tuple[Pod, str]] = []
    for n, (op, arg) in enumerate(ops):
        if op == "add":
            ns, labels, deleting, where = arg  # type: ignore[misc]
            raw = pod(f"p{n}").ns(ns).labels(labels).obj()
            if deleting:
                raw["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
            p = parse_pod(raw)
            snap.add_pod(p, f"n{where}")
            placed.append((p, f"n{where}"))
        elif op == "remove" and placed:
            p, where = placed.pop(int(arg) % len(placed))  # type: ignore[call-overload]
            snap.remove_pod(p, where)
        else:
            match = MATCHES[int(arg) % len(MATCHES)]  # type: ignore[call-overload]
            assert counts.counts(match).tolist() == _recount(snap, match).tolist()
        assert len(counts) <= max_entries
    for match in MATCHES:
        assert counts.counts(match).tolist() == _recount(snap, match).tolist()


def test_terminating_pods_are_skipped_unless_asked() -> None:
    snap = Snapshot()
    snap.set_node(parse_node(node("a").obj()))
    raw = pod("p").label("app", "a").obj()
    raw["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    snap.add_pod(parse_pod(raw), "a")
    sel = MATCHES[0].selector
    counts = PodCounts.of(snap)
    assert counts.counts(PodMatch(frozenset({"default"}), sel))[snap.slot("a")] == 0
    assert counts.counts(PodMatch(frozenset({"default"}), sel, skip_terminating=False))[snap.slot("a")] == 1
