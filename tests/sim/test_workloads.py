"""Workload kinds expanded into pods as kube-controller-manager's controllers would."""

from __future__ import annotations

import re

import pytest

from harmonic.sim.errors import ScenarioError
from harmonic.sim.workloads import template_hash

from .helpers import container, deployment, job, objects, run_recorded, scenario

SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"


def _owner(pod: dict) -> dict:
    (ref,) = pod["metadata"]["ownerReferences"]
    assert ref["controller"] is True and ref["blockOwnerDeletion"] is True
    return ref


def test_deployment_makes_a_replicaset_named_by_template_hash_and_its_pods():
    d = deployment("web", 3)
    world, rec = run_recorded(scenario([objects(d)]))
    rs = world.controllers["Deployment/default/web"].child_controllers()[0]
    h = rs.name.removeprefix("web-")
    assert re.fullmatch(r"[bcdfghjklmnpqrstvwxz2456789]{1,10}", h)
    assert h == template_hash(world.controllers["Deployment/default/web"].obj_template)
    names = rec.names("web-")
    assert len(names) == 3 and len(set(names)) == 3
    for _, pod in rec.created:
        assert re.fullmatch(f"web-{h}-{SUFFIX}", pod["metadata"]["name"])
        assert pod["metadata"]["labels"] == {"app": "web", "pod-template-hash": h}
        ref = _owner(pod)
        assert (ref["kind"], ref["name"], ref["apiVersion"]) == ("ReplicaSet", f"web-{h}", "apps/v1")
    assert len(world.placement()) == 3


def test_replicaset_pods_and_replacement_of_deleted_pods():
    rs = deployment("cache", 2)
    rs["kind"] = "ReplicaSet"
    sc = scenario(
        [objects(rs)],
        events=[{"type": "podsDeleted", "at": 60, "selector": {"matchLabels": {"app": "cache"}}, "count": 1}],
    )
    world, rec = run_recorded(sc)
    assert len(rec.created) == 3  # two, then one replacement
    assert all(re.fullmatch(f"cache-{SUFFIX}", n) for n in rec.names())
    assert {_owner(p)["name"] for _, p in rec.created} == {"cache"}
    assert [t for t, _ in rec.deleted] == [60.0]
    assert rec.created[-1][0] == 60.0
    assert len(world.placement()) == 2


def _sts(policy: str, replicas: int = 3, cpu: str = "1") -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": replicas,
            "serviceName": "db-headless",
            "podManagementPolicy": policy,
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [container(cpu)]}},
        },
    }


def test_statefulset_ordinals_labels_and_ordered_ready_creation():
    _world, rec = run_recorded(scenario([objects(_sts("OrderedReady"))]))
    assert rec.names() == ["db-0", "db-1", "db-2"]
    # OrderedReady: each ordinal is created only after the previous one is bound.
    created = {p["metadata"]["name"]: i for i, (_, p) in enumerate(rec.created)}
    bound_order = [k.split("/")[1] for _, k, _ in rec.bound]
    assert bound_order == ["db-0", "db-1", "db-2"]
    assert created["db-1"] > 0
    for i, (_, pod) in enumerate(rec.created):
        name = f"db-{i}"
        labels = pod["metadata"]["labels"]
        assert labels["statefulset.kubernetes.io/pod-name"] == name
        assert labels["apps.kubernetes.io/pod-index"] == str(i)
        assert labels["controller-revision-hash"].startswith("db-")
        assert pod["spec"]["hostname"] == name and pod["spec"]["subdomain"] == "db-headless"
        assert _owner(pod)["kind"] == "StatefulSet"


def test_ordered_ready_waits_for_a_pod_that_cannot_run_parallel_does_not():
    # One 4-CPU node and 3-CPU pods: db-0 runs, db-1 cannot.
    ordered, rec_o = run_recorded(scenario([objects(_sts("OrderedReady", cpu="3"))], nodes=1))
    parallel, rec_p = run_recorded(scenario([objects(_sts("Parallel", cpu="3"))], nodes=1))
    assert rec_o.names() == ["db-0", "db-1"]
    assert rec_p.names() == ["db-0", "db-1", "db-2"]
    assert len(ordered.pending()) == 1 and len(parallel.pending()) == 2


def test_job_runs_parallelism_pods_at_a_time_until_completions_succeed():
    j = job("etl", parallelism=2, completions=5)
    world, rec = run_recorded(scenario([objects(j, duration=60)]))
    assert len(rec.created) == 5
    for _, pod in rec.created:
        assert re.fullmatch(f"etl-{SUFFIX}", pod["metadata"]["name"])
        labels = pod["metadata"]["labels"]
        assert labels["job-name"] == labels["batch.kubernetes.io/job-name"] == "etl"
        assert labels["controller-uid"] == labels["batch.kubernetes.io/controller-uid"] == _owner(pod)["uid"]
    # Two at t=0, two at 60, one at 120; each finishes 60 s after it started.
    assert [t for t, _ in rec.created] == [0, 0, 60, 60, 120]
    assert [t for t, _ in rec.deleted] == [60, 60, 120, 120, 180]
    ctl = world.controllers["Job/default/etl"]
    assert ctl.finished == "Complete" and ctl.succeeded == 5
    assert world.stats["pods_completed"] == 5


def test_indexed_job_pod_names_index_label_annotation_and_hostname():
    j = job("report", parallelism=3, completions=3, completionMode="Indexed")
    _, rec = run_recorded(scenario([objects(j, duration=30)]))
    for i, (_, pod) in enumerate(rec.created):
        assert re.fullmatch(f"report-{i}-{SUFFIX}", pod["metadata"]["name"])
        assert pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == str(i)
        assert pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == str(i)
        assert pod["spec"]["hostname"] == f"report-{i}"


