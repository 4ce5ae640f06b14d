"""Properties of InterPodAffinity, checked by independent code.

1. After scheduling random workloads, every bound pod satisfies the required pod affinity and
   anti-affinity against the final cluster state, in both directions: its own terms, and no other pod's
   anti-affinity term covers it (DESIGN invariant 2).
2. On random clusters, Filter and Score equal a plain per-node transliteration of upstream's
   filtering.go and scoring.go, pod by pod and term by term.

The reference code reads the raw manifests only; it shares nothing with the plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmonic.conformance import evaluate
from harmonic.testing import node, pod
from harmonic.testing.harness import Harness

Obj = Mapping[str, Any]
HOST = "kubernetes.io/hostname"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
AFF = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"
NAMESPACES = {"default": {"team": "a"}, "other": {"team": "b"}, "third": {}}

# ------------------------------------------------------------------------------------------ reference


def _labels(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _ns(p: Obj) -> str:
    return str(p["metadata"].get("namespace") or "default")


def _sel(sel: Obj | None, labels: Mapping[str, str]) -> bool:
    if sel is None:
        return False
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or ():
        op, key = e["operator"], e["key"]
        if op == "In" and labels.get(key) not in e["values"]:
            return False
        if op == "NotIn" and key in labels and labels[key] in e["values"]:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _terms(p: Obj, kind: str, when: str) -> list[Obj]:
    section = ((p["spec"].get("affinity") or {}).get(kind) or {}).get(when) or []
    return list(section)


def _existing_term_matches(owner: Obj, t: Obj, target: Obj) -> bool:
    """An existing pod's term against the incoming pod (namespace labels of the target's namespace)."""
    names = t.get("namespaces") or []
    ns_sel = t.get("namespaceSelector")
    if not names and ns_sel is None:
        names = [_ns(owner)]
    in_scope = _ns(target) in names or _sel(ns_sel, NAMESPACES.get(_ns(target), {}))
    return in_scope and _sel(t.get("labelSelector"), _labels(target))


def _incoming_term_matches(owner: Obj, t: Obj, target: Obj) -> bool:
    """An incoming pod's term after its namespace selector is resolved to the known namespaces."""
    names = set(t.get("namespaces") or [])
    ns_sel = t.get("namespaceSelector")
    if not names and ns_sel is None:
        names = {_ns(owner)}
    if ns_sel == {}:
        in_scope = True
    else:
        names |= {n for n, labels in NAMESPACES.items() if ns_sel is not None and _sel(ns_sel, labels)}
        in_scope = _ns(target) in names
    return in_scope and _sel(t.get("labelSelector"), _labels(target))


def _bump(m: dict[tuple[str, str], int], n: Obj, key: str, value: int) -> None:
    labels = _labels(n)
    if key in labels:
        m[(key, labels[key])] = m.get((key, labels[key]), 0) + value


def reference_filter(p: Obj, nodes: list[Obj], on: dict[str, list[Obj]]) -> dict[str, tuple[str, ...]]:
    aff, anti = _terms(p, "podAffinity", REQ), _terms(p, "podAntiAffinity", REQ)
    existing: dict[tuple[str, str], int] = {}
    aff_counts: dict[tuple[str, str], int] = {}
    anti_counts: dict[tuple[str, str], int] = {}
    for n in nodes:
        for q in on.get(n["metadata"]["name"], []):
            for t in _terms(q, "podAntiAffinity", REQ):
                if _existing_term_matches(q, t, p):
                    _bump(existing, n, t["topologyKey"], 1)
            if aff and all(_incoming_term_matches(p, t, q) for t in aff):
                for t in aff:
                    _bump(aff_counts, n, t["topologyKey"], 1)
            for t in anti:
                if _incoming_term_matches(p, t, q):
                    _bump(anti_counts, n, t["topologyKey"], 1)
    self_match = bool(aff) and all(_incoming_term_matches(p, t, p) for t in aff)
    out: dict[str, tuple[str, ...]] = {}
    for n in nodes:
        labels = _labels(n)
        out[n["metadata"]["name"]] = ()
        exists, missing = True, False
        for t in aff:
            k = t["topologyKey"]
            if k not in labels:
                missing = True
            elif aff_counts.get((k, labels[k]), 0) <= 0:
                exists = False
        if missing or (not exists and not (not aff_counts and self_match)):
            out[n["metadata"]["name"]] = (AFF,)
        elif any(
            t["topologyKey"] in labels
            and anti_counts.get((t["topologyKey"], labels[t["topologyKey"]]), 0) > 0
            for t in anti
        ):
            out[n["metadata"]["name"]] = (ANTI,)
        elif any(existing.get((k, v), 0) > 0 for k, v in labels.items()):
            out[n["metadata"]["name"]] = (EXISTING,)
    return out


