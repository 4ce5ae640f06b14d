"""NodeUnschedulable — Filter.

Rejects nodes with ``spec.unschedulable`` unless the pod tolerates the
``node.kubernetes.io/unschedulable:NoSchedule`` taint. No args.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from harmonic.api.pod import Pod
from harmonic.api.taints import NO_SCHEDULE, Taint, tolerated
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Resource, own_update
from harmonic.framework.interface import FilterPlugin
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code
from harmonic.framework.verdicts import Verdicts

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", NO_SCHEDULE)


class NodeUnschedulable(FilterPlugin):
    NAME: ClassVar[str] = "NodeUnschedulable"

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        bad = snap.unschedulable[slots]
        if not bad.any() or tolerated(pod.tolerations, UNSCHEDULABLE_TAINT):
            return None
        return Verdicts.failing(bad, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSCHEDULABLE)

    def events_to_register(self) -> Sequence[EventWithHint]:
        return (
            EventWithHint(ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_TAINT)),
            EventWithHint(
                ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_TOLERATIONS),
                own_update(lambda old, new: old.tolerations != new.tolerations),
            ),
        )
