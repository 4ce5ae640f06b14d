"""The live rescheduler's copy of the cluster: one informer (list once, then watch from the list's
resourceVersion) per kind it reads — nodes, pods, PodDisruptionBudgets, namespaces — so a cycle builds
its ``ClusterState`` from memory instead of listing the whole cluster (descheduler does the same with
its shared informer factory).

Pods are watched without kube-scheduler's "not terminal" field selector: RemoveFailedPods and
PodLifeTime act on Failed and Succeeded pods. ``managedFields`` are dropped on arrival. The copy may
lag the server by a watch event; that is safe because every write the rescheduler makes is checked by
the server (evictions carry the pod's uid as a precondition, a plan re-reads the reserved node).
"""

from __future__ import annotations

from collections.abc import Callable

from harmonic.cluster.informer import (
    NAMESPACES,
    NODES,
    PDBS,
    PODS,
    Backoff,
    Informer,
    Resource,
    strip_managed_fields,
    wait_for_sync,
)
from harmonic.cluster.transport import Transport
from harmonic.rescheduler.state import ClusterState, from_manifests

#: What a cycle reads, in the order ``from_manifests`` gets it.
RESOURCES: tuple[Resource, ...] = (NODES, PODS, PDBS, NAMESPACES)


class ClusterCache:
    def __init__(self, transport: Transport, backoff: Callable[[], Backoff] = Backoff) -> None:
        self.informers = {
            r.plural: Informer(transport, r, backoff=backoff(), transform=strip_managed_fields)
            for r in RESOURCES
        }

    def start(self) -> None:
        for inf in self.informers.values():
            inf.start()

    def stop(self) -> None:
        for inf in self.informers.values():
            inf.stop()

    def wait_for_sync(self, timeout: float) -> bool:
        return wait_for_sync(self.informers, timeout)

    @property
    def synced(self) -> bool:
        return all(inf.synced.is_set() for inf in self.informers.values())

    def state(self, now: float) -> ClusterState:
        """The cluster as the informers last saw it. List items carry no ``kind``: it is set here."""
        objs = [
            {**obj, "kind": r.kind, "apiVersion": r.api_version}
            for r in RESOURCES
            for obj in self.informers[r.plural].list()
        ]
        return from_manifests(objs, now=now)
