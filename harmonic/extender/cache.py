"""The extender's own view of the cluster: nodes and the pods bound to them, fed by informer events.

kube-scheduler sends a ``nodeCacheCapable`` extender node *names* only, so the extender must know the
nodes itself, and to judge a node it must also know the pods already running there (requested
resources, host ports, pod (anti-)affinity, topology spread). ``ClusterCache`` takes the same
``on_node(old, new)`` / ``on_pod(old, new)`` manifest events as ``Scheduler`` does (added: old is None;
deleted: new is None), from whatever watches the cluster — the live adapter's informers in
production, ``InMemoryCluster.subscribe`` in tests — and keeps them in a ``Cache`` (hence a
``Snapshot``) that the extender's frameworks read.

Threading: events arrive on informer threads; requests are answered on the server's thread. Both go
through ``lock``: an event is parsed outside it and applied under it, a request holds it while its
plugins read the snapshot, so a request sees the cluster at one point in time.

What is kept: every node; every pod with ``spec.nodeName`` that is not terminal (kube-scheduler's
informer drops Succeeded/Failed pods the same way); and pending pods' manifests only so that the bind
verb can account a pod it has just bound before the informer reports it (``assume``). ``pods`` lists
every non-terminal pod, pending or bound (the ``"pods"`` service: Coscheduling counts a gang's members
there, CapacityScheduling its quotas' usage).
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from harmonic.api.errors import ObjectError
from harmonic.api.node import parse_node
from harmonic.api.pod import Pod, parse_pod
from harmonic.framework.snapshot import Snapshot
from harmonic.scheduler.cache import Cache
from harmonic.scheduler.clock import RealClock
from harmonic.scheduler.podlister import PodLister

log = logging.getLogger(__name__)

Manifest = Mapping[str, Any]


def _uid(raw: Manifest) -> str:
    meta = raw.get("metadata") or {}
    return str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name')}")


class ClusterCache:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.cache = Cache(RealClock())
        self._pending: dict[str, Pod] = {}
        #: Every non-terminal pod, pending or bound: the ``"pods"`` service (gang members, quota usage).
        self.pods = PodLister()
        self._synced = threading.Event()
        #: Objects that cannot be compiled ("Node name" / "Pod uid") -> the error logged about them: one
        #: line per object and error, not one per status update.
        self._refused: dict[str, str] = {}
        #: Why the event source cannot keep the cache current right now ("" when it can): a live
        #: cluster's informer that cannot list or watch. Set by the source; read by readiness.
        self.stale: Callable[[], str] = lambda: ""
        #: Bumped on every applied event (tests and readiness use it).

    @property
    def snapshot(self) -> Snapshot:
        return self.cache.snapshot

    # ------------------------------------------------------------------ sync state
    def mark_synced(self) -> None:
        """Called by the event source once its initial lists have been delivered."""
        # The listed objects live as long as the process: moving them out of the collector's
        # generations spares every later full collection from walking them again (pauses of tens of
        # milliseconds with thousands of nodes, visible in the extender's tail latency).
        gc.freeze()
        self._synced.set()

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    # ------------------------------------------------------------------ informer events
    def on_node(self, old: Manifest | None, new: Manifest | None) -> None:
        if new is None:
            name = ((old or {}).get("metadata") or {}).get("name")
            if isinstance(name, str):
                self._refused.pop(f"Node {name}", None)
                with self.lock:
                    self.cache.remove_node(name)
            return
        try:
            node = parse_node(new)
        except ObjectError as e:
            self._refuse(f"Node {(new.get('metadata') or {}).get('name')}", "node", e)
            return
        if self._refused:
            self._refused.pop(f"Node {node.name}", None)
        with self.lock:
            self.cache.update_node(node)

    def on_pod(self, old: Manifest | None, new: Manifest | None) -> None:
        if new is None:
            uid = _uid(old or {})
            self._refused.pop(f"Pod {uid}", None)
            self._delete_pod(uid)
            return
        try:
            pod = parse_pod(new)
        except ObjectError as e:
            self._refuse(f"Pod {_uid(new)}", "pod", e)
            self._delete_pod(_uid(new))
            return
        if self._refused:
            self._refused.pop(f"Pod {pod.uid}", None)
        if pod.is_terminal:
            self._delete_pod(pod.uid)
            return
        with self.lock:
            self.pods.set(pod)
            if not pod.node_name:
                self._pending[pod.uid] = pod
                return
            self._pending.pop(pod.uid, None)
            self.cache.add_pod(pod)

    def _refuse(self, key: str, kind: str, err: ObjectError) -> None:
        if self._refused.get(key) != str(err):
            self._refused[key] = str(err)
            log.error("extender cache: ignoring %s: %s", kind, err)

    def _delete_pod(self, uid: str) -> None:
        with self.lock:
            self.pods.remove(uid)
            self._pending.pop(uid, None)
            cached = self.cache.pod(uid)
            if cached is None:
                return
            if self.cache.is_assumed(uid):
                self.cache.forget(cached)
            else:
                self.cache.remove_pod(cached)

    # ------------------------------------------------------------------ binding
    def pending_pod(self, uid: str) -> Pod | None:
        with self.lock:
            return self._pending.get(uid)

    def assume(self, pod: Pod, node_name: str) -> None:
        """Account a pod the extender has just bound, until the informer confirms (or deletes) it."""
        with self.lock:
            if self.cache.pod(pod.uid) is not None:
                return
            self._pending.pop(pod.uid, None)
            bound = _on_node(pod, node_name)
            self.cache.assume(bound, node_name)
            self.cache.finish_binding(bound)


def _on_node(pod: Pod, node_name: str) -> Pod:
    clone = Pod.__new__(Pod)
    for attr in Pod.__slots__:
        object.__setattr__(clone, attr, getattr(pod, attr))
    clone.node_name = node_name
    return clone
