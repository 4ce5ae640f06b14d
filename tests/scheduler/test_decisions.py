"""Decision recording in the scheduling cycle: every Filter verdict, every Score plugin's raw,
normalised and weighted score, the choice and its tie-break. Expected numbers are worked out by hand
from upstream's formulas (LeastAllocated, TaintToleration's reversed normalisation)."""

from typing import Any

import pytest

from harmonic.framework.decisions import DecisionLog
from harmonic.testing import node, pod
from harmonic.testing.harness import Harness

#: Two scorers with weights given explicitly, so the totals below do not depend on defaults.
TWO_SCORERS: dict[str, Any] = {
    "profiles": [
        {
            "plugins": {
                "score": {
                    "disabled": [{"name": "*"}],
                    "enabled": [
                        {"name": "NodeResourcesFit", "weight": 1},
                        {"name": "TaintToleration", "weight": 3},
                    ],
                }
            }
        }
    ]
}


def _recording(config: dict[str, Any] | None = None, capacity: int = 100) -> Harness:
    h = Harness(config)
    h.scheduler.decisions = DecisionLog(capacity)
    return h


def _cluster(h: Harness) -> None:
    h.add_nodes(
        [
            node("small").cap(cpu="1", memory="2Gi").obj(),
            node("tainted").cap(cpu="4", memory="4Gi").taint("dedicated", "gpu").obj(),
            node("a").cap(cpu="4", memory="4Gi").taint("soft", "yes", "PreferNoSchedule").obj(),
            node("b").cap(cpu="8", memory="4Gi").obj(),
        ]
    )


def test_scheduled_pod_records_filters_scores_and_choice():
    h = _recording(TWO_SCORERS)
    _cluster(h)
    h.add_pods([pod("web").req(cpu="2", memory="1Gi").obj()])
    h.schedule()
    assert h.placement() == {"default/web": "b"}
    (d,) = h.scheduler.decisions.documents()  # type: ignore[union-attr]
    assert d["pod"] == "default/web"
    assert d["profile"] == "default-scheduler"
    assert (d["result"], d["node"], d["message"]) == ("Scheduled", "b", "")
    assert d["nodes"] == {"all": 4, "evaluated": 4, "feasible": 2}
    assert d["preFilter"] is None
    rows = {r["node"]: r for r in d["filter"]}
    assert rows == {
        # The request exceeds the node's whole allocatable: no eviction could help (unresolvable).
        "small": {
            "node": "small",
            "code": "UnschedulableAndUnresolvable",
            "plugin": "NodeResourcesFit",
            "reasons": ["Insufficient cpu"],
        },
        "tainted": {
            "node": "tainted",
            "code": "UnschedulableAndUnresolvable",
            "plugin": "TaintToleration",
            "reasons": ["node(s) had untolerated taint(s)"],
        },
    }
    scores = d["scores"]
    assert scores["plugins"] == [
        {"name": "NodeResourcesFit", "weight": 1},
        {"name": "TaintToleration", "weight": 3},
    ]
    assert scores["nodes"] == ["a", "b"]  # evaluation order
    # a: cpu (4-2)/4 = 50, memory (4-1)/4 = 75 -> 62; one PreferNoSchedule taint -> raw 1, reversed 0.
    # b: cpu (8-2)/8 = 75, memory 75 -> 75; no taint -> raw 0, reversed 100, weighted 300.
    assert scores["raw"] == [[62, 75], [1, 0]]
    assert scores["normalized"] == [[62, 75], [0, 100]]
    assert scores["weighted"] == [[62, 75], [0, 300]]
    assert scores["total"] == [62, 375]
    assert d["choice"] == {
        "node": "b",
        "total": 375,
        "ties": ["b"],
        "tieBreak": "the only node with the best total",
    }


def test_unschedulable_pod_records_every_rejection_and_preemption_message():
    h = _recording(TWO_SCORERS)
    _cluster(h)
    h.add_pods([pod("huge").req(cpu="16").obj()])
    h.schedule()
    (d,) = h.scheduler.decisions.documents()  # type: ignore[union-attr]
    assert d["result"] == "Unschedulable"
    assert d["node"] is None
    assert d["message"] == h.failure("huge")
    # Go's sort.Strings order of "<count> <reason>".
    assert d["message"].startswith(
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu."
    )
    assert {r["node"]: r["plugin"] for r in d["filter"]} == {
        "small": "NodeResourcesFit",
        "tainted": "TaintToleration",
        "a": "NodeResourcesFit",
        "b": "NodeResourcesFit",
    }
    assert d["scores"] is None and d["choice"] is None
    assert d["postFilter"]["message"].startswith("preemption: 0/4 nodes are available")
    assert d["postFilter"]["nominatedNode"] is None


