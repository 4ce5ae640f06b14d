"""Upstream tests that assert InterPodAffinity's internal state rather than a per-node result:
filtering_test.go's TestPreFilterStateAddRemovePod, TestGetTPMapMatchingIncomingAffinityAntiAffinity,
TestPreFilterStateClone and TestPreFilterDisabled, and scoring_test.go's invalid-selector PreScore cases.

Our PreFilter state keeps domain counts per topology key as arrays over label-value codes; ``_pairs``
turns them back into upstream's ``topologyToMatchedTermCount`` maps (non-zero entries only, as upstream
deletes entries that reach zero).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from harmonic.api.pod import parse_pod
from harmonic.conformance import build
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import PluginError
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code
from harmonic.plugins.interpodaffinity import InterPodAffinity
from harmonic.plugins.interpodaffinity.domains import DomainMapper
from harmonic.plugins.interpodaffinity.filtering import PreFilterState, compute
from harmonic.plugins.interpodaffinity.plugin import PRE_FILTER_KEY
from harmonic.plugins.interpodaffinity.terms import merge_all, pod_terms
from harmonic.testing import node, pod

Pairs = dict[tuple[str, str], int]
REQ = "requiredDuringSchedulingIgnoredDuringExecution"


def _pairs(table: dict[str, np.ndarray], snap: Snapshot) -> Pairs:
    out: Pairs = {}
    for key, dom in table.items():
        values = {code: v for v, code in snap.label(key).vocab.items()}
        for code in np.flatnonzero(dom):
            out[(key, values[int(code)])] = int(dom[code])
    return out


def _maps(s: PreFilterState, snap: Snapshot) -> tuple[Pairs, Pairs, Pairs]:
    return _pairs(s.existing, snap), _pairs(s.affinity, snap), _pairs(s.anti, snap)


def _sel(key: str, op: str, values: list[str]) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": op, "values": values}]}


ANTI_FOO_BAR = {REQ: [{"labelSelector": _sel("foo", "In", ["bar"]), "topologyKey": "region"}]}
COMPLEX_TERMS = [
    {"labelSelector": _sel("foo", "In", ["bar", "buzz"]), "topologyKey": "region"},
    {"labelSelector": _sel("service", "NotIn", ["bar", "security", "test"]), "topologyKey": "zone"},
]
ANTI_COMPLEX = {REQ: COMPLEX_TERMS}
AFF_COMPLEX = {REQ: COMPLEX_TERMS}
NODES = [
    node("nodeA").labels({"region": "r1", "zone": "z11"}).obj(),
    node("nodeB").labels({"region": "r1", "zone": "z12"}).obj(),
    node("nodeC").labels({"region": "r2", "zone": "z21"}).obj(),
]


def _p(
    name: str, labels: dict[str, str] | None = None, node_name: str = "", **affinity: Any
) -> dict[str, Any]:
    b = pod(name).labels(labels or {})
    if node_name:
        b.node(node_name)
    raw = b.obj()
    if affinity:
        raw["spec"]["affinity"] = affinity
    return raw


FOO_BAR = {"foo": "bar"}
ADD_REMOVE_CASES = [
    (
        "preFilterState anti-affinity terms are updated correctly after adding and removing a pod",
        _p("pending", FOO_BAR, podAntiAffinity=ANTI_FOO_BAR),
        [_p("p1", FOO_BAR, "nodeA"), _p("p2", None, "nodeC", podAntiAffinity=ANTI_FOO_BAR)],
        _p("addedPod", FOO_BAR, "nodeB", podAntiAffinity=ANTI_FOO_BAR),
        {("region", "r1"): 2},
        {},
    ),
    (
        "preFilterState anti-affinity terms are updated correctly after adding and removing a pod (complex)",
        _p("pending", FOO_BAR, podAntiAffinity=ANTI_COMPLEX),
        [_p("p1", FOO_BAR, "nodeA"), _p("p2", None, "nodeC", podAntiAffinity=ANTI_FOO_BAR)],
        _p("addedPod", FOO_BAR, "nodeA", podAntiAffinity=ANTI_COMPLEX),
        {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1},
        {},
    ),
    (
        "preFilterState matching pod affinity and anti-affinity are updated correctly after adding and removing a pod",
        _p("pending", FOO_BAR, podAffinity=AFF_COMPLEX),
        [
            _p("p1", FOO_BAR, "nodeA"),
            _p("p2", None, "nodeC", podAntiAffinity=ANTI_FOO_BAR, podAffinity=AFF_COMPLEX),
        ],
        _p("addedPod", FOO_BAR, "nodeA", podAntiAffinity=ANTI_COMPLEX),
        {},
        {("region", "r1"): 2, ("zone", "z11"): 2},
    ),
]


def _pre_filter(
    pending: dict[str, Any], pods: list[dict[str, Any]]
) -> tuple[Any, CycleState, PreFilterState, Snapshot]:
    plugin, p, snap, _ = build(
        {"plugin": "InterPodAffinity", "pod": pending, "nodes": NODES, "existingPods": pods}
    )
    state = CycleState()
    _, st = plugin.pre_filter(state, p, snap)
    assert st is None, st
    s = state.read(PRE_FILTER_KEY)
    assert isinstance(s, PreFilterState)
    return plugin, state, s, snap


@pytest.mark.parametrize(
    ("name", "pending", "pods", "added", "want_anti", "want_affinity"),
    ADD_REMOVE_CASES,
    ids=[c[0] for c in ADD_REMOVE_CASES],
)
def test_pre_filter_state_add_remove_pod(
    name: str,
    pending: dict[str, Any],
    pods: list[dict[str, Any]],
    added: dict[str, Any],
    want_anti: Pairs,
    want_affinity: Pairs,
) -> None:
    _, _, all_pods_state, all_snap = _pre_filter(pending, [*pods, added])
    plugin, state, s, snap = _pre_filter(pending, pods)
    original = s.clone()
    incoming, other = parse_pod(pending), parse_pod(added)
    slot = snap.slot(added["spec"]["nodeName"])
    assert plugin.add_pod(state, incoming, other, slot) is None
    _, affinity, anti = _maps(s, snap)
    assert anti == want_anti
    assert affinity == want_affinity
    assert _maps(s, snap) == _maps(all_pods_state, all_snap)
    assert plugin.remove_pod(state, incoming, other, slot) is None
    assert _maps(s, snap) == _maps(original, snap)


def _normal(*labels: str) -> dict[str, Any]:
    return _p("normal", dict.fromkeys(labels, ""), "nodeA")


def _exists(key: str) -> dict[str, Any]:
    return {
        "labelSelector": {"matchExpressions": [{"key": key, "operator": "Exists"}]},
        "topologyKey": "hostname",
    }


def _incoming(name: str, affinity: list[str], anti: list[str]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if affinity:
        spec["podAffinity"] = {REQ: [_exists(k) for k in affinity]}
    if anti:
        spec["podAntiAffinity"] = {REQ: [_exists(k) for k in anti]}
    return _p(name, **spec)


HOST_A = {("hostname", "nodeA"): 1}
TP_MAP_CASES = [
    ("nil test", [], _p("aaa-normal"), {}, {}),
    (
        "incoming pod without affinity/anti-affinity causes a no-op",
        [_normal("aaa")],
        _p("aaa-normal"),
        {},
        {},
    ),
    (
        "no pod has label that violates incoming pod's affinity and anti-affinity",
        [_normal("bbb")],
        _incoming("aaa-anti", ["aaa"], ["aaa"]),
        {},
        {},
    ),
    (
        "existing pod matches incoming pod's affinity and anti-affinity - single term case",
        [_normal("aaa")],
        _incoming("affi-antiaffi", ["aaa"], ["aaa"]),
        HOST_A,
        HOST_A,
    ),
    (
        "existing pod matches incoming pod's affinity and anti-affinity - multiple terms case",
        [_normal("aaa", "bbb")],
        _incoming("affi-antiaffi", ["aaa", "bbb"], ["aaa"]),
        {("hostname", "nodeA"): 2},
        HOST_A,
    ),
    (
        "existing pod not match incoming pod's affinity but matches anti-affinity",
        [_normal("aaa")],
        _incoming("affi-antiaffi", ["aaa", "bbb"], ["aaa", "bbb"]),
        {},
        HOST_A,
    ),
    (
        "incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 1",
        [_normal("aaa", "bbb")],
        _incoming("anaffi-antiaffiti", ["aaa", "ccc"], ["aaa", "ccc"]),
        {},
        HOST_A,
    ),
    (
        "incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 2",
        [_normal("bbb")],
        _incoming("affi-antiaffi", ["aaa", "bbb"], ["aaa", "bbb"]),
        {},
        HOST_A,
    ),
]


@pytest.mark.parametrize(
    ("name", "pods", "incoming", "want_affinity", "want_anti"), TP_MAP_CASES, ids=[c[0] for c in TP_MAP_CASES]
)
def test_incoming_affinity_anti_affinity_counts(
    name: str, pods: list[dict[str, Any]], incoming: dict[str, Any], want_affinity: Pairs, want_anti: Pairs
) -> None:
    """TestGetTPMapMatchingIncomingAffinityAntiAffinity (getIncomingAffinityAntiAffinityCounts)."""
    _, p, snap, _ = build(
        {
            "plugin": "InterPodAffinity",
            "pod": incoming,
            "nodes": [node("nodeA").labels({"hostname": "nodeA"}).obj()],
            "existingPods": pods,
        }
    )
    terms = pod_terms(p)
    s = compute(
        snap,
        DomainMapper(snap),
        p,
        merge_all(terms.required_affinity, None),
        merge_all(terms.required_anti, None),
        {},
    )
    assert _pairs(s.affinity, snap) == want_affinity
    assert _pairs(s.anti, snap) == want_anti


def test_pre_filter_state_clone() -> None:
    """TestPreFilterStateClone: the clone is a different object with equal, independent counts."""
    _, _, s, snap = _pre_filter(ADD_REMOVE_CASES[1][1], ADD_REMOVE_CASES[1][2])
    c = s.clone()
    assert c is not s
    assert _maps(c, snap) == _maps(s, snap)
    next(iter(c.anti.values()))[0] += 5
    assert _maps(c, snap) != _maps(s, snap)


def test_filter_without_pre_filter_state() -> None:
    """TestPreFilterDisabled."""
    plugin, p, snap, _ = build({"plugin": "InterPodAffinity", "pod": _p("p"), "nodes": [node("n").obj()]})
    assert isinstance(plugin, InterPodAffinity)
    with pytest.raises(
        PluginError, match='error reading "PreFilterInterPodAffinity" from cycleState: not found'
    ):
        plugin.filter(CycleState(), p, snap, np.asarray([snap.slot("n")]))


BAD_AFFINITY = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 8,
                "podAffinityTerm": {
                    "labelSelector": _sel("security", "In", ["{{.bad-value.}}"]),
                    "topologyKey": "region",
                },
            }
        ]
    }
}
BAD_ANTI = {
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 5,
                "podAffinityTerm": {
                    "labelSelector": _sel("security", "In", ["{{.bad-value.}}"]),
                    "topologyKey": "az",
                },
            }
        ]
    }
}


@pytest.mark.parametrize(
    ("name", "affinity"),
    [("invalid Affinity fails PreScore", BAD_AFFINITY), ("invalid AntiAffinity fails PreScore", BAD_ANTI)],
)
def test_invalid_selector_fails_pre_score(name: str, affinity: dict[str, Any]) -> None:
    """scoring_test.go: Error, with the invalid value in the message."""
    raw = _p("p")
    raw["spec"]["affinity"] = affinity
    nodes = [node("node1").label("region", "China").obj(), node("node2").label("region", "China").obj()]
    plugin, p, snap, _ = build(
        {"plugin": "InterPodAffinity", "pod": raw, "nodes": nodes, "args": {"hardPodAffinityWeight": 1}}
    )
    st = plugin.pre_score(CycleState(), p, snap, np.asarray([snap.slot("node1"), snap.slot("node2")]))
    assert st is not None
    assert st.code == Code.ERROR
    assert 'Invalid value: "{{.bad-value.}}"' in st.message
