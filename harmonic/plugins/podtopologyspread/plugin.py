"""The PodTopologySpread plugin class: wires constraints, filtering and scoring to extension points."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from harmonic.api.errors import ObjectError
from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.api.workloads import Workloads
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Hint, Resource
from harmonic.framework.interface import (
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from harmonic.framework.services import WORKLOADS, Need
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.plugins.podtopologyspread import filtering, scoring
from harmonic.plugins.podtopologyspread.args import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULTING,
    PodTopologySpreadArgs,
)
from harmonic.plugins.podtopologyspread.constraints import (
    Constraint,
    compile_defaults,
    default_constraints,
    has_own_constraints,
    node_labels_have_keys,
    pod_constraints,
)

PRE_FILTER_KEY = "PreFilterPodTopologySpread"
PRE_SCORE_KEY = "PreScorePodTopologySpread"


class PodTopologySpread(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    NAME: ClassVar[str] = "PodTopologySpread"
    Args: ClassVar[type[PodTopologySpreadArgs]] = PodTopologySpreadArgs

    def __init__(self, args: PodTopologySpreadArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self.defaults = compile_defaults([c.manifest() for c in args.effective_constraints])

    # ------------------------------------------------------------------ constraints
    @classmethod
    def needs(cls, args: PodTopologySpreadArgs) -> Sequence[Need]:
        # Only default constraints read the workloads' selectors.
        if not args.effective_constraints:
            return ()
        return (
            Need(WORKLOADS, "pods that declare no constraints get none, as if no workload selected them"),
        )

    def _workloads(self) -> Workloads | None:
        if not self.defaults:
            return None
        return self.handle.optional_service(WORKLOADS)

    def constraints(self, pod: Pod, action: str) -> tuple[Constraint, ...]:
        """The pod's constraints for ``action``, or the defaults when it declares none (getConstraints)."""
        if has_own_constraints(pod):
            return pod_constraints(pod, action)
        return default_constraints(pod, self.defaults, action, self._workloads())

    # ------------------------------------------------------------------ PreFilter / Filter
    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except ObjectError as e:
            return None, Status(Code.ERROR, f"obtaining pod's hard topology spread constraints: {e}")
        if not constraints:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, filtering.compute(snap, pod, constraints))
        return None, None

    def _pre_filter_state(self, state: CycleState) -> filtering.PreFilterState:
        return state.read_as(PRE_FILTER_KEY, filtering.PreFilterState)

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, slot: int) -> Status | None:
        filtering.update_with_pod(self._pre_filter_state(state), self.handle.snapshot, pod, added, slot, 1)
        return None

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, slot: int) -> Status | None:
        filtering.update_with_pod(self._pre_filter_state(state), self.handle.snapshot, pod, removed, slot, -1)
        return None

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        return filtering.filter_nodes(self._pre_filter_state(state), pod, slots)

    # ------------------------------------------------------------------ PreScore / Score
    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        if snap.num_nodes == 0:
            return Status(Code.SKIP)
        try:
            constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        except ObjectError as e:
            return Status(Code.ERROR, f"obtaining pod's soft topology spread constraints: {e}")
        if not constraints:
            return Status(Code.SKIP)
        # Nodes must carry every topology key unless the constraints are the system defaults, so that
        # nodes without a zone label still get hostname spreading.
        require_all = has_own_constraints(pod) or not self.system_defaulted
        state.write(PRE_SCORE_KEY, scoring.compute(snap, pod, constraints, slots, require_all))
        return None

    def _pre_score_state(self, state: CycleState) -> scoring.PreScoreState:
        return state.read_as(PRE_SCORE_KEY, scoring.PreScoreState)

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        return scoring.score(self._pre_score_state(state), slots)

    def normalize_score(
        self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        return scoring.normalize(self._pre_score_state(state), slots, scores)

    # ------------------------------------------------------------------ queueing hints
    def events_to_register(self) -> Sequence[EventWithHint]:
        pod_actions = Action.ADD | Action.UPDATE_POD_LABEL | Action.UPDATE_POD_TOLERATIONS | Action.DELETE
        node_actions = Action.ADD | Action.DELETE | Action.UPDATE_NODE_LABEL | Action.UPDATE_NODE_TAINT
        return (
            EventWithHint(ClusterEvent(Resource.POD, pod_actions), self._after_pod_change),
            EventWithHint(ClusterEvent(Resource.NODE, node_actions), self._after_node_change),
        )

    def _after_pod_change(self, pod: Pod, old: Any, new: Any) -> Hint:
        """isSchedulableAfterPodChange."""
        for other in (new, old):
            if other is not None and not _involved(other, pod):
                return Hint.SKIP
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except ObjectError:
            return Hint.QUEUE
        if old is not None and new is not None:
            if (
                pod.uid == new.uid
                and old.tolerations != new.tolerations
                and any(c.honors_taints for c in constraints)
            ):
                return Hint.QUEUE
            if old.labels == new.labels:
                return Hint.SKIP
            changed = any(
                c.selector.matches(old.labels) != c.selector.matches(new.labels) for c in constraints
            )
            return Hint.QUEUE if changed else Hint.SKIP
        changed_pod = new if new is not None else old
        return Hint.QUEUE if any(c.selector.matches(changed_pod.labels) for c in constraints) else Hint.SKIP

    def _after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> Hint:
        """isSchedulableAfterNodeChange."""
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except ObjectError:
            return Hint.QUEUE
        old_ok = old is not None and node_labels_have_keys(old.labels, constraints)
        new_ok = new is not None and node_labels_have_keys(new.labels, constraints)
        if old is not None and new is not None:
            if old_ok != new_ok:
                return Hint.QUEUE
            keys_changed = any(
                old.labels.get(c.topology_key) != new.labels.get(c.topology_key) for c in constraints
            )
            if new_ok and (keys_changed or old.taints != new.taints):
                return Hint.QUEUE
            return Hint.SKIP
        return Hint.QUEUE if (new_ok if new is not None else old_ok) else Hint.SKIP


def _involved(incoming: Pod, spreading: Pod) -> bool:
    """involvedInTopologySpreading: the pod itself, or a bound pod in the same namespace."""
    return incoming.uid == spreading.uid or (
        bool(incoming.node_name) and incoming.namespace == spreading.namespace
    )
