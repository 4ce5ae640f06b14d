"""The extender attached to a cluster: informers from the API-server double feed its cache, kube-scheduler
shaped requests over HTTP are answered from it, and the bind verb binds through the API."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest
from click.testing import CliRunner

from harmonic.cli import main
from harmonic.cluster.informer import Backoff
from harmonic.cluster.transport import Transport, load_client
from harmonic.extender.engine import NODE_NOT_CACHED
from harmonic.extender.live import LiveCluster
from harmonic.testing import node, pod
from harmonic.testing.apiserver import ApiServerDouble
from harmonic.testing.kubeshape import binding_args, extender_args
from tests.cluster.conftest import wait_until

from .conftest import Client


@pytest.fixture
def api() -> Iterator[ApiServerDouble]:
    with ApiServerDouble(bookmark_interval=0.2) as server:
        yield server


@pytest.fixture
def connect(api: ApiServerDouble, tmp_path: Path) -> Iterator[Callable[[], LiveCluster]]:
    """``connect()``: a started ``LiveCluster`` watching the double."""
    started: list[LiveCluster] = []

    def make() -> LiveCluster:
        transport = Transport(
            load_client(str(api.kubeconfig(tmp_path / "kubeconfig"))),
            qps=-1,
            burst=100,
            user_agent="harmonic-extender-test",
            timeout=10,
        )
        live = LiveCluster(transport, informer_backoff=lambda: Backoff(0.02, 0.2))
        live.start()
        started.append(live)
        return live

    yield make
    for live in started:
        live.stop()


def _nodes(api: ApiServerDouble, *names: str, cpu: str = "2") -> None:
    api.create_many("nodes", [node(n).cap(cpu=cpu, memory="8Gi", pods=110).obj() for n in names])


#: Scores by NodeResourcesFit alone (LeastAllocated), so requests on a node move its extender score.
FIT_SCORES = {
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit"}]}},
        }
    ]
}


def _serve_live(serve: Callable[..., Client], live: LiveCluster, config: Any = None) -> Client:
    return serve(cache=live.cache, client=live.client, services=live.services, config=config)


def test_names_only_requests_are_answered_from_watched_nodes_and_pods(api, connect, serve):
    _nodes(api, "n1", "n2")
    api.create("pods", pod("busy").req(cpu="1500m").node("n1").obj())
    live = connect()
    wait_until(lambda: live.cache.synced, what="cache sync")
    client = _serve_live(serve, live, FIT_SCORES)
    incoming = api.create("pods", pod("web").req(cpu="1").obj())  # as kube-scheduler's informer has it

    status, res = client.post("filter", extender_args(incoming, node_names=["n1", "n2", "ghost"]))
    assert status == 200 and res["Error"] == ""
    assert res["NodeNames"] == ["n2"] and res["Nodes"] is None
    assert res["FailedNodes"] == {"n1": "Insufficient cpu", "ghost": NODE_NOT_CACHED}

    status, scores = client.post("prioritize", extender_args(incoming, node_names=["n1", "n2"]))
    by_host = {s["Host"]: s["Score"] for s in scores}
    assert status == 200 and by_host["n2"] > by_host["n1"]  # the emptier node, by requests it watched

    # A pod bound after the sync takes n2: the next request sees it without any restart.
    api.create("pods", pod("late").req(cpu="1500m").node("n2").obj())
    wait_until(
        lambda: client.post("filter", extender_args(incoming, node_names=["n1", "n2"]))[1]["NodeNames"] == [],
        what="the late pod to occupy n2",
    )
    _, res = client.post("filter", extender_args(incoming, node_names=["n1", "n2"]))
    assert res["FailedNodes"] == {"n1": "Insufficient cpu", "n2": "Insufficient cpu"}

    # Deleting the first pod frees n1; a node added later is known too.
    api.delete("pods", "busy", "default")
    _nodes(api, "n3")
    wait_until(
        lambda: (
            client.post("filter", extender_args(incoming, node_names=["n1", "n2", "n3"]))[1]["NodeNames"]
            == ["n1", "n3"]
        ),
        what="n1 freed and n3 added",
    )


def test_ready_only_once_the_initial_lists_are_in(api, connect, serve):
    _nodes(api, "n1")
    failing = api.inject(status=500, method="GET", path=r"^/api/v1/pods$")
    live = connect()
    client = _serve_live(serve, live)
    wait_until(lambda: failing.hits >= 2, what="the pod list to fail")
    status, _, body = client.raw("GET", "/readyz")
    assert (status, body) == (503, b"cluster cache not synced")
    incoming = pod("web").uid("u-web").req(cpu="1").obj()
    _, res = client.post("filter", extender_args(incoming, node_names=["n1"]))
    assert res["Error"] == "the Harmonic extender's cluster cache has not synced yet"
    assert res["NodeNames"] is None

    api.clear_faults()
    wait_until(lambda: client.raw("GET", "/readyz")[0] == 200, what="readiness")
    _, res = client.post("filter", extender_args(incoming, node_names=["n1"]))
    assert res["Error"] == "" and res["NodeNames"] == ["n1"]


def test_bind_verb_creates_a_binding_and_reports_conflicts(api, connect, serve):
    _nodes(api, "n1", "n2", cpu="1")
    web = api.create("pods", pod("web").req(cpu="1").obj())
    live = connect()
    wait_until(lambda: live.cache.synced and live.cache.pending_pod(web["metadata"]["uid"]), what="sync")
    client = _serve_live(serve, live)

    status, res = client.post("bind", binding_args(web, "n1"))
    assert (status, res) == (200, {"Error": ""})
    assert api.get("pods", "web", "default")["spec"]["nodeName"] == "n1"
    assert [(b.pod, b.node) for b in api.bindings()] == [("default/web", "n1")]
    # Accounted at once: a pod asking for n1's whole CPU is refused there by the very next filter.
    other = api.create("pods", pod("other").req(cpu="1").obj())
    _, res = client.post("filter", extender_args(other, node_names=["n1", "n2"]))
    assert res["NodeNames"] == ["n2"] and res["FailedNodes"] == {"n1": "Insufficient cpu"}

    # Binding an already bound pod again: the API server's 409 reaches kube-scheduler in Error.
    status, res = client.post("bind", binding_args(web, "n2"))
    # (The framework prefixes the Bind plugin's name, as upstream's runBindPlugins does.)
    assert status == 200 and "DefaultBinder" in res["Error"]
    assert res["Error"].endswith(
        '409 Conflict: Operation cannot be fulfilled on pods "web": pod web is already assigned to node "n1"'
    )
    assert api.get("pods", "web", "default")["spec"]["nodeName"] == "n1"
    assert api.stats().binding_conflicts == 1

    # A node the cache does not know is refused before any API call.
    calls = api.stats().requests["create pods/binding"]
    status, res = client.post("bind", binding_args(other, "ghost"))
    assert status == 200 and res["Error"].endswith('node "ghost" not found')
    assert api.stats().requests["create pods/binding"] == calls


def test_plugins_services_read_the_watched_namespaces_and_budgets(api, connect):
    api.create("namespaces", {"metadata": {"name": "shop", "labels": {"team": "web"}}})
    api.create(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1},
        },
    )
    live = connect()
    wait_until(lambda: live.cache.synced, what="cache sync")
    assert live.services["namespaces"]["shop"] == {"team": "web"}
    assert live.services["namespaces"]["elsewhere"] == {}
    (budget,) = live.services["pdbs"]()
    assert (budget.namespace, budget.name, budget.disruptions_allowed) == ("shop", "web", 0)


#: Scores by PodTopologySpread alone: with no constraints of its own a pod is scored by the system
#: default constraints, or not at all (every node 0) when no workload object selects it.
SPREAD_SCORES = {
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "PodTopologySpread"}]}},
        }
    ]
}


def _replica(name: str) -> Any:
    return pod(name).label("app", "web").owner("ReplicaSet", "web-7d9").req(cpu="100m")


def test_prioritize_spreads_by_the_watched_workload_objects(api, connect, serve):
    api.create_many(
        "nodes",
        [node("a0").zone("a").obj(), node("a1").zone("a").obj(), node("b0").zone("b").obj()],
    )
    api.create_many("pods", [_replica(f"web-{i}").node("a0").obj() for i in range(2)])
    incoming = api.create("pods", _replica("web-new").obj())
    live = connect()
    wait_until(lambda: live.cache.synced, what="cache sync")
    client = _serve_live(serve, live, SPREAD_SCORES)
    args = extender_args(incoming, node_names=["a0", "a1", "b0"])

    def scores() -> dict[str, int]:
        status, res = client.post("prioritize", args)
        assert status == 200
        return {s["Host"]: s["Score"] for s in res}

    # The pod's ReplicaSet is not in the cluster yet: no selector, no default spreading.
    assert scores() == {"a0": 0, "a1": 0, "b0": 0}
    rs = {
        "metadata": {"name": "web-7d9", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }
    api.create("replicasets", rs)
    spread = wait_until(lambda: (s := scores())["b0"] > 0 and s, what="the ReplicaSet to be seen")
    # Its two siblings on a0: the other zone first, then the empty host of their zone, a0 last.
    assert spread["b0"] > spread["a1"] > spread["a0"]
    api.delete("replicasets", "web-7d9", "default")
    wait_until(lambda: scores() == {"a0": 0, "a1": 0, "b0": 0}, what="the deletion to be seen")


def test_not_ready_until_the_workload_lists_are_in(api, connect, serve):
    _nodes(api, "n1")
    failing = api.inject(status=500, method="GET", path=r"^/apis/apps/v1/statefulsets$")
    live = connect()
    client = _serve_live(serve, live)
    wait_until(lambda: failing.hits >= 2, what="the StatefulSet list to fail")
    assert live.informers["nodes"].synced.is_set() and live.informers["pods"].synced.is_set()
    assert client.raw("GET", "/readyz")[0] == 503
    api.clear_faults()
    wait_until(lambda: client.raw("GET", "/readyz")[0] == 200, what="readiness")


# ---------------------------------------------------------------------------- the process
class _Process:
    """``harmonic extender`` as a child process; its JSON log lines collected as they come."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harmonic", "extender", "--port", "0", *args],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.logs: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if line.startswith("{"):
                self.logs.append(json.loads(line))

    def url(self) -> str:
        rec = wait_until(
            lambda: (
                next((r for r in self.logs if r["msg"] == "serving the extender verbs"), None)
                or self.proc.poll() is not None
            ),
            timeout=30,
            what="the extender to serve",
        )
        assert isinstance(rec, dict), f"extender exited with {self.proc.returncode}"
        return str(rec["url"])

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=20)
        finally:
            self.proc.kill()
        self._reader.join(5)
        return code


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except HTTPError as e:
        return e.code, e.read()


