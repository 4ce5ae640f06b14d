"""LiveServices: the plugin services of both live adapters, fed by informers from the API-server double.
The "workloads" index follows Services, ReplicationControllers, ReplicaSets and StatefulSets through
lists, watches and relists after 410, keeping only their selectors."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from harmonic.api.selectors import IN, LabelSelector, Requirement
from harmonic.cluster.informer import Backoff
from harmonic.cluster.services import STORAGE_RESOURCES, LiveServices, selector_view, uses_service
from harmonic.cluster.transport import Transport
from harmonic.framework.config import load_config
from harmonic.framework.events import Action, ClusterEvent, Resource
from harmonic.framework.services import BATCH, VOLUMES
from harmonic.plugins.registry import default_registry
from harmonic.testing.apiserver import ApiServerDouble

from .conftest import wait_until


def _obj(name: str, spec: Any, ns: str = "shop", **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, **extra}, "spec": spec}


def _is(key: str, *values: str) -> Requirement:
    return Requirement(key, IN, frozenset(values))


@pytest.fixture
def live_services(transport: Transport) -> Iterator[Callable[[], LiveServices]]:
    made: list[LiveServices] = []

    def make(**kwargs: Any) -> LiveServices:
        svc = LiveServices(transport, lambda: Backoff(0.02, 0.2), **kwargs)
        for inf in svc.informers.values():
            inf.start()
        made.append(svc)
        assert all(inf.wait_for_sync(5) for inf in svc.informers.values())
        return svc

    yield make
    for svc in made:
        for inf in svc.informers.values():
            inf.stop()


def test_workloads_follow_lists_and_watches(api: ApiServerDouble, live_services):
    api.create(
        "services",
        _obj("web", {"selector": {"app": "web"}, "ports": [{"port": 80}]}, labels={"team": "a"}),
    )
    api.create("services", _obj("headless", {"clusterIP": "None"}))  # no selector: selects nothing
    api.create("replicationcontrollers", _obj("legacy", {"selector": {"app": "legacy"}, "replicas": 3}))
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}] * 20}}
    api.create(
        "replicasets", _obj("web-7d9", {"selector": {"matchLabels": {"app": "web"}}, "template": template})
    )
    api.create("statefulsets", _obj("db", {"selector": {"matchLabels": {"app": "db"}}}, ns="data"))
    svc = live_services()
    wl = svc.services["workloads"]
    assert wl is svc.workloads
    assert list(wl.service_selectors("shop")) == [{"app": "web"}]
    assert wl.replication_controller_selector("shop", "legacy") == {"app": "legacy"}
    assert wl.replica_set_selector("shop", "web-7d9") == LabelSelector((_is("app", "web"),))
    assert wl.stateful_set_selector("data", "db") == LabelSelector((_is("app", "db"),))
    assert wl.stateful_set_selector("shop", "db") is None

    # The informers' stores keep the selectors only, not the templates, ports or labels.
    rs = svc.informers["replicasets"].get("shop/web-7d9")
    assert rs is not None and rs["spec"] == {"selector": {"matchLabels": {"app": "web"}}}
    assert set(rs["metadata"]) == {"name", "namespace", "resourceVersion"}
    assert svc.informers["services"].get("shop/web") == {
        "kind": "Service",
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "resourceVersion": api.get("services", "web", "shop")["metadata"]["resourceVersion"],
        },
        "spec": {"selector": {"app": "web"}},
    }

    # Changes arrive through the watch: a selector update, a new object, deletions.
    web = api.get("services", "web", "shop")
    api.update("services", {**web, "spec": {**web["spec"], "selector": {"app": "web", "tier": "front"}}})
    api.create("services", _obj("late", {"selector": {"app": "late"}}))
    api.delete("replicasets", "web-7d9", "shop")
    api.delete("replicationcontrollers", "legacy", "shop")
    wait_until(
        lambda: (
            sorted(map(sorted, (s.items() for s in wl.service_selectors("shop"))))
            == [[("app", "late")], [("app", "web"), ("tier", "front")]]
            and wl.replica_set_selector("shop", "web-7d9") is None
            and wl.replication_controller_selector("shop", "legacy") is None
        ),
        what="the update, the new Service and the deletions",
    )


def test_relist_after_410_reports_what_changed_in_the_gap(api: ApiServerDouble, live_services):
    api.create("replicasets", _obj("gone", {"selector": {"matchLabels": {"app": "a"}}}))
    api.create("replicasets", _obj("kept", {"selector": {"matchLabels": {"app": "b"}}}))
    svc = live_services()
    rs = svc.informers["replicasets"]
    # The watch breaks; while it is down the history is compacted, so resuming is 410.
    api.expire_history("replicasets", watches=1)
    api.drop_watches("replicasets")
    api.delete("replicasets", "gone", "shop")
    kept = api.get("replicasets", "kept", "shop")
    api.update("replicasets", {**kept, "spec": {"selector": {"matchLabels": {"app": "c"}}}})
    wait_until(lambda: rs.relists_on_gone >= 1, what="the relist")
    wait_until(
        lambda: (
            svc.workloads.replica_set_selector("shop", "gone") is None
            and svc.workloads.replica_set_selector("shop", "kept") == LabelSelector((_is("app", "c"),))
        ),
        what="the deletion and the update made during the gap",
    )


def test_a_malformed_selector_is_logged_and_not_used(api: ApiServerDouble, live_services, caplog):
    api.create("replicasets", _obj("web", {"selector": {"matchLabels": {"app": "web"}}}))
    svc = live_services()
    assert svc.workloads.replica_set_selector("shop", "web") is not None
    web = api.get("replicasets", "web", "shop")
    with caplog.at_level(logging.WARNING, logger="harmonic.cluster.services"):
        # The API server validates selectors; should one still arrive malformed, the old one is dropped.
        api.update("replicasets", {**web, "spec": {"selector": {"matchLabels": "app=web"}}})
        wait_until(lambda: svc.workloads.replica_set_selector("shop", "web") is None, what="the drop")
    assert "ignoring ReplicaSet: ReplicaSet shop/web: spec.selector" in caplog.text
    api.update("replicasets", {**web, "spec": {"selector": {"matchLabels": {"app": "v2"}}}})
    wait_until(
        lambda: svc.workloads.replica_set_selector("shop", "web") == LabelSelector((_is("app", "v2"),)),
        what="the repaired selector",
    )


@pytest.mark.parametrize(
    ("raw", "view"),
    [
        ({"metadata": {"name": "s"}}, {"kind": "Service", "metadata": {"name": "s"}}),
        ({"metadata": "junk", "spec": {"selector": None}}, {"kind": "Service", "metadata": {}}),
        (
            {"metadata": {"name": "s", "uid": "u", "annotations": {"a": "b"}}, "spec": ["junk"]},
            {"kind": "Service", "metadata": {"name": "s"}, "spec": ["junk"]},
        ),
    ],
)
def test_selector_view_never_raises_and_keeps_malformed_specs_for_the_index(raw, view):
    assert selector_view("Service")(raw) == view


def test_storage_informers_only_on_request(api: ApiServerDouble, live_services):
    assert not {r.plural for r in STORAGE_RESOURCES} & set(live_services().informers)
    svc = live_services(storage=True)
    assert {r.plural for r in STORAGE_RESOURCES} <= set(svc.informers)
    assert svc.services[VOLUMES.name] is svc.volumes


def test_volumes_follow_the_storage_objects_with_the_servers_resource_versions(
    api: ApiServerDouble, live_services
):
    """The issue-34 bug: the live adapters had no storage informers, so VolumeBinding found no claim."""
    claim = {"metadata": {"name": "claim1", "namespace": "shop"}, "spec": {"volumeName": "pv1"}}
    stored = api.create("persistentvolumeclaims", claim)
    api.create("storageclasses", {"metadata": {"name": "fast"}, "provisioner": "csi.example.com"})
    svc = live_services(storage=True)
    assert svc.volumes is not None
    seen: list[tuple[ClusterEvent, Any, Any]] = []
    svc.volumes.subscribe(lambda event, old, new: seen.append((event, old, new)))
    got = svc.volumes.pvc("shop", "claim1")
    assert got is not None and got.volume_name == "pv1"
    assert got.resource_version == stored["metadata"]["resourceVersion"]  # PreBind writes it back
    assert svc.volumes.storage_class("fast") is not None
    pv = {"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/x"}}}
    api.create("persistentvolumes", pv)
    wait_until(lambda: svc.volumes is not None and svc.volumes.pv("pv1") is not None, what="the PV")
    api.delete("persistentvolumeclaims", "claim1", "shop")
    wait_until(lambda: svc.volumes is not None and svc.volumes.pvc("shop", "claim1") is None, what="deletion")
    events = [(e.resource, e.action) for e, _, _ in seen]
    assert events == [
        (Resource.PERSISTENT_VOLUME, Action.ADD),
        (Resource.PERSISTENT_VOLUME_CLAIM, Action.DELETE),
    ]


def test_a_malformed_storage_object_is_logged_and_absent(api: ApiServerDouble, live_services, caplog):
    api.create(
        "persistentvolumeclaims",
        {"metadata": {"name": "bad", "namespace": "shop"}, "spec": {"accessModes": 7}},
    )
    with caplog.at_level(logging.WARNING):
        svc = live_services(storage=True)
    assert svc.volumes is not None and svc.volumes.pvc("shop", "bad") is None
    assert "ignoring PersistentVolumeClaim" in caplog.text


def _profile(**plugins: Any) -> Any:
    doc = (
        {"profiles": [{"schedulerName": "s", "plugins": plugins}]}
        if plugins
        else {"profiles": [{"schedulerName": "s"}]}
    )
    return load_config(doc, default_registry(), source="<test>")


ALL_VOLUME_PLUGINS = [
    {"name": n} for n in ("VolumeBinding", "VolumeRestrictions", "VolumeZone", "NodeVolumeLimits")
]


@pytest.mark.parametrize(
    ("plugins", "key", "expected"),
    [
        ({}, VOLUMES, True),  # kube-scheduler's default profile runs the four volume plugins
        ({"multiPoint": {"disabled": ALL_VOLUME_PLUGINS}}, VOLUMES, False),
        ({"multiPoint": {"disabled": ALL_VOLUME_PLUGINS[1:]}}, VOLUMES, True),  # VolumeBinding alone
        ({}, BATCH, False),
        ({"permit": {"enabled": [{"name": "Coscheduling"}]}}, BATCH, True),
    ],
)
def test_uses_service_reads_the_plugins_needs(plugins, key, expected):
    assert uses_service(_profile(**plugins), default_registry(), key) is expected


def test_a_malformed_budget_or_quota_is_one_warning_however_often_it_is_read(caplog):
    from harmonic.api.batch import BatchObjects
    from harmonic.cluster.services import DisruptionBudgets, ManifestStore, batch_feed

    bad = {**_obj("b", {}, resourceVersion="3"), "status": {"disruptionsAllowed": "1"}}
    good = _obj("g", {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}, resourceVersion="4")
    budgets = DisruptionBudgets(ManifestStore([bad, good]))
    quota = {"metadata": {"name": "q", "namespace": "shop"}, "spec": {"min": {"cpu": "-1"}}}
    feed = batch_feed(BatchObjects(), "ElasticQuota")
    with caplog.at_level(logging.WARNING):
        for i in range(3):  # a read per preemption; an update per status change
            assert [b.name for b in budgets()] == ["g"]
            feed(quota, {**quota, "metadata": {**quota["metadata"], "resourceVersion": str(i)}})
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert "shop/b" in lines[0] and "spec.min.cpu" in lines[1]


def test_budgets_are_read_again_only_when_the_informer_moved_on() -> None:
    from harmonic.cluster.services import DisruptionBudgets, ManifestStore

    class Informed(ManifestStore):
        resource_version, lists = "5", 1

    store = Informed([_obj("a", {"minAvailable": 1, "selector": {}}, resourceVersion="5")])
    budgets = DisruptionBudgets(store)
    assert [b.name for b in budgets()] == ["a"]
    store.apply(_obj("b", {"minAvailable": 1, "selector": {}}, resourceVersion="6"))
    assert [b.name for b in budgets()] == ["a"]  # the informer has not reported version 6 yet
    store.resource_version = "6"
    assert sorted(b.name for b in budgets()) == ["a", "b"]
    store.apply(_obj("c", {"minAvailable": 1, "selector": {}}, resourceVersion="6"))
    store.lists = 2  # a relist that came back at a version seen before
    assert sorted(b.name for b in budgets()) == ["a", "b", "c"]
