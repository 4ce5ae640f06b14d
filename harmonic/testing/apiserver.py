"""An API-server test double: real HTTP on 127.0.0.1 with the kube-apiserver semantics Harmonic uses.

No kube-apiserver can run in tests, and the available emulators lack resourceVersions and
subresources, so this is a small, faithful stand-in for the calls a scheduler makes:

- **Objects**: pods, nodes, namespaces (``default``, ``kube-system``, ``kube-public`` and
  ``kube-node-lease`` exist from the start), poddisruptionbudgets (policy/v1), secrets, configmaps, leases
  (coordination.k8s.io/v1), Events (core/v1 and events.k8s.io/v1), services and
  replicationcontrollers (core/v1), replicasets and statefulsets (apps/v1), podgroups and
  elasticquotas (scheduling.x-k8s.io/v1alpha1, scheduler-plugins' CRDs), all with the same lists,
  watches and writes. One global resourceVersion counter,
  as etcd's revision; uid and creationTimestamp set on create; pods defaulted as the API server
  defaults them (namespace, ``schedulerName: default-scheduler``, phase, requests from limits).
- **Lists**: ``limit``/``continue`` paging over a consistent snapshot (an expired token is 410
  ``Expired``; a ``resourceVersion`` the server has not reached is kube-apiserver's 504 "Too large
  resource version" with ``Retry-After``), list ``metadata.resourceVersion``, items without kind/apiVersion as the real server
  sends them; field selectors on ``metadata.name``, ``metadata.namespace``, ``spec.nodeName``,
  ``spec.schedulerName`` and ``status.phase`` (``=``, ``==``, ``!=``).
- **Watches**: newline-delimited JSON events ADDED/MODIFIED/DELETED from a resourceVersion (replayed
  from a bounded history), synthetic ADDED events for ``resourceVersion`` unset or ``0``, BOOKMARK
  events with ``allowWatchBookmarks``, an ERROR event with a 410 Status when the resourceVersion is
  older than the history, silence (no events, no bookmarks, as kube-apiserver 1.36) until the server
  passes a resourceVersion it has not reached, objects leaving a field selector sent as DELETED (entering it as ADDED), and
  server-side close after ``timeoutSeconds``.
- **Subresources**: ``pods/binding`` (201; 409 when already bound or on a uid precondition mismatch;
  404 for a missing pod; the node is *not* checked, as the real server does not), ``pods/eviction``
  (policy/v1; 429 when a PodDisruptionBudget has no disruptions allowed, decrementing it otherwise;
  PDBs are ignored for Pending, terminal or terminating pods, as upstream does), ``pods/resize``
  (Kubernetes 1.33's in-place resize with the kubelet's ``PodResizePending`` answer:
  ``harmonic.testing.resize``), ``status`` on every
  object (PUT, or PATCH with merge or strategic-merge patches: ``conditions`` merge on ``type``).
- **Optimistic concurrency**: PUT with a stale ``metadata.resourceVersion`` is 409 Conflict (Leases,
  the reservations' ConfigMap); POST of a name that exists is 409 AlreadyExists.
- **Faults** (for tests): ``inject`` an HTTP status (with ``Retry-After``) or a delay for requests
  matching method, path regex and User-Agent; ``drop_watches`` (the connection is cut mid-stream,
  without the final chunk); ``expire_history`` (reconnecting watches get 410); ``recreate`` (the
  server back with fresh state and a lower resourceVersion, as after etcd was recreated or restored).
- **Accounting**: every request counted by verb and resource; every binding recorded per pod.

Run in-process (``with ApiServerDouble() as api: ...``; state changes from the test thread are
marshalled onto the server's event loop) or as a process for benchmarks
(``python -m harmonic.testing.apiserver``), where the ``/_harmonic/`` admin endpoints create objects in
bulk and report the counters.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import builtins
import contextlib
import copy
import json
import os
import re
import secrets
import sys
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

try:
    from aiohttp import web
except ImportError as e:  # an extra, not a runtime dependency of the scheduler
    raise ImportError("harmonic.testing.apiserver needs aiohttp: pip install 'harmonic[testing]'") from e

from harmonic.api.errors import ObjectError
from harmonic.api.selectors import label_selector
from harmonic.cluster.defaults import default_node, default_pod

Obj = dict[str, Any]
T = TypeVar("T")

ADMIN_PREFIX = "/_harmonic"
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def id(self) -> str:
        return f"{self.group}/{self.plural}" if self.group else self.plural

    @property
    def qualified(self) -> str:
        """``leases.coordination.k8s.io``, as kube-apiserver names a resource in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


