"""Extender verb semantics, called in-process: how framework results become extender answers."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.api.pod import Pod
from harmonic.cluster.memory import InMemoryCluster
from harmonic.extender.cache import ClusterCache
from harmonic.extender.engine import NODE_NOT_CACHED, Extender, ExtenderError, extender_scores
from harmonic.extender.wire import WireError
from harmonic.framework.config import load_config
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import (
    PluginError,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.plugins.registry import in_tree_registry
from harmonic.testing import node, pod
from harmonic.testing.kubeshape import api_node, api_pod, extender_args, marshal


class FixedScore(ScorePlugin):
    """Scores from the node label ``score``."""

    NAME: ClassVar[str] = "FixedScore"

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        col = snap.label("score").integer_values()[0]
        return col[slots]


class HalfScore(ScorePlugin, PreScorePlugin):
    """Half of the ``score`` label; skipped (PreScore Skip) for pods labelled ``skip-half``."""

    NAME: ClassVar[str] = "HalfScore"

    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        return Status(Code.SKIP) if "skip-half" in pod.labels else None

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        return snap.label("score").integer_values()[0][slots] // 2


class ClusterSize(ScorePlugin):
    """Every node scores 10 per node in the snapshot: sensitive to nodes leaking between requests."""

    NAME: ClassVar[str] = "ClusterSize"

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        return np.full(len(slots), min(100, 10 * snap.num_nodes), dtype=np.int64)


class OnlyNodes(PreFilterPlugin):
    """PreFilter narrowing to the nodes listed in the pod's ``only`` annotation; ``reject`` rejects,
    ``error`` fails."""

    NAME: ClassVar[str] = "OnlyNodes"

    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        if "error" in pod.labels:
            raise PluginError("the model is unavailable")
        if "reject" in pod.labels:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "pod rejected by OnlyNodes")
        only = pod.annotations.get("only")
        return (PreFilterResult(frozenset(only.split(","))) if only else None), None


REGISTRY = in_tree_registry().merged([FixedScore, HalfScore, OnlyNodes, ClusterSize])


def make(plugins: list[dict[str, Any]], **kwargs: Any) -> Extender:
    cfg = {
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "multiPoint": {
                        "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"}, *plugins],
                        "disabled": [{"name": "*"}],
                    }
                },
            },
            {
                "schedulerName": "fit-only",
                "plugins": {
                    "multiPoint": {
                        "enabled": [
                            {"name": "PrioritySort"},
                            {"name": "DefaultBinder"},
                            {"name": "NodeResourcesFit"},
                        ],
                        "disabled": [{"name": "*"}],
                    }
                },
            },
        ]
    }
    return Extender(load_config(cfg, REGISTRY, source="<test>"), REGISTRY, **kwargs)


def nodes(*scores: int) -> list[dict[str, Any]]:
    return [api_node(node(f"n{i}").label("score", str(s)).obj()) for i, s in enumerate(scores)]


def call(ext: Extender, verb: str, p: dict[str, Any], ns: list[dict[str, Any]]) -> Any:
    return json.loads(getattr(ext, verb)(marshal(extender_args(api_pod(p), nodes=ns))))


# ---------------------------------------------------------------- score scaling
@pytest.mark.parametrize(
    ("total", "weight_sum", "expected"),
    [
        # One plugin of weight 1: score / 10 rounded half away from zero.
        ([0, 4, 5, 14, 15, 94, 95, 100], 1, [0, 0, 1, 1, 2, 9, 10, 10]),
        # Weights 3 + 1, mean 98 and 84.25 (see test_server's hand computation).
        ([392, 337], 4, [10, 8]),
        # Weight 2 total 2*45=90: mean 45 -> 4.5 -> 5.
        ([90], 2, [5]),
        # No plugin scored: all zero.
        ([0, 0], 0, [0, 0]),
    ],
)
def test_extender_scores_are_weighted_means_over_ten_rounded(total, weight_sum, expected):
    assert extender_scores(np.asarray(total, dtype=np.int64), weight_sum).tolist() == expected


def test_prioritize_uses_weights_and_leaves_out_skipped_plugins():
    ext = make([{"name": "FixedScore", "weight": 1}, {"name": "HalfScore", "weight": 3}])
    ns = nodes(0, 40, 100)
    # FixedScore s, HalfScore s//2 (weight 3): totals 0, 40+60=100, 100+150=250 over weights 4:
    # means 0, 25, 62.5 -> 0, 3 (2.5 rounds up), 6 (6.25).
    got = call(ext, "prioritize", pod("p").obj(), ns)
    assert got == [{"Host": "n0", "Score": 0}, {"Host": "n1", "Score": 3}, {"Host": "n2", "Score": 6}]
    # HalfScore skipped: only FixedScore (weight 1) counts: 0, 4, 10.
    got = call(ext, "prioritize", pod("p").label("skip-half", "y").obj(), ns)
    assert [h["Score"] for h in got] == [0, 4, 10]


def test_prioritize_plugin_error_is_extender_error():
    ext = make([{"name": "OnlyNodes"}, {"name": "FixedScore"}])
    with pytest.raises(ExtenderError, match="the model is unavailable"):
        call(ext, "prioritize", pod("p").label("error", "y").obj(), nodes(1, 2))


# ---------------------------------------------------------------- filter
def test_prefilter_narrowing_fails_the_rest_as_unresolvable():
    ext = make([{"name": "OnlyNodes"}, {"name": "NodeResourcesFit"}])
    p = pod("p").annotation("only", "n0,n2").req(cpu="1").obj()
    ns = nodes(0, 0, 0)
    ns[2]["status"]["allocatable"]["cpu"] = "500m"
    got = call(ext, "filter", p, ns)
    assert [n["metadata"]["name"] for n in got["Nodes"]["items"]] == ["n0"]
    # n2's request exceeds its whole allocatable: NodeResourcesFit reports that as unresolvable.
    assert got["FailedAndUnresolvableNodes"] == {
        "n1": "node(s) didn't satisfy plugin(s) [OnlyNodes]",
        "n2": "Insufficient cpu",
    }
    assert got["FailedNodes"] == {}


def test_prefilter_rejection_fails_every_node_with_its_status():
    ext = make([{"name": "OnlyNodes"}])
    got = call(ext, "filter", pod("p").label("reject", "y").obj(), nodes(0, 0))
    assert got["Nodes"]["items"] == []
    assert got["FailedAndUnresolvableNodes"] == {
        "n0": "pod rejected by OnlyNodes",
        "n1": "pod rejected by OnlyNodes",
    }


def test_plugin_error_is_the_filter_error_field():
    ext = make([{"name": "OnlyNodes"}])
    got = call(ext, "filter", pod("p").label("error", "y").obj(), nodes(0))
    assert got["Nodes"] is None and got["FailedNodes"] is None
    assert "the model is unavailable" in got["Error"]


def test_multiple_reasons_join_into_one_message():
    ext = make([{"name": "NodeResourcesFit"}])
    got = call(ext, "filter", pod("p").req(cpu="64", memory="1Ti").obj(), nodes(0))
    assert got["FailedAndUnresolvableNodes"] == {"n0": "Insufficient cpu, Insufficient memory"}


def test_profile_follows_scheduler_name_unless_pinned():
    p = pod("p").scheduler("fit-only").req(cpu="64").obj()
    ext = make([{"name": "FixedScore"}])
    assert call(ext, "filter", p, nodes(0))["FailedAndUnresolvableNodes"] == {"n0": "Insufficient cpu"}
    pinned = Extender(ext.config, REGISTRY, profile="default-scheduler")
    assert call(pinned, "filter", p, nodes(0))["FailedAndUnresolvableNodes"] == {}
    with pytest.raises(ValueError, match="no such profile"):
        Extender(ext.config, REGISTRY, profile="nope")


def test_cacheless_snapshot_follows_each_request_exactly():
    """Nodes from an earlier request must not leak into a later one (whole-cluster aggregates would
    see them), and a node whose resourceVersion changed is re-read."""
    ext = make([{"name": "NodeResourcesFit"}])
    first = nodes(0, 0, 0)
    call(ext, "filter", pod("p").obj(), first)
    assert ext.snapshot.num_nodes == 3
    call(ext, "filter", pod("p").obj(), first[:1])
    assert ext.snapshot.num_nodes == 1
    changed = json.loads(json.dumps(first[0]))
    changed["status"]["allocatable"]["cpu"] = "100m"
    changed["metadata"]["resourceVersion"] = "2000"
    got = call(ext, "filter", pod("p").req(cpu="1").obj(), [changed])
    assert got["FailedAndUnresolvableNodes"] == {"n0": "Insufficient cpu"}


def test_duplicate_node_names_are_answered_once():
    ext = make([{"name": "NodeResourcesFit"}])
    ns = nodes(0)
    got = call(ext, "prioritize", pod("p").obj(), [ns[0], ns[0]])
    assert [h["Host"] for h in got] == ["n0", "n0"]


def test_bad_pod_is_wire_error():
    ext = make([])
    with pytest.raises(WireError, match=r"Pod: .*spec.containers\[0\].resources.requests.cpu"):
        bad = api_pod(pod("p").obj())
        bad["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
        ext.filter(marshal(extender_args(bad, nodes=nodes(0))))


@settings(max_examples=25, deadline=None)
@given(
    history=st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=6, unique=True), max_size=5),
    final=st.lists(st.integers(0, 5), min_size=1, max_size=6, unique=True),
)
def test_cacheless_answers_do_not_depend_on_earlier_requests(history, final):
    """Same request, same answer (DESIGN invariant 4): the reused snapshot holds exactly the current
    request's nodes whatever came before."""
    pool = [
        api_node(node(f"n{i}").cap(cpu=str(1 + i % 3), memory=f"{2 + i}Gi").label("score", str(10 * i)).obj())
        for i in range(6)
    ]
    p = pod("p").req(cpu="1500m", memory="3Gi").obj()

    def extender() -> Extender:
        return make(
            [{"name": "NodeResourcesFit"}, {"name": "FixedScore", "weight": 2}, {"name": "ClusterSize"}]
        )

    used = extender()
    for subset in history:
        call(used, "filter", p, [pool[i] for i in subset])
    fresh = extender()
    request = [pool[i] for i in final]
    for verb in ("filter", "prioritize"):
        assert call(used, verb, p, request) == call(fresh, verb, p, request)


