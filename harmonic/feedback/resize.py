"""Carrying a right-sizing decision out: an in-place resize, or a published recommendation — never both.

A pod whose workload opts in (annotation ``harmonic.dev/resize: auto`` on the pod template) is resized
in place through the ``pods/resize`` subresource (beta in Kubernetes 1.33): the pod-level target is
split over its containers in proportion to their current requests, and each limit keeps its ratio to
the request (as VPA does), so the QoS class never changes. ``resizePolicy`` is honoured: a resource
whose policy is ``RestartContainer`` restarts the container when it changes (counted, and priced as a
restart by the caller), and a memory limit is never lowered while its policy is ``NotRequired`` (the
API server refuses that in 1.33). The kubelet answers with the pod conditions ``PodResizePending``
(reason ``Deferred``: not now; ``Infeasible``: never on this node, which asks the rescheduler for a
move) and ``PodResizeInProgress``.

Any other pod gets the recommendation as the annotation ``harmonic.dev/recommendation``: the
``status.recommendation`` of a ``VerticalPodAutoscaler`` (``containerRecommendations`` with
``containerName`` and ``target``), so tools that read VPA's shape read it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harmonic.api.quantity import milli_value, parse_quantity, value

RESIZE_ANNOTATION = "harmonic.dev/resize"
RECOMMENDATION_ANNOTATION = "harmonic.dev/recommendation"
#: Pod conditions of an in-place resize (Kubernetes 1.33).
RESIZE_PENDING = "PodResizePending"
RESIZE_IN_PROGRESS = "PodResizeInProgress"
INFEASIBLE = "Infeasible"
DEFERRED = "Deferred"

Obj = Mapping[str, Any]


def opted_in(pod: Obj) -> bool:
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    return str(ann.get(RESIZE_ANNOTATION, "")).strip().lower() == "auto"


def _milli(text: Any) -> float:
    return float(milli_value(parse_quantity(text)))


def _bytes(text: Any) -> float:
    return float(value(parse_quantity(text)))


def cpu_text(millis: float) -> str:
    return f"{max(1, round(millis))}m"


def memory_text(nbytes: float) -> str:
    return f"{max(1, round(nbytes / 2**20))}Mi"


def _policy(container: Obj, resource: str) -> str:
    for p in container.get("resizePolicy") or ():
        if p.get("resourceName") == resource:
            return str(p.get("restartPolicy") or "NotRequired")
    return "NotRequired"


@dataclass(frozen=True)
class ResizePlan:
    #: The body of the ``pods/resize`` strategic-merge patch (None: nothing to change).
    patch: dict[str, Any] | None
    #: Containers the resize restarts (``resizePolicy: RestartContainer`` on a changed resource).
    restarts: tuple[str, ...]
    #: Why part of the target was left out (a memory limit that may not be lowered).
    notes: tuple[str, ...]


def plan_resize(pod: Obj, cpu_millis: float, memory_bytes: float) -> ResizePlan:
    """The per-container resources that give ``pod`` the pod-level requests asked for."""
    containers = list((pod.get("spec") or {}).get("containers") or ())
    reqs = [(c.get("resources") or {}).get("requests") or {} for c in containers]
    cpu_now = [_milli(r.get("cpu", 0)) for r in reqs]
    mem_now = [_bytes(r.get("memory", 0)) for r in reqs]
    out: list[dict[str, Any]] = []
    restarts: list[str] = []
    notes: list[str] = []
    for i, c in enumerate(containers):
        res = c.get("resources") or {}
        limits = res.get("limits") or {}
        new_req: dict[str, str] = {}
        new_lim: dict[str, str] = {}
        changed: list[str] = []
        for name, total, now, parse, text in (
            ("cpu", cpu_millis, cpu_now, _milli, cpu_text),
            ("memory", memory_bytes, mem_now, _bytes, memory_text),
        ):
            if now[i] <= 0:
                continue  # a container without a request of it keeps none
            share = now[i] / sum(now)
            want = total * share
            if name in limits:
                ratio = parse(limits[name]) / now[i]
                if (
                    name == "memory"
                    and ratio * want < parse(limits[name])
                    and _policy(c, name) != "RestartContainer"
                ):
                    notes.append(f"{c.get('name')}: memory limit kept (not lowered without RestartContainer)")
                    continue
                new_lim[name] = text(ratio * want)
            if text(want) != text(now[i]):
                new_req[name] = text(want)
                changed.append(name)
        if not changed:
            continue
        entry: dict[str, Any] = {"name": c.get("name"), "resources": {"requests": new_req}}
        if new_lim:
            entry["resources"]["limits"] = new_lim
        out.append(entry)
        if any(_policy(c, n) == "RestartContainer" for n in changed):
            restarts.append(str(c.get("name")))
    patch = {"spec": {"containers": out}} if out else None
    return ResizePlan(patch, tuple(restarts), tuple(notes))


def with_resources(raw: Obj, patch: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` with a resize patch's container resources merged in by container name."""
    out: dict[str, Any] = copy.deepcopy(dict(raw))
    by_name = {c["name"]: c for c in patch["spec"]["containers"]}
    for c in out["spec"]["containers"]:
        change = by_name.get(c.get("name"))
        if change is None:
            continue
        res = c.setdefault("resources", {})
        for part, values in change["resources"].items():
            res[part] = {**(res.get(part) or {}), **values}
    return out


