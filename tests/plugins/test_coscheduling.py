"""Coscheduling: scheduler-plugins' unit-test tables (pkg/coscheduling/coscheduling_test.go and
core/core_test.go) and the args defaults (apis/config/v1/defaults_test.go) translated; Permit's wait
(util.GetWaitTimeDuration) and Unreserve releasing a gang's waiting pods end to end; then Harmonic's
gang guard.

Skipped from upstream: TestSchemeRestriction (it checks which Go types a controller-runtime client
scheme registers; Harmonic reads PodGroups from its ``"batch"`` service, there is no client scheme).
"""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.api.pod import parse_pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.diagnosis import Diagnosis
from harmonic.framework.interface import QueuedPodInfo
from harmonic.framework.services import ACTIVATE
from harmonic.framework.status import Code
from harmonic.plugins.coscheduling.args import CoschedulingArgs
from harmonic.plugins.coscheduling.manager import (
    POD_GROUP_NOT_FOUND,
    POD_GROUP_NOT_SPECIFIED,
    SUCCESS,
    WAIT,
    check_cluster_resource,
)
from harmonic.testing import node, pod, pod_group
from harmonic.testing.harness import Harness
from tests.plugins.batch_helpers import batch_config, harness

UPSTREAM = {"gangGuard": False}
T0 = "2026-01-01T00:00:00Z"
T0_EPOCH = 1767225600.0


def _pg(name: str, min_member: int = 1, ns: str = "ns", **kw: Any) -> dict[str, Any]:
    b = pod_group(name).ns(ns).min_member(min_member)
    if "cpu" in kw:
        b = b.min_resources(cpu=kw["cpu"])
    if "created" in kw:
        b = b.created(kw["created"])
    return b.obj()


def _p(
    name: str, group: str = "", ns: str = "ns", node_name: str = "", gated: bool = False, cpu: str = ""
) -> dict[str, Any]:
    b = pod(name).ns(ns).uid(name)
    if group:
        b = b.group(group)
    if node_name:
        b = b.node(node_name)
    if gated:
        b = b.gate("example-gate")
    if cpu:
        b = b.req(cpu=cpu)
    return b.obj()


# ---------------------------------------------------------------------- core_test.go TestPreFilter
PRE_FILTER_CASES = [
    (
        "pod does not belong to any pg",
        _p("p", ns="default"),
        [_p("p1", "pg1"), _p("p2", "pg2")],
        [_pg("pg1"), _pg("pg2")],
        True,
    ),
    ("pod belongs to a non-existent pg", _p("p", "pg-non-existent"), [], [_pg("pg1")], True),
    (
        "pod count less than minMember",
        _p("p", "pg1"),
        [_p("pg2-1", "pg2")],
        [_pg("pg1", 2), _pg("pg2", 2)],
        False,
    ),
    (
        "pod count equal minMember",
        _p("p1a", "pg1"),
        [_p("p1b", "pg1"), _p("p1c", "pg1")],
        [_pg("pg1", 2), _pg("pg2", 2)],
        True,
    ),
    (
        "pod count more than minMember",
        _p("p1a", "pg1"),
        [_p("p1b", "pg1"), _p("p1c", "pg1")],
        [_pg("pg1", 2), _pg("pg2", 2)],
        True,
    ),
    (
        "gated pods but still meeting quorum (minMember < replicas)",
        _p("p1a", "pg1"),
        [_p("p1b", "pg1"), _p("p1c", "pg1", gated=True)],
        [_pg("pg1", 2)],
        True,
    ),
    (
        "gated pods push group below quorum",
        _p("p1a", "pg1"),
        [_p("p1b", "pg1", gated=True), _p("p1c", "pg1")],
        [_pg("pg1", 3)],
        False,
    ),
    (
        "all sibling pods are gated",
        _p("p1a", "pg1"),
        [_p("p1b", "pg1", gated=True), _p("p1c", "pg1", gated=True)],
        [_pg("pg1", 2)],
        False,
    ),
    (
        "cluster's resource satisfies minResource",
        _p("p1a", "pg1"),
        [_p("p1b", "pg1"), _p("p1c", "pg1")],
        [_pg("pg1", 2, cpu="6")],
        True,
    ),
    (
        "cluster's resource cannot satisfy minResource",
        _p("p1a", "pg1"),
        [_p("p1b", "pg1"), _p("p1c", "pg1")],
        [_pg("pg1", 2, cpu="10")],
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "target", "pending", "pgs", "success"), PRE_FILTER_CASES, ids=[c[0] for c in PRE_FILTER_CASES]
)
def test_pre_filter(name: str, target: Any, pending: Any, pgs: Any, success: bool) -> None:
    h, pl = harness(
        "Coscheduling", UPSTREAM, drop=["PrioritySort"], nodes=2, objects=pgs, pods=[*pending, target]
    )
    got = pl.mgr.pre_filter(parse_pod(target), h.scheduler.cache.snapshot)
    assert (got is None) is success, got


