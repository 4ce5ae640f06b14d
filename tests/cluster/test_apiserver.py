"""The API-server double answers the calls Harmonic makes the way kube-apiserver does."""

from __future__ import annotations

import pytest

from harmonic.cluster.transport import STRATEGIC_MERGE_PATCH, ApiStatusError, Transport, load_client
from harmonic.testing import node, pod
from harmonic.testing.apiserver import ApiServerDouble, strategic_merge_patch

PODS = "/api/v1/namespaces/default/pods"


def _events(t: Transport, query: dict[str, object]) -> list[dict[str, object]]:
    return list(t.stream("/api/v1/pods", query, read_timeout=5))


def test_create_defaults_and_list_pages_with_resource_version(api: ApiServerDouble, transport: Transport):
    for i in range(5):
        transport.request("POST", PODS, body=pod(f"p{i}").obj())
    created = transport.request("GET", f"{PODS}/p0")
    assert created["spec"]["schedulerName"] == "default-scheduler"
    assert created["metadata"]["uid"] != "uid-p0"  # the server assigns uids
    assert created["status"]["phase"] == "Pending"
    page = transport.request("GET", "/api/v1/pods", query={"limit": 2})
    assert [p["metadata"]["name"] for p in page["items"]] == ["p0", "p1"]
    assert "kind" not in page["items"][0]  # list items carry no kind/apiVersion
    names = [p["metadata"]["name"] for p in page["items"]]
    while page["metadata"].get("continue"):
        page = transport.request(
            "GET", "/api/v1/pods", query={"limit": 2, "continue": page["metadata"]["continue"]}
        )
        names += [p["metadata"]["name"] for p in page["items"]]
    assert names == [f"p{i}" for i in range(5)]
    assert int(page["metadata"]["resourceVersion"]) == api.resource_version


def test_watch_replays_from_resource_version_then_ends_at_timeout(api: ApiServerDouble, transport: Transport):
    rv = transport.request("GET", "/api/v1/pods")["metadata"]["resourceVersion"]
    transport.request("POST", PODS, body=pod("a").obj())
    transport.request(
        "PATCH", f"{PODS}/a/status", body={"status": {"phase": "Running"}}, content_type=STRATEGIC_MERGE_PATCH
    )
    transport.request("DELETE", f"{PODS}/a")
    evs = _events(transport, {"resourceVersion": rv, "timeoutSeconds": 1})
    assert [e["type"] for e in evs] == ["ADDED", "MODIFIED", "DELETED"]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)


def test_watch_sends_bookmarks_when_asked(api: ApiServerDouble, transport: Transport):
    evs = _events(
        transport,
        {"resourceVersion": api.resource_version, "timeoutSeconds": 1, "allowWatchBookmarks": "true"},
    )
    assert evs and all(e["type"] == "BOOKMARK" for e in evs)
    assert evs[-1]["object"]["metadata"]["resourceVersion"] == str(api.resource_version)
    assert not _events(transport, {"resourceVersion": api.resource_version, "timeoutSeconds": 1})


def test_watch_from_compacted_resource_version_is_410_error_event(api: ApiServerDouble, transport: Transport):
    rv = api.resource_version
    transport.request("POST", PODS, body=pod("a").obj())
    api.expire_history()
    (ev,) = _events(transport, {"resourceVersion": rv, "timeoutSeconds": 1})
    assert ev["type"] == "ERROR"
    assert ev["object"]["code"] == 410 and ev["object"]["reason"] == "Expired"


def test_field_selector_leaving_is_deleted(api: ApiServerDouble, transport: Transport):
    transport.request("POST", PODS, body=pod("a").obj())
    rv = api.resource_version
    api.set_status("pods", "a", {"phase": "Succeeded"}, "default")
    evs = _events(
        transport,
        {
            "resourceVersion": rv,
            "timeoutSeconds": 1,
            "fieldSelector": "status.phase!=Succeeded,status.phase!=Failed",
        },
    )
    assert [e["type"] for e in evs] == ["DELETED"]
    with pytest.raises(ApiStatusError) as err:
        transport.request("GET", "/api/v1/pods", query={"fieldSelector": "spec.bogus=1"})
    assert err.value.code == 400


