"""harmonic snapshot: a live cluster's objects (canned API answers) turned into a scenario that
loads, starts from the cluster's placement, and says what it left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from harmonic.cli import main
from harmonic.cluster.listing import Listing
from harmonic.plugins.registry import default_registry
from harmonic.sim.run import prepare
from harmonic.sim.scenario import parse_scenario
from harmonic.sim.snapshot import build
from harmonic.testing.apiserver import ApiServerDouble
from harmonic.testing.builders import elastic_quota, node, pod, pod_group

Obj = dict[str, Any]
BIN_PACKING = str(Path(__file__).resolve().parents[2] / "harmonic" / "data" / "profiles" / "bin-packing.yaml")
SERVER_SET = {"uid": "u-1", "resourceVersion": "42", "managedFields": [{"manager": "kubectl"}]}


def _owned(obj: Obj, kind: str, name: str) -> Obj:
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": f"uid-{name}", "controller": True}
    ]
    return obj


def _template(app: str) -> Obj:
    return {
        "metadata": {"labels": {"app": app}, "creationTimestamp": None},
        "spec": {
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}],
            "schedulerName": "default-scheduler",
        },
    }


def _workload(kind: str, name: str, replicas: int, **spec: Any) -> Obj:
    api = "batch/v1" if kind == "Job" else "apps/v1"
    body: Obj = {"template": _template(name), **spec}
    if kind != "Job":
        body |= {"replicas": replicas, "selector": {"matchLabels": {"app": name}}}
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name, "namespace": "default", **SERVER_SET},
        "spec": body,
        "status": {"replicas": replicas},
    }


def _pod(name: str, on: str | None, **labels: str) -> Obj:
    p = pod(name).req(cpu="100m").obj()
    p["metadata"] |= {"labels": labels, **SERVER_SET}
    p["spec"]["schedulerName"] = "default-scheduler"
    if on:
        p["spec"]["nodeName"] = on
    p["status"] = {"phase": "Running" if on else "Pending"}
    return p


def _service(name: str, selector: dict[str, str] | None) -> Obj:
    spec: Obj = {"ports": [{"port": 80}], "clusterIP": "10.0.0.1"}
    if selector:
        spec["selector"] = selector
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def _priority_class(name: str, value: int) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def _cluster() -> Listing:
    nodes = [node(f"n{i}").cap(cpu="4", memory="8Gi", pods=110).zone("a").obj() for i in (1, 2, 3)]
    for n in nodes:
        n["metadata"] |= SERVER_SET
        n["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
    nodes[2]["spec"]["unschedulable"] = True
    nodes[1]["spec"]["taints"] = [
        {"key": "dedicated", "value": "db", "effect": "PreferNoSchedule"},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-11-29T03:00:00Z"},
    ]
    rs = _owned(_workload("ReplicaSet", "web-5d8f", 3), "Deployment", "web")
    sts = _workload(
        "StatefulSet", "db", 3, serviceName="db", volumeClaimTemplates=[{"metadata": {"name": "d"}}]
    )
    # Its pods mount the claim the template would have made; the mount stays, harmless without it.
    sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "d", "mountPath": "/data"}]
    done = _workload("Job", "old", 1)
    done["status"] = {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1}
    pods = [
        _owned(_pod("web-5d8f-a", "n1", app="web"), "ReplicaSet", "web-5d8f"),
        _owned(_pod("web-5d8f-b", "n2", app="web"), "ReplicaSet", "web-5d8f"),
        _owned(_pod("web-5d8f-c", None, app="web"), "ReplicaSet", "web-5d8f"),
        _owned(_pod("db-0", "n2", app="db"), "StatefulSet", "db"),
        _owned(_pod("db-2", "n1", app="db"), "StatefulSet", "db"),
        _pod("bare-bound", "n1"),
        _pod("bare-pending", None)
        | {"spec": {**_pod("x", None)["spec"], "priorityClassName": "high", "priority": 1000}},
        _owned(_pod("old-x", "n1"), "Job", "old") | {"status": {"phase": "Succeeded"}},
        _owned(_pod("custom-1", "n2"), "Widget", "w"),
        _pod("gone-class", "n3")
        | {"spec": {**_pod("y", "n3")["spec"], "priorityClassName": "gone", "priority": 5}},
        _pod("old-value", "n3")
        | {"spec": {**_pod("z", "n3")["spec"], "priorityClassName": "high", "priority": 7}},
    ]
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default", **SERVER_SET},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"currentHealthy": 2},
    }
    return Listing(
        objects={
            "Node": nodes,
            "Pod": pods,
            "Deployment": [_workload("Deployment", "web", 3)],
            "ReplicaSet": [rs],
            "StatefulSet": [sts],
            "Job": [done],
            "PodDisruptionBudget": [pdb],
            "Service": [_service("kubernetes", None), _service("web", {"app": "web"})],
            "PriorityClass": [
                _priority_class("system-node-critical", 2000001000),
                _priority_class("high", 1000),
            ],
        },
        not_served=["PodGroup", "ElasticQuota"],
    )


def _objects(sc: Obj) -> dict[str, Obj]:
    return {f"{o['kind']}/{o['metadata']['name']}": o for w in sc["workloads"] for o in w["objects"]}


def test_snapshot_loads_and_places_running_pods_where_they_run(tmp_path: Path) -> None:
    snap = build(_cluster(), name="snap", description="", job_duration="10m")
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump(snap.scenario))
    parse_scenario(snap.scenario, "snap.yaml")
    plan, _ = prepare(str(path), (), default_registry(), (), 10.0, None)
    assert [n["metadata"]["name"] for n in plan.nodes] == ["n1", "n2", "n3"]
    placement = snap.scenario["workloads"][0]["placement"]
    # Creation order for the ReplicaSet's pods; by ordinal for the StatefulSet (db-1 does not exist).
    assert placement == {"Deployment/default/web": ["n1", "n2"], "StatefulSet/default/db": ["n2", None, "n1"]}
    objs = _objects(snap.scenario)
    assert objs["Pod/bare-bound"]["spec"]["nodeName"] == "n1"
    assert "nodeName" not in objs["Pod/bare-pending"]["spec"]
    assert "ReplicaSet/web-5d8f" not in objs  # its Deployment makes it
    assert not any(k.startswith("Pod/web-") or k.startswith("Pod/db-") for k in objs)
    assert (snap.bound, snap.pending) == (8, 2)  # old-x finished: neither
    assert (
        objs["Pod/gone-class"]["spec"]["priority"] == 5
        and "priorityClassName" not in objs["Pod/gone-class"]["spec"]
    )
    assert "priority" not in objs["Pod/old-value"]["spec"]
    assert objs["Service/web"]["spec"] == {"selector": {"app": "web"}}
    assert objs["PriorityClass/high"]["value"] == 1000 and "PriorityClass/system-node-critical" not in objs


@pytest.mark.parametrize(
    ("where", "absent"),
    [
        (("Node", "n1", "metadata"), ("uid", "resourceVersion", "managedFields")),
        (("Deployment", "web", "metadata"), ("uid", "resourceVersion", "managedFields")),
        (("Deployment", "web", ""), ("status",)),
        (("PodDisruptionBudget", "web", ""), ("status",)),
        (("Pod", "bare-bound", ""), ("status",)),
        (("Pod", "bare-bound", "spec"), ("schedulerName",)),
        (("StatefulSet", "db", "spec"), ("volumeClaimTemplates",)),
    ],
)
def test_server_set_fields_are_stripped(where: tuple[str, str, str], absent: tuple[str, ...]) -> None:
    snap = build(_cluster(), name="snap", description="", job_duration="10m")
    kind, name, part = where
    if kind == "Node":
        obj = next(n for n in snap.scenario["cluster"]["nodes"] if n["metadata"]["name"] == name)
    else:
        obj = _objects(snap.scenario)[f"{kind}/{name}"]
    target = obj[part] if part else obj
    assert not set(absent) & set(target)


def test_cordon_taints_and_allocatable_are_kept() -> None:
    listing = _cluster()
    snap = build(listing, name="snap", description="", job_duration="10m")
    got = {n["metadata"]["name"]: n for n in snap.scenario["cluster"]["nodes"]}
    for live in listing.of("Node"):
        kept = got[live["metadata"]["name"]]
        assert kept["metadata"]["labels"] == live["metadata"]["labels"]
        assert kept["status"]["allocatable"] == live["status"]["allocatable"]
        assert kept["spec"].get("unschedulable") == live["spec"].get("unschedulable")
        assert kept["spec"].get("taints") == live["spec"].get("taints")


def test_every_left_out_kind_has_one_warning_with_its_count() -> None:
    snap = build(_cluster(), name="snap", description="", job_duration="10m")
    warnings = snap.warnings()
    expected = {
        "finished Job(s)": 1,
        "finished Pod(s)": 1,
        "owned by a Widget": 1,
        "StatefulSet spec.volumeClaimTemplates": 1,
        "built-in PriorityClass": 1,
        "Service(s) without a selector": 1,
        "PriorityClass that no longer exists": 1,
        "PriorityClass's current value": 1,
    }
    for text, count in expected.items():
        lines = [w for w in warnings if text in w]
        assert len(lines) == 1, (text, warnings)
        assert lines[0].startswith(f"{count} ")
    assert len(warnings) == len(expected)


def test_unfinished_job_replays_the_completions_still_owed() -> None:
    listing = _cluster()
    job = _workload("Job", "batch", 1, completions=5, parallelism=2)
    job["spec"]["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": "x"}}
    job["spec"]["template"]["metadata"]["labels"] |= {"job-name": "batch", "controller-uid": "x"}
    job["metadata"]["labels"] = {"job-name": "batch", "controller-uid": "x"}
    job["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    job["status"] = {"succeeded": 3, "active": 2}
    listing.objects["Job"] = [job]
    listing.objects["Pod"] = [_owned(_pod("batch-a", "n1"), "Job", "batch")]
    snap = build(listing, name="snap", description="", job_duration="2m")
    entry = snap.scenario["workloads"][1]
    assert entry["duration"] == "2m"
    assert entry["placement"] == {"Job/default/batch": ["n1"]}
    spec = entry["objects"][0]["spec"]
    assert spec["completions"] == 2
    assert "selector" not in spec and "job-name" not in spec["template"]["metadata"]["labels"]
    assert "job-name" not in entry["objects"][0]["metadata"].get("labels", {})
    parse_scenario(snap.scenario, "snap.yaml")


def test_cli_reads_the_api_and_tolerates_absent_crds(tmp_path: Path) -> None:
    with ApiServerDouble() as api:
        api.create("nodes", node("n1").cap(cpu="4", memory="8Gi", pods=110).obj())
        api.create("pods", pod("bound").req(cpu="100m").node("n1").obj())
        api.create("pods", pod("waiting").req(cpu="100m").obj())
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
        out = tmp_path / "snap.yaml"
        result = CliRunner().invoke(main, ["snapshot", "--kubeconfig", str(kubeconfig), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert any(api.url in line and "Taken by" in line for line in header)
    # The double serves no Deployments, DaemonSets, Jobs, PriorityClasses: said, not an error.
    assert any("not served" in line and "Deployment" in line for line in header)
    sc = yaml.safe_load(text)
    objs = _objects(sc)
    assert objs["Pod/bound"]["spec"]["nodeName"] == "n1" and "nodeName" not in objs["Pod/waiting"]["spec"]
    parse_scenario(sc, str(out))


def test_simulate_from_cluster_snapshots_then_replays(tmp_path: Path) -> None:
    out = tmp_path / "report"
    with ApiServerDouble() as api:
        api.create("nodes", node("n1").cap(cpu="4", memory="8Gi", pods=110).obj())
        api.create("pods", pod("bound").req(cpu="1").node("n1").obj())
        api.create("pods", pod("waiting").req(cpu="1").obj())
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
        args = ["simulate", "--from-cluster", "--kubeconfig", str(kubeconfig), "--out", str(out)]
        result = CliRunner().invoke(main, [*args, "--no-progress", "--json", "--config", BIN_PACKING])
    assert result.exit_code == 0, result.output
    assert (out / "snapshot.yaml").exists() and (out / "metrics.json").exists()
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["profiles"]) == {"default-scheduler", "bin-packing"}
    for profile in metrics["profiles"].values():
        assert profile["pods_scheduled"] == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["simulate", "x.yaml", "--from-cluster"], "give SCENARIO or --from-cluster, not both"),
        (["simulate", "x.yaml", "--namespace", "a"], "apply to --from-cluster"),
        (["snapshot", "--job-duration", "soon"], "is not a duration"),
    ],
)
def test_snapshot_option_errors(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0
    assert message in result.output


def test_pod_groups_and_elastic_quotas_are_copied_without_status(tmp_path: Path) -> None:
    listing = _cluster()
    group = pod_group("train").min_member(2).obj() | {"status": {"phase": "Running", "scheduled": 2}}
    quota = elastic_quota("default").min(cpu="2").max(cpu="4").obj() | {"status": {"used": {"cpu": "1"}}}
    for o in (group, quota):
        o["metadata"] |= SERVER_SET
    listing.objects["PodGroup"], listing.objects["ElasticQuota"] = [group], [quota]
    snap = build(listing, name="snap", description="", job_duration="10m")
    objs = _objects(snap.scenario)
    for o in (group, quota):
        kept = objs[f"{o['kind']}/{o['metadata']['name']}"]
        assert kept["spec"] == o["spec"] and "status" not in kept and "uid" not in kept["metadata"]
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump(snap.scenario))
    prepare(str(path), (), default_registry(), (), 10.0, None)
