"""Preemption: find nodes where evicting lower-priority pods lets a pod fit, pick one, make room
(pkg/scheduler/framework/preemption).

``Evaluator.preempt`` is what a PostFilter plugin calls: check the pod may preempt, dry-run preemption
on the nodes whose filter rejection another pod's removal could resolve, pick the best candidate by
kube-scheduler's criteria, then clear lower-priority nominations on that node and evict the victims
through the cluster client. Which victims a node needs is the plugin's decision (``PreemptionPlugin``).

Determinism where Go is random or parallel: candidate nodes are walked in node-tree order starting at
the plugin's (seeded) random offset, one after another, as upstream's dry run does with parallelism 1;
Go iterates maps where it collects candidates, Harmonic keeps the order they were found in, so the
final "first node" tie-break is the first candidate found.

Asynchronous preemption (SchedulerAsyncPreemption, on by default upstream): the API calls run inside
PostFilter, in the order the asynchronous goroutine issues them (lower-priority nominations cleared
first, then victims), and are finished when PostFilter returns. The preemptor therefore never has to
be held back by DefaultPreemption's PreEnqueue while calls are in flight, so that gate is not needed.
A failed call fails the attempt with an Error status (the pod backs off and retries), as synchronous
preemption does; victims whose eviction may be refused by a PodDisruptionBudget are evicted first so a
refusal leaves the others untouched.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from harmonic.api.errors import ObjectError
from harmonic.api.pdb import PodDisruptionBudget
from harmonic.api.pod import Pod
from harmonic.api.timestamps import parse_time
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.diagnosis import Diagnosis
from harmonic.framework.interface import Handle, PostFilterResult
from harmonic.framework.services import NOMINATOR, PDBS
from harmonic.framework.snapshot import Snapshot, extra_key
from harmonic.framework.status import Code, Status

log = logging.getLogger(__name__)

PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
_START_KEY = extra_key("preemption", "startTime")
_PRIORITY_OFFSET = 2**31  # MaxInt32 + 1: keeps every priority positive when summed


@dataclass(slots=True)
class VictimSelection:
    """SelectVictimsOnNode's answer for one node: victims (most important first) or why none work."""

    victims: list[Pod]
    num_pdb_violations: int = 0
    status: Status | None = None


@dataclass(slots=True)
class Candidate:
    """A node the preemptor fits on once ``victims`` are gone."""

    node: str
    slot: int
    victims: list[Pod]
    num_pdb_violations: int


class PreemptionPlugin(Protocol):
    """What a preemption plugin decides (preemption.Interface)."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_code: Code) -> tuple[bool, str]: ...

    def select_victims_on_nodes(
        self, state: CycleState, pod: Pod, slots: np.ndarray, pdbs: Sequence[PodDisruptionBudget]
    ) -> Iterable[VictimSelection]:
        """SelectVictimsOnNode for each of ``slots``, in order (may be computed lazily)."""
        ...

    def ordered_score_funcs(self, candidates: Sequence[Candidate]) -> list[Callable[[Candidate], float]]:
        """Criteria to pick the node by, best score first; empty for kube-scheduler's defaults."""
        ...


# ---------------------------------------------------------------------- pods: start time, importance
def pod_start_time(pod: Pod) -> float:
    """``status.startTime`` in nanoseconds; a pod that has not started counts as starting now, i.e.
    later than every recorded start (util.GetPodStartTime), here ``math.inf``."""
    cached = pod.extra.get(_START_KEY)
    if cached is not None:
        value: float = cached
        return value
    raw = (pod.raw.get("status") or {}).get("startTime")
    value = math.inf
    if raw is not None:
        try:
            value = parse_time(f"Pod {pod.key}", "status.startTime", raw)
        except ObjectError as e:
            log.warning("treating the pod as not started: %s", e)
    pod.extra[_START_KEY] = value
    return value


def importance_key(pod: Pod) -> tuple[int, float]:
    """Sort key, most important first: higher priority, then earlier start (util.MoreImportantPod)."""
    return (-pod.priority, pod_start_time(pod))


def earliest_start_of_highest_priority(victims: Sequence[Pod]) -> float:
    """util.GetEarliestPodStartTime: the earliest start among the highest-priority victims."""
    top = max(p.priority for p in victims)
    return min(pod_start_time(p) for p in victims if p.priority == top)


def filter_pods_with_pdb_violation(
    pods: Iterable[Pod], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[Pod], list[Pod]]:
    """Split ``pods`` (order kept) into those whose eviction, in this order, would exceed a budget's
    ``disruptionsAllowed`` and the others. Pods the API server already counted (``disruptedPods``) do not
    consume the budget again."""
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[Pod] = []
    others: list[Pod] = []
    for pod in pods:
        violated = False
        if pod.labels:
            for i, pdb in enumerate(pdbs):
                if not pdb.guards_against_preemption(pod) or pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else others).append(pod)
    return violating, others