# ---------------------------------------------------------------------- core_test.go TestPermit
@pytest.mark.parametrize(
    ("name", "target", "existing", "pgs", "want"),
    [
        ("pod does not belong to any pg", _p("p"), [], [_pg("pg1", 2)], POD_GROUP_NOT_SPECIFIED),
        (
            "pod specifies a non-existent pg",
            _p("p", "pg-non-existent"),
            [],
            [_pg("pg1", 2)],
            POD_GROUP_NOT_FOUND,
        ),
        ("pod belongs to a pg that doesn't have quorum", _p("p", "pg1"), [], [_pg("pg1", 2)], WAIT),
        (
            "pod belongs to a pg that have quorum satisfied",
            _p("p1a", "pg1"),
            [_p("p1b", "pg1", node_name="node")],
            [_pg("pg1", 2)],
            SUCCESS,
        ),
    ],
)
def test_manager_permit(name: str, target: Any, existing: Any, pgs: Any, want: str) -> None:
    _, pl = harness("Coscheduling", UPSTREAM, drop=["PrioritySort"], objects=pgs, pods=existing)
    assert pl.mgr.permit(parse_pod(target))[0] == want


# ---------------------------------------------------------------------- coscheduling_test.go TestPermit
@pytest.mark.parametrize(
    ("name", "target", "want"),
    [
        ("pods do not belong to any podGroup", _p("p"), None),
        ("pods belong to a pg1, but quorum not satisfied", _p("p", "pg2"), Code.WAIT),
        ("pods belong to a podGroup, and quorum satisfied", _p("p", "pg1"), None),
    ],
)
def test_permit(name: str, target: Any, want: Code | None) -> None:
    _, pl = harness("Coscheduling", UPSTREAM, drop=["PrioritySort"], objects=[_pg("pg1", 1), _pg("pg2", 2)])
    st, _ = pl.permit(CycleState(), parse_pod(target), "node")
    assert (st.code if st is not None else None) == want


# ---------------------------------------------------------------------- core_test.go TestCheckClusterResource
@pytest.mark.parametrize(
    ("name", "existing", "want"),
    [
        ("Cluster resource enough", [_p("p1", node_name="node-0", cpu="2")], True),
        (
            "Cluster resource not enough",
            [_p("p1", node_name="node-0", cpu="2"), _p("p2", node_name="node-1", cpu="1")],
            False,
        ),
        (
            "Cluster resource enough as p1's resource needs to be excluded from minResources",
            [_p("p1", "pg1", node_name="node-0", cpu="2"), _p("p2", node_name="node-1", cpu="1")],
            True,
        ),
    ],
)
def test_check_cluster_resource(name: str, existing: Any, want: bool) -> None:
    h, pl = harness("Coscheduling", UPSTREAM, drop=["PrioritySort"], nodes=2, cpu="3", pods=existing)
    got = check_cluster_resource(h.scheduler.cache.snapshot, {"cpu": 4000}, pl.mgr.pods_of("ns/pg1"))
    assert (got is None) is want, got


