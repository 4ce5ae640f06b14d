"""TaintToleration — Filter, PreScore, Score (+NormalizeScore).

Filter rejects nodes with a NoSchedule/NoExecute taint the pod does not tolerate
(UnschedulableAndUnresolvable). Score counts the node's PreferNoSchedule taints the pod does not
tolerate; NormalizeScore reverses it so fewer intolerable taints score higher. No args.

Nodes share few distinct taint lists, so each distinct list is evaluated once per pod and the answer
is spread to nodes by the snapshot's ``taint_set`` ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.api.taints import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE, Taint, Toleration, tolerated
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Hint, Resource, own_update
from harmonic.framework.interface import FilterPlugin, PreScorePlugin, ScorePlugin
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.plugins.helpers import default_normalize_score


def err_reason_not_match(taint: Taint) -> str:
    """kube-scheduler's Filter reason, naming the first untolerated taint of the node."""
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


_PRESCORE_KEY = "PreScoreTaintToleration"


def _untolerated_per_taint_set(
    snap: Snapshot, tolerations: tuple[Toleration, ...], effect: str
) -> np.ndarray:
    """For each distinct taint list: how many of its taints of ``effect`` are untolerated."""
    out = np.zeros(len(snap.taint_sets), dtype=np.int64)
    for i, taints in enumerate(snap.taint_sets):
        out[i] = sum(1 for t in taints if t.effect == effect and not tolerated(tolerations, t))
    return out


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin):
    NAME: ClassVar[str] = "TaintToleration"
    NODE_LOCAL: ClassVar[bool] = True

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        if len(snap.taint_sets) == 1:  # no node has taints
            return None
        # FindMatchingUntoleratedTaint: the first NoSchedule/NoExecute taint (in the node's order) that
        # no toleration matches; each distinct taint list gets its own reason naming that taint.
        reasons: list[tuple[str, ...]] = [()]
        reason_of_set = np.zeros(len(snap.taint_sets), dtype=np.int32)
        for i, taints in enumerate(snap.taint_sets):
            first = next(
                (
                    t
                    for t in taints
                    if t.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerated(pod.tolerations, t)
                ),
                None,
            )
            if first is not None:
                reason = (err_reason_not_match(first),)
                if reason not in reasons:
                    reasons.append(reason)
                reason_of_set[i] = reasons.index(reason)
        if len(reasons) == 1:
            return None
        reason = reason_of_set[snap.taint_set[slots]]
        codes = np.where(reason > 0, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), np.int8(0)).astype(np.int8)
        return Verdicts(codes, reason, reasons)

    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        prefer = tuple(t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE))
        state.write(_PRESCORE_KEY, prefer)
        return None

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        if len(snap.taint_sets) == 1:
            return np.zeros(len(slots), dtype=np.int64)
        prefer = state.read(_PRESCORE_KEY)
        per_set = _untolerated_per_taint_set(snap, prefer, PREFER_NO_SCHEDULE)
        return per_set[snap.taint_set[slots]]

    def normalize_score(
        self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        return default_normalize_score(scores, reverse=True)

    def events_to_register(self) -> Sequence[EventWithHint]:
        return (
            EventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_TAINT), hint_node_change
            ),
            # isSchedulableAfterPodTolerationChange: the pod's own tolerations changed in number.
            EventWithHint(
                ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_TOLERATIONS),
                own_update(lambda old, new: len(old.tolerations) != len(new.tolerations)),
            ),
        )


def _untolerated(taints: tuple[Taint, ...], pod: Pod) -> bool:
    return any(t.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerated(pod.tolerations, t) for t in taints)


def hint_node_change(pod: Pod, old: Node | None, new: Node | None) -> Hint:
    """isSchedulableAfterNodeChange: queue when the node's NoSchedule/NoExecute taints went from
    untolerated (or absent node) to all tolerated."""
    if new is None or _untolerated(new.taints, pod):
        return Hint.SKIP
    return Hint.QUEUE if old is None or _untolerated(old.taints, pod) else Hint.SKIP
