"""NodeUnschedulable — Filter.

Rejects nodes with ``spec.unschedulable`` unless the pod tolerates the
``node.kubernetes.io/unschedulable:NoSchedule`` taint. No args.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.api.taints import NO_SCHEDULE, Taint, tolerated
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Hint, Resource
from harmonic.framework.interface import FilterPlugin
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code
from harmonic.framework.verdicts import Verdicts

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", NO_SCHEDULE)


class NodeUnschedulable(FilterPlugin):
    NAME: ClassVar[str] = "NodeUnschedulable"
    NODE_LOCAL: ClassVar[bool] = True

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        bad = snap.unschedulable[slots]
        if not bad.any() or tolerated(pod.tolerations, UNSCHEDULABLE_TAINT):
            return None
        return Verdicts.failing(bad, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSCHEDULABLE)

    def events_to_register(self) -> Sequence[EventWithHint]:
        return (
            EventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_TAINT), hint_node_change
            ),
            EventWithHint(
                ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_TOLERATIONS), hint_toleration_change
            ),
        )


def hint_node_change(pod: Pod, old: Node | None, new: Node | None) -> Hint:
    """isSchedulableAfterNodeChange: a schedulable node was added, or a node became schedulable."""
    if new is None or new.unschedulable:
        return Hint.SKIP
    return Hint.QUEUE if old is None or old.unschedulable else Hint.SKIP


def hint_toleration_change(pod: Pod, old: Pod | None, new: Pod | None) -> Hint:
    """isSchedulableAfterPodTolerationChange: the pod itself now tolerates unschedulable nodes."""
    if new is not None and new.uid == pod.uid and tolerated(new.tolerations, UNSCHEDULABLE_TAINT):
        return Hint.QUEUE
    return Hint.SKIP
