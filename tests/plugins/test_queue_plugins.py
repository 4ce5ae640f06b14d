"""PrioritySort (TestLess, priority_sort_test.go), SchedulingGates (TestPreEnqueue,
scheduling_gates_test.go) and DefaultBinder (TestDefaultBinder, default_binder_test.go)."""

from __future__ import annotations

import pytest

from harmonic.api.pod import Pod, parse_pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import QueuedPodInfo
from harmonic.framework.status import Code, Status
from harmonic.plugins.defaultbinder import DefaultBinder
from harmonic.plugins.prioritysort import PrioritySort
from harmonic.plugins.schedulinggates import SchedulingGates
from harmonic.testing import pod

LOW, HIGH = 1, 2


def _qp(priority: int, timestamp: float) -> QueuedPodInfo:
    return QueuedPodInfo(parse_pod(pod(f"p{priority}-{timestamp}").priority(priority).obj()), timestamp, 0)


@pytest.mark.parametrize(
    ("name", "p1", "p2", "want"),
    [
        ("p1.priority greater than p2.priority", _qp(HIGH, 1.0), _qp(LOW, 1.0), True),
        ("p1.priority less than p2.priority", _qp(LOW, 1.0), _qp(HIGH, 1.0), False),
        (
            "p1.priority equal to p2.priority, and p1 is added to schedulingQ earlier than p2",
            _qp(HIGH, 1.0),
            _qp(HIGH, 2.0),
            True,
        ),
        (
            "p1.priority equal to p2.priority, and p2 is added to schedulingQ earlier than p1",
            _qp(HIGH, 2.0),
            _qp(HIGH, 1.0),
            False,
        ),
    ],
)
def test_priority_sort_less(name: str, p1: QueuedPodInfo, p2: QueuedPodInfo, want: bool) -> None:
    sort = PrioritySort(None, None)
    assert sort.less(p1, p2) is want
    # The tuple key the queue uses orders the same way.
    assert (sort.sort_key(p1) < sort.sort_key(p2)) is want


@pytest.mark.parametrize(
    ("name", "raw", "want"),
    [
        ("pod does not carry scheduling gates", pod("p").obj(), None),
        (
            "pod carries scheduling gates",
            pod("p").gate("foo", "bar").obj(),
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting for scheduling gates: [foo bar]"),
        ),
    ],
)
def test_scheduling_gates_pre_enqueue(
    name: str, raw: dict[str, object], want: tuple[Code, str] | None
) -> None:
    st = SchedulingGates(None, None).pre_enqueue(parse_pod(raw))
    assert (None if st is None else (st.code, st.message)) == want


class _Client:
    def __init__(self, fail: bool) -> None:
        self.fail = fail
        self.bound: list[tuple[str, str]] = []

    def bind(self, p: Pod, node_name: str) -> Status | None:
        if self.fail:
            return Status(Code.ERROR, "binding rejected")
        self.bound.append((p.key, node_name))
        return None


class _Handle:
    def __init__(self, client: _Client) -> None:
        self.client = client


@pytest.mark.parametrize(("name", "fail"), [("successful", False), ("binding error", True)])
def test_default_binder(name: str, fail: bool) -> None:
    client = _Client(fail)
    st = DefaultBinder(None, _Handle(client)).bind(
        CycleState(), parse_pod(pod("foo").uid("foo").obj()), "foohost"
    )
    if fail:
        assert st is not None and st.code == Code.ERROR
        assert client.bound == []
    else:
        assert st is None
        assert client.bound == [("default/foo", "foohost")]
