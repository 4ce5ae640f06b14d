"""The extender over real HTTP(S), with request bodies shaped exactly as kube-scheduler sends them."""

from __future__ import annotations

import contextlib
import http.client
import json
import ssl
from typing import Any

import pytest
import trustme

from harmonic.cluster.memory import InMemoryCluster
from harmonic.extender.cache import ClusterCache
from harmonic.extender.server import ServerSettings, TLSSettings
from tests.extender.conftest import Client, compact, fixture, running

N1, N2, N3 = "ip-10-0-1-17.ec2.internal", "ip-10-0-2-33.ec2.internal", "ip-10-0-3-41.ec2.internal"
TAINTED = "node(s) had untolerated taint(s)"

#: Only the plugins these tests reason about, so other plugins landing does not move the numbers.
CONFIG: dict[str, Any] = {
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "multiPoint": {
                    "enabled": [
                        {"name": "PrioritySort"},
                        {"name": "NodeUnschedulable"},
                        {"name": "NodeName"},
                        {"name": "TaintToleration", "weight": 3},
                        {"name": "NodeResourcesFit", "weight": 1},
                        {"name": "DefaultBinder"},
                    ],
                    "disabled": [{"name": "*"}],
                }
            },
        }
    ]
}


def synced_cache(*extra_pods: dict[str, Any]) -> tuple[ClusterCache, InMemoryCluster]:
    """A cache fed by an in-memory cluster's events, holding the fixture nodes."""
    cluster = InMemoryCluster()
    cache = ClusterCache()
    cluster.subscribe(cache.on_node, cache.on_pod)
    for n in fixture("nodes.json"):
        cluster.add_node(n)
    for p in extra_pods:
        cluster.create_pod(p)
    cache.mark_synced()
    return cache, cluster


# ---------------------------------------------------------------- filter
def test_filter_full_nodes_echoes_passing_nodes_and_splits_failures():
    """nodeCacheCapable: false. The tainted node and the small one (the pod's request exceeds its whole
    allocatable, which NodeResourcesFit reports UnschedulableAndUnresolvable) cannot be helped by
    preemption; passing nodes come back whole in Nodes, NodeNames stays null."""
    args = fixture("filter-nodes.json")
    with running(config=CONFIG) as server:
        status, result = Client(server).post("filter", args)
    assert status == 200
    assert set(result) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}
    assert result["NodeNames"] is None
    assert result["Nodes"]["items"] == [args["Nodes"]["items"][0]]
    assert result["FailedNodes"] == {}
    assert result["FailedAndUnresolvableNodes"] == {N2: TAINTED, N3: "Insufficient cpu"}
    assert result["Error"] == ""


def test_filter_node_names_answers_from_the_cache(serve):
    cache, _ = synced_cache()
    status, result = serve(config=CONFIG, cache=cache).post("filter", fixture("filter-nodenames.json"))
    assert status == 200
    assert result == {
        "Nodes": None,
        "NodeNames": [N1],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {N2: TAINTED, N3: "Insufficient cpu"},
        "Error": "",
    }


def test_filter_sees_pods_already_on_nodes_only_with_a_cache(serve):
    """A bound pod using 3.9 of N1's 4 CPUs: the cache-fed extender rejects N1; the cache-less one sees
    empty nodes (documented) and accepts it."""
    hog = fixture("victim-pod.json")
    hog["spec"]["nodeName"] = N1
    cache, _ = synced_cache(hog)
    status, result = serve(config=CONFIG, cache=cache).post("filter", fixture("filter-nodes.json"))
    assert status == 200 and result["Nodes"]["items"] == []
    assert result["FailedNodes"] == {N1: "Insufficient cpu"}
    assert result["FailedAndUnresolvableNodes"] == {N2: TAINTED, N3: "Insufficient cpu"}
    status, result = serve(config=CONFIG).post("filter", fixture("filter-nodes.json"))
    assert [n["metadata"]["name"] for n in result["Nodes"]["items"]] == [N1]


