"""Cluster events that can make a rejected pod schedulable, and queueing hints (framework.ClusterEvent).

Plugins declare the events that may resolve their rejections; the scheduling queue moves a pod out of
the unschedulable pool only when an event one of its rejecting plugins registered for occurs and the
plugin's hint (if any) says it may help.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, IntFlag, StrEnum
from typing import Any


class Resource(StrEnum):
    POD = "Pod"
    #: Events on pods already bound to a node (the cluster's state changes).
    ASSIGNED_POD = "AssignedPod"
    #: Events on the pending pod itself (its own spec changed).
    UNSCHEDULED_POD = "UnscheduledPod"
    NODE = "Node"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "StorageClass"
    POD_DISRUPTION_BUDGET = "PodDisruptionBudget"
    NAMESPACE = "Namespace"
    #: Harmonic's own signals (affinity graph, dissonance model) changed.
    MODEL = "Model"
    WILDCARD = "*"


class Action(IntFlag):
    ADD = 1
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_POD_LABEL = 1 << 7
    UPDATE_POD_SCALE_DOWN = 1 << 8
    UPDATE_POD_TOLERATIONS = 1 << 9
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 10
    UPDATE_POD_OTHER = 1 << 11
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATIONS
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_OTHER
    )
    ALL = ADD | DELETE | UPDATE


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: Resource
    action: Action
    label: str = ""

    def matches(self, incoming: ClusterEvent) -> bool:
        """Whether a registered event (self) covers an incoming one."""
        if self.resource == Resource.WILDCARD:
            return True
        resource_ok = self.resource == incoming.resource or (
            self.resource == Resource.POD
            and incoming.resource in (Resource.ASSIGNED_POD, Resource.UNSCHEDULED_POD)
        )
        return resource_ok and bool(self.action & incoming.action)


class Hint(Enum):
    QUEUE = "Queue"
    SKIP = "QueueSkip"


#: hint(pod, old_object, new_object) -> Hint. Objects are compiled views (Pod/Node) or None.
QueueingHintFn = Callable[[Any, Any, Any], Hint]


@dataclass(frozen=True, slots=True)
class EventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None


#: Events that requeue every unschedulable pod regardless of what rejected it.
UNSCHEDULABLE_TIMEOUT = ClusterEvent(Resource.WILDCARD, Action.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(Resource.WILDCARD, Action.ALL, "ForceActivate")


def node_update_action(old: Any, new: Any) -> Action:
    """Which node fields changed between two compiled nodes (framework.NodeSchedulingPropertiesChange)."""
    action = Action(0)
    if old.allocatable != new.allocatable:
        action |= Action.UPDATE_NODE_ALLOCATABLE
    if old.labels != new.labels:
        action |= Action.UPDATE_NODE_LABEL
    if old.taints != new.taints or old.unschedulable != new.unschedulable:
        action |= Action.UPDATE_NODE_TAINT
    if (old.raw.get("status") or {}).get("conditions") != (new.raw.get("status") or {}).get("conditions"):
        action |= Action.UPDATE_NODE_CONDITION
    if old.annotations != new.annotations:
        action |= Action.UPDATE_NODE_ANNOTATION
    return action


def pod_update_action(old: Any, new: Any) -> Action:
    """Which pod fields changed between two compiled pods (framework.PodSchedulingPropertiesChange)."""
    action = Action(0)
    if old.labels != new.labels:
        action |= Action.UPDATE_POD_LABEL
    if any(new.requests.get(k, 0) < v for k, v in old.requests.items()):
        action |= Action.UPDATE_POD_SCALE_DOWN
    if old.tolerations != new.tolerations:
        action |= Action.UPDATE_POD_TOLERATIONS
    if old.scheduling_gates and not new.scheduling_gates:
        action |= Action.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    return action or Action.UPDATE_POD_OTHER
