"""Moved pods' reservations kept in the ConfigMap beside the lease, over HTTP against the API-server
double: written on every change once read back, never while this replica may not lead; a 409 is read
again and retried; a failed write is counted and tried again; malformed entries are skipped with a
warning naming them; the format round-trips every live entry and drops the expired ones (hypothesis);
a scheduler starting without leader election restores the live, unconsumed entries only; a new
leader honours the reservation the old one made."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harmonic.cluster.leader import micro_time
from harmonic.cluster.reservation_store import ConfigMapStore, configmap_name, decode, encode, restore
from harmonic.cluster.transport import Transport
from harmonic.feedback.moves_live import LiveMoves, MoveArgs
from harmonic.plugins.registry import default_registry
from harmonic.scheduler.reservations import Reservation, Reservations
from harmonic.signals.metrics import FEEDBACK_RESERVATION_STORE
from harmonic.testing.apiserver import ApiServerDouble
from tests.cluster.conftest import FAST_LEASE, scheduler_config, scheduling, wait_until
from tests.feedback.test_moves_live import _node, ask, load
from tests.feedback.test_moves_reserved import _bound, _ours, _seen

NS = FAST_LEASE["resourceNamespace"]
NAME = configmap_name(FAST_LEASE["resourceName"])
OWNER = "web-rs-uid"
WRITES = ("create configmaps", "update configmaps")


def _store_counts() -> dict[tuple[str, str], float]:
    return {
        (s.labels["op"], s.labels["result"]): s.value
        for m in FEEDBACK_RESERVATION_STORE.collect()
        for s in m.samples
        if s.name.endswith("_total")
    }


def _since(before: dict[tuple[str, str], float]) -> dict[tuple[str, str], float]:
    return {k: v - before.get(k, 0.0) for k, v in _store_counts().items() if v != before.get(k, 0.0)}


def _writes(api: ApiServerDouble) -> int:
    return sum(api.stats().requests[w] for w in WRITES)


def _entries(api: ApiServerDouble) -> list[Reservation]:
    cm = api.get("configmaps", NAME, NS)
    assert cm is not None
    entries, warnings = decode(cm.get("data"), NAME)
    assert warnings == []
    return entries


def _value(left: float, node: str = "big", owner: str = OWNER, **fields: Any) -> str:
    entry = {
        "owner": owner,
        "node": node,
        "expires": micro_time(time.time() + left),
        "moved": "default/web-1",
        "known": ["uid-web-2"],
        "tag": "default/web",
        **fields,
    }
    return json.dumps({k: v for k, v in entry.items() if v is not None})


def _configmap(api: ApiServerDouble, data: Any) -> None:
    api.create("configmaps", {"metadata": {"name": NAME, "namespace": NS}, "data": data})


@pytest.fixture
def store(transport: Transport) -> Iterator[Callable[..., tuple[ConfigMapStore, Reservations]]]:
    made: list[ConfigMapStore] = []

    def make(fence: Callable[[], float | None] = lambda: 5.0) -> tuple[ConfigMapStore, Reservations]:
        s = ConfigMapStore(transport, NS, NAME, fence, retry_seconds=0.05)
        s.start()
        made.append(s)
        return s, Reservations(time.monotonic, store=s)

    yield make
    for s in made:
        s.stop()


# ---------------------------------------------------------------------------------------- the store
def test_every_change_is_written_once_the_object_was_read_back(api, store):
    s, rs = store()
    r = rs.reserve(OWNER, "big", 60, "default/web-1", frozenset({"uid-web-2"}), tag="default/web")
    assert not rs.flush(0.3)  # held back: the object was not read back yet
    assert api.get("configmaps", NAME, NS) is None
    restore(s, rs, [])
    assert rs.flush(5)
    (kept,) = _entries(api)
    assert replace(kept, expires=0) == replace(r, expires=0)
    assert abs(kept.expires - (time.time() + 60)) < 2
    labels = api.get("configmaps", NAME, NS)["metadata"]["labels"]  # type: ignore[index]
    assert labels == {"app.kubernetes.io/managed-by": "harmonic"}
    second = rs.reserve(OWNER, "small", 60, "default/web-2")
    assert rs.flush(5) and [e.moved for e in _entries(api)] == ["default/web-1", "default/web-2"]
    rs.cancel(r)
    assert rs.flush(5) and [e.moved for e in _entries(api)] == ["default/web-2"]
    rs.cancel(second)
    assert rs.flush(5) and _entries(api) == []


def test_a_write_conflict_is_read_again_and_retried(api, store):
    s, rs = store()
    restore(s, rs, [])
    rs.reserve(OWNER, "big", 60, "default/web-1")
    assert rs.flush(5)
    # Someone else writes the object in between: this replica's resourceVersion is stale.
    cm = api.get("configmaps", NAME, NS)
    assert cm is not None
    cm["data"]["edited-by-hand"] = "x"
    api.update("configmaps", cm)
    before = _store_counts()
    api.reset_stats()
    rs.reserve(OWNER, "small", 60, "default/web-2")
    assert rs.flush(5)
    assert _since(before) == {("write", "conflict"): 1, ("write", "ok"): 1}
    assert api.stats().requests["update configmaps"] == 2  # the 409, then the write over the new version
    assert api.stats().requests["get configmaps"] == 1
    assert [e.moved for e in _entries(api)] == ["default/web-1", "default/web-2"]  # the table replaces it


def test_a_failed_write_is_counted_and_tried_again(api, store):
    s, rs = store()
    restore(s, rs, [])
    fault = api.inject(status=500, method="POST", path="/configmaps", times=1)
    before = _store_counts()
    rs.reserve(OWNER, "big", 60, "default/web-1")
    wait_until(lambda: api.get("configmaps", NAME, NS), what="the write tried again")
    assert fault.hits == 1 and _since(before) == {("write", "failed"): 1, ("write", "ok"): 1}
    assert [e.moved for e in _entries(api)] == ["default/web-1"]


def test_without_leadership_nothing_is_written(api, store):
    leading = {"now": False}
    s, rs = store(fence=lambda: 5.0 if leading["now"] else None)
    restore(s, rs, [])
    before = _store_counts()
    api.reset_stats()
    rs.reserve(OWNER, "big", 60, "default/web-1")
    assert not rs.flush(5)
    time.sleep(0.3)  # a few retries' worth
    assert _writes(api) == 0 and api.get("configmaps", NAME, NS) is None
    assert _since(before).get(("write", "not_leader"), 0) >= 1
    leading["now"] = True  # the change held back is written once this replica may act again
    wait_until(lambda: api.get("configmaps", NAME, NS), what="the held-back write")
    assert [e.moved for e in _entries(api)] == ["default/web-1"]


# ---------------------------------------------------------------------------------------- reading back
@pytest.mark.parametrize(
    ("case", "data", "warning"),
    [
        ("not JSON", {"a.0": "{"}, "entry 'a.0': not JSON"),
        ("not an object", {"a.0": "[1]"}, "entry 'a.0': not a JSON object"),
        ("no node", {"a.0": _value(60, node="")}, "entry 'a.0': node: missing or empty; skipped"),
        ("no owner", {"a.0": _value(60, owner=None)}, "entry 'a.0': owner: missing or empty; skipped"),
        ("a number for a node", {"a.0": _value(60, node=7)}, "entry 'a.0': node: not a string; skipped"),
        ("a bad time", {"a.0": _value(60, expires="tomorrow")},
         "entry 'a.0': expires: not an RFC 3339 time: 'tomorrow'; skipped"),
        ("a time without zone", {"a.0": _value(60, expires="2030-01-01T00:00:00")},
         "entry 'a.0': expires: no time zone"),
        ("known not a list", {"a.0": _value(60, known="uid")}, "entry 'a.0': known: not a list of pod uids"),
        ("data not a map", ["x"], "configmap ns/cm: data: not a map of entries; no reservation restored"),
    ],
)  # fmt: skip
def test_a_malformed_entry_is_named_and_skipped(case, data, warning):
    good = {"web.0": _value(60)} if isinstance(data, dict) else {}
    entries, warnings = decode({**good, **data} if isinstance(data, dict) else data, "ns/cm")
    assert [e.node for e in entries] == (["big"] if good else []), case
    (got,) = warnings
    assert warning in got and got.startswith("configmap ns/cm: "), case


def test_a_broken_object_is_skipped_with_a_warning_and_rewritten(api, store, caplog):
    _configmap(api, {"web.0": _value(60), "web.1": "{", "db.0": _value(60, expires="soon")})
    s, rs = store()
    before = _store_counts()
    with caplog.at_level(logging.WARNING, logger="harmonic.cluster.reservation_store"):
        restore(s, rs, [])
    assert [r.node for held in rs.open.values() for r in held] == ["big"]
    said = caplog.text
    assert f"configmap {NS}/{NAME}: entry 'web.1': not JSON" in said
    assert f"configmap {NS}/{NAME}: entry 'db.0': expires: not an RFC 3339 time: 'soon'; skipped" in said
    assert _since(before)[("load", "skipped")] == 2
    assert rs.flush(5) and [e.node for e in _entries(api)] == ["big"]


_ENTRY = st.tuples(
    st.sampled_from(["o1", "o2", "o3"]),
    st.sampled_from(["n1", "n2"]),
    st.floats(1, 3600),
    st.frozensets(st.sampled_from(["u1", "u2", "u3"])),
)


@settings(max_examples=200, deadline=None)
@given(entries=st.lists(_ENTRY, max_size=12), later=st.floats(0, 4000), start=st.floats(0, 1e6))
def test_save_then_load_round_trips_every_live_reservation_and_drops_the_expired(entries, later, start):
    """A table written by one process and read back by another ``later`` seconds on: every entry with
    time left comes back with exactly that time left (to the microsecond), none other."""
    assume(all(abs(seconds - later) > 1e-3 for _, _, seconds, _ in entries))
    wall = {"t": 1_800_000_000.0}
    mono = {"t": start}
    first = Reservations(lambda: mono["t"], wall=lambda: wall["t"])
    made = [
        first.reserve(owner, node, seconds, f"default/moved-{i}", known, tag=f"t{i}")
        for i, (owner, node, seconds, known) in enumerate(entries)
    ]
    data, left_out = encode(first.saved())
    assert left_out == 0
    wall["t"] += later
    second = Reservations(lambda: 42.0, wall=lambda: wall["t"])
    saved, warnings = decode(json.loads(json.dumps(data)), "ns/cm")
    assert warnings == [] and len(saved) == len(made)
    second.restore(saved, {})
    back = {r.moved: r for held in second.open.values() for r in held}
    live = {r.moved: r for r, (_, _, seconds, _) in zip(made, entries, strict=True) if seconds > later}
    assert set(back) == set(live)
    for moved, r in back.items():
        want = live[moved]
        assert (r.owner, r.node, r.known, r.tag) == (want.owner, want.node, want.known, want.tag)
        assert abs((r.expires - 42.0) - (want.expires - start - later)) < 2e-6
    # oldest first per owner, as ``take`` consumes them
    for held in second.open.values():
        assert [r.expires for r in held] == sorted(r.expires for r in held)


# ---------------------------------------------------------------------------------------- live schedulers
def test_a_scheduler_without_leader_election_restores_only_live_unconsumed_entries(api, start_scheduler):
    load(api, _node("small", "4"), _node("big", "16"), _ours("web-2", "small"), _ours("web-9", "small"))
    uid2, uid9 = (api.get("pods", n, "default")["metadata"]["uid"] for n in ("web-2", "web-9"))  # type: ignore[index]
    _configmap(
        api,
        {
            "web.0": _value(60, known=[uid2, uid9]),  # live: both placed pods were known when it was made
            "web.1": _value(-5),  # expired
            "db.0": _value(60, owner="db-rs-uid", node="small"),
            # consumed: web-9 is bound and was not known when it was made
            "web-late.0": _value(60, node="small", known=[uid2]),
        },
    )
    alone = scheduler_config(False, leaderElection={**FAST_LEASE, "leaderElect": False})  # same object name
    with scheduling(start_scheduler, config=alone) as r:
        rs = r.live.scheduler.reservations
        wait_until(lambda: rs.open, what="the restore")
        got = sorted((x.owner, x.node) for held in rs.open.values() for x in held)
        assert got == [("db-rs-uid", "small"), (OWNER, "big")]
        wait_until(lambda: len(_entries(api)) == 2, what="the object rewritten without the others")
        assert sorted((x.owner, x.node) for x in _entries(api)) == got


def test_a_new_leader_honours_the_reservation_the_old_one_made(api, start_scheduler):
    load(api, _node("small", "4"), _node("big", "16"), _ours("web-1", "small"), _ours("web-2", "small"))
    first = start_scheduler("a")
    wait_until(lambda: first.live.synced.is_set() and first.live.is_leader, what="a leading")
    second = start_scheduler("b")
    wait_until(lambda: second.live.synced.is_set(), what="b synced")
    moves = LiveMoves.for_scheduler(first.live, default_registry(), MoveArgs())
    moves.round([ask("web-1")])
    assert api.get("pods", "web-1", "default") is None
    assert [(e.owner, e.node, e.moved) for e in _entries(api)] == [(OWNER, "big", "default/web-1")]
    # The standby writes nothing, whatever its table holds.
    writes = _writes(api)
    held = second.live.scheduler.reservations.reserve("db-rs-uid", "small", 60, "default/db-0")
    assert not second.live.scheduler.reservations.flush(0.5)
    second.live.scheduler.reservations.cancel(held)
    assert _writes(api) == writes and len(_entries(api)) == 1
    assert first.stop() == 0  # releases the lease
    wait_until(lambda: second.live.is_leader, what="b leading")
    rs = second.live.scheduler.reservations
    wait_until(lambda: rs.open, what="the reservation restored")
    assert [(x.node, x.moved) for held in rs.open.values() for x in held] == [("big", "default/web-1")]
    # A node that scores higher for any pod joins before the controller creates the replacement.
    load(api, _node("huge", "64"))
    wait_until(_seen(second, "huge"), what="huge in b's cache")
    for name in ("web-3", "db-0"):
        api.create("pods", _ours(name, app=name.split("-")[0]))
    placed = wait_until(_bound(api, "web-3", "db-0"), timeout=20, what="the new pods bound")
    assert placed == {"web-3": "big", "db-0": "huge"}
    wait_until(lambda: _entries(api) == [], what="the consumed entry written away")


def test_entries_past_the_size_limit_are_left_out_latest_to_expire_kept() -> None:
    # an owner with many pods makes a long known list; the object must stay under the API server's 1 MiB
    table = Reservations(lambda: 0.0, wall=lambda: 1_000_000.0)
    known = frozenset(f"{i:08d}-0000-0000-0000-000000000000" for i in range(200))
    for i in range(6):
        table.reserve(f"owner-{i % 2}", f"n{i}", 60.0 + i, f"default/moved-{i}", known)
    whole, left_out = encode(table.saved())
    assert left_out == 0 and len(whole) == 6
    size = sum(len(k) + len(v) for k, v in whole.items())
    limit = size * 2 // 3
    data, left_out = encode(table.saved(), limit)
    assert sum(len(k) + len(v) for k, v in data.items()) <= limit
    assert left_out == 6 - len(data) > 0
    saved, warnings = decode(data, "ns/cm")
    kept = sorted(r.moved for r in saved)
    # the reservations with the most time left are the ones kept
    assert kept == [f"default/moved-{i}" for i in range(6 - len(data), 6)] and warnings == []
    # each owner's keys stay unique and numbered from 0
    assert all(k.rsplit(".", 1)[1] in {"0", "1", "2"} for k in data)


def test_a_table_past_the_limit_is_written_without_its_soonest_to_expire_entries(
    api, store, monkeypatch, caplog
):
    import harmonic.cluster.reservation_store as module

    s, rs = store()
    restore(s, rs, [])
    known = frozenset(f"uid-{i:04d}" for i in range(50))
    for i, seconds in enumerate((30, 90, 60)):
        rs.reserve(OWNER, f"n{i}", seconds, f"default/web-{i}", known)
    one = max(len(v) + len(k) for k, v in encode(rs.saved())[0].items())
    monkeypatch.setattr(module, "DATA_LIMIT", 2 * one + 8)
    before = _store_counts()
    rs.reserve(OWNER, "n3", 120, "default/web-3", known)
    assert rs.flush(5)
    assert sorted(e.moved for e in _entries(api)) == ["default/web-1", "default/web-3"]
    assert _since(before).get(("write", "too_large"), 0) >= 1
    assert "2 of 4 reservations left out" in caplog.text
    # the table itself keeps all four: this process still honours them
    assert sum(len(held) for held in rs.open.values()) == 4
