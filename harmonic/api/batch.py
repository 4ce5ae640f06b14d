"""scheduler-plugins' batch API (``scheduling.x-k8s.io/v1alpha1``): ``PodGroup`` and ``ElasticQuota``.

A pod joins a gang through the label ``scheduling.x-k8s.io/pod-group: <PodGroup name>`` (same
namespace). An ``ElasticQuota`` gives its namespace a guaranteed ``spec.min`` and a ceiling
``spec.max`` of any resources.

Plugins reach the objects through the handle service named ``"batch"`` (``BatchObjects``); cluster
adapters keep it current from manifests (the in-memory cluster, the live informers, the simulator).
Malformed objects raise ``ObjectError`` naming the object and field: ``minMember`` below 1, a quota
whose ``min`` exceeds its ``max`` for some resource.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harmonic.api.errors import ObjectError
from harmonic.api.resources import Resources, resource_list
from harmonic.api.timestamps import parse_time

GROUP = "scheduling.x-k8s.io"
API_VERSION = f"{GROUP}/v1alpha1"
POD_GROUP = "PodGroup"
ELASTIC_QUOTA = "ElasticQuota"
KINDS = (POD_GROUP, ELASTIC_QUOTA)
#: The pod label naming a pod's PodGroup (v1alpha1.PodGroupLabel).
POD_GROUP_LABEL = f"{GROUP}/pod-group"
#: The handle service name of the ``BatchObjects`` store.
SERVICE_NAME = "batch"

# PodGroup phases, as scheduler-plugins' controller writes them.
PENDING = "Pending"
SCHEDULING = "Scheduling"
RUNNING = "Running"
FINISHED = "Finished"
FAILED = "Failed"


@dataclass(frozen=True, slots=True)
class PodGroup:
    namespace: str
    name: str
    min_member: int
    #: Parsed ``spec.minResources`` (empty when unset).
    min_resources: Resources = field(default_factory=dict)
    #: ``spec.scheduleTimeoutSeconds``; ``None`` uses the plugin's permitWaitingTimeSeconds.
    schedule_timeout_seconds: int | None = None
    #: ``metadata.creationTimestamp`` in seconds since the epoch, or when the store first saw the object.
    created: float = 0.0
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ElasticQuota:
    namespace: str
    name: str
    #: ``spec.min`` / ``spec.max``; ``None`` when the field is absent (upstream's bounds apply then).
    min: Resources | None
    max: Resources | None


def _meta(kind: str, raw: Any) -> tuple[str, str, Mapping[str, Any], Mapping[str, Any]]:
    if not isinstance(raw, Mapping):
        raise ObjectError(kind, "", "must be an object")
    meta = raw.get("metadata") or {}
    if not isinstance(meta, Mapping):
        raise ObjectError(kind, "metadata", "must be an object")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ObjectError(kind, "metadata.name", "is required")
    ns = str(meta.get("namespace") or "default")
    spec = raw.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise ObjectError(f"{kind} {ns}/{name}", "spec", "must be an object")
    return ns, name, meta, spec


def parse_pod_group(raw: Any, seen_at: float = 0.0) -> PodGroup:
    """Compile a PodGroup manifest; ``seen_at`` stands in for a missing creationTimestamp."""
    ns, name, meta, spec = _meta(POD_GROUP, raw)
    obj = f"PodGroup {ns}/{name}"
    mm = spec.get("minMember")
    if isinstance(mm, bool) or not isinstance(mm, int):
        raise ObjectError(obj, "spec.minMember", "is required and must be an integer")
    if mm < 1:
        raise ObjectError(obj, "spec.minMember", f"must be at least 1, not {mm}")
    timeout = spec.get("scheduleTimeoutSeconds")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 0):
        raise ObjectError(
            obj, "spec.scheduleTimeoutSeconds", f"must be a non-negative integer, not {timeout!r}"
        )
    created = seen_at
    ts = meta.get("creationTimestamp")
    if ts:
        created = parse_time(obj, "metadata.creationTimestamp", ts) / 1e9
    return PodGroup(
        ns,
        name,
        mm,
        resource_list(obj, "spec.minResources", spec.get("minResources")),
        timeout,
        created,
        raw,
    )


def parse_elastic_quota(raw: Any) -> ElasticQuota:
    """Compile an ElasticQuota manifest; ``min`` above ``max`` for a resource is an error."""
    ns, name, _, spec = _meta(ELASTIC_QUOTA, raw)
    obj = f"ElasticQuota {ns}/{name}"
    lo = resource_list(obj, "spec.min", spec["min"]) if spec.get("min") is not None else None
    hi = resource_list(obj, "spec.max", spec["max"]) if spec.get("max") is not None else None
    if lo is not None and hi is not None:
        for res, v in sorted(lo.items()):
            if res in hi and v > hi[res]:
                raise ObjectError(obj, f"spec.min.{res}", f"must not exceed spec.max.{res}")
    return ElasticQuota(ns, name, lo, hi)


Listener = Callable[[str, Any, Any], None]


class BatchObjects:
    """PodGroups by (namespace, name) and ElasticQuotas by namespace, kept from manifests.

    ``listen(fn)`` registers ``fn(kind, old, new)`` (compiled objects, ``None`` for absent), called on
    every change; the scheduler turns changes into queue events, plugins keep derived state."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or (lambda: 0.0)
        self._lock = threading.Lock()
        self.pod_groups: dict[tuple[str, str], PodGroup] = {}
        #: One quota per namespace is supported (upstream takes the first one listed).
        self.quotas: dict[str, ElasticQuota] = {}
        self._listeners: list[Listener] = []

    @classmethod
    def from_objects(
        cls, objects: Iterable[Mapping[str, Any]], clock: Callable[[], float] | None = None
    ) -> BatchObjects:
        store = cls(clock)
        for raw in objects:
            store.apply(raw)
        return store

    def listen(self, fn: Listener) -> None:
        self._listeners.append(fn)

    def apply(self, raw: Mapping[str, Any]) -> None:
        """Add or replace a PodGroup or ElasticQuota (``ObjectError`` if malformed or another kind)."""
        kind = raw.get("kind") if isinstance(raw, Mapping) else None
        if kind == POD_GROUP:
            key = _meta(POD_GROUP, raw)[:2]
            with self._lock:
                old_pg = self.pod_groups.get(key)
                seen = old_pg.created if old_pg is not None else self._clock()
                pg = parse_pod_group(raw, seen)
                self.pod_groups[key] = pg
            self._notify(POD_GROUP, old_pg, pg)
        elif kind == ELASTIC_QUOTA:
            eq = parse_elastic_quota(raw)
            with self._lock:
                old_eq = self.quotas.get(eq.namespace)
                if old_eq is not None and old_eq.name != eq.name:
                    return
                self.quotas[eq.namespace] = eq
            self._notify(ELASTIC_QUOTA, old_eq, eq)
        else:
            name = (raw.get("metadata") or {}).get("name") if isinstance(raw, Mapping) else None
            raise ObjectError(
                f"{kind or 'object'} {name or ''}".strip(), "kind", f"must be one of {', '.join(KINDS)}"
            )

    def delete(self, kind: str, namespace: str, name: str) -> None:
        if kind == POD_GROUP:
            with self._lock:
                old: Any = self.pod_groups.pop((namespace, name), None)
        elif kind == ELASTIC_QUOTA:
            with self._lock:
                old = self.quotas.get(namespace)
                if old is None or old.name != name:
                    return
                del self.quotas[namespace]
        else:
            return
        if old is not None:
            self._notify(kind, old, None)

    def pod_group(self, namespace: str, name: str) -> PodGroup | None:
        return self.pod_groups.get((namespace, name))

    def _notify(self, kind: str, old: Any, new: Any) -> None:
        for fn in list(self._listeners):
            fn(kind, old, new)


def pod_group_name(labels: Mapping[str, str]) -> str:
    """The PodGroup a pod names (util.GetPodGroupLabel); "" when none."""
    return labels.get(POD_GROUP_LABEL, "")