def test_binding_once_then_conflict(api: ApiServerDouble, transport: Transport):
    created = transport.request("POST", PODS, body=pod("a").obj())
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "a", "uid": created["metadata"]["uid"]},
        "target": {"kind": "Node", "name": "n1"},
    }
    assert transport.request("POST", f"{PODS}/a/binding", body=binding)["status"] == "Success"
    bound = transport.request("GET", f"{PODS}/a")
    assert bound["spec"]["nodeName"] == "n1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= bound["status"]["conditions"][0].items()
    with pytest.raises(ApiStatusError) as err:
        transport.request(
            "POST", f"{PODS}/a/binding", body={**binding, "target": {"kind": "Node", "name": "n2"}}
        )
    assert err.value.code == 409
    assert (
        err.value.message
        == 'Operation cannot be fulfilled on pods "a": pod a is already assigned to node "n1"'
    )
    with pytest.raises(ApiStatusError) as err:
        transport.request("POST", f"{PODS}/missing/binding", body=binding)
    assert err.value.code == 404
    assert [b.node for b in api.bindings()] == ["n1"]


def test_eviction_respects_disruption_budget(api: ApiServerDouble, transport: Transport):
    running = pod("web").label("app", "web").phase("Running").obj()
    api.create("pods", running)
    api.create(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": 0, "desiredHealthy": 1, "currentHealthy": 1},
        },
    )
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web", "namespace": "default"},
    }
    with pytest.raises(ApiStatusError) as err:
        transport.request("POST", f"{PODS}/web/eviction", body=eviction)
    assert err.value.code == 429
    assert err.value.message == "Cannot evict pod as it would violate the pod's disruption budget."
    api.set_status("poddisruptionbudgets", "web", {"disruptionsAllowed": 1}, "default")
    transport.request("POST", f"{PODS}/web/eviction", body=eviction)
    assert api.get("pods", "web", "default") is None
    assert api.get("poddisruptionbudgets", "web", "default")["status"]["disruptionsAllowed"] == 0


