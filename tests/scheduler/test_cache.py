"""The scheduler cache (backend/cache): assume, confirm, forget, expiry of assumed pods."""

from __future__ import annotations

import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod, reparse_pod
from harmonic.scheduler.cache import Cache, CacheError
from harmonic.scheduler.clock import ManualClock
from harmonic.scheduler.scheduler import _with_node
from harmonic.testing import node, pod


def setup(ttl: float = 0.0) -> tuple[Cache, ManualClock]:
    clock = ManualClock()
    cache = Cache(clock, assumed_ttl=ttl)
    cache.add_node(parse_node(node("a").cap(cpu="2").obj()))
    cache.add_node(parse_node(node("b").cap(cpu="2").obj()))
    return cache, clock


def requested_cpu(cache: Cache, name: str) -> int:
    snap = cache.snapshot
    return int(snap.requested[snap.slot(name), 0])


def bound(raw: dict, node_name: str) -> dict:
    return {**raw, "spec": {**raw["spec"], "nodeName": node_name}}


def test_assume_counts_at_once_and_forget_gives_it_back():
    cache, _ = setup()
    p = parse_pod(pod("p").req(cpu="1").obj())
    assumed = _with_node(p, "a")
    cache.assume(assumed, "a")
    assert cache.is_assumed("uid-p") and requested_cpu(cache, "a") == 1000
    with pytest.raises(CacheError, match="already in the cache"):
        cache.assume(assumed, "a")
    with pytest.raises(CacheError, match="was assumed on a but assigned to b"):
        cache.forget(_with_node(p, "b"))
    cache.forget(assumed)
    assert not cache.is_assumed("uid-p") and requested_cpu(cache, "a") == 0


def test_confirmation_replaces_the_assumed_pod_without_recounting():
    cache, _ = setup()
    raw = pod("p").req(cpu="1").obj()
    assumed = _with_node(parse_pod(raw), "a")
    cache.assume(assumed, "a")
    confirmed = reparse_pod(assumed, bound(raw, "a"))
    assert confirmed.extra is assumed.extra and confirmed.node_name == "a"
    cache.add_pod(confirmed)
    assert not cache.is_assumed("uid-p")
    assert cache.pod("uid-p") is confirmed and requested_cpu(cache, "a") == 1000


def test_confirmation_on_another_node_moves_the_pod():
    cache, _ = setup()
    raw = pod("p").req(cpu="1").obj()
    cache.assume(_with_node(parse_pod(raw), "a"), "a")
    cache.add_pod(parse_pod(bound(raw, "b")))
    assert cache.node_of("uid-p") == "b"
    assert (requested_cpu(cache, "a"), requested_cpu(cache, "b")) == (0, 1000)


def test_assumed_pods_expire_only_after_binding_finished_and_the_ttl():
    cache, clock = setup(ttl=30)
    p = _with_node(parse_pod(pod("p").req(cpu="1").obj()), "a")
    cache.assume(p, "a")
    clock.advance(100)
    assert cache.cleanup_expired() == []  # binding not finished: never expires
    cache.finish_binding(p)
    clock.advance(30)
    assert cache.cleanup_expired() == []
    clock.advance(1)
    assert [x.key for x in cache.cleanup_expired()] == ["default/p"]
    assert cache.pod("uid-p") is None and requested_cpu(cache, "a") == 0


def test_without_ttl_assumed_pods_wait_for_their_confirmation():
    cache, clock = setup()
    p = _with_node(parse_pod(pod("p").req(cpu="1").obj()), "a")
    cache.assume(p, "a")
    cache.finish_binding(p)
    clock.advance(10**6)
    assert cache.cleanup_expired() == [] and cache.is_assumed("uid-p")


def test_reparse_reuses_only_when_the_spec_is_unchanged():
    raw = pod("p").req(cpu="1").obj()
    first = parse_pod(raw)
    relabelled = {**raw, "metadata": {**raw["metadata"], "labels": {"x": "y"}}}
    assert reparse_pod(first, relabelled).extra is not first.extra
    resized = pod("p").req(cpu="2").obj()
    assert reparse_pod(first, resized).requests["cpu"] == 2000
    assert reparse_pod(first, bound(raw, "a")).extra is first.extra


def test_reparse_reuses_across_the_servers_metadata_bookkeeping_only():
    """A binding confirmation from a real API server carries a new resourceVersion (and may carry new
    managedFields): still no parse. Any other metadata change (a label, deletion) parses again."""
    raw = pod("p").req(cpu="1").obj()
    raw = {**raw, "metadata": {**raw["metadata"], "resourceVersion": "7"}}
    first = parse_pod(raw)
    written = bound(raw, "a")
    written["metadata"] = {
        **raw["metadata"],
        "resourceVersion": "8",
        "generation": 2,
        "managedFields": [{"manager": "kube-scheduler"}],
    }
    again = reparse_pod(first, written)
    assert again.extra is first.extra and again.node_name == "a" and again.raw is written
    deleting = {**written, "metadata": {**written["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert reparse_pod(first, deleting).deleting
    relabelled = {**written, "metadata": {**written["metadata"], "labels": {"x": "y"}}}
    got = reparse_pod(first, relabelled)
    assert got.extra is not first.extra and got.labels == {"x": "y"}