def pdbs_from_service(handle: Handle) -> list[PodDisruptionBudget]:
    """The current budgets of the ``pdbs`` service; none without it (a declared degraded mode)."""
    lister = handle.optional_service(PDBS)
    return [] if lister is None else list(lister())


# ---------------------------------------------------------------------- picking the node
def _fewest_pdb_violations(c: Candidate) -> float:
    return -c.num_pdb_violations


def _lowest_highest_priority(c: Candidate) -> float:
    return -max(p.priority for p in c.victims)


def _smallest_priority_sum(c: Candidate) -> float:
    return -sum(p.priority + _PRIORITY_OFFSET for p in c.victims)


def _fewest_victims(c: Candidate) -> float:
    return -len(c.victims)


def _latest_start_time(c: Candidate) -> float:
    return earliest_start_of_highest_priority(c.victims)


DEFAULT_SCORE_FUNCS: tuple[Callable[[Candidate], float], ...] = (
    _fewest_pdb_violations,
    _lowest_highest_priority,
    _smallest_priority_sum,
    _fewest_victims,
    _latest_start_time,
)


def pick_one_node_for_preemption(
    candidates: Sequence[Candidate], score_funcs: Sequence[Callable[[Candidate], float]] = ()
) -> Candidate:
    """pickOneNodeForPreemption: keep the best-scoring candidates under each criterion in turn until one
    is left; if several survive every criterion, the first. Defaults: fewest PDB violations, lowest
    highest victim priority, smallest sum of victim priorities, fewest victims, latest start of the
    highest-priority victims."""
    remaining = list(candidates)
    for f in score_funcs or DEFAULT_SCORE_FUNCS:
        scores = [f(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
        if len(remaining) == 1:
            break
    return remaining[0]


# ---------------------------------------------------------------------- messages
def aggregate_errors(messages: Sequence[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message as is, several deduplicated in brackets."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def fit_error_message(num_all_nodes: int, statuses: Iterable[Status], absent_reason: str) -> str:
    """FitError text over explicit node statuses, the remaining nodes counted with ``absent_reason``."""
    counts: Counter[str] = Counter()
    explicit = 0
    for st in statuses:
        explicit += 1
        for reason in st.reasons:
            counts[reason] += 1
    if explicit < num_all_nodes:
        counts[absent_reason] += num_all_nodes - explicit
    parts = sorted(f"{n} {reason}" for reason, n in counts.items())
    msg = f"0/{num_all_nodes} nodes are available:"
    return f"{msg} {', '.join(parts)}." if parts else msg


def node_status_codes(diagnosis: Diagnosis, snap: Snapshot) -> np.ndarray:
    """Filter status code per slot (NodeToStatus): nodes without an explicit status get the absent
    status (what PreFilter said about the nodes it excluded, UnschedulableAndUnresolvable otherwise)."""
    absent = diagnosis.absent_status.code if diagnosis.absent_status is not None else None
    codes = np.full(snap.capacity, int(absent or Code.UNSCHEDULABLE_AND_UNRESOLVABLE), dtype=np.int8)
    for o in diagnosis.outcomes:
        failed = o.codes != 0
        codes[o.slots[failed]] = o.codes[failed]
    return codes


# ---------------------------------------------------------------------- the evaluator
class Evaluator:
    """preemption.Evaluator: runs preemption for ``plugin`` (the PreemptionPlugin deciding victims)."""

    def __init__(self, plugin_name: str, handle: Handle, plugin: PreemptionPlugin) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.plugin = plugin

    def preempt(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        """``(result, None)`` nominates ``result.nominated_node_name`` after making room there;
        ``(result with "", Unschedulable)`` means preemption cannot help (clear any nomination);
        ``(None, status)`` keeps the nomination as it is (not eligible, or an error)."""
        snap = self.handle.snapshot
        codes = node_status_codes(diagnosis, snap)
        nnn = pod.nominated_node_name
        nominated_code = Code(int(codes[snap.slot(nnn)])) if nnn and snap.has_node(nnn) else None
        if nominated_code is None:
            absent = diagnosis.absent_status
            nominated_code = absent.code if absent is not None else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        eligible, why = self.plugin.pod_eligible_to_preempt_others(pod, nominated_code)
        if not eligible:
            return None, Status(Code.UNSCHEDULABLE, why)

        all_slots = snap.order
        if len(all_slots) == 0:
            return None, Status(Code.ERROR, "no nodes available")
        potential = all_slots[codes[all_slots] == Code.UNSCHEDULABLE]
        candidates: list[Candidate] = []
        statuses: dict[int, Status] = {}
        if len(potential):
            pdbs = pdbs_from_service(self.handle)
            offset, num = self.plugin.get_offset_and_num_candidates(len(potential))
            candidates, statuses, errors = self.dry_run_preemption(state, pod, potential, pdbs, offset, num)
            if errors and not candidates:
                return None, Status(Code.ERROR, aggregate_errors(errors))
        if not candidates:
            msg = fit_error_message(len(all_slots), statuses.values(), PREEMPTION_NOT_HELPFUL)
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, msg)

        best = self.select_candidate(candidates)
        st = self.prepare_candidate(best, pod)
        if st is not None:
            return None, st
        return PostFilterResult(best.node), None

    def candidates_on(
        self, state: CycleState, pod: Pod, slots: np.ndarray, nominated_code: Code
    ) -> tuple[list[Candidate], Status | None]:
        """Every one of ``slots`` where evicting victims lets ``pod`` fit, with those victims: ``preempt``'s
        eligibility check and dry run over exactly these nodes, none sampled, nothing picked or evicted.
        kube-scheduler's extender preempt verb asks this of the nodes it proposes. ``state`` is the
        cycle's PreFilter state; ``nominated_code`` is the Filter status code of the pod's nominated node.
        The status says why the pod may not preempt at all, or carries the dry run's errors when no node
        qualifies."""
        eligible, why = self.plugin.pod_eligible_to_preempt_others(pod, nominated_code)
        if not eligible:
            return [], Status(Code.UNSCHEDULABLE, why)
        if len(slots) == 0:
            return [], None
        pdbs = pdbs_from_service(self.handle)
        candidates, _, errors = self.dry_run_preemption(state, pod, slots, pdbs, 0, len(slots))
        if errors and not candidates:
            return [], Status(Code.ERROR, aggregate_errors(errors))
        return candidates, None

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: Pod,
        potential: np.ndarray,
        pdbs: Sequence[PodDisruptionBudget],
        offset: int,
        num_candidates: int,
    ) -> tuple[list[Candidate], dict[int, Status], list[str]]:
        """DryRunPreemption over ``potential`` from ``offset`` (wrapping around): candidates (those that
        violate no budget first), the statuses of the nodes that are not, and error messages.

        At most ``num_candidates`` of each kind are kept, and the walk stops once a non-violating
        candidate exists and ``num_candidates`` were kept in all. Nodes are handed to the plugin in
        chunks: first as many as candidates are missing, then as many as the success rate so far says
        are needed for the rest. The plugin may evaluate a chunk lazily; results past the stopping point
        are ignored."""
        snap = self.handle.snapshot
        order = np.concatenate((potential[offset:], potential[:offset])) if offset else potential
        clean: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[int, Status] = {}
        errors: list[str] = []
        pos = size = succeeded = 0
        while pos < len(order):
            missing = max(num_candidates - len(clean) - len(violating), 0 if clean else 1)
            # Enough nodes for the missing candidates at the success rate seen so far.
            size = max(missing, -(-missing * pos // succeeded) if succeeded else 2 * size)
            batch = order[pos : pos + size]
            pos += len(batch)
            selections = self.plugin.select_victims_on_nodes(state, pod, batch, pdbs)
            for slot, sel in zip(batch.tolist(), selections, strict=True):
                name = snap.node(slot).name
                if sel.status is None and sel.victims:
                    succeeded += 1
                    kept = clean if sel.num_pdb_violations == 0 else violating
                    if len(kept) < num_candidates:
                        kept.append(Candidate(name, slot, sel.victims, sel.num_pdb_violations))
                    if clean and len(clean) + len(violating) >= num_candidates:
                        return clean + violating, statuses, errors
                    continue
                st = sel.status or Status(Code.ERROR, f'expected at least one victim pod on node "{name}"')
                if st.code == Code.ERROR:
                    errors.append(st.message)
                statuses[slot] = st
        return clean + violating, statuses, errors

    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate:
        if len(candidates) == 1:
            return candidates[0]
        return pick_one_node_for_preemption(candidates, self.plugin.ordered_score_funcs(candidates))

    def prepare_candidate(self, c: Candidate, pod: Pod) -> Status | None:
        """Clear the nominations of lower-priority pods on the node, then evict the victims (waiting pods
        are rejected at Permit instead; pods already terminating are left alone)."""
        client = self.handle.client
        nominator = self.handle.optional_service(NOMINATOR)
        if nominator is not None:
            for p in list(nominator.nominated_pods_for_node(c.node)):
                if p.priority < pod.priority and p.nominated_node_name:
                    st = client.set_nominated_node(p, "")
                    if st is not None and not st.is_success:
                        log.warning("cannot clear the nominated node of %s: %s", p.key, st.message)
        violating, others = filter_pods_with_pdb_violation(c.victims, pdbs_from_service(self.handle))
        message = f"Preempted by pod {pod.uid} on node {c.node}"
        for victim in violating + others:
            if victim.deleting:
                continue
            waiting = self.handle.waiting_pod(victim.uid)
            if waiting is not None:
                waiting.reject(self.plugin_name, "preempted")
                continue
            st = client.evict(victim, message)
            if st is not None and not st.is_success:
                return Status(Code.ERROR, f"evicting pod {victim.key}: {st.message}")
        return None


@runtime_checkable
class Preempting(Protocol):
    """A PostFilter plugin that preempts through an ``Evaluator`` (DefaultPreemption, CapacityScheduling)."""

    evaluator: Evaluator
