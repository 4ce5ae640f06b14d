"""SchedulingGates — PreEnqueue.

Holds a pod out of the active queue while ``spec.schedulingGates`` is non-empty. No args.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from harmonic.api.pod import Pod
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Resource, own_update
from harmonic.framework.interface import PreEnqueuePlugin
from harmonic.framework.status import Code, Status


class SchedulingGates(PreEnqueuePlugin):
    NAME: ClassVar[str] = "SchedulingGates"

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.scheduling_gates:
            return None
        return Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]",
        )

    def events_to_register(self) -> Sequence[EventWithHint]:
        return (
            EventWithHint(
                ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                own_update(lambda old, new: bool(old.scheduling_gates) and not new.scheduling_gates),
            ),
        )