RESOURCE_TYPES = (
    ResourceType("", "v1", "pods", "Pod", True),
    ResourceType("", "v1", "nodes", "Node", False),
    ResourceType("", "v1", "namespaces", "Namespace", False),
    ResourceType("", "v1", "events", "Event", True),
    ResourceType("events.k8s.io", "v1", "events", "Event", True),
    ResourceType("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True),
    ResourceType("", "v1", "services", "Service", True),
    ResourceType("", "v1", "secrets", "Secret", True),
    ResourceType("", "v1", "configmaps", "ConfigMap", True),
    ResourceType("", "v1", "replicationcontrollers", "ReplicationController", True),
    ResourceType("apps", "v1", "replicasets", "ReplicaSet", True),
    ResourceType("apps", "v1", "statefulsets", "StatefulSet", True),
    ResourceType("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", True),
    ResourceType("scheduling.x-k8s.io", "v1alpha1", "elasticquotas", "ElasticQuota", True),
    # The storage objects the volume plugins read (the live adapters' "volumes" service).
    ResourceType("", "v1", "persistentvolumes", "PersistentVolume", False),
    ResourceType("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True),
    ResourceType("storage.k8s.io", "v1", "storageclasses", "StorageClass", False),
    ResourceType("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    ResourceType("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    ResourceType("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True),
    ResourceType("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False),
    # metrics-server's resource metrics API, read by harmonic.signals.usage.MetricsServerSource.
    ResourceType("metrics.k8s.io", "v1beta1", "nodes", "NodeMetrics", False),
    ResourceType("metrics.k8s.io", "v1beta1", "pods", "PodMetrics", True),
)
_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCE_TYPES}
_BY_ID = {r.id: r for r in RESOURCE_TYPES}
#: Names the Python API accepts: the id (``policy/poddisruptionbudgets``) or an unambiguous plural.
_NAMES = {**{r.plural: r for r in RESOURCE_TYPES if r.group}, **{r.id: r for r in RESOURCE_TYPES}}

#: Strategic-merge-patch merge keys of the lists Harmonic patches (from the upstream API types).
_MERGE_KEYS = {"conditions": "type", "containers": "name", "ownerReferences": "uid"}
_FIELDS = {
    "metadata.name": ("metadata", "name"),
    "metadata.namespace": ("metadata", "namespace"),
    "spec.nodeName": ("spec", "nodeName"),
    "spec.schedulerName": ("spec", "schedulerName"),
    "status.phase": ("status", "phase"),
}


class ApiError(Exception):
    """A kube-apiserver failure: becomes a ``Status`` body with ``code`` and ``reason``."""

    def __init__(self, code: int, reason: str, message: str, details: Obj | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    @property
    def headers(self) -> dict[str, str]:
        """``Retry-After`` from ``details.retryAfterSeconds``, as kube-apiserver's error writer sets it."""
        seconds = (self.details or {}).get("retryAfterSeconds")
        return {"Retry-After": str(seconds)} if seconds else {}

    def status(self) -> Obj:
        out: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            out["details"] = self.details
        return out


def _resource(name: str) -> ResourceType:
    rt = _NAMES.get(name)
    if rt is None:
        raise KeyError(f"unknown resource {name!r}; one of {', '.join(sorted(_NAMES))}")
    return rt


def _not_found(rt: ResourceType, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{rt.qualified} "{name}" not found', {"name": name, "kind": rt.plural})


def _conflict(rt: ResourceType, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {rt.qualified} "{name}": {why}',
        {"name": name, "kind": rt.plural},
    )


def _now_rfc3339(micro: bool = False) -> str:
    t = datetime.now(UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def too_large_resource_version(asked: int, current: int, retry_after: int) -> ApiError:
    """kube-apiserver's answer to a list or watch at a resourceVersion it has not reached (its
    ``NewTooLargeResourceVersionError``: a 504 with the ``ResourceVersionTooLarge`` cause)."""
    return ApiError(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {asked}, current: {current}",
        {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": retry_after,
        },
    )


def _success(code: int = 201) -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


# --------------------------------------------------------------------------- patches
def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Strategic merge patch for the shapes Harmonic sends: maps merge, ``null`` deletes, lists with a
    known merge key merge element-wise (``$patch: delete`` removes one), other lists are replaced.
    Directives such as ``$setElementOrder`` and ``$retainKeys`` are accepted and ignored."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$"):
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and k in _MERGE_KEYS and isinstance(out.get(k), list):
            out[k] = _merge_list(out[k], v, _MERGE_KEYS[k])
        else:
            out[k] = strategic_merge_patch(out.get(k), v)
    return out


def _merge_list(current: list[Any], patch: list[Any], key: str) -> list[Any]:
    items = list(current)
    for p in patch:
        if not isinstance(p, dict) or key not in p:
            raise ApiError(
                400, "BadRequest", f"strategic merge patch: list element without merge key {key!r}"
            )
        at = next((i for i, c in enumerate(items) if isinstance(c, dict) and c.get(key) == p[key]), None)
        if p.get("$patch") == "delete":
            if at is not None:
                del items[at]
        elif at is None:
            items.append(strategic_merge_patch({}, p))
        else:
            items[at] = strategic_merge_patch(items[at], p)
    return items


# --------------------------------------------------------------------------- selectors
def parse_field_selector(text: str) -> list[tuple[tuple[str, str], bool, str]]:
    """``a=b,c!=d`` into (path, equal?, value) requirements; unknown fields are 400 as upstream."""
    reqs = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = re.fullmatch(r"([^=!]+)(==|=|!=)(.*)", part)
        if m is None:
            raise ApiError(400, "BadRequest", f"invalid field selector: {part!r}")
        name, op, value = m.group(1).strip(), m.group(2), m.group(3).strip()
        if name not in _FIELDS:
            raise ApiError(400, "BadRequest", f'"{name}" is not a known field selector: only "{name}"')
        reqs.append((_FIELDS[name], op != "!=", value))
    return reqs


def _field_matches(obj: Obj, reqs: list[tuple[tuple[str, str], bool, str]]) -> bool:
    for (section, key), equal, value in reqs:
        actual = str((obj.get(section) or {}).get(key) or "")
        if (actual == value) != equal:
            return False
    return True


# --------------------------------------------------------------------------- faults and accounting
@dataclass
class Fault:
    """Requests matching every given criterion get ``status`` (0: served normally) after ``delay``."""

    status: int = 500
    method: str | None = None
    path: str | None = None  # regex searched in the request path
    agent: str | None = None  # substring of the User-Agent header
    times: int | None = None  # None: until cleared
    delay: float = 0.0
    message: str = "injected fault"
    retry_after: int | None = None  # seconds, sent as the Retry-After header
    hits: int = 0

    def matches(self, method: str, path: str, agent: str) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        if self.method is not None and self.method != method:
            return False
        if self.path is not None and re.search(self.path, path) is None:
            return False
        return self.agent is None or self.agent in agent


@dataclass
class Binding:
    pod: str
    node: str
    agent: str
    at: float


@dataclass
class _Watch:
    rt: ResourceType
    namespace: str | None
    fields: list[tuple[tuple[str, str], bool, str]]
    queue: asyncio.Queue[bytes | None]
    agent: str
    sent: int = 0
    drop: bool = False  # cut the connection without ending the stream
    drop_after: int | None = None
    silent: bool = False  # from a resourceVersion the server has not reached: no events, no bookmarks
    after: int = 0  # changes at or below this resourceVersion are not sent

    def wants(self, obj: Obj) -> bool:
        if self.namespace is not None and (obj.get("metadata") or {}).get("namespace") != self.namespace:
            return False
        return _field_matches(obj, self.fields)


@dataclass
class _Change:
    rv: int
    rt: ResourceType
    old: Obj | None
    new: Obj | None


@dataclass
class Stats:
    """Counters since start (or ``reset_stats``)."""

    requests: Counter[str] = field(default_factory=Counter)  # "verb resource[/sub]" -> count
    by_agent: Counter[str] = field(default_factory=Counter)
    bindings: list[Binding] = field(default_factory=list)
    binding_conflicts: int = 0
    #: Every distinct (method, path?query) received, to check clients against RBAC rules.
    calls: set[tuple[str, str]] = field(default_factory=set)

    def as_dict(self) -> Obj:
        return {
            "requests": dict(self.requests),
            "by_agent": dict(self.by_agent),
            "bindings": len(self.bindings),
            "binding_conflicts": self.binding_conflicts,
        }


# --------------------------------------------------------------------------- the server state
class _State:
    """All objects and watches. Touched only on the server's event loop thread."""

    def __init__(self, history: int, bookmark_interval: float) -> None:
        self.objects: dict[str, dict[str, Obj]] = {rt.id: {} for rt in RESOURCE_TYPES}
        self.rv = 0
        self.history: deque[_Change] = deque()
        self.history_limit = history
        self.compacted = 0
        self.watches: list[_Watch] = []
        self.bookmark_interval = bookmark_interval
        self.faults: list[Fault] = []
        self.stats = Stats()
        self.snapshots: dict[str, tuple[float, int, list[Obj]]] = {}
        self.force_410: Counter[str] = Counter()
        self.bound_pods = 0
        #: ``retryAfterSeconds`` of a too-large-resourceVersion answer (kube-apiserver: 1).
        self.too_large_retry_after = 1

    # ------------------------------------------------------------------ objects
    @staticmethod
    def key(ns: str | None, name: str) -> str:
        return f"{ns}/{name}" if ns else name

    def get(self, rt: ResourceType, ns: str | None, name: str) -> Obj:
        obj = self.objects[rt.id].get(self.key(ns, name))
        if obj is None:
            raise _not_found(rt, name)
        return obj

    def _commit(self, rt: ResourceType, old: Obj | None, new: Obj | None) -> Obj | None:
        self.rv += 1
        if new is not None:
            new["metadata"]["resourceVersion"] = str(self.rv)
            meta = new["metadata"]
            self.objects[rt.id][self.key(meta.get("namespace"), meta["name"])] = new
        elif old is not None:
            meta = old["metadata"]
            del self.objects[rt.id][self.key(meta.get("namespace"), meta["name"])]
            old = {**old, "metadata": {**meta, "resourceVersion": str(self.rv)}}
        if rt.id == "pods":
            self.bound_pods += bool(new and new["spec"].get("nodeName")) - bool(
                old and old["spec"].get("nodeName")
            )
        change = _Change(self.rv, rt, old, new)
        self.history.append(change)
        if len(self.history) > self.history_limit:
            self.compacted = self.history.popleft().rv
        self._notify(change)
        return new

    def create(self, rt: ResourceType, ns: str | None, obj: Obj) -> Obj:
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            raise ApiError(400, "BadRequest", f"{rt.kind} body must be an object with metadata")
        meta = dict(obj["metadata"])
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if ns and body_ns and body_ns != ns:
                raise ApiError(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
            meta["namespace"] = ns or body_ns or "default"
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if meta.get("generateName"):
                meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
            else:
                raise ApiError(422, "Invalid", f"{rt.kind} metadata.name: Required value: name is required")
        name = meta["name"]
        if self.key(meta.get("namespace"), name) in self.objects[rt.id]:
            raise ApiError(
                409,
                "AlreadyExists",
                f'{rt.qualified} "{name}" already exists',
                {"name": name, "kind": rt.plural},
            )
        uid, created = str(uuid.uuid4()), _now_rfc3339()
        meta["uid"], meta["creationTimestamp"] = uid, created
        meta.pop("resourceVersion", None)
        base = {**obj, "metadata": meta}
        if rt.id == "pods":
            new = default_pod(base, uid, created)
            new["spec"].setdefault("schedulerName", "default-scheduler")
            new["metadata"]["uid"], new["metadata"]["creationTimestamp"] = uid, created
        elif rt.id == "nodes":
            new = default_node(base, uid, created)
        else:
            new = {**base, "apiVersion": rt.api_version, "kind": rt.kind}
        new = copy.deepcopy(new)
        new["metadata"].setdefault("generation", 1)
        self._commit(rt, None, new)
        return new

    def update(self, rt: ResourceType, ns: str | None, name: str, obj: Obj, status_only: bool = False) -> Obj:
        old = self.get(rt, ns, name)
        if not isinstance(obj, dict):
            raise ApiError(400, "BadRequest", f"{rt.kind} body must be an object")
        meta = obj.get("metadata") or {}
        if meta.get("name", name) != name:
            raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
        want = meta.get("resourceVersion")
        if want and want != old["metadata"]["resourceVersion"]:
            raise _conflict(
                rt,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            )
        if status_only:
            new = {**old, "status": copy.deepcopy(obj.get("status") or {})}
            new["metadata"] = dict(old["metadata"])
        else:
            new = copy.deepcopy(obj)
            keep = ("uid", "creationTimestamp", "namespace", "name", "generation", "deletionTimestamp")
            new["metadata"] = {
                **(new.get("metadata") or {}),
                **{k: old["metadata"][k] for k in keep if k in old["metadata"]},
            }
            new.setdefault("status", old.get("status"))
            new["apiVersion"], new["kind"] = rt.api_version, rt.kind
            if new.get("spec") != old.get("spec"):
                new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
        return self._commit(rt, old, new) or new

    def patch(
        self, rt: ResourceType, ns: str | None, name: str, patch: Any, kind: str, status_only: bool
    ) -> Obj:
        old = self.get(rt, ns, name)
        if not isinstance(patch, dict):
            raise ApiError(400, "BadRequest", "patch body must be a JSON object")
        want = (patch.get("metadata") or {}).get("resourceVersion")
        if want and want != old["metadata"]["resourceVersion"]:
            raise _conflict(
                rt,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            )
        fn = strategic_merge_patch if kind == "strategic" else merge_patch
        if status_only:
            new = {**old, "status": fn(old.get("status") or {}, patch.get("status") or {})}
            new["metadata"] = dict(old["metadata"])
            nominated = new["status"].get("nominatedNodeName")
            was = (old.get("status") or {}).get("nominatedNodeName")
            if rt.id == "pods" and nominated and nominated != was and old["spec"].get("nodeName"):
                # kube-apiserver 1.36's answer to the late preemption patches of issue 33.
                message = "Forbidden: may not be set on pods that are already bound to a node"
                raise ApiError(
                    422,
                    "Invalid",
                    f'Pod "{name}" is invalid: status.nominatedNodeName: {message}',
                    {
                        "name": name,
                        "kind": "Pod",
                        "causes": [
                            {
                                "reason": "FieldValueForbidden",
                                "message": message,
                                "field": "status.nominatedNodeName",
                            }
                        ],
                    },
                )
        else:
            new = fn(old, patch)
            new["metadata"] = {**new["metadata"], "uid": old["metadata"]["uid"], "name": name}
        return self._commit(rt, old, copy.deepcopy(new)) or new

    def delete(self, rt: ResourceType, ns: str | None, name: str, uid: str | None = None) -> Obj:
        old = self.get(rt, ns, name)
        if uid and old["metadata"].get("uid") != uid:
            raise _conflict(
                rt,
                name,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {old['metadata'].get('uid')}",
            )
        self._commit(rt, old, None)
        return old

    # ------------------------------------------------------------------ subresources
    def bind(self, ns: str, name: str, body: Any, agent: str) -> Obj:
        pods = _BY_ID["pods"]
        if not isinstance(body, dict) or not isinstance(body.get("target"), dict):
            raise ApiError(400, "BadRequest", "Binding: target is required")
        target = body["target"]
        node = target.get("name")
        if not node:
            raise ApiError(422, "Invalid", "Binding.target.name: Required value")
        if target.get("kind", "Node") not in ("Node", ""):
            raise ApiError(422, "Invalid", f"Binding.target.kind: Unsupported value: {target.get('kind')!r}")
        old = self.get(pods, ns, name)
        want_uid = (body.get("metadata") or {}).get("uid")
        if want_uid and want_uid != old["metadata"]["uid"]:
            self.stats.binding_conflicts += 1
            raise _conflict(
                pods,
                name,
                f"Precondition failed: UID in precondition: {want_uid}, UID in object meta: {old['metadata']['uid']}",
            )
        if old["metadata"].get("deletionTimestamp"):
            raise ApiError(500, "InternalError", f"pod {name} is being deleted, cannot be assigned to a host")
        current = (old.get("spec") or {}).get("nodeName")
        if current:
            self.stats.binding_conflicts += 1
            raise _conflict(pods, name, f'pod {name} is already assigned to node "{current}"')
        new = copy.deepcopy(old)
        new["spec"]["nodeName"] = node
        ann = (body.get("metadata") or {}).get("annotations")
        if ann:
            new["metadata"]["annotations"] = {**(new["metadata"].get("annotations") or {}), **ann}
        status = new.setdefault("status", {})
        conds = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
        conds.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": _now_rfc3339()})
        status["conditions"] = conds
        self._commit(pods, old, new)
        self.stats.bindings.append(Binding(f"{ns}/{name}", node, agent, time.monotonic()))
        return _success()

    def evict(self, ns: str, name: str, body: Any) -> Obj:
        pods = _BY_ID["pods"]
        pdbs_rt = _BY_ID["policy/poddisruptionbudgets"]
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "Eviction body must be an object")
        pod = self.get(pods, ns, name)
        uid = ((body.get("deleteOptions") or {}).get("preconditions") or {}).get("uid")
        phase = (pod.get("status") or {}).get("phase")
        if not (phase in ("Succeeded", "Failed", "Pending") or pod["metadata"].get("deletionTimestamp")):
            labels = pod["metadata"].get("labels") or {}
            matching = []
            for pdb in self.objects[pdbs_rt.id].values():
                if pdb["metadata"]["namespace"] != ns:
                    continue
                try:
                    sel = label_selector(
                        pdb["metadata"]["name"], "spec.selector", (pdb.get("spec") or {}).get("selector")
                    )
                except ObjectError:
                    continue
                if not sel.everything and sel.matches(labels):
                    matching.append(pdb)
            if len(matching) > 1:
                raise ApiError(
                    500,
                    "InternalError",
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                )
            if matching:
                pdb = matching[0]
                st = pdb.get("status") or {}
                allowed = int(st.get("disruptionsAllowed") or 0)
                if allowed <= 0:
                    pname = pdb["metadata"]["name"]
                    raise ApiError(
                        429,
                        "TooManyRequests",
                        "Cannot evict pod as it would violate the pod's disruption budget.",
                        {
                            "causes": [
                                {
                                    "reason": "DisruptionBudget",
                                    "message": f"The disruption budget {pname} needs "
                                    f"{st.get('desiredHealthy', 0)} healthy pods and has "
                                    f"{st.get('currentHealthy', 0)} currently",
                                }
                            ]
                        },
                    )
                new_pdb = copy.deepcopy(pdb)
                new_status = new_pdb.setdefault("status", {})
                new_status["disruptionsAllowed"] = allowed - 1
                new_status.setdefault("disruptedPods", {})[name] = _now_rfc3339()
                self._commit(pdbs_rt, pdb, new_pdb)
        self.delete(pods, ns, name, uid)
        return _success()

    def resize(self, ns: str, name: str, patch: Any, kind: str) -> Obj:
        """PATCH ``pods/<name>/resize`` (``harmonic.testing.resize``: validation and the kubelet)."""
        from harmonic.testing.resize import ResizeInvalid, actuate, validate

        pods = _BY_ID["pods"]
        old = self.get(pods, ns, name)
        if not isinstance(patch, dict):
            raise ApiError(400, "BadRequest", "patch body must be a JSON object")
        fn = strategic_merge_patch if kind == "strategic" else merge_patch
        new = copy.deepcopy(fn(old, {"spec": patch.get("spec") or {}}))
        try:
            validate(old, new)
        except ResizeInvalid as e:
            raise ApiError(422, "Invalid", f'Pod "{name}" is invalid: {e}') from None
        node_name = old["spec"]["nodeName"]
        node = self.objects[_BY_ID["nodes"].id].get(node_name)
        others = [
            p
            for k, p in self.objects[pods.id].items()
            if k != self.key(ns, name)
            and (p.get("spec") or {}).get("nodeName") == node_name
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]
        new = actuate(new, old, node, others)
        new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
        return self._commit(pods, old, new) or new

    # ------------------------------------------------------------------ lists and watches
    def list(
        self, rt: ResourceType, ns: str | None, fields: str, limit: int, cont: str, rv_param: str = ""
    ) -> Obj:
        reqs = parse_field_selector(fields)
        if not cont and rv_param not in ("", "0"):
            # resourceVersionMatch unset: data at least as fresh as rv_param, which must exist.
            try:
                asked = int(rv_param)
            except ValueError:
                raise ApiError(400, "BadRequest", f"invalid resourceVersion {rv_param!r}") from None
            if asked > self.rv:
                raise too_large_resource_version(asked, self.rv, self.too_large_retry_after)
        if cont:
            try:
                snap_id, offset_s = base64.urlsafe_b64decode(cont.encode()).decode().split(":")
                offset = int(offset_s)
            except (ValueError, UnicodeDecodeError):
                raise ApiError(400, "BadRequest", "continue key is not valid") from None
            snap = self.snapshots.get(snap_id)
            if snap is None:
                raise ApiError(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter.",
                )
            _, rv, items = snap
        else:
            rv = self.rv
            items = [
                o
                for o in self.objects[rt.id].values()
                if (ns is None or o["metadata"].get("namespace") == ns) and _field_matches(o, reqs)
            ]
            items.sort(key=lambda o: self.key(o["metadata"].get("namespace"), o["metadata"]["name"]))
            offset = 0
            snap_id = ""
        page = items[offset : offset + limit] if limit > 0 else items[offset:]
        meta: Obj = {"resourceVersion": str(rv)}
        end = offset + len(page)
        if end < len(items):
            if not snap_id:
                snap_id = secrets.token_hex(6)
                self.snapshots[snap_id] = (time.monotonic(), rv, items)
            meta["continue"] = base64.urlsafe_b64encode(f"{snap_id}:{end}".encode()).decode()
            meta["remainingItemCount"] = len(items) - end
        cutoff = time.monotonic() - 60
        for k in [k for k, (t, _, _) in self.snapshots.items() if t < cutoff]:
            del self.snapshots[k]
        strip = ("apiVersion", "kind")
        return {
            "apiVersion": rt.api_version,
            "kind": f"{rt.kind}List",
            "metadata": meta,
            "items": [{k: v for k, v in o.items() if k not in strip} for o in page],
        }

    def _notify(self, change: _Change) -> None:
        lines: dict[str, bytes] = {}
        for w in self.watches:
            if w.rt is change.rt:
                self._offer(w, change, lines)

    def _offer(self, w: _Watch, change: _Change, lines: dict[str, bytes]) -> None:
        if change.rv <= w.after:
            return
        w.silent = False
        was = change.old is not None and w.wants(change.old)
        now = change.new is not None and w.wants(change.new)
        if was and now:
            typ, obj = "MODIFIED", change.new
        elif now:
            typ, obj = "ADDED", change.new
        elif was:
            # Leaving the selector is a DELETED carrying the latest state.
            typ, obj = "DELETED", change.new if change.new is not None else change.old
        else:
            return
        line = lines.get(typ)
        if line is None:
            line = lines[typ] = (
                json.dumps({"type": typ, "object": obj}, separators=(",", ":")).encode() + b"\n"
            )
        w.queue.put_nowait(line)

    def open_watch(self, rt: ResourceType, ns: str | None, fields: str, rv_param: str, agent: str) -> _Watch:
        reqs = parse_field_selector(fields)
        w = _Watch(rt, ns, reqs, asyncio.Queue(), agent)
        if self.force_410[rt.id] > 0:
            self.force_410[rt.id] -= 1
            w.queue.put_nowait(_error_line(_gone(0)))
            w.queue.put_nowait(None)
            return w
        if rv_param in ("", "0"):
            for o in self.objects[rt.id].values():
                if w.wants(o):
                    w.queue.put_nowait(
                        json.dumps({"type": "ADDED", "object": o}, separators=(",", ":")).encode() + b"\n"
                    )
        else:
            try:
                since = int(rv_param)
            except ValueError:
                raise ApiError(400, "BadRequest", f"invalid resourceVersion {rv_param!r}") from None
            if since < self.compacted:
                w.queue.put_nowait(_error_line(_gone(since)))
                w.queue.put_nowait(None)
                return w
            if since > self.rv:
                # kube-apiserver (1.36, measured) opens the watch and sends nothing, not even bookmarks,
                # until the timeout: the watch waits for a resourceVersion the server has not reached.
                w.silent, w.after = True, since
            lines: dict[int, dict[str, bytes]] = {}
            for ch in self.history:
                if ch.rv > since and ch.rt is rt:
                    self._offer(w, ch, lines.setdefault(ch.rv, {}))
        self.watches.append(w)
        return w

    def fault_for(self, method: str, path: str, agent: str) -> Fault | None:
        for f in self.faults:
            if f.matches(method, path, agent):
                f.hits += 1
                return f
        return None


def _gone(rv: int) -> ApiError:
    return ApiError(410, "Expired", f"too old resource version: {rv}")


def _error_line(err: ApiError) -> bytes:
    return json.dumps({"type": "ERROR", "object": err.status()}, separators=(",", ":")).encode() + b"\n"


# --------------------------------------------------------------------------- HTTP
_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


@dataclass
class _Route:
    rt: ResourceType
    namespace: str | None
    name: str | None
    sub: str | None


def _route(path: str) -> _Route | None:
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    ns = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    rt = _BY_PATH.get((group, version, rest[0]))
    if rt is None or (ns is not None and not rt.namespaced):
        return None
    return _Route(rt, ns, rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else None)


class _App:
    def __init__(self, state: _State, token: str | None) -> None:
        self.state = state
        self.token = token
        self.shutting_down = asyncio.Event()

    def build(self) -> web.Application:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        agent = request.headers.get("User-Agent", "")
        if path.startswith(ADMIN_PREFIX):
            return await self.admin(request)
        if path in ("/healthz", "/readyz", "/livez"):
            return web.Response(text="ok")
        route = _route(path)
        if route is not None:
            self.state.stats.requests[_request_label(request, route)] += 1
        self.state.stats.by_agent[agent] += 1
        self.state.stats.calls.add((request.method, request.path_qs))
        if self.token is not None and request.headers.get("Authorization") != f"Bearer {self.token}":
            return _json(ApiError(401, "Unauthorized", "Unauthorized").status(), 401)
        fault = self.state.fault_for(request.method, path, agent)
        if fault is not None:
            if fault.delay:
                await asyncio.sleep(fault.delay)
            if fault.status:
                code = fault.status
                reason = {429: "TooManyRequests", 503: "ServiceUnavailable", 504: "Timeout"}.get(
                    code, "InternalError"
                )
                details = {"retryAfterSeconds": fault.retry_after} if fault.retry_after is not None else None
                headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else None
                return _json(ApiError(code, reason, fault.message, details).status(), code, headers)
        try:
            return await self.dispatch(request, agent)
        except ApiError as e:
            return _json(e.status(), e.code, e.headers)

    async def dispatch(self, request: web.Request, agent: str) -> web.StreamResponse:
        path = request.path
        if path == "/version":
            return _json({"major": "1", "minor": "35", "gitVersion": "v1.35.0-harmonic-test-double"})
        if path in ("/api", "/apis") or (path.startswith("/apis/") and path.count("/") == 3):
            return _json(_discovery(path))
        route = _route(path)
        if route is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        st = self.state
        rt, q = route.rt, request.query
        sub = f"/{route.sub}" if route.sub else ""
        watching = _is_watch(request, route)
        if watching:
            return await self.watch(request, route, agent)
        if route.name is None:
            if request.method == "GET":
                limit = int(q.get("limit") or 0)
                return _json(
                    st.list(
                        rt,
                        route.namespace,
                        q.get("fieldSelector", ""),
                        limit,
                        q.get("continue", ""),
                        q.get("resourceVersion", ""),
                    )
                )
            if request.method == "POST":
                if not rt.namespaced and route.namespace:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                return _json(st.create(rt, route.namespace, await _body(request)), 201)
            raise ApiError(405, "MethodNotAllowed", f"{request.method} is not supported on {rt.plural}")
        name = route.name
        if route.sub is None:
            if request.method == "GET":
                return _json(st.get(rt, route.namespace, name))
            if request.method == "PUT":
                return _json(st.update(rt, route.namespace, name, await _body(request)))
            if request.method == "PATCH":
                return _json(
                    st.patch(rt, route.namespace, name, await _body(request), _patch_kind(request), False)
                )
            if request.method == "DELETE":
                body = await _body(request, optional=True)
                uid = ((body or {}).get("preconditions") or {}).get("uid")
                return _json(st.delete(rt, route.namespace, name, uid))
        elif route.sub == "status":
            if request.method == "PUT":
                return _json(st.update(rt, route.namespace, name, await _body(request), status_only=True))
            if request.method == "PATCH":
                return _json(
                    st.patch(rt, route.namespace, name, await _body(request), _patch_kind(request), True)
                )
            if request.method == "GET":
                return _json(st.get(rt, route.namespace, name))
        elif route.sub == "binding" and rt.id == "pods" and request.method == "POST":
            assert route.namespace is not None
            return _json(st.bind(route.namespace, name, await _body(request), agent), 201)
        elif route.sub == "resize" and rt.id == "pods" and request.method == "PATCH":
            assert route.namespace is not None
            return _json(st.resize(route.namespace, name, await _body(request), _patch_kind(request)))
        elif route.sub == "resize" and rt.id == "pods" and request.method == "GET":
            return _json(st.get(rt, route.namespace, name))
        elif route.sub == "eviction" and rt.id == "pods" and request.method == "POST":
            assert route.namespace is not None
            return _json(st.evict(route.namespace, name, await _body(request)), 201)
        raise ApiError(405, "MethodNotAllowed", f"{request.method} is not supported on {rt.plural}{sub}")

    async def watch(self, request: web.Request, route: _Route, agent: str) -> web.StreamResponse:
        st, q = self.state, request.query
        w = st.open_watch(
            route.rt, route.namespace, q.get("fieldSelector", ""), q.get("resourceVersion", ""), agent
        )
        bookmarks = q.get("allowWatchBookmarks") in ("1", "true")
        timeout = float(q.get("timeoutSeconds") or 1800)
        deadline = time.monotonic() + timeout
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        try:
            while not self.shutting_down.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    line = await asyncio.wait_for(w.queue.get(), min(left, st.bookmark_interval))
                except TimeoutError:
                    if bookmarks and w.queue.empty() and not w.silent:
                        await resp.write(_bookmark(route.rt, st.rv))
                    continue
                if w.drop or (w.drop_after is not None and w.sent >= w.drop_after):
                    # Cut the connection without the terminating chunk: the client sees a broken stream.
                    if request.transport is not None:
                        request.transport.abort()
                    return resp
                if line is None:
                    break
                await resp.write(line)
                w.sent += 1
            await resp.write_eof()
        except ConnectionResetError:
            pass
        finally:
            with contextlib.suppress(ValueError):
                st.watches.remove(w)
        return resp

    async def admin(self, request: web.Request) -> web.StreamResponse:
        st = self.state
        action = request.path[len(ADMIN_PREFIX) :].strip("/")
        if action == "stats":
            return _json(st.stats.as_dict())
        if action == "reset-stats" and request.method == "POST":
            st.stats = Stats()
            return _json({})
        if action == "objects" and request.method == "POST":
            body = await _body(request)
            rt = _NAMES.get(str(body.get("resource")))
            if rt is None:
                raise web.HTTPBadRequest(text=f"unknown resource {body.get('resource')!r}")
            for o in body.get("items") or ():
                st.create(rt, (o.get("metadata") or {}).get("namespace") if rt.namespaced else None, o)
            return _json({"resourceVersion": str(st.rv)})
        if action == "bound" and request.method == "GET":
            return _json({"bound": st.bound_pods, "pods": len(st.objects["pods"])})
        raise web.HTTPNotFound()


def _is_watch(request: web.Request, route: _Route) -> bool:
    return request.method == "GET" and route.name is None and request.query.get("watch") in ("1", "true")


def _request_label(request: web.Request, route: _Route) -> str:
    """``verb resource[/subresource]``, e.g. ``create pods/binding`` or ``watch nodes``."""
    if _is_watch(request, route):
        verb = "watch"
    elif request.method == "GET" and route.name is None:
        verb = "list"
    else:
        verb = _VERBS.get(request.method, request.method)
    return f"{verb} {route.rt.id}{'/' + route.sub if route.sub else ''}"


def _bookmark(rt: ResourceType, rv: int) -> bytes:
    obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": {"resourceVersion": str(rv)}}
    return json.dumps({"type": "BOOKMARK", "object": obj}, separators=(",", ":")).encode() + b"\n"


def _patch_kind(request: web.Request) -> str:
    ct = request.headers.get("Content-Type", "")
    if ct.startswith("application/strategic-merge-patch+json"):
        return "strategic"
    if ct.startswith("application/merge-patch+json"):
        return "merge"
    raise ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/strategic-merge-patch+json (got {ct!r})",
    )


async def _body(request: web.Request, optional: bool = False) -> Any:
    raw = await request.read()
    if not raw:
        if optional:
            return None
        raise ApiError(400, "BadRequest", "request body is required")
    try:
        return json.loads(raw)
    except ValueError as e:
        raise ApiError(400, "BadRequest", f"the body of the request is not valid JSON: {e}") from None


def _json(obj: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.Response(
        body=json.dumps(obj, separators=(",", ":")).encode(),
        status=status,
        content_type="application/json",
        headers=headers,
    )


def _discovery(path: str) -> Obj:
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"]}
    groups = sorted({r.group for r in RESOURCE_TYPES if r.group})
    if path == "/apis":
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                {
                    "name": g,
                    "versions": [{"groupVersion": f"{g}/v1", "version": "v1"}],
                    "preferredVersion": {"groupVersion": f"{g}/v1", "version": "v1"},
                }
                for g in groups
            ],
        }
    _, _, group, version = path.split("/")
    resources = [r for r in RESOURCE_TYPES if r.group == group and r.version == version]
    if not resources:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}",
        "resources": [{"name": r.plural, "namespaced": r.namespaced, "kind": r.kind} for r in resources],
    }


# --------------------------------------------------------------------------- the handle tests use
class ApiServerDouble:
    """The test double, served on 127.0.0.1 from a background thread.

    ``token``: required bearer token (a random one by default; ``None`` disables auth).
    ``history``: how many changes watches can resume from (older resourceVersions get 410).
    ``bookmark_interval``: seconds of watch silence before a BOOKMARK (real servers: about a minute).
    """

    def __init__(
        self,
        *,
        port: int = 0,
        token: str | None = "",
        history: int = 100_000,
        bookmark_interval: float = 1.0,
    ) -> None:
        self.token = secrets.token_hex(16) if token == "" else token
        self._state = _State(history, bookmark_interval)
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._app: _App | None = None
        self.url = ""

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> ApiServerDouble:
        started: Future[None] = Future()

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._serve(started))
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=main, name="apiserver-double", daemon=True)
        self._thread.start()
        started.result(timeout=10)
        return self

    async def _serve(self, started: Future[None]) -> None:
        try:
            for ns in DEFAULT_NAMESPACES:
                self._state.create(_BY_ID["namespaces"], None, {"metadata": {"name": ns}})
            self._app = _App(self._state, self.token)
            self._runner = web.AppRunner(
                self._app.build(),
                access_log=None,
                shutdown_timeout=0.5,
                # A request whose client went away is abandoned, as kube-apiserver cancels its context.
                handler_cancellation=True,
            )
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", self._port)
            await site.start()
            server = site._server
            assert server is not None
            port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
            self.url = f"http://127.0.0.1:{port}"
            started.set_result(None)
        except BaseException as e:
            started.set_exception(e)
            raise

    def stop(self) -> None:
        loop = self._loop
        if loop is None or self._thread is None:
            return

        async def shutdown() -> None:
            assert self._app is not None and self._runner is not None
            self._app.shutting_down.set()
            for w in list(self._state.watches):
                w.queue.put_nowait(None)
            await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout=10)
        self._loop = None

    def __enter__(self) -> ApiServerDouble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def kubeconfig(self, path: str | os.PathLike[str], user: str = "harmonic") -> Path:
        """Write a kubeconfig that points at this server (with its token) and return its path."""
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "double", "cluster": {"server": self.url}}],
            "users": [{"name": user, "user": {"token": self.token} if self.token else {}}],
            "contexts": [{"name": "double", "context": {"cluster": "double", "user": user}}],
            "current-context": "double",
        }
        p = Path(path)
        p.write_text(json.dumps(doc))
        return p

    # ------------------------------------------------------------------ run on the loop
    def _call(self, fn: Callable[[], T]) -> T:
        loop = self._loop
        if loop is None:
            raise RuntimeError("the API server double is not running")

        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), loop).result(timeout=30)

    # ------------------------------------------------------------------ objects
    def create(self, resource: str, obj: Mapping[str, Any]) -> Obj:
        rt = _resource(resource)
        ns = (obj.get("metadata") or {}).get("namespace") if rt.namespaced else None
        return copy.deepcopy(self._call(lambda: self._state.create(rt, ns, copy.deepcopy(dict(obj)))))

    def create_many(self, resource: str, objs: Iterable[Mapping[str, Any]]) -> None:
        rt = _resource(resource)
        items = [copy.deepcopy(dict(o)) for o in objs]

        def run() -> None:
            for o in items:
                self._state.create(
                    rt, (o.get("metadata") or {}).get("namespace") if rt.namespaced else None, o
                )

        self._call(run)

    def get(self, resource: str, name: str, namespace: str | None = None) -> Obj | None:
        rt = _resource(resource)
        key = _State.key(namespace if rt.namespaced else None, name)
        found = self._call(lambda: self._state.objects[rt.id].get(key))
        return copy.deepcopy(found) if found is not None else None

    def list(self, resource: str) -> builtins.list[Obj]:
        rt = _resource(resource)
        return copy.deepcopy(self._call(lambda: list(self._state.objects[rt.id].values())))

    def update(self, resource: str, obj: Mapping[str, Any]) -> Obj:
        rt = _resource(resource)
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") if rt.namespaced else None
        body = copy.deepcopy(dict(obj))
        body["metadata"] = {k: v for k, v in body["metadata"].items() if k != "resourceVersion"}
        return copy.deepcopy(self._call(lambda: self._state.update(rt, ns, meta["name"], body)))

    def set_status(
        self, resource: str, name: str, status: Mapping[str, Any], namespace: str | None = None
    ) -> Obj:
        rt = _resource(resource)
        body = {"metadata": {"name": name}, "status": copy.deepcopy(dict(status))}
        return copy.deepcopy(
            self._call(lambda: self._state.update(rt, namespace, name, body, status_only=True))
        )

    def delete(self, resource: str, name: str, namespace: str | None = None) -> None:
        rt = _resource(resource)
        self._call(lambda: self._state.delete(rt, namespace if rt.namespaced else None, name))

    # ------------------------------------------------------------------ faults
    def inject(self, **kwargs: Any) -> Fault:
        """Add a ``Fault`` (see its fields); returns it so a test can read ``hits``."""
        f = Fault(**kwargs)
        self._call(lambda: self._state.faults.append(f))
        return f

    def clear_faults(self) -> None:
        self._call(self._state.faults.clear)

    def drop_watches(self, resource: str | None = None, after_events: int = 0) -> int:
        """Cut open watch connections mid-stream (after ``after_events`` more events each)."""

        def run() -> int:
            n = 0
            for w in self._state.watches:
                if resource is None or w.rt is _resource(resource):
                    w.drop_after = w.sent + after_events
                    if after_events == 0:
                        w.drop = True
                        w.queue.put_nowait(b"")
                    n += 1
            return n

        return self._call(run)

    def expire_history(self, resource: str | None = None, watches: int = 0) -> None:
        """Compact the history: watches resuming from any past resourceVersion get 410. With
        ``resource`` and ``watches``, only the next ``watches`` watch requests on it get 410."""

        def run() -> None:
            if resource is not None and watches:
                self._state.force_410[_resource(resource).id] += watches
                return
            self._state.history.clear()
            self._state.compacted = self._state.rv

        self._call(run)

    def recreate(self, keep: Callable[[str, Obj], bool] = lambda resource, obj: False) -> None:
        """The server comes back with fresh state, as after its etcd was recreated or restored from an
        older backup: every open watch is cut, the resourceVersion counter starts again from the
        default namespaces, and only the objects ``keep(resource, obj)`` picks survive (re-created,
        with new resourceVersions but their uids). Faults, counters and recorded bindings stay."""

        def run() -> None:
            old = self._state
            for w in old.watches:
                w.drop = True
                w.queue.put_nowait(b"")
            fresh = _State(old.history_limit, old.bookmark_interval)
            fresh.faults, fresh.stats = old.faults, old.stats
            fresh.too_large_retry_after = old.too_large_retry_after
            for ns in DEFAULT_NAMESPACES:
                fresh.create(_BY_ID["namespaces"], None, {"metadata": {"name": ns}})
            for rt in RESOURCE_TYPES:
                for obj in old.objects[rt.id].values():
                    if rt.id == "namespaces" and obj["metadata"]["name"] in DEFAULT_NAMESPACES:
                        continue
                    if keep(rt.id, obj):
                        fresh._commit(rt, None, copy.deepcopy(obj))
            self._state = fresh
            assert self._app is not None
            self._app.state = fresh

        self._call(run)

    @property
    def too_large_retry_after(self) -> int:
        return self._state.too_large_retry_after

    @too_large_retry_after.setter
    def too_large_retry_after(self, seconds: int) -> None:
        def run() -> None:
            self._state.too_large_retry_after = seconds

        self._call(run)

    # ------------------------------------------------------------------ inspection
    @property
    def resource_version(self) -> int:
        return self._call(lambda: self._state.rv)

    def stats(self) -> Stats:
        return self._call(lambda: copy.deepcopy(self._state.stats))

    def reset_stats(self) -> None:
        def run() -> None:
            self._state.stats = Stats()

        self._call(run)

    def bindings(self) -> builtins.list[Binding]:
        return self._call(lambda: list(self._state.stats.bindings))

    def events(self, reason: str | None = None) -> builtins.list[Obj]:
        """Events written through either API, oldest first (events.k8s.io ``note`` or core ``message``)."""

        def run() -> builtins.list[Obj]:
            out = list(self._state.objects["events.k8s.io/events"].values()) + list(
                self._state.objects["events"].values()
            )
            return [copy.deepcopy(e) for e in out if reason is None or e.get("reason") == reason]

        evs = self._call(run)
        evs.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
        return evs

    def pod_placement(self) -> dict[str, str]:
        return {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["spec"]["nodeName"]
            for p in self.list("pods")
            if (p.get("spec") or {}).get("nodeName")
        }


def main(argv: list[str] | None = None) -> int:
    """Serve the double in the foreground; prints ``URL TOKEN`` on the first line of stdout."""
    ap = argparse.ArgumentParser(prog="python -m harmonic.testing.apiserver", description=main.__doc__)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--no-auth", action="store_true", help="accept requests without a bearer token")
    ap.add_argument("--bookmark-interval", type=float, default=5.0)
    args = ap.parse_args(argv)
    api = ApiServerDouble(
        port=args.port, token=None if args.no_auth else "", bookmark_interval=args.bookmark_interval
    )
    api.start()
    print(api.url, api.token or "", flush=True)
    try:
        for _ in sys.stdin:  # until the parent closes our stdin
            pass
    except KeyboardInterrupt:
        pass
    api.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
