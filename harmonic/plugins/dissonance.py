"""Dissonance — PreScore, Score, and optionally Filter.

Keeps workloads that interfere apart. Every pod has a workload class (``harmonic.signals.classes``:
annotation ``harmonic.dev/class`` or inferred); the dissonance model (``harmonic.signals.dissonance``)
says how much each class slows each other class per unit of node CPU it holds. Placing pod ``p``
(class ``c``, CPU share ``s`` of node ``n``) adds

    cost(n) = importance[c] * sum_k M[c][k] * I_k(n)           (what p would suffer)
            + s * sum_k importance[k] * N_k(n) * M[k][c]        (what p would inflict on others)

where ``I_k`` is the share of the node's CPU held by class-``k`` pods and ``N_k`` their number, plus
what the placement sets up for later arrivals: for an aggressor, the harm to latency-critical pods
expected to choose this node; for a latency-critical pod, the change in its kind's exposure to the
batch expected to fill the CPU the node leaves free (docs/harmony.md). The score is
``100 - 100 * cost / costScale`` clamped to 0..100: an absolute scale. With
``latencyCriticalMaxSlowdown`` set, Filter also rejects nodes where a latency-critical pod (``p`` or
one already there) would be predicted to slow down by more than that fraction — as
UnschedulableAndUnresolvable, so preemption never evicts pods to meet it. With
``filterLatencyCritical`` false it rejects only the pods that would slow latency-critical pods already
there, never a latency-critical pod itself: a replica kept out of every node it would suffer on does not
run at all, which after a failure leaves its workload in fewer zones.

Args (DissonanceArgs): ``latencyCriticalMaxSlowdown`` (float >= 0, default unset = no filter),
``filterLatencyCritical`` (true), ``filterBasis`` (``model``: the filter predicts with the whole model;
``evidence``: only with the entries the feedback loop's reports have pinned down,
``DissonanceModel.evidence``, so it refuses nothing until the loop has learnt),
``anticipatedLatencyCritical`` (1.0), ``latencyCriticalTolerance`` (0.25), ``expectedBatchShare``
(0..1, 0.5), ``costScale`` (1.0), ``matrix`` (victim class -> aggressor class -> slowdown, overriding the model's defaults),
``importance`` (class -> weight), ``zoneNeutral`` (true: a latency-critical pod's scores are relative
to the best candidate in each zone, so Dissonance picks nodes inside zones and leaves the choice of zone
to spreading), ``zoneLabel`` (``topology.kubernetes.io/zone``). The model comes from the handle service ``dissonance`` when
present (so the feedback loop can update it), else it is built from these args; a workload the loop
learnt to suffer unlike its class suffers by its own row (``DissonanceModel.victim_row``), and what a
pod inflicts on such pods counts by their rows (``OwnRowLoad``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from harmonic.api.node import ZONE_LABEL
from harmonic.api.pod import Pod
from harmonic.framework.args import PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Resource
from harmonic.framework.interface import MAX_NODE_SCORE, FilterPlugin, PreScorePlugin, ScorePlugin
from harmonic.framework.services import Need
from harmonic.framework.snapshot import CPU_COL, Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.signals.classes import CLASS_INDEX, CLASSES, WorkloadClass, classify
from harmonic.signals.dissonance import DISSONANCE, DissonanceModel
from harmonic.signals.dissonance_rows import OwnRowLoad

ERR_REASON_LIMIT = "node(s) would slow latency-critical pods beyond the dissonance limit"
MODEL_SERVICE = DISSONANCE.name
_PRESCORE_KEY = "PreScoreDissonance"
#: Costs are fractions; scores are integers, so keep this much resolution.
_RESOLUTION = 10_000


class DissonanceArgs(PluginArgs):
    latency_critical_max_slowdown: float | None = Field(default=None, ge=0)
    filter_latency_critical: bool = True
    filter_basis: Literal["model", "evidence"] = "model"
    anticipated_latency_critical: float = Field(default=1.0, ge=0)
    latency_critical_tolerance: float = Field(default=0.25, gt=0)
    cost_scale: float = Field(default=1.0, gt=0)
    expected_batch_share: float = Field(default=0.5, ge=0, le=1)
    matrix: dict[str, dict[str, float]] = Field(default_factory=dict)
    importance: dict[str, float] = Field(default_factory=dict)
    zone_neutral: bool = True
    zone_label: str = Field(default=ZONE_LABEL, min_length=1)

    @field_validator("matrix")
    @classmethod
    def _matrix(cls, v: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        DissonanceModel(overrides=v)  # raises ValueError naming the bad class or value
        return v

    @field_validator("importance")
    @classmethod
    def _importance(cls, v: dict[str, float]) -> dict[str, float]:
        DissonanceModel(importance=v)
        return v


def _cpu(pod: Pod) -> float:
    return float(pod.nonzero_cpu)


class ClassLoad:
    """Per node slot: CPU (millicores, non-zero requests) held by each workload class, then the
    number of pods of each class — one row per slot, so a cycle gathers one row per candidate."""

    def __init__(self, snap: Snapshot) -> None:
        self.table = np.zeros((snap.capacity, 2 * len(CLASSES)), dtype=np.float64)
        #: Pods of each class in the whole cluster.
        self.total_count = [0] * len(CLASSES)
        for slot, pod in snap.all_pods():
            self.pod_added(snap, slot, pod)
        snap.listeners.append(self)

    def _grow(self, capacity: int) -> None:
        extra = capacity - len(self.table)
        if extra > 0:
            self.table = np.pad(self.table, ((0, extra), (0, 0)))

    def pod_added(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        self._grow(snap.capacity)
        c = CLASS_INDEX[classify(pod)]
        self.table[slot, c] += _cpu(pod)
        self.table[slot, len(CLASSES) + c] += 1
        self.total_count[c] += 1

    def pod_removed(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        c = CLASS_INDEX[classify(pod)]
        self.table[slot, c] -= _cpu(pod)
        self.table[slot, len(CLASSES) + c] -= 1
        self.total_count[c] -= 1

    def node_changed(self, snap: Snapshot, slot: int, old: Any, new: Any) -> None:
        self._grow(snap.capacity)


class Dissonance(FilterPlugin, PreScorePlugin, ScorePlugin):
    NAME: ClassVar[str] = "Dissonance"
    Args: ClassVar[type[PluginArgs]] = DissonanceArgs
    NEEDS: ClassVar[tuple[Need, ...]] = (
        Need(
            DISSONANCE,
            "uses the model its args give (matrix, importance); no feedback updates it",
            optional=True,
        ),
    )

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.cfg: DissonanceArgs = args
        self._own_model = DissonanceModel(overrides=args.matrix, importance=args.importance)
        self._model: DissonanceModel | None = None
        self._load = ClassLoad(handle.snapshot)
        self._own = OwnRowLoad(handle.snapshot)
        self._inv_key: tuple[int, int] | None = None
        self._inv = np.zeros(0)
        self._weight_cache: dict[tuple[int, int, int, object], tuple[np.ndarray, np.ndarray]] = {}

    @property
    def model(self) -> DissonanceModel:
        """The ``dissonance`` service's model when the scheduler offers one (the feedback loop updates
        it), else the model built from this plugin's args. Services are fixed when the scheduler is
        built, so the lookup happens once."""
        if self._model is None:
            served = self.handle.optional_service(DISSONANCE)
            self._model = self._own_model if served is None else served
        return self._model

    @property
    def node_local(self) -> bool:
        # Without a hard cap, or on evidence before there is any, the filter passes every node, reading
        # nothing.
        if self.cfg.latency_critical_max_slowdown is None:
            return True
        return self.cfg.filter_basis == "evidence" and not self._lc_evidence()

    def _lc_evidence(self) -> bool:
        return bool(self.model.evidence[CLASS_INDEX[WorkloadClass.LATENCY_CRITICAL]].any())

    # ------------------------------------------------------------------ filter
    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        limit = self.cfg.latency_critical_max_slowdown
        if limit is None:
            return None
        ci = CLASS_INDEX[classify(pod)]
        lc = CLASS_INDEX[WorkloadClass.LATENCY_CRITICAL]
        if ci == lc and not self.cfg.filter_latency_critical:
            return None
        if ci == lc:
            checked = slots
        else:
            # Only nodes already holding latency-critical pods have someone for the limit to protect.
            if self._load.total_count[lc] <= 0:
                return None
            at_risk = np.flatnonzero(self._load.table[:, len(CLASSES) + lc].take(slots) > 0)
            if not at_risk.size:
                return None
            checked = slots.take(at_risk)
        model = self.model
        row = model.matrix[lc]
        if self.cfg.filter_basis == "evidence":
            # What the prior alone predicts refuses nothing: a prior that is wrong would keep the wrong
            # pods out, and a refusal keeps a pod waiting.
            if not self._lc_evidence():
                return None
            row = np.where(model.evidence[lc], row, 0.0)
        inv_alloc = self._inv_alloc(snap).take(checked)
        # The slowdown a latency-critical pod would see there once this pod is placed.
        load = self._load.table.take(checked, axis=0)[:, : len(CLASSES)] @ row
        lc_after = (load + _cpu(pod) * row[ci]) * inv_alloc
        over = lc_after > limit
        if not over.any():
            return None
        if ci == lc:
            bad = over
        else:
            bad = np.zeros(len(slots), dtype=bool)
            bad[at_risk] = over
        # UnschedulableAndUnresolvable: preemption must not evict anyone to make room that resources alone
        # would not need — removing pods is never how a harmony limit should be met.
        return Verdicts.failing(bad, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_LIMIT)

    # ------------------------------------------------------------------ score
    def _inv_alloc(self, snap: Snapshot) -> np.ndarray:
        """1 / allocatable CPU per slot (0 where none), rebuilt only when nodes change."""
        if self._inv_key != (snap.node_generation, snap.capacity):
            alloc = snap.allocatable[:, CPU_COL]
            self._inv = np.divide(1.0, alloc, out=np.zeros(len(alloc), dtype=np.float64), where=alloc > 0)
            self._inv_key = (snap.node_generation, snap.capacity)
        return self._inv

    def _weights(self, model: DissonanceModel, ci: int, cpu: float, pod: Pod) -> np.ndarray:
        """[2 * classes, 2] columns for the load table: the cost per unit of node CPU (what the pod
        suffers from each class's CPU, what it inflicts on each class's pods with its ``cpu``), then
        the node's latency-critical slowdown. The parts are cached per model version."""
        workload, own = model.victim_row(pod, ci)
        key = (id(model), model.version, ci, workload)
        hit = self._weight_cache.get(key)
        if hit is None:
            n = len(CLASSES)
            lc = CLASS_INDEX[WorkloadClass.LATENCY_CRITICAL]
            suffer = np.zeros((2 * n, 2))
            suffer[:n, 0] = model.importance[ci] * own
            suffer[:n, 1] = model.matrix[lc]
            inflict = np.zeros((2 * n, 2))
            inflict[n:, 0] = model.importance * model.matrix[:, ci]
            hit = self._weight_cache[key] = (suffer, inflict)
        suffer, inflict = hit
        return suffer + cpu * inflict

    @staticmethod
    def _batch_slowdown(model: DissonanceModel) -> float:
        """How much a node full of batch slows a latency-critical pod: the mean over batch classes."""
        lc = CLASS_INDEX[WorkloadClass.LATENCY_CRITICAL]
        batch = [
            CLASS_INDEX[c]
            for c in (WorkloadClass.BATCH_CPU, WorkloadClass.BATCH_MEMORY, WorkloadClass.BATCH_IO)
        ]
        return float(model.matrix[lc, batch].mean())

    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        model = self.model
        ci = CLASS_INDEX[classify(pod)]
        lc = CLASS_INDEX[WorkloadClass.LATENCY_CRITICAL]
        cpu = _cpu(pod)
        inv_alloc = self._inv_alloc(snap).take(slots)
        rows = self._load.table.take(slots, axis=0)
        # suffered = (cpu by class . importance[c] M[c]) / alloc; inflicted = (count by class .
        # importance * M[:, c]) * pod cpu / alloc; column 1 is the node's latency-critical slowdown.
        both = rows @ self._weights(model, ci, cpu, pod)
        cost = both[:, 0] * inv_alloc
        own = self._own.excess(model)
        if own is not None:  # pods whose own learnt rows say they suffer from this class unlike theirs
            cost += cpu * inv_alloc * own.take(slots, axis=0)[:, ci]
        if ci != lc and self.cfg.anticipated_latency_critical > 0:
            # Latency-critical pods still to come will pick the cleanest nodes; the expected number a
            # node gets falls from ``anticipated`` on a clean node to 0 once its predicted
            # latency-critical slowdown reaches the tolerance. Harm to them is a cost now, which
            # packs aggressors together and keeps clean nodes clean.
            room = 1.0 - both[:, 1] * inv_alloc * (1.0 / self.cfg.latency_critical_tolerance)
            np.clip(room, 0.0, 1.0, out=room)
            factor = self.cfg.anticipated_latency_critical * model.importance[lc] * model.matrix[lc, ci] * cpu
            cost += room * inv_alloc * factor
        if ci == lc and self.cfg.expected_batch_share > 0:
            # The mirror image: the CPU a node leaves free is where later batch lands, and
            # ``expectedBatchShare`` of it is expected to go to batch. Every latency-critical pod on
            # the node is exposed to it; placing this pod adds one more exposed pod and takes its
            # CPU out of the room. Filling a node with latency-critical pods thus shelters those
            # already there, and whole nodes stay free for batch.
            n_lc = rows[:, len(CLASSES) + lc]
            free_before = 1.0 - snap.requested[slots, CPU_COL] * inv_alloc
            np.clip(free_before, 0.0, 1.0, out=free_before)
            free_after = np.maximum(free_before - cpu * inv_alloc, 0.0)
            exposure = (n_lc + 1.0) * free_after - n_lc * free_before
            batch_harm = model.importance[lc] * self.cfg.expected_batch_share * self._batch_slowdown(model)
            cost += exposure * batch_harm
        # Scores on an absolute scale, not relative to the best candidate, so small differences stay
        # small; that needs no NormalizeScore. A negative cost (the pod shelters the pods already
        # there) is as good as none.
        fixed = np.rint(cost * _RESOLUTION).astype(np.int64)
        fixed *= MAX_NODE_SCORE
        fixed //= int(self.cfg.cost_scale * _RESOLUTION)
        np.clip(fixed, 0, MAX_NODE_SCORE, out=fixed)
        scores = MAX_NODE_SCORE - fixed
        if ci == lc and self.cfg.zone_neutral and len(slots):
            # Choose nodes within zones, never zones: the best candidate of every zone scores the
            # same, so packing latency-critical pods never outweighs spreading a workload over zones.
            codes = snap.label(self.cfg.zone_label).codes[slots].astype(np.int64)
            group = np.where(codes >= 0, codes, int(codes.max(initial=-1)) + 1)
            best = np.zeros(int(group.max()) + 1, dtype=np.int64)
            np.maximum.at(best, group, scores)
            scores = scores + (MAX_NODE_SCORE - best[group])
        state.write(_PRESCORE_KEY, scores)
        return None

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        scores: np.ndarray = state.read(_PRESCORE_KEY)
        return scores

    def events_to_register(self) -> tuple[EventWithHint, ...]:
        return (
            EventWithHint(ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE)),
            EventWithHint(ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_ALLOCATABLE)),
            EventWithHint(ClusterEvent(Resource.MODEL, Action.ALL)),
        )