# ---------------------------------------------------------------------- coscheduling_test.go TestLess
def _qp(name: str, ns: str, priority: int, group: str = "", ts: float | None = None) -> QueuedPodInfo:
    b = pod(name).ns(ns).priority(priority)
    if group:
        b = b.group(group)
    qp = QueuedPodInfo(parse_pod(b.obj()), 0.0, 0)
    qp.initial_attempt_timestamp = ts
    return qp


NOW = T0_EPOCH + 100
LOW, HIGH = 10, 100


def _at(seconds: float) -> str:
    return f"2026-01-01T00:01:{int(seconds) + 40:02d}Z"  # T0 + 100 s + seconds


LESS_CASES = [
    ("p1.priority less than p2.priority", _qp("p1", "ns1", LOW), _qp("p2", "ns2", HIGH), [], False),
    ("p1.priority greater than p2.priority", _qp("p1", "ns1", HIGH), _qp("p2", "ns2", LOW), [], True),
    (
        "equal priority. p1 is added to schedulingQ earlier than p2",
        _qp("p1", "ns1", HIGH, ts=NOW + 1),
        _qp("p2", "ns2", HIGH, ts=NOW + 2),
        [],
        True,
    ),
    (
        "equal priority. p2 is added to schedulingQ earlier than p1",
        _qp("p1", "ns1", HIGH, ts=NOW + 2),
        _qp("p2", "ns2", HIGH, ts=NOW + 1),
        [],
        False,
    ),
    (
        "p1.priority less than p2.priority, p1 belongs to pg1",
        _qp("p1", "ns1", LOW, "pg1"),
        _qp("p2", "ns2", HIGH),
        [_pg("pg1", ns="ns1")],
        False,
    ),
    (
        "p1.priority greater than p2.priority, p1 belongs to pg1",
        _qp("p1", "ns1", HIGH, "pg1"),
        _qp("p2", "ns2", LOW),
        [_pg("pg1", ns="ns1")],
        True,
    ),
    (
        "equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to pg1",
        _qp("p1", "ns1", HIGH, "pg1", NOW + 1),
        _qp("p2", "ns2", HIGH, ts=NOW + 2),
        [_pg("pg1", ns="ns1", created=_at(1))],
        True,
    ),
    (
        "equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to pg1",
        _qp("p1", "ns1", HIGH, "pg1", NOW + 2),
        _qp("p2", "ns2", HIGH, ts=NOW + 1),
        [_pg("pg1", ns="ns1", created=_at(2))],
        False,
    ),
    (
        "p1.priority less than p2.priority, p1 belongs to pg1 and p2 belongs to pg2",
        _qp("p1", "ns1", LOW, "pg1"),
        _qp("p2", "ns2", HIGH, "pg2"),
        [_pg("pg1", ns="ns1", created=_at(1)), _pg("pg2", ns="ns2", created=_at(2))],
        False,
    ),
    (
        "p1.priority greater than p2.priority, p1 belongs to pg1 and and p2 belongs to pg2",
        _qp("p1", "ns1", HIGH, "pg1"),
        _qp("p2", "ns2", LOW, "pg1"),
        [_pg("pg1", ns="ns1", created=_at(1)), _pg("pg2", ns="ns2", created=_at(2))],
        True,
    ),
    (
        "equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to pg1 and p2 belongs to pg2",
        _qp("p1", "ns1", HIGH, "pg1", NOW + 1),
        _qp("p2", "ns2", HIGH, "pg2", NOW + 2),
        [_pg("pg1", ns="ns1", created=_at(1)), _pg("pg2", ns="ns2", created=_at(2))],
        True,
    ),
    (
        "equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to pg2 and p2 belongs to pg1",
        _qp("p1", "ns", LOW, "pg2", NOW + 1),
        _qp("p2", "ns", HIGH, "pg1", NOW + 2),
        [_pg("pg1", ns="ns", created=_at(1)), _pg("pg2", ns="ns", created=_at(2))],
        False,
    ),
    (
        "equal priority and creation time, p1 belongs pg1 and p2 belong to pg2",
        _qp("p1", "ns1", HIGH, "pg2", NOW + 1),
        _qp("p2", "ns2", HIGH, "pg2", NOW + 1),
        [_pg("pg1", ns="ns1", created=_at(1)), _pg("pg2", ns="ns2", created=_at(2))],
        True,
    ),
    (
        "equal priority and creation time, and p2 belong to pg2",
        _qp("p1", "ns1", HIGH, ts=NOW + 1),
        _qp("p2", "ns2", HIGH, "pg2", NOW + 1),
        [_pg("pg2", ns="ns2", created=_at(2))],
        True,
    ),
]


