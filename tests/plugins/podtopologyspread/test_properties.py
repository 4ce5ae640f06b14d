"""Properties of PodTopologySpread, checked by independent code.

1. After scheduling random workloads, every bound pod satisfies its DoNotSchedule constraints against
   the final cluster state (DESIGN invariant 2).
2. On random clusters, Filter and Score equal a plain per-node transliteration of upstream's algorithm.

The reference code here reads the raw manifests only; it shares nothing with the plugin.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmonic.conformance import evaluate
from harmonic.testing import node, pod
from harmonic.testing.harness import Harness

HOST = "kubernetes.io/hostname"
KEYS = ["zone", "rack", HOST]
NO_SCHED = ("NoSchedule", "NoExecute")
NOT_MATCH = "node(s) didn't match pod topology spread constraints"
MISSING = NOT_MATCH + " (missing required label)"

# ------------------------------------------------------------------------------------------ reference


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _selector_matches(sel: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    if sel is None:
        return False
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or ():
        if e["operator"] == "Exists" and e["key"] not in labels:
            return False
        if e["operator"] == "In" and labels.get(e["key"]) not in e["values"]:
            return False
    return True


def _selector_counts(sel: Mapping[str, Any] | None) -> bool:
    return sel is not None and bool(sel.get("matchLabels") or sel.get("matchExpressions"))


def _tolerates(p: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    for t in p["spec"].get("tolerations") or ():
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("key") and t["key"] != taint["key"]:
            continue
        return True  # the generator only writes Exists tolerations
    return False


def _included(p: Mapping[str, Any], n: Mapping[str, Any], c: Mapping[str, Any]) -> bool:
    if c.get("nodeAffinityPolicy", "Honor") == "Honor":
        labels = _labels(n)
        if any(labels.get(k) != v for k, v in (p["spec"].get("nodeSelector") or {}).items()):
            return False
    if c.get("nodeTaintsPolicy", "Ignore") == "Honor":
        for t in (n.get("spec") or {}).get("taints") or ():
            if t["effect"] in NO_SCHED and not _tolerates(p, t):
                return False
    return True


def _matching_on(p: Mapping[str, Any], c: Mapping[str, Any], pods_on_node: list[Mapping[str, Any]]) -> int:
    if not _selector_counts(c.get("labelSelector")):
        return 0
    ns = p["metadata"].get("namespace", "default")
    return sum(
        1
        for q in pods_on_node
        if q["metadata"].get("namespace", "default") == ns
        and not q["metadata"].get("deletionTimestamp")
        and _selector_matches(c.get("labelSelector"), _labels(q))
    )


def _constraints(p: Mapping[str, Any], when: str) -> list[Mapping[str, Any]]:
    return [c for c in p["spec"].get("topologySpreadConstraints") or () if c["whenUnsatisfiable"] == when]


def reference_filter(
    p: Mapping[str, Any], nodes: list[Mapping[str, Any]], pods: dict[str, list[Mapping[str, Any]]]
) -> dict[str, tuple[str, ...]]:
    """Per node: () when it passes, else the reason (upstream PreFilter + Filter, one node at a time)."""
    cs = _constraints(p, "DoNotSchedule")
    counts: list[dict[str, int]] = [{} for _ in cs]
    for n in nodes:
        labels = _labels(n)
        if not all(c["topologyKey"] in labels for c in cs):
            continue
        for i, c in enumerate(cs):
            if _included(p, n, c):
                v = labels[c["topologyKey"]]
                counts[i][v] = counts[i].get(v, 0) + _matching_on(p, c, pods.get(n["metadata"]["name"], []))
    out: dict[str, tuple[str, ...]] = {}
    for n in nodes:
        labels = _labels(n)
        out[n["metadata"]["name"]] = ()
        for i, c in enumerate(cs):
            if c["topologyKey"] not in labels:
                out[n["metadata"]["name"]] = (MISSING,)
                break
            min_match = min(counts[i].values()) if counts[i] else 2**31 - 1
            if len(counts[i]) < c.get("minDomains", 1):
                min_match = 0
            self_match = 1 if _selector_matches(c.get("labelSelector"), _labels(p)) else 0
            if counts[i].get(labels[c["topologyKey"]], 0) + self_match - min_match > c["maxSkew"]:
                out[n["metadata"]["name"]] = (NOT_MATCH,)
                break
    return out


def reference_scores(
    p: Mapping[str, Any],
    nodes: list[Mapping[str, Any]],
    filtered: list[str],
    pods: dict[str, list[Mapping[str, Any]]],
) -> dict[str, int]:
    """Upstream PreScore + Score + NormalizeScore for the pod's own ScheduleAnyway constraints."""
    cs = _constraints(p, "ScheduleAnyway")
    by_name = {n["metadata"]["name"]: n for n in nodes}
    ignored = {f for f in filtered if not all(c["topologyKey"] in _labels(by_name[f]) for c in cs)}
    domain_counts: list[dict[str, int]] = [{} for _ in cs]
    weights = []
    for i, c in enumerate(cs):
        kept = [f for f in filtered if f not in ignored]
        if c["topologyKey"] == HOST:
            weights.append(math.log(len(kept) + 2))
            continue
        for f in kept:
            domain_counts[i].setdefault(_labels(by_name[f])[c["topologyKey"]], 0)
        weights.append(math.log(len(domain_counts[i]) + 2))
    for n in nodes:
        labels = _labels(n)
        if not all(c["topologyKey"] in labels for c in cs):
            continue
        for i, c in enumerate(cs):
            v = labels[c["topologyKey"]]
            if c["topologyKey"] != HOST and v in domain_counts[i] and _included(p, n, c):
                domain_counts[i][v] += _matching_on(p, c, pods.get(n["metadata"]["name"], []))
    raw: dict[str, int] = {}
    for f in filtered:
        if f in ignored:
            raw[f] = 0
            continue
        labels = _labels(by_name[f])
        score = 0.0
        for i, c in enumerate(cs):
            if c["topologyKey"] == HOST:
                cnt = _matching_on(p, c, pods.get(f, []))
            else:
                cnt = domain_counts[i][labels[c["topologyKey"]]]
            score += float(cnt) * weights[i] + float(c["maxSkew"] - 1)
        whole = math.trunc(score)  # math.Round for the non-negative scores here, exactly
        raw[f] = whole + (1 if score - whole >= 0.5 else 0)
    valid = [s for f, s in raw.items() if f not in ignored]
    lo, hi = (min(valid), max(valid)) if valid else (0, 0)
    out = {}
    for f, s in raw.items():
        if f in ignored:
            out[f] = 0
        elif hi == 0:
            out[f] = 100
        else:
            out[f] = 100 * (hi + lo - s) // hi
    return out


