"""InterPodAffinity beyond upstream's tables: selector validation messages, term compilation
(matchLabelKeys, namespaces, namespace selectors), the incremental index, and end-to-end scheduling."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.api.selectors import IN, NOT_IN, Requirement, SelectorError, parse_selector
from harmonic.conformance import build, evaluate, preemption_setup
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.podcounts import PodMatch
from harmonic.framework.snapshot import Snapshot
from harmonic.plugins.interpodaffinity import (
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH as ANTI_REASON,
)
from harmonic.plugins.interpodaffinity import (
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH as EXISTING_REASON,
)
from harmonic.plugins.interpodaffinity.index import ANTI, HARD, PREFERRED, PREFERRED_TERMS, ExistingTerms
from harmonic.plugins.interpodaffinity.terms import AffinityTerm, merge_namespaces, pod_terms
from harmonic.testing import node, pod
from harmonic.testing.harness import Harness

REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
HOST = "kubernetes.io/hostname"


def _with(raw: dict[str, Any], **affinity: Any) -> dict[str, Any]:
    raw["spec"]["affinity"] = affinity
    return raw


def _term(selector: Any, key: str = "zone", **extra: Any) -> dict[str, Any]:
    return {"labelSelector": selector, "topologyKey": key, **extra}


APP_A = {"matchLabels": {"app": "a"}}


# ------------------------------------------------------------------------------------ selectors
@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            'values: Invalid value: []string{"x"}: values set must be empty for exists and does not exist',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            '"Gt" is not a valid label selector operator',
        ),
        (
            {"matchLabels": {"-bad": "x"}},
            'key: Invalid value: "-bad": name part must consist of alphanumeric characters',
        ),
        ({"matchLabels": {"a/b/c": "x"}}, 'key: Invalid value: "a/b/c": a qualified name must consist of'),
        (
            {"matchLabels": {"Example.com/x": "y"}},
            "prefix part a lowercase RFC 1123 subdomain must consist of",
        ),
        ({"matchLabels": {"k": "x" * 64}}, "must be no more than 63 characters"),
    ],
)
def test_selector_errors_are_upstreams(raw: Any, message: str) -> None:
    with pytest.raises(SelectorError) as e:
        parse_selector(raw)
    assert message in str(e.value)


def test_several_bad_values_aggregate_in_brackets() -> None:
    with pytest.raises(SelectorError) as e:
        parse_selector({"matchExpressions": [{"key": "k", "operator": "In", "values": ["-a", "-b"]}]})
    msg = str(e.value)
    assert (
        msg.startswith('[values[0][k]: Invalid value: "-a"') and ', values[1][k]: Invalid value: "-b"' in msg
    )


def test_null_selector_matches_nothing_and_empty_everything() -> None:
    assert parse_selector(None).nothing
    assert parse_selector({}).everything
    assert parse_selector({"matchLabels": {"app": "a"}}).matches({"app": "a", "x": "y"})


# ------------------------------------------------------------------------------------ terms
def test_match_label_keys_are_merged_as_the_api_server_does() -> None:
    raw = _with(
        pod("p").labels({"app": "a", "hash": "h1", "tier": "web"}).obj(),
        podAffinity={REQ: [_term(APP_A, matchLabelKeys=["hash", "missing"], mismatchLabelKeys=["tier"])]},
    )
    (t,) = pod_terms(parse_pod(raw)).required_affinity
    assert t.selector.requirements == (
        Requirement("app", IN, frozenset({"a"})),
        Requirement("hash", IN, frozenset({"h1"})),
        Requirement("tier", NOT_IN, frozenset({"web"})),
    )


def test_match_label_keys_leave_a_null_selector_null() -> None:
    raw = _with(pod("p").label("hash", "h").obj(), podAffinity={REQ: [_term(None, matchLabelKeys=["hash"])]})
    (t,) = pod_terms(parse_pod(raw)).required_affinity
    assert t.selector.nothing


def test_namespaces_default_to_the_pods_own_unless_a_selector_is_given() -> None:
    raw = _with(
        pod("p").ns("mine").obj(),
        podAntiAffinity={
            REQ: [
                _term(APP_A),
                _term(APP_A, namespaceSelector={}),
                _term(APP_A, namespaces=["x"]),
                _term(APP_A, namespaces=["x"], namespaceSelector={"matchLabels": {"team": "t"}}),
            ]
        },
    )
    own, every, listed, both = pod_terms(parse_pod(raw)).required_anti
    assert own.namespaces == {"mine"} and own.ns_selector.nothing
    assert every.namespaces == frozenset() and every.any_namespace
    assert listed.namespaces == {"x"}
    assert both.namespaces == {"x"} and not both.any_namespace
    merged = merge_namespaces(both, {"a": {"team": "t"}, "b": {"team": "u"}, "c": {"team": "t"}})
    assert merged.namespaces == {"x", "a", "c"} and merged.ns_selector.nothing
    assert merge_namespaces(every, {"a": {}}) is every
    assert merge_namespaces(both, None).namespaces == {"x"}


def test_each_term_list_fails_on_its_own() -> None:
    bad = {"matchExpressions": [{"key": "k", "operator": "In", "values": ["{{x}}"]}]}
    raw = _with(
        pod("p").obj(),
        podAffinity={REQ: [_term(APP_A)], PREF: [{"weight": 3, "podAffinityTerm": _term(bad)}]},
        podAntiAffinity={REQ: [_term(bad)]},
    )
    terms = pod_terms(parse_pod(raw))
    assert len(terms.required_affinity) == 1
    assert terms.required_anti == () and terms.preferred_affinity == ()
    assert terms.error.startswith('[requiredAntiAffinityTerms: values[0][k]: Invalid value: "{{x}}"')
    assert ", preferredAffinityTerms: values[0][k]" in terms.error


def test_malformed_terms_are_one_clear_error() -> None:
    raw = _with(pod("p").obj(), podAffinity={REQ: "not a list"})
    assert pod_terms(parse_pod(raw)).error == "requiredAffinityTerms: must be a list of pod affinity terms"


def test_incoming_pod_with_bad_terms_is_unresolvable_and_existing_ones_are_ignored() -> None:
    bad = {"matchExpressions": [{"key": "k", "operator": "In", "values": ["{{x}}"]}]}
    nodes = [node("n1").label("zone", "z").obj()]
    got = evaluate(
        {
            "plugin": "InterPodAffinity",
            "kind": "filter",
            "pod": _with(pod("p").obj(), podAntiAffinity={REQ: [_term(bad)]}),
            "nodes": nodes,
        }
    )
    assert got["n1"]["code"] == "UnschedulableAndUnresolvable"
    assert got["n1"]["reasons"][0].startswith("parsing pod: requiredAntiAffinityTerms: values[0][k]")
    existing = _with(pod("e").node("n1").obj(), podAntiAffinity={REQ: [_term(bad)]})
    got = evaluate(
        {
            "plugin": "InterPodAffinity",
            "kind": "filter",
            "pod": pod("p").obj(),
            "nodes": nodes,
            "existingPods": [existing],
        }
    )
    assert got["n1"]["code"] == "Success"


# ------------------------------------------------------------------------------------ index
def _arrays(index: ExistingTerms, kind: int) -> dict[Any, list[int]]:
    return {t: [int(x) for x in a[:8]] for t, a in index._arrays[kind].items()}


def _pods() -> list[dict[str, Any]]:
    anti = {REQ: [_term(APP_A, HOST)]}
    out = []
    for i in range(6):
        raw = pod(f"p{i}").label("app", "a").obj()
        if i % 2 == 0:
            raw["spec"]["affinity"] = {"podAntiAffinity": anti}
        else:
            raw["spec"]["affinity"] = {
                "podAffinity": {REQ: [_term(APP_A)], PREF: [{"weight": 4, "podAffinityTerm": _term(APP_A)}]},
                "podAntiAffinity": {PREF: [{"weight": 4, "podAffinityTerm": _term(APP_A)}]},
            }
        out.append(raw)
    return out


def test_index_follows_pods_and_equals_a_rebuild() -> None:
    snap = Snapshot()
    for i in range(3):
        snap.set_node(parse_node_named(f"n{i}"))
    index = ExistingTerms.of(snap)
    pods = [parse_pod(p) for p in _pods()]
    for i, p in enumerate(pods):
        snap.add_pod(p, f"n{i % 3}")
    snap.remove_pod(pods[0], "n0")
    rebuilt = ExistingTerms(snap)
    for kind in (ANTI, HARD, PREFERRED, PREFERRED_TERMS):
        assert _arrays(index, kind) == _arrays(rebuilt, kind)
    (anti,) = index._arrays[ANTI].values()
    assert anti[:3].tolist() == [0, 1, 1]  # p4 on n1, p2 on n2; p0 (n0) removed
    (pref,) = index._arrays[PREFERRED].values()
    assert pref[:3].tolist() == [0, 0, 0]  # +4 and -4 of the same term cancel
    (n_pref,) = index._arrays[PREFERRED_TERMS].values()
    assert n_pref[:3].sum() == 6
    for i, p in enumerate(pods[1:], start=1):
        snap.remove_pod(p, f"n{i % 3}")
    assert all(not index._arrays[k] for k in (ANTI, HARD, PREFERRED, PREFERRED_TERMS))
    assert ExistingTerms.of(snap) is index


def parse_node_named(name: str) -> Any:
    return parse_node(node(name).label("zone", "z").obj())


def test_terminating_pods_count_for_affinity() -> None:
    """Upstream counts every pod on the node, deletionTimestamp or not."""
    existing = pod("e").label("app", "a").node("n1").obj()
    existing["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    got = evaluate(
        {
            "plugin": "InterPodAffinity",
            "kind": "filter",
            "pod": _with(pod("p").obj(), podAntiAffinity={REQ: [_term(APP_A)]}),
            "nodes": [node("n1").label("zone", "z").obj()],
            "existingPods": [existing],
        }
    )
    assert got["n1"]["code"] == "Unschedulable"


# ------------------------------------------------------------------------------------ end to end
def _zone_nodes() -> list[dict[str, Any]]:
    return [node(f"n{i}").cap(cpu="8", pods=20).label("zone", f"z{i % 3}").obj() for i in range(6)]


def test_self_affinity_group_lands_in_one_zone() -> None:
    h = Harness()
    h.add_nodes(_zone_nodes())
    group = [
        _with(pod(f"g{i}").label("app", "a").req(cpu="100m").obj(), podAffinity={REQ: [_term(APP_A)]})
        for i in range(8)
    ]
    h.add_pods(group)
    h.schedule()
    placement = h.placement()
    assert len(placement) == 8
    zones = {h.cluster.nodes[n]["metadata"]["labels"]["zone"] for n in placement.values()}
    assert len(zones) == 1


def test_anti_affinity_spreads_one_per_host_and_leaves_the_rest_pending() -> None:
    h = Harness()
    h.add_nodes([node(f"n{i}").cap(cpu="8", pods=20).obj() for i in range(3)])
    pods = [
        _with(
            pod(f"a{i}").label("app", "a").req(cpu="100m").obj(), podAntiAffinity={REQ: [_term(APP_A, HOST)]}
        )
        for i in range(4)
    ]
    h.add_pods(pods)
    h.schedule()
    placement = h.placement()
    assert sorted(placement.values()) == ["n0", "n1", "n2"]
    pending = next(p for p in ("a0", "a1", "a2", "a3") if f"default/{p}" not in placement)
    reason, message = h.events(pending)[-1]
    assert reason == "FailedScheduling"
    assert "3 node(s) didn't match pod anti-affinity rules" in message


def test_deleting_the_blocking_pod_requeues_and_schedules_the_pending_one() -> None:
    h = Harness()
    h.add_nodes([node("n0").cap(cpu="8", pods=20).obj()])
    h.add_pods([pod("blocker").label("app", "a").req(cpu="100m").obj()])
    h.schedule()
    h.add_pods([_with(pod("p").req(cpu="100m").obj(), podAntiAffinity={REQ: [_term(APP_A, HOST)]})])
    h.schedule()
    assert "default/p" not in h.placement()
    h.cluster.delete_pod("default", "blocker")
    h.settle(30)
    assert h.placement().get("default/p") == "n0"


def test_preferred_affinity_pulls_pods_together() -> None:
    h = Harness()
    h.add_nodes([node(f"n{i}").cap(cpu="8", pods=50).obj() for i in range(5)])
    h.add_pods([pod("anchor").label("app", "db").req(cpu="100m").node("n3").obj()])
    follower = _with(
        pod("f").req(cpu="100m").obj(),
        podAffinity={PREF: [{"weight": 100, "podAffinityTerm": _term({"matchLabels": {"app": "db"}}, HOST)}]},
    )
    h.add_pods([follower])
    h.schedule()
    assert h.placement()["default/f"] == "n3"


def test_scores_are_min_max_normalised_over_the_scored_nodes() -> None:
    pref = {PREF: [{"weight": 5, "podAffinityTerm": _term(APP_A, "rack")}]}
    existing = [pod(f"e{i}").label("app", "a").node(f"n{i % 2}").obj() for i in range(3)]
    nodes = [node(f"n{i}").label("rack", f"r{i}").obj() for i in range(3)]
    case = {
        "plugin": "InterPodAffinity",
        "kind": "score",
        "pod": _with(pod("p").obj(), podAffinity=pref),
        "nodes": nodes,
        "existingPods": existing,
    }
    # Raw scores 10, 5, 0.
    assert evaluate(case) == {"n0": 100, "n1": 50, "n2": 0}
    assert evaluate({**case, "scoredNodes": ["n0", "n1"]}) == {"n0": 100, "n1": 0}
    assert evaluate({**case, "scoredNodes": ["n1"]}) == {"n1": 0}
    assert np.all(np.asarray(list(evaluate(case).values())) >= 0)


def _preempted(h: Harness) -> list[str]:
    return sorted(e.name for e in h.cluster.events if e.reason == "Preempted")


def test_preemption_evicts_the_pods_the_preemptor_is_anti_affine_to() -> None:
    """RemovePod: taking the matching low-priority pod off a host clears the anti-affinity there."""
    h = Harness()
    h.add_nodes([node(f"n{i}").cap(cpu="8", pods=20).obj() for i in range(2)])
    h.add_pods([pod(f"low{i}").label("app", "a").req(cpu="100m").node(f"n{i}").obj() for i in range(2)])
    high = _with(pod("high").priority(100).req(cpu="100m").obj(), podAntiAffinity={REQ: [_term(APP_A, HOST)]})
    h.add_pods([high])
    h.schedule()
    victims = _preempted(h)
    assert victims in (["low0"], ["low1"])
    h.settle(5)
    assert h.placement()["default/high"] == {"low0": "n0", "low1": "n1"}[victims[0]]


def test_preemption_evicts_an_existing_pod_whose_anti_affinity_rejects_the_preemptor() -> None:
    h = Harness()
    h.add_nodes([node("n0").cap(cpu="8", pods=20).obj()])
    h.add_pods(
        [
            _with(
                pod("guard").label("app", "g").req(cpu="100m").node("n0").obj(),
                podAntiAffinity={REQ: [_term({"matchLabels": {"app": "web"}}, HOST)]},
            )
        ]
    )
    h.add_pods([pod("web").priority(100).label("app", "web").req(cpu="100m").obj()])
    h.schedule()
    assert _preempted(h) == ["guard"]
    h.settle(5)
    assert h.placement() == {"default/web": "n0"}


@pytest.mark.parametrize(
    "own_anti", [True, False], ids=["pod's anti-affinity", "nominated pod's anti-affinity"]
)
def test_a_nominated_pod_counts_for_anti_affinity_in_both_directions(own_anti: bool) -> None:
    """AddPod: a pod of equal or higher priority nominated to n1 (not yet bound there) keeps a pod
    anti-affine to it off n1. When only the nominated pod carries the term, PreFilter finds nothing in
    the snapshot and returns Skip, so AddPod never runs and n1 passes — upstream's behaviour too
    (RunPreFilterExtensionAddPod skips plugins whose PreFilter skipped)."""
    nominated = pod("high").priority(100).label("app", "a").nominated("n1").obj()
    incoming = pod("shy").priority(50).label("app", "s").obj()
    if own_anti:
        incoming = _with(incoming, podAntiAffinity={REQ: [_term(APP_A, HOST)]})
    else:
        nominated = _with(nominated, podAntiAffinity={REQ: [_term({"matchLabels": {"app": "s"}}, HOST)]})
    fw, _, snap, _ = preemption_setup(
        {
            "name": "t",
            "plugin": "DefaultPreemption",
            "filterPlugins": ["InterPodAffinity"],
            "nodes": [node(f"n{i}").label(HOST, f"n{i}").obj() for i in range(1, 3)],
            "nominatedPods": [nominated],
        }
    )
    p = parse_pod(incoming)
    state = CycleState()
    assert fw.run_pre_filter(state, p, snap)[1] is None
    out, st = fw.run_filters_with_nominated_pods(
        state, p, snap, np.asarray([snap.slot("n1"), snap.slot("n2")])
    )
    assert st is None
    want = [(ANTI_REASON,), ()] if own_anti else [(), ()]
    assert [out.reasons[int(r)] if c else () for c, r in zip(out.codes, out.reason_ids, strict=True)] == want


def test_a_nominated_pod_anti_affine_to_the_pod_blocks_when_prefilter_ran() -> None:
    """With an existing anti-affine pod elsewhere PreFilter runs, and AddPod then counts the nominated
    pod's anti-affinity too."""
    term = {REQ: [_term({"matchLabels": {"app": "s"}}, HOST)]}
    fw, _, snap, _ = preemption_setup(
        {
            "name": "t",
            "plugin": "DefaultPreemption",
            "filterPlugins": ["InterPodAffinity"],
            "nodes": [node(f"n{i}").label(HOST, f"n{i}").obj() for i in range(1, 4)],
            "existingPods": [_with(pod("resident").node("n3").obj(), podAntiAffinity=term)],
            "nominatedPods": [_with(pod("high").priority(100).nominated("n1").obj(), podAntiAffinity=term)],
        }
    )
    p = parse_pod(pod("shy").priority(50).label("app", "s").obj())
    state = CycleState()
    assert fw.run_pre_filter(state, p, snap)[1] is None
    slots = np.asarray([snap.slot(f"n{i}") for i in range(1, 4)])
    out, st = fw.run_filters_with_nominated_pods(state, p, snap, slots)
    assert st is None
    got = [out.reasons[int(r)] if c else () for c, r in zip(out.codes, out.reason_ids, strict=True)]
    assert got == [(EXISTING_REASON,), (), (EXISTING_REASON,)]