def test_filter_names_without_a_cache_is_an_error_in_the_result(serve):
    status, result = serve(config=CONFIG).post("filter", fixture("filter-nodenames.json"))
    assert status == 200
    assert "nodeCacheCapable" in result["Error"]


def test_filter_before_the_cache_synced_is_an_error_and_not_ready(serve):
    cache = ClusterCache()
    client = serve(config=CONFIG, cache=cache)
    status, result = client.post("filter", fixture("filter-nodenames.json"))
    assert status == 200 and "not synced" in result["Error"]
    assert client.raw("GET", "/readyz")[0] == 503
    cache.mark_synced()
    assert client.raw("GET", "/readyz")[0] == 200


def test_filter_unknown_node_fails_resolvably(serve):
    cache, _ = synced_cache()
    args = fixture("filter-nodenames.json")
    args["NodeNames"] = [N1, "node-added-a-moment-ago"]
    _, result = serve(config=CONFIG, cache=cache).post("filter", args)
    assert result["NodeNames"] == [N1]
    assert result["FailedNodes"] == {
        "node-added-a-moment-ago": "node(s) were not yet known to the Harmonic extender's cache"
    }


# ---------------------------------------------------------------- prioritize
# Expected scores by hand from upstream's formulas: TaintToleration (weight 3) counts intolerable
# PreferNoSchedule taints, none here, so every node normalizes to 100; NodeResourcesFit
# LeastAllocated (weight 1) for 500m/256Mi: N1 and N2 cpu (4000-500)*100/4000=87, memory
# (16384-256)*100/16384=98 -> (87+98)/2=92; N3 cpu over capacity -> 0, memory (1024-256)*100/1024=75
# -> 37. Weighted means: (300+92)/4=98 and (300+37)/4=84.25; extender range /10, rounded: 10 and 8.
EXPECTED_SCORES = [{"Host": N1, "Score": 10}, {"Host": N2, "Score": 10}, {"Host": N3, "Score": 8}]


def test_prioritize_full_nodes_scores_every_node_in_extender_range(serve):
    status, result = serve(config=CONFIG).post("prioritize", fixture("filter-nodes.json"))
    assert status == 200
    assert result == EXPECTED_SCORES


def test_prioritize_node_names_from_the_cache(serve):
    cache, _ = synced_cache()
    status, result = serve(config=CONFIG, cache=cache).post("prioritize", fixture("filter-nodenames.json"))
    assert status == 200
    assert result == EXPECTED_SCORES


def test_prioritize_cannot_answer_is_500(serve):
    status, result = serve(config=CONFIG).post("prioritize", fixture("filter-nodenames.json"))
    assert status == 500
    assert result["Error"].startswith("prioritize: ")


# ---------------------------------------------------------------- preempt
def test_preempt_keeps_candidates_where_removing_victims_makes_room(serve):
    """N3 has 250m CPU: even without its victim the 500m pod does not fit, so N3 is dropped; on N1, a
    3.9-CPU victim frees enough room, so N1 stays with its victims and PDB count."""
    victim = fixture("victim-pod.json")
    hog = json.loads(json.dumps(victim))
    hog["metadata"].update(name="hog", uid="0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6")
    hog["spec"]["nodeName"] = N1
    cache, _ = synced_cache(victim, hog)
    args = fixture("preempt-metavictims.json")
    args["NodeNameToMetaVictims"][N1] = {"Pods": [{"UID": hog["metadata"]["uid"]}], "NumPDBViolations": 2}
    args["NodeNameToMetaVictims"]["gone-node"] = {"Pods": [], "NumPDBViolations": 0}
    status, result = serve(config=CONFIG, cache=cache).post("preempt", args)
    assert status == 200
    assert result == {
        "NodeNameToMetaVictims": {N1: {"Pods": [{"UID": hog["metadata"]["uid"]}], "NumPDBViolations": 2}}
    }
    # The what-if left the cache as it was: N1 still holds the hog.
    _, again = serve(config=CONFIG, cache=cache).post("filter", fixture("filter-nodenames.json"))
    assert N1 in again["FailedNodes"]