# ------------------------------------------------------------------------------------------ generators

_node_specs = st.lists(
    st.tuples(
        st.sampled_from(["z0", "z1", "z2", None]),
        st.sampled_from(["r0", "r1", None]),
        st.booleans(),  # disk=ssd
        st.booleans(),  # tainted
    ),
    min_size=2,
    max_size=8,
)


def _nodes(specs: list[tuple[str | None, str | None, bool, bool]]) -> list[dict[str, Any]]:
    out = []
    for i, (zone, rack, ssd, tainted) in enumerate(specs):
        b = node(f"n{i}")
        if zone:
            b.label("zone", zone)
        if rack:
            b.label("rack", rack)
        if ssd:
            b.label("disk", "ssd")
        if tainted:
            b.taint("dedicated", effect="NoSchedule")
        out.append(b.obj())
    return out


_constraint = st.fixed_dictionaries(
    {"maxSkew": st.integers(1, 2), "topologyKey": st.sampled_from(KEYS)},
    optional={
        "minDomains": st.integers(1, 4),
        "nodeAffinityPolicy": st.sampled_from(["Honor", "Ignore"]),
        "nodeTaintsPolicy": st.sampled_from(["Honor", "Ignore"]),
    },
)
_group = st.fixed_dictionaries(
    {
        "ns": st.sampled_from(["default", "other"]),
        "size": st.integers(1, 7),
        "constraints": st.lists(_constraint, min_size=1, max_size=2, unique_by=lambda c: c["topologyKey"]),
        "ssd": st.booleans(),
        "tolerate": st.booleans(),
    }
)


def _spread(b: Any, c: Mapping[str, Any], when: str, selector: Mapping[str, Any] | None) -> None:
    rest = {k: v for k, v in c.items() if k not in ("maxSkew", "topologyKey", "labelSelector")}
    b.spread(c["maxSkew"], c["topologyKey"], when, None if selector is None else dict(selector), **rest)


