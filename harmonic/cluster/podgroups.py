"""PodGroup status, written as scheduler-plugins' PodGroup controller writes it
(pkg/controllers/podgroup_controller.go), for live clusters.

Phases: a new group is ``Pending``; once it has ``minMember`` pods it is ``Scheduling``; then, from
its pods' phases, ``Running`` (running + succeeded >= minMember), ``Finished`` (succeeded >=
minMember) or ``Failed`` (some failed and failed + running + succeeded >= minMember), back to
``Pending`` when pods disappear below minMember. ``running``/``succeeded``/``failed`` count the pods,
``occupiedBy`` names the owners of the group's first pod, ``scheduleStartTime`` is set once. Finished
and Failed groups are left alone. Pods are those of the group's namespace carrying its label (upstream
lists them across namespaces, a slip this does not copy).

``PodGroupStatusWriter`` reconciles a group whenever it or one of its pods changes (informer
handlers) and PATCHes ``status`` (merge patch) only when the status changes, on a worker thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from harmonic.api.batch import FAILED, FINISHED, PENDING, POD_GROUP_LABEL, RUNNING, SCHEDULING
from harmonic.cluster.transport import MERGE_PATCH, ApiStatusError, Transport, TransportError, object_path
from harmonic.cluster.workers import WorkQueue

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]


def next_status(pg: Obj, pods: Iterable[Obj], now: str) -> dict[str, Any]:
    """The status the controller would write for ``pg`` given its pods (Reconcile)."""
    status: dict[str, Any] = dict(pg.get("status") or {})
    phase = status.get("phase") or ""
    if phase in (FINISHED, FAILED):
        return status
    spec = pg.get("spec") or {}
    min_member = int(spec.get("minMember") or 0)
    members = list(pods)
    if not status.get("scheduleStartTime"):
        status["scheduleStartTime"] = now
    if phase == "":
        status["phase"] = PENDING
        return status
    if phase == PENDING:
        if len(members) >= min_member:
            status["phase"] = SCHEDULING
            if members:
                owners = sorted(
                    f"{_meta(members[0]).get('namespace')}/{o.get('name')}"
                    for o in _meta(members[0]).get("ownerReferences") or ()
                )
                if owners:
                    status["occupiedBy"] = ",".join(owners)
        return status
    phases = [str((p.get("status") or {}).get("phase") or "") for p in members]
    running, succeeded, failed = (phases.count(x) for x in ("Running", "Succeeded", "Failed"))
    status.update(running=running, succeeded=succeeded, failed=failed)
    if len(members) < min_member:
        status["phase"] = PENDING
        return status
    status["phase"] = RUNNING if succeeded + running >= min_member else SCHEDULING
    if failed and failed + running + succeeded >= min_member:
        status["phase"] = FAILED
    if succeeded >= min_member:
        status["phase"] = FINISHED
    return status


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata") or {}
    return meta if isinstance(meta, Mapping) else {}


def _group_of(pod: Obj) -> tuple[str, str] | None:
    meta = _meta(pod)
    name = (meta.get("labels") or {}).get(POD_GROUP_LABEL)
    return (str(meta.get("namespace") or "default"), str(name)) if name else None


class PodGroupStatusWriter:
    """Keeps PodGroups' status current. ``on_pod_group`` / ``on_pod`` are informer handlers;
    ``pod_groups()`` and ``pods()`` list the informers' stores."""

    def __init__(
        self,
        transport: Transport,
        pod_groups: Callable[[], list[Obj]],
        pods: Callable[[], list[Obj]],
        now: Callable[[], str],
    ) -> None:
        self.transport = transport
        self._pod_groups = pod_groups
        self._pods = pods
        self._now = now
        self._queue: WorkQueue[tuple[str, str]] = WorkQueue(
            "podgroup-status", lambda key: self.reconcile(*key)
        )
        self.failed = 0

    def start(self) -> None:
        self._queue.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._queue.stop(timeout)

    def on_pod_group(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None:
            meta = _meta(new)
            self._queue.put((str(meta.get("namespace") or "default"), str(meta.get("name"))))

    def on_pod(self, old: Obj | None, new: Obj | None) -> None:
        for obj in (old, new):
            key = _group_of(obj) if obj is not None else None
            if key is not None:
                self._queue.put(key)

    def reconcile(self, namespace: str, name: str) -> bool:
        """Write the group's status if it changed; True when a patch was sent."""
        pg = next(
            (
                g
                for g in self._pod_groups()
                if (_meta(g).get("namespace"), _meta(g).get("name")) == (namespace, name)
            ),
            None,
        )
        if pg is None:
            return False
        pods = [p for p in self._pods() if _group_of(p) == (namespace, name)]
        status = next_status(pg, pods, self._now())
        if status == (pg.get("status") or {}):
            return False
        path = object_path("scheduling.x-k8s.io/v1alpha1", "podgroups", namespace, name) + "/status"
        try:
            self.transport.request("PATCH", path, body={"status": status}, content_type=MERGE_PATCH)
        except (ApiStatusError, TransportError) as e:
            self.failed += 1
            log.warning("writing status of PodGroup %s/%s failed: %s", namespace, name, e)
            return False
        return True