def cached_fit_extender() -> tuple[InMemoryCluster, Extender]:
    """An extender with NodeResourcesFit over a synced cache fed by an (empty) in-memory cluster."""
    cluster = InMemoryCluster()
    cache = ClusterCache()
    cluster.subscribe(cache.on_node, cache.on_pod)
    cache.mark_synced()
    return cluster, make([{"name": "NodeResourcesFit"}], cache=cache)


def test_same_node_names_resolve_again_after_nodes_change():
    """The node-names list is resolved once per content and per set of nodes: a node added or
    removed between two identical requests changes the answer."""
    cluster, ext = cached_fit_extender()
    cluster.add_node(node("a").cap(cpu="4", memory="8Gi", pods=10).obj())
    body = marshal(extender_args(api_pod(pod("p").req(cpu="1").obj()), node_names=["a", "b"]))

    def answer() -> tuple[list[str], dict[str, str]]:
        r = json.loads(ext.filter(body))
        return r["NodeNames"], r["FailedNodes"]

    assert answer() == (["a"], {"b": NODE_NOT_CACHED})
    assert answer() == (["a"], {"b": NODE_NOT_CACHED})  # same bytes: the remembered resolution
    cluster.add_node(node("b").cap(cpu="4", memory="8Gi", pods=10).obj())
    assert answer() == (["a", "b"], {})
    cluster.delete_node("a")
    assert answer() == (["b"], {"a": NODE_NOT_CACHED})
    prio = {h["Host"]: h["Score"] for h in json.loads(ext.prioritize(body))}
    assert prio["a"] == 0 and set(prio) == {"a", "b"}


