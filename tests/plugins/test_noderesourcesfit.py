"""NodeResourcesFit's filter status codes (noderesources/fit.go, v1.33+): a request the node could
meet once other pods leave is Unschedulable; one beyond the node's whole allocatable is
UnschedulableAndUnresolvable (preemption skips such nodes); the pod count is never unresolvable."""

from __future__ import annotations

import numpy as np
import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code
from harmonic.plugins.noderesourcesfit import NodeResourcesFit, NodeResourcesFitArgs
from harmonic.testing import node, pod


@pytest.mark.parametrize(
    ("request_", "used", "code", "reasons"),
    [
        ({"cpu": "1"}, {"cpu": "3500m"}, Code.UNSCHEDULABLE, ("Insufficient cpu",)),
        ({"cpu": "5"}, {}, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient cpu",)),
        (
            {"cpu": "5", "memory": "1Gi"},
            {"memory": "8Gi"},
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ("Insufficient cpu", "Insufficient memory"),
        ),
        (
            {"example.com/gpu": "3"},
            {},
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ("Insufficient example.com/gpu",),
        ),
        ({"cpu": "100m"}, {"pods": True}, Code.UNSCHEDULABLE, ("Too many pods",)),
        ({"cpu": "4"}, {}, Code.SUCCESS, ()),
    ],
)
def test_filter_codes(request_, used, code, reasons):
    snap = Snapshot()
    snap.set_node(
        parse_node(
            node("n")
            .only(cpu="4", memory="8Gi", pods=1 if used.get("pods") else 10, **{"example.com/gpu": 2})
            .obj()
        )
    )
    if used:
        other = {k: v for k, v in used.items() if k != "pods"}
        snap.add_pod(parse_pod(pod("other").req(**other).obj()), "n")
    plugin = NodeResourcesFit(NodeResourcesFitArgs(), None)
    p = parse_pod(pod("p").req(**request_).obj())
    state = CycleState()
    plugin.pre_filter(state, p, snap)
    v = plugin.filter(state, p, snap, np.array([0]))
    if code == Code.SUCCESS:
        assert v is None
        return
    assert v is not None
    assert Code(int(v.code[0])) == code
    assert v.reasons[int(v.reason[0])] == reasons