@pytest.mark.parametrize(("name", "p1", "p2", "pgs", "want"), LESS_CASES, ids=[c[0] for c in LESS_CASES])
def test_less(name: str, p1: QueuedPodInfo, p2: QueuedPodInfo, pgs: Any, want: bool) -> None:
    _, pl = harness("Coscheduling", UPSTREAM, drop=["PrioritySort"], objects=pgs)
    assert pl.less(p1, p2) is want


def test_less_after_schedule_failure() -> None:
    """TestLessAfterScheduleFailure and TestMarkAndClearPodGroupScheduleFailure."""
    pgs = [_pg("pg1", 3, created="2026-01-01T00:00:00Z"), _pg("pg2", 3, created="2026-01-01T00:00:05Z")]
    h, pl = harness("Coscheduling", UPSTREAM, drop=["PrioritySort"], objects=pgs)
    h.clock.set(T0_EPOCH + 10)
    p1, p2 = _qp("p1", "ns", HIGH, "pg1", T0_EPOCH + 10), _qp("p2", "ns", HIGH, "pg2", T0_EPOCH + 10)
    assert pl.less(p1, p2)
    assert pl.mgr.creation_timestamp(p1.pod, 0.0) == T0_EPOCH
    pl.mgr.mark_failure("ns/pg1")
    assert not pl.less(p1, p2) and pl.less(p2, p1)
    assert pl.mgr.creation_timestamp(p1.pod, 0.0) > T0_EPOCH
    pl.mgr.clear_failure("ns/pg1")
    assert pl.less(p1, p2)
    assert pl.mgr.creation_timestamp(p1.pod, 0.0) == T0_EPOCH


# ---------------------------------------------------------------------- coscheduling_test.go TestPostFilter
REJECT = "PodGroup ns/pg1 gets rejected due to Pod p is unschedulable even after PostFilter"


@pytest.mark.parametrize(
    ("name", "target", "existing", "min_member", "want"),
    [
        # Upstream says "can not find pod group" for this pod too; Harmonic keeps the message for a pod
        # whose named group is missing and spares it the FitError of pods outside any gang.
        (
            "pod does not belong to any pod group",
            _p("p"),
            [],
            2,
            (Code.UNSCHEDULABLE, ""),
        ),
        (
            "pod names a pod group that does not exist",
            _p("p", "missing"),
            [],
            2,
            (Code.UNSCHEDULABLE, "can not find pod group"),
        ),
        (
            "enough pods assigned, do not reject all",
            _p("p", "pg1"),
            [_p("p1", "pg1", node_name="node")],
            1,
            (Code.UNSCHEDULABLE, ""),
        ),
        (
            "pod failed at filter phase, reject all pods",
            _p("p", "pg1"),
            [_p("p1", "pg1", node_name="node")],
            2,
            (Code.UNSCHEDULABLE, REJECT),
        ),
    ],
)
def test_post_filter(name: str, target: Any, existing: Any, min_member: int, want: tuple[Code, str]) -> None:
    _, pl = harness(
        "Coscheduling", UPSTREAM, drop=["PrioritySort"], objects=[_pg("pg1", min_member)], pods=existing
    )
    _, st = pl.post_filter(CycleState(), parse_pod(target), Diagnosis(num_all_nodes=1))
    assert (st.code, st.message) == want