def test_ties_are_listed_with_the_tie_break():
    h = _recording(TWO_SCORERS)
    h.add_nodes([node(f"n{i}").cap(cpu="4", memory="4Gi").obj() for i in range(3)])
    h.add_pods([pod("p").req(cpu="1", memory="1Gi").obj()])
    h.schedule()
    (d,) = h.scheduler.decisions.documents()  # type: ignore[union-attr]
    assert sorted(d["choice"]["ties"]) == ["n0", "n1", "n2"]
    assert d["choice"]["node"] == h.placement()["default/p"]
    assert d["choice"]["tieBreak"] == "uniform draw among the 3 nodes with the best total (seeded)"


def test_prefilter_rejection_is_recorded():
    h = _recording()
    h.add_nodes([node("n").obj()])
    # A PVC that does not exist: VolumeRestrictions (the first PreFilter to look) rejects the pod
    # before any Filter runs.
    manifest = pod("v").obj()
    manifest["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "missing"}}]
    h.add_pods([manifest])
    h.schedule()
    (d,) = h.scheduler.decisions.documents()  # type: ignore[union-attr]
    assert d["result"] == "Unschedulable"
    assert d["preFilter"]["plugin"] == "VolumeRestrictions"
    assert d["preFilter"]["code"] == "UnschedulableAndUnresolvable"
    assert 'persistentvolumeclaim "missing" not found' in d["preFilter"]["message"]
    assert d["filter"] == [] and d["nodes"]["evaluated"] == 0


def test_ring_buffer_keeps_the_last_attempts():
    h = _recording(capacity=2)
    h.add_nodes([node("n").obj()])
    h.add_pods([pod(f"p{i}").req(cpu="10m").obj() for i in range(3)])
    h.schedule()
    log = h.scheduler.decisions
    assert log is not None and log.total == 3
    docs = log.documents()
    assert [d["pod"] for d in docs] == ["default/p1", "default/p2"]
    assert [d["id"] for d in docs] == [2, 3]
    assert [d["pod"] for d in log.documents(pod="p2")] == ["default/p2"]
    assert [d["id"] for d in log.documents(since=2)] == [3]
    assert [d["id"] for d in log.documents(limit=1)] == [3]


def test_per_pod_log_keeps_each_pods_latest_attempt():
    h = Harness()
    h.scheduler.decisions = DecisionLog(10, per_pod=True)
    h.add_nodes([node("n").cap(cpu="1").obj()])
    h.add_pods([pod("first").req(cpu="1").obj(), pod("second").req(cpu="1").obj()])
    h.schedule()
    h.cluster.delete_pod("default", "first")
    h.clock.advance(15)
    h.schedule()
    docs = {d["pod"]: d for d in h.scheduler.decisions.documents()}
    assert docs["default/second"]["result"] == "Scheduled"
    assert len(docs) == 2


def test_not_recording_by_default():
    h = Harness()
    h.add_nodes([node("n").obj()])
    h.add_pods([pod("p").obj()])
    h.schedule()
    assert h.scheduler.decisions is None
    assert h.placement() == {"default/p": "n"}


def test_capacity_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        DecisionLog(0)


def test_nodes_left_out_by_a_prefilter_result_are_listed():
    """NodeAffinity's PreFilter narrows a metadata.name matchFields term to that node: the others are
    not evaluated, and show the status kube-scheduler gives them."""
    h = _recording()
    h.add_nodes([node(n).obj() for n in ("x", "y", "z")])
    manifest = pod("pinned").obj()
    manifest["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["y"]}]}
                ]
            }
        }
    }
    h.add_pods([manifest])
    h.schedule()
    (d,) = h.scheduler.decisions.documents()  # type: ignore[union-attr]
    assert (d["result"], d["node"]) == ("Scheduled", "y")
    assert d["nodes"] == {"all": 3, "evaluated": 1, "feasible": 1}
    assert sorted(r["node"] for r in d["filter"]) == ["x", "z"]
    assert {(r["code"], tuple(r["reasons"])) for r in d["filter"]} == {
        ("UnschedulableAndUnresolvable", ("node(s) didn't satisfy plugin(s) [NodeAffinity]",))
    }
    assert d["passed"] == ["y"]
    assert d["choice"] == {"node": "y", "total": None, "ties": ["y"], "tieBreak": "the only feasible node"}


def test_preemption_nominates_and_the_next_attempt_tries_the_nominated_node_first():
    h = _recording()
    h.add_nodes([node("n").cap(cpu="2").obj()])
    h.add_pods([pod("low").priority(0).req(cpu="2").obj()])
    h.schedule()
    h.add_pods([pod("high").priority(100).req(cpu="2").obj()])
    h.settle(30)
    assert h.placement() == {"default/high": "n"}
    log = h.scheduler.decisions
    assert log is not None
    first, *_, last = log.documents(pod="default/high")
    assert first["result"] == "Unschedulable"
    assert first["postFilter"] == {"message": "", "nominatedNode": "n"}
    assert last["result"] == "Scheduled"
    assert last["nominatedNode"] == {"node": "n", "passed": True}
    assert last["choice"]["tieBreak"] == "the nominated node passed every filter"