def _post(url: str, body: Any) -> Any:
    req = Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST")
    with urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def test_extender_process_serves_names_only_requests_from_the_cluster(api: ApiServerDouble, tmp_path):
    _nodes(api, "n1", "n2")
    api.create("pods", pod("busy").req(cpu="1500m").node("n1").obj())
    incoming = api.create("pods", pod("web").req(cpu="1").obj())
    ext = _Process(["--kubeconfig", str(api.kubeconfig(tmp_path / "kubeconfig"))])
    try:
        base = ext.url().removesuffix("/scheduler")
        wait_until(lambda: _get(base + "/readyz")[0] == 200, timeout=30, what="readiness")
        res = _post(base + "/scheduler/filter", extender_args(incoming, node_names=["n1", "n2"]))
        bound = _post(base + "/scheduler/bind", binding_args(incoming, "n2"))
    finally:
        code = ext.stop()
    assert code == 0
    assert res["NodeNames"] == ["n2"] and res["FailedNodes"] == {"n1": "Insufficient cpu"}
    assert bound == {"Error": ""} and api.pod_placement()["default/web"] == "n2"
    (mode,) = [r for r in ext.logs if "mode" in r]
    assert mode["mode"] == "cluster-cache" and mode["server"] == api.url
    assert any(r["msg"] == "extender cache synced" for r in ext.logs)
    assert ext.logs[-1]["msg"] == "stopped"  # SIGTERM: requests finished, informers stopped, exit 0
    assert any(agent.endswith("(extender)") for agent in api.stats().by_agent)