@pytest.mark.parametrize(
    ("name", "percentage", "min_member", "assigned", "rejects"),
    [
        ("default 10%: 9/10 assigned (10% gap) -> no rejection", 10, 10, 9, False),
        ("default 10%: 8/10 assigned (20% gap) -> rejection", 10, 10, 8, True),
        ("0%: 9/10 assigned (10% gap) -> rejection (always reject)", 0, 10, 9, True),
        ("100%: 0/10 assigned (100% gap) -> no rejection (never reject)", 100, 10, 0, False),
        ("50%: 6/10 assigned (40% gap) -> no rejection", 50, 10, 6, False),
        ("50%: 4/10 assigned (60% gap) -> rejection", 50, 10, 4, True),
    ],
)
def test_post_filter_reject_threshold(
    name: str, percentage: int, min_member: int, assigned: int, rejects: bool
) -> None:
    existing = [_p(f"assigned-{i}", "pg1", node_name="node") for i in range(assigned)]
    args = {**UPSTREAM, "podGroupRejectPercentage": percentage}
    _, pl = harness(
        "Coscheduling", args, drop=["PrioritySort"], objects=[_pg("pg1", min_member)], pods=existing
    )
    _, st = pl.post_filter(CycleState(), parse_pod(_p("p", "pg1")), Diagnosis(num_all_nodes=1))
    assert (st.code, st.message) == (Code.UNSCHEDULABLE, REJECT if rejects else "")


def test_pod_group_backoff_time() -> None:
    """TestPodGroupBackoffTime: "prevent pod falling into infinite scheduling loop"."""
    pods = [_p(f"pod{i}", "pg1") for i in (1, 2, 3)]
    h, pl = harness(
        "Coscheduling",
        {**UPSTREAM, "podGroupBackoffSeconds": 1},
        drop=["PrioritySort"],
        objects=[_pg("pg1", 3)],
        pods=pods,
    )
    activated: list[str] = []
    services = h.scheduler.services
    real = services[ACTIVATE.name]
    services[ACTIVATE.name] = lambda ps: (activated.extend(sorted(p.key for p in ps)), real(ps))
    st, _ = pl.permit(CycleState(), parse_pod(pods[0]), "test")
    assert st is not None and st.code == Code.WAIT
    assert activated == ["ns/pod2", "ns/pod3"]
    pl.post_filter(CycleState(), parse_pod(pods[1]), Diagnosis(num_all_nodes=1))
    _, st = pl.pre_filter(CycleState(), parse_pod(pods[2]), h.scheduler.cache.snapshot)
    assert st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message == "podGroup ns/pg1 failed recently"


# ---------------------------------------------------------------------- end to end
def _gang_harness(guard: bool, nodes: int = 2, cpu: str = "4") -> Harness:
    cfg = batch_config(
        "Coscheduling", {"gangGuard": guard, "permitWaitingTimeSeconds": 10}, drop=["PrioritySort"]
    )
    h = Harness(cfg)
    h.add_nodes([node(f"n{i}").cap(cpu=cpu, memory="64Gi", pods=110).obj() for i in range(nodes)])
    return h


def test_gang_is_placed_all_or_nothing() -> None:
    h = _gang_harness(guard=False)
    h.cluster.apply_batch(_pg("a", 3, ns="default"))
    h.add_pods([_p(f"a{i}", "a", ns="default", cpu="1") for i in range(3)])
    h.schedule()
    assert sorted(h.placement()) == ["default/a0", "default/a1", "default/a2"]
    # A gang that can never fit binds nothing.
    h.cluster.apply_batch(_pg("b", 4, ns="default"))
    h.add_pods([_p(f"b{i}", "b", ns="default", cpu="2") for i in range(4)])
    h.settle(60)
    assert not [k for k in h.placement() if k.startswith("default/b")]


def test_pod_naming_a_missing_pod_group_waits_with_a_reason() -> None:
    h = _gang_harness(guard=True)
    h.add_pods([_p("x", "nope", ns="default")])
    h.schedule()
    assert "PodGroup not found" in (h.failure("x") or "")
    assert not h.placement()
    h.cluster.apply_batch(_pg("nope", 1, ns="default"))
    h.settle(20)
    assert h.placement() == {"default/x": h.placement()["default/x"]}


