"""NodeName — Filter.

Rejects every node but the one named in ``spec.nodeName`` when it is set. No args.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Hint, Resource
from harmonic.framework.interface import FilterPlugin
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code
from harmonic.framework.verdicts import Verdicts

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName(FilterPlugin):
    NAME: ClassVar[str] = "NodeName"
    NODE_LOCAL: ClassVar[bool] = True

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        if not pod.node_name:
            return None
        return Verdicts.failing(
            snap.names()[slots] != pod.node_name, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON
        )

    def events_to_register(self) -> Sequence[EventWithHint]:
        return (EventWithHint(ClusterEvent(Resource.NODE, Action.ADD), hint_node_add),)


def hint_node_add(pod: Pod, old: Node | None, new: Node | None) -> Hint:
    """isSchedulableAfterNodeAdd: only the node the pod names can help."""
    if new is None or (pod.node_name and pod.node_name != new.name):
        return Hint.SKIP
    return Hint.QUEUE
