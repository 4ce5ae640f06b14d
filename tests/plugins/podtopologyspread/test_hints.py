"""Queueing hints, translated from upstream plugin_test.go (Test_isSchedulableAfterNodeChange,
Test_isSchedulableAfterPodChange)."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.framework.events import Hint
from harmonic.plugins.podtopologyspread import PodTopologySpread, PodTopologySpreadArgs
from harmonic.testing import pod

FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
Q, SKIP = Hint.QUEUE, Hint.SKIP


class _NoServices:
    def service(self, name: str) -> Any:
        raise KeyError(name)


PLUGIN = PodTopologySpread(PodTopologySpreadArgs(defaulting_type="List"), _NoServices())  # type: ignore[arg-type]


def _zone(p: Any, taints: str | None = None) -> Any:
    extra = {"nodeTaintsPolicy": taints} if taints else {}
    return p.spread(1, "zone", "DoNotSchedule", FOO, **extra)


def _zone_node(p: Any) -> Any:
    return _zone(p).spread(1, "node", "DoNotSchedule", FOO)


def _n(**labels: str) -> dict[str, Any]:
    """st.MakeNode().Name("node-a") with exactly these labels."""
    return {"metadata": {"name": "node-a", "labels": dict(labels)}}


def _tainted(raw: dict[str, Any], key: str) -> dict[str, Any]:
    return {**raw, "spec": {"taints": [{"key": key, "value": "bbb", "effect": "NoSchedule"}]}}


NODE_CASES = [
    ("node updates label which matches topologyKey", _zone(pod("p")), _n(zone="zone1"), _n(zone="zone2"), Q),
    (
        "node that doesn't match topologySpreadConstraints updates non-related label",
        _zone(pod("p")),
        _n(foo="bar1"),
        _n(foo="bar2"),
        SKIP,
    ),
    (
        "node that match topologySpreadConstraints adds non-related label",
        _zone_node(pod("p")),
        _n(zone="zone1", node="node1", foo="bar"),
        _n(zone="zone1", node="node1"),
        SKIP,
    ),
    ("create node with non-related labels", _zone(pod("p")), None, _n(foo="bar"), SKIP),
    ("create node with related labels", _zone(pod("p")), None, _n(zone="zone1"), Q),
    ("delete node with non-related labels", _zone(pod("p")), _n(foo="bar"), None, SKIP),
    ("delete node with related labels", _zone(pod("p")), _n(zone="zone1"), None, Q),
    (
        "add node with related labels that only match one of topologySpreadConstraints",
        _zone_node(pod("p")),
        None,
        _n(zone="zone1"),
        SKIP,
    ),
    (
        "add node with related labels that match all topologySpreadConstraints",
        _zone_node(pod("p")),
        None,
        _n(zone="zone1", node="node1"),
        Q,
    ),
    (
        "update node with related labels that only match one of topologySpreadConstraints",
        _zone_node(pod("p")),
        _n(zone="zone1"),
        _n(zone="zone1"),
        SKIP,
    ),
    (
        "update node with related labels that match all topologySpreadConstraints",
        _zone_node(pod("p")),
        _n(zone="zone1", node="node1"),
        _n(zone="zone1", node="node2"),
        Q,
    ),
    (
        "update node with different taints that match all topologySpreadConstraints",
        _zone_node(pod("p")),
        _tainted(_n(zone="zone1", node="node1"), "aaa"),
        _tainted(_n(zone="zone1", node="node1"), "ccc"),
        Q,
    ),
    (
        "update node with different taints that only match one of topologySpreadConstraints",
        _zone_node(pod("p")),
        _tainted(_n(node="node1"), "aaa"),
        _tainted(_n(node="node1"), "ccc"),
        SKIP,
    ),
]


@pytest.mark.parametrize(("name", "p", "old", "new", "want"), NODE_CASES, ids=[c[0] for c in NODE_CASES])
def test_after_node_change(name: str, p: Any, old: Any, new: Any, want: Hint) -> None:
    got = PLUGIN._after_node_change(
        parse_pod(p.obj()),
        parse_node(old) if old is not None else None,
        parse_node(new) if new is not None else None,
    )
    assert got == want


def _spreading() -> Any:
    return _zone(pod("p").uid("p").label("foo", ""))


def _two(taints: str | None = None) -> Any:
    return _zone(pod("p").uid("p").label("foo", ""), taints).spread(1, "node", "DoNotSchedule", BAR)


def _other(*labels: tuple[str, str], bound: bool = True, ns: str = "default") -> Any:
    b = pod("q").ns(ns).uid("p2")
    for k, v in labels:
        b.label(k, v)
    return b.node("fake-node") if bound else b


POD_CASES = [
    (
        "add pod with labels match topologySpreadConstraints selector",
        _spreading(),
        None,
        _other(("foo", "")),
        Q,
    ),
    ("add un-scheduled pod", _spreading(), None, _other(("foo", ""), bound=False), SKIP),
    (
        "update un-scheduled pod",
        _spreading(),
        _other(("bar", ""), bound=False),
        _other(("foo", ""), bound=False),
        SKIP,
    ),
    ("delete un-scheduled pod", _spreading(), _other(("foo", ""), bound=False), None, SKIP),
    ("add pod with different namespace", _spreading(), None, _other(("foo", ""), ns="fake-namespace"), SKIP),
    (
        "add pod with labels don't match topologySpreadConstraints selector",
        _spreading(),
        None,
        _other(("bar", "")),
        SKIP,
    ),
    (
        "delete pod with labels that match topologySpreadConstraints selector",
        _spreading(),
        _other(("foo", "")),
        None,
        Q,
    ),
    (
        "delete pod with labels that don't match topologySpreadConstraints selector",
        _spreading(),
        _other(("bar", "")),
        None,
        SKIP,
    ),
    (
        "update pod's non-related label",
        _spreading(),
        _other(("foo", ""), ("bar", "bar1")),
        _other(("foo", ""), ("bar", "bar2")),
        SKIP,
    ),
    (
        "add pod's label that matches topologySpreadConstraints selector",
        _spreading(),
        _other(),
        _other(("foo", "")),
        Q,
    ),
    (
        "delete pod label that matches topologySpreadConstraints selector",
        _spreading(),
        _other(("foo", "")),
        _other(),
        Q,
    ),
    (
        "change pod's label that matches topologySpreadConstraints selector",
        _spreading(),
        _other(("foo", "foo1")),
        _other(("foo", "foo2")),
        SKIP,
    ),
    (
        "change pod's label that doesn't match topologySpreadConstraints selector",
        _spreading(),
        _other(("foo", ""), ("bar", "bar1")),
        _other(("foo", ""), ("bar", "bar2")),
        SKIP,
    ),
    (
        "add pod's label that matches topologySpreadConstraints selector with multi topologySpreadConstraints",
        _two(),
        _other(("foo", "")),
        _other(("foo", ""), ("bar", "bar2")),
        Q,
    ),
    (
        "change pod's label that doesn't match topologySpreadConstraints selector with multi topologySpreadConstraints",
        _two(),
        _other(("foo", "")),
        _other(("foo", ""), ("baz", "")),
        SKIP,
    ),
    (
        "change pod's label that match topologySpreadConstraints selector with multi topologySpreadConstraints",
        _two(),
        _other(("foo", ""), ("bar", "")),
        _other(("foo", ""), ("bar", "bar2")),
        SKIP,
    ),
    (
        "the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor and has got a new toleration",
        _two("Honor"),
        pod("p").uid("p").label("foo", ""),
        pod("p").uid("p").label("foo", "").tolerate("node.kubernetes.io/unschedulable", operator="Exists"),
        Q,
    ),
    (
        "the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor and has got a new toleration",
        _two("Ignore"),
        pod("p").uid("p").label("foo", ""),
        pod("p").uid("p").label("foo", "").tolerate("node.kubernetes.io/unschedulable", operator="Exists"),
        SKIP,
    ),
    (
        "the unschedulable Pod has topologySpreadConstraint and has got a new label matching the selector of the constraint",
        _two("Ignore"),
        pod("p").uid("p"),
        pod("p").uid("p").label("foo", ""),
        Q,
    ),
    (
        "the unschedulable Pod has topologySpreadConstraint and has got a new unrelated label",
        _two("Ignore"),
        pod("p").uid("p"),
        pod("p").uid("p").label("unrelated", ""),
        SKIP,
    ),
]


@pytest.mark.parametrize(("name", "p", "old", "new", "want"), POD_CASES, ids=[c[0] for c in POD_CASES])
def test_after_pod_change(name: str, p: Any, old: Any, new: Any, want: Hint) -> None:
    got = PLUGIN._after_pod_change(
        parse_pod(p.obj()),
        parse_pod(old.obj()) if old is not None else None,
        parse_pod(new.obj()) if new is not None else None,
    )
    assert got == want