def _half_and_half(guard: bool) -> Harness:
    """Two gangs of 4 x 2 cpu on 2 nodes of 4 cpu: room for exactly one of them."""
    h = _gang_harness(guard=guard)
    h.cluster.apply_batch(_pg("a", 4, ns="default"))
    h.cluster.apply_batch(_pg("b", 4, ns="default"))
    # Interleaved arrival: each gang gets pods assumed before the other finishes.
    h.add_pods([_p(f"{g}{i}", g, ns="default", cpu="2") for i in range(4) for g in "ab"])
    return h


@pytest.mark.parametrize("guard", [False, True])
def test_one_of_two_competing_gangs_completes(guard: bool) -> None:
    h = _half_and_half(guard)
    h.settle(120)
    placed = {k.split("/")[1][0] for k in h.placement()}
    assert len(h.placement()) == 4 and len(placed) == 1


def test_guard_never_lets_two_gangs_hold_at_once() -> None:
    h = _half_and_half(True)
    for _ in range(60):
        h.schedule()
        waiting = {wp.pod.labels["scheduling.x-k8s.io/pod-group"] for wp in h.scheduler.waiting_pods.values()}
        assert len(waiting) <= 1
        h.clock.advance(1)


def _stream_behind_big_gang(guard: bool) -> Harness:
    """A gang of 4 x 2 cpu fails while small pods fill the cluster; then, one at a time, a small pod
    finishes and a new one arrives (a stream of small jobs)."""
    h = _gang_harness(guard=guard)
    h.add_pods([_p(f"s{i}", ns="default", cpu="1") for i in range(7)])
    h.schedule()
    h.cluster.apply_batch(_pg("big", 4, ns="default"))
    h.add_pods([_p(f"big{i}", "big", ns="default", cpu="2") for i in range(4)])
    h.settle(30)
    for i in range(7):
        h.add_pods([_p(f"late{i}", ns="default", cpu="1")])
        h.cluster.delete_pod("default", f"s{i}")
        h.settle(5)
    h.settle(60)
    return h


def test_stream_of_small_pods_starves_the_big_gang_without_the_guard() -> None:
    h = _stream_behind_big_gang(guard=False)
    assert not [k for k in h.placement() if "big" in k]


def test_guard_keeps_room_for_the_senior_gang() -> None:
    h = _stream_behind_big_gang(guard=True)
    assert sorted(k for k in h.placement() if "big" in k) == [f"default/big{i}" for i in range(4)]
    pl = h.scheduler.frameworks["default-scheduler"].plugins["Coscheduling"]
    assert pl.guard.reserved is None  # admitted: the reservation ended


@pytest.mark.skip(
    reason="TestSchemeRestriction checks a Go controller-runtime client scheme; Harmonic has none"
)
def test_scheme_restriction() -> None:
    raise AssertionError


# ---------------------------------------------------------------------- args defaults (apis/config/v1)
@pytest.mark.parametrize(
    ("name", "args", "want"),
    [
        # defaults_test.go: "empty config" and "set non default CoschedulingArgs".
        ("empty config", None, (60, 0)),
        ("empty args", {}, (60, 0)),
        ("set non default", {"permitWaitingTimeSeconds": 60, "podGroupBackoffSeconds": 20}, (60, 20)),
    ],
)
def test_default_args_as_loaded(name: str, args: Any, want: tuple[int, int]) -> None:
    h = Harness(batch_config("Coscheduling", args, drop=["PrioritySort"]))
    loaded = h.config.profile("default-scheduler").args["Coscheduling"]
    assert isinstance(loaded, CoschedulingArgs)
    assert (loaded.permit_waiting_time_seconds, loaded.pod_group_backoff_seconds) == want
    assert loaded.pod_group_reject_percentage == 10
    pl = h.scheduler.frameworks["default-scheduler"].plugins["Coscheduling"]
    assert pl.timeout == float(want[0])


# ---------------------------------------------------------------------- Permit's wait (GetWaitTimeDuration)
def _waiting(h: Harness) -> list[Any]:
    return list(h.scheduler.waiting_pods.values())