# ---------------------------------------------------------------- preempt
def test_preempt_answers_with_the_profiles_own_minimal_victims_and_drops_unresolvable_nodes() -> None:
    """With DefaultPreemption in the profile, kube-scheduler's victims are replaced by the ones the
    profile's own dry run picks (here fewer: one 1-cpu pod frees room for a 1-cpu pod), and a node the
    profile rejects as UnschedulableAndUnresolvable (cordoned) is dropped whatever the victims."""
    cluster = InMemoryCluster()
    cache = ClusterCache()
    cluster.subscribe(cache.on_node, cache.on_pod)
    cluster.add_node(node("n0").cap(cpu="4", memory="8Gi", pods=110).obj())
    cluster.add_node(node("n1").cap(cpu="4", memory="8Gi", pods=110).unschedulable().obj())
    for n in ("n0", "n1"):
        for name, cpu, prio in (("lo0", "1", 0), ("lo1", "1", 1), ("lo2", "2", 2)):
            uid = f"{n}-{name}"
            cluster.create_pod(pod(uid).uid(uid).req(cpu=cpu).priority(prio).node(n).obj())
    cluster.create_pod(pod("p").uid("p").req(cpu="1").priority(100).obj())
    cache.mark_synced()
    ext = Extender(load_config(None, in_tree_registry()), in_tree_registry(), cache=cache)
    proposed = {
        n: {"Pods": [{"UID": f"{n}-{v}"} for v in ("lo0", "lo1", "lo2")], "NumPDBViolations": 0}
        for n in ("n0", "n1")
    }
    body = {"Pod": cluster.pods["default/p"], "NodeNameToMetaVictims": proposed}
    got = json.loads(ext.preempt(json.dumps(body).encode()))
    assert got == {"NodeNameToMetaVictims": {"n0": {"Pods": [{"UID": "n0-lo0"}], "NumPDBViolations": 0}}}


def test_a_changed_pod_between_requests_is_judged_as_it_now_is():
    """The pod of a filter is compiled once for its prioritize (same bytes); a pod whose bytes
    differ in the next request is compiled anew, never answered as the previous one."""
    cluster, ext = cached_fit_extender()
    cluster.add_node(node("a").cap(cpu="4", memory="8Gi", pods=10).obj())
    cluster.add_node(node("b").cap(cpu="2", memory="8Gi", pods=10).obj())

    def names(cpu: str) -> list[str]:
        body = marshal(extender_args(api_pod(pod("p").req(cpu=cpu).obj()), node_names=["a", "b"]))
        passed: list[str] = json.loads(ext.filter(body))["NodeNames"]
        assert {h["Host"] for h in json.loads(ext.prioritize(body))} == {"a", "b"}
        return passed

    assert names("1") == ["a", "b"]
    assert names("3") == ["a"]
    assert names("5") == []
    assert names("1") == ["a", "b"]
