"""NodeResourcesFit — PreFilter, Filter, PreScore, Score.

Filter: the node must have room for the pod's requests (CPU, memory, ephemeral storage, extended
and other scalar resources) and for one more pod; every shortfall is a reason ("Insufficient cpu",
"Too many pods"), status Unschedulable.

Score, by ``scoringStrategy.type``:
- ``LeastAllocated`` (default): weighted mean over resources of ``(capacity - requested) * 100 / capacity``;
- ``MostAllocated``: weighted mean of ``requested * 100 / capacity`` (requested capped at capacity);
- ``RequestedToCapacityRatio``: a piecewise-linear ``shape`` over utilisation (score 0..10 scaled to 0..100),
  weighted mean rounded half away from zero, counting only resources scoring above 0.
CPU and memory are scored with non-zero requests (100m / 200Mi for containers that set none).

Args (NodeResourcesFitArgs): ``ignoredResources``, ``ignoredResourceGroups`` (extended resources the
filter skips), ``scoringStrategy`` {``type``, ``resources`` [{name, weight}] (default cpu:1, memory:1),
``requestedToCapacityRatio`` {``shape`` [{utilization, score}]}}.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from itertools import pairwise
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, field_validator, model_validator

from harmonic.api.pod import Pod
from harmonic.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, is_extended_resource
from harmonic.framework.args import PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Hint, Resource, own_update
from harmonic.framework.interface import (
    MAX_NODE_SCORE,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from harmonic.framework.snapshot import CPU_COL, EPHEMERAL_COL, MEMORY_COL, PODS_COL, Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.plugins.helpers import go_div

_PREFILTER_KEY = "PreFilterNodeResourcesFit"
_PRESCORE_KEY = "PreScoreNodeResourcesFit"
MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10


class ScoringStrategyType(StrEnum):
    LEAST_ALLOCATED = "LeastAllocated"
    MOST_ALLOCATED = "MostAllocated"
    REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"


class ResourceSpec(PluginArgs):
    name: str = Field(min_length=1)
    weight: int = Field(default=1, ge=0, le=100)

    @field_validator("weight")
    @classmethod
    def _default_weight(cls, v: int) -> int:
        return v or 1


DEFAULT_RESOURCES = (ResourceSpec(name=CPU, weight=1), ResourceSpec(name=MEMORY, weight=1))


class UtilizationShapePoint(PluginArgs):
    utilization: int = Field(ge=0, le=MAX_UTILIZATION)
    score: int = Field(ge=0, le=MAX_CUSTOM_PRIORITY_SCORE)


class RequestedToCapacityRatioParam(PluginArgs):
    shape: tuple[UtilizationShapePoint, ...] = Field(min_length=1)

    @field_validator("shape")
    @classmethod
    def _increasing(cls, shape: tuple[UtilizationShapePoint, ...]) -> tuple[UtilizationShapePoint, ...]:
        for a, b in pairwise(shape):
            if b.utilization <= a.utilization:
                raise ValueError("utilization values must be sorted in increasing order")
        return shape


class ScoringStrategy(PluginArgs):
    type: ScoringStrategyType = ScoringStrategyType.LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    @field_validator("resources")
    @classmethod
    def _resources(cls, v: tuple[ResourceSpec, ...]) -> tuple[ResourceSpec, ...]:
        if not v:
            return DEFAULT_RESOURCES
        names = [r.name for r in v]
        if len(set(names)) != len(names):
            raise ValueError("resource names must be unique")
        return v

    @model_validator(mode="after")
    def _shape_for_rtcr(self) -> ScoringStrategy:
        if (
            self.type == ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO
            and self.requested_to_capacity_ratio is None
        ):
            raise ValueError("requestedToCapacityRatio.shape is required for type RequestedToCapacityRatio")
        return self


class NodeResourcesFitArgs(PluginArgs):
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = ScoringStrategy()

    @field_validator("ignored_resource_groups")
    @classmethod
    def _groups(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for g in v:
            if "/" in g:
                raise ValueError(f"resource group name {g!r} can't contain '/'")
        return v


_FIXED_REASONS = (
    "Too many pods",
    "Insufficient cpu",
    "Insufficient memory",
    "Insufficient ephemeral-storage",
)


class _PreFilterState:
    __slots__ = ("cols", "reasons", "vec")

    def __init__(self, vec: np.ndarray, cols: np.ndarray, reasons: tuple[str, ...]) -> None:
        self.vec = vec
        #: Resource columns checked, in reason order (pods first).
        self.cols = cols
        self.reasons = reasons

    def clone(self) -> _PreFilterState:
        return self


def broken_linear(shape: Sequence[tuple[int, int]], p: np.ndarray) -> np.ndarray:
    """helper.BuildBrokenLinearFunction over an array of utilisations (Go integer arithmetic)."""
    out = np.full(p.shape, shape[-1][1], dtype=np.int64)
    done = np.zeros(p.shape, dtype=bool)
    for i, (u, s) in enumerate(shape):
        hit = ~done & (p <= u)
        if i == 0:
            out[hit] = s
        else:
            u0, s0 = shape[i - 1]
            out[hit] = s0 + go_div((s - s0) * (p[hit] - u0), u - u0)
        done |= hit
    return out


class NodeResourcesFit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    NAME: ClassVar[str] = "NodeResourcesFit"
    Args: ClassVar[type[PluginArgs]] = NodeResourcesFitArgs

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.fit_args: NodeResourcesFitArgs = args
        strategy = args.scoring_strategy
        self.strategy = strategy.type
        self.resources = [(r.name, r.weight) for r in strategy.resources]
        self.shape: list[tuple[int, int]] = []
        if strategy.requested_to_capacity_ratio is not None:
            scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
            self.shape = [
                (p.utilization, p.score * scale) for p in strategy.requested_to_capacity_ratio.shape
            ]
        self._ignored = set(args.ignored_resources)
        self._ignored_groups = set(args.ignored_resource_groups)

    # ------------------------------------------------------------------ filter
    def _checked(self, name: str) -> bool:
        ignored = name in self._ignored or name.split("/", 1)[0] in self._ignored_groups
        return not (is_extended_resource(name) and ignored)

    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        vec = snap.pod_vector(pod)
        cols = [PODS_COL]
        reasons = [_FIXED_REASONS[0]]
        if (
            vec[CPU_COL]
            or vec[MEMORY_COL]
            or vec[EPHEMERAL_COL]
            or any(v for k, v in pod.requests.items() if k not in (CPU, MEMORY, EPHEMERAL_STORAGE))
        ):
            for col, reason in (
                (CPU_COL, _FIXED_REASONS[1]),
                (MEMORY_COL, _FIXED_REASONS[2]),
                (EPHEMERAL_COL, _FIXED_REASONS[3]),
            ):
                if vec[col] > 0:
                    cols.append(col)
                    reasons.append(reason)
            for name in sorted(pod.requests):
                col = snap.resource_index[name]
                if col <= PODS_COL or vec[col] == 0 or not self._checked(name):
                    continue
                cols.append(col)
                reasons.append(f"Insufficient {name}")
        state.write(_PREFILTER_KEY, _PreFilterState(vec, np.asarray(cols), tuple(reasons)))
        return None, None

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        s: _PreFilterState = state.read(_PREFILTER_KEY)
        cols = s.cols
        need = s.vec[cols]
        free = snap.allocatable[np.ix_(slots, cols)] - snap.requested[np.ix_(slots, cols)]
        short = need > free
        if not short.any():
            return None
        bits = short.astype(np.int64) @ (np.int64(1) << np.arange(len(cols), dtype=np.int64))
        v = Verdicts.from_bits(bits, Code.UNSCHEDULABLE, s.reasons)
        # A request beyond the node's whole allocatable cannot be met by evicting anything:
        # UnschedulableAndUnresolvable, so preemption skips the node. The pod count never is.
        beyond = (need[1:] > snap.allocatable[np.ix_(slots, cols[1:])]).any(axis=1)
        if beyond.any():
            v.code[beyond] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return v

    # ------------------------------------------------------------------ score
    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        req = []
        for name, _ in self.resources:
            if name == CPU:
                req.append(pod.nonzero_cpu)
            elif name == MEMORY:
                req.append(pod.nonzero_memory)
            else:
                req.append(pod.requests.get(name, 0))
        state.write(_PRESCORE_KEY, np.asarray(req, dtype=np.int64))
        return None

    def allocatable_and_requested(
        self, snap: Snapshot, slots: np.ndarray, pod_req: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """[nodes, resources] capacity and requested-after-placement, zero capacity where a resource
        is not scored (a scalar the pod does not request, or one the node lacks)."""
        n, k = len(slots), len(self.resources)
        alloc = np.zeros((n, k), dtype=np.int64)
        requested = np.zeros((n, k), dtype=np.int64)
        for j, (name, _) in enumerate(self.resources):
            if name == CPU:
                alloc[:, j] = snap.allocatable[slots, CPU_COL]
                requested[:, j] = snap.nonzero[slots, 0] + pod_req[j]
            elif name == MEMORY:
                alloc[:, j] = snap.allocatable[slots, MEMORY_COL]
                requested[:, j] = snap.nonzero[slots, 1] + pod_req[j]
            else:
                col = snap.column(name)
                if col is None or (pod_req[j] == 0 and name != EPHEMERAL_STORAGE):
                    continue
                alloc[:, j] = snap.allocatable[slots, col]
                requested[:, j] = snap.requested[slots, col] + pod_req[j]
        return alloc, requested

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        pod_req: np.ndarray = state.read(_PRESCORE_KEY)
        alloc, requested = self.allocatable_and_requested(snap, slots, pod_req)
        weights = np.asarray([w for _, w in self.resources], dtype=np.int64)
        has = alloc > 0
        safe = np.where(has, alloc, 1)
        if self.strategy == ScoringStrategyType.LEAST_ALLOCATED:
            per = np.where(requested > alloc, 0, (alloc - requested) * MAX_NODE_SCORE // safe)
        elif self.strategy == ScoringStrategyType.MOST_ALLOCATED:
            per = np.minimum(requested, alloc) * MAX_NODE_SCORE // safe
        else:
            util = np.where(requested > alloc, MAX_UTILIZATION, requested * MAX_UTILIZATION // safe)
            per = broken_linear(self.shape, util)
            has = has & (per > 0)
        w = np.where(has, weights, 0)
        weight_sum = w.sum(axis=1)
        node_score = (np.where(has, per, 0) * w).sum(axis=1)
        safe_sum = np.where(weight_sum > 0, weight_sum, 1)
        if self.strategy == ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO:
            out = np.floor(node_score / safe_sum + 0.5).astype(np.int64)
        else:
            out = node_score // safe_sum
        return np.where(weight_sum > 0, out, 0)

    # ------------------------------------------------------------------ requeueing
    def events_to_register(self) -> Sequence[EventWithHint]:
        return (
            EventWithHint(
                ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE | Action.UPDATE_POD_SCALE_DOWN), _pod_freed
            ),
            EventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    Action.ADD
                    | Action.UPDATE_NODE_ALLOCATABLE
                    | Action.UPDATE_NODE_TAINT
                    | Action.UPDATE_NODE_LABEL,
                ),
                _node_fits,
            ),
            EventWithHint(
                ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_SCALE_DOWN),
                own_update(lambda old, new: any(new.requests.get(k, 0) < v for k, v in old.requests.items())),
            ),
        )


def _pod_freed(pod: Pod, old: Any, new: Any) -> Hint:
    """An assigned pod went away or shrank: it may help if it held a resource this pod needs."""
    gone = old
    if gone is None:
        return Hint.SKIP
    if new is not None:
        freed = {k for k, v in gone.requests.items() if new.requests.get(k, 0) < v}
    else:
        freed = set(gone.requests) | {"pods"}
    wanted = {k for k, v in pod.requests.items() if v > 0} | {"pods"}
    return Hint.QUEUE if freed & wanted else Hint.SKIP


def _node_fits(pod: Pod, old: Any, new: Any) -> Hint:
    """A node appeared or changed: it may help if its allocatable could hold the pod at all."""
    if new is None:
        return Hint.SKIP
    for name, v in pod.requests.items():
        if v > new.allocatable.get(name, 0):
            return Hint.SKIP
    return Hint.QUEUE
