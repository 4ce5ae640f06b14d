"""The per-node plugin API (``NodeFilterPlugin`` / ``NodeScorePlugin``): the framework loops over the
candidate nodes for a plugin that only knows one node at a time, and its verdicts and scores decide
placement exactly as an array plugin's would."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.api.pod import Pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import NodeFilterPlugin, NodeScorePlugin
from harmonic.framework.snapshot import NodeInfo
from harmonic.framework.status import Status, unschedulable
from harmonic.plugins.registry import in_tree_registry
from harmonic.testing import node, pod
from harmonic.testing.harness import Harness


class RequireLabel(NodeFilterPlugin):
    NAME = "RequireLabel"

    def filter_node(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        if node.node.labels.get("ok") == "yes":
            return None
        return unschedulable("node(s) lack label ok=yes")


class FewestPods(NodeScorePlugin):
    NAME = "FewestPods"

    def score_node(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        return 100 - 10 * len(node.pods)


CONFIG: dict[str, Any] = {
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "filter": {"enabled": [{"name": "RequireLabel"}]},
                "score": {"disabled": [{"name": "*"}], "enabled": [{"name": "FewestPods", "weight": 1}]},
            },
        }
    ]
}


def _harness() -> Harness:
    return Harness(CONFIG, registry=in_tree_registry().merged([RequireLabel, FewestPods]))


@pytest.mark.parametrize(
    ("labels", "pods", "want_per_node", "want_pending"),
    [
        # The score loop spreads pods over the labelled nodes; the unlabelled one is never used.
        ({"a": {"ok": "yes"}, "b": {"ok": "yes"}, "c": {}}, 4, {"a": 2, "b": 2}, 0),
        # One labelled node takes everything the filter lets through.
        ({"a": {"ok": "yes"}, "b": {"ok": "no"}, "c": {}}, 3, {"a": 3}, 0),
        # No labelled node: every pod stays pending.
        ({"a": {}, "b": {"ok": "no"}}, 2, {}, 2),
    ],
)
def test_per_node_plugins_decide_placement(
    labels: dict[str, dict[str, str]], pods: int, want_per_node: dict[str, int], want_pending: int
) -> None:
    h = _harness()
    h.add_nodes([node(n).cap(cpu="8", memory="8Gi", pods=110).labels(lb).obj() for n, lb in labels.items()])
    h.add_pods([pod(f"p{i}").req(cpu="100m").obj() for i in range(pods)])
    h.schedule()
    placed = list(h.placement().values())
    assert {n: placed.count(n) for n in set(placed)} == want_per_node
    assert pods - len(placed) == want_pending


def test_per_node_filter_reasons_reach_the_fit_error() -> None:
    h = _harness()
    h.add_nodes([node("a").cap(cpu="8").obj(), node("b").cap(cpu="8").label("ok", "no").obj()])
    h.add_pods([pod("p").req(cpu="100m").obj()])
    h.schedule()
    # An Unschedulable verdict (not UnschedulableAndUnresolvable) lets DefaultPreemption try the nodes.
    assert h.failure("p") == (
        "0/2 nodes are available: 2 node(s) lack label ok=yes."
        " preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )
