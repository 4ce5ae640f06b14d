"""The extender's informer-fed cluster cache, fed event by event the way informers deliver them."""

from __future__ import annotations

import threading

from harmonic.cluster.memory import InMemoryCluster
from harmonic.extender.cache import ClusterCache
from harmonic.testing import node, pod


def fed() -> tuple[ClusterCache, InMemoryCluster]:
    cluster = InMemoryCluster()
    cache = ClusterCache()
    cluster.subscribe(cache.on_node, cache.on_pod)
    return cache, cluster


def requested_cpu(cache: ClusterCache, node_name: str) -> int:
    snap = cache.snapshot
    return int(snap.requested[snap.slot(node_name), 0])


def test_nodes_and_bound_pods_follow_events():
    cache, cluster = fed()
    cluster.add_node(node("a").cap(cpu="4").obj())
    cluster.create_pod(pod("p").req(cpu="1").node("a").obj())
    cluster.create_pod(pod("q").req(cpu="2").obj())  # pending: not on any node
    assert cache.snapshot.has_node("a") and requested_cpu(cache, "a") == 1000
    bound = cluster.pods["default/q"]
    cluster.update_pod({**bound, "spec": {**bound["spec"], "nodeName": "a"}})
    assert requested_cpu(cache, "a") == 3000
    cluster.delete_pod("default", "p")
    assert requested_cpu(cache, "a") == 2000
    cluster.delete_node("a")
    assert not cache.snapshot.has_node("a")


def test_terminal_pods_free_their_node():
    cache, cluster = fed()
    cluster.add_node(node("a").cap(cpu="4").obj())
    cluster.create_pod(pod("job").req(cpu="3").node("a").obj())
    assert requested_cpu(cache, "a") == 3000
    done = cluster.pods["default/job"]
    cluster.update_pod({**done, "status": {**done.get("status", {}), "phase": "Succeeded"}})
    assert requested_cpu(cache, "a") == 0


def test_assumed_pod_is_confirmed_by_the_informer_or_dropped_on_delete():
    cache, cluster = fed()
    cluster.add_node(node("a").cap(cpu="4").obj())
    cluster.create_pod(pod("p").req(cpu="1").obj())
    uid = cluster.pods["default/p"]["metadata"]["uid"]
    pending = cache.pending_pod(uid)
    assert pending is not None
    cache.assume(pending, "a")
    assert cache.cache.is_assumed(uid) and requested_cpu(cache, "a") == 1000
    cluster.bind(pending, "a")  # the watch event confirms
    assert not cache.cache.is_assumed(uid) and requested_cpu(cache, "a") == 1000
    cluster.create_pod(pod("r").req(cpu="2").obj())
    uid_r = cluster.pods["default/r"]["metadata"]["uid"]
    r = cache.pending_pod(uid_r)
    assert r is not None
    cache.assume(r, "a")
    cluster.delete_pod("default", "r")
    assert cache.cache.pod(uid_r) is None and requested_cpu(cache, "a") == 1000


def test_malformed_objects_are_logged_not_raised(caplog):
    cache = ClusterCache()
    cache.on_node(None, {"metadata": {"name": "x"}, "status": {"allocatable": {"cpu": "many"}}})
    cache.on_pod(None, {"metadata": {"name": "p"}, "spec": {"containers": "nope"}})
    assert not cache.snapshot.has_node("x")
    assert "ignoring node" in caplog.text and "ignoring pod" in caplog.text


def test_events_from_many_threads_all_land():
    cache = ClusterCache()
    cache.on_node(None, node("a").cap(cpu="1000", pods=10000).obj())

    def feed(k: int) -> None:
        for i in range(200):
            cache.on_pod(None, pod(f"p{k}-{i}").uid(f"u{k}-{i}").req(cpu="1m").node("a").obj())

    threads = [threading.Thread(target=feed, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert requested_cpu(cache, "a") == 800
    assert cache.cache.num_pods == 800


def test_an_object_that_cannot_be_compiled_is_one_error_line_however_often_it_comes(caplog):
    cache = ClusterCache()
    bad_node = {"metadata": {"name": "x"}, "status": {"allocatable": {"cpu": "1e100"}}}
    bad_pod = pod("p").req(cpu="-1").obj()
    for i in range(3):  # status updates and resyncs
        cache.on_node(bad_node, {**bad_node, "metadata": {"name": "x", "resourceVersion": str(i)}})
        cache.on_pod(bad_pod, bad_pod)
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 2
    assert "Node x: status.allocatable.cpu" in errors[0] and "Pod default/p: spec.containers" in errors[1]
