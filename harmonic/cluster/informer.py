"""Informers: a local, continuously updated copy of one kind of API object (client-go's reflector).

An ``Informer`` lists its resource (paged), then watches from the list's resourceVersion, keeping a
store of raw manifests keyed ``namespace/name`` (``name`` for cluster-scoped objects) and calling its
handlers as ``handler(old, new)`` — ``(None, obj)`` added, ``(old, new)`` updated, ``(obj, None)``
deleted — from its own thread, in the order the server sent the changes.

What keeps the copy complete (nothing is lost, nothing is reported twice):

- every event advances the tracked resourceVersion; watch BOOKMARKs (requested with
  ``allowWatchBookmarks``) advance it without an object, so a reconnect does not replay old events;
- a watch that ends (server timeout) or breaks (connection cut, 5xx) is reopened from the tracked
  resourceVersion after a backoff (800 ms doubling to 30 s with jitter, as client-go's reflector);
- ``410 Gone`` (as an HTTP status or as an ERROR event) means the server no longer has the events
  since that resourceVersion: the informer relists and *diffs* the fresh list against its store,
  reporting objects that vanished meanwhile as deleted, new ones as added and changed ones (by
  resourceVersion) as updated;
- handlers run after the store is updated; an exception in a handler is logged, never fatal.

An informer may ``transform`` each object before it is stored or handed to handlers (client-go's
``SetTransform``), to keep only the fields its users read: the store then holds the reduced objects.
The transform must keep ``metadata.name``, ``namespace`` and ``resourceVersion``, which the store and
the relist diff rely on, and must not raise (it runs outside the handlers' guard).

This module knows nothing about scheduling: the live scheduler (``cluster/kube.py``) and the
extender's node cache use it alike, e.g.::

    transport = Transport(load_client(kubeconfig))
    nodes = Informer(transport, NODES)
    pods = Informer(transport, PODS, field_selector=ACTIVE_PODS)
    nodes.add_handler(cache.on_node)   # handler(old, new) with manifests
    pods.add_handler(cache.on_pod)
    for inf in (nodes, pods):
        inf.start()
    wait_for_sync([nodes, pods], timeout=60)
    ...
    for inf in (nodes, pods):
        inf.stop()

``PODS``, ``NODES``, ``NAMESPACES``, ``PDBS``, ``SERVICES``, ``REPLICATION_CONTROLLERS``,
``REPLICA_SETS`` and ``STATEFUL_SETS`` describe the resources they watch; ``ACTIVE_PODS`` is
kube-scheduler's field selector that leaves out terminal pods.
"""

from __future__ import annotations

import builtins
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from harmonic.cluster.transport import ApiStatusError, Transport, TransportError, WatchStream, object_path

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]
Handler = Callable[[Obj | None, Obj | None], None]
Transform = Callable[[Obj], Obj]

#: kube-scheduler's pod informer leaves out pods that finished (pkg/scheduler/scheduler.go).
ACTIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"


@dataclass(frozen=True)
class Resource:
    api_version: str  # "v1", "policy/v1"
    plural: str
    kind: str

    def path(self, namespace: str | None = None) -> str:
        return object_path(self.api_version, self.plural, namespace)


PODS = Resource("v1", "pods", "Pod")
NODES = Resource("v1", "nodes", "Node")
NAMESPACES = Resource("v1", "namespaces", "Namespace")
PDBS = Resource("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget")
SERVICES = Resource("v1", "services", "Service")
REPLICATION_CONTROLLERS = Resource("v1", "replicationcontrollers", "ReplicationController")
REPLICA_SETS = Resource("apps/v1", "replicasets", "ReplicaSet")
STATEFUL_SETS = Resource("apps/v1", "statefulsets", "StatefulSet")
POD_GROUPS = Resource("scheduling.x-k8s.io/v1alpha1", "podgroups", "PodGroup")
ELASTIC_QUOTAS = Resource("scheduling.x-k8s.io/v1alpha1", "elasticquotas", "ElasticQuota")
PERSISTENT_VOLUMES = Resource("v1", "persistentvolumes", "PersistentVolume")
PERSISTENT_VOLUME_CLAIMS = Resource("v1", "persistentvolumeclaims", "PersistentVolumeClaim")
STORAGE_CLASSES = Resource("storage.k8s.io/v1", "storageclasses", "StorageClass")
CSI_NODES = Resource("storage.k8s.io/v1", "csinodes", "CSINode")
CSI_DRIVERS = Resource("storage.k8s.io/v1", "csidrivers", "CSIDriver")
CSI_STORAGE_CAPACITIES = Resource("storage.k8s.io/v1", "csistoragecapacities", "CSIStorageCapacity")
VOLUME_ATTACHMENTS = Resource("storage.k8s.io/v1", "volumeattachments", "VolumeAttachment")


