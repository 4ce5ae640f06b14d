"""What tests do to a real API server that Harmonic itself never does: apply manifests, add namespaces
with their ``default`` ServiceAccount, add fake Ready nodes in bulk, and mint ServiceAccount tokens
(TokenRequest) to run Harmonic as its shipped RBAC allows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from harmonic.cluster.transport import MERGE_PATCH, ApiStatusError, Transport, object_path
from harmonic.testing.kube.pki import kubeconfig

#: What kube-apiserver's TaintNodesByCondition admission puts on every new Node until a kubelet
#: reports it Ready; no kubelet runs here, so the test removes it.
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
#: Enough parallel requests to make bulk creation a matter of the API server's speed, not latency.
BULK_WORKERS = 8


class KubeClient:
    """JSON requests to one API server through Harmonic's ``Transport``."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._resources: dict[str, dict[str, tuple[str, bool]]] = {}

    # ------------------------------------------------------------------ plain calls
    def get(self, path: str, **query: Any) -> Any:
        return self.transport.request("GET", path, query=query or None)

    def create(self, path: str, body: Mapping[str, Any]) -> Any:
        return self.transport.request("POST", path, body=body)

    def patch(self, path: str, body: Mapping[str, Any], content_type: str = MERGE_PATCH) -> Any:
        return self.transport.request("PATCH", path, body=body, content_type=content_type)

    def delete(self, path: str) -> Any:
        return self.transport.request("DELETE", path)

    def items(self, path: str, **query: Any) -> list[dict[str, Any]]:
        """Every object of a list, following ``continue`` tokens."""
        out: list[dict[str, Any]] = []
        token = None
        while True:
            page = self.get(path, limit=500, **query, **({"continue": token} if token else {}))
            out += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return out

    # ------------------------------------------------------------------ manifests
    def resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        """(plural, namespaced) of ``kind``, from the server's discovery document."""
        if api_version not in self._resources:
            base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
            found = self.get(base).get("resources") or []
            self._resources[api_version] = {
                r["kind"]: (r["name"], bool(r["namespaced"])) for r in found if "/" not in r["name"]
            }
        try:
            return self._resources[api_version][kind]
        except KeyError:
            raise LookupError(f"the server serves no {kind} in {api_version}") from None

    def path_of(self, obj: Mapping[str, Any], named: bool = True) -> str:
        plural, namespaced = self.resource(obj["apiVersion"], obj["kind"])
        meta = obj.get("metadata") or {}
        ns = (meta.get("namespace") or "default") if namespaced else None
        return object_path(obj["apiVersion"], plural, ns, meta["name"] if named else None)

    def apply(self, objects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Create each object, or replace it where it exists (a plain create-or-update, not server-side
        apply: enough for manifests a test owns)."""
        out = []
        for obj in objects:
            try:
                out.append(self.create(self.path_of(obj, named=False), obj))
            except ApiStatusError as e:
                if e.code != 409:
                    raise
                path = self.path_of(obj)
                current = self.get(path)
                meta = {**obj.get("metadata", {}), "resourceVersion": current["metadata"]["resourceVersion"]}
                out.append(self.transport.request("PUT", path, body={**obj, "metadata": meta}))
        return out

    # ------------------------------------------------------------------ namespaces and accounts
    def namespace(self, name: str) -> None:
        """The namespace and its ``default`` ServiceAccount (which kube-controller-manager would create;
        the ServiceAccount admission plugin refuses pods without it)."""
        for path, body in (
            ("/api/v1/namespaces", {"metadata": {"name": name}}),
            (f"/api/v1/namespaces/{name}/serviceaccounts", {"metadata": {"name": "default"}}),
        ):
            try:
                self.create(path, body)
            except ApiStatusError as e:
                if e.code != 409:
                    raise

    def token(self, namespace: str, service_account: str, seconds: int = 3600) -> str:
        """A bound token of the ServiceAccount, from the TokenRequest API (what a kubelet mounts)."""
        answer = self.create(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": seconds},
            },
        )
        token: str = answer["status"]["token"]
        return token

    def service_account_kubeconfig(self, path: Path, namespace: str, service_account: str, ca: Path) -> Path:
        """A kubeconfig that authenticates as the ServiceAccount (what Harmonic sees in a pod)."""
        return kubeconfig(path, self.transport.host, ca, {"token": self.token(namespace, service_account)})

    # ------------------------------------------------------------------ nodes
    def ready_nodes(
        self,
        names: Iterable[str],
        allocatable: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        """Create Ready nodes, as a kubelet would leave them: the Ready condition set (status on create is
        kept) and the admission's not-ready taint removed. Created in parallel; returns the final nodes."""
        alloc = dict(allocatable or {"cpu": "4", "memory": "16Gi", "pods": "110"})

        def one(name: str) -> dict[str, Any]:
            body = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
                "status": {
                    "capacity": alloc,
                    "allocatable": alloc,
                    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                },
            }
            created = self.create("/api/v1/nodes", body)
            taints = [t for t in created["spec"].get("taints") or [] if t.get("key") != NOT_READY_TAINT]
            node: dict[str, Any] = self.patch(f"/api/v1/nodes/{name}", {"spec": {"taints": taints or None}})
            return node

        with ThreadPoolExecutor(BULK_WORKERS) as pool:
            return list(pool.map(one, names))

    def create_all(self, path: str, bodies: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """POST every body to ``path`` in parallel."""
        with ThreadPoolExecutor(BULK_WORKERS) as pool:
            return list(pool.map(lambda b: self.create(path, b), bodies))


def load_manifests(*files: Path) -> list[dict[str, Any]]:
    """Every object in the YAML files, in order (empty documents skipped)."""
    return [doc for f in files for doc in yaml.safe_load_all(f.read_text()) if doc]
