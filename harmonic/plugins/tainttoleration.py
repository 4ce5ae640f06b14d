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

ERR_REASON_NOT_MATCH = "node(s) had untolerated taint(s)"
_PRESCORE_KEY = "PreScoreTaintToleration"


def _per_taint_set(
    snap: Snapshot, tolerations: tuple[Toleration, ...], effects: tuple[str, ...], count: bool
) -> np.ndarray:
    """For each distinct taint list: whether one taint of ``effects`` is untolerated (or how many)."""
    out = np.zeros(len(snap.taint_sets), dtype=np.int64)
    for i, taints in enumerate(snap.taint_sets):
        n = 0
        for t in taints:
            if t.effect in effects and not tolerated(tolerations, t):
                n += 1
                if not count:
                    break
        out[i] = n
    return out


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin):
    NAME: ClassVar[str] = "TaintToleration"
    NODE_LOCAL: ClassVar[bool] = True

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        if len(snap.taint_sets) == 1:  # no node has taints
            return None
        bad_sets = _per_taint_set(snap, pod.tolerations, (NO_SCHEDULE, NO_EXECUTE), count=False)
        if not bad_sets.any():
            return None
        bad = bad_sets[snap.taint_set[slots]] > 0
        return Verdicts.failing(bad, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_NOT_MATCH)

    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        prefer = tuple(t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE))
        state.write(_PRESCORE_KEY, prefer)
        return None

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        if len(snap.taint_sets) == 1:
            return np.zeros(len(slots), dtype=np.int64)
        prefer = state.read(_PRESCORE_KEY)
        per_set = _per_taint_set(snap, prefer, (PREFER_NO_SCHEDULE,), count=True)
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
