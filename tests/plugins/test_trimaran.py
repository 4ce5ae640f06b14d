"""TargetLoadPacking and LoadVariationRiskBalancing: scheduler-plugins' own test tables
(pkg/trimaran/targetloadpacking/targetloadpacking_test.go, loadvariationriskbalancing_test.go,
analysis_test.go), with the load-watcher's percent metrics given as absolute usage of the node."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from harmonic.conformance import build
from harmonic.framework.cycle_state import CycleState
from harmonic.plugins.trimaran.loadvariationriskbalancing import LoadVariationRiskBalancingArgs, risk_scores
from harmonic.plugins.trimaran.targetloadpacking import TargetLoadPackingArgs
from harmonic.signals.usage import NodeStats, UsageView
from harmonic.testing import node, pod
from tests.plugins.conftest import config_error

GI = 1024**3
MI = 1024**2
NODE_1 = node("node-1").cap(cpu="1000m", memory="1Gi").obj()


@dataclass
class _Service:
    view: UsageView


def _view(nodes: dict[str, NodeStats]) -> UsageView:
    return UsageView(1, 0.0, True, nodes, {}, 60.0)


def _score(plugin_name, incoming, stats, args=None, nodes=(NODE_1,), reserve=()):
    services = {"node_usage": _Service(_view(stats))} if stats is not None else {}
    plugin, p, snap, names = build(
        {
            "plugin": plugin_name,
            "args": args or {},
            "pod": incoming,
            "nodes": list(nodes),
            "services": services,
        }
    )
    for other, node_name in reserve:
        from harmonic.api.pod import parse_pod

        plugin.reserve(CycleState(), parse_pod(other), node_name)
    slots = np.asarray([snap.slot(n) for n in names])
    return dict(zip(names, plugin.score(CycleState(), p, snap, slots).tolist(), strict=True))


def _cpu(percent: float, std: float = 0.0) -> NodeStats:
    """Load-watcher's CPU percent of a 1000m node as usage."""
    return NodeStats(10 * percent, 10 * std, 0.0, 0.0)


# A pod without containers has no predicted CPU upstream; here a container with a 0 limit.
EMPTY = pod("p").limits(cpu="0").obj()


@pytest.mark.parametrize(
    ("name", "incoming", "stats", "expected"),
    [
        ("new node", EMPTY, {"node-1": _cpu(0)}, 40),
        ("hot node", EMPTY, {"node-1": _cpu(50)}, 33),
        # limits 1000m (getPodWithContainersAndOverhead(0, 1000)): 130% predicted
        (
            "excess utilization returns min score",
            pod("p").req(cpu="1").limits(cpu="1").obj(),
            {"node-1": _cpu(30)},
            0,
        ),
        ("404 resp from watcher", EMPTY, None, 0),
        ("node missing from the metrics", EMPTY, {"node-2": _cpu(10)}, 0),
    ],
)
def test_target_load_packing_upstream(name, incoming, stats, expected):
    assert _score("TargetLoadPacking", incoming, stats) == {"node-1": expected}, name


@pytest.mark.parametrize(
    ("name", "incoming", "expected"),
    [
        # request x 1.5 = 300m of 1000m -> 30% -> (60*30/40 + 40) = 85
        ("request times the multiplier", pod("p").req(cpu="200m").obj(), 85),
        # no request, no limit: defaultRequests 1000m -> 100% -> 40 * 0 / 60 = 0
        ("default requests", pod("p").obj(), 0),
        # limit wins over request; overhead added: 100m + 100m -> 20% -> 70
        ("limit and overhead", pod("p").req(cpu="50m").limits(cpu="100m").overhead(cpu="100m").obj(), 70),
        # two containers: 100m x 1.5 + 0 limit -> 150m -> 15% -> round(62.5) = 63
        ("containers summed", pod("p").req(cpu="100m").container(cpu="0").obj(), 63),
    ],
)
def test_target_load_packing_prediction(name, incoming, expected):
    assert _score("TargetLoadPacking", incoming, {"node-1": _cpu(0)}) == {"node-1": expected}, name


