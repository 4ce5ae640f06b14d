"""Figures computed with a scheduler's own model — reported for comparison, labelled as model figures,
and never used to judge a placement (the ground truth in ``harmonic.sim.truth`` does that).

``latency_critical_slowdowns`` is the slowdown the Dissonance plugin's default model predicts for every
running latency-critical pod: its node's CPU held by each workload class (the pod itself excluded),
times the model's latency-critical row. A profile that optimises this model is bound to look good by it.
"""

from __future__ import annotations

import numpy as np

from harmonic.framework.snapshot import CPU_COL, Snapshot
from harmonic.signals.classes import CLASS_INDEX, CLASSES, WorkloadClass, classify
from harmonic.signals.dissonance import DissonanceModel

_MODEL = DissonanceModel()


def latency_critical_slowdowns(snap: Snapshot) -> list[float]:
    lc = CLASS_INDEX[WorkloadClass.LATENCY_CRITICAL]
    row = _MODEL.matrix[lc]
    out: list[float] = []
    for slot, pods in enumerate(snap.pods):
        if not pods or not snap.live[slot]:
            continue
        alloc = float(snap.allocatable[slot, CPU_COL])
        if alloc <= 0:
            continue
        load = np.zeros(len(CLASSES))
        lc_cpu: list[float] = []
        for p in pods.values():
            c = CLASS_INDEX[classify(p)]
            load[c] += p.nonzero_cpu
            if c == lc:
                lc_cpu.append(p.nonzero_cpu)
        if not lc_cpu:
            continue
        base = float(load @ row) / alloc
        out.extend(base - row[lc] * cpu / alloc for cpu in lc_cpu)
    return out
