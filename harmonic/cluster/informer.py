"""Informers: a local, continuously updated copy of one kind of API object (client-go's reflector).

An ``Informer`` lists its resource (paged), then watches from the list's resourceVersion, keeping a
store of raw manifests keyed ``namespace/name`` (``name`` for cluster-scoped objects) and calling its
handlers as ``handler(old, new)`` — ``(None, obj)`` added, ``(old, new)`` updated, ``(obj, None)``
deleted — from its own thread, in the order the server sent the changes.

What keeps the copy complete (nothing is lost, nothing is reported twice):

- every event advances the tracked resourceVersion; watch BOOKMARKs (requested with
  ``allowWatchBookmarks``) advance it without an object, so a reconnect does not replay old events;
- a watch that ends (server timeout) is reopened from the tracked resourceVersion; a watch that
  cannot be opened for want of a connection, or is throttled (429), is retried after a backoff
  (800 ms doubling to 30 s with jitter, as client-go's reflector);
- a watch whose connection is cut is followed by a relist at once (client-go rewatches): a cut is how
  a server restart looks, and a server restarted on an older etcd state may already have passed our
  resourceVersion, so a resumed watch would silently skip what changed in between;
- any other watch failure (an HTTP error, an ERROR event: ``410 Gone``, ``504`` "too large resource
  version", a 5xx) ends the watch and the informer *relists* after that backoff, as client-go's
  ``ListAndWatch`` returns to its caller. Lists follow the reflector's ``relistResourceVersion``:
  the first list asks for ``resourceVersion=0`` (served from the API server's watch cache), later ones
  for the last resourceVersion seen (data at least that fresh); when the server answers that this
  resourceVersion is expired (410) or *too large* (its etcd was restored or recreated with an older
  revision, or an HA replica's watch cache lags) the list is sent again at once with no
  resourceVersion, a consistent read of whatever the server holds now;
- kube-apiserver answers a *watch* from a resourceVersion it has not reached with silence (no event,
  no bookmark) rather than an error, so before reopening a watch the informer lists one object at
  its resourceVersion: a "too large" answer sends it to relist from scratch;
- a relist *diffs* the fresh list against the store, reporting objects that vanished meanwhile as
  deleted, new ones as added and changed ones (by resourceVersion) as updated;
- ``healthy`` is False from a failed list or watch until the next list or watch succeeds, so
  ``/readyz`` does not call a copy current while it cannot be kept so;
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
        #: The server said ``resource_version`` is expired or too large: the next list asks for none.
        self._rv_unavailable = False
        #: Counters, for tests and metrics: lists done, watches opened, relists after a failed or a cut watch.
        self.lists = 0
        self.watches = 0
        self.relists_on_gone = 0
        self.relists_on_break = 0
        #: Why the copy is not being kept current (the last list or watch failure), or "" when it is.
        self.failing = ""
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

    @property
    def healthy(self) -> bool:
        """Synced, and neither its last list nor its last watch failed."""
        return self.synced.is_set() and not self.failing

    def run(self) -> None:
        """ListAndWatch until stopped (client-go's ``Reflector.Run``): list, watch until the watch
        fails, back off, relist."""
        while not self._stop.is_set():
            if self._list_and_watch():
                continue
            self._sleep(self.backoff.next())
        log.debug("informer %s stopped", self.name)

    def relist_resource_version(self) -> str:
        """The resourceVersion the next list asks for (the reflector's ``relistResourceVersion``)."""
        if self._rv_unavailable:
            return ""  # a consistent read of what the server holds now
        return self.resource_version or "0"  # "0": the first list may come from the watch cache

    def _list_and_watch(self) -> bool:
        """One list then watches until one fails or breaks; False when the caller should back off
        before the next list."""
        rv = self.relist_resource_version()
        try:
            self._list(rv)
        except ApiStatusError as e:
            if not (e.expired or e.too_large_resource_version) or rv == "":
                return self._failed("list failed", e)
            # The server no longer has this resourceVersion (410) or has never had it (its state is
            # older than ours): list again at once, a consistent read of whatever it holds now.
            log.warning(
                "informer %s: resourceVersion %s is unavailable (%s); relisting the server's current state",
                self.name,
                rv,
                e,
            )
            self._rv_unavailable = True
            try:
                self._list("")
            except (TransportError, ApiStatusError) as e2:
                return self._failed("list failed", e2)
        except TransportError as e:
            return self._failed("list failed", e)
        self._rv_unavailable = False
        self.failing = ""
        self.backoff.reset()
        # After a cut connection: relist at once (the list answers whether the server still has our
        # resourceVersion); after a watch failure: back off first.
        return self._watch()

    def _failed(self, what: str, e: Exception) -> bool:
        self.failing = f"{what}: {e}"
        log.warning("informer %s: %s: %s", self.name, what, e)
        return False

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
    def _watch(self) -> bool:
        """Watch from the tracked resourceVersion, reopening after clean ends, until a failure that calls
        for a relist (returns False: relist after a backoff), a cut connection (returns True: relist at
        once) or stop.

        A cut connection is the sign of a server restart, and a restarted server may hold an older
        state (etcd restored or recreated) whose resourceVersions have already passed ours: a watch
        resumed there would skip, silently and for good, what changed in between (measured on a real
        kube-apiserver whose etcd was wiped: pods created meanwhile were never seen). A relist at our
        resourceVersion reads a state at least that fresh and the diff reports what vanished or
        appeared, at the price of a list per cut connection (client-go rewatches instead).

        Before every watch but the first after a list, the resourceVersion is checked
        (``_check_resource_version``): kube-apiserver answers a watch from a resourceVersion it has not
        reached (its etcd restored or recreated, which a restart hides behind an ordinary end of the
        watch) with silence, not an error, until the watch times out. One object listed per watch
        (every 5 to 10 minutes) is the price."""
        check = False
        while not self._stop.is_set():
            if check:
                try:
                    self._check_resource_version()
                except TransportError as e:
                    if self._stop.is_set():
                        return False
                    self._failed("watch could not be opened", e)
                    self._sleep(self.backoff.next())
                    continue
                except ApiStatusError as e:
                    if e.code == 429:
                        self._failed("watch throttled", e)
                        self._sleep(self.backoff.next())
                        continue
                    if e.too_large_resource_version:
                        self._rv_unavailable = True  # the relist reads the server's state from scratch
                    self._watch_failed(e)
                    return False
                check = False
            lo, hi = self.watch_timeout
            timeout = int(lo + random.random() * (hi - lo))
            query = {
                "resourceVersion": self.resource_version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": timeout,
                "fieldSelector": self.field_selector,
            }
            try:
                try:
                    self._stream = self.transport.stream(
                        self.resource.path(), query, read_timeout=timeout + 30.0
                    )
                except TransportError as e:
                    # isWatchErrorRetriable: no connection yet, retry the watch itself after a backoff.
                    if self._stop.is_set():
                        return False
                    self._failed("watch could not be opened", e)
                    self._sleep(self.backoff.next())
                    check = True
                    continue
                except ApiStatusError as e:
                    if e.code == 429:
                        self._failed("watch throttled", e)
                        self._sleep(self.backoff.next())
                        continue
                    self._watch_failed(e)
                    return False
                self.watches += 1
                if self._stop.is_set():
                    self._stream.close()
                    return False
                self.failing = ""
                self._consume(self._stream)
                self.backoff.reset()
                # A clean end (the server's timeout, or its shutdown): reopen at once, as the reflector
                # does when its watch channel closes, once the resourceVersion is checked.
                check = True
            except (Gone, ApiStatusError) as e:
                self._watch_failed(e)
                return False
            except TransportError as e:
                if self._stop.is_set():
                    return False
                log.info("informer %s: watch broke, relisting: %s", self.name, e)
                self.relists_on_break += 1
                return True
            finally:
                self._stream = None
        return False

    def _check_resource_version(self) -> None:
        """Ask the server for one object at least as fresh as the tracked resourceVersion: answers
        "504 Too large resource version" when the server's state is older than ours."""
        self.transport.request(
            "GET",
            self.resource.path(),
            query={
                "limit": 1,
                "resourceVersion": self.resource_version,
                "fieldSelector": self.field_selector,
            },
        )

    def _watch_failed(self, e: Exception) -> None:
        """The watch ended with an error: the caller backs off and relists (client-go keeps the
        resourceVersion for that list; a 410 or too-large answer to it then drops it). An expired
        resourceVersion is routine (the server compacted its history) and does not count as failing."""
        self.relists_on_gone += 1
        if isinstance(e, Gone) or (isinstance(e, ApiStatusError) and e.expired):
            log.info("informer %s: resourceVersion %s is gone, relisting", self.name, self.resource_version)
            return
        self._failed("watch failed, relisting", e)

    def _consume(self, events: Iterator[dict[str, Any]] | WatchStream) -> None:
        for ev in events:
            if self._stop.is_set():
                return
            typ, obj = ev["type"], ev["object"]
            if typ == "ERROR":
                code = int(obj.get("code") or 0)
                if code == 410:
                    raise Gone(str(obj.get("message") or "gone"))
                details = obj.get("details")
                raise ApiStatusError(
                    code,
                    str(obj.get("reason") or ""),
                    str(obj.get("message") or ""),
                    details if isinstance(details, Mapping) else None,
                )
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
