"""Shared services a cluster adapter offers plugins (``handle.service(KEY)``, keys and types in
``harmonic.framework.services``).

- ``"namespaces"``: ``NamespaceLabels``, a read-only ``Mapping`` namespace name -> its labels (empty
  for a namespace not seen), for namespaceSelector in pod (anti-)affinity terms.
- ``"pdbs"``: ``DisruptionBudgets``; calling it returns every PodDisruptionBudget as a compiled
  ``harmonic.api.pdb.PodDisruptionBudget`` (the contract DefaultPreemption reads, see
  ``framework.preemption.pdbs_from_service``), and ``list()`` the policy/v1 manifests, as upstream's
  PDB lister does for preemption.
- ``"workloads"``: a ``harmonic.api.workloads.WorkloadIndex``, the selectors of Services,
  ReplicationControllers, ReplicaSets and StatefulSets (PodTopologySpread's default constraints).
- ``"batch"`` (only with ``batch=True``, for profiles running Coscheduling or CapacityScheduling, whose
  CRDs a cluster may lack): a ``harmonic.api.batch.BatchObjects`` of PodGroups and ElasticQuotas.
- ``"volumes"`` (only with ``storage=True``, for profiles running a plugin that reads it: VolumeBinding,
  VolumeRestrictions, VolumeZone, NodeVolumeLimits, see ``uses_service``): a
  ``harmonic.framework.volumes.InMemoryVolumes`` fed by informers of PersistentVolumes, claims,
  StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities and VolumeAttachments (kube-scheduler's
  listers), objects kept with the server's resourceVersions (VolumeBinding's PreBind writes them back).

The first two read an informer's store, the third is fed by informers' handlers, so all are current
and safe to use from any thread. ``LiveServices`` builds those informers and services for both live
adapters (``harmonic run`` and the extender's cluster cache). The in-memory cluster (tests, simulator)
offers the same names with the same interfaces (``InMemoryCluster.scheduler_services``).
"""

from __future__ import annotations

import builtins
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from harmonic.api.batch import SERVICE_NAME as BATCH_SERVICE
from harmonic.api.batch import BatchObjects
from harmonic.api.errors import ObjectError
from harmonic.api.pdb import PodDisruptionBudget, parse_pdb
from harmonic.api.workloads import SERVICE_NAME as WORKLOADS_SERVICE
from harmonic.api.workloads import WorkloadIndex
from harmonic.cluster.informer import (
    CSI_DRIVERS,
    CSI_NODES,
    CSI_STORAGE_CAPACITIES,
    ELASTIC_QUOTAS,
    NAMESPACES,
    PDBS,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    POD_GROUPS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    STATEFUL_SETS,
    STORAGE_CLASSES,
    VOLUME_ATTACHMENTS,
    Backoff,
    Handler,
    Informer,
    Resource,
    Transform,
    strip_managed_fields,
)
from harmonic.cluster.transport import Transport
from harmonic.framework import services as keys
from harmonic.framework.registry import Registry
from harmonic.framework.volumes import InMemoryVolumes

log = logging.getLogger(__name__)

NAMESPACES_SERVICE = keys.NAMESPACES.name
PDBS_SERVICE = keys.PDBS.name

Obj = Mapping[str, Any]


class _Store(Protocol):
    def get(self, key: str) -> Obj | None: ...

    def list(self) -> builtins.list[Obj]: ...

    def keys(self) -> builtins.list[str]: ...


class NamespaceLabels(Mapping[str, Mapping[str, str]]):
    def __init__(self, store: _Store) -> None:
        self._store = store

    def __getitem__(self, namespace: str) -> Mapping[str, str]:
        ns = self._store.get(namespace)
        if ns is None:
            return {}
        labels = (ns.get("metadata") or {}).get("labels") or {}
        return labels if isinstance(labels, Mapping) else {}

    def __iter__(self) -> Iterator[str]:
        return iter(self._store.keys())

    def __len__(self) -> int:
        return len(self._store.keys())

    def __contains__(self, namespace: object) -> bool:
        return isinstance(namespace, str) and self._store.get(namespace) is not None


