"""NodeResourcesBalancedAllocation — PreScore, Score.

Favours nodes whose resource utilisations after placing the pod are close to each other:
``(1 - std) * 100`` truncated, where std is the standard deviation of each scored resource's
requested/allocatable fraction (capped at 1); with two resources it is ``|f1 - f2| / 2``. Requests
are the pods' actual requests (not the 100m/200Mi non-zero defaults). Resources the node does not
offer, and scalar resources the pod does not request, are left out. PreScore returns Skip for a pod
requesting none of the resources (a best-effort pod), so such pods do not pile up on one node.

Args (NodeResourcesBalancedAllocationArgs): ``resources`` [{name, weight}] (default cpu and memory;
weights must be 1).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import field_validator

from harmonic.api.pod import Pod
from harmonic.framework.args import PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import MAX_NODE_SCORE, PreScorePlugin, ScorePlugin
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.plugins.resourceallocation import (
    DEFAULT_RESOURCES,
    ResourceSpec,
    allocatable_and_requested,
    default_weights,
    pod_requests,
)

NAME = "NodeResourcesBalancedAllocation"
_PRESCORE_KEY = "PreScore" + NAME


class NodeResourcesBalancedAllocationArgs(PluginArgs):
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES

    @field_validator("resources")
    @classmethod
    def _valid(cls, v: tuple[ResourceSpec, ...]) -> tuple[ResourceSpec, ...]:
        v = default_weights(v)
        seen: set[str] = set()
        for i, r in enumerate(v):
            if r.name in seen:
                raise ValueError(f"resources[{i}].name: duplicate value {r.name!r}")
            seen.add(r.name)
            if r.weight != 1:
                raise ValueError(f"resources[{i}].weight: must be 1, got {r.weight}")
        return v


def balanced_scores(alloc: np.ndarray, requested: np.ndarray) -> np.ndarray:
    """balancedResourceScorer for each row, with Go's float64 operations in Go's order."""
    n, k = alloc.shape
    valid = alloc != 0
    frac = np.minimum(requested / np.where(valid, alloc, 1), 1.0)
    if k == 2 and valid.all():
        # The usual case (cpu and memory on every node).
        std2 = np.abs((frac[:, 0] - frac[:, 1]) / 2)
        return ((1 - std2) * float(MAX_NODE_SCORE)).astype(np.int64)
    count = valid.sum(axis=1)
    std = np.zeros(n, dtype=np.float64)

    two = count == 2
    if two.any():
        # The first and second scored resources of each row, in resource order.
        order = np.argsort(~valid[two], axis=1, kind="stable")
        rows = frac[two]
        first = rows[np.arange(len(rows)), order[:, 0]]
        second = rows[np.arange(len(rows)), order[:, 1]]
        std[two] = np.abs((first - second) / 2)

    many = count > 2
    if many.any():
        total = np.zeros(n, dtype=np.float64)
        for j in range(k):
            total = np.where(valid[:, j], total + frac[:, j], total)
        mean = total / np.where(many, count, 1)
        acc = np.zeros(n, dtype=np.float64)
        for j in range(k):
            d = frac[:, j] - mean
            acc = np.where(valid[:, j], acc + d * d, acc)
        std = np.where(many, np.sqrt(acc / np.where(many, count, 1)), std)

    return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


class NodeResourcesBalancedAllocation(PreScorePlugin, ScorePlugin):
    NAME: ClassVar[str] = NAME
    Args: ClassVar[type[PluginArgs]] = NodeResourcesBalancedAllocationArgs

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.names = [r.name for r in args.resources]

    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        req = pod_requests(pod, self.names, use_requested=True)
        if not req.any():
            return Status(Code.SKIP)
        state.write(_PRESCORE_KEY, req)
        return None

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        req: np.ndarray | None = state.get(_PRESCORE_KEY)
        if req is None:
            req = pod_requests(pod, self.names, use_requested=True)
            if not req.any():
                return np.zeros(len(slots), dtype=np.int64)
        alloc, requested = allocatable_and_requested(snap, slots, self.names, req, use_requested=True)
        return balanced_scores(alloc, requested)
