"""DefaultPreemption — PostFilter.

When no node fits a pod, find nodes where evicting pods of lower priority makes it fit, choose the
fewest and least important victims on each (PodDisruptionBudget-protected ones reprieved first), pick
the node by kube-scheduler's criteria and make room there; the scheduler then nominates the pod to it
(``status.nominatedNodeName``). See ``harmonic.framework.preemption`` for the shared machinery.

Victims on a node (SelectVictimsOnNode): every pod of lower priority is removed (in the shared
snapshot, in place, with the PreFilter plugins' RemovePod extensions on a cloned cycle state); if the
pod then still fails the filters the node is no candidate. Otherwise the removed pods are added back
one by one, most important first (higher priority, then earlier start), budget-violating ones before
the others, and every pod the preemptor no longer fits beside is a victim. The snapshot is restored
afterwards.

When no PreFilter plugin that ran keeps AddPod/RemovePod-maintained state (the common case), victim
selection runs for a whole chunk of nodes at once: all their lower-priority pods are removed, the
nodes filtered together, then the k-th reprieve of every node is tried together. Each node's verdict
depends only on its own row of the snapshot and the unchanged cycle state then, so the outcome equals
the node-by-node walk; it costs a few array-wide filter calls instead of one per node and pod.

Args (DefaultPreemptionArgs): ``minCandidateNodesPercentage`` (0..100, default 10) and
``minCandidateNodesAbsolute`` (>= 0, default 100), not both 0: the dry run looks for
``max(nodes * percentage / 100, absolute)`` candidates (at most the number of nodes), starting at a
random node (seeded: the same inputs give the same choices).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cmp_to_key
from typing import Any, ClassVar

import numpy as np
from pydantic import field_validator, model_validator

from harmonic.api.node import Node
from harmonic.api.pdb import PodDisruptionBudget
from harmonic.api.pod import Pod
from harmonic.framework.args import PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.diagnosis import Diagnosis, FilterOutcome
from harmonic.framework.interface import PostFilterPlugin, PostFilterResult
from harmonic.framework.preemption import (
    Candidate,
    Evaluator,
    VictimSelection,
    filter_pods_with_pdb_violation,
    importance_key,
)
from harmonic.framework.services import PREEMPTION_NEEDS, Need
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
#: Seed of the random starting node of the dry run.
OFFSET_SEED = 0


class DefaultPreemptionArgs(PluginArgs):
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    @field_validator("min_candidate_nodes_percentage")
    @classmethod
    def _percentage(cls, v: int) -> int:
        if not 0 <= v <= 100:
            raise ValueError(f"Invalid value: {v}: not in valid range [0, 100]")
        return v

    @field_validator("min_candidate_nodes_absolute")
    @classmethod
    def _absolute(cls, v: int) -> int:
        if v < 0:
            raise ValueError(f"Invalid value: {v}: not in valid range [0, inf)")
        return v

    @model_validator(mode="after")
    def _not_both_zero(self) -> DefaultPreemptionArgs:
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            raise ValueError(
                "minCandidateNodesPercentage and minCandidateNodesAbsolute cannot both be zero "
                "(Invalid value: 0: cannot be zero at the same time as the other)"
            )
        return self


#: is_eligible_pod(node, victim, preemptor): may ``victim`` be preempted by ``preemptor`` at all.
EligibilityFn = Callable[[Node, Pod, Pod], bool]
#: more_important_pod(a, b): is ``a`` more important than ``b`` (preempted later).
ImportanceFn = Callable[[Pod, Pod], bool]


class DefaultPreemption(PostFilterPlugin):
    NAME: ClassVar[str] = "DefaultPreemption"
    NODE_LOCAL: ClassVar[bool] = True
    Args: ClassVar[type[PluginArgs]] = DefaultPreemptionArgs
    NEEDS: ClassVar[tuple[Need, ...]] = PREEMPTION_NEEDS

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.preemption_args: DefaultPreemptionArgs = args
        self.evaluator = Evaluator(self.NAME, handle, self)
        #: Extra eligibility rule on top of "lower priority than the preemptor" (IsEligiblePod).
        self.is_eligible_pod: EligibilityFn | None = None
        #: Victim ordering other than priority then start time (MoreImportantPod).
        self.more_important_pod: ImportanceFn | None = None
        #: Random starting offset in [0, n) of the dry run (getOffsetRand).
        self.offset_rand: Callable[[int], int] = random.Random(OFFSET_SEED).randrange
        #: The ``num_nodes`` of every offset drawn by the latest ``post_filter`` call: a scheduler that
        #: replays a repeated failure instead of re-running it draws them again (``replay_offsets``), so
        #: the generator's sequence, and every later preemption's starting node, stay the same.
        self.offset_draws: list[int] = []
        #: Evaluate whole chunks of nodes at once when the filters allow it (see the module docstring).
        self.batch_dry_run = True

    # ------------------------------------------------------------------ PostFilter
    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        self.offset_draws = []
        result, st = self.evaluator.preempt(state, pod, diagnosis)
        if st is not None and st.message:
            return result, Status(st.code, f"preemption: {st.message}")
        return result, st

    # ------------------------------------------------------------------ preemption.Interface
    def calculate_num_candidates(self, num_nodes: int) -> int:
        a = self.preemption_args
        n = num_nodes * a.min_candidate_nodes_percentage // 100
        return min(max(n, a.min_candidate_nodes_absolute), num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        self.offset_draws.append(num_nodes)
        return self.offset_rand(num_nodes), self.calculate_num_candidates(num_nodes)

    def replay_offsets(self, draws: Sequence[int]) -> None:
        """Draw the offsets a replayed ``post_filter`` call drew (see ``offset_draws``)."""
        for n in draws:
            self.offset_rand(n)

    def ordered_score_funcs(self, candidates: Sequence[Candidate]) -> list[Callable[[Candidate], float]]:
        return []

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_code: Code) -> tuple[bool, str]:
        """A pod may not preempt with ``preemptionPolicy: Never``, nor while a pod it may preempt is still
        terminating, because of preemption, on its nominated node (unless that node is now unusable)."""
        if pod.preemption_policy == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nnn = pod.nominated_node_name
        if nnn:
            if nominated_node_code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            snap: Snapshot = self.handle.snapshot
            if snap.has_node(nnn):
                slot = snap.slot(nnn)
                node = snap.node(slot)
                for p in snap.pods_on(slot):
                    if self._may_preempt(node, p, pod) and _terminating_by_preemption(p):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def select_victims_on_nodes(
        self, state: CycleState, pod: Pod, slots: np.ndarray, pdbs: Sequence[PodDisruptionBudget]
    ) -> Iterable[VictimSelection]:
        if self.batch_dry_run and self.handle.runner.filters_node_local(state):
            return self._select_together(state, pod, slots, pdbs)
        return self._select_one_by_one(state, pod, slots, pdbs)

    # ------------------------------------------------------------------ victims, node by node
    def _select_one_by_one(
        self, state: CycleState, pod: Pod, slots: np.ndarray, pdbs: Sequence[PodDisruptionBudget]
    ) -> Iterator[VictimSelection]:
        for slot in slots.tolist():
            yield self.select_victims_on_node(state.clone(), pod, slot, pdbs)

    def select_victims_on_node(
        self, state: CycleState, pod: Pod, slot: int, pdbs: Sequence[PodDisruptionBudget]
    ) -> VictimSelection:
        """SelectVictimsOnNode; ``state`` is the caller's copy and is modified."""
        snap: Snapshot = self.handle.snapshot
        runner = self.handle.runner
        node = snap.node(slot)
        potential = [p for p in snap.pods_on(slot) if self._may_preempt(node, p, pod)]
        if not potential:
            return VictimSelection([], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS))
        one = np.asarray([slot], dtype=np.int64)
        with _Removals(snap, [slot]) as removals:

            def filter_ok() -> Status | None:
                out, st = runner.run_filters_with_nominated_pods(state, pod, snap, one)
                return st if st is not None else _status_at(out, 0)

            for p in potential:
                removals.remove([(slot, p)])
                st = runner.run_pre_filter_extension_remove_pod(state, pod, p, slot)
                if st is not None:
                    return VictimSelection([], 0, st)
            st = filter_ok()
            if st is not None:
                return VictimSelection([], 0, st)
            violating, others = self._reprieve_order(potential, pdbs)
            victims: list[Pod] = []
            num_violating = 0
            for p, is_violating in [(p, True) for p in violating] + [(p, False) for p in others]:
                removals.restore([(slot, p)])
                st = runner.run_pre_filter_extension_add_pod(state, pod, p, slot)
                if st is not None:
                    return VictimSelection([], 0, st)
                if filter_ok() is None:
                    continue
                removals.remove([(slot, p)])
                st = runner.run_pre_filter_extension_remove_pod(state, pod, p, slot)
                if st is not None:
                    return VictimSelection([], 0, st)
                victims.append(p)
                num_violating += is_violating
        return VictimSelection(self._final_order(victims, violating, others), num_violating)

    # ------------------------------------------------------------------ victims, many nodes at once
    def _select_together(
        self, state: CycleState, pod: Pod, slots: np.ndarray, pdbs: Sequence[PodDisruptionBudget]
    ) -> list[VictimSelection]:
        """The node-by-node algorithm in lockstep over ``slots``; valid when the filters are node-local
        (no PreFilter extensions to run, so the cycle state is never modified). Falls back to the
        node-by-node walk when a filter errors, so errors are attributed to the right node."""
        snap: Snapshot = self.handle.snapshot
        runner = self.handle.runner
        slot_list = slots.tolist()
        results: list[VictimSelection | None] = [None] * len(slot_list)
        potential: dict[int, list[Pod]] = {}
        no_victims = VictimSelection([], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS))
        priority = pod.priority
        for i, slot in enumerate(slot_list):
            if self.is_eligible_pod is None:
                pv = [p for p in snap.pods[slot].values() if p.priority < priority]
            else:
                node = snap.node(slot)
                pv = [p for p in snap.pods[slot].values() if self._may_preempt(node, p, pod)]
            if pv:
                potential[i] = pv
            else:
                results[i] = no_victims
        errored = False
        with _Removals(snap, (slot_list[i] for i in potential)) as removals:
            removals.remove([(slot_list[i], p) for i, pv in potential.items() for p in pv])
            active = list(potential)
            out, st = runner.run_filters_with_nominated_pods(state, pod, snap, slots[active])
            survivors: list[int] = []
            if st is None:
                shared: dict[tuple[int, int, int], VictimSelection] = {}
                for j, i in enumerate(active):
                    code = int(out.codes[j])
                    if code == 0:
                        survivors.append(i)
                        continue
                    why = (code, int(out.reason_ids[j]), int(out.plugin_ids[j]))
                    if why not in shared:
                        shared[why] = VictimSelection([], 0, _status_at(out, j))
                    results[i] = shared[why]
            else:
                errored = True
            order = {i: self._reprieve_order(potential[i], pdbs) for i in survivors}
            sequence = {i: order[i][0] + order[i][1] for i in survivors}
            victims: dict[int, list[Pod]] = {i: [] for i in survivors}
            num_violating = dict.fromkeys(survivors, 0)
            k = 0
            while not errored:
                turn = [i for i in survivors if k < len(sequence[i])]
                if not turn:
                    break
                removals.restore([(slot_list[i], sequence[i][k]) for i in turn])
                out, st = runner.run_filters_with_nominated_pods(state, pod, snap, slots[turn])
                if st is not None:
                    errored = True
                    break
                rejected = [turn[j] for j in np.flatnonzero(out.codes).tolist()]
                removals.remove([(slot_list[i], sequence[i][k]) for i in rejected])
                for i in rejected:
                    victims[i].append(sequence[i][k])
                    num_violating[i] += k < len(order[i][0])
                k += 1
        if errored:
            return list(self._select_one_by_one(state, pod, slots, pdbs))
        for i in survivors:
            violating, others = order[i]
            results[i] = VictimSelection(self._final_order(victims[i], violating, others), num_violating[i])
        return [r for r in results if r is not None]

    # ------------------------------------------------------------------ helpers
    def _may_preempt(self, node: Node, victim: Pod, preemptor: Pod) -> bool:
        """isPreemptionAllowed: lower priority than the preemptor, and eligible by the custom rule."""
        if victim.priority >= preemptor.priority:
            return False
        return self.is_eligible_pod is None or self.is_eligible_pod(node, victim, preemptor)

    def _sorted(self, pods: list[Pod]) -> list[Pod]:
        """Most important first (stable: pods that compare equal keep their order on the node)."""
        more = self.more_important_pod
        if more is None:
            return sorted(pods, key=importance_key)

        def compare(a: Pod, b: Pod) -> int:
            return -1 if more(a, b) else (1 if more(b, a) else 0)

        return sorted(pods, key=cmp_to_key(compare))

    def _reprieve_order(
        self, potential: list[Pod], pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[Pod], list[Pod]]:
        return filter_pods_with_pdb_violation(self._sorted(potential), pdbs)

    def _final_order(self, victims: list[Pod], violating: list[Pod], others: list[Pod]) -> list[Pod]:
        """Victims most important first: reprieve order already is, unless both groups contributed."""
        return self._sorted(victims) if violating and others else victims