class DisruptionBudgets:
    def __init__(self, store: _Store) -> None:
        self._store = store
        #: Compiled budgets by (namespace/name, resourceVersion): a budget is parsed once per change; a
        #: malformed one is kept as None, so it is logged once, not at every preemption.
        self._compiled: dict[tuple[str, str], PodDisruptionBudget | None] = {}
        #: The last answer and the informer's resourceVersion it was read at: every preemption asks,
        #: and with hundreds of budgets walking them each time was a sixth of a preemption's cost.
        self._answered: tuple[tuple[str, int], builtins.list[PodDisruptionBudget]] | None = None

    def list(self) -> builtins.list[Obj]:
        return self._store.list()

    def __call__(self) -> builtins.list[PodDisruptionBudget]:
        # An informer sets its resourceVersion after updating its store, so an answer read after
        # seeing version V holds every change up to V; its list count tells a relist (after which
        # an API server restored from a backup may reuse versions). A store without a version (the
        # in-memory one) is read every time.
        version = (getattr(self._store, "resource_version", ""), getattr(self._store, "lists", 0))
        if version[0] and self._answered is not None and self._answered[0] == version:
            return list(self._answered[1])
        out = self._read()
        if version[0]:
            self._answered = (version, out)
        return list(out)

    def _read(self) -> builtins.list[PodDisruptionBudget]:
        out: builtins.list[PodDisruptionBudget] = []
        fresh: dict[tuple[str, str], PodDisruptionBudget | None] = {}
        for raw in self._store.list():
            meta = raw.get("metadata") or {}
            key = (f"{meta.get('namespace')}/{meta.get('name')}", str(meta.get("resourceVersion", "")))
            if key in self._compiled:
                view = self._compiled[key]
            else:
                try:
                    view = parse_pdb(raw)
                except ObjectError as e:
                    log.warning("ignoring PodDisruptionBudget: %s", e)
                    view = None
            fresh[key] = view
            if view is not None:
                out.append(view)
        self._compiled = fresh
        return out


class ManifestStore:
    """Manifests kept in memory behind an informer store's interface (the in-memory cluster's)."""

    def __init__(self, objs: Iterable[Obj] = ()) -> None:
        self._objs: dict[str, Obj] = {}
        for o in objs:
            self.apply(o)

    def apply(self, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta.get("name"))
        self._objs[key] = obj

    def get(self, key: str) -> Obj | None:
        return self._objs.get(key)

    def list(self) -> builtins.list[Obj]:
        return list(self._objs.values())

    def keys(self) -> builtins.list[str]:
        return list(self._objs)


#: The resources whose selectors make up the ``"workloads"`` service.
WORKLOAD_RESOURCES = (SERVICES, REPLICATION_CONTROLLERS, REPLICA_SETS, STATEFUL_SETS)


def selector_view(kind: str) -> Transform:
    """An informer transform keeping what ``WorkloadIndex`` reads of a ``kind`` object: its name,
    namespace, resourceVersion and ``spec.selector`` (a Service's ports, a ReplicaSet's pod template and
    status are dropped as they arrive). Never raises: malformed fields are left for the index to report."""

    def view(obj: Obj) -> Obj:
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        out: dict[str, Any] = {
            "kind": kind,  # list items come without it
            "metadata": {k: meta[k] for k in ("name", "namespace", "resourceVersion") if k in meta},
        }
        spec = obj.get("spec")
        if isinstance(spec, Mapping):
            if spec.get("selector") is not None:
                out["spec"] = {"selector": spec["selector"]}
        elif spec is not None:
            out["spec"] = spec  # malformed: kept for the index to refuse
        return out

    return view


