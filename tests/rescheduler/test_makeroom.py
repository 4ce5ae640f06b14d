"""MakeRoomForPending: plans that resolve fragmentation, reserve the node, and stay in budget."""

from __future__ import annotations

import pytest

from harmonic.rescheduler import solver
from harmonic.testing.builders import pod
from tests.rescheduler.helpers import pdb, policy, profile, run, ts
from tests.rescheduler.test_plugins import N, P

MAKE_ROOM = policy(profile("balance", "MakeRoomForPending"))
SOLVERS = [
    "greedy",
    pytest.param("cp-sat", marks=pytest.mark.skipif(not solver.AVAILABLE, reason="ortools not installed")),
]


def make_room(which: str) -> dict:
    return policy(profile("balance", "MakeRoomForPending", {"solver": which}))


def pending(name: str, cpu: str, age: float = 300, priority: int | None = None) -> dict:
    b = pod(name).req(cpu=cpu)
    if priority is not None:
        b = b.priority(priority)
    o = {**b.obj(), "kind": "Pod"}
    o["metadata"]["creationTimestamp"] = ts(age)
    return o


def fragmented() -> list[dict]:
    return [N(f"n{i}") for i in range(3)] + [
        P(f"p{i}{j}", f"n{i}", owner=f"rs{j}") for i in range(3) for j in range(3)
    ]


@pytest.mark.parametrize("which", SOLVERS)
def test_one_move_makes_room_and_nominates_the_target(which):
    r = run(make_room(which), [*fragmented(), pending("big", "2")])
    assert len(r.log.evictions) == 1
    e = r.log.evictions[0]
    assert e.to != e.node
    assert [(n.pod.name, n.node) for n in r.log.nominations] == [("big", e.node)]


def test_young_pending_pods_wait_for_the_threshold():
    assert run(MAKE_ROOM, [*fragmented(), pending("big", "2", age=10)]).log.evictions == []


def test_pod_that_fits_now_needs_no_plan():
    objs = [N("n0"), N("n1"), P("a", "n0"), pending("small", "1")]
    assert run(MAKE_ROOM, objs).log.evictions == []


@pytest.mark.parametrize("which", SOLVERS)
def test_unresolvable_when_capacity_is_missing(which):
    r = run(make_room(which), [*fragmented(), pending("huge", "5")])
    assert r.log.evictions == [] and r.log.plans[-1][1] == "unresolvable"


@pytest.mark.parametrize("which", SOLVERS)
def test_two_moves_on_one_node(which):
    # Each node: 4 CPU, three 1-CPU pods; a 3-CPU pod needs two of them moved off one node, and the
    # other two nodes take one each.
    r = run(make_room(which), [*fragmented(), pending("big", "3")])
    assert len(r.log.evictions) == 2
    target = r.log.nominations[0].node
    assert all(e.node == target and e.to != target for e in r.log.evictions)


@pytest.mark.parametrize("which", SOLVERS)
def test_second_hop(which):
    # The pending pod may only run on n0 (disk=ssd), full with two 2-CPU pods. n1 (3-CPU pod) and n2
    # (1- and 2-CPU pods) have 1 CPU free each, so a 2-CPU pod fits on neither until the 1-CPU pod
    # on n2 moves to n1: two moves, the second hop first.
    objs = [N("n0", label=("disk", "ssd")), N("n1"), N("n2")]
    objs += [
        P("a", "n0", cpu="2", owner="x"),
        P("b", "n0", cpu="2", owner="y"),
        P("c", "n1", cpu="3", owner="z"),
    ]
    objs += [P("d", "n2", cpu="1", owner="w"), P("e", "n2", cpu="2", owner="v")]
    new = pending("new", "2")
    new["spec"]["nodeSelector"] = {"disk": "ssd"}
    r = run(make_room(which), [*objs, new])
    moves = [(e.pod.name, e.node, e.to) for e in r.log.evictions]
    assert len(moves) == 2
    assert moves[0] == ("d", "n2", "n1")
    assert moves[1][1:] == ("n0", "n2")
    assert [(n.pod.name, n.node) for n in r.log.nominations] == [("new", "n0")]


@pytest.mark.parametrize("which", SOLVERS)
def test_plan_over_a_pdb_is_not_started(which):
    objs = fragmented()
    for o in objs[3:]:
        o["metadata"]["labels"] = {"app": "web"}
    budget = pdb("web", "web", maxUnavailable=0)
    r = run(make_room(which), [*objs, budget, pending("big", "2")])
    assert r.log.evictions == [] and r.log.nominations == []
    assert r.log.plans[-1][1] == "over budget"


@pytest.mark.skipif(not solver.AVAILABLE, reason="ortools not installed")
def test_cp_sat_prefers_fewer_moves_than_greedy():
    # Only n0 (disk=ssd) can take the pending 3-CPU pod; n0 holds three 1-CPU pods of priority 0 and
    # one 1-CPU pod of priority 10 (4/4), with a 3-CPU pod it could also move. Greedy takes the
    # lowest priority first (three moves); CP-SAT minimises moves first.
    objs = [N("n0", cpu="6", label=("disk", "ssd")), N("n1", cpu="8")]
    objs += [P(f"s{i}", "n0", owner=f"s{i}") for i in range(3)]
    big = P("big", "n0", cpu="3", owner="big")
    big["spec"]["priority"] = 10
    objs.append(big)
    new = pending("new", "3")
    new["spec"]["nodeSelector"] = {"disk": "ssd"}
    greedy = run(make_room("greedy"), [*objs, new])
    exact = run(make_room("cp-sat"), [*objs, new])
    assert len(greedy.log.evictions) == 3
    assert [(e.pod.name, e.to) for e in exact.log.evictions] == [("big", "n1")]
