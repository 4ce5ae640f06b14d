"""``POST /v1/feedback`` and ``GET /debug/model`` on the extender's server, over real HTTP, and a feedback
round reading the extender's cache."""

from __future__ import annotations

import json

from harmonic.cluster.memory import InMemoryCluster
from harmonic.extender.cache import ClusterCache
from harmonic.extender.engine import Extender
from harmonic.extender.server import ExtenderApp, ExtenderServer
from harmonic.feedback.cli import live_feedback
from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.testing import node, pod
from tests.extender.conftest import Client

CONFIG = {
    "profiles": [
        {"schedulerName": "harmonic", "plugins": {"multiPoint": {"enabled": [{"name": "Dissonance"}]}}}
    ]
}
AUTH = {"Authorization": "Bearer t0ken", "Content-Type": "application/json"}


def test_feedback_endpoint_and_a_round_over_the_cache():
    cluster, cache = InMemoryCluster(), ClusterCache()
    cluster.subscribe(cache.on_node, cache.on_pod)
    cluster.add_node(node("n1").cap(cpu="8", memory="32Gi", pods=110).obj())
    cluster.create_pod(
        pod("db-0").label("app", "db").owner("StatefulSet", "db").req(cpu="2").node("n1").obj()
    )
    cluster.create_pod(pod("scan-0").owner("Job", "scan").req(cpu="4", memory="40Gi").node("n1").obj())
    cache.mark_synced()
    reg = default_registry()
    cfg = load_config(CONFIG, reg, source="<test>")
    fb = live_feedback(cfg, "t0ken", None, 60.0)
    assert fb is not None and fb.intake is not None
    ext = Extender(cfg, reg, cache=cache, services=fb.services)
    server = ExtenderServer(ExtenderApp(ext, feedback=fb.intake, model=fb.model_route), port=0)
    server.start()
    client = Client(server)
    try:
        report = {"namespace": "default", "workload": "db", "metric": "txn_ms", "value": 8.0}
        body = json.dumps(report).encode()
        assert client.raw("POST", "/v1/feedback", body, {"Content-Type": "application/json"})[0] == 401
        status, _, data = client.raw("POST", "/v1/feedback", b'{"namespace": "default"}', AUTH)
        assert status == 400 and json.loads(data)["field"] == "workload"
        assert client.raw("POST", "/v1/feedback", b"x" * 20_000, AUTH)[0] == 413
        assert client.raw("GET", "/v1/feedback")[0] == 405
        status, _, data = client.raw("POST", "/v1/feedback", body, AUTH)
        assert (status, json.loads(data)) == (202, {"accepted": 1})
        fb.start(ext.on_state)
        assert fb.service is not None and fb.service.round()
        status, _, data = client.raw("GET", "/debug/model")
    finally:
        fb.stop()
        client.close()
        server.stop()
    doc = json.loads(data)
    assert status == 200 and doc["observations"] == 1
    db = doc["workloads"]["default/db"]
    # a workload's report goes to its running pod, with what the node held besides it: 4 of 8 CPUs of
    # batch-memory (40Gi for 4 cores is above the 8 GiB per core the class rules use)
    assert db["class"] == "latency-critical" and db["recent"][0]["node"] == "n1"
    assert db["recent"][0]["neighbours"] == [0.0, 0.0, 0.5, 0.0, 0.0, 0.0]