def test_preempt_without_cache_returns_full_victims_as_meta_victims(serve):
    args = fixture("preempt-victims.json")
    status, result = serve(config=CONFIG).post("preempt", args)
    assert status == 200
    assert result == {
        "NodeNameToMetaVictims": {
            N3: {"Pods": [{"UID": "c1d2e3f4-0a1b-4c2d-8e3f-4a5b6c7d8e9f"}], "NumPDBViolations": 0}
        }
    }


# ---------------------------------------------------------------- bind
def test_bind_binds_through_the_client_and_accounts_the_pod_at_once(serve):
    pending = fixture("filter-nodenames.json")["Pod"]
    cache, cluster = synced_cache(pending)
    client = serve(config=CONFIG, cache=cache, client=cluster)
    status, result = client.post("bind", fixture("bind.json"))
    assert status == 200 and result == {"Error": ""}
    assert cluster.placement() == {"shop/web-7d4b9c6f5-x2x9q": N1}
    assert cache.cache.node_of(pending["metadata"]["uid"]) == N1
    # Binding the same pod again: the API refuses, the refusal is the Error.
    status, result = client.post("bind", fixture("bind.json"))
    assert status == 200 and "already assigned" in result["Error"]


def test_bind_without_cluster_access_reports_error(serve):
    status, result = serve(config=CONFIG).post("bind", fixture("bind.json"))
    assert status == 200
    assert "no cluster client" in result["Error"]


# ---------------------------------------------------------------- protocol errors
@pytest.mark.parametrize(
    ("verb", "body", "needle"),
    [
        ("filter", b"", "empty request body"),
        ("filter", b"{", "not a JSON object"),
        ("filter", b"[1, 2]", "not a JSON object"),
        ("filter", b'{"NodeNames": ["a"]}', "Pod: is required"),
        ("filter", b'{"Pod": null, "NodeNames": ["a"]}', "Pod: is required"),
        ("filter", b'{"Pod": {"metadata": {"name": "p"}}, "NodeNames": ["a"]}', "spec.containers"),
        (
            "prioritize",
            b'{"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [{}]}}}',
            "neither Nodes",
        ),
        ("filter", b'{"Pod": {}, "NodeNames": "a"}', "NodeNames"),
        ("filter", b'{"Pod": {}, "Nodes": {"items": [{"metadata": {}}]}}', "Nodes.items[0].metadata.name"),
        (
            "filter",
            b'{"Pod": {}, "Nodes": {"items": [{"metadata": {"name": 7}}]}}',
            "Nodes.items[0].metadata.name",
        ),
        ("preempt", b'{"Pod": {}}', "neither NodeNameToVictims"),
        (
            "preempt",
            b'{"Pod": {}, "NodeNameToMetaVictims": {"n": {"Pods": [{"UID": 1}]}}}',
            "NodeNameToMetaVictims",
        ),
        ("bind", b'{"PodName": "p"}', "Node: is required"),
        ("bind", b'{"PodName": 1, "Node": "n"}', "PodName"),
    ],
)
def test_malformed_bodies_get_400_naming_the_field(serve, verb, body, needle):
    status, result = serve(config=CONFIG).post(verb, body)
    assert status == 400
    assert needle in result["Error"], result["Error"]