def strip_managed_fields(obj: Obj) -> Obj:
    """A transform dropping ``metadata.managedFields`` (server-side apply bookkeeping, often the
    largest part of a real API server's pod or node and read by no scheduler code): less memory in the
    store. The object is the informer's own freshly decoded copy, so it is changed in place."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        del meta["managedFields"]
    return obj


def nodes_and_pods(transport: Transport, backoff: Callable[[], Backoff]) -> dict[str, Informer]:
    """A scheduler's informers of nodes and of non-terminal pods (``harmonic run`` and the extender's
    cache alike), without ``managedFields``."""
    return {
        "nodes": Informer(transport, NODES, backoff=backoff(), transform=strip_managed_fields),
        "pods": Informer(
            transport, PODS, field_selector=ACTIVE_PODS, backoff=backoff(), transform=strip_managed_fields
        ),
    }


def object_key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def resource_version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Backoff:
    """Exponential backoff with jitter; ``reset`` after a success."""

    def __init__(
        self, initial: float = 0.8, cap: float = 30.0, factor: float = 2.0, jitter: float = 1.0
    ) -> None:
        self.initial, self.cap, self.factor, self.jitter = initial, cap, factor, jitter
        self._next = initial

    def next(self) -> float:
        d = self._next
        self._next = min(self.cap, self._next * self.factor)
        return d * (1 + self.jitter * random.random())

    def reset(self) -> None:
        self._next = self.initial


class Gone(Exception):
    """The server answered 410: the resourceVersion is too old to resume from."""


class Informer:
    """List+watch of one resource into a store, with handlers. ``start()`` runs it on a daemon thread."""

    def __init__(
        self,
        transport: Transport,
        resource: Resource,
        *,
        field_selector: str = "",
        page_size: int = 500,
        watch_timeout: tuple[float, float] = (300.0, 600.0),
        backoff: Backoff | None = None,
        name: str | None = None,
        transform: Transform | None = None,
    ) -> None:
        self.transport = transport
        self.resource = resource
        self.field_selector = field_selector
        self.page_size = page_size
        #: The watch's ``timeoutSeconds`` is drawn from this range (client-go: 5 to 10 minutes).
        self.watch_timeout = watch_timeout
        self.backoff = backoff or Backoff()
        self.name = name or resource.plural
        self.transform = transform
        self.handlers: list[Handler] = []
        self.synced = threading.Event()
        self.resource_version = ""
        #: Counters, for tests and metrics: lists done, watches opened, 410s seen.
        self.lists = 0
        self.watches = 0
        self.relists_on_gone = 0
        self._store: dict[str, Obj] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ the store
    def get(self, key: str) -> Obj | None:
        """The latest manifest under ``namespace/name`` (or ``name``), or None."""
        return self._store.get(key)

    def list(self) -> builtins.list[Obj]:
        with self._lock:
            return list(self._store.values())

    def keys(self) -> builtins.list[str]:
        with self._lock:
            return list(self._store)

    def __len__(self) -> int:
        return len(self._store)

    def add_handler(self, handler: Handler) -> None:
        """Register ``handler``; call before ``start`` to see every object from the first list on."""
        self.handlers.append(handler)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> threading.Thread:
        self._thread = threading.Thread(target=self.run, name=f"informer-{self.name}", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self.synced.wait(timeout)

    def run(self) -> None:
        """ListAndWatch until stopped: relist on 410, rewatch after a break, back off on errors."""
        relist_rv = "0"  # the first list may be served from the API server's watch cache, as client-go's
        while not self._stop.is_set():
            try:
                self._list(relist_rv)
            except (TransportError, ApiStatusError) as e:
                log.warning("informer %s: list failed: %s", self.name, e)
                relist_rv = ""
                self._sleep(self.backoff.next())
                continue
            self.backoff.reset()
            relist_rv = self._watch_until_gone()
        log.debug("informer %s stopped", self.name)

    def _sleep(self, seconds: float) -> None:
        self._stop.wait(seconds)

    # ------------------------------------------------------------------ list
    def _list(self, rv: str) -> None:
        items: dict[str, Obj] = {}
        cont = ""
        list_rv = ""
        while True:
            query: dict[str, Any] = {"limit": self.page_size, "fieldSelector": self.field_selector}
            if cont:
                query["continue"] = cont
            else:
                query["resourceVersion"] = rv
            try:
                page = self.transport.request("GET", self.resource.path(), query=query)
            except ApiStatusError as e:
                if e.code == 410 and cont:
                    # The continue token expired mid-list: start over from a fresh, consistent read.
                    cont, rv = "", ""
                    items.clear()
                    continue
                raise
            if not isinstance(page, dict) or not isinstance(page.get("items"), list):
                raise TransportError(f"list {self.resource.path()}: answer is not a {self.resource.kind}List")
            meta = page.get("metadata") or {}
            if not cont:
                list_rv = str(meta.get("resourceVersion") or "")
            for item in page["items"]:
                if isinstance(item, dict):
                    items[object_key(item)] = item if self.transform is None else self.transform(item)
            cont = str(meta.get("continue") or "")
            if not cont:
                break
        self.lists += 1
        self._replace(items)
        self.resource_version = list_rv
        self.synced.set()

    def _replace(self, fresh: dict[str, Obj]) -> None:
        """Install a full list, reporting the differences from the store as deletes, adds and updates."""
        with self._lock:
            old = self._store
            self._store = dict(fresh)
        for key, obj in old.items():
            if key not in fresh:
                self._dispatch(obj, None)
        for key, obj in fresh.items():
            prev = old.get(key)
            if prev is None:
                self._dispatch(None, obj)
            elif resource_version(prev) != resource_version(obj):
                self._dispatch(prev, obj)

    # ------------------------------------------------------------------ watch
    def _watch_until_gone(self) -> str:
        """Watch (reopening after breaks) until 410 or stop; returns the resourceVersion to relist at."""
        while not self._stop.is_set():
            lo, hi = self.watch_timeout
            timeout = int(lo + random.random() * (hi - lo))
            query = {
                "resourceVersion": self.resource_version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": timeout,
                "fieldSelector": self.field_selector,
            }
            try:
                self._stream = self.transport.stream(self.resource.path(), query, read_timeout=timeout + 30.0)
                self.watches += 1
                if self._stop.is_set():
                    self._stream.close()
                    break
                self._consume(self._stream)
                self.backoff.reset()
                continue  # a clean end (the server's timeout): reopen at once
            except Gone:
                self.relists_on_gone += 1
                log.info(
                    "informer %s: resourceVersion %s is gone, relisting", self.name, self.resource_version
                )
                return ""
            except ApiStatusError as e:
                if e.code == 410:
                    self.relists_on_gone += 1
                    return ""
                log.warning("informer %s: watch failed: %s", self.name, e)
            except TransportError as e:
                if self._stop.is_set():
                    break
                log.warning("informer %s: watch broke: %s", self.name, e)
            finally:
                self._stream = None
            self._sleep(self.backoff.next())
        return ""

    def _consume(self, events: Iterator[dict[str, Any]] | WatchStream) -> None:
        for ev in events:
            if self._stop.is_set():
                return
            typ, obj = ev["type"], ev["object"]
            if typ == "ERROR":
                code = int(obj.get("code") or 0)
                if code == 410:
                    raise Gone(str(obj.get("message") or "gone"))
                raise ApiStatusError(code, str(obj.get("reason") or ""), str(obj.get("message") or ""))
            rv = resource_version(obj)
            if typ == "BOOKMARK":
                if rv:
                    self.resource_version = rv
                continue
            if self.transform is not None:
                obj = self.transform(obj)
            key = object_key(obj)
            with self._lock:
                prev = self._store.get(key)
                if typ == "DELETED":
                    self._store.pop(key, None)
                else:
                    self._store[key] = obj
            if rv:
                self.resource_version = rv
            if typ == "DELETED":
                self._dispatch(prev if prev is not None else obj, None)
            elif typ in ("ADDED", "MODIFIED"):
                self._dispatch(prev, obj)
            else:
                log.warning("informer %s: ignoring watch event of type %r", self.name, typ)

    def _dispatch(self, old: Obj | None, new: Obj | None) -> None:
        for h in self.handlers:
            try:
                h(old, new)
            except Exception:
                log.exception("informer %s: handler failed", self.name)


def wait_for_sync(informers: Mapping[str, Informer] | list[Informer], timeout: float) -> bool:
    """True once every informer has listed; False at the timeout (WaitForCacheSync)."""
    deadline = time.monotonic() + timeout
    items = informers.values() if isinstance(informers, Mapping) else informers
    return all(inf.wait_for_sync(max(0.0, deadline - time.monotonic())) for inf in items)
