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
    CSI_NODE = "CSINode"
    CSI_DRIVER = "CSIDriver"
    CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
    VOLUME_ATTACHMENT = "VolumeAttachment"
    POD_DISRUPTION_BUDGET = "PodDisruptionBudget"
    NAMESPACE = "Namespace"
    #: Harmonic's own signals (affinity graph, dissonance model) changed.
    MODEL = "Model"
    #: scheduler-plugins' CRDs, named as upstream registers custom events (<plural>.<version>.<group>).
    POD_GROUP = "podgroups.v1alpha1.scheduling.x-k8s.io"
    ELASTIC_QUOTA = "elasticquotas.v1alpha1.scheduling.x-k8s.io"
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

    @property
    def is_wildcard(self) -> bool:
        return self.resource == Resource.WILDCARD and self.action == Action.ALL

    def matches(self, incoming: ClusterEvent) -> bool:
        """Whether a registered event (self) covers an incoming one (ClusterEvent.Match)."""
        if self.is_wildcard:
            return True
        resource_ok = (
            self.resource == Resource.WILDCARD
            or self.resource == incoming.resource
            or (
                self.resource == Resource.POD
                and incoming.resource in (Resource.ASSIGNED_POD, Resource.UNSCHEDULED_POD)
            )
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


def own_update(changed: Callable[[Any, Any], bool]) -> QueueingHintFn:
    """A queueing hint for UnscheduledPod updates: Queue when the update is of the pod itself and
    ``changed(old, new)`` holds. Without it every status write to a pending pod (a condition, a
    nomination) would requeue it, since such updates arrive as the general Update."""

    def hint(pod: Any, old: Any, new: Any) -> Hint:
        if old is None or new is None or new.uid != pod.uid:
            return Hint.SKIP
        return Hint.QUEUE if changed(old, new) else Hint.SKIP

    return hint


#: What a plugin that registers no events of its own is interested in: everything.
ALL_EVENTS: tuple[EventWithHint, ...] = (EventWithHint(ClusterEvent(Resource.WILDCARD, Action.ALL)),)

ASSIGNED_POD_ADD = ClusterEvent(Resource.ASSIGNED_POD, Action.ADD)
ASSIGNED_POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE)
NODE_ADD = ClusterEvent(Resource.NODE, Action.ADD)
NODE_DELETE = ClusterEvent(Resource.NODE, Action.DELETE)


def node_update_events(old: Any, new: Any) -> list[ClusterEvent]:
    """The events a node update amounts to, one per changed property, in upstream's order
    (framework.NodeSchedulingPropertiesChange). ``spec.unschedulable`` counts as a taint change only when
    it is cleared: a node becoming unschedulable cannot help any pod."""
    actions: list[Action] = []
    if old.unschedulable and not new.unschedulable:
        actions.append(Action.UPDATE_NODE_TAINT)
    if old.allocatable != new.allocatable:
        actions.append(Action.UPDATE_NODE_ALLOCATABLE)
    if old.labels != new.labels:
        actions.append(Action.UPDATE_NODE_LABEL)
    if old.taints != new.taints:
        actions.append(Action.UPDATE_NODE_TAINT)
    if _condition_statuses(old) != _condition_statuses(new):
        actions.append(Action.UPDATE_NODE_CONDITION)
    if old.annotations != new.annotations:
        actions.append(Action.UPDATE_NODE_ANNOTATION)
    return [ClusterEvent(Resource.NODE, a) for a in actions]


def _condition_statuses(node: Any) -> dict[str, Any]:
    """Condition type -> status: heartbeats and messages are not scheduling properties."""
    conditions = (node.raw.get("status") or {}).get("conditions") or ()
    return {str(c.get("type")): c.get("status") for c in conditions if isinstance(c, dict)}


def pod_update_events(old: Any, new: Any) -> list[ClusterEvent]:
    """The events a pod update amounts to (framework.PodSchedulingPropertiesChange): on AssignedPod when
    the new pod is bound, on UnscheduledPod otherwise. With no specific change it is the general Update
    (every update bit), as upstream falls back to ``fwk.Update``."""
    resource = Resource.ASSIGNED_POD if new.node_name else Resource.UNSCHEDULED_POD
    actions: list[Action] = []
    if old.labels != new.labels:
        actions.append(Action.UPDATE_POD_LABEL)
    if any(new.requests.get(k, 0) < v for k, v in old.requests.items()):
        actions.append(Action.UPDATE_POD_SCALE_DOWN)
    if old.scheduling_gates and not new.scheduling_gates:
        actions.append(Action.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    # API validation only lets tolerations be added, so a length change is every possible change.
    if len(old.tolerations) != len(new.tolerations):
        actions.append(Action.UPDATE_POD_TOLERATIONS)
    return [ClusterEvent(resource, a) for a in actions or [Action.UPDATE]]
