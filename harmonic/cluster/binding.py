"""Binding a pod to a node through the API server: POST ``pods/<name>/binding``.

``PodBinder`` is the one place a Binding is written. Its users add their own policy around it:

- ``KubeClient`` (``harmonic run``) binds only while this replica holds the leader lease, and passes
  the time left on the lease as the request's timeout (``leader.py``'s fencing);
- the extender's bind verb binds without leader election: every extender replica serves
  kube-scheduler, and the API server itself refuses a second binding of a pod (409), which is the
  answer kube-scheduler then gets in the response's ``Error``.

A bind is refused locally when ``nodes`` (an informer's store) does not hold the node: binding to a
deleted node succeeds in the API server (it does not check the node) and orphans the pod. The pod's
uid goes in the Binding's metadata, a precondition the API server checks, so a pod deleted and
re-created under the same name is not bound by mistake (when the uid is known). 409 (already bound, uid mismatch), 404 (pod
gone), 5xx and transport failures come back as an Error status naming the cause, except when the pod,
read back after a lost answer or a 409, is bound to the node asked for: then the Binding is done.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from harmonic.api.pod import Pod
from harmonic.cluster.transport import ApiStatusError, Transport, TransportError, object_path
from harmonic.framework.status import Code, Status


class NodeStore(Protocol):
    """Nodes by name (an ``Informer`` of nodes)."""

    def get(self, key: str) -> Mapping[str, Any] | None: ...


class PodBinder:
    def __init__(self, transport: Transport, nodes: NodeStore) -> None:
        self.transport = transport
        self.nodes = nodes

    def bind(
        self, pod: Pod, node_name: str, timeout: float | None = None, deadline: float | None = None
    ) -> Status | None:
        """Bind ``pod`` to ``node_name``; None on success, else an Error status. A throttled answer
        (429 with Retry-After) is retried by the transport before ``deadline``: the server did not
        process the Binding, so sending it again cannot bind the pod twice."""
        if self.nodes.get(node_name) is None:
            return Status(Code.ERROR, f'node "{node_name}" not found')
        meta = {"name": pod.name, "namespace": pod.namespace}
        uid = (pod.raw.get("metadata") or {}).get("uid")
        if uid:  # a pod known by name only (no uid) is bound without the precondition
            meta["uid"] = uid
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        path = object_path("v1", "pods", pod.namespace, pod.name) + "/binding"
        try:
            self.transport.request("POST", path, body=body, timeout=timeout, deadline=deadline, decode=False)
        except (ApiStatusError, TransportError) as e:
            if (isinstance(e, TransportError) or e.code == 409) and self._bound_as_asked(pod, node_name, uid):
                # The answer was lost (or a resend met the first), but the server did bind it there.
                return None
            return Status(Code.ERROR, str(e))
        return None

    def _bound_as_asked(self, pod: Pod, node_name: str, uid: str | None) -> bool:
        """Whether the server holds ``pod`` (the same uid) bound to ``node_name``: read back after a
        Binding whose answer never came, or that was refused as already done."""
        try:
            current = self.transport.request("GET", object_path("v1", "pods", pod.namespace, pod.name))
        except (ApiStatusError, TransportError):
            return False
        meta = (current or {}).get("metadata") or {}
        same_pod = not uid or meta.get("uid") == uid
        return same_pod and ((current or {}).get("spec") or {}).get("nodeName") == node_name
