"""The one-line verdicts: scored decisions compared with the runner-up plugin by plugin, and the
nearest miss of a pod that fits nowhere. Expected lines are worked out by hand from the inputs."""

from typing import Any

import numpy as np
import pytest

from harmonic.framework.explain import MAX_LENGTH, closest_node, score_verdict, verdict


def _w(**per_plugin: list[int]) -> dict[str, np.ndarray]:
    return {p: np.asarray(v, dtype=np.int64) for p, v in per_plugin.items()}


@pytest.mark.parametrize(
    ("names", "weighted", "extra", "chosen", "expected"),
    [
        pytest.param(
            ["node-c0", "node-b1", "node-a2"],
            _w(CommunicationAffinity=[400, 65, 0], NodeResourcesFit=[50, 66, 70]),
            [0, 0, 0],
            0,
            # totals 450, 131, 70: the runner-up is node-b1; 400-65 = +335, 50-66 = -16.
            "node-c0 won by 319 over node-b1: CommunicationAffinity +335, NodeResourcesFit -16",
            id="decisive-plugin-and-a-cost",
        ),
        pytest.param(
            ["a", "b"],
            _w(P=[10, 10], Q=[5, 3]),
            [0, 0],
            0,
            "a won by 2 over b: Q +2",
            id="plugins-without-difference-left-out",
        ),
        pytest.param(
            ["a", "b", "c"],
            _w(P=[7, 7, 1]),
            [0, 0, 0],
            1,
            "b tied with a at 7 (2 nodes with the best total; seeded draw)",
            id="tie",
        ),
        pytest.param(
            ["a", "b"],
            _w(P=[10, 4]),
            [5, 0],
            0,
            # total 15 vs 4: the plugin explains 6 of the 11, the rest is not a listed plugin's.
            "a won by 11 over b: P +6, other +5",
            id="total-beyond-the-plugins",
        ),
        pytest.param(["only"], _w(P=[3]), [0], 0, "only was the only feasible node", id="single"),
        pytest.param(
            ["a", "b"],
            _w(A=[6, 0], B=[0, 5], C=[4, 0], D=[0, 3], E=[2, 0]),
            [0, 0],
            0,
            # 12 - 8 = 4; by size: A +6, B -5, C +4, D -3, then E +2 counted.
            "a won by 4 over b: A +6, B -5, C +4, D -3, 1 more",
            id="at-most-four-plugins",
        ),
    ],
)
def test_score_verdict(
    names: list[str], weighted: dict[str, np.ndarray], extra: list[int], chosen: int, expected: str
) -> None:
    total = sum(weighted.values()) + np.asarray(extra, dtype=np.int64)
    assert score_verdict(names, total, weighted, chosen) == expected


def test_score_verdict_is_bounded() -> None:
    names = ["n" * 200, "m" * 200]
    weighted = _w(P=[2, 1])
    line = score_verdict(names, weighted["P"], weighted, 0)
    assert len(line) == MAX_LENGTH and line.endswith(" ...")


def _row(node: str, plugin: str, *reasons: str, code: str = "Unschedulable") -> dict[str, Any]:
    return {"node": node, "code": code, "plugin": plugin, "reasons": list(reasons)}


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        pytest.param(
            [
                _row("a", "NodeResourcesFit", "Insufficient cpu", "Insufficient memory"),
                _row("b", "NodeResourcesFit", "Insufficient cpu"),
                _row(
                    "c",
                    "TaintToleration",
                    "node(s) had untolerated taint(s)",
                    code="UnschedulableAndUnresolvable",
                ),
            ],
            "closest: b stopped only by NodeResourcesFit (Insufficient cpu); later filters not run there",
            id="one-resolvable-reason",
        ),
        pytest.param(
            [
                _row("a", "NodeResourcesFit", "Insufficient cpu"),
                _row("b", "InterPodAffinity", "node(s) didn't match pod anti-affinity rules"),
                _row("c", "NodeResourcesFit", "Insufficient cpu"),
            ],
            "closest: 2 nodes (e.g. a) stopped only by NodeResourcesFit (Insufficient cpu); "
            "later filters not run there",
            id="most-common-blocker",
        ),
        pytest.param(
            [
                _row(
                    "a",
                    "NodeAffinity",
                    "node(s) didn't match Pod's node affinity/selector",
                    code="UnschedulableAndUnresolvable",
                )
            ],
            "",
            id="nothing-resolvable",
        ),
    ],
)
def test_closest_node(rows: list[dict[str, Any]], expected: str) -> None:
    assert closest_node(rows) == expected


def test_verdict_of_a_pending_pod_keeps_the_fit_error_and_adds_the_nearest_miss() -> None:
    doc = {
        "result": "Unschedulable",
        "message": "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s). "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
        "filter": [
            _row("a", "NodeResourcesFit", "Insufficient cpu"),
            _row(
                "b",
                "TaintToleration",
                "node(s) had untolerated taint(s)",
                code="UnschedulableAndUnresolvable",
            ),
        ],
        "choice": None,
        "scores": None,
    }
    assert verdict(doc) == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s). "
        "closest: a stopped only by NodeResourcesFit (Insufficient cpu); later filters not run there"
    )
