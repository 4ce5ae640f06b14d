"""The ``pods/resize`` subresource of the API-server test double, with the kubelet's answer.

As kube-apiserver 1.36 answers it (KEP-1287, in-place pod resize; checked against the real server by
tests/e2e/test_feedback_resize.py): a PATCH of ``pods/<name>/resize`` keeps only the containers'
``resources`` and ``resizePolicy`` of the patched pod (any other change is dropped without an error);
it is 422 Invalid when a resource other than CPU and memory or a ``resizePolicy`` changes, when a CPU or
memory request or limit is removed, or when the QoS class would change. A pod not yet bound, one
terminating, and a memory limit lowered under ``resizePolicy: NotRequired`` are all accepted (1.33
refused the last; 1.34 allows it).

The kubelet's part happens at once, for a pod bound to a node: a pod whose new requests exceed its
node's allocatable gets the condition ``PodResizePending`` with reason ``Infeasible``; one whose new
requests do not fit beside the other pods on the node gets ``PodResizePending``/``Deferred``; otherwise
the resize is actuated — ``status.containerStatuses[*].resources`` and ``allocatedResources`` follow the
spec, a container whose changed resource has ``resizePolicy: RestartContainer`` restarts
(``restartCount`` + 1) — and no resize condition remains. (The real kubelet shows
``PodResizeInProgress`` while it actuates; the double actuates in the same request, so that condition
is never seen.) An unbound pod has no kubelet: its status is left alone.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.api.resources import CPU, MEMORY

Obj = dict[str, Any]
_RESOURCES = ("cpu", "memory")
_CONDITIONS = ("PodResizePending", "PodResizeInProgress")


class ResizeInvalid(ValueError):
    """A resize the API server refuses (422); the message names the field."""


def _qos(pod: Mapping[str, Any]) -> str:
    containers = (pod.get("spec") or {}).get("containers") or ()
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        any_set = any_set or bool(req) or bool(lim)
        for r in _RESOURCES:
            if r not in lim or str(req.get(r, lim[r])) != str(lim[r]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def resized(old: Mapping[str, Any], patched: Mapping[str, Any]) -> Obj:
    """What the resize subresource keeps of a patched pod: ``old`` with each container's ``resources``
    and ``resizePolicy`` taken from ``patched``; every other change in the patch is dropped silently
    (kube-apiserver 1.36 answers 200 to a resize that also changes an image or a label, and keeps
    neither). A request removed where a limit is set is defaulted back to the limit, as on create."""
    out = copy.deepcopy(dict(old))
    by_name = {c.get("name"): c for c in (patched.get("spec") or {}).get("containers") or ()}
    for c in (out.get("spec") or {}).get("containers") or ():
        src = by_name.get(c.get("name"))
        if src is None:
            continue
        for key in ("resources", "resizePolicy"):
            if src.get(key) is not None:
                c[key] = copy.deepcopy(src[key])
            else:
                c.pop(key, None)
        res = c.get("resources") or {}
        limits = res.get("limits") or {}
        if limits:  # defaulted as on create: a request left out is its limit
            res["requests"] = {**limits, **(res.get("requests") or {})}
    return out


def validate(old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    """Refuse what kube-apiserver 1.36 refuses (422), with its messages. It accepts a resize of a pod
    not yet bound or already terminating, lowering a memory limit whatever the resize policy, and
    adding a request or limit that keeps the QoS class."""
    old_c = {c.get("name"): c for c in (old.get("spec") or {}).get("containers") or ()}
    for i, c in enumerate((new.get("spec") or {}).get("containers") or ()):
        prior = old_c.get(c.get("name")) or {}
        before = prior.get("resources") or {}
        after = c.get("resources") or {}
        if (prior.get("resizePolicy") or []) != (c.get("resizePolicy") or []) or any(
            _others(before.get(part)) != _others(after.get(part)) for part in ("requests", "limits")
        ):
            raise ResizeInvalid("spec: Forbidden: only cpu and memory resources are mutable")
        for part in ("requests", "limits"):
            gone = set(before.get(part) or {}) - set(after.get(part) or {})
            if gone & set(_RESOURCES):
                raise ResizeInvalid(
                    f"spec.containers[{i}].resources.{part}: Forbidden: resource {part} cannot be removed"
                )
    if _qos(old) != _qos(new):
        raise ResizeInvalid(
            f'spec: Invalid value: "{_qos(old)}": Pod QOS Class may not change as a result of resizing'
        )


def _others(values: Mapping[str, Any] | None) -> dict[str, Any]:
    """The resources other than cpu and memory (which a resize may not change)."""
    return {k: v for k, v in (values or {}).items() if k not in _RESOURCES}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def actuate(
    new: Obj, old: Mapping[str, Any], node: Mapping[str, Any] | None, others: Iterable[Mapping[str, Any]]
) -> Obj:
    """The kubelet's answer to the resize: ``new`` with its status updated."""
    status = new.setdefault("status", {})
    conds = [c for c in status.get("conditions") or () if c.get("type") not in _CONDITIONS]
    want = parse_pod(new).requests
    verdict: tuple[str, str] | None = None
    if node is None:
        verdict = ("Infeasible", "Node not found")
    else:
        alloc = parse_node(node).allocatable
        used = {CPU: 0, MEMORY: 0}
        for p in others:
            r = parse_pod(p).requests
            used[CPU] += r.get(CPU, 0)
            used[MEMORY] += r.get(MEMORY, 0)
        for res, label in ((CPU, "cpu"), (MEMORY, "memory")):
            if want.get(res, 0) > alloc.get(res, 0):
                verdict = (
                    "Infeasible",
                    f"Node didn't have enough capacity: {label}, requested: {want.get(res, 0)}, capacity: {alloc.get(res, 0)}",
                )
                break
            if want.get(res, 0) + used[res] > alloc.get(res, 0):
                verdict = ("Deferred", f"Node didn't have enough resources available: {label}")
    if verdict is not None:
        conds.append(
            {
                "type": "PodResizePending",
                "status": "True",
                "reason": verdict[0],
                "message": verdict[1],
                "lastTransitionTime": _now(),
            }
        )
        status["conditions"] = conds
        return new
    status["conditions"] = conds
    old_c = {c.get("name"): c for c in (old.get("spec") or {}).get("containers") or ()}
    statuses = {s.get("name"): s for s in status.get("containerStatuses") or ()}
    out = []
    for c in (new.get("spec") or {}).get("containers") or ():
        name = c.get("name")
        wanted: dict[str, Any] = copy.deepcopy(c.get("resources") or {})
        s = dict(statuses.get(name) or {"name": name, "restartCount": 0, "ready": True})
        before = (old_c.get(name) or {}).get("resources") or {}
        changed = [r for r in _RESOURCES if _value(before, r) != _value(wanted, r)]
        policies = {p.get("resourceName"): p.get("restartPolicy") for p in c.get("resizePolicy") or ()}
        if any(policies.get(r) == "RestartContainer" for r in changed):
            s["restartCount"] = int(s.get("restartCount") or 0) + 1
        s["resources"] = wanted
        s["allocatedResources"] = dict(wanted.get("requests") or {})
        out.append(s)
    status["containerStatuses"] = out
    return new


def _value(res: Mapping[str, Any], r: str) -> tuple[Any, Any]:
    return ((res.get("requests") or {}).get(r), (res.get("limits") or {}).get(r))