@pytest.mark.parametrize(
    ("name", "schedule_timeout", "permit_waiting", "want"),
    [
        ("the PodGroup's scheduleTimeoutSeconds wins", 5, 60, 5.0),
        ("no scheduleTimeoutSeconds: the args' wait", None, 30, 30.0),
        ("neither: util.DefaultWaitTime", None, 0, 60.0),
        ("scheduleTimeoutSeconds 0: Permit keeps the args' wait", 0, 30, 30.0),
        ("scheduleTimeoutSeconds 0 and args 0: no wait", 0, 0, 0.0),
    ],
)
def test_permit_wait_time(name: str, schedule_timeout: int | None, permit_waiting: int, want: float) -> None:
    b = pod_group("pg").ns("ns").min_member(2)
    if schedule_timeout is not None:
        b = b.timeout(schedule_timeout)
    _, pl = harness(
        "Coscheduling",
        {**UPSTREAM, "permitWaitingTimeSeconds": permit_waiting},
        drop=["PrioritySort"],
        objects=[b.obj()],
    )
    st, wait = pl.permit(CycleState(), parse_pod(_p("p", "pg")), "node")
    assert st is not None and st.code == Code.WAIT
    assert wait == want


def _short_gang(names: str, timeout: int | None = None, nodes: int = 2) -> Harness:
    """Gangs of minMember 3 whose third pod fits nowhere: the first two wait at Permit. A reject
    percentage of 100 keeps PostFilter from releasing them, so only what a test does (a timeout, a
    failing member) can."""
    cfg = batch_config(
        "Coscheduling",
        {"gangGuard": False, "permitWaitingTimeSeconds": 60, "podGroupRejectPercentage": 100},
        drop=["PrioritySort"],
    )
    h = Harness(cfg)
    h.add_nodes([node(f"n{i}").cap(cpu="4", memory="64Gi", pods=110).obj() for i in range(nodes)])
    for g in names:
        b = pod_group(g).ns("default").min_member(3)
        h.cluster.apply_batch((b.timeout(timeout) if timeout is not None else b).obj())
        h.add_pods([_p(f"{g}{i}", g, ns="default", cpu="1") for i in range(2)])
        h.add_pods([_p(f"{g}2", g, ns="default", cpu="100")])
    h.schedule()
    return h


def test_schedule_timeout_seconds_bounds_the_permit_wait() -> None:
    """End to end: a gang short of its quorum waits its PodGroup's 5 s, not the args' 60 s, then is
    released; nothing of it stays bound or assumed."""
    h = _short_gang("g", timeout=5)
    waiting = _waiting(h)
    assert sorted(wp.pod.name for wp in waiting) == ["g0", "g1"]
    assert {wp.next_deadline for wp in waiting} == {h.clock.now() + 5}
    h.clock.advance(4)
    h.schedule()
    assert len(_waiting(h)) == 2
    h.clock.advance(2)
    h.schedule()
    assert _waiting(h) == []
    assert not h.placement()
    assert not any(h.scheduler.cache.is_assumed(f"g{i}") for i in range(2))


# ---------------------------------------------------------------------- Unreserve releases the gang
def test_failing_member_unreserve_releases_waiting_siblings() -> None:
    """A member waiting at Permit that fails (here: deleted, so the framework rejects it and runs
    Unreserve) rejects its waiting siblings at once, long before their Permit timeout."""
    h = _short_gang("g")
    assert sorted(wp.pod.name for wp in _waiting(h)) == ["g0", "g1"]
    h.cluster.delete_pod("default", "g0")
    h.schedule()
    assert _waiting(h) == []
    assert not h.placement()
    assert "rejection in Unreserve" in (h.failure("g1") or "")
    assert not h.scheduler.cache.is_assumed("g1")


def test_unreserve_rejects_only_its_own_gang() -> None:
    """Unreserve of one gang's member leaves another gang's waiting pods alone."""
    h = _short_gang("ab", nodes=1)
    assert sorted(wp.pod.name for wp in _waiting(h)) == ["a0", "a1", "b0", "b1"]
    h.cluster.delete_pod("default", "a0")
    h.schedule()
    assert sorted(wp.pod.name for wp in _waiting(h)) == ["b0", "b1"]
