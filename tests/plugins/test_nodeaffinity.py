"""NodeAffinity behaviour beyond upstream's filter/score tables (translated/NodeAffinity.json)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.api.selectors import node_selector
from harmonic.framework.events import Hint
from harmonic.framework.snapshot import Snapshot
from harmonic.plugins.nodeaffinity import NodeAffinity, NodeAffinityArgs
from harmonic.plugins.nodeselector import selector_mask
from harmonic.testing import node, pod
from harmonic.testing.harness import Harness
from tests.plugins.conftest import config_error

ZONE_FOO_BAR = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}]
    }
}


def plugin(added: dict[str, Any] | None = None) -> NodeAffinity:
    return NodeAffinity(NodeAffinityArgs.model_validate({"addedAffinity": added}), handle=None)


POD = parse_pod(pod("p").required_term(("foo", "In", ["bar"])).obj())


def n(**labels: str) -> Any:
    return parse_node(node("n").labels(labels).obj())


# Test_isSchedulableAfterNodeChange (node_affinity_test.go); the wrong-object cases have no equivalent.
HINTS = [
    ("skip-queue-on-add", None, None, n(), Hint.SKIP),
    ("queue-on-add", None, None, n(foo="bar"), Hint.QUEUE),
    ("skip-unrelated-changes", None, n(), n(), Hint.SKIP),
    ("skip-unrelated-changes-on-labels", None, n(), n(k="v"), Hint.SKIP),
    ("skip-labels-changes-on-node-from-suitable-to-unsuitable", None, n(foo="bar"), n(k="v"), Hint.SKIP),
    ("queue-on-labels-change-makes-pod-schedulable", None, n(), n(foo="bar"), Hint.QUEUE),
    ("skip-queue-on-add-scheduler-enforced-node-affinity", ZONE_FOO_BAR, None, n(), Hint.SKIP),
    ("queue-on-add-scheduler-enforced-node-affinity", ZONE_FOO_BAR, None, n(foo="bar"), Hint.QUEUE),
]


@pytest.mark.parametrize(("name", "added", "old", "new", "want"), HINTS, ids=[h[0] for h in HINTS])
def test_queueing_hint(name: str, added: Any, old: Any, new: Any, want: Hint) -> None:
    assert plugin(added).hint_node_change(POD, old, new) == want


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (
            {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "foo", "operator": "Near", "values": ["x"]}]}
                        ]
                    }
                }
            },
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0].operator",
        ),
        (
            {
                "addedAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "preference": {"matchExpressions": [{"key": "foo", "operator": "In"}]}}
                    ]
                }
            },
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values",
        ),
        (
            {"addedAffinity": {"requiredDuringSchedulingRequiredDuringExecution": {}}},
            "addedAffinity.requiredDuringSchedulingRequiredDuringExecution",
        ),
        ({"addedAfinity": {}}, "addedAfinity"),
    ],
)
def test_invalid_args_name_the_field(args: dict[str, Any], field: str) -> None:
    msg = config_error("NodeAffinity", args)
    assert "NodeAffinity" in msg or "pluginConfig" in msg
    assert field in msg


def test_pre_filter_narrows_scheduling_to_named_nodes() -> None:
    h = Harness()
    h.add_nodes([node(f"n{i}").obj() for i in range(5)])
    h.add_pods([pod("p").required_term(fields=[("metadata.name", "In", ["n3"])]).obj()])
    h.schedule()
    assert h.placement() == {"default/p": "n3"}


def test_enforced_affinity_applies_to_every_pod_with_its_own_reason() -> None:
    cfg = {
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "pluginConfig": [{"name": "NodeAffinity", "args": {"addedAffinity": ZONE_FOO_BAR}}],
            }
        ],
    }
    h = Harness(cfg)
    h.add_nodes([node("a").obj(), node("b").label("foo", "bar").obj()])
    h.add_pods([pod("p1").obj(), pod("p2").node_selector({"other": "x"}).obj()])
    h.schedule()
    assert h.placement() == {"default/p1": "b"}
    msg = h.failure("p2")
    assert msg is not None
    assert "1 node(s) didn't match scheduler-enforced node affinity" in msg
    assert "1 node(s) didn't match Pod's node affinity/selector" in msg


# Vectorised evaluation agrees with evaluating each node on its own.
KEYS = ["a", "b", "kernel"]
VALUES = ["x", "y", "1", "7", "-3", "0204"]
set_requirements = st.builds(
    lambda key, op, vals: {"key": key, "operator": op, "values": vals},
    st.sampled_from(KEYS),
    st.sampled_from(["In", "NotIn"]),
    st.lists(st.sampled_from(["x", "y", "7", "1"]), min_size=1, max_size=3),
)
exist_requirements = st.builds(
    lambda key, op: {"key": key, "operator": op},
    st.sampled_from(KEYS),
    st.sampled_from(["Exists", "DoesNotExist"]),
)
int_requirements = st.builds(
    lambda key, op, v: {"key": key, "operator": op, "values": [v]},
    st.sampled_from(KEYS),
    st.sampled_from(["Gt", "Lt"]),
    st.sampled_from(["2", "5", "-1", "204"]),
)
requirements = st.one_of(set_requirements, exist_requirements, int_requirements)
terms = st.lists(
    st.builds(lambda e: {"matchExpressions": e}, st.lists(requirements, min_size=1, max_size=3)),
    min_size=1,
    max_size=3,
)
labelsets = st.lists(
    st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3), min_size=1, max_size=8
)


@settings(max_examples=60, deadline=None)
@given(terms, labelsets)
def test_selector_mask_matches_per_node_evaluation(
    raw_terms: list[Any], labels: list[dict[str, str]]
) -> None:
    snap = Snapshot()
    nodes = [parse_node(node(f"n{i}").labels(lab).obj()) for i, lab in enumerate(labels)]
    for nd in nodes:
        snap.set_node(nd)
    sel = node_selector("test", "sel", {"nodeSelectorTerms": raw_terms})
    mask = selector_mask(snap, sel)
    slots = np.asarray([snap.slot(nd.name) for nd in nodes])
    assert mask[slots].tolist() == [sel.matches(nd.labels, nd.name) for nd in nodes]
