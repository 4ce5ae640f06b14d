"""A move's replacement, reserved on the node the what-if chose, against a live scheduler over HTTP: the
moves path reserves before evicting, the scheduler nominates the owner's first new pod there
(``status.nominatedNodeName`` patched) and it lands there though another node scores higher; a node
that no longer fits falls back; an unused reservation expires; a second replacement does not consume
it; a failed eviction cancels it. Each outcome is in the decision log and in
``harmonic_feedback_reservations_total``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from harmonic.feedback.moves_live import LiveMoves, MoveArgs
from harmonic.plugins.registry import default_registry
from harmonic.signals.metrics import FEEDBACK_RESERVATIONS
from harmonic.testing.apiserver import ApiServerDouble
from tests.cluster.conftest import Running, api, make_transport, scheduling, start_scheduler, wait_until
from tests.feedback.test_moves_live import Clock, _node, _pod, ask, counted, delta, load, texts
from tests.rescheduler.helpers import pdb

__all__ = ["api", "make_transport", "start_scheduler"]

OURS = "harmonic"


def _ours(name: str, on: str = "", cpu: str = "1", app: str = "web") -> dict[str, Any]:
    """A pod of ``app``'s ReplicaSet that this scheduler places; pending without ``on``."""
    obj = _pod(name, on or "x", cpu=cpu, app=app)
    obj["spec"]["schedulerName"] = OURS
    if not on:
        del obj["spec"]["nodeName"]
    return obj


@pytest.fixture
def live(api: ApiServerDouble, start_scheduler: Callable[..., Running]) -> Iterator[Running]:
    """web-1 and web-2 on the small node, big empty; the scheduler running and leading."""
    load(api, _node("small", "4"), _node("big", "16"), _ours("web-1", "small"), _ours("web-2", "small"))
    with scheduling(start_scheduler) as r:
        yield r


def _moves(r: Running, **args: Any) -> LiveMoves:
    return LiveMoves.for_scheduler(r.live, default_registry(), MoveArgs.model_validate(args))


def _seen(r: Running, name: str) -> Callable[[], bool]:
    return lambda: r.live.scheduler.cache.snapshot.has_node(name)


def _bound(api: ApiServerDouble, *names: str) -> Callable[[], dict[str, str] | None]:
    def placed() -> dict[str, str] | None:
        got = {n: ((api.get("pods", n, "default") or {}).get("spec") or {}).get("nodeName") for n in names}
        return got if all(got.values()) else None  # type: ignore[return-value]

    return placed


def _fill_big(api: ApiServerDouble, r: Running) -> None:
    load(api, _ours("hog-0", "big", cpu="16", app="hog"))
    snap = r.live.scheduler.cache.snapshot
    wait_until(
        lambda: any(p.name == "hog-0" for p in snap.pods_on(snap.slot("big"))), what="hog-0 in the cache"
    )


@pytest.mark.parametrize(
    ("case", "before", "created", "placed", "outcomes"),
    [
        ("lands on the reserved node though huge scores higher", None, ["web-3", "db-0"],
         {"web-3": "big", "db-0": "huge"}, {"landed": 1}),
        ("a reserved node that no longer fits falls back", _fill_big, ["web-3"], {"web-3": "huge"},
         {"fell_back": 1}),
        ("a second replacement does not consume it", None, ["web-3", "web-4"], {"web-3": "big", "web-4": "huge"},
         {"landed": 1}),
    ],
)  # fmt: skip
def test_the_replacement_is_nominated_to_the_reserved_node(
    api, live, case, before, created, placed, outcomes
):
    m = _moves(live)
    counts = counted(FEEDBACK_RESERVATIONS)
    m.round([ask("web-1")])
    assert api.get("pods", "web-1", "default") is None, case
    assert "reserved on big for its replacement (the what-if's placement) for 60 s" in texts(m)[0], case
    # A node that scores higher for any pod joins before the controller creates the replacement.
    load(api, _node("huge", "64"))
    wait_until(_seen(live, "huge"), what="huge in the cache")
    if before is not None:
        before(api, live)
    api.reset_stats()
    for name in created:
        api.create("pods", _ours(name, app=name.split("-")[0]))
    got = wait_until(_bound(api, *created), timeout=20, what="the new pods bound")
    assert got == placed, case
    wait_until(lambda: len(texts(m)) == 2, what="the reservation's outcome")
    assert delta(counts, FEEDBACK_RESERVATIONS) == outcomes
    # nominated through the API, once: only the replacement that consumed the reservation
    nominated = wait_until(lambda: api.stats().requests["patch pods/status"], what="the nomination patch")
    assert nominated == 1, case
    assert (api.get("pods", "web-3", "default") or {})["status"].get("nominatedNodeName") == "big", case
    last = texts(m)[1]
    if "landed" in outcomes:
        assert "replacement default/web-3 of default/web-1 bound to big: landed on the reserved node" in last
    else:
        assert "bound to huge, not the reserved big: fell back to normal scheduling" in last
    assert not live.live.scheduler.reservations.open and not live.live.scheduler.reservations.taken


def test_an_unused_reservation_expires(api, live):
    clock = Clock()
    live.live.scheduler.reservations.now = clock
    m = _moves(live, reservationSeconds=30)
    counts = counted(FEEDBACK_RESERVATIONS)
    m.round([ask("web-1")])
    assert live.live.scheduler.reservations.open
    clock.now += 31
    wait_until(lambda: not live.live.scheduler.reservations.open, what="the reservation dropped")
    assert "the reservation of big for default/web-1's replacement expired" in texts(m)[1]
    assert delta(counts, FEEDBACK_RESERVATIONS) == {"expired": 1}
    load(api, _node("huge", "64"))
    wait_until(_seen(live, "huge"), what="huge in the cache")
    api.reset_stats()
    api.create("pods", _ours("web-3"))
    assert wait_until(_bound(api, "web-3"), timeout=20, what="web-3 bound") == {"web-3": "huge"}
    assert api.stats().requests["patch pods/status"] == 0


def test_a_failed_eviction_cancels_the_reservation(api, live):
    # The budget's status is not written yet: our reading of its spec allows the eviction, the server
    # (which reads only the status) answers 429.
    load(api, pdb("web-pdb", "web", minAvailable=1))
    m = _moves(live, retrySeconds=60)
    counts = counted(FEEDBACK_RESERVATIONS)
    m.round([ask("web-1")])
    assert api.get("pods", "web-1", "default") is not None
    assert not live.live.scheduler.reservations.open
    outcome, refused = texts(m)
    assert "the reservation of big for default/web-1's replacement cancelled" in outcome
    assert "refused (429)" in refused
    assert delta(counts, FEEDBACK_RESERVATIONS) == {"cancelled": 1}