def recommendation(pod: Obj, cpu_millis: float, memory_bytes: float) -> dict[str, Any]:
    """VPA's ``status.recommendation`` for ``pod`` at these pod-level requests."""
    containers = list((pod.get("spec") or {}).get("containers") or ())
    reqs = [(c.get("resources") or {}).get("requests") or {} for c in containers]
    cpu_now = [_milli(r.get("cpu", 0)) for r in reqs]
    mem_now = [_bytes(r.get("memory", 0)) for r in reqs]
    recs = []
    for i, c in enumerate(containers):
        target: dict[str, str] = {}
        if sum(cpu_now) > 0:
            target["cpu"] = cpu_text(cpu_millis * cpu_now[i] / sum(cpu_now))
        if sum(mem_now) > 0:
            target["memory"] = memory_text(memory_bytes * mem_now[i] / sum(mem_now))
        recs.append({"containerName": c.get("name"), "target": target})
    return {"containerRecommendations": recs}


def recommendation_patch(pod: Obj, cpu_millis: float, memory_bytes: float) -> dict[str, Any]:
    """The merge patch that publishes the recommendation on the pod."""
    doc = json.dumps(recommendation(pod, cpu_millis, memory_bytes), sort_keys=True)
    return {"metadata": {"annotations": {RECOMMENDATION_ANNOTATION: doc}}}


def resize_state(pod: Obj) -> tuple[str, str]:
    """``(state, message)`` of a pod's resize from its conditions: ``Infeasible``/``Deferred``
    (``PodResizePending``), ``InProgress``, or ``""`` when none is pending."""
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("status") != "True":
            continue
        if c.get("type") == RESIZE_PENDING:
            return str(c.get("reason") or DEFERRED), str(c.get("message") or "")
        if c.get("type") == RESIZE_IN_PROGRESS:
            return "InProgress", str(c.get("message") or "")
    return "", ""


@dataclass(frozen=True)
class Outcome:
    """What became of one pod's decision: ``resized`` (actuated), ``Deferred``/``Infeasible``/
    ``InProgress`` (the kubelet's answer), ``recommended``, ``unchanged`` or ``error``."""

    pod: str
    state: str
    message: str = ""
    restarts: tuple[str, ...] = ()


class LiveActuator:
    """Carries decisions out on a live cluster through the API server."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport

    def apply(self, pod: Obj, cpu_millis: float, memory_bytes: float) -> Outcome:
        """Resize ``pod`` in place when its workload opted in, else publish the recommendation."""
        from harmonic.cluster.transport import (
            MERGE_PATCH,
            STRATEGIC_MERGE_PATCH,
            ApiStatusError,
            TransportError,
            object_path,
        )

        meta = pod.get("metadata") or {}
        ns, name = str(meta.get("namespace") or "default"), str(meta.get("name"))
        key = f"{ns}/{name}"
        path = object_path("v1", "pods", ns, name)
        try:
            if not opted_in(pod):
                body = recommendation_patch(pod, cpu_millis, memory_bytes)
                self.transport.request("PATCH", path, body=body, content_type=MERGE_PATCH)
                return Outcome(key, "recommended")
            plan = plan_resize(pod, cpu_millis, memory_bytes)
            if plan.patch is None:
                return Outcome(key, "unchanged", "; ".join(plan.notes))
            answer = self.transport.request(
                "PATCH", path + "/resize", body=plan.patch, content_type=STRATEGIC_MERGE_PATCH
            )
        except ApiStatusError as e:
            return Outcome(key, "error", f"HTTP {e.code}: {e.message or e}")
        except TransportError as e:
            return Outcome(key, "error", str(e))
        state, message = resize_state(answer if isinstance(answer, dict) else {})
        return Outcome(key, state or "resized", message, plan.restarts)