@pytest.mark.parametrize(
    ("cpu", "why"),
    [("four", "is not a quantity"), ("-4", "must be greater than or equal to 0"), ("1e100", "too large")],
)
def test_a_node_that_cannot_be_read_is_left_out_with_one_error_line(serve, caplog, cpu, why):
    """Issue 33: one such node (kube-apiserver accepts 1e100) made every filter call a 400, so every pod
    failed; a negative one gave prioritize a 500. Now the node is refused, named, and the rest answered."""
    args = fixture("filter-nodes.json")
    args["Nodes"]["items"][1]["status"]["allocatable"]["cpu"] = cpu
    client = serve(config=CONFIG)
    with caplog.at_level("ERROR"):
        for _ in range(2):
            status, result = client.post("filter", args)
            assert status == 200, result
            status, scores = client.post("prioritize", args)
            assert status == 200, scores
    passed = [n["metadata"]["name"] for n in result["Nodes"]["items"]]
    assert N2 not in passed and N1 in passed
    assert "status.allocatable.cpu" in result["FailedAndUnresolvableNodes"][N2]
    assert why in result["FailedAndUnresolvableNodes"][N2]
    assert {s["Host"]: s["Score"] for s in scores}[N2] == 0
    lines = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(lines) == 1 and N2 in lines[0] and "status.allocatable.cpu" in lines[0]


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
@pytest.mark.parametrize("request_", [{"cpu": "-1"}, {"memory": "-10Gi"}, {"cpu": "1e100"}])
def test_a_pod_with_amounts_kube_apiserver_refuses_or_cannot_fit_is_400(serve, verb, request_):
    """Issue 33: negative requests gave "invalid score 104" and a 500 from prioritize
    (NodeResourcesBalancedAllocation returns an invalid score -10737418165)."""
    args = fixture("filter-nodes.json")
    args["Pod"]["spec"]["containers"][0]["resources"]["requests"].update(request_)
    status, result = serve(config=CONFIG).post(verb, args)
    assert status == 400, result
    (name,) = request_
    assert f"spec.containers[0].resources.requests.{name}" in result["Error"]


def test_keys_match_case_insensitively_like_go(serve):
    args = fixture("filter-nodes.json")
    body = {"pod": args["Pod"], "nodes": args["Nodes"], "nodenames": None}
    status, result = serve(config=CONFIG).post("filter", body)
    assert status == 200 and result["FailedAndUnresolvableNodes"][N3] == "Insufficient cpu"


def test_routes_methods_and_prefix(serve):
    client = serve(config=CONFIG, settings=ServerSettings(prefix="/harmonic/v1"))
    assert client.raw("POST", "/scheduler/filter", b"{}")[0] == 404
    status, headers, _ = client.raw("GET", "/harmonic/v1/filter")
    assert status == 405 and headers["allow"] == "POST"
    client.prefix = "/harmonic/v1"
    assert client.post("filter", fixture("filter-nodes.json"))[0] == 200
    assert client.raw("GET", "/healthz")[:3:2] == (200, b"ok")


# ---------------------------------------------------------------- limits and auth
def test_body_over_limit_is_413_by_content_length(serve):
    client = serve(config=CONFIG, settings=ServerSettings(max_body_bytes=4096))
    body = compact(fixture("filter-nodes.json"))
    assert len(body) > 4096
    status, result = client.post("filter", body)
    assert status == 413 and "4096" in result["Error"]


