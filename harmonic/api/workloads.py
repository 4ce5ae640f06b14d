"""Selectors of the workload objects that select pods: Services, ReplicationControllers, ReplicaSets,
StatefulSets.

PodTopologySpread's default constraints need the label selector these objects imply for a pod
(upstream ``helper.DefaultSelector``). Plugins reach them through the handle service named
``"workloads"``, an object with the ``Workloads`` protocol; ``WorkloadIndex`` is the implementation
cluster adapters keep current from the objects' manifests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from harmonic.api.errors import ObjectError
from harmonic.api.selectors import LabelSelector, label_selector, labels_of

SERVICE = "Service"
REPLICATION_CONTROLLER = "ReplicationController"
REPLICA_SET = "ReplicaSet"
STATEFUL_SET = "StatefulSet"
KINDS = (SERVICE, REPLICATION_CONTROLLER, REPLICA_SET, STATEFUL_SET)

#: The handle service name under which plugins look the index up.
SERVICE_NAME = "workloads"


class Workloads(Protocol):
    """Read access to workload selectors, by namespace."""

    def service_selectors(self, namespace: str) -> Iterable[Mapping[str, str]]:
        """``spec.selector`` of every Service in ``namespace`` that has one (a nil selector selects nothing)."""
        ...

    def replication_controller_selector(self, namespace: str, name: str) -> Mapping[str, str] | None:
        """``spec.selector`` of that ReplicationController; ``None`` if there is no such object."""
        ...

    def replica_set_selector(self, namespace: str, name: str) -> LabelSelector | None:
        """Compiled ``spec.selector`` of that ReplicaSet; ``None`` if absent or the selector is nil."""
        ...

    def stateful_set_selector(self, namespace: str, name: str) -> LabelSelector | None:
        """Compiled ``spec.selector`` of that StatefulSet; ``None`` if absent or the selector is nil."""
        ...


def _key(raw: Mapping[str, Any]) -> tuple[str, str, str]:
    if not isinstance(raw, Mapping):
        raise ObjectError("object", "", "must be an object")
    kind = raw.get("kind")
    meta = raw.get("metadata") or {}
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if kind not in KINDS:
        raise ObjectError(
            f"{kind or 'object'} {name or ''}".strip(), "kind", f"must be one of {', '.join(KINDS)}"
        )
    if not isinstance(name, str) or not name:
        raise ObjectError(str(kind), "metadata.name", "is required")
    return str(kind), str(meta.get("namespace") or "default"), name


class WorkloadIndex:
    """Workload selectors kept from manifests; ``apply`` adds or replaces, ``delete`` removes."""

    def __init__(self) -> None:
        self._services: dict[str, dict[str, dict[str, str]]] = {}
        self._rcs: dict[tuple[str, str], dict[str, str]] = {}
        self._rss: dict[tuple[str, str], LabelSelector | None] = {}
        self._sss: dict[tuple[str, str], LabelSelector | None] = {}

    @classmethod
    def from_objects(cls, objects: Iterable[Mapping[str, Any]]) -> WorkloadIndex:
        index = cls()
        for raw in objects:
            index.apply(raw)
        return index

    def apply(self, raw: Mapping[str, Any]) -> None:
        """Add or replace one object. Raises ``ObjectError`` naming the object and field if malformed."""
        kind, ns, name = _key(raw)
        obj = f"{kind} {ns}/{name}"
        spec = raw.get("spec") or {}
        if not isinstance(spec, Mapping):
            raise ObjectError(obj, "spec", "must be an object")
        selector = spec.get("selector")
        if kind == SERVICE:
            by_name = self._services.setdefault(ns, {})
            # Replaced in one step: a reader on another thread sees the old selector or the new one.
            if selector is None:
                by_name.pop(name, None)
            else:
                by_name[name] = labels_of(obj, "spec.selector", selector)
        elif kind == REPLICATION_CONTROLLER:
            self._rcs[(ns, name)] = labels_of(obj, "spec.selector", selector)
        else:
            compiled = label_selector(obj, "spec.selector", selector) if selector is not None else None
            (self._rss if kind == REPLICA_SET else self._sss)[(ns, name)] = compiled

    def delete(self, kind: str, namespace: str, name: str) -> None:
        if kind == SERVICE:
            self._services.get(namespace, {}).pop(name, None)
        elif kind == REPLICATION_CONTROLLER:
            self._rcs.pop((namespace, name), None)
        elif kind == REPLICA_SET:
            self._rss.pop((namespace, name), None)
        elif kind == STATEFUL_SET:
            self._sss.pop((namespace, name), None)

    # ------------------------------------------------------------------ Workloads
    def service_selectors(self, namespace: str) -> Iterable[Mapping[str, str]]:
        return list(self._services.get(namespace, {}).values())

    def replication_controller_selector(self, namespace: str, name: str) -> Mapping[str, str] | None:
        return self._rcs.get((namespace, name))

    def replica_set_selector(self, namespace: str, name: str) -> LabelSelector | None:
        return self._rss.get((namespace, name))

    def stateful_set_selector(self, namespace: str, name: str) -> LabelSelector | None:
        return self._sss.get((namespace, name))
