"""NodeResourcesFit — PreFilter, Filter, PreScore, Score.

Filter: the node must have room for the pod's requests (CPU, memory, ephemeral storage, extended
and other scalar resources) and for one more pod; every shortfall is a reason, in upstream's order
("Too many pods", "Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage", then
scalar resources by name). The status is Unschedulable, or UnschedulableAndUnresolvable when some
request exceeds the node's whole allocatable (no preemption could make room).

Score, by ``scoringStrategy.type``:
- ``LeastAllocated`` (default): weighted mean over resources of ``(capacity - requested) * 100 / capacity``;
- ``MostAllocated``: weighted mean of ``requested * 100 / capacity`` (requested capped at capacity);
- ``RequestedToCapacityRatio``: a piecewise-linear ``shape`` over utilisation (score 0..10 scaled to 0..100),
  weighted mean rounded half away from zero, counting only resources scoring above 0.
CPU and memory are scored with non-zero requests (100m / 200Mi for containers that set none); scalar
resources the pod does not request and resources a node does not offer are left out.

Args (NodeResourcesFitArgs): ``ignoredResources``, ``ignoredResourceGroups`` (extended resources the
filter skips), ``scoringStrategy`` {``type``, ``resources`` [{name, weight}] (default cpu:1, memory:1;
a zero weight means 1, others must be in 1..100), ``requestedToCapacityRatio`` {``shape``
[{utilization 0..100, score 0..10}], utilizations strictly increasing}}.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum
from itertools import pairwise
from typing import Any, ClassVar

import numpy as np
from pydantic import field_validator, model_validator

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.api.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    is_extended_resource,
    is_scalar_resource_name,
)
from harmonic.framework.args import PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Hint, Resource
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
from harmonic.plugins.helpers import go_div, share
from harmonic.plugins.resourceallocation import (
    DEFAULT_RESOURCES,
    ResourceSpec,
    allocatable_and_requested,
    default_weights,
    pod_requests,
)

_PREFILTER_KEY = "PreFilterNodeResourcesFit"
_PRESCORE_KEY = "PreScoreNodeResourcesFit"
MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10
# metav1validation.ValidateLabelName: a qualified name, optionally prefixed by a DNS subdomain.
_QUALIFIED_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)


class ScoringStrategyType(StrEnum):
    LEAST_ALLOCATED = "LeastAllocated"
    MOST_ALLOCATED = "MostAllocated"
    REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"


class UtilizationShapePoint(PluginArgs):
    utilization: int
    score: int


class RequestedToCapacityRatioParam(PluginArgs):
    shape: tuple[UtilizationShapePoint, ...] = ()

    @field_validator("shape")
    @classmethod
    def _valid_shape(cls, shape: tuple[UtilizationShapePoint, ...]) -> tuple[UtilizationShapePoint, ...]:
        """validateFunctionShape."""
        if not shape:
            raise ValueError("at least one point must be specified")
        for i, (a, b) in enumerate(pairwise(shape), start=1):
            if a.utilization >= b.utilization:
                raise ValueError(
                    f"[{i}].utilization: {b.utilization}: utilization values must be sorted in increasing order"
                )
        for i, p in enumerate(shape):
            if not 0 <= p.utilization <= MAX_UTILIZATION:
                raise ValueError(
                    f"[{i}].utilization: {p.utilization}: not in valid range [0, {MAX_UTILIZATION}]"
                )
            if not 0 <= p.score <= MAX_CUSTOM_PRIORITY_SCORE:
                raise ValueError(
                    f"[{i}].score: {p.score}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"
                )
        return shape


class ScoringStrategy(PluginArgs):
    type: ScoringStrategyType
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    @field_validator("resources")
    @classmethod
    def _resources(cls, v: tuple[ResourceSpec, ...]) -> tuple[ResourceSpec, ...]:
        v = default_weights(v)
        for i, r in enumerate(v):
            if not 0 < r.weight <= 100:
                raise ValueError(
                    f"[{i}].weight: {r.weight}: resource weight of {r.name} not in valid range (0, 100]"
                )
        return v

    @model_validator(mode="after")
    def _shape_for_rtcr(self) -> ScoringStrategy:
        if (
            self.type == ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO
            and self.requested_to_capacity_ratio is None
        ):
            raise ValueError(
                "requestedToCapacityRatio.shape: Required value: at least one point must be specified"
            )
        return self


class NodeResourcesFitArgs(PluginArgs):
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = ScoringStrategy(type=ScoringStrategyType.LEAST_ALLOCATED)

    @field_validator("ignored_resources")
    @classmethod
    def _names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for i, name in enumerate(v):
            if not _QUALIFIED_NAME.match(name):
                raise ValueError(f"[{i}]: {name!r}: must be a qualified name (e.g. 'example.com/foo')")
        return v

    @field_validator("ignored_resource_groups")
    @classmethod
    def _groups(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for i, g in enumerate(v):
            if "/" in g:
                raise ValueError(f"[{i}]: {g!r}: resource group name can't contain '/'")
            if not _QUALIFIED_NAME.match(g):
                raise ValueError(f"[{i}]: {g!r}: must be a qualified name")
        return v


_FIXED = (
    (PODS_COL, "Too many pods"),
    (CPU_COL, "Insufficient cpu"),
    (MEMORY_COL, "Insufficient memory"),
    (EPHEMERAL_COL, "Insufficient ephemeral-storage"),
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


def scalar_requests(requests: dict[str, int]) -> list[str]:
    """The pod's scalar resources with a non-zero request, in a fixed (byte) order: upstream walks a Go
    map, so the order of several "Insufficient <scalar>" reasons is unspecified there."""
    return sorted(k for k, v in requests.items() if v and is_scalar_resource_name(k))


class NodeResourcesFit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    NAME: ClassVar[str] = "NodeResourcesFit"
    NODE_LOCAL: ClassVar[bool] = True
    Args: ClassVar[type[PluginArgs]] = NodeResourcesFitArgs

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        strategy = args.scoring_strategy
        self.strategy = strategy.type
        self.resources = [(r.name, r.weight) for r in strategy.resources]
        self.resource_names = [r.name for r in strategy.resources]
        self.weights = np.asarray([r.weight for r in strategy.resources], dtype=np.int64)
        self.weight_sum = int(self.weights.sum())
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
        if not is_extended_resource(name):
            return True
        return name not in self._ignored and name.split("/", 1)[0] not in self._ignored_groups

    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        vec = snap.pod_vector(pod)
        cols = [PODS_COL]
        reasons = ["Too many pods"]
        for col, reason in _FIXED[1:]:
            if vec[col] > 0:
                cols.append(col)
                reasons.append(reason)
        for name in scalar_requests(pod.requests):
            if self._checked(name):
                cols.append(snap.resource_index[name])
                reasons.append(f"Insufficient {name}")
        state.write(_PREFILTER_KEY, _PreFilterState(vec, np.asarray(cols), tuple(reasons)))
        return None, None

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        s: _PreFilterState = state.read(_PREFILTER_KEY)
        cols = s.cols
        need = s.vec[cols]
        alloc = snap.allocatable.take(slots, axis=0)[:, cols]
        short = need > alloc - snap.requested.take(slots, axis=0)[:, cols]
        if not short.any():
            return None
        bits = short.astype(np.int64) @ (np.int64(1) << np.arange(len(cols), dtype=np.int64))
        v = Verdicts.from_bits(bits, Code.UNSCHEDULABLE, s.reasons)
        # A request beyond the node's whole allocatable cannot be met by evicting pods; the pod
        # count never makes a node unresolvable.
        beyond = (need > alloc)[:, 1:].any(axis=1) if len(cols) > 1 else np.zeros(len(slots), dtype=bool)
        if beyond.any():
            v.code = np.where(beyond, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), v.code).astype(np.int8)
        return v

    # ------------------------------------------------------------------ score
    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        state.write(_PRESCORE_KEY, pod_requests(pod, self.resource_names, use_requested=False))
        return None

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        pod_req: np.ndarray | None = state.get(_PRESCORE_KEY)
        if pod_req is None:
            pod_req = pod_requests(pod, self.resource_names, use_requested=False)
        alloc, requested = allocatable_and_requested(
            snap, slots, self.resource_names, pod_req, use_requested=False
        )
        weights = self.weights
        has = alloc > 0
        safe = np.maximum(alloc, 1)
        if self.strategy == ScoringStrategyType.LEAST_ALLOCATED:
            # Negative free capacity (requested beyond capacity) scores 0, as does an unscored entry.
            per = share(np.maximum(alloc - requested, 0), safe)
        elif self.strategy == ScoringStrategyType.MOST_ALLOCATED:
            per = share(np.minimum(requested, alloc), safe)
        else:
            util = np.where(
                requested > alloc, MAX_UTILIZATION, share(np.minimum(requested, alloc), safe, MAX_UTILIZATION)
            )
            per = broken_linear(self.shape, util)
            has = has & (per > 0)
        if self.strategy != ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO and has.all():
            return (per * weights).sum(axis=1) // self.weight_sum
        w = np.where(has, weights, 0)
        weight_sum = np.maximum(w.sum(axis=1), 1)
        node_score = (np.where(has, per, 0) * w).sum(axis=1)
        if self.strategy == ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO:
            # math.Round of a non-negative quotient: half away from zero.
            return np.floor(node_score / weight_sum + 0.5).astype(np.int64)
        # A node scoring no resource has node_score 0, hence 0.
        return node_score // weight_sum

    # ------------------------------------------------------------------ requeueing
    def events_to_register(self) -> Sequence[EventWithHint]:
        return (
            EventWithHint(
                ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE | Action.UPDATE_POD_SCALE_DOWN), _pod_freed
            ),
            EventWithHint(
                ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_SCALE_DOWN), _own_scale_down
            ),
            EventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_ALLOCATABLE), hint_node_change
            ),
        )


def _pod_freed(pod: Pod, old: Any, new: Any) -> Hint:
    """isSchedulableAfterPodEvent: a deleted assigned pod may free room; a scaled-down one only if it
    shrank a resource this pod requests."""
    if old is None:
        return Hint.SKIP
    if new is None:
        return Hint.QUEUE
    wanted = [
        k
        for k, v in pod.requests.items()
        if v and (k in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource_name(k))
    ]
    return Hint.QUEUE if any(new.requests.get(k, 0) < old.requests.get(k, 0) for k in wanted) else Hint.SKIP


def _own_scale_down(pod: Pod, old: Any, new: Any) -> Hint:
    """isResourceScaleDown for an unscheduled pod: only the pod's own scale-down can help it (so a
    status-only update, which arrives as the general Update, does not requeue it)."""
    if new is None or new.uid != pod.uid:
        return Hint.SKIP
    return _pod_freed(pod, old, new)


def _fits_empty(pod: Pod, node: Node) -> bool:
    """Fits on an empty copy of ``node`` (isFit)."""
    if node.allocatable.get(PODS, 0) < 1:
        return False
    for name, v in pod.requests.items():
        if v <= 0 or not (name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource_name(name)):
            continue
        if v > node.allocatable.get(name, 0):
            return False
    return True


def hint_node_change(pod: Pod, old: Node | None, new: Node | None) -> Hint:
    """isSchedulableAfterNodeChange: a new node that could hold the pod, or an updated one whose
    allocatable grew for the pod count or a resource the pod requests."""
    if new is None or not _fits_empty(pod, new):
        return Hint.SKIP
    if old is None:
        return Hint.QUEUE
    if new.allocatable.get(PODS, 0) > old.allocatable.get(PODS, 0):
        return Hint.QUEUE
    for name, v in pod.requests.items():
        if v > 0 and new.allocatable.get(name, 0) > old.allocatable.get(name, 0):
            return Hint.QUEUE
    return Hint.SKIP
