"""Node masks over all slots agree with the per-node predicates they vectorise."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.api.selectors import node_selector
from harmonic.api.taints import NO_EXECUTE, NO_SCHEDULE, tolerated
from harmonic.framework.nodemasks import required_affinity_mask, untolerated_mask
from harmonic.framework.snapshot import Snapshot
from harmonic.testing import node, pod

KEYS = ["a", "b", "c"]
VALUES = ["1", "2", "10", "x", ""]

_labels = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
_taints = st.lists(
    st.tuples(
        st.sampled_from(["k1", "k2"]),
        st.sampled_from(["", "v"]),
        st.sampled_from([NO_SCHEDULE, NO_EXECUTE, "PreferNoSchedule"]),
    ),
    max_size=2,
)
_expr = st.one_of(
    st.tuples(
        st.sampled_from(KEYS),
        st.sampled_from(["In", "NotIn"]),
        st.lists(st.sampled_from(VALUES), min_size=1, max_size=2),
    ),
    st.tuples(st.sampled_from(KEYS), st.sampled_from(["Exists", "DoesNotExist"]), st.just([])),
    st.tuples(st.sampled_from(KEYS), st.sampled_from(["Gt", "Lt"]), st.sampled_from([["1"], ["5"]])),
)
_term = st.fixed_dictionaries(
    {
        "matchExpressions": st.lists(
            _expr.map(
                lambda e: (
                    {"key": e[0], "operator": e[1], "values": e[2]}
                    if e[2]
                    else {"key": e[0], "operator": e[1]}
                )
            ),
            max_size=2,
        )
    },
    optional={
        "matchFields": st.lists(
            st.sampled_from(["n0", "n1"]).map(
                lambda n: {"key": "metadata.name", "operator": "In", "values": [n]}
            ),
            max_size=1,
        )
    },
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(_labels, _taints), min_size=1, max_size=6),
    _labels,
    st.lists(_term, max_size=2),
    st.lists(st.tuples(st.sampled_from(["k1", "k2", ""]), st.sampled_from(["", NO_SCHEDULE])), max_size=2),
)
def test_masks_match_per_node_predicates(nodes, node_selector_map, terms, tolerations) -> None:
    snap = Snapshot()
    compiled = []
    for i, (labels, taints) in enumerate(nodes):
        b = node(f"n{i}").labels(labels)
        for k, v, e in taints:
            b.taint(k, v, e)
        n = parse_node(b.obj())
        snap.set_node(n)
        compiled.append(n)
    pb = pod("p").node_selector(node_selector_map)
    for key, effect in tolerations:
        pb.tolerate(key, effect=effect, operator="Exists")
    raw = pb.obj()
    if terms:
        raw["spec"]["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        }
    p = parse_pod(raw)
    aff = required_affinity_mask(snap, p)
    bad = untolerated_mask(snap, p.tolerations, (NO_SCHEDULE, NO_EXECUTE))
    req = node_selector("t", "t", {"nodeSelectorTerms": terms}) if terms else None
    for n in compiled:
        slot = snap.slot(n.name)
        want = all(n.labels.get(k) == v for k, v in node_selector_map.items())
        if req is not None:
            want = want and req.matches(n.labels, n.name)
        assert bool(aff[slot]) == want
        want_bad = any(
            t.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerated(p.tolerations, t) for t in n.taints
        )
        assert bool(bad[slot]) == want_bad