def _group_pods(g: int, spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for i in range(spec["size"]):
        b = pod(f"g{g}-{i}").ns(spec["ns"]).label("app", f"g{g}").req(cpu="100m")
        for c in spec["constraints"]:
            _spread(b, c, "DoNotSchedule", {"matchLabels": {"app": f"g{g}"}})
        if spec["ssd"]:
            b.node_selector({"disk": "ssd"})
        if spec["tolerate"]:
            b.tolerate("dedicated", operator="Exists")
        out.append(b.obj())
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_node_specs, st.lists(_group, min_size=1, max_size=3), st.randoms(use_true_random=False))
def test_bound_pods_satisfy_do_not_schedule_constraints(node_specs, groups, rnd) -> None:
    h = Harness()
    nodes = _nodes(node_specs)
    h.add_nodes(nodes)
    pods = [p for g, spec in enumerate(groups) for p in _group_pods(g, spec)]
    rnd.shuffle(pods)
    h.add_pods(pods)
    h.settle(60, step=5)
    by_name = {n["metadata"]["name"]: n for n in h.cluster.nodes.values()}
    bound = [p for p in h.cluster.pods.values() if p["spec"].get("nodeName")]
    on_node: dict[str, list[Mapping[str, Any]]] = {}
    for q in bound:
        on_node.setdefault(q["spec"]["nodeName"], []).append(q)
    for p in bound:
        cs = _constraints(p, "DoNotSchedule")
        keys = [c["topologyKey"] for c in cs]
        own = _labels(by_name[p["spec"]["nodeName"]])
        assert all(k in own for k in keys), f"{p['metadata']['name']} landed on a node without {keys}"
        for c in cs:
            eligible = [
                n for n in by_name.values() if all(k in _labels(n) for k in keys) and _included(p, n, c)
            ]
            counts: dict[str, int] = {}
            for n in eligible:
                v = _labels(n)[c["topologyKey"]]
                counts[v] = counts.get(v, 0) + _matching_on(p, c, on_node.get(n["metadata"]["name"], []))
            lowest = 0 if len(counts) < c.get("minDomains", 1) else min(counts.values())
            assert counts.get(own[c["topologyKey"]], 0) - lowest <= c["maxSkew"], (
                p["metadata"]["name"],
                c,
                counts,
            )


_existing = st.lists(
    st.tuples(
        st.integers(0, 7),
        st.sampled_from([{}, {"app": "a"}, {"app": "b"}, {"app": "a", "tier": "t"}]),
        st.sampled_from(["default", "other"]),
        st.booleans(),
    ),
    max_size=25,
)
_any_constraint = st.fixed_dictionaries(
    {
        "maxSkew": st.integers(1, 3),
        "topologyKey": st.sampled_from(KEYS),
        "labelSelector": st.sampled_from(
            [
                None,
                {},
                {"matchLabels": {"app": "a"}},
                {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
            ]
        ),
    },
    optional={
        "minDomains": st.integers(1, 4),
        "nodeAffinityPolicy": st.sampled_from(["Honor", "Ignore"]),
        "nodeTaintsPolicy": st.sampled_from(["Honor", "Ignore"]),
    },
)


def _cluster(node_specs, existing, labels, constraints, ssd, tolerate, when):
    nodes = _nodes(node_specs)
    pods = []
    for i, (where, plabels, ns, deleting) in enumerate(existing):
        q = pod(f"e{i}").ns(ns).labels(plabels).node(f"n{where % len(nodes)}").obj()
        if deleting:
            q["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        pods.append(q)
    b = pod("p").labels(labels)
    for c in constraints:
        _spread(b, c, when, c["labelSelector"])
    if ssd:
        b.node_selector({"disk": "ssd"})
    if tolerate:
        b.tolerate("dedicated", operator="Exists")
    on_node: dict[str, list[Mapping[str, Any]]] = {}
    for q in pods:
        on_node.setdefault(q["spec"]["nodeName"], []).append(q)
    return nodes, pods, b.obj(), on_node


_pod_labels = st.sampled_from([{}, {"app": "a"}, {"app": "b"}])


@settings(max_examples=150, deadline=None)
@given(
    _node_specs,
    _existing,
    _pod_labels,
    st.lists(_any_constraint, min_size=1, max_size=3),
    st.booleans(),
    st.booleans(),
)
def test_filter_equals_reference(node_specs, existing, labels, constraints, ssd, tolerate) -> None:
    nodes, pods, p, on_node = _cluster(
        node_specs, existing, labels, constraints, ssd, tolerate, "DoNotSchedule"
    )
    got = evaluate(
        {
            "plugin": "PodTopologySpread",
            "kind": "filter",
            "args": {"defaultingType": "List"},
            "pod": p,
            "nodes": nodes,
            "existingPods": pods,
        }
    )
    want = reference_filter(p, nodes, on_node)
    assert {n: tuple(r["reasons"]) for n, r in got.items()} == want


@settings(max_examples=150, deadline=None)
@given(
    _node_specs,
    _existing,
    _pod_labels,
    st.lists(_any_constraint, min_size=1, max_size=3),
    st.booleans(),
    st.booleans(),
    st.data(),
)
def test_score_equals_reference(node_specs, existing, labels, constraints, ssd, tolerate, data) -> None:
    nodes, pods, p, on_node = _cluster(
        node_specs, existing, labels, constraints, ssd, tolerate, "ScheduleAnyway"
    )
    names = [n["metadata"]["name"] for n in nodes]
    filtered = data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    got = evaluate(
        {
            "plugin": "PodTopologySpread",
            "kind": "score",
            "args": {"defaultingType": "List"},
            "pod": p,
            "nodes": nodes,
            "existingPods": pods,
            "scoredNodes": filtered,
        }
    )
    assert got == reference_scores(p, nodes, filtered, on_node)
    assert np.all(np.asarray(list(got.values())) >= 0)
