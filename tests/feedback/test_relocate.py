"""Moves the feedback loop asks for, decided through the rescheduler's evictor: budgets, cool-down,
PodDisruptionBudgets, protections and the no-churn what-if."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.feedback.relocate import MoveAsk, decide_moves
from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.rescheduler.state import from_manifests
from harmonic.testing import node, pod
from tests.rescheduler.helpers import NOW, pdb

REGISTRY = default_registry()


def _pod(name: str, on: str, cpu: str = "1", owned: bool = True) -> dict[str, Any]:
    b = pod(name).req(cpu=cpu, memory="1Gi").label("app", "web").node(on)
    if owned:
        b = b.owner("ReplicaSet", "web-rs", uid="rs-uid")
    obj: dict[str, Any] = b.obj()
    obj["status"] = {"phase": "Running"}
    return obj


def _decide(objects: list[dict[str, Any]], asks: list[MoveAsk], **kw: Any) -> list[Any]:
    state = from_manifests(objects, now=NOW)
    profile = load_config(None, REGISTRY, source="<test>").profiles[0]
    out, _ = decide_moves(asks, state, profile, REGISTRY, **kw)
    return out


NODES = [
    node("small").cap(cpu="4", memory="16Gi", pods="110").obj(),
    node("big").cap(cpu="16", memory="64Gi", pods="110").obj(),
]


def test_an_infeasible_resize_moves_where_the_resized_pod_fits() -> None:
    out = _decide(
        [*NODES, _pod("web-1", "small")], [MoveAsk("default/web-1", "resize Infeasible", (6000, 2**30))]
    )
    assert [(o.to, o.refused) for o in out] == [("big", "")]


def test_without_a_node_that_fits_the_move_is_refused_with_the_reason() -> None:
    out = _decide(
        [*NODES, _pod("web-1", "small")], [MoveAsk("default/web-1", "resize Infeasible", (32000, 2**30))]
    )
    assert out[0].to == "" and "fit on no node" in out[0].refused


@pytest.mark.parametrize(
    ("case", "extra", "kw", "refusal"),
    [
        (
            "a PodDisruptionBudget with no disruption left",
            [pdb("b", "web", minAvailable=1)],
            {},
            "disruption",
        ),
        ("moved within the cool-down", [], {"recent": {"owner:rs-uid": NOW - 60}}, "cool-down"),
    ],
)
def test_budgets_and_cooldown_refuse(
    case: str, extra: list[dict[str, Any]], kw: dict[str, Any], refusal: str
) -> None:
    out = _decide(
        [*NODES, _pod("web-1", "small"), *extra], [MoveAsk("default/web-1", "why", (6000, 2**30))], **kw
    )
    assert out[0].to == "" and refusal in out[0].refused, case


def test_the_rate_limit_takes_the_first_asks_only() -> None:
    objs = [*NODES, _pod("web-1", "small", cpu="500m"), _pod("web-2", "small", cpu="500m")]
    asks = [MoveAsk(f"default/web-{i}", "why", (6000, 2**30)) for i in (1, 2)]
    out = _decide(objs, asks, max_per_run=1)
    assert out[0].to == "big"
    assert out[1].to == "" and "rate limit" in out[1].refused


def test_unreplicated_pods_are_protected() -> None:
    out = _decide(
        [*NODES, _pod("bare", "small", owned=False)], [MoveAsk("default/bare", "why", (6000, 2**30))]
    )
    assert out[0].refused == "protected by the default evictor"
