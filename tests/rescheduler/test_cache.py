"""The live rescheduler reading the cluster from informers (``ClusterCache``), against the API-server
double over HTTP: one list per kind, then watches from the list's resourceVersion; cycles make no list
request; changes reach the next cycle through the watch, evictions included."""

from __future__ import annotations

from harmonic.cluster.informer import Backoff
from harmonic.cluster.services import STORAGE_RESOURCES
from harmonic.rescheduler.cache import RESOURCES, ClusterCache
from tests.cluster.conftest import wait_until
from tests.rescheduler.test_live import TAINTS, live, load, tainted
from tests.rescheduler.test_plugins import N, P


def _id(r) -> str:
    """The double's name for a resource: ``group/plural`` outside the core group."""
    group = r.api_version.rpartition("/")[0]
    return f"{group}/{r.plural}" if group else r.plural


LISTED = {f"list {_id(r)}" for r in RESOURCES}
WATCHED = {f"watch {_id(r)}" for r in RESOURCES}


def started(transport) -> ClusterCache:
    cache = ClusterCache(transport, backoff=lambda: Backoff(0.05, 0.2))
    cache.start()
    assert cache.wait_for_sync(10)
    return cache


def reads(api) -> dict[str, int]:
    return {k: v for k, v in api.stats().requests.items() if k.split(" ")[0] in ("list", "get", "watch")}


def test_cycles_read_the_cache_not_the_api_server(api, transport):
    load(api, tainted())
    api.reset_stats()
    cache = started(transport)
    try:
        wait_until(lambda: all(reads(api).get(f"watch {_id(r)}") for r in RESOURCES), what="a watch per kind")
        first = reads(api)
        # One list and one watch per kind, the watch resuming at the list's resourceVersion.
        assert {k: first.get(k) for k in LISTED | WATCHED} == dict.fromkeys(LISTED | WATCHED, 1)
        watches = {path for method, path in api.stats().calls if "watch=" in path}
        for r in RESOURCES:
            rv = cache.informers[r.plural].resource_version
            assert rv and any(f"/{r.plural}?" in w and f"resourceVersion={rv}" in w for w in watches), r
        api.reset_stats()
        lr = live(transport, TAINTS, dry_run=True, cache=cache)
        for _ in range(3):
            rep = lr.cycle()
            assert rep.error == ""
            assert [e.pod.name for e in rep.result.log.evictions] == ["a"]
        assert reads(api) == {}
    finally:
        cache.stop()


def test_changes_arrive_by_watch_and_evictions_leave(api, transport):
    load(api, [N("n1"), N("n2")])
    cache = started(transport)
    try:
        lr = live(transport, TAINTS, cache=cache)
        assert lr.cycle().result.log.evictions == []
        # A taint and a pod not tolerating it, written after the cache synced.
        node = api.get("nodes", "n1")
        node["spec"]["taints"] = [{"key": "t", "value": "x", "effect": "NoSchedule"}]
        api.update("nodes", node)
        load(api, [P("a", "n1")])
        wait_until(
            lambda: cache.informers["pods"].get("default/a") and cache.state(0).nodes[0].taints,
            what="the watch to deliver the pod and the taint",
        )
        api.reset_stats()
        rep = lr.cycle()
        assert [e.pod.name for e in rep.evicted] == ["a"]
        assert api.get("pods", "a", "default") is None
        wait_until(lambda: cache.informers["pods"].get("default/a") is None, what="the eviction's delete")
        assert lr.cycle().result.log.evictions == []
        assert not any(k.startswith("list ") for k in reads(api))
        assert all(inf.lists == 1 for inf in cache.informers.values())
    finally:
        cache.stop()


def test_unsynced_cache_fails_the_cycle(api, transport):
    cache = ClusterCache(transport)  # never started
    lr = live(transport, TAINTS, cache=cache)
    rep = lr.cycle()
    assert "has not synced" in rep.error and lr.healthz()


def test_cli_loop_reads_the_cache(api, tmp_path):
    """``harmonic reschedule`` in loop mode, as a process: evicts, lists each kind once, exits 0 on SIGTERM."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import yaml

    load(api, tainted())
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    pol = tmp_path / "policy.yaml"
    pol.write_text(yaml.safe_dump(TAINTS))
    api.reset_stats()
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "harmonic", "reschedule", "--policy", str(pol), "--interval", "1s"),
            *("--kubeconfig", str(kubeconfig), "--port", "0"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        wait_until(lambda: api.get("pods", "a", "default") is None, timeout=60, what="the eviction")
        time.sleep(2.5)  # more cycles, from the cache
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()[-2000:]
    listed = {k: v for k, v in reads(api).items() if k.startswith("list ")}
    # The cache's kinds, and the storage objects the default profile's volume plugins read.
    assert listed == dict.fromkeys(LISTED | {f"list {_id(r)}" for r in STORAGE_RESOURCES}, 1)
