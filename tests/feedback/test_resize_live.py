"""In-place resize and published recommendations against the API-server double, over real HTTP: the
double's ``pods/resize`` (validation and the kubelet's answer) and ``LiveActuator``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harmonic.cluster.transport import (
    STRATEGIC_MERGE_PATCH,
    ApiStatusError,
    Transport,
    load_client,
    object_path,
)
from harmonic.feedback.resize import RECOMMENDATION_ANNOTATION, RESIZE_ANNOTATION, LiveActuator
from harmonic.testing import node
from harmonic.testing.apiserver import ApiServerDouble


@pytest.fixture
def api() -> Iterator[ApiServerDouble]:
    with ApiServerDouble() as server:
        yield server


@pytest.fixture
def transport(api: ApiServerDouble, tmp_path: Path) -> Transport:
    return Transport(load_client(str(api.kubeconfig(tmp_path / "kubeconfig"))), qps=-1, burst=100, timeout=10)


def _pod(
    name: str,
    cpu: str = "3",
    memory: str = "3Gi",
    limits: dict[str, str] | None = None,
    policy: dict[str, str] | None = None,
    auto: bool = True,
    node_name: str | None = "n1",
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "app",
        "image": "example/app:1",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    if limits:
        container["resources"]["limits"] = limits
    if policy:
        container["resizePolicy"] = [{"resourceName": r, "restartPolicy": p} for r, p in policy.items()]
    spec: dict[str, Any] = {"containers": [container]}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {RESIZE_ANNOTATION: "auto"} if auto else {},
        },
        "spec": spec,
        "status": {"phase": "Running", "containerStatuses": [{"name": "app", "restartCount": 0}]},
    }


def _setup(api: ApiServerDouble, *pods: dict[str, Any], cpu: str = "8") -> None:
    api.create("nodes", node("n1").cap(cpu=cpu, memory="32Gi", pods="110").obj())
    for p in pods:
        api.create("pods", p)


def _get(api: ApiServerDouble, name: str) -> dict[str, Any]:
    got = api.get("pods", name, "default")
    assert got is not None
    return got


def _requests(p: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = p["spec"]["containers"][0]["resources"]["requests"]
    return out


def test_an_opted_in_pod_is_resized_in_place(api: ApiServerDouble, transport: Transport) -> None:
    _setup(api, _pod("web"))
    out = LiveActuator(transport).apply(_get(api, "web"), 1000, 2 * 2**30)
    assert out.state == "resized", out
    got = _get(api, "web")
    assert _requests(got) == {"cpu": "1000m", "memory": "2048Mi"}
    st = got["status"]["containerStatuses"][0]
    assert st["resources"]["requests"] == {"cpu": "1000m", "memory": "2048Mi"}
    assert st["restartCount"] == 0
    assert not [c for c in got["status"].get("conditions") or () if c["type"].startswith("PodResize")]
    assert RECOMMENDATION_ANNOTATION not in got["metadata"].get("annotations", {})


def test_limits_keep_their_ratio_and_restart_policy_restarts(
    api: ApiServerDouble, transport: Transport
) -> None:
    _setup(api, _pod("web", cpu="2", limits={"cpu": "4"}, policy={"cpu": "RestartContainer"}))
    out = LiveActuator(transport).apply(_get(api, "web"), 1000, 3 * 2**30)
    assert out.state == "resized"
    assert out.restarts == ("app",)
    got = _get(api, "web")
    assert got["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "2000m"}
    assert got["status"]["containerStatuses"][0]["restartCount"] == 1


def test_a_pod_without_the_opt_in_gets_a_vpa_shaped_recommendation_only(
    api: ApiServerDouble, transport: Transport
) -> None:
    _setup(api, _pod("db", auto=False))
    out = LiveActuator(transport).apply(_get(api, "db"), 1500, 2**30)
    assert out.state == "recommended"
    got = _get(api, "db")
    assert _requests(got) == {"cpu": "3", "memory": "3Gi"}  # never both
    rec = json.loads(got["metadata"]["annotations"][RECOMMENDATION_ANNOTATION])
    assert rec == {
        "containerRecommendations": [{"containerName": "app", "target": {"cpu": "1500m", "memory": "1024Mi"}}]
    }


def test_growth_beyond_the_node_is_infeasible_and_beyond_free_room_deferred(
    api: ApiServerDouble, transport: Transport
) -> None:
    _setup(api, _pod("web", cpu="2"), _pod("other", cpu="5", auto=False))
    act = LiveActuator(transport)
    out = act.apply(_get(api, "web"), 9000, 3 * 2**30)
    assert out.state == "Infeasible"
    assert "capacity" in out.message
    out = act.apply(_get(api, "web"), 4000, 3 * 2**30)
    assert out.state == "Deferred"
    conds = [c for c in _get(api, "web")["status"]["conditions"] if c["type"] == "PodResizePending"]
    assert [c["reason"] for c in conds] == ["Deferred"]
    out = act.apply(_get(api, "web"), 2500, 3 * 2**30)
    assert out.state == "resized"
    assert not [c for c in _get(api, "web")["status"]["conditions"] if c["type"] == "PodResizePending"]


@pytest.mark.parametrize(
    ("pod", "patch", "field"),
    [
        (
            _pod("a", cpu="1", memory="1Gi", limits={"cpu": "1", "memory": "1Gi"}),
            {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "500m"}}}]}},
            'spec: Invalid value: "Guaranteed": Pod QOS Class may not change',
        ),
        (
            _pod("a"),
            {
                "spec": {
                    "containers": [{"name": "app", "resources": {"requests": {"ephemeral-storage": "1Gi"}}}]
                }
            },
            "spec: Forbidden: only cpu and memory resources are mutable",
        ),
        (
            _pod("a"),
            {"spec": {"containers": [{"name": "app", "resources": {"requests": {"memory": None}}}]}},
            "resources.requests: Forbidden: resource requests cannot be removed",
        ),
        (
            _pod("a", policy={"cpu": "NotRequired"}),
            {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}],
                        }
                    ]
                }
            },
            "spec: Forbidden: only cpu and memory resources are mutable",
        ),
    ],
)
def test_the_api_server_refuses_what_1_36_refuses(
    api: ApiServerDouble, transport: Transport, pod: dict[str, Any], patch: dict[str, Any], field: str
) -> None:
    _setup(api, pod)
    before = _get(api, "a")
    with pytest.raises(ApiStatusError) as err:
        transport.request(
            "PATCH",
            object_path("v1", "pods", "default", "a") + "/resize",
            body=patch,
            content_type=STRATEGIC_MERGE_PATCH,
        )
    assert err.value.code == 422
    assert field in err.value.message
    assert _get(api, "a")["spec"] == before["spec"]


@pytest.mark.parametrize(
    ("pod", "patch", "resources", "image"),
    [
        # Changes beside the resources are dropped without an error.
        (
            _pod("a"),
            {
                "spec": {
                    "containers": [
                        {"name": "app", "image": "other:2", "resources": {"requests": {"cpu": "2"}}}
                    ]
                }
            },
            {"requests": {"cpu": "2", "memory": "3Gi"}},
            "example/app:1",
        ),
        # A memory limit may fall under NotRequired (1.33 refused it).
        (
            _pod("a", limits={"memory": "4Gi"}),
            {"spec": {"containers": [{"name": "app", "resources": {"limits": {"memory": "3Gi"}}}]}},
            {"requests": {"cpu": "3", "memory": "3Gi"}, "limits": {"memory": "3Gi"}},
            "example/app:1",
        ),
        # A pod not yet bound: accepted, and no kubelet answers.
        (
            _pod("a", node_name=None),
            {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]}},
            {"requests": {"cpu": "1", "memory": "3Gi"}},
            "example/app:1",
        ),
    ],
)
def test_the_api_server_accepts_what_1_36_accepts(
    api: ApiServerDouble,
    transport: Transport,
    pod: dict[str, Any],
    patch: dict[str, Any],
    resources: dict[str, Any],
    image: str,
) -> None:
    _setup(api, pod)
    transport.request(
        "PATCH",
        object_path("v1", "pods", "default", "a") + "/resize",
        body=patch,
        content_type=STRATEGIC_MERGE_PATCH,
    )
    (c,) = _get(api, "a")["spec"]["containers"]
    assert (c["resources"], c["image"]) == (resources, image)


def test_memory_limit_may_fall_with_restart_container(api: ApiServerDouble, transport: Transport) -> None:
    _setup(api, _pod("a", limits={"memory": "4Gi"}, policy={"memory": "RestartContainer"}))
    out = LiveActuator(transport).apply(_get(api, "a"), 3000, 2 * 2**30)
    assert out.state == "resized"
    assert out.restarts == ("app",)
    assert _get(api, "a")["spec"]["containers"][0]["resources"]["limits"]["memory"] == "2731Mi"
