"""OwnRowLoad: the excess suffering of pods with their own learnt rows, per node, kept with the snapshot."""

from __future__ import annotations

import numpy as np
import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.framework.snapshot import Snapshot
from harmonic.signals.classes import CLASS_INDEX, WorkloadClass
from harmonic.signals.dissonance import DissonanceModel
from harmonic.signals.dissonance_rows import OwnRowLoad
from harmonic.signals.identity import WorkloadKey
from harmonic.testing import node, pod

LC, BC = CLASS_INDEX[WorkloadClass.LATENCY_CRITICAL], CLASS_INDEX[WorkloadClass.BATCH_CPU]


def _web(name: str) -> object:
    return parse_pod(pod(name).owner("ReplicaSet", "web").req(cpu="1").obj())


def test_follows_pods_and_is_rebuilt_when_the_model_changes() -> None:
    snap = Snapshot()
    for n in ("a", "b"):
        snap.set_node(parse_node(node(n).cap(cpu="4").obj()))
    load = OwnRowLoad(snap)
    model = DissonanceModel()
    snap.add_pod(_web("web-1"), "a")
    assert load.excess(model) is None  # no rows of their own: nothing to add
    row = model.matrix[LC].copy()
    row[BC] += 1.0
    model.workload_rows = {WorkloadKey("default", "web"): row}
    model.version += 1
    ex = load.excess(model)
    assert ex is not None
    a, b = snap.slot("a"), snap.slot("b")
    assert ex[a, BC] == pytest.approx(1.0) and ex[b, BC] == 0  # importance of LC is 1
    # pods arriving and leaving update it without a rebuild
    p2 = _web("web-2")
    snap.add_pod(p2, "b")
    assert load.excess(model)[b, BC] == pytest.approx(1.0)  # type: ignore[index]
    snap.remove_pod(p2, "b")
    assert load.excess(model)[b, BC] == pytest.approx(0.0)  # type: ignore[index]
    assert np.count_nonzero(load.excess(model)[:, [c for c in range(6) if c != BC]]) == 0  # type: ignore[index]
