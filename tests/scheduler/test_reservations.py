"""Nodes reserved for a moved pod's replacement: the first new pod of the owner is nominated to the node
and tries it first, falls back to normal scheduling when it no longer fits; one replacement consumes
a reservation; expired and cancelled ones are dropped; each ends in exactly one outcome."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.api.pod import Pod, parse_pod
from harmonic.framework.cycle_state import CycleState
from harmonic.scheduler.reservations import MemoryStore, Reservation, Reservations
from harmonic.testing import node, pod
from harmonic.testing.harness import Harness

OWNER = "web-rs-uid"


def _replica(name: str, cpu: str = "2", owner: str = OWNER, prio: int = 0) -> dict[str, Any]:
    obj: dict[str, Any] = (
        pod(name).req(cpu=cpu).priority(prio).owner("ReplicaSet", "web-5d8f7", uid=owner).obj()
    )
    return obj


def _cluster(*extra: dict[str, Any]) -> tuple[Harness, list[tuple[str, str, str]]]:
    """a (4 CPUs), b (8) and c (32): LeastAllocated ranks c first for any pod. The outcomes reported."""
    h = Harness()
    h.add_nodes([node("a").cap(cpu="4").obj(), node("b").cap(cpu="8").obj(), node("c").cap(cpu="32").obj()])
    h.add_pods(extra)
    h.schedule()
    outcomes: list[tuple[str, str, str]] = []

    def ended(r: Reservation, outcome: str, replacement: str, node_name: str) -> None:
        outcomes.append((outcome, replacement, node_name))

    h.scheduler.reservations.on_outcome = ended
    return h, outcomes


def _nominated(h: Harness, name: str) -> str | None:
    return (h.cluster.pods[f"default/{name}"].get("status") or {}).get("nominatedNodeName")


@pytest.mark.parametrize(
    ("case", "reserve_on", "before", "wait", "new", "placed", "outcomes", "nominated"),
    [
        ("lands on the reserved node though c scores higher", "b", [], 0, _replica("web-3"), "b",
         [("landed", "default/web-3", "b")], "b"),
        ("a full reserved node falls back", "a", [pod("full").req(cpu="4").node("a").obj()], 0, _replica("web-3"), "c",
         [("fell_back", "default/web-3", "c")], "a"),
        ("a reserved node that left falls back", "gone", [], 0, _replica("web-3"), "c",
         [("fell_back", "default/web-3", "c")], None),
        ("an expired reservation is dropped", "b", [], 61, _replica("web-3"), "c", [("expired", "", "")], None),
        ("another owner's pod leaves it", "b", [], 0, _replica("db-0", owner="db-rs-uid"), "c", [], None),
    ],
)  # fmt: skip
def test_a_replacement_tries_its_reserved_node_first(
    case, reserve_on, before, wait, new, placed, outcomes, nominated
):
    h, seen = _cluster(*before)
    h.scheduler.reservations.reserve(OWNER, reserve_on, 60, "default/web-1", tag="default/web")
    h.clock.advance(wait)
    h.add_pods([new])
    h.schedule()
    name = new["metadata"]["name"]
    assert h.placement()[f"default/{name}"] == placed, case
    assert seen == outcomes, case
    assert _nominated(h, name) == nominated, case
    assert len(h.scheduler.nominator) == 0
    assert bool(h.scheduler.reservations.open) == (case == "another owner's pod leaves it")


def test_only_one_replacement_consumes_a_reservation():
    h, seen = _cluster()
    h.scheduler.reservations.reserve(OWNER, "b", 60, "default/web-1")
    h.add_pods([_replica("web-3"), _replica("web-4")])
    h.schedule()
    assert h.placement() == {"default/web-3": "b", "default/web-4": "c"}
    assert seen == [("landed", "default/web-3", "b")]
    assert _nominated(h, "web-4") is None


def test_two_moves_of_one_owner_hold_a_node_each():
    h, seen = _cluster()
    for moved, target in (("default/web-1", "b"), ("default/web-2", "a")):
        h.scheduler.reservations.reserve(OWNER, target, 60, moved)
    h.add_pods([_replica("web-3"), _replica("web-4")])
    h.schedule()
    assert h.placement() == {"default/web-3": "b", "default/web-4": "a"}
    assert [o for o, _, _ in seen] == ["landed", "landed"]


def test_a_pod_the_owner_already_had_does_not_consume_it():
    h, seen = _cluster()
    h.scheduler.reservations.reserve(OWNER, "b", 60, "default/web-1", known=frozenset({"uid-web-3"}))
    new = _replica("web-3")
    new["metadata"]["uid"] = "uid-web-3"
    h.add_pods([new])
    h.schedule()
    assert h.placement() == {"default/web-3": "c"} and seen == [] and h.scheduler.reservations.open


def test_the_nominated_replacement_holds_its_room_against_lower_priority_pods():
    h, _ = _cluster()
    h.scheduler.reservations.reserve(OWNER, "b", 60, "default/web-1")
    h.add_pods([_replica("web-3", cpu="4", prio=10)])
    h.scheduler.drain()  # arrived and nominated, not scheduled yet
    assert [p.key for p in h.scheduler.nominator.nominated_pods_for_node("b")] == ["default/web-3"]
    fw = h.scheduler.frameworks["default-scheduler"]
    snap = h.scheduler.cache.snapshot
    b = np.asarray([snap.slot("b")], dtype=np.int64)
    lower, higher = (parse_pod(_replica(n, cpu="5", owner="x", prio=p)) for n, p in (("low", 0), ("top", 20)))

    def fits_b(p: Pod) -> bool:
        state = CycleState(0)
        fw.run_pre_filter(state, p, snap)  # the cycle's order: PreFilter, then Filter
        outcome, st_ = fw.run_filters_with_nominated_pods(state, p, snap, b)
        assert st_ is None
        return bool(outcome.codes[0] == 0)

    assert not fits_b(lower)  # 8 CPUs less the nominated 4 hold no 5
    assert fits_b(higher)  # a higher priority pod does not count it


def test_a_replacement_deleted_before_it_is_bound_fell_back():
    h, seen = _cluster()
    h.scheduler.reservations.reserve(OWNER, "b", 60, "default/web-1")
    h.add_pods([_replica("web-3")])
    h.scheduler.drain()
    h.cluster.delete_pod("default", "web-3")
    h.schedule()
    assert seen == [("fell_back", "default/web-3", "")] and not h.scheduler.reservations.taken


def test_a_cancelled_reservation_is_dropped_once():
    h, seen = _cluster()
    r = h.scheduler.reservations.reserve(OWNER, "b", 60, "default/web-1")
    assert h.scheduler.reservations.cancel(r) and not h.scheduler.reservations.cancel(r)
    h.add_pods([_replica("web-3")])
    h.schedule()
    assert h.placement() == {"default/web-3": "c"} and seen == [("cancelled", "", "")]


def test_an_unused_reservation_expires_on_the_schedulers_housekeeping():
    h, seen = _cluster()
    h.scheduler.reservations.reserve(OWNER, "b", 60, "default/web-1")
    h.clock.advance(59)
    h.schedule()
    assert seen == []
    h.clock.advance(1)
    h.schedule()
    assert seen == [("expired", "", "")] and not h.scheduler.reservations.open


# ---------------------------------------------------------------------- every reservation ends once
class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("reserve"), st.sampled_from(["o1", "o2"]), st.integers(1, 30)),
        st.tuples(st.just("pod"), st.sampled_from(["o1", "o2", "o3"]), st.just(0)),
        st.tuples(st.just("wait"), st.just(""), st.integers(1, 20)),
        st.tuples(st.just("cancel"), st.just(""), st.integers(0, 10)),
        st.tuples(st.just("bind"), st.sampled_from(["n1", "n2"]), st.integers(0, 10)),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(ops=_OPS)
def test_each_reservation_is_consumed_by_at_most_one_pod_and_ends_in_one_outcome(ops):
    clock = _Clock()
    rs = Reservations(clock)
    ended: list[tuple[Reservation, str]] = []
    rs.on_outcome = lambda r, outcome, p, n: ended.append((r, outcome))
    made: list[Reservation] = []
    consumed: dict[str, Reservation] = {}
    for i, (op, arg, n) in enumerate(ops):
        if op == "reserve":
            made.append(rs.reserve(arg, "n1", n, f"default/moved-{i}"))
        elif op == "pod":
            p = parse_pod(_replica(f"p{i}", owner=arg))
            r = rs.take(p)
            if r is not None:
                assert r.owner == arg and r.expires > clock.t
                consumed[p.uid] = r
        elif op == "wait":
            clock.t += n
            rs.expire()
        elif op == "cancel" and made:
            rs.cancel(made[n % len(made)])
        elif op == "bind" and consumed:
            uid = sorted(consumed)[n % len(consumed)]
            bound = parse_pod({**_replica("x"), "metadata": {"name": "x", "uid": uid}, "spec": {
                **_replica("x")["spec"], "nodeName": arg}})  # fmt: skip
            rs.bound(bound)
    # one pod per reservation
    assert len({id(r) for r in consumed.values()}) == len(consumed)
    clock.t += 1000
    rs.expire()
    for uid in list(rs.taken):
        rs.deleted(uid, uid)
    outcomes: dict[int, list[str]] = {}
    for r, o in ended:
        outcomes.setdefault(id(r), []).append(o)
    assert sorted(outcomes) == sorted(id(r) for r in made)
    assert all(len(v) == 1 for v in outcomes.values())
    assert not rs.open and not rs.taken


# ---------------------------------------------------------------------- restored from a store
WALL = 1_800_000_000.0


def _kept(node_name: str = "b", left: float = 30.0, known: frozenset[str] = frozenset()) -> Reservation:
    """An entry as a store keeps it: ``expires`` on the wall clock (``WALL`` is now)."""
    return Reservation(OWNER, node_name, WALL + left, "default/web-1", known, "default/web")


@pytest.mark.parametrize(
    ("case", "saved", "placed", "restored"),
    [
        ("a live entry comes back with the time it had left", [_kept(left=30)], {}, [("b", 30.0)]),
        ("an expired one does not", [_kept(left=-1), _kept(left=0)], {}, []),
        ("one a bound or nominated replacement consumed does not", [_kept()], {OWNER: {"uid-web-3"}}, []),
        ("a placed pod the owner already had consumed nothing", [_kept(known=frozenset({"uid-web-2"}))],
         {OWNER: {"uid-web-2"}}, [("b", 30.0)]),
        ("one placed replacement consumes one of two, the oldest", [_kept("b", 20), _kept("a", 10)],
         {OWNER: {"uid-web-3"}}, [("b", 20.0)]),
        ("another owner's placed pod consumes nothing", [_kept()], {"db-rs-uid": {"uid-db-1"}}, [("b", 30.0)]),
    ],
)  # fmt: skip
def test_restore_puts_back_the_live_unconsumed_entries_with_their_time_left(case, saved, placed, restored):
    clock = _Clock()
    clock.t = 500.0
    rs = Reservations(clock, wall=lambda: WALL)
    back = rs.restore(saved, placed)
    assert [(r.node, r.expires - clock.t) for r in back] == restored, case
    assert [(r.node, r.expires - clock.t) for held in rs.open.values() for r in held] == restored, case
    assert [(r.node, r.expires - WALL) for r in rs.saved()] == restored, case


def test_a_restored_reservation_is_honoured_by_the_next_replacement():
    h, seen = _cluster()
    h.scheduler.reservations.wall = lambda: WALL
    h.scheduler.reservations.restore([_kept("b", 60)], {})
    h.add_pods([_replica("web-3")])
    h.schedule()
    assert h.placement() == {"default/web-3": "b"} and seen == [("landed", "default/web-3", "b")]
    assert _nominated(h, "web-3") == "b"
    assert h.scheduler.reservations.saved() == []


def test_the_default_store_keeps_nothing_beyond_the_table():
    clock = _Clock()
    rs = Reservations(clock, wall=lambda: WALL + clock.t)
    assert isinstance(rs.store, MemoryStore) and rs.store.load() == [] and rs.flush(0)
    r = rs.reserve(OWNER, "b", 60, "default/web-1")
    clock.t += 10
    (kept,) = rs.store.load()
    assert kept == Reservation(OWNER, "b", WALL + 60, "default/web-1")  # on the wall clock
    rs.cancel(r)
    assert rs.store.load() == []


def test_a_consumed_reservation_is_kept_until_its_replacement_is_bound():
    # the replacement consumed the reservation; should the process stop before its nomination reached
    # the API server, the next one restores the entry and the pending replacement consumes it again
    clock = _Clock()
    first = Reservations(clock, wall=lambda: WALL + clock.t)
    first.reserve(OWNER, "b", 60, "default/web-1", frozenset({"uid-web-2"}))
    replacement = parse_pod(_replica("web-3"))
    assert first.take(replacement) is not None and not first.open
    (kept,) = first.store.load()
    assert (kept.node, kept.expires) == ("b", WALL + 60)
    second = Reservations(clock, wall=lambda: WALL + clock.t)
    second.restore(first.store.load(), {})  # the replacement is pending, not nominated: not placed
    again = second.take(replacement)
    assert again is not None and again.node == "b"
    # bound (or gone), it is kept no longer
    first.bound(parse_pod({**_replica("web-3"), "spec": {**_replica("web-3")["spec"], "nodeName": "b"}}))
    assert first.store.load() == []
    second.deleted(replacement.uid, replacement.key)
    assert second.store.load() == []
