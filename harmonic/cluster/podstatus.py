"""Pod status patches that never contradict what the API server already holds.

The scheduler writes two things into a pending pod's status: after a failed attempt the
``PodScheduled=False`` condition, and after preemption ``nominatedNodeName``. Both are queued (the
scheduling thread never waits on the network) and applied in order by one worker thread, so one can
land *after* something that makes it wrong: a retried Binding that succeeded meanwhile (the pod would
end bound but marked unschedulable: 27-44 % of the pods of issue 33's throttled run on a real
kube-apiserver), or a bind after preemption (kube-apiserver refuses ``nominatedNodeName`` on a bound
pod with 422). Each patch is therefore guarded three ways:

1. dropped before it is sent when the pod is bound in the informer's copy, or its Binding is in flight;
2. sent with the pod's ``metadata.resourceVersion`` as it was when the scheduler decided, a
   precondition the API server checks (409 Conflict when the pod changed since);
3. after a 409, the pod is read again: bound or gone, the patch is dropped; otherwise it is sent again
   at the fresh resourceVersion (a label change, or our own previous patch, changed it).

A 404 (the pod is gone) and a 422 on a nomination (the pod was bound first) are outcomes, not
failures: the scheduler already moved on. Anything else is counted in ``failed`` and logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harmonic.cluster.transport import (
    STRATEGIC_MERGE_PATCH,
    ApiStatusError,
    Transport,
    TransportError,
    object_path,
)
from harmonic.cluster.workers import WorkQueue

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]
#: How many times a patch refused with 409 is read back and sent again before it is given up.
CONFLICT_RETRIES = 3


@dataclass(frozen=True)
class StatusPatch:
    namespace: str
    name: str
    status: dict[str, Any]
    #: The pod's resourceVersion the patch was decided on ("" sends it without the precondition).
    resource_version: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def nominates(self) -> bool:
        return bool(self.status.get("nominatedNodeName"))


class StatusPatcher:
    """Pod status patches, applied in order by one worker thread.

    ``latest(key)`` is the informer's copy of a pod; ``binding(key)`` says whether its Binding is in flight.
    """

    def __init__(
        self,
        transport: Transport,
        latest: Callable[[str], Obj | None] = lambda key: None,
        binding: Callable[[str], bool] = lambda key: False,
    ) -> None:
        self.transport = transport
        self.latest = latest
        self.binding = binding
        self._patches: WorkQueue[StatusPatch] = WorkQueue("status-patcher", self.apply)
        #: Patches that failed for a reason other than the pod having moved on.
        self.failed = 0
        #: Patches not applied because the pod was bound (or being bound) or deleted first.
        self.dropped = 0

    def start(self) -> None:
        self._patches.start()

    def patch(self, namespace: str, name: str, status: dict[str, Any], resource_version: str = "") -> None:
        self._patches.put(StatusPatch(namespace, name, status, resource_version))

    def stop(self, timeout: float = 5.0) -> None:
        self._patches.stop(timeout)

    def apply(self, p: StatusPatch) -> None:
        """Send ``p`` unless the pod moved on (the worker's handler; tests call it directly)."""
        latest = self.latest(p.key)
        if self.binding(p.key) or _bound(latest):
            self._drop(p, "it is bound or being bound")
            return
        rv = p.resource_version
        for _ in range(CONFLICT_RETRIES + 1):
            try:
                self._send(p, rv)
                return
            except ApiStatusError as e:
                if e.code == 404:
                    self._drop(p, "it is gone")
                    return
                if e.code == 422 and p.nominates:
                    self._drop(p, f"the server refused it: {e.message}")
                    return
                if e.code != 409 or not rv:
                    self._fail(p, e)
                    return
            except TransportError as e:
                self._fail(p, e)
                return
            # 409: the pod changed since the decision. Read it back: patch it only if still pending.
            try:
                current = self.transport.request("GET", object_path("v1", "pods", p.namespace, p.name))
            except ApiStatusError as e:
                if e.code == 404:
                    self._drop(p, "it is gone")
                else:
                    self._fail(p, e)
                return
            except TransportError as e:
                self._fail(p, e)
                return
            if _bound(current) or self.binding(p.key):
                self._drop(p, "it was bound meanwhile")
                return
            rv = str(((current or {}).get("metadata") or {}).get("resourceVersion") or "")
        self._fail(p, RuntimeError(f"the pod kept changing ({CONFLICT_RETRIES + 1} conflicts)"))

    def _send(self, p: StatusPatch, rv: str) -> None:
        body: dict[str, Any] = {"status": p.status}
        if rv:
            body["metadata"] = {"resourceVersion": rv}
        path = object_path("v1", "pods", p.namespace, p.name) + "/status"
        self.transport.request("PATCH", path, body=body, content_type=STRATEGIC_MERGE_PATCH, decode=False)

    def _drop(self, p: StatusPatch, why: str) -> None:
        self.dropped += 1
        log.debug("status patch of pod %s not applied: %s", p.key, why)

    def _fail(self, p: StatusPatch, e: Exception) -> None:
        self.failed += 1
        log.warning("patching status of pod %s failed: %s", p.key, e)


def _bound(pod: Obj | None) -> bool:
    return bool(((pod or {}).get("spec") or {}).get("nodeName"))