def reference_scores(
    p: Obj, nodes: list[Obj], filtered: list[str], on: dict[str, list[Obj]], hard: int, ignore: bool
) -> dict[str, int]:
    pref_aff, pref_anti = _terms(p, "podAffinity", PREF), _terms(p, "podAntiAffinity", PREF)
    if ignore and not pref_aff and not pref_anti:
        return dict.fromkeys(filtered, 0)
    score: dict[tuple[str, str], int] = {}

    def process(t: Obj, weight: int, matched: bool, n: Obj) -> None:
        if matched and t.get("topologyKey", "") in _labels(n):
            _bump(score, n, t.get("topologyKey", ""), weight)

    for n in nodes:
        if not _labels(n):
            continue
        for q in on.get(n["metadata"]["name"], []):
            for w in pref_aff:
                process(
                    w["podAffinityTerm"], w["weight"], _incoming_term_matches(p, w["podAffinityTerm"], q), n
                )
            for w in pref_anti:
                process(
                    w["podAffinityTerm"], -w["weight"], _incoming_term_matches(p, w["podAffinityTerm"], q), n
                )
            if hard > 0:
                for t in _terms(q, "podAffinity", REQ):
                    process(t, hard, _existing_term_matches(q, t, p), n)
            for w in _terms(q, "podAffinity", PREF):
                process(
                    w["podAffinityTerm"], w["weight"], _existing_term_matches(q, w["podAffinityTerm"], p), n
                )
            for w in _terms(q, "podAntiAffinity", PREF):
                process(
                    w["podAffinityTerm"], -w["weight"], _existing_term_matches(q, w["podAffinityTerm"], p), n
                )
    if not score:
        return dict.fromkeys(filtered, 0)
    by_name = {n["metadata"]["name"]: n for n in nodes}
    raw = {}
    for f in filtered:
        labels = _labels(by_name[f])
        raw[f] = sum(v for (k, val), v in score.items() if labels.get(k) == val)
    lo, hi = min(raw.values()), max(raw.values())
    return {f: int(100.0 * ((s - lo) / (hi - lo))) if hi > lo else 0 for f, s in raw.items()}


# ------------------------------------------------------------------------------------------ generators
KEYS = ["zone", "rack", HOST]
_selectors = st.sampled_from(
    [
        None,
        {},
        {"matchLabels": {"app": "a"}},
        {"matchLabels": {"app": "b"}},
        {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
        {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]},
        {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
    ]
)
_term = st.fixed_dictionaries(
    {"labelSelector": _selectors, "topologyKey": st.sampled_from(KEYS)},
    optional={
        "namespaces": st.lists(st.sampled_from(["default", "other", "third"]), max_size=2, unique=True),
        "namespaceSelector": st.sampled_from(
            [{}, {"matchLabels": {"team": "a"}}, {"matchLabels": {"team": "b"}}]
        ),
    },
)
_weighted = st.fixed_dictionaries({"weight": st.integers(1, 100), "podAffinityTerm": _term})
_affinity = st.fixed_dictionaries(
    {},
    optional={
        "podAffinity": st.fixed_dictionaries(
            {},
            optional={
                REQ: st.lists(_term, min_size=1, max_size=2),
                PREF: st.lists(_weighted, min_size=1, max_size=2),
            },
        ),
        "podAntiAffinity": st.fixed_dictionaries(
            {},
            optional={
                REQ: st.lists(_term, min_size=1, max_size=2),
                PREF: st.lists(_weighted, min_size=1, max_size=2),
            },
        ),
    },
)
_pod_labels = st.sampled_from([{}, {"app": "a"}, {"app": "b"}, {"app": "a", "tier": "t"}])
_ns_names = st.sampled_from(["default", "other", "third"])
_node_specs = st.lists(
    st.tuples(st.sampled_from(["z0", "z1", None]), st.sampled_from(["r0", "r1", "r2", None])),
    min_size=1,
    max_size=6,
)


def _nodes(specs: list[tuple[str | None, str | None]]) -> list[dict[str, Any]]:
    out = []
    for i, (zone, rack) in enumerate(specs):
        b = node(f"n{i}").label(HOST, f"n{i}")
        if zone:
            b.label("zone", zone)
        if rack:
            b.label("rack", rack)
        out.append(b.obj())
    return out


def _pod(
    name: str, ns: str, labels: dict[str, str], affinity: dict[str, Any], node_name: str = ""
) -> dict[str, Any]:
    b = pod(name).ns(ns).labels(labels).req(cpu="100m")
    if node_name:
        b.node(node_name)
    raw = b.obj()
    if affinity:
        raw["spec"]["affinity"] = affinity
    return raw


_existing = st.lists(st.tuples(st.integers(0, 5), _pod_labels, _ns_names, _affinity), max_size=10)


def _cluster(
    node_specs: Any, existing: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, list[Obj]]]:
    nodes = _nodes(node_specs)
    pods = [
        _pod(f"e{i}", ns, labels, aff, f"n{where % len(nodes)}")
        for i, (where, labels, ns, aff) in enumerate(existing)
    ]
    on: dict[str, list[Obj]] = {}
    for q in pods:
        on.setdefault(q["spec"]["nodeName"], []).append(q)
    return nodes, pods, on


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_node_specs, _existing, _pod_labels, _ns_names, _affinity)
def test_filter_equals_reference(node_specs, existing, labels, ns, affinity) -> None:
    nodes, pods, on = _cluster(node_specs, existing)
    p = _pod("p", ns, labels, affinity)
    got = evaluate(
        {
            "plugin": "InterPodAffinity",
            "kind": "filter",
            "pod": p,
            "nodes": nodes,
            "existingPods": pods,
            "namespaces": NAMESPACES,
        }
    )
    assert {n: tuple(r["reasons"]) for n, r in got.items()} == reference_filter(p, nodes, on)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_node_specs, _existing, _pod_labels, _ns_names, _affinity, st.integers(0, 3), st.booleans(), st.data())
