"""The ``pods/resize`` subresource of the API-server test double, with the kubelet's answer.

As the API server of Kubernetes 1.33 (KEP-1287, in-place pod resize, beta): a PATCH of
``pods/<name>/resize`` may change only the CPU and memory ``requests``/``limits`` of containers; any
other change is 422 Invalid, as are a change of QoS class, adding or removing a request or limit, a
resize of a pod that is not running on a node or is terminating, and lowering a memory limit while the
container's memory ``resizePolicy`` is ``NotRequired`` (1.33 forbids it).

The kubelet's part happens at once: a pod whose new requests exceed its node's allocatable gets the
condition ``PodResizePending`` with reason ``Infeasible``; one whose new requests do not fit beside the
other pods on the node gets ``PodResizePending``/``Deferred``; otherwise the resize is actuated —
``status.containerStatuses[*].resources`` and ``allocatedResources`` follow the spec, a container whose
changed resource has ``resizePolicy: RestartContainer`` restarts (``restartCount`` + 1) — and no
resize condition remains. (The real kubelet shows ``PodResizeInProgress`` while it actuates; the
double actuates in the same request, so that condition is never seen.)
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


def _strip_resources(pod: Mapping[str, Any]) -> Obj:
    out = copy.deepcopy(dict(pod))
    for c in (out.get("spec") or {}).get("containers") or ():
        c.pop("resources", None)
    out.pop("status", None)
    out.pop("metadata", None)
    return out


def validate(old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    spec = old.get("spec") or {}
    if not spec.get("nodeName"):
        raise ResizeInvalid("spec: Forbidden: pod resize is only allowed for pods bound to a node")
    if (old.get("metadata") or {}).get("deletionTimestamp"):
        raise ResizeInvalid("metadata.deletionTimestamp: Forbidden: the pod is terminating")
    if _strip_resources(old) != _strip_resources(new):
        raise ResizeInvalid("spec: Forbidden: only cpu and memory resources of containers may be changed")
    old_c = {c.get("name"): c for c in spec.get("containers") or ()}
    for i, c in enumerate((new.get("spec") or {}).get("containers") or ()):
        before = (old_c.get(c.get("name")) or {}).get("resources") or {}
        after = c.get("resources") or {}
        for part in ("requests", "limits"):
            b, a = before.get(part) or {}, after.get(part) or {}
            others_a = {k: v for k, v in a.items() if k not in _RESOURCES}
            if others_a != {k: v for k, v in b.items() if k not in _RESOURCES}:
                raise ResizeInvalid(
                    f"spec.containers[{i}].resources.{part}: Forbidden: only cpu and memory may change"
                )
            if set(a) & set(_RESOURCES) != set(b) & set(_RESOURCES):
                raise ResizeInvalid(
                    f"spec.containers[{i}].resources.{part}: Forbidden: resource {part} may not be added or removed"
                )
        lim_b = (before.get("limits") or {}).get("memory")
        lim_a = (after.get("limits") or {}).get("memory")
        if lim_b is not None and lim_a is not None and _bytes(lim_a) < _bytes(lim_b):
            policy = next(
                (
                    p.get("restartPolicy")
                    for p in c.get("resizePolicy") or ()
                    if p.get("resourceName") == "memory"
                ),
                "NotRequired",
            )
            if policy != "RestartContainer":
                raise ResizeInvalid(
                    f"spec.containers[{i}].resources.limits.memory: Forbidden: memory limits cannot be "
                    "decreased unless resizePolicy is RestartContainer"
                )
    if _qos(old) != _qos(new):
        raise ResizeInvalid(
            f"spec: Invalid value: Pod QoS Class may not change as a result of resizing ({_qos(old)} -> {_qos(new)})"
        )


def _bytes(text: Any) -> float:
    from harmonic.api.quantity import parse_quantity, value

    return float(value(parse_quantity(text)))


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
