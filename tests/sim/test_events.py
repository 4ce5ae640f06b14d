"""Each event kind: node added, drained and failed; deployment scaled; pods deleted."""

from __future__ import annotations

from .helpers import container, deployment, objects, run_recorded, scenario


def test_node_added_lets_pending_pods_run_and_time_to_schedule_counts_the_wait():
    # Two 4-CPU nodes, five 2-CPU replicas: one waits until the node added at 10 minutes.
    sc = scenario(
        [objects(deployment("web", 5, cpu="2"))],
        events=[{"type": "nodeAdded", "at": 600, "pool": "n", "count": 1}],
        nodes=2,
    )
    world, rec = run_recorded(sc)
    assert sorted(t for t, _, _ in rec.bound) == [0, 0, 0, 0, 600]
    assert [n for t, _, n in rec.bound if t == 600] == ["n-2"]
    assert sorted(world.time_to_schedule) == [0, 0, 0, 0, 600]
    assert not world.pending()
    assert "n-2" in world.node_views


def test_node_drained_cordons_evicts_and_controllers_recreate_elsewhere():
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [container()]}},
        },
    }
    sc = scenario(
        [objects(deployment("web", 6), ds)],
        events=[{"type": "nodeDrained", "at": 100, "node": "n-0"}],
    )
    world, rec = run_recorded(sc)
    assert world.cluster.nodes["n-0"]["spec"]["unschedulable"] is True
    on_n0 = [k for t, k, n in rec.bound if n == "n-0" and t == 0 and k.startswith("default/web")]
    assert on_n0 and sorted(k for t, k in rec.deleted) == sorted(on_n0)
    assert all(t == 100 for t, _ in rec.deleted)
    # Replacements are scheduled away from the cordoned node; the DaemonSet pod stays.
    assert all(n != "n-0" for t, k, n in rec.bound if t == 100)
    running = world.placement()
    assert sum(1 for k in running if k.startswith("default/web")) == 6
    assert [k for k, n in running.items() if n == "n-0"] == [
        k for k in running if k.startswith("default/agent") and running[k] == "n-0"
    ]
    assert world.stats["pods_evicted"] == len(on_n0)


def test_drain_refuses_unmanaged_pods_unless_forced():
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "lonely"},
        "spec": {"containers": [container()]},
    }
    base = scenario([objects(pod)], nodes=1)
    refused = dict(base, events=[{"type": "nodeDrained", "at": 10, "node": "n-0"}])
    forced = dict(base, events=[{"type": "nodeDrained", "at": 10, "node": "n-0", "force": True}])
    w1, r1 = run_recorded(refused)
    w2, r2 = run_recorded(forced)
    assert r1.deleted == [] and w1.stats["drains_refused"] == 1
    assert "cannot delete pods that declare no controller" in w1.notes[0] and "default/lonely" in w1.notes[0]
    assert r2.deleted == [(10.0, "default/lonely")] and not w2.records


def test_node_failed_taints_the_node_and_evicts_when_tolerations_run_out():
    quick = deployment("quick", 1)
    quick["spec"]["template"]["spec"]["tolerations"] = [
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 30,
        }
    ]
    sc = scenario(
        [objects(deployment("web", 1), quick)],
        events=[{"type": "nodeFailed", "at": 100, "node": "n-0"}],
        nodes=1,
    )
    sc["cluster"]["nodePools"].append(
        {
            "name": "spare",
            "count": 1,
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"},
            "zones": ["a"],
        }
    )
    # Both pods start on n-0 (spare arrives later so the first placement is forced).
    sc["cluster"]["nodePools"][1]["count"] = 0
    sc["events"].append({"type": "nodeAdded", "at": 50, "pool": "spare", "count": 1})
    world, rec = run_recorded(sc)
    node = world.cluster.nodes["n-0"]
    assert {(t["key"], t["effect"]) for t in node["spec"]["taints"]} == {
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
    }
    deleted = dict((k.split("/")[1].split("-")[0], t) for t, k in rec.deleted)
    # DefaultTolerationSeconds gave web 300 s; quick asked for 30 s.
    assert deleted == {"quick": 130.0, "web": 400.0}
    assert sorted(n for k, n in world.placement().items()) == ["spare-0", "spare-0"]
    assert world.stats["pods_evicted"] == 2


def test_deployment_scaled_up_and_down_removes_unscheduled_then_most_colocated():
    sc = scenario(
        [objects(deployment("web", 2, cpu="1"))],
        events=[
            {"type": "deploymentScaled", "at": 60, "name": "web", "replicas": 14},
            {"type": "deploymentScaled", "at": 120, "name": "web", "replicas": 10},
        ],
        nodes=3,
    )
    world, rec = run_recorded(sc)
    # 3 nodes x 4 CPU hold 12; at 60 s two stay pending, and scale-down removes those two first.
    assert len(rec.created) == 14
    pending_at_60 = {k for _, p in rec.created for k in [f"default/{p['metadata']['name']}"]} - {
        k for _, k, _ in rec.bound
    }
    assert len(pending_at_60) == 2
    removed = {k for t, k in rec.deleted if t == 120}
    assert pending_at_60 <= removed and len(removed) == 4
    assert len(world.placement()) == 10 and not world.pending()


def test_statefulset_scale_down_removes_highest_ordinals():
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 4,
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [container()]}},
        },
    }
    sc = scenario(
        [objects(sts)],
        events=[{"type": "deploymentScaled", "at": 10, "kind": "StatefulSet", "name": "db", "replicas": 2}],
    )
    world, rec = run_recorded(sc)
    assert sorted(k for _, k in rec.deleted) == ["default/db-2", "default/db-3"]
    assert sorted(world.placement()) == ["default/db-0", "default/db-1"]


def test_pods_deleted_by_name_and_selector_are_recreated_by_their_owner():
    sc = scenario(
        [objects(deployment("web", 4))],
        events=[{"type": "podsDeleted", "at": 30, "selector": {"matchLabels": {"app": "web"}}, "count": 3}],
    )
    world, rec = run_recorded(sc)
    assert [t for t, _ in rec.deleted] == [30, 30, 30]
    assert len(rec.created) == 7 and len(world.placement()) == 4
    assert world.stats["pods_deleted"] == 3
    # The same seed picks the same pods.
    _, again = run_recorded(sc)
    assert again.deleted == rec.deleted