class _Removals:
    """Pods taken off nodes of the shared snapshot for a what-if evaluation. On exit every pod still
    removed is put back and each node's pod order restored, whatever happened in between."""

    def __init__(self, snap: Snapshot, slots: Iterable[int]) -> None:
        self._snap = snap
        self._order = {slot: dict(snap.pods[slot]) for slot in slots}
        self._out: dict[int, dict[str, Pod]] = {slot: {} for slot in self._order}

    def __enter__(self) -> _Removals:
        return self

    def remove(self, pods: list[tuple[int, Pod]]) -> None:
        self._snap.remove_pods_at(pods)
        for slot, pod in pods:
            self._out[slot][pod.uid] = pod

    def restore(self, pods: list[tuple[int, Pod]]) -> None:
        for slot, pod in pods:
            del self._out[slot][pod.uid]
        self._snap.add_pods_at(pods)

    def __exit__(self, *exc: object) -> None:
        snap = self._snap
        snap.add_pods_at([(slot, pod) for slot, out in self._out.items() for pod in out.values()])
        for slot, order in self._order.items():
            on_node = snap.pods[slot]
            on_node.clear()
            on_node.update(order)


def _status_at(out: FilterOutcome, i: int) -> Status | None:
    code = int(out.codes[i])
    if code == 0:
        return None
    return Status(
        Code(code), *out.reasons[int(out.reason_ids[i])], plugin=out.plugin_names[int(out.plugin_ids[i])]
    )


#: DisruptionTarget reasons of a preemption victim: kube-scheduler's (it patches the condition, then
#: deletes) and the Eviction API's, which Harmonic preempts through (the server sets that reason).
_PREEMPTION_REASONS = frozenset({"PreemptionByScheduler", "EvictionByEvictionAPI"})


def _terminating_by_preemption(pod: Pod) -> bool:
    """Being deleted, with a DisruptionTarget condition saying a scheduler preempted it. A pod evicted
    by someone else also counts: the preemptor then waits for a node that is freeing up anyway,
    rather than evicting more pods elsewhere."""
    if not pod.deleting:
        return False
    for cond in (pod.raw.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "DisruptionTarget":
            return bool(cond.get("status") == "True" and cond.get("reason") in _PREEMPTION_REASONS)
    return False
