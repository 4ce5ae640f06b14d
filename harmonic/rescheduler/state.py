"""What the rescheduler reads about the cluster: nodes, pods (bound and pending), PDBs, namespaces, time.

Built from manifests (``kubectl get -o json`` shape) by the live loop, the simulator or the CLI; plugins
read pods' status fields (restarts, container states) from the raw manifest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harmonic.api.errors import ObjectError
from harmonic.api.node import Node, parse_node
from harmonic.api.pdb import PodDisruptionBudget, parse_pdb
from harmonic.api.pod import Pod, parse_pod
from harmonic.api.timestamps import parse_time


@dataclass
class ClusterState:
    nodes: list[Node]
    pods: list[Pod]
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    #: Namespace name -> labels (DefaultEvictor's namespaceLabelSelector).
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Seconds since the Unix epoch (virtual in the simulator).
    now: float = 0.0
    #: PriorityClass name -> value (DefaultEvictor's priorityThreshold.name).
    priority_classes: dict[str, int] = field(default_factory=dict)
    #: "namespace/claim" -> storage class name (the PodsWithPVC protection's protectedStorageClasses).
    claim_classes: dict[str, str] = field(default_factory=dict)

    def pods_on(self, node: str, terminal: bool = False) -> list[Pod]:
        """Pods bound to ``node``; Succeeded/Failed ones only with ``terminal`` (ListAllPodsOnANode)."""
        return [p for p in self.pods if p.node_name == node and (terminal or not p.is_terminal)]

    def pending(self) -> list[Pod]:
        return [p for p in self.pods if not p.node_name and not p.is_terminal and not p.deleting]


def from_manifests(objects: Iterable[Mapping[str, Any]], now: float = 0.0) -> ClusterState:
    """Sort Node, Pod, PodDisruptionBudget and Namespace manifests into a state; others are ignored."""
    state = ClusterState([], [], now=now)
    for obj in objects:
        kind = obj.get("kind")
        if kind == "Node":
            state.nodes.append(parse_node(obj))
        elif kind == "Pod":
            state.pods.append(parse_pod(obj))
        elif kind == "PodDisruptionBudget":
            state.pdbs.append(parse_pdb(obj))
        elif kind == "Namespace":
            meta = obj.get("metadata") or {}
            state.namespaces[str(meta.get("name"))] = dict(meta.get("labels") or {})
        elif kind == "PriorityClass":
            value = obj.get("value")
            if not isinstance(value, int):
                raise ObjectError(
                    f"PriorityClass {(obj.get('metadata') or {}).get('name')}", "value", "must be an integer"
                )
            state.priority_classes[str((obj.get("metadata") or {}).get("name"))] = value
        elif kind == "PersistentVolumeClaim":
            meta = obj.get("metadata") or {}
            key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
            state.claim_classes[key] = str((obj.get("spec") or {}).get("storageClassName") or "")
    return state


def created_at(pod: Pod) -> float | None:
    """Creation time in epoch seconds, or None when the manifest has none."""
    if not pod.creation_timestamp:
        return None
    return parse_time(f"Pod {pod.key}", "metadata.creationTimestamp", pod.creation_timestamp) / 1e9


def started_at(pod: Pod) -> float | None:
    status = pod.raw.get("status") or {}
    if not status.get("startTime"):
        return None
    return parse_time(f"Pod {pod.key}", "status.startTime", status["startTime"]) / 1e9


def container_statuses(pod: Pod, kind: str = "containerStatuses") -> list[Mapping[str, Any]]:
    statuses = (pod.raw.get("status") or {}).get(kind) or []
    if not isinstance(statuses, list):
        raise ObjectError(f"Pod {pod.key}", f"status.{kind}", "must be a list")
    return [s for s in statuses if isinstance(s, Mapping)]


def volumes(pod: Pod) -> list[Mapping[str, Any]]:
    return [v for v in pod.spec.get("volumes") or () if isinstance(v, Mapping)]
