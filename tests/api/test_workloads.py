"""WorkloadIndex: selectors of Services, ReplicationControllers, ReplicaSets and StatefulSets."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.api.errors import ObjectError
from harmonic.api.selectors import IN, LabelSelector, Requirement
from harmonic.api.workloads import WorkloadIndex
from harmonic.cluster.memory import InMemoryCluster


def _obj(kind: str, name: str, spec: Any, ns: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if ns:
        meta["namespace"] = ns
    return {"kind": kind, "metadata": meta, "spec": spec}


def test_apply_replace_delete() -> None:
    idx = WorkloadIndex()
    idx.apply(_obj("Service", "a", {"selector": {"app": "a"}}))
    idx.apply(_obj("Service", "nil", {}))
    idx.apply(_obj("Service", "b", {"selector": {"app": "b"}}, ns="other"))
    assert list(idx.service_selectors("default")) == [{"app": "a"}]
    idx.apply(_obj("Service", "a", {"selector": {"app": "a2"}}))
    assert list(idx.service_selectors("default")) == [{"app": "a2"}]
    idx.delete("Service", "default", "a")
    assert list(idx.service_selectors("default")) == []
    assert list(idx.service_selectors("other")) == [{"app": "b"}]

    idx.apply(_obj("ReplicationController", "rc", {"selector": {"app": "a"}}))
    assert idx.replication_controller_selector("default", "rc") == {"app": "a"}
    idx.apply(_obj("ReplicaSet", "rs", {"selector": {"matchLabels": {"app": "a"}}}))
    assert idx.replica_set_selector("default", "rs") == LabelSelector(
        (Requirement("app", IN, frozenset({"a"})),)
    )
    idx.apply(_obj("StatefulSet", "ss", {}))
    assert idx.stateful_set_selector("default", "ss") is None
    for kind, name in (("ReplicationController", "rc"), ("ReplicaSet", "rs"), ("StatefulSet", "ss")):
        idx.delete(kind, "default", name)
    assert idx.replication_controller_selector("default", "rc") is None
    assert idx.replica_set_selector("default", "rs") is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"kind": "Deployment", "metadata": {"name": "d"}}, "kind: must be one of Service"),
        ({"kind": "Service", "metadata": {}}, "Service: metadata.name: is required"),
        (
            _obj("Service", "s", {"selector": ["app"]}),
            "Service default/s: spec.selector: must be a map of strings",
        ),
        (
            _obj("ReplicaSet", "r", {"selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}),
            "ReplicaSet default/r: spec.selector.matchExpressions[0]: values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
        ),
        (_obj("StatefulSet", "s", "x"), "StatefulSet default/s: spec: must be an object"),
    ],
)
def test_malformed_objects_name_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ObjectError) as err:
        WorkloadIndex().apply(raw)
    assert message in str(err.value)


def test_in_memory_cluster_offers_its_workloads_to_schedulers() -> None:
    cluster = InMemoryCluster()
    cluster.apply_workload(_obj("Service", "s", {"selector": {"app": "a"}}))
    services = cluster.scheduler_services()
    assert list(services["workloads"].service_selectors("default")) == [{"app": "a"}]
    cluster.delete_workload("Service", "default", "s")
    assert list(services["workloads"].service_selectors("default")) == []
