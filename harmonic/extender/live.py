"""The extender attached to a live cluster: what ``harmonic extender`` runs when it has cluster access.

``LiveCluster`` holds

- informers for nodes and pods (pods with kube-scheduler's field selector for non-terminal pods),
  feeding a ``ClusterCache``: the nodes and bound pods that ``nodeCacheCapable: true`` requests name
  only; ``mark_synced()`` once every informer has delivered its first list, so ``/readyz`` answers 503
  and the verbs refuse node-names-only requests until the cache is complete;
- the informers behind the services plugins read, ``"pdbs"``, ``"namespaces"`` and ``"workloads"``
  (``cluster.services.LiveServices``, shared with ``harmonic run``), with ``"batch"`` and ``"volumes"``
  (the storage objects) when the profiles' plugins read them, counted in the sync too;
- the cluster client of the bind verb, ``BindOnlyClient``: bindings through ``cluster.binding``.

The extender runs no leader election: every replica answers kube-scheduler, and the one that gets a
pod's bind call binds it. The API server refuses a second binding of a pod (409), so no fence is
needed, and kube-scheduler writes the pod's ``Scheduled`` event and conditions itself, so the extender
has no event recorder or status patcher either.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from harmonic.api.pod import Pod
from harmonic.cluster.binding import PodBinder
from harmonic.cluster.informer import Backoff, Informer, nodes_and_pods
from harmonic.cluster.services import LiveServices
from harmonic.cluster.transport import Transport
from harmonic.extender.cache import ClusterCache
from harmonic.framework.status import Code, Status

log = logging.getLogger(__name__)


class BindOnlyClient:
    """The extender's ``ClusterClient``: it binds (the bind verb); preemption victims are evicted and
    nominated node names written by kube-scheduler, never by its extenders."""

    def __init__(self, binder: PodBinder) -> None:
        self.binder = binder

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        return self.binder.bind(pod, node_name)

    def evict(self, pod: Pod, reason: str) -> Status | None:
        return Status(Code.ERROR, f"evicting {pod.key}: the Harmonic extender does not evict pods")

    def set_nominated_node(self, pod: Pod, node_name: str) -> Status | None:
        return Status(Code.ERROR, f"nominating a node for {pod.key}: the Harmonic extender does not nominate")


class LiveCluster:
    """Informers, cache, services and bind client of an extender connected through ``transport``.

    ``informer_backoff`` makes each informer's reconnect backoff (tests use short ones).
    """

    def __init__(
        self,
        transport: Transport,
        *,
        informer_backoff: Callable[[], Backoff] = Backoff,
        batch: bool = False,
        storage: bool = False,
    ) -> None:
        self.transport = transport
        self.cache = ClusterCache()
        plugin_services = LiveServices(transport, informer_backoff, batch=batch, storage=storage)
        self.informers: dict[str, Informer] = {
            **nodes_and_pods(transport, informer_backoff),
            **plugin_services.informers,
        }
        self.cache.stale = self._stale
        self.informers["nodes"].add_handler(self.cache.on_node)
        self.informers["pods"].add_handler(self.cache.on_pod)
        self.services: dict[str, Any] = plugin_services.services
        self.client = BindOnlyClient(PodBinder(transport, self.informers["nodes"]))
        self._stop = threading.Event()
        self._sync_thread: threading.Thread | None = None

    def _stale(self) -> str:
        return "; ".join(f"{name}: {inf.failing}" for name, inf in self.informers.items() if inf.failing)

    def start(self) -> None:
        """Start the informers; the cache is marked synced in the background once they have listed."""
        for inf in self.informers.values():
            inf.start()
        self._sync_thread = threading.Thread(target=self._await_sync, name="extender-cache-sync", daemon=True)
        self._sync_thread.start()

    def _await_sync(self) -> None:
        for inf in self.informers.values():
            while not inf.synced.wait(0.1):
                if self._stop.is_set():
                    return
        # Informers set ``synced`` after their handlers saw the whole list, so the cache holds it.
        self.cache.mark_synced()
        log.info(
            "extender cache synced",
            extra={name: len(inf) for name, inf in self.informers.items()},
        )

    def stop(self) -> None:
        self._stop.set()
        for inf in self.informers.values():
            inf.stop()
        if self._sync_thread is not None:
            self._sync_thread.join(5)
