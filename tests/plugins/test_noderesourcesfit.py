"""NodeResourcesFit args validation, the broken-linear shape function and queueing hints."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.framework.config import load_config
from harmonic.framework.events import Hint
from harmonic.plugins.noderesourcesfit import broken_linear, hint_node_change
from harmonic.plugins.registry import default_registry
from harmonic.testing import node, pod
from tests.plugins.conftest import config_error, plugin_config

RTCR = "RequestedToCapacityRatio"


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        (
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "memory", "weight": -1}]}},
            "scoringStrategy.resources",
            "[0].weight",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 101}],
                }
            },
            "scoringStrategy.resources",
            "[1].weight",
        ),
        ({"scoringStrategy": {"type": "Balanced"}}, "scoringStrategy.type", "LeastAllocated"),
        ({"scoringStrategy": {"type": RTCR}}, "scoringStrategy", "requestedToCapacityRatio.shape"),
        (
            {"scoringStrategy": {"type": RTCR, "requestedToCapacityRatio": {"shape": []}}},
            "scoringStrategy.requestedToCapacityRatio.shape",
            "at least one point",
        ),
        (
            {
                "scoringStrategy": {
                    "type": RTCR,
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]
                    },
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape",
            "[1].utilization",
        ),
        (
            {
                "scoringStrategy": {
                    "type": RTCR,
                    "requestedToCapacityRatio": {"shape": [{"utilization": 101, "score": 1}]},
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape",
            "[0].utilization",
        ),
        (
            {
                "scoringStrategy": {
                    "type": RTCR,
                    "requestedToCapacityRatio": {"shape": [{"utilization": 10, "score": 11}]},
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape",
            "[0].score",
        ),
        ({"ignoredResourceGroups": ["example.com/foo"]}, "ignoredResourceGroups", "can't contain '/'"),
        ({"ignoredResources": ["bad name!"]}, "ignoredResources", "[0]"),
    ],
)
def test_invalid_args_name_the_field(args: dict[str, Any], field: str, message: str) -> None:
    msg = config_error("NodeResourcesFit", args)
    assert field in msg and message in msg


def test_zero_weight_and_missing_resources_take_v1_defaults() -> None:
    cfg = load_config(
        plugin_config(
            "NodeResourcesFit",
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]}},
        ),
        default_registry(),
    )
    strategy = cfg.profiles[0].args["NodeResourcesFit"].scoring_strategy
    assert [(r.name, r.weight) for r in strategy.resources] == [("cpu", 1)]
    cfg = load_config(
        plugin_config("NodeResourcesFit", {"scoringStrategy": {"type": "LeastAllocated"}}), default_registry()
    )
    strategy = cfg.profiles[0].args["NodeResourcesFit"].scoring_strategy
    assert [(r.name, r.weight) for r in strategy.resources] == [("cpu", 1), ("memory", 1)]


# TestBrokenLinearFunction (requested_to_capacity_ratio_test.go).
BROKEN_LINEAR = [
    (
        [(10, 1), (90, 9)],
        [
            (-10, 1),
            (0, 1),
            (9, 1),
            (10, 1),
            (15, 1),
            (19, 1),
            (20, 2),
            (89, 8),
            (90, 9),
            (99, 9),
            (100, 9),
            (110, 9),
        ],
    ),
    (
        [(0, 2), (40, 10), (100, 0)],
        [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
    ),
    ([(0, 2), (40, 2), (100, 2)], [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
]


@pytest.mark.parametrize(("shape", "assertions"), BROKEN_LINEAR)
def test_broken_linear_function(shape: list[tuple[int, int]], assertions: list[tuple[int, int]]) -> None:
    p = np.asarray([a for a, _ in assertions], dtype=np.int64)
    assert broken_linear(shape, p).tolist() == [want for _, want in assertions]


def _node(**alloc: Any) -> Any:
    return parse_node(node("n").only(**alloc).obj())


POD = parse_pod(pod("p").req(cpu="2", memory="1Gi").obj())
NODE_HINTS = [
    ("skip-queue-on-node-too-small", None, _node(cpu="1", memory="4Gi", pods=10), Hint.SKIP),
    ("queue-on-node-added-that-fits", None, _node(cpu="4", memory="4Gi", pods=10), Hint.QUEUE),
    ("skip-queue-on-node-without-pod-slots", None, _node(cpu="4", memory="4Gi", pods=0), Hint.SKIP),
    (
        "queue-on-allocatable-growth",
        _node(cpu="2", memory="4Gi", pods=10),
        _node(cpu="3", memory="4Gi", pods=10),
        Hint.QUEUE,
    ),
    (
        "skip-queue-on-unrelated-growth",
        _node(cpu="2", memory="4Gi", pods=10),
        _node(cpu="2", memory="4Gi", pods=10, **{"ephemeral_storage": "1Gi"}),
        Hint.SKIP,
    ),
    (
        "queue-on-pod-slots-growth",
        _node(cpu="2", memory="4Gi", pods=10),
        _node(cpu="2", memory="4Gi", pods=11),
        Hint.QUEUE,
    ),
]


@pytest.mark.parametrize(("name", "old", "new", "want"), NODE_HINTS, ids=[h[0] for h in NODE_HINTS])
def test_node_change_hint(name: str, old: Any, new: Any, want: Hint) -> None:
    assert hint_node_change(POD, old, new) == want


@pytest.mark.parametrize(
    "strategy",
    [
        {"type": "LeastAllocated"},
        {"type": "MostAllocated"},
        {
            "type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
            },
        },
    ],
)
def test_capacity_near_the_64_bit_limit_scores_in_range(strategy: dict[str, Any]) -> None:
    """Issue 33 (found by the live fuzzer): a node whose allocatable is near 2^63 overflowed
    ``amount * 100`` and scored -1, failing every pod ("returns an invalid score -1") on every node."""
    from harmonic.testing.harness import Harness

    config = {
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}}],
            }
        ]
    }
    h = Harness(config)
    huge = node("huge").cap(cpu="9223372036854775", memory="9223372036854775807").obj()
    h.add_nodes([huge, node("small").cap(cpu="2", memory="4Gi").obj()])
    h.add_pods([pod(f"p{i}").req(cpu="1", memory="1Gi").obj() for i in range(3)])
    h.schedule()
    assert len(h.placement()) == 3, [h.failure(f"p{i}") for i in range(3)]
