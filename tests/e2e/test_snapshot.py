"""``harmonic snapshot`` against a real API server: what it writes loads as a scenario, and the replay
under the default profile starts with every bound pod where it runs in the cluster."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from harmonic.cli import main
from harmonic.cluster.transport import ApiStatusError
from harmonic.plugins.registry import default_registry
from harmonic.sim.engine import World
from harmonic.sim.plan import build_plan
from harmonic.sim.profiles import profile_runs
from harmonic.sim.scenario import load_scenario_file
from harmonic.testing.kube import ControlPlane, KubeClient

Obj = dict[str, Any]


def _template(app: str) -> Obj:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "containers": [
                {"name": "c", "image": "registry.invalid/pause", "resources": {"requests": {"cpu": "500m"}}}
            ]
        },
    }


def _pod(name: str, app: str, node: str | None, owner: Obj | None = None, **labels: str) -> Obj:
    meta: Obj = {"name": name, "labels": {"app": app, **labels}}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    # A scheduler no one serves: on the shared control plane another test's kube-scheduler may still
    # run, and must not bind the pods this test wants pending. The snapshot drops the name.
    spec = {**_template(app)["spec"], "schedulerName": "snapshot-test-nobody"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {**spec, **({"nodeName": node} if node else {})},
    }


def test_snapshot_replays_the_clusters_placement(
    control_plane: ControlPlane, kube: KubeClient, namespace: str, nodes: Callable[..., Any], tmp_path: Path
) -> None:
    names = ["snap-a", "snap-b", "snap-c"]
    nodes(
        names,
        allocatable={"cpu": "4", "memory": "8Gi", "pods": "110"},
        labels={"topology.kubernetes.io/zone": "z1"},
    )
    kube.patch("/api/v1/nodes/snap-c", {"spec": {"unschedulable": True}})
    ns = f"/namespaces/{namespace}"
    selector = {"matchLabels": {"app": "web"}}
    # No controller-manager: the objects a Deployment's controllers would have made, made here.
    deploy = kube.create(
        f"/apis/apps/v1{ns}/deployments",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"replicas": 3, "selector": selector, "template": _template("web")},
        },
    )
    rs_template = _template("web")
    rs_template["metadata"]["labels"]["pod-template-hash"] = "abc12"
    rs = kube.create(
        f"/apis/apps/v1{ns}/replicasets",
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": "web-abc12",
                "labels": {"app": "web", "pod-template-hash": "abc12"},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "web",
                        "uid": deploy["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web", "pod-template-hash": "abc12"}},
                "template": rs_template,
            },
        },
    )
    sts = kube.create(
        f"/apis/apps/v1{ns}/statefulsets",
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {
                "replicas": 2,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": _template("db"),
            },
        },
    )
    rs["apiVersion"], rs["kind"] = "apps/v1", "ReplicaSet"
    sts["apiVersion"], sts["kind"] = "apps/v1", "StatefulSet"
    live = {
        "web-abc12-x1": ("snap-a", rs),
        "web-abc12-x2": ("snap-a", rs),
        "web-abc12-x3": (None, rs),
        "db-0": ("snap-b", sts),
        "db-1": ("snap-a", sts),
        "lone": ("snap-c", None),
        "waiting": (None, None),
    }
    for name, (node, owner) in live.items():
        app = owner["metadata"]["name"].split("-")[0] if owner else name
        extra = {"apps.kubernetes.io/pod-index": name[-1]} if owner is sts else {}
        if owner is rs:
            extra = {"pod-template-hash": "abc12"}
        kube.create(f"/api/v1{ns}/pods", _pod(name, app, node, owner, **extra))
    kube.create(
        f"/apis/policy/v1{ns}/poddisruptionbudgets",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 2, "selector": selector},
        },
    )

    out = tmp_path / "snapshot.yaml"
    args = [
        "snapshot",
        "--kubeconfig",
        str(control_plane.kubeconfigs["admin"]),
        "-n",
        namespace,
        "-o",
        str(out),
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    header = [line for line in out.read_text().splitlines() if line.startswith("#")]
    # Whether the scheduler-plugins CRDs are served depends on the tests before (the gang tests apply
    # them to the shared control plane); either way the header says so, and it is not an error.
    try:
        kube.get("/apis/scheduling.x-k8s.io/v1alpha1")
        served = True
    except ApiStatusError:
        served = False
    said = any("not served" in line and "PodGroup" in line for line in header)
    assert said is not served, header

    sc = load_scenario_file(out)
    nodes_in = {n["metadata"]["name"]: n for n in sc.cluster.nodes}
    assert set(names) <= set(nodes_in) and nodes_in["snap-c"]["spec"]["unschedulable"] is True
    kinds = Counter(o["kind"] for w in sc.workloads for o in getattr(w, "objects", []))
    assert kinds["PodDisruptionBudget"] == 1 and kinds["Deployment"] == 1 and kinds["StatefulSet"] == 1
    assert kinds["ReplicaSet"] == 0 and kinds["Pod"] == 2  # controllers make the rest

    registry = default_registry()
    world = World(build_plan(sc, str(out), out.parent), profile_runs((), registry)[0], registry)
    placed: list[tuple[str, str | None]] = []
    world.cluster.subscribe(
        lambda old, new: None,
        lambda old, new: (
            placed.append((new["metadata"]["name"], new["spec"].get("nodeName"))) if old is None else None
        ),
        replay=False,
    )
    world.run()
    created_bound = [(n, node) for n, node in placed if node]
    want = Counter(node for node, _ in live.values() if node)
    assert Counter(node for _, node in created_bound) == want
    by_name = dict(created_bound)
    assert (by_name["db-0"], by_name["db-1"], by_name["lone"]) == ("snap-b", "snap-a", "snap-c")
    web = Counter(node for n, node in created_bound if n.startswith("web-"))
    assert web == Counter({"snap-a": 2})
    # The pending ones went through the default profile, which bound them to schedulable nodes.
    final = world.placement()
    assert final[f"{namespace}/waiting"] in ("snap-a", "snap-b")
    assert len([k for k in final if k.split("/", 1)[1].startswith("web-")]) == 3