def test_target_load_packing_counts_pods_assigned_since_the_metrics():
    nodes = (NODE_1, node("node-2").cap(cpu="1000m", memory="1Gi").obj())
    stats = {"node-1": _cpu(0), "node-2": _cpu(0)}
    just_placed = pod("q").limits(cpu="200m").obj()
    # node-1: 200m assigned after the metrics -> 20% -> 70; node-2 idle -> 40
    assert _score("TargetLoadPacking", EMPTY, stats, nodes=nodes, reserve=[(just_placed, "node-1")]) == {
        "node-1": 70,
        "node-2": 40,
    }


def test_target_load_packing_args():
    assert TargetLoadPackingArgs().target_utilization == 40
    assert TargetLoadPackingArgs(targetUtilization=0).target_utilization == 40
    assert TargetLoadPackingArgs().default_cpu_millis == 1000
    assert TargetLoadPackingArgs().default_requests_multiplier == "1.5"
    assert "unable to parse" in config_error("TargetLoadPacking", {"defaultRequestsMultiplier": "x"})
    assert "watcherAddress" in config_error("TargetLoadPacking", {"watcherAddress": "http://lw:2020"})
    assert "SignalFx" in config_error("TargetLoadPacking", {"metricProvider": {"type": "SignalFx"}})


@pytest.mark.parametrize(
    ("name", "incoming", "stats", "expected"),
    [
        ("new node", pod("p").obj(), NodeStats(500, 0, 0, 0), 75),
        ("hot node", pod("p").obj(), NodeStats(1000, 0, 0, 0), 50),
        ("average and stDev metrics", pod("p").req(cpu="200m", memory="256Mi").obj(), NodeStats(300, 160, 0, 0), 67),
        ("CPU and Memory metrics", pod("p").req(cpu="100m", memory="512Mi").obj(), NodeStats(400, 160, 512 * MI, 0.1 * GI), 45),
        ("pick worst case: CPU or Memory", pod("p").req(cpu="100m", memory="512Mi").obj(), NodeStats(800, 200, 0.25 * GI, 0.15 * GI), 45),
        ("404 resp from watcher", pod("p").obj(), None, 0),
    ],
)  # fmt: skip
def test_load_variation_risk_balancing_upstream(name, incoming, stats, expected):
    got = _score("LoadVariationRiskBalancing", incoming, None if stats is None else {"node-1": stats})
    assert got == {"node-1": expected}, name


@pytest.mark.parametrize(
    ("name", "margin", "sensitivity", "cap", "req", "avg", "std", "expected"),
    [
        ("valid data", 1, 1, 100, 10, 40, 36, 57),
        ("zero capacity", 1, 2, 0, 10, 40, 36, 0),
        ("negative usedAvg", 1, 2, 100, 10, -40, 36, 65),
        ("large usedAvg", 1, 2, 100, 10, 200, 36, 20),
        ("negative usedStdev", 1, 2, 100, 10, 40, -36, 75),
        ("large usedStdev", 1, 2, 100, 10, 40, 120, 25),
        ("negative margin", -1, 1, 100, 10, 40, 36, 75),
        ("negative sensitivity", 1, -1, 100, 10, 40, 36, 57),
        ("zero sensitivity", 1, 0, 100, 10, 40, 36, 75),
    ],
)
def test_compute_score_upstream(name, margin, sensitivity, cap, req, avg, std, expected):
    got = risk_scores(
        np.array([avg], float), np.array([std], float), req, np.array([cap], float), margin, sensitivity
    )
    assert int(np.floor(got[0] + 0.5)) == expected, name


def test_load_variation_risk_balancing_args_default_bad_values():
    args = LoadVariationRiskBalancingArgs(safeVarianceMargin=-5, safeVarianceSensitivity=-1)
    assert (args.safe_variance_margin, args.safe_variance_sensitivity) == (1.0, 1.0)


def test_unknown_arg_is_an_error():
    assert "margin" in config_error("LoadVariationRiskBalancing", {"margin": 1})