def test_score_equals_reference(node_specs, existing, labels, ns, affinity, hard, ignore, data) -> None:
    nodes, pods, on = _cluster(node_specs, existing)
    p = _pod("p", ns, labels, affinity)
    names = [n["metadata"]["name"] for n in nodes]
    filtered = data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    got = evaluate(
        {
            "plugin": "InterPodAffinity",
            "kind": "score",
            "args": {"hardPodAffinityWeight": hard, "ignorePreferredTermsOfExistingPods": ignore},
            "pod": p,
            "nodes": nodes,
            "existingPods": pods,
            "scoredNodes": filtered,
            "namespaces": NAMESPACES,
        }
    )
    assert got == reference_scores(p, nodes, filtered, on, hard, ignore)


# ------------------------------------------------------------------------------------------ invariant
_group = st.fixed_dictionaries(
    {
        "ns": _ns_names,
        "size": st.integers(1, 5),
        "labels": _pod_labels,
        "affinity": _affinity,
    }
)


def _violations(bound: list[Obj], nodes: dict[str, Obj]) -> list[str]:
    """Required (anti-)affinity checked against the final placement, pair by pair."""
    out = []

    def domain(p: Obj, key: str) -> str | None:
        return _labels(nodes[p["spec"]["nodeName"]]).get(key)

    for p in bound:
        name = p["metadata"]["name"]
        aff = _terms(p, "podAffinity", REQ)
        for t in aff:
            v = domain(p, t["topologyKey"])
            peers = [
                q
                for q in bound
                if v is not None
                and domain(q, t["topologyKey"]) == v
                and all(_incoming_term_matches(p, s, q) for s in aff)
            ]
            if not peers:
                out.append(f"{name}: no pod matching its affinity in {t['topologyKey']}={v}")
        for t in _terms(p, "podAntiAffinity", REQ):
            v = domain(p, t["topologyKey"])
            for q in bound:
                if q is p or v is None or domain(q, t["topologyKey"]) != v:
                    continue
                if _incoming_term_matches(p, t, q):
                    out.append(
                        f"{name}: {q['metadata']['name']} matches its anti-affinity in {t['topologyKey']}={v}"
                    )
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_node_specs, st.lists(_group, min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_bound_pods_satisfy_required_pod_affinity(node_specs, groups, rnd) -> None:
    h = Harness(services={"namespaces": NAMESPACES})
    nodes = _nodes(node_specs)
    for n in nodes:
        n["status"] = {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "20"}}
    h.add_nodes(nodes)
    pods = [
        _pod(f"g{g}-{i}", spec["ns"], spec["labels"], spec["affinity"])
        for g, spec in enumerate(groups)
        for i in range(spec["size"])
    ]
    rnd.shuffle(pods)
    h.add_pods(pods)
    h.settle(60, step=5)
    by_name = {n["metadata"]["name"]: n for n in h.cluster.nodes.values()}
    bound = [p for p in h.cluster.pods.values() if p["spec"].get("nodeName")]
    assert _violations(bound, by_name) == []
