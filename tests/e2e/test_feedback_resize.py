"""The feedback loop's actuator on a real API server: in-place resize through ``pods/resize`` (validated
by kube-apiserver 1.36 itself) and the VPA-shaped recommendation, and the API-server double's
``pods/resize`` held to the same verdicts.

No kubelet runs, so a resize the server accepts stays pending (spec changed, no PodResize* condition):
the actuator reports it ``resized``, as it does while a kubelet has yet to answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from harmonic.cluster.permissions import rbac_rules, rightsizing_permissions
from harmonic.cluster.transport import STRATEGIC_MERGE_PATCH, ApiStatusError, Transport, load_client
from harmonic.feedback.resize import RECOMMENDATION_ANNOTATION, RESIZE_ANNOTATION, LiveActuator
from harmonic.testing import node
from harmonic.testing.apiserver import ApiServerDouble
from harmonic.testing.kube import ControlPlane, KubeClient

from .install import HarmonicInstall, wait_for
from .objects import IMAGE

NODE = "resize-node"


def _pod(
    name: str, resources: dict[str, Any], policy: dict[str, str] | None = None, auto: bool = True
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": IMAGE, "resources": resources}
    if policy:
        container["resizePolicy"] = [{"resourceName": r, "restartPolicy": p} for r, p in policy.items()]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": {RESIZE_ANNOTATION: "auto"} if auto else {}},
        "spec": {"nodeName": NODE, "containers": [container]},
    }


BURSTABLE = {"requests": {"cpu": "100m", "memory": "100Mi"}, "limits": {"cpu": "200m", "memory": "200Mi"}}
GUARANTEED = {"requests": {"cpu": "100m", "memory": "100Mi"}, "limits": {"cpu": "100m", "memory": "100Mi"}}


def _resize(resources: dict[str, Any], **container: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "app", "resources": resources, **container}]}}


#: (case, pod resources, resize policy, patch): each sent to kube-apiserver and to the double.
CASES = [
    ("cpu up, limit kept in ratio", BURSTABLE, None, _resize({"requests": {"cpu": "150m"}, "limits": {"cpu": "300m"}})),
    ("memory limit lowered, NotRequired", BURSTABLE, None, _resize({"limits": {"memory": "150Mi"}})),
    ("memory limit lowered, RestartContainer", BURSTABLE, {"memory": "RestartContainer"}, _resize({"limits": {"memory": "150Mi"}})),
    ("QoS class changed", GUARANTEED, None, _resize({"requests": {"cpu": "50m"}})),
    ("BestEffort given a request", {}, None, _resize({"requests": {"cpu": "100m"}})),
    ("a limit added, QoS kept", {"requests": {"cpu": "100m"}}, None, _resize({"limits": {"cpu": "200m"}})),
    ("a request added, QoS kept", {"requests": {"cpu": "100m"}}, None, _resize({"requests": {"memory": "100Mi"}})),
    ("a request removed, its limit kept", BURSTABLE, None, _resize({"requests": {"memory": None}})),
    ("a request without a limit removed", {"requests": {"cpu": "100m", "memory": "100Mi"}}, None, _resize({"requests": {"memory": None}})),
    ("a limit removed", BURSTABLE, None, _resize({"limits": {"memory": None}})),
    ("ephemeral-storage changed", {"requests": {"cpu": "100m", "ephemeral-storage": "1Gi"}}, None, _resize({"requests": {"ephemeral-storage": "2Gi"}})),
    ("resizePolicy changed", BURSTABLE, None, _resize({"requests": {"cpu": "150m"}}, resizePolicy=[{"resourceName": "cpu", "restartPolicy": "RestartContainer"}])),
    ("image changed beside the resources", BURSTABLE, None, _resize({"requests": {"cpu": "150m"}}, image="registry.invalid/other")),
]  # fmt: skip


@pytest.fixture(scope="module")
def double(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Transport]:
    with ApiServerDouble() as api:
        api.create("nodes", node(NODE).cap(cpu="8", memory="32Gi", pods="110").obj())
        kubeconfig = api.kubeconfig(tmp_path_factory.mktemp("double") / "kubeconfig")
        yield Transport(load_client(str(kubeconfig)), qps=-1, burst=100, timeout=10)


def _verdict(t: Transport, ns: str, name: str, pod: dict[str, Any], patch: dict[str, Any]) -> tuple[Any, ...]:
    """(HTTP code, message, the container's resources and image afterwards) of one resize."""
    t.request(
        "POST", f"/api/v1/namespaces/{ns}/pods", body={**pod, "metadata": {**pod["metadata"], "name": name}}
    )
    path = f"/api/v1/namespaces/{ns}/pods/{name}"
    try:
        t.request("PATCH", f"{path}/resize", body=patch, content_type=STRATEGIC_MERGE_PATCH)
        code, message = 200, ""
    except ApiStatusError as e:
        code, message = e.code, e.message
    (c,) = t.request("GET", path)["spec"]["containers"]
    return code, message, c.get("resources"), c["image"]


@pytest.mark.parametrize(("case", "resources", "policy", "patch"), CASES, ids=[c[0] for c in CASES])
def test_the_double_answers_a_resize_as_kube_apiserver_does(
    case: str,
    resources: dict[str, Any],
    policy: dict[str, str] | None,
    patch: dict[str, Any],
    control_plane: ControlPlane,
    namespace: str,
    nodes: Callable[..., Any],
    double: Transport,
):
    nodes([NODE])
    name = f"p{[c[0] for c in CASES].index(case)}"  # unique: the double is shared by the module
    pod = _pod(name, resources, policy)
    real = _verdict(control_plane.transport(), namespace, name, pod, patch)
    assert _verdict(double, "default", name, pod, patch) == real


def test_the_actuator_resizes_in_place_and_publishes_the_recommendation(
    control_plane: ControlPlane, kube: KubeClient, namespace: str, nodes: Callable[..., Any]
):
    nodes([NODE])
    base = f"/api/v1/namespaces/{namespace}/pods"
    web = kube.create(
        base,
        {**_pod("web", BURSTABLE), "metadata": {"name": "web", "annotations": {RESIZE_ANNOTATION: "auto"}}},
    )
    db = kube.create(base, _pod("db", BURSTABLE, auto=False))
    act = LiveActuator(control_plane.transport())

    out = act.apply(web, 300, 300 * 2**20)
    assert out.state == "resized", out
    got = kube.get(f"{base}/web")
    # Limits keep their 2:1 ratio to the requests; the server accepted it and bumped the generation.
    assert got["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "300m", "memory": "300Mi"},
        "limits": {"cpu": "600m", "memory": "600Mi"},
    }
    assert got["metadata"]["generation"] == web["metadata"]["generation"] + 1

    assert act.apply(db, 300, 300 * 2**20).state == "recommended"
    got = kube.get(f"{base}/db")
    assert got["spec"]["containers"][0]["resources"] == BURSTABLE  # a recommendation only, never both
    rec = json.loads(got["metadata"]["annotations"][RECOMMENDATION_ANNOTATION])
    assert rec == {
        "containerRecommendations": [{"containerName": "app", "target": {"cpu": "300m", "memory": "300Mi"}}]
    }


def test_harmonic_resizes_as_its_service_account_with_the_documented_rbac(
    kube: KubeClient, namespace: str, nodes: Callable[..., Any], harmonic_install: HarmonicInstall
):
    """The shipped RBAC plus ``rightsizing_permissions`` (the opt-in rules docs/feedback.md names) let
    ``harmonic run --feedback-rightsizing`` resize and annotate as its ServiceAccount."""
    nodes([NODE])
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "e2e-rightsizing"},
    }
    subject = {"kind": "ServiceAccount", "name": "harmonic-scheduler", "namespace": "harmonic-system"}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "e2e-rightsizing"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "e2e-rightsizing",
        },
        "subjects": [subject],
    }
    as_harmonic = Transport(load_client(str(harmonic_install.kubeconfig)), qps=-1, burst=100, timeout=10)
    base = f"/api/v1/namespaces/{namespace}/pods"
    web = kube.create(base, _pod("web", BURSTABLE))
    db = kube.create(base, _pod("db", BURSTABLE, auto=False))
    # Without the opt-in rules: refused.
    assert LiveActuator(as_harmonic).apply(web, 300, 300 * 2**20).message.startswith("HTTP 403")
    kube.apply([{**role, "rules": rbac_rules(rightsizing_permissions(), namespaced=False)}, binding])
    try:
        act = LiveActuator(as_harmonic)
        # RBAC caches refresh within a moment of the ClusterRoleBinding's creation.
        out = wait_for(
            lambda: (o := act.apply(web, 300, 300 * 2**20)).state != "error" and o, 30, "the resize allowed"
        )
        assert out.state == "resized", out
        assert act.apply(db, 300, 300 * 2**20).state == "recommended"
    finally:
        kube.delete("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/e2e-rightsizing")
        kube.delete("/apis/rbac.authorization.k8s.io/v1/clusterroles/e2e-rightsizing")