def test_body_over_limit_is_413_when_chunked(serve):
    client = serve(config=CONFIG, settings=ServerSettings(max_body_bytes=4096))
    body = compact(fixture("filter-nodes.json"))
    chunks = [body[i : i + 1000] for i in range(0, len(body), 1000)]
    # the server may answer 413 and close before the last chunks are sent
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        client.conn.request(
            "POST",
            "/scheduler/filter",
            iter(chunks),
            {"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
            encode_chunked=True,
        )
    response = client.conn.getresponse()
    assert response.status == 413
    response.read()


def test_body_under_limit_passes(serve):
    body = compact(fixture("filter-nodes.json"))
    client = serve(config=CONFIG, settings=ServerSettings(max_body_bytes=len(body)))
    assert client.post("filter", body)[0] == 200


def test_bearer_token_guards_verbs_not_probes(serve):
    client = serve(config=CONFIG, settings=ServerSettings(token="s3cret"))
    args = fixture("filter-nodes.json")
    status, result = client.post("filter", args)
    assert status == 401 and "bearer token" in result["Error"]
    assert client.post("filter", args, {"Authorization": "Bearer wrong"})[0] == 401
    assert client.post("filter", args, {"Authorization": "Basic s3cret"})[0] == 401
    assert client.post("filter", args, {"Authorization": "Bearer s3cret"})[0] == 200
    assert client.raw("GET", "/healthz")[0] == 200
    assert client.raw("GET", "/readyz")[0] == 200
    assert client.raw("GET", "/metrics")[0] == 200


def test_metrics_count_requests_by_verb_and_code(serve):
    client = serve(config=CONFIG)
    client.post("filter", fixture("filter-nodes.json"))
    client.post("filter", b"{")
    _, headers, text = client.raw("GET", "/metrics")
    assert headers["content-type"].startswith("text/plain")
    lines = text.decode().splitlines()
    assert 'harmonic_extender_requests_total{code="200",verb="filter"} 1.0' in lines
    assert 'harmonic_extender_requests_total{code="400",verb="filter"} 1.0' in lines
    assert 'harmonic_extender_request_duration_seconds_count{verb="filter"} 1.0' in lines
    # the signals' metrics are served beside them
    assert any(line.startswith("# TYPE harmonic_affinity_graph_edges gauge") for line in lines)


# ---------------------------------------------------------------- TLS
@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    ca = trustme.CA()
    d = tmp_path_factory.mktemp("pki")
    cert = ca.issue_cert("127.0.0.1", "harmonic-extender.kube-system.svc")
    cert.private_key_pem.write_to_path(str(d / "tls.key"))
    cert.cert_chain_pems[0].write_to_path(str(d / "tls.crt"))
    ca.cert_pem.write_to_path(str(d / "ca.crt"))
    client_ca = trustme.CA()
    client_ca.cert_pem.write_to_path(str(d / "client-ca.crt"))
    return ca, client_ca, d


def test_https_serves_the_verbs(pki):
    ca, _, d = pki
    tls = TLSSettings(str(d / "tls.crt"), str(d / "tls.key"))
    with running(config=CONFIG, tls=tls) as server:
        assert server.url.startswith("https://")
        ctx = ssl.create_default_context()
        ca.configure_trust(ctx)
        client = Client(server, ctx)
        status, result = client.post("filter", fixture("filter-nodes.json"))
        assert status == 200 and result["FailedAndUnresolvableNodes"][N3] == "Insufficient cpu"
        client.close()
        plain = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        with pytest.raises((ConnectionError, http.client.HTTPException)):
            plain.request("GET", "/healthz")
            plain.getresponse().read()


def test_mutual_tls_admits_only_clients_of_the_ca(pki):
    ca, client_ca, d = pki
    tls = TLSSettings(str(d / "tls.crt"), str(d / "tls.key"), str(d / "client-ca.crt"))
    with running(config=CONFIG, tls=tls) as server:
        ctx = ssl.create_default_context()
        ca.configure_trust(ctx)
        client_ca.issue_cert("kube-scheduler.kube-system.svc").configure_cert(ctx)
        client = Client(server, ctx)
        assert client.post("filter", fixture("filter-nodes.json"))[0] == 200
        client.close()
        anonymous = ssl.create_default_context()
        ca.configure_trust(anonymous)
        stranger = Client(server, anonymous)
        with pytest.raises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
            stranger.post("filter", fixture("filter-nodes.json"))
        stranger.close()


@pytest.mark.parametrize("plugin", ["NodeResourcesBalancedAllocation", "NodeResourcesFit"])
def test_prioritize_a_pod_asking_for_nearly_2_to_the_63_on_busy_nodes_is_in_range(serve, plugin):
    """Found by the live fuzzer: such a request plus what a node already runs left int64 and
    BalancedAllocation scored -461168601842638 (HTTP 500). kube-apiserver accepts the request."""
    hog = fixture("victim-pod.json")
    hog["spec"]["nodeName"] = N1
    cache, _ = synced_cache(hog)
    config = {
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "multiPoint": {
                        "enabled": [{"name": "PrioritySort"}, {"name": plugin}, {"name": "DefaultBinder"}],
                        "disabled": [{"name": "*"}],
                    }
                },
            }
        ]
    }
    args = fixture("filter-nodenames.json")
    args["Pod"]["spec"]["containers"][0]["resources"]["requests"] = {
        "cpu": "9223372036854775",
        "memory": "9223372036854775807",
    }
    status, scores = serve(config=config, cache=cache).post("prioritize", args)
    assert status == 200, scores
    assert all(0 <= s["Score"] <= 10 for s in scores)