def test_extender_process_without_a_cluster_serves_full_node_requests(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)  # no ~/.kube/config
    ext = _Process(["--log-format", "json", "--decisions-buffer", "3"], env=env)
    incoming = pod("web").uid("u-web").req(cpu="1").obj()
    try:
        base = ext.url().removesuffix("/scheduler")
        assert _get(base + "/readyz") == (200, b"ok")
        full = _post(
            base + "/scheduler/filter",
            extender_args(incoming, nodes=[node("n1").cap(cpu="2").obj(), node("n2").cap(cpu="500m").obj()]),
        )
        names = _post(base + "/scheduler/filter", extender_args(incoming, node_names=["n1"]))
        recorded = json.loads(_get(base + "/debug/decisions")[1])
    finally:
        code = ext.stop()
    assert code == 0
    assert [n["metadata"]["name"] for n in full["Nodes"]["items"]] == ["n1"]
    # 1 CPU is beyond n2's whole allocatable: unresolvable, as NodeResourcesFit reports it.
    assert full["FailedAndUnresolvableNodes"] == {"n2": "Insufficient cpu"}
    assert "no cluster cache" in names["Error"]
    # --decisions-buffer: the answered filter call is recorded (the refused one never ran the plugins).
    (decision,) = recorded["decisions"]
    assert (decision["source"], decision["result"], decision["passed"]) == (
        "extender/filter",
        "Filtered",
        ["n1"],
    )
    (mode,) = [r for r in ext.logs if "mode" in r]
    assert mode["mode"] == "request-nodes" and mode["level"] == "warning"
    assert "no cluster cache" in mode["msg"]


def test_an_unloadable_kubeconfig_is_one_clear_error(tmp_path: Path):
    r = CliRunner().invoke(main, ["extender", "--port", "0", "--kubeconfig", str(tmp_path / "nope")])
    assert r.exit_code == 1
    assert r.output.startswith(f"error: cannot load cluster configuration from {tmp_path / 'nope'}")


def test_not_ready_while_an_informer_cannot_list_or_watch(api, connect, serve):
    """After the first sync: refused lists and watches make /readyz 503 until they work again."""
    _nodes(api, "n1")
    live = connect()
    client = _serve_live(serve, live)
    wait_until(lambda: client.raw("GET", "/readyz")[0] == 200, what="readiness")
    api.inject(status=403, method="GET", path=r"^/api/v1/nodes$")
    api.drop_watches("nodes")
    wait_until(lambda: client.raw("GET", "/readyz")[0] == 503, what="/readyz failing")
    api.clear_faults()
    wait_until(lambda: client.raw("GET", "/readyz")[0] == 200, what="readiness again")
