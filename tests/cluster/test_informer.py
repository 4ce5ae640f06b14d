"""Informers keep a complete copy through watch breaks, 410s and API errors, and report each change once."""

from __future__ import annotations

import threading

import pytest

from harmonic.cluster.informer import ACTIVE_PODS, NODES, PODS, Backoff, Informer, strip_managed_fields
from harmonic.testing import node, pod
from harmonic.testing.apiserver import ApiServerDouble

from .conftest import wait_until


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def __call__(self, old, new) -> None:
        kind = "add" if old is None else "delete" if new is None else "update"
        with self._lock:
            self.events.append((kind, (new or old)["metadata"]["name"]))

    def of(self, kind: str) -> list[str]:
        return [n for k, n in self.events if k == kind]


@pytest.fixture
def informer(transport):
    made: list[Informer] = []

    def make(resource=PODS, **kwargs) -> tuple[Informer, Recorder]:
        inf = Informer(transport, resource, backoff=Backoff(0.02, 0.1), **kwargs)
        rec = Recorder()
        inf.add_handler(rec)
        inf.start()
        assert inf.wait_for_sync(5)
        made.append(inf)
        return inf, rec

    yield make
    for inf in made:
        inf.stop()


def _settled(api: ApiServerDouble, inf: Informer) -> bool:
    return inf.resource_version == str(api.resource_version)


def test_lists_in_pages_then_follows_the_watch(api: ApiServerDouble, informer):
    api.create_many("pods", [pod(f"p{i}").obj() for i in range(7)])
    inf, rec = informer(page_size=3)
    assert inf.lists == 1 and sorted(rec.of("add")) == [f"p{i}" for i in range(7)]
    api.create("pods", pod("late").obj())
    api.delete("pods", "p0", "default")
    wait_until(lambda: "p0" in rec.of("delete") and "late" in rec.of("add"))
    assert api.stats().requests["list pods"] == 3  # 7 pods, pages of 3


def test_watch_dropped_mid_stream_loses_nothing(api: ApiServerDouble, informer):
    inf, rec = informer()
    for i in range(20):
        api.create("pods", pod(f"p{i}").obj())
        if i % 5 == 2:
            api.drop_watches("pods")
    wait_until(lambda: len(rec.of("add")) == 20 and _settled(api, inf))
    assert sorted(rec.of("add")) == sorted(f"p{i}" for i in range(20))  # each exactly once
    # Each cut is followed by a relist (diffed against the store: nothing reported twice).
    assert inf.watches > 1 and inf.lists == 1 + inf.relists_on_break


def test_410_on_reconnect_relists_and_reports_the_difference(api: ApiServerDouble, informer):
    api.create_many("pods", [pod(f"p{i}").obj() for i in range(3)])
    inf, rec = informer()
    # While the informer is cut off: one pod deleted, one added, one changed; history compacted.
    api.inject(status=500, path="/api/v1/pods$", times=1000)
    api.drop_watches("pods")
    api.delete("pods", "p0", "default")
    api.create("pods", pod("new").obj())
    api.set_status("pods", "p1", {"phase": "Running"}, "default")
    api.expire_history()
    api.expire_history("pods", watches=1)
    api.clear_faults()
    wait_until(lambda: inf.lists == 2 and _settled(api, inf), what="relist")
    assert inf.relists_on_gone >= 1
    assert rec.of("delete") == ["p0"]
    assert rec.of("add").count("new") == 1
    assert rec.of("update") == ["p1"]
    assert sorted(inf.keys()) == ["default/new", "default/p1", "default/p2"]


def test_server_errors_are_retried_with_backoff(api: ApiServerDouble, transport):
    api.create("nodes", node("n").obj())
    fault = api.inject(status=500, path="/api/v1/nodes$", times=3)
    inf = Informer(transport, NODES, backoff=Backoff(0.02, 0.1))
    inf.start()
    try:
        assert inf.wait_for_sync(5)
        assert fault.hits == 3 and inf.keys() == ["n"]
    finally:
        inf.stop()


def test_bookmarks_advance_the_resource_version(api: ApiServerDouble, informer):
    inf, _ = informer()
    api.create("nodes", node("n").obj())  # another resource moves the global resourceVersion
    wait_until(lambda: _settled(api, inf), what="a bookmark")