def test_job_replaces_lost_pods_after_backoff_and_fails_past_backoff_limit():
    j = job("train", parallelism=1, completions=1, backoffLimit=1)
    sc = scenario(
        [objects(j, duration=1000)],
        events=[
            {"type": "podsDeleted", "at": 100, "selector": {"matchLabels": {"app": "train"}}},
            {"type": "podsDeleted", "at": 200, "selector": {"matchLabels": {"app": "train"}}},
        ],
    )
    world, rec = run_recorded(sc)
    # First loss: replaced after 10 s of backoff; second loss exceeds backoffLimit 1: no more pods.
    assert [t for t, _ in rec.created] == [0, 110]
    ctl = world.controllers["Job/default/train"]
    assert ctl.failed == 2 and ctl.finished == "Failed"


def test_work_queue_job_completes_when_one_pod_succeeded_and_the_rest_finished():
    j = job("queue", parallelism=3)
    world, rec = run_recorded(scenario([objects(j, duration=50)]))
    assert len(rec.created) == 3
    assert world.controllers["Job/default/queue"].finished == "Complete"


def _daemonset(**pod_spec) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [container()], **pod_spec},
            },
        },
    }


def test_daemonset_one_pod_per_eligible_node_with_name_affinity_and_daemon_tolerations():
    sc = scenario([objects(_daemonset(nodeSelector={"kubernetes.io/os": "linux"}))], nodes=3)
    sc["cluster"]["nodePools"].append(
        {
            "name": "tainted",
            "count": 1,
            "allocatable": {"cpu": "4", "memory": "8Gi"},
            "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
        }
    )
    sc["cluster"]["nodePools"].append(
        {
            "name": "windows",
            "count": 1,
            "allocatable": {"cpu": "4", "memory": "8Gi"},
            "labels": {"kubernetes.io/os": "windows"},
        }
    )
    sc["events"] = [{"type": "nodeAdded", "at": 30, "pool": "n", "count": 1}]
    _, rec = run_recorded(sc)
    targets = []
    for t, pod in rec.created:
        assert re.fullmatch(f"agent-{SUFFIX}", pod["metadata"]["name"])
        assert _owner(pod)["kind"] == "DaemonSet"
        assert pod["metadata"]["labels"]["pod-template-generation"] == "1"
        terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        (term,) = terms
        (field,) = term["matchFields"]
        assert (field["key"], field["operator"]) == ("metadata.name", "In")
        targets.append((t, field["values"][0]))
        tol = {(x["key"], x["effect"]) for x in pod["spec"]["tolerations"] if "tolerationSeconds" not in x}
        assert {
            ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule"),
        } <= tol
    # Not on the tainted node nor the windows node; the node added at 30 s gets one then.
    assert sorted(targets) == [(0, "n-0"), (0, "n-1"), (0, "n-2"), (30, "n-3")]


def test_bare_pod_with_duration_succeeds_and_priority_class_is_resolved():
    pc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "once"},
        "spec": {"priorityClassName": "high", "restartPolicy": "Never", "containers": [container()]},
    }
    world, rec = run_recorded(scenario([objects(pc, pod, duration=90)]))
    ((_, created),) = rec.created
    assert created["spec"]["priority"] == 1000
    assert created["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    # DefaultTolerationSeconds admission.
    assert {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    } in created["spec"]["tolerations"]
    assert rec.deleted == [(90.0, "default/once")]
    assert world.stats["pods_completed"] == 1


def test_lifetime_deletes_the_object_and_its_pods():
    world, rec = run_recorded(scenario([objects(deployment("tmp", 2), lifetime=300)]))
    assert sorted(t for t, _ in rec.deleted) == [300, 300]
    assert "Deployment/default/tmp" not in world.controllers and not world.records


@pytest.mark.parametrize(
    ("obj", "key", "nodes", "prefix"),
    [
        (deployment("web", 3), "Deployment/default/web", ["n-0", "n-0", "n-0"], "web-"),
        (deployment("web", 3), "Deployment/default/web", ["n-1"], "web-"),
        (_sts("OrderedReady", replicas=3), "StatefulSet/default/db", [None, "n-2", "n-2"], "db-"),
        (job("crunch", parallelism=2, completions=2), "Job/default/crunch", ["n-1", "n-1"], "crunch-"),
    ],
)
def test_placement_creates_the_first_pods_bound_to_their_nodes(
    obj: dict, key: str, nodes: list, prefix: str
) -> None:
    """A scenario's ``placement`` (what ``harmonic snapshot`` writes for running pods): the listed
    pods are created already bound, in creation order; the rest go through the scheduler."""
    entry = objects(obj, placement={key: nodes}, **({"duration": "1h"} if obj["kind"] == "Job" else {}))
    _, rec = run_recorded(scenario([entry]))
    created = [p for _, p in rec.created if p["metadata"]["name"].startswith(prefix)]
    given = [p["spec"].get("nodeName") for p in created[: len(nodes)]]
    assert given == nodes
    assert all("nodeName" not in p["spec"] for p in created[len(nodes) :])
    scheduled = {key for _, key, _ in rec.bound}
    assert all(
        f"default/{p['metadata']['name']}" not in scheduled for p in created if p["spec"].get("nodeName")
    )


def test_placement_naming_no_object_of_its_entry_is_an_error() -> None:
    entry = objects(deployment("web", 1), placement={"Deployment/default/other": ["n-0"]})
    with pytest.raises(ScenarioError, match=r"workloads\[0\]\.placement: 'Deployment/default/other'"):
        run_recorded(scenario([entry]))