def _feed(kind: str, apply: Callable[[Obj], None], delete: Callable[[str, str], None]) -> Handler:
    """An informer handler applying each reported ``kind`` object and deleting the ones that go. An
    object ``apply`` refuses is logged and deleted, so a stale version does not outlive it."""

    #: The error last logged per refused object: one line per object and error, not one per update.
    refused: dict[tuple[str, str], str] = {}

    def on_change(old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        meta = obj.get("metadata") or {}
        ns, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        if new is None:
            refused.pop((ns, name), None)
            delete(ns, name)
            return
        try:
            apply(new)
        except ObjectError as e:
            if refused.get((ns, name)) != str(e):
                refused[(ns, name)] = str(e)
                log.warning("ignoring %s: %s", kind, e)
            delete(ns, name)
            return
        if refused:
            refused.pop((ns, name), None)

    return on_change


def workload_feed(index: WorkloadIndex, kind: str) -> Handler:
    """An informer handler keeping ``index`` current with the ``kind`` objects the informer reports.
    An object the index refuses (a malformed selector) is logged and indexed as absent, so a stale
    selector does not outlive it."""
    return _feed(kind, index.apply, lambda ns, name: index.delete(kind, ns, name))


#: Plugins that read the ``"batch"`` service: their profiles need the PodGroup and ElasticQuota informers.
BATCH_PLUGINS = frozenset({"Coscheduling", "CapacityScheduling"})


def uses_batch_plugins(config: Any) -> bool:
    """Does any profile of ``config`` (a SchedulerConfiguration) run a plugin reading scheduler-plugins' CRDs?"""
    return any(name in BATCH_PLUGINS for prof in config.profiles for name in prof.plugin_names)


def batch_feed(store: BatchObjects, kind: str) -> Handler:
    """An informer handler keeping ``store`` current with PodGroups or ElasticQuotas; a malformed object
    (minMember below 1, min above max) is logged and treated as absent."""
    return _feed(
        kind, lambda obj: store.apply({**obj, "kind": kind}), lambda ns, name: store.delete(kind, ns, name)
    )


#: The storage objects behind the ``"volumes"`` service, as kube-scheduler's informers list them.
STORAGE_RESOURCES = (
    PERSISTENT_VOLUMES,
    PERSISTENT_VOLUME_CLAIMS,
    STORAGE_CLASSES,
    CSI_NODES,
    CSI_DRIVERS,
    CSI_STORAGE_CAPACITIES,
    VOLUME_ATTACHMENTS,
)


def profile_uses_service(profile: Any, registry: Registry, key: keys.ServiceKey[Any]) -> bool:
    """Does any plugin of ``profile`` read the ``key`` service (its ``needs(args)``, required or
    degraded)? The live adapters start an informer only for a service someone reads."""
    for name in profile.plugin_names:
        cls = profile.plugin_classes.get(name) or registry.get(name)
        if cls is not None and any(need.key.name == key.name for need in cls.needs(profile.args[name])):
            return True
    return False


def uses_service(config: Any, registry: Registry, key: keys.ServiceKey[Any]) -> bool:
    """``profile_uses_service`` for any profile of ``config`` (a SchedulerConfiguration)."""
    return any(profile_uses_service(prof, registry, key) for prof in config.profiles)


class StorageFeed:
    """Informer handlers keeping an ``InMemoryVolumes`` current. The informers of the seven kinds run on
    threads of their own, so writes are serialised here (the store's generation must step once per
    change); a malformed object is logged and treated as absent."""

    def __init__(self, volumes: InMemoryVolumes) -> None:
        self.volumes = volumes
        self._lock = threading.Lock()

    def handler(self, kind: str) -> Handler:
        def put(obj: Obj) -> None:
            with self._lock:
                self.volumes.put({**obj, "kind": kind})  # list items come without it

        def delete(namespace: str, name: str) -> None:
            with self._lock:
                self.volumes.delete(kind, name, namespace)

        return _feed(kind, put, delete)


class StorageInformers:
    """The ``"volumes"`` service (``volumes``, an ``InMemoryVolumes``) and the informers feeding it, keyed
    by resource name; the adapter starts and stops them (the rescheduler uses them alone)."""

    def __init__(self, transport: Transport, backoff: Callable[[], Backoff] = Backoff) -> None:
        self.volumes = InMemoryVolumes()
        feed = StorageFeed(self.volumes)
        self.informers: dict[str, Informer] = {}
        for resource in STORAGE_RESOURCES:
            inf = Informer(transport, resource, backoff=backoff(), transform=strip_managed_fields)
            inf.add_handler(feed.handler(resource.kind))
            self.informers[resource.plural] = inf


class LiveServices:
    """The plugin services of a live adapter and the informers behind them: PodDisruptionBudgets and
    namespaces (stores read as they are), Services, ReplicationControllers, ReplicaSets and
    StatefulSets (reduced to their selectors, see ``selector_view``, and indexed).

    ``informers`` are keyed by resource name (``pdbs``, ``namespaces``, ``services``, ...); the adapter
    starts and stops them with its own and counts them in its readiness. ``backoff`` makes each
    informer's reconnect backoff. ``batch`` adds the PodGroup and ElasticQuota informers, ``storage``
    those of the storage objects (``volumes``, whose ``subscribe`` reports each change as a
    ``ClusterEvent``, for requeueing pods).
    """

    def __init__(
        self,
        transport: Transport,
        backoff: Callable[[], Backoff] = Backoff,
        batch: bool = False,
        storage: bool = False,
    ) -> None:
        self.informers: dict[str, Informer] = {
            "pdbs": Informer(transport, PDBS, backoff=backoff()),
            "namespaces": Informer(transport, NAMESPACES, backoff=backoff()),
        }
        self.workloads = WorkloadIndex()
        for resource in WORKLOAD_RESOURCES:
            self.informers[resource.plural] = self._workload_informer(transport, resource, backoff())
        self.services: dict[str, Any] = {
            PDBS_SERVICE: DisruptionBudgets(self.informers["pdbs"]),
            NAMESPACES_SERVICE: NamespaceLabels(self.informers["namespaces"]),
            WORKLOADS_SERVICE: self.workloads,
        }
        if batch:
            self.batch = BatchObjects(time.time)
            for resource in (POD_GROUPS, ELASTIC_QUOTAS):
                inf = Informer(transport, resource, backoff=backoff())
                inf.add_handler(batch_feed(self.batch, resource.kind))
                self.informers[resource.plural] = inf
            self.services[BATCH_SERVICE] = self.batch
        self.volumes: InMemoryVolumes | None = None
        if storage:
            informers = StorageInformers(transport, backoff)
            self.volumes = informers.volumes
            self.informers.update(informers.informers)
            self.services[keys.VOLUMES.name] = self.volumes

    def _workload_informer(self, transport: Transport, resource: Resource, backoff: Backoff) -> Informer:
        inf = Informer(transport, resource, backoff=backoff, transform=selector_view(resource.kind))
        inf.add_handler(workload_feed(self.workloads, resource.kind))
        return inf
