"""Pieces the descheduler plugins share: the pod filter they build, pod status readers, pod ordering."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from harmonic.api.pod import Pod
from harmonic.rescheduler.args import FilteredArgs, Namespaces, compile_selector
from harmonic.rescheduler.evictor import NO_EVICTION_ANNOTATION
from harmonic.rescheduler.framework import Handle
from harmonic.rescheduler.state import container_statuses

PodFilter = Callable[[Pod], bool]


def pod_filter(
    handle: Handle,
    namespaces: Namespaces | None = None,
    label_selector: Mapping[str, Any] | None = None,
    *,
    pre_eviction: bool = True,
) -> PodFilter:
    """podutil.NewOptions().WithFilter(Filter [+ PreEvictionFilter]).WithNamespaces(...).WithLabelSelector(...)."""
    ev = handle.evictor
    sel = compile_selector(dict(label_selector)) if label_selector is not None else None

    def f(p: Pod) -> bool:
        if namespaces is not None and not namespaces.admits(p.namespace):
            return False
        if sel is not None and not sel.matches(p.labels):
            return False
        return ev.filter(p) and (not pre_eviction or ev.pre_eviction_filter(p))

    return f


def filtered(handle: Handle, args: FilteredArgs) -> PodFilter:
    return pod_filter(handle, args.namespaces, args.label_selector)


def waiting_reasons(statuses: Iterable[Mapping[str, Any]]) -> list[str]:
    return [
        str((s.get("state") or {}).get("waiting", {}).get("reason", ""))
        for s in statuses
        if (s.get("state") or {}).get("waiting")
    ]


def terminated(statuses: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [s["state"]["terminated"] for s in statuses if (s.get("state") or {}).get("terminated")]


def restarts(pod: Pod, init: bool) -> int:
    n = sum(int(s.get("restartCount") or 0) for s in container_statuses(pod))
    if init:
        n += sum(int(s.get("restartCount") or 0) for s in container_statuses(pod, "initContainerStatuses"))
    return n


def qos_class(pod: Pod) -> str:
    """v1.PodQOSClass from the containers' requests and limits."""
    containers = list(pod.spec.get("containers") or ()) + list(pod.spec.get("initContainers") or ())
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            any_set = True
        for r in ("cpu", "memory"):
            if r not in lim or str(req.get(r, lim[r])) != str(lim[r]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


_QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}


def priority_low_to_high(pods: Iterable[Pod]) -> list[Pod]:
    """SortPodsBasedOnPriorityLowToHigh: no priority first, then by priority, then QoS (BestEffort
    first), then pods without the prefer-no-eviction annotation first."""

    def key(p: Pod) -> tuple[int, int, int, int]:
        has = "priority" in p.spec and p.spec.get("priority") is not None
        return (
            int(has),
            p.priority if has else 0,
            _QOS_RANK[qos_class(p)],
            int(NO_EVICTION_ANNOTATION in p.annotations),
        )

    return sorted(pods, key=key)
