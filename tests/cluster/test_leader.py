"""Leader election on a Lease: one holder, takeover only after expiry, fencing before takeover."""

from __future__ import annotations

import threading
import time

import pytest

from harmonic.cluster.leader import LeaderElector, micro_time
from harmonic.framework.config import LeaderElection
from harmonic.testing.apiserver import ApiServerDouble

from .conftest import wait_until

LE = LeaderElection(
    leader_elect=True,
    lease_duration=1.5,
    renew_deadline=1.0,
    retry_period=0.2,
    resource_name="harmonic",
    resource_namespace="kube-system",
)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def elector(make_transport):
    def make(identity: str, clock=time.monotonic) -> LeaderElector:
        return LeaderElector(make_transport(agent=f"replica-{identity}"), LE, identity, clock=clock)

    return make


def _lease(api: ApiServerDouble) -> dict:
    lease = api.get("leases", "harmonic", "kube-system")
    assert lease is not None
    return lease["spec"]


def test_first_candidate_creates_the_lease_second_waits_for_expiry(api: ApiServerDouble, elector):
    clock = Clock()
    a, b = elector("a"), elector("b", clock)
    assert a.try_acquire_or_renew()
    spec = _lease(api)
    assert (
        spec["holderIdentity"] == "a" and spec["leaseDurationSeconds"] == 2 and spec["leaseTransitions"] == 0
    )
    assert not b.try_acquire_or_renew()  # held, and b has just observed it
    clock.t += 1.0
    assert not b.try_acquire_or_renew()  # unchanged for 1 s < leaseDurationSeconds
    clock.t += 1.1
    assert b.try_acquire_or_renew()  # unchanged for 2.1 s: expired, as observed by b
    spec = _lease(api)
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1


def test_renewals_keep_the_lease_from_expiring(api: ApiServerDouble, elector):
    clock = Clock()
    a, b = elector("a"), elector("b", clock)
    assert a.try_acquire_or_renew()
    for _ in range(5):
        assert not b.try_acquire_or_renew()
        clock.t += 1.0
        assert a.try_acquire_or_renew()  # a renews: b sees a changed record and restarts its count
    assert _lease(api)["holderIdentity"] == "a"


def test_racing_candidates_cannot_both_win(api: ApiServerDouble, elector):
    a, b = elector("a"), elector("b")
    assert a.try_acquire_or_renew()
    a.release()
    # Both read the released lease; both try to take it with the same resourceVersion.
    api.inject(status=0, delay=0.3, method="PUT", times=2)
    results: dict[str, bool] = {}
    threads = [
        threading.Thread(target=lambda e=e: results.__setitem__(e.identity, e.try_acquire_or_renew()))
        for e in (a, b)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results.values()) == [False, True]
    assert _lease(api)["holderIdentity"] == next(k for k, v in results.items() if v)


def test_fence_closes_before_anyone_can_take_over(api: ApiServerDouble, elector):
    clock = Clock()
    a = elector("a", clock)
    assert a.try_acquire_or_renew()
    assert a.remaining() == pytest.approx(1.5)
    clock.t += 0.9
    assert a.remaining() == pytest.approx(0.6)  # a request may take until renewal + leaseDuration
    clock.t += 0.2
    assert a.remaining() is None  # renewDeadline passed without renewal: no new side effects


def test_release_lets_a_standby_take_over_at_once(api: ApiServerDouble, elector):
    a, b = elector("a"), elector("b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert a.release()
    assert _lease(api)["holderIdentity"] == ""
    assert b.try_acquire_or_renew()


def test_leader_that_cannot_renew_steps_down(api: ApiServerDouble, elector):
    a = elector("a")
    stopped = threading.Event()
    a.on_stopped = stopped.set
    stop = threading.Event()
    t = threading.Thread(target=a.run, args=(stop,))
    t.start()
    wait_until(lambda: a.is_leader)
    api.inject(status=500, path="/leases", agent="replica-a")
    wait_until(stopped.is_set, timeout=5)
    assert a.lost.is_set() and a.remaining() is None
    t.join(5)
    stop.set()


@pytest.mark.parametrize(
    ("t", "text"),
    [
        (0.5, "1970-01-01T00:00:00.500000Z"),
        (1700000000.25, "2023-11-14T22:13:20.250000Z"),
        (1700000000.999999, "2023-11-14T22:13:20.999999Z"),
        (1700000001.0, "2023-11-14T22:13:21.000000Z"),
        (1700000000.25, "2023-11-14T22:13:20.250000Z"),  # an earlier second again
    ],
)
def test_micro_time_is_rfc3339_utc_with_microseconds(t, text):
    assert micro_time(t) == text
