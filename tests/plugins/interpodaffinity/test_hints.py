"""Queueing hints, translated from upstream plugin_test.go (Test_isSchedulableAfterPodChange,
Test_isSchedulableAfterNodeChange). Pods upstream leaves unnamed get names; ``UID`` as upstream's."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.framework.events import Action, Hint, Resource
from harmonic.framework.services import NAMESPACES, ServiceAccess
from harmonic.plugins.interpodaffinity import InterPodAffinity, InterPodAffinityArgs
from harmonic.testing import pod

Q, SKIP = Hint.QUEUE, Hint.SKIP
REQ = "requiredDuringSchedulingIgnoredDuringExecution"


class _Handle(ServiceAccess):
    """SetupPluginWithInformers with upstream's ``namespaces`` objects."""

    def service_map(self) -> dict[str, Any]:
        team1, team2 = {"team": "team1"}, {"team": "team2"}
        return {
            NAMESPACES.name: {
                "subteam1.team1": team1,
                "subteam2.team1": team1,
                "subteam1.team2": team2,
                "subteam2.team2": team2,
            }
        }


PLUGIN = InterPodAffinity(InterPodAffinityArgs(), _Handle())  # type: ignore[arg-type]


def _term(key: str, op: str, values: list[str] | None, topology: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values is not None:
        e["values"] = values
    return {"labelSelector": {"matchExpressions": [e]}, "topologyKey": topology}


class P:
    """st.MakePod() with the (anti-)affinity helpers the hint tables use."""

    def __init__(self, name: str) -> None:
        self.b = pod(name)
        self.affinity: dict[str, Any] = {}

    def uid(self, uid: str) -> P:
        self.b.uid(uid)
        return self

    def node(self, name: str) -> P:
        self.b.node(name)
        return self

    def label(self, k: str, v: str) -> P:
        self.b.label(k, v)
        return self

    def _add(self, kind: str, term: dict[str, Any]) -> P:
        self.affinity.setdefault(kind, {}).setdefault(REQ, []).append(term)
        return self

    def affinity_in(self, k: str, topology: str, values: list[str]) -> P:
        return self._add("podAffinity", _term(k, "In", values, topology))

    def affinity_exists(self, k: str, topology: str) -> P:
        return self._add("podAffinity", _term(k, "Exists", None, topology))

    def anti_in(self, k: str, topology: str, values: list[str]) -> P:
        return self._add("podAntiAffinity", _term(k, "In", values, topology))

    def anti(self, topology: str, selector: dict[str, Any]) -> P:
        return self._add("podAntiAffinity", {"labelSelector": selector, "topologyKey": topology})

    def obj(self) -> dict[str, Any]:
        raw = self.b.obj()
        if self.affinity:
            raw["spec"]["affinity"] = self.affinity
        return raw


SCAN = ["securityscan", "value2"]


def _target_aff() -> P:
    return P("p").uid("p").affinity_in("service", "region", SCAN)


def _target_anti() -> P:
    return P("p").uid("p").anti_in("service", "region", SCAN)


def _other(*labels: tuple[str, str], bound: bool = True) -> P:
    p = P("other").uid("other")
    for k, v in labels:
        p.label(k, v)
    return p.node("fake-node") if bound else p


POD_CASES = [
    ("add a pod which matches the pod affinity", _target_aff(), None, _other(("service", "securityscan")), Q),
    ("add an un-scheduled pod", _target_aff(), None, _other(("service", "securityscan"), bound=False), SKIP),
    ("add a pod which doesn't match the pod affinity", _target_aff(), None, _other(("aaa", "a")), SKIP),
    (
        "update a pod from non-match to match pod affinity",
        _target_aff(),
        _other(("aaa", "a")),
        _other(("service", "securityscan")),
        Q,
    ),
    (
        "the updating pod matches target pod's affinity both before and after label changes",
        _target_aff(),
        _other(("service", "value2")),
        _other(("service", "securityscan")),
        SKIP,
    ),
    (
        "update an un-scheduled pod",
        _target_aff(),
        _other(("aaa", "a"), bound=False),
        _other(("service", "securityscan"), bound=False),
        SKIP,
    ),
    (
        "update a pod from match to non-match the pod affinity",
        _target_aff(),
        _other(("service", "securityscan")),
        _other(("aaa", "a")),
        SKIP,
    ),
    (
        "update a pod from match to non-match pod's affinity - multiple terms case",
        P("p").uid("p").affinity_exists("aaa", "hostname").affinity_exists("bbb", "hostname"),
        _other(("aaa", "a")),
        _other(("service", "securityscan")),
        SKIP,
    ),
    (
        "update a pod from non-match to match pod's affinity - multiple terms case",
        P("p").uid("p").affinity_exists("aaa", "hostname").affinity_exists("bbb", "hostname"),
        _other(("aaa", "a")),
        _other(("aaa", ""), ("bbb", "")),
        Q,
    ),
    (
        "updated pod is the target pod",
        P("p").uid("p").label("foo", "baz"),
        P("p").uid("p").label("foo", "bar"),
        P("p").uid("p").label("foo", "baz"),
        Q,
    ),
    (
        "modify pod label to change it from satisfying pod anti-affinity to not satisfying anti-affinity",
        _target_anti(),
        _other(("service", "securityscan")),
        _other(("service", "aaaa")),
        Q,
    ),
    (
        "modify pod label to change it from not satisfying pod anti-affinity to satisfying anti-affinity",
        _target_anti(),
        _other(("service", "bbb")),
        _other(("service", "securityscan")),
        SKIP,
    ),
    (
        "delete a pod which doesn't match pod's anti-affinity",
        _target_anti(),
        _other(("aaa", "a")),
        None,
        SKIP,
    ),
    (
        "delete a pod which matches pod's anti-affinity",
        _target_anti(),
        _other(("service", "securityscan")),
        None,
        Q,
    ),
    (
        "delete a pod with anti-affinity that matches pending pod",
        P("p").label("service", "securityscan"),
        P("other").node("fake-node").anti_in("service", "region", SCAN),
        None,
        Q,
    ),
    (
        "delete a pod with anti-affinity that doesn't match pending pod",
        P("p").label("service", "foo"),
        P("other").node("fake-node").anti_in("service", "region", SCAN),
        None,
        SKIP,
    ),
    (
        "delete a pod which doesn't match pending pod's anti-affinity and has anti-affinity that doesn't match pending pod",
        P("p").anti_in("service", "region", SCAN).label("service", "foo"),
        P("other").node("fake-node").anti_in("service", "region", SCAN).label("service", "foo"),
        None,
        SKIP,
    ),
]


@pytest.mark.parametrize(("name", "target", "old", "new", "want"), POD_CASES, ids=[c[0] for c in POD_CASES])
def test_after_pod_change(name: str, target: P, old: P | None, new: P | None, want: Hint) -> None:
    got = PLUGIN._after_pod_change(
        parse_pod(target.obj()),
        parse_pod(old.obj()) if old is not None else None,
        parse_pod(new.obj()) if new is not None else None,
    )
    assert got == want


def _n(**labels: str) -> dict[str, Any]:
    """st.MakeNode().Name("node-a") with exactly these labels."""
    return {"metadata": {"name": "node-a", "labels": dict(labels)}}


def _aff_zone() -> P:
    return P("p").affinity_in("service", "zone", SCAN)


ANOTHER = {"matchLabels": {"another": "label"}}


def _anti_zone() -> P:
    return P("p").anti("zone", ANOTHER)


NODE_CASES = [
    ("add a new node with matched pod affinity topologyKey", _aff_zone(), None, _n(zone="zone1"), Q),
    (
        "add a new node without matched topologyKey",
        P("p").affinity_in("service", "region", SCAN),
        None,
        _n(zone="zone1"),
        SKIP,
    ),
    ("update node label but not topologyKey", _aff_zone(), _n(aaa="a"), _n(aaa="b"), SKIP),
    (
        "update node label that isn't related to the pod affinity",
        _aff_zone(),
        _n(zone="zone1"),
        _n(zone="zone1", **{"unrelated-label": "unrelated"}),
        SKIP,
    ),
    (
        "update node with different affinity topologyKey value",
        _aff_zone(),
        _n(zone="zone1"),
        _n(zone="zone2"),
        Q,
    ),
    ("update node to have the affinity topology label", _aff_zone(), _n(aaa="a"), _n(zone="zone1"), Q),
    ("add a new node with matched pod anti-affinity topologyKey", _anti_zone(), None, _n(zone="zone1"), Q),
    ("add a new node without matched pod anti-affinity topologyKey", _anti_zone(), None, _n(), Q),
    (
        "update node label that isn't related to the pod anti-affinity",
        _anti_zone(),
        _n(zone="zone1"),
        _n(zone="zone1", **{"unrelated-label": "unrelated"}),
        SKIP,
    ),
    (
        "update node with different anti-affinity topologyKey value",
        _anti_zone(),
        _n(zone="zone1"),
        _n(zone="zone2"),
        Q,
    ),
    (
        "update node to have the anti-affinity topology label",
        _anti_zone(),
        _n(aaa="a"),
        _n(zone="zone1"),
        SKIP,
    ),
    (
        "update node label not to have anti-affinity topology label",
        _anti_zone(),
        _n(zone="zone1"),
        _n(aaa="a"),
        Q,
    ),
]


@pytest.mark.parametrize(("name", "target", "old", "new", "want"), NODE_CASES, ids=[c[0] for c in NODE_CASES])
def test_after_node_change(name: str, target: P, old: Any, new: Any, want: Hint) -> None:
    got = PLUGIN._after_node_change(
        parse_pod(target.obj()),
        parse_node(old) if old is not None else None,
        parse_node(new) if new is not None else None,
    )
    assert got == want


def test_registered_events() -> None:
    """Assigned pods added, relabelled or deleted; nodes added or relabelled (hints enabled, as upstream
    registers them when SchedulerQueueingHints is on)."""
    events = {(e.event.resource, e.event.action) for e in PLUGIN.events_to_register()}
    assert events == {
        (Resource.POD, Action.ADD | Action.UPDATE_POD_LABEL | Action.DELETE),
        (Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL),
    }
    assert all(e.hint is not None for e in PLUGIN.events_to_register())


def test_unparsable_terms_queue() -> None:
    """A pending pod whose terms do not parse is requeued by any event (upstream returns Queue with the
    error)."""
    bad = P("p").affinity_in("service", "zone", ["{{bad}}"]).obj()
    other = _other(("service", "x")).obj()
    assert PLUGIN._after_pod_change(parse_pod(bad), None, parse_pod(other)) == Q
    assert PLUGIN._after_node_change(parse_pod(bad), None, parse_node(_n())) == Q
