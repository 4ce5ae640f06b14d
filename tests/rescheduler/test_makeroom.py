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


def web_under_a_closed_budget() -> list[dict]:
    """The fragmented cluster with every running pod in app web, under a PDB that allows no eviction."""
    objs = fragmented()
    for o in objs[3:]:
        o["metadata"]["labels"] = {"app": "web"}
    return [*objs, pdb("web", "web", maxUnavailable=0)]


@pytest.mark.parametrize("which", SOLVERS)
def test_plan_over_a_pdb_is_not_started(which):
    r = run(make_room(which), [*web_under_a_closed_budget(), pending("big", "2")])
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


def _job_pod(name: str, job: str, cpu: str = "5", app: str = "etl", **spec: object) -> dict:
    o = pending(name, cpu)
    o["metadata"]["labels"] = {"app": app, "job-name": job, "batch.kubernetes.io/job-name": job}
    o["spec"].update(spec)
    return o


def _reasons(r) -> dict[str, tuple[str, str]]:
    return {plan_id.split("/", 1)[1]: (state, why) for plan_id, state, why in r.log.plans}


WEB = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [WEB]}}
SPREAD = [{"maxSkew": 1, "topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "etl"}}}]


@pytest.mark.parametrize(
    ("case", "second", "searched"),
    [
        ("another Job's pod of the same template", _job_pod("b-0", "b"), False),
        ("more CPU", _job_pod("b-0", "b", cpu="6"), True),
        ("another label", _job_pod("b-0", "b", app="report"), True),
        ("fewer nodes pass its filters", _job_pod("b-0", "b", nodeSelector={"disk": "ssd"}), True),
        ("its own anti-affinity", _job_pod("b-0", "b", affinity=ANTI), True),
        ("a hard spread constraint", _job_pod("b-0", "b", topologySpreadConstraints=SPREAD), True),
    ],
)
@pytest.mark.parametrize("which", SOLVERS)
def test_a_run_searches_once_per_kind_of_unresolvable_pod(which, case, second, searched):
    # 5 CPUs fit on no 4-CPU node: the first pod is searched and found unresolvable; a pod differing
    # only in its Job's labels gets that outcome without a search, any other is searched itself.
    objs = [*fragmented(), _job_pod("a-0", "a"), second]
    objs[0]["metadata"].setdefault("labels", {})["disk"] = "ssd"
    reasons = _reasons(run(make_room(which), objs))
    assert reasons["default/a-0"] == ("unresolvable", "no plan within maxMovesPerPod/maxHops")
    state, why = reasons["default/b-0"]
    assert state == "unresolvable"
    assert (why == "no plan within maxMovesPerPod/maxHops") is searched, case
    assert searched or why == "as default/a-0: no plan within maxMovesPerPod/maxHops"


@pytest.mark.parametrize("which", SOLVERS)
def test_an_unresolvable_kind_does_not_stop_a_resolvable_one(which):
    objs = [*fragmented(), _job_pod("a-0", "a"), _job_pod("b-0", "b"), _job_pod("c-0", "c", cpu="2")]
    r = run(make_room(which), objs)
    assert [n.pod.name for n in r.log.nominations] == ["c-0"] and len(r.log.evictions) == 1


@pytest.mark.parametrize("which", SOLVERS)
def test_a_pod_over_budget_settles_its_kind(which):
    jobs = [_job_pod("a-0", "a", cpu="2"), _job_pod("b-0", "b", cpu="2")]
    r = run(make_room(which), [*web_under_a_closed_budget(), *jobs])
    reasons = _reasons(r)
    assert reasons["default/a-0"][0] == reasons["default/b-0"][0] == "over budget"
    assert reasons["default/b-0"][1].startswith("as default/a-0: ")
