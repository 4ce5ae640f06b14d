"""NodeUnschedulable queueing hints (TestIsSchedulableAfterNodeChange, node_unschedulable_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.framework.events import Hint
from harmonic.plugins.nodeunschedulable import hint_node_change, hint_toleration_change
from harmonic.testing import node, pod


def _node(unschedulable: bool, taint: bool = False) -> Any:
    raw = node("n").obj()
    raw["spec"]["unschedulable"] = unschedulable
    if taint:
        raw["spec"]["taints"] = [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]
    return parse_node(raw)


POD = parse_pod(pod("p").obj())
HINTS = [
    ("skip-queue-on-unschedulable-node-added", None, _node(True), Hint.SKIP),
    ("queue-on-schedulable-node-added", None, _node(False), Hint.QUEUE),
    ("skip-unrelated-change", _node(True), _node(True, taint=True), Hint.SKIP),
    ("queue-on-unschedulable-field-change", _node(True), _node(False), Hint.QUEUE),
]


@pytest.mark.parametrize(("name", "old", "new", "want"), HINTS, ids=[h[0] for h in HINTS])
def test_node_change_hint(name: str, old: Any, new: Any, want: Hint) -> None:
    assert hint_node_change(POD, old, new) == want


def test_toleration_hint_queues_only_the_pod_that_now_tolerates() -> None:
    tolerating = parse_pod(
        pod("p").tolerate("node.kubernetes.io/unschedulable", effect="NoSchedule", operator="Exists").obj()
    )
    other = parse_pod(
        pod("q").tolerate("node.kubernetes.io/unschedulable", effect="NoSchedule", operator="Exists").obj()
    )
    assert hint_toleration_change(POD, POD, tolerating) == Hint.QUEUE
    assert hint_toleration_change(POD, None, other) == Hint.SKIP
    assert hint_toleration_change(POD, POD, POD) == Hint.SKIP