def test_terminal_pods_leave_the_active_pods_view(api: ApiServerDouble, informer):
    api.create("pods", pod("job").obj())
    inf, rec = informer(field_selector=ACTIVE_PODS)
    api.set_status("pods", "job", {"phase": "Succeeded"}, "default")
    wait_until(lambda: rec.of("delete") == ["job"])
    assert inf.keys() == []


def test_handler_errors_do_not_stop_the_informer(api: ApiServerDouble, informer):
    inf, rec = informer()

    def broken(old, new):
        raise RuntimeError("boom")

    inf.handlers.insert(0, broken)
    api.create("pods", pod("a").obj())
    wait_until(lambda: rec.of("add") == ["a"])
    assert inf.alive


def test_strip_managed_fields_from_lists_and_watches(api: ApiServerDouble, informer):
    managed = [{"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:spec": {}}}]
    listed = pod("listed").obj()
    listed["metadata"]["managedFields"] = managed
    api.create("pods", listed)
    inf, rec = informer(transform=strip_managed_fields)
    watched = pod("watched").obj()
    watched["metadata"]["managedFields"] = managed
    api.create("pods", watched)
    wait_until(lambda: rec.of("add") == ["listed", "watched"])
    for name in ("listed", "watched"):
        meta = inf.get(f"default/{name}")["metadata"]
        assert "managedFields" not in meta and meta["name"] == name and meta["resourceVersion"]
    assert api.get("pods", "watched", "default")["metadata"]["managedFields"] == managed  # the server's copy


@pytest.mark.parametrize("retry_after", [0, 1], ids=["no-retry-after", "retry-after-1s"])
def test_server_recreated_with_an_older_resource_version_is_relisted(
    api: ApiServerDouble, transport, retry_after
):
    """etcd recreated: the server's resourceVersion is now below the informer's. Listing from the
    informer's is "504 Too large resource version" (with or without Retry-After: not waited out);
    client-go relists from scratch."""
    api.create_many("pods", [pod(f"old{i}").obj() for i in range(40)])  # a resourceVersion to fall from
    inf = Informer(transport, PODS, backoff=Backoff(0.02, 0.1))
    rec = Recorder()
    inf.add_handler(rec)
    inf.start()
    try:
        assert inf.wait_for_sync(5)
        wait_until(lambda: inf.watches == 1, what="the watch")  # recreate cuts it
        api.too_large_retry_after = retry_after
        held = int(inf.resource_version)
        api.recreate(keep=lambda resource, obj: obj["metadata"]["name"] in ("old0", "old1"))
        api.create("pods", pod("fresh").obj())
        assert api.resource_version < held
        wait_until(lambda: inf.get("default/fresh") and _settled(api, inf), timeout=15, what="relist")
        assert sorted(rec.of("delete")) == sorted(f"old{i}" for i in range(2, 40))
        assert rec.of("add").count("fresh") == 1
        assert sorted(inf.keys()) == ["default/fresh", "default/old0", "default/old1"]
        assert inf.healthy
    finally:
        inf.stop()


def test_healthy_only_while_the_copy_can_be_kept_current(api: ApiServerDouble, informer):
    inf, _ = informer(NODES)
    assert inf.healthy
    api.inject(status=403, path="/api/v1/nodes$", message="forbidden")
    api.recreate()  # the watch is cut; every reopen and relist is refused
    wait_until(lambda: not inf.healthy, what="unhealthy")
    assert "403" in inf.failing
    api.clear_faults()
    wait_until(lambda: inf.healthy, what="healthy again")


def test_a_watch_opened_on_a_server_behind_it_is_checked_when_it_ends(api: ApiServerDouble, transport):
    """The server is recreated between the list and the first watch: kube-apiserver keeps that watch
    open and silent (no bookmark) until its timeout; the informer then checks its resourceVersion."""
    api.create_many("pods", [pod(f"old{i}").obj() for i in range(10)])
    api.too_large_retry_after = 0
    opened = threading.Event()
    inf = Informer(transport, PODS, backoff=Backoff(0.02, 0.1), watch_timeout=(1.0, 1.0))
    original = inf._watch

    def watch_after_recreate() -> None:
        if not opened.is_set():
            opened.set()
            api.recreate()
        original()

    inf._watch = watch_after_recreate  # type: ignore[method-assign]
    inf.start()
    try:
        assert inf.wait_for_sync(5)
        api.create("pods", pod("fresh").obj())
        wait_until(lambda: inf.keys() == ["default/fresh"], what="relist after the silent watch")
    finally:
        inf.stop()
