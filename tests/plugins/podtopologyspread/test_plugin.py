"""PodTopologySpread behaviour beyond upstream's tables: the scheduler loop, defaults from workloads,
AddPod/RemovePod with cloned state and preemption, errors."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from harmonic.api.pod import parse_pod
from harmonic.api.selectors import IN, LabelSelector, Requirement
from harmonic.api.workloads import WorkloadIndex
from harmonic.conformance import build
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import PluginError
from harmonic.framework.status import Code
from harmonic.plugins.podtopologyspread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
)
from harmonic.plugins.podtopologyspread.constraints import default_selector
from harmonic.plugins.podtopologyspread.plugin import PRE_FILTER_KEY
from harmonic.testing import node, pod
from harmonic.testing.harness import Harness

ZONE = "topology.kubernetes.io/zone"
APP = {"matchLabels": {"app": "web"}}


def _zoned_nodes(zones: int = 3, per_zone: int = 2) -> list[dict[str, Any]]:
    return [node(f"n{z}-{i}").zone(f"z{z}").obj() for z in range(zones) for i in range(per_zone)]


def _plugin_case(pod_obj: dict[str, Any], nodes: list[dict[str, Any]], **extra: Any) -> Any:
    case = {"plugin": "PodTopologySpread", "pod": pod_obj, "nodes": nodes, "existingPods": [], **extra}
    plugin, p, snap, _ = build(case)
    assert isinstance(plugin, PodTopologySpread)
    return plugin, p, snap


def _zone_counts(h: Harness, prefix: str) -> Counter[str]:
    zones = {n["metadata"]["name"]: n["metadata"]["labels"].get(ZONE) for n in h.cluster.nodes.values()}
    return Counter(
        zones[node_name] for key, node_name in h.placement().items() if key.split("/")[1].startswith(prefix)
    )


def test_do_not_schedule_spreads_evenly_across_zones() -> None:
    h = Harness()
    h.add_nodes(_zoned_nodes())
    h.add_pods(pod(f"web-{i}").label("app", "web").spread(1, ZONE, selector=APP).obj() for i in range(9))
    h.schedule()
    assert _zone_counts(h, "web-") == {"z0": 3, "z1": 3, "z2": 3}


def test_unschedulable_pod_reports_upstream_reasons_and_retries_after_delete() -> None:
    h = Harness()
    h.add_nodes([node("a").zone("z1").obj(), node("b").zone("z2").obj(), node("c").obj()])
    # z1 already holds 2 matching pods, z2 none: with maxSkew 1 only z2 is allowed...
    h.add_pods(pod(f"old-{i}").label("app", "web").node("a").obj() for i in range(2))
    # ...and z2 is cordoned, so the pod fits nowhere.
    h.cluster.update_node(node("b").zone("z2").unschedulable().obj())
    h.add_pods([pod("new").label("app", "web").spread(1, ZONE, selector=APP).obj()])
    h.schedule()
    assert "new" not in {k.split("/")[1] for k in h.placement()}
    msg = h.failure("new")
    assert msg is not None
    assert f"1 {ERR_REASON_CONSTRAINTS_NOT_MATCH}" in msg
    assert f"1 {ERR_REASON_NODE_LABEL_NOT_MATCH}" in msg
    # One deletion leaves z1 one pod over z2 (skew 2 with the new pod); the second lets it bind to a.
    h.cluster.delete_pod("default", "old-0")
    h.settle(30)
    assert "default/new" not in h.placement()
    h.cluster.delete_pod("default", "old-1")
    h.settle(30)
    assert h.placement()["default/new"] == "a"


@pytest.mark.parametrize("with_service", [False, True])
def test_system_default_spreading_uses_the_service_selector(with_service: bool) -> None:
    h = Harness()
    # n2 is much bigger, so NodeResourcesFit alone puts every pod there; the system default hostname
    # spreading (weight 2) must spread the service's pods instead.
    h.add_nodes([node("n0").obj(), node("n1").obj(), node("n2").cap(cpu="64", memory="256Gi").obj()])
    if with_service:
        h.cluster.apply_workload(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web"},
                "spec": {"selector": {"app": "web"}},
            }
        )
    h.add_pods(pod(f"web-{i}").label("app", "web").req(cpu="100m").obj() for i in range(6))
    h.schedule()
    per_node = Counter(h.placement().values())
    assert per_node == ({"n0": 2, "n1": 2, "n2": 2} if with_service else {"n2": 6})


def test_missing_workloads_service_means_no_default_constraints() -> None:
    plugin, p, snap = _plugin_case(pod("p").label("app", "web").obj(), [node("a").obj()])
    assert plugin.pre_score(CycleState(), p, snap, np.asarray([snap.slot("a")])).code == Code.SKIP
    plugin, p, snap = _plugin_case(
        pod("p").label("app", "web").obj(),
        [node("a").obj()],
        objects=[{"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {"app": "web"}}}],
    )
    assert plugin.pre_score(CycleState(), p, snap, np.asarray([snap.slot("a")])) is None


def _owned(kind: str, api_version: str, name: str = "ctrl") -> Any:
    raw = pod("p").label("app", "web").label("tier", "fe").obj()
    raw["metadata"]["ownerReferences"] = [
        {"apiVersion": api_version, "kind": kind, "name": name, "uid": "u", "controller": True}
    ]
    return parse_pod(raw)


def _req(key: str, value: str) -> Requirement:
    return Requirement(key, IN, frozenset((value,)))


@pytest.mark.parametrize(
    ("objects", "owner", "want"),
    [
        ([], None, ()),
        (
            [{"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {"app": "web"}}}],
            None,
            (_req("app", "web"),),
        ),
        # A service that does not select the pod, and one with no selector, contribute nothing.
        (
            [
                {"kind": "Service", "metadata": {"name": "s1"}, "spec": {"selector": {"app": "db"}}},
                {"kind": "Service", "metadata": {"name": "s2"}, "spec": {}},
            ],
            None,
            (),
        ),
        (
            [
                {
                    "kind": "ReplicationController",
                    "metadata": {"name": "ctrl"},
                    "spec": {"selector": {"tier": "fe"}},
                }
            ],
            ("ReplicationController", "v1"),
            (_req("tier", "fe"),),
        ),
        (
            [
                {"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {"app": "web"}}},
                {
                    "kind": "ReplicaSet",
                    "metadata": {"name": "ctrl"},
                    "spec": {"selector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}},
                },
            ],
            ("ReplicaSet", "apps/v1"),
            (_req("app", "web"), Requirement("tier", "Exists", frozenset())),
        ),
        (
            [
                {
                    "kind": "StatefulSet",
                    "metadata": {"name": "ctrl"},
                    "spec": {"selector": {"matchLabels": {"tier": "fe"}}},
                }
            ],
            ("StatefulSet", "apps/v1"),
            (_req("tier", "fe"),),
        ),
        # The owner's API group must match: an extensions/v1beta1 ReplicaSet is not looked up.
        (
            [
                {
                    "kind": "ReplicaSet",
                    "metadata": {"name": "ctrl"},
                    "spec": {"selector": {"matchLabels": {"tier": "fe"}}},
                }
            ],
            ("ReplicaSet", "extensions/v1beta1"),
            (),
        ),
        # The owner is looked up in the pod's namespace only.
        (
            [
                {
                    "kind": "ReplicaSet",
                    "metadata": {"name": "ctrl", "namespace": "other"},
                    "spec": {"selector": {"matchLabels": {"tier": "fe"}}},
                }
            ],
            ("ReplicaSet", "apps/v1"),
            (),
        ),
    ],
)
def test_default_selector(
    objects: list[Any], owner: tuple[str, str] | None, want: tuple[Requirement, ...]
) -> None:
    p = _owned(*owner) if owner else parse_pod(pod("p").label("app", "web").label("tier", "fe").obj())
    got = default_selector(p, WorkloadIndex.from_objects(objects))
    assert got == LabelSelector(want)


def test_filter_without_prefilter_is_an_error() -> None:
    plugin, p, snap = _plugin_case(pod("p").spread(1, ZONE, selector=APP).obj(), [node("a").zone("z").obj()])
    with pytest.raises(PluginError, match="PreFilterPodTopologySpread"):
        plugin.filter(CycleState(), p, snap, np.asarray([snap.slot("a")]))


def test_malformed_constraint_is_an_error_naming_the_field() -> None:
    raw = pod("p").spread(1, ZONE, selector=APP).obj()
    raw["spec"]["topologySpreadConstraints"][0]["maxSkew"] = "one"
    plugin, p, snap = _plugin_case(raw, [node("a").obj()])
    _, st = plugin.pre_filter(CycleState(), p, snap)
    assert st is not None and st.code == Code.ERROR
    assert "Pod default/p: spec.topologySpreadConstraints[0].maxSkew: 'one' is not an integer" in st.message


def test_add_remove_pod_on_a_clone_leave_the_original_alone() -> None:
    nodes = [node("a").zone("z1").obj(), node("b").zone("z2").obj()]
    existing = [pod("e").label("app", "web").node("a").obj()]
    plugin, p, snap = _plugin_case(
        pod("p").label("app", "web").spread(1, ZONE, selector=APP).obj(), nodes, existingPods=existing
    )
    state = CycleState()
    assert plugin.pre_filter(state, p, snap) == (None, None)
    slots = np.asarray([snap.slot("a"), snap.slot("b")])
    v = plugin.filter(state, p, snap, slots)
    assert v is not None and list(v.code) == [Code.UNSCHEDULABLE, 0]
    victim = parse_pod(existing[0])
    what_if = state.clone()
    plugin.remove_pod(what_if, p, victim, snap.slot("a"))
    assert plugin.filter(what_if, p, snap, slots) is None
    # The original cycle state still sees the victim.
    assert plugin.filter(state, p, snap, slots) is not None
    plugin.add_pod(what_if, p, victim, snap.slot("a"))
    assert (
        state.read(PRE_FILTER_KEY).domains[0].counts.tolist()
        == what_if.read(PRE_FILTER_KEY).domains[0].counts.tolist()
    )


def test_preemption_evicts_the_pods_that_make_the_skew() -> None:
    """Only spreading blocks the pod on a; DefaultPreemption's dry run (RemovePod on our state) must
    find that evicting both lower-priority matching pods there lets it fit (b is tainted: unresolvable)."""
    h = Harness()
    h.add_nodes([node("a").zone("z1").obj(), node("b").zone("z2").taint("dedicated").obj()])
    h.add_pods(pod(f"low-{i}").label("app", "web").priority(0).node("a").obj() for i in range(2))
    h.add_pods([pod("high").label("app", "web").priority(100).spread(1, ZONE, selector=APP).obj()])
    h.settle(30)
    assert h.placement() == {"default/high": "a"}
    assert sorted(e.name for e in h.cluster.events if e.reason == "Preempted") == ["low-0", "low-1"]