def test_lease_update_with_stale_resource_version_conflicts(transport: Transport):
    path = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    lease = transport.request("POST", path, body={"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}})
    stale = lease["metadata"]["resourceVersion"]
    transport.request("PUT", f"{path}/l", body={**lease, "spec": {"holderIdentity": "b"}})
    with pytest.raises(ApiStatusError) as err:
        transport.request(
            "PUT", f"{path}/l", body={**lease, "metadata": {**lease["metadata"], "resourceVersion": stale}}
        )
    assert err.value.code == 409
    assert transport.request("GET", f"{path}/l")["spec"]["holderIdentity"] == "b"


def test_strategic_merge_patch_merges_conditions_by_type():
    status = {
        "conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]
    }
    patched = strategic_merge_patch(
        status,
        {
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
            "nominatedNodeName": "n",
        },
    )
    assert patched["conditions"] == [
        {"type": "Ready", "status": "False"},
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
    ]
    assert patched["nominatedNodeName"] == "n"
    assert "nominatedNodeName" not in strategic_merge_patch(patched, {"nominatedNodeName": None})


def test_auth_and_faults(api: ApiServerDouble, make_transport, tmp_path):
    api.create("nodes", node("n").obj())
    good = make_transport(agent="replica-a")
    path = api.kubeconfig(tmp_path / "bad")
    path.write_text(path.read_text().replace(api.token or "", "wrong-token"))
    with pytest.raises(ApiStatusError) as err:
        Transport(load_client(str(path))).request("GET", "/api/v1/nodes")
    assert err.value.code == 401
    fault = api.inject(status=503, path="/api/v1/nodes$", agent="replica-a", times=1)
    with pytest.raises(ApiStatusError) as err:
        good.request("GET", "/api/v1/nodes")
    assert err.value.code == 503 and fault.hits == 1
    assert len(good.request("GET", "/api/v1/nodes")["items"]) == 1
    # refused (401, retried once with a fresh token), faulted and served calls all count
    assert api.stats().requests["list nodes"] == 4


#: The workload objects default topology spreading reads: (collection path, kind, a manifest's spec).
WORKLOADS = [
    ("/api/v1/namespaces/shop/services", "Service", {"selector": {"app": "web"}}),
    ("/api/v1/namespaces/shop/replicationcontrollers", "ReplicationController", {"selector": {"app": "web"}}),
    (
        "/apis/apps/v1/namespaces/shop/replicasets",
        "ReplicaSet",
        {"selector": {"matchLabels": {"app": "web"}}},
    ),
    (
        "/apis/apps/v1/namespaces/shop/statefulsets",
        "StatefulSet",
        {"selector": {"matchLabels": {"app": "db"}}},
    ),
]


@pytest.mark.parametrize(("path", "kind", "spec"), WORKLOADS, ids=[w[1] for w in WORKLOADS])
def test_workload_objects_list_and_watch_like_pods(
    api: ApiServerDouble, transport: Transport, path: str, kind: str, spec: dict[str, object]
):
    all_namespaces = path.replace("/namespaces/shop", "")
    before = transport.request("GET", all_namespaces)
    assert before["kind"] == f"{kind}List" and before["items"] == []
    for name in ("b", "a"):
        created = transport.request("POST", path, body={"metadata": {"name": name}, "spec": spec})
        assert created["kind"] == kind and created["metadata"]["namespace"] == "shop"
    page = transport.request("GET", all_namespaces, query={"limit": 1})
    assert [o["metadata"]["name"] for o in page["items"]] == ["a"] and page["metadata"]["continue"]
    assert "kind" not in page["items"][0]
    assert int(page["metadata"]["resourceVersion"]) == api.resource_version
    rv = page["metadata"]["resourceVersion"]

    # An update and a delete after the list come back on a watch from its resourceVersion, then a
    # BOOKMARK at the current resourceVersion.
    a = transport.request("GET", f"{path}/a")
    changed = {**a, "spec": {**spec, "selector": {"app": "changed"}}}
    transport.request("PUT", f"{path}/a", body=changed)
    transport.request("DELETE", f"{path}/b")
    evs = list(
        transport.stream(
            all_namespaces,
            {"resourceVersion": rv, "timeoutSeconds": 1, "allowWatchBookmarks": "true"},
            read_timeout=5,
        )
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in evs[:2]] == [
        ("MODIFIED", "a"),
        ("DELETED", "b"),
    ]
    assert evs[0]["object"]["spec"]["selector"] == {"app": "changed"}
    assert evs[-1]["type"] == "BOOKMARK"
    assert evs[-1]["object"]["kind"] == kind
    assert evs[-1]["object"]["metadata"]["resourceVersion"] == str(api.resource_version)

    # Once the history is compacted, resuming from that resourceVersion is 410 Expired.
    api.expire_history()
    (gone,) = list(
        transport.stream(all_namespaces, {"resourceVersion": rv, "timeoutSeconds": 1}, read_timeout=5)
    )
    assert gone["type"] == "ERROR" and gone["object"]["code"] == 410


def test_apps_group_is_discoverable(transport: Transport):
    groups = {g["name"] for g in transport.request("GET", "/apis")["groups"]}
    apps = transport.request("GET", "/apis/apps/v1")["resources"]
    assert "apps" in groups
    assert {(r["name"], r["kind"], r["namespaced"]) for r in apps} == {
        ("replicasets", "ReplicaSet", True),
        ("statefulsets", "StatefulSet", True),
    }