def test_a_cycle_does_not_walk_the_existing_pods(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the index and pod counts exist, PreFilter, Filter and PreScore test each distinct term once,
    however many pods carry it, and match no pod against a selector."""
    anti = {REQ: [_term(APP_A, HOST)]}
    pref = {PREF: [{"weight": 2, "podAffinityTerm": _term(APP_A, "zone")}]}
    nodes = [node(f"n{i}").label("zone", f"z{i % 3}").obj() for i in range(40)]
    existing = [
        _with(pod(f"e{i}").label("app", "a").node(f"n{i % 40}").obj(), podAntiAffinity=anti, podAffinity=pref)
        for i in range(400)
    ]
    incoming = _with(pod("p").label("app", "b").obj(), podAntiAffinity=anti, podAffinity=pref)
    case = {
        "plugin": "InterPodAffinity",
        "kind": "filter",
        "pod": incoming,
        "nodes": nodes,
        "existingPods": existing,
    }
    plugin, p, snap, names = build(case)
    slots = np.asarray([snap.slot(n) for n in names])
    plugin.pre_filter(CycleState(), p, snap)  # first use: builds the index and the counts
    plugin.pre_score(CycleState(), p, snap, slots)
    calls = {"term": 0, "pod": 0}
    term_matches, pod_matches = AffinityTerm.matches, PodMatch.matches

    def count_term(self: AffinityTerm, *a: Any) -> bool:
        calls["term"] += 1
        return term_matches(self, *a)

    def count_pod(self: PodMatch, *a: Any) -> bool:
        calls["pod"] += 1
        return pod_matches(self, *a)

    monkeypatch.setattr(AffinityTerm, "matches", count_term)
    monkeypatch.setattr(PodMatch, "matches", count_pod)
    state = CycleState()
    assert plugin.pre_filter(state, p, snap)[1] is None
    verdicts = plugin.filter(state, p, snap, slots)
    assert verdicts is not None and int(np.count_nonzero(verdicts.code)) == 40
    assert plugin.pre_score(CycleState(), p, snap, slots) is None
    assert calls == {"term": 2, "pod": 0}
