"""Topology spread constraints compiled for one pod (upstream ``common.go``).

A pod's ``spec.topologySpreadConstraints`` with its ``labelSelector`` compiled and ``matchLabelKeys``
folded in (the pod's own values for those keys ANDed onto the selector), ``minDomains`` defaulted to
1, ``nodeAffinityPolicy`` to Honor and ``nodeTaintsPolicy`` to Ignore. A pod without constraints gets
the plugin's default constraints, all with the selector deduced from the Services, ReplicationControllers,
ReplicaSets and StatefulSets that select it (``default_selector``); with no such selector it has none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from harmonic.api.errors import ObjectError
from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.api.selectors import IN, LabelSelector, Requirement, label_selector
from harmonic.api.taints import NO_EXECUTE, NO_SCHEDULE, tolerated
from harmonic.api.workloads import Workloads
from harmonic.framework.nodemasks import required_affinity_mask, untolerated_mask
from harmonic.framework.podcounts import PodCounts, PodMatch
from harmonic.framework.snapshot import Snapshot, extra_key

HONOR = "Honor"
IGNORE = "Ignore"
#: Taint effects a node inclusion policy of Honor respects (helper.DoNotScheduleTaintsFilterFunc).
DO_NOT_SCHEDULE_EFFECTS = (NO_SCHEDULE, NO_EXECUTE)
_CACHE = extra_key("PodTopologySpread", "constraints")


@dataclass(frozen=True, slots=True)
class Constraint:
    """One compiled constraint (upstream ``topologySpreadConstraint``)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    @property
    def honors_affinity(self) -> bool:
        return self.node_affinity_policy == HONOR

    @property
    def honors_taints(self) -> bool:
        return self.node_taints_policy == HONOR

    @property
    def counts_pods(self) -> bool:
        """countPodsMatchSelector counts nothing for an empty (match-all) or nil (match-none) selector."""
        return not self.selector.nothing and bool(self.selector.requirements)


@dataclass(frozen=True, slots=True)
class _Spec:
    """A constraint as written, before the pod's labels are applied."""

    action: str
    constraint: Constraint
    match_label_keys: tuple[str, ...]


def _int(obj: str, field: str, raw: Any) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool):
        raise ObjectError(obj, field, f"{raw!r} is not an integer")
    return raw


def _str(obj: str, field: str, raw: Any, default: str = "") -> str:
    if raw is None:
        return default
    if not isinstance(raw, str):
        raise ObjectError(obj, field, f"{raw!r} is not a string")
    return raw


def parse_specs(obj: str, field: str, raw: Any) -> tuple[_Spec, ...]:
    """Compile a ``topologySpreadConstraints`` list. Raises ``ObjectError`` naming the field."""
    if raw is None:
        return ()
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise ObjectError(obj, field, "must be a list of topology spread constraints")
    out = []
    for i, c in enumerate(raw):
        where = f"{field}[{i}]"
        if not isinstance(c, Mapping):
            raise ObjectError(obj, where, "must be a topology spread constraint")
        keys = c.get("matchLabelKeys")
        if keys is not None and (
            not isinstance(keys, Sequence)
            or isinstance(keys, str)
            or not all(isinstance(k, str) for k in keys)
        ):
            raise ObjectError(obj, f"{where}.matchLabelKeys", "must be a list of label keys")
        min_domains = c.get("minDomains")
        constraint = Constraint(
            max_skew=_int(obj, f"{where}.maxSkew", c.get("maxSkew")),
            topology_key=_str(obj, f"{where}.topologyKey", c.get("topologyKey")),
            selector=label_selector(obj, f"{where}.labelSelector", c.get("labelSelector")),
            min_domains=1 if min_domains is None else _int(obj, f"{where}.minDomains", min_domains),
            node_affinity_policy=_str(obj, f"{where}.nodeAffinityPolicy", c.get("nodeAffinityPolicy"), HONOR),
            node_taints_policy=_str(obj, f"{where}.nodeTaintsPolicy", c.get("nodeTaintsPolicy"), IGNORE),
        )
        action = _str(obj, f"{where}.whenUnsatisfiable", c.get("whenUnsatisfiable"))
        out.append(_Spec(action, constraint, tuple(keys or ())))
    return tuple(out)


def _with_label_keys(spec: _Spec, labels: Mapping[str, str]) -> Constraint:
    """mergeLabelSetWithSelector: the pod's values of ``matchLabelKeys`` ANDed onto the selector (a nil
    selector stays nil)."""
    c = spec.constraint
    sel = c.selector
    if sel.nothing or not spec.match_label_keys:
        return c
    extra = tuple(Requirement(k, IN, frozenset((labels[k],))) for k in spec.match_label_keys if k in labels)
    if not extra:
        return c
    return replace(c, selector=LabelSelector(extra + sel.requirements))


def pod_constraints(pod: Pod, action: str) -> tuple[Constraint, ...]:
    """The pod's own constraints for ``action`` (DoNotSchedule or ScheduleAnyway), compiled once per pod."""
    cache: dict[str, tuple[Constraint, ...]] | None = pod.extra.get(_CACHE)
    if cache is None:
        specs = parse_specs(
            f"Pod {pod.key}", "spec.topologySpreadConstraints", pod.spec.get("topologySpreadConstraints")
        )
        cache = {}
        for s in specs:
            cache.setdefault(s.action, ())
            cache[s.action] += (_with_label_keys(s, pod.labels),)
        pod.extra[_CACHE] = cache
    return cache.get(action, ())


def has_own_constraints(pod: Pod) -> bool:
    return bool(pod.spec.get("topologySpreadConstraints"))


def _set_requirements(label_set: Mapping[str, str]) -> tuple[Requirement, ...]:
    return tuple(Requirement(k, IN, frozenset((v,))) for k, v in sorted(label_set.items()))


_RC = ("", "v1", "ReplicationController")
_RS = ("apps", "v1", "ReplicaSet")
_SS = ("apps", "v1", "StatefulSet")


def _controller(pod: Pod) -> tuple[tuple[str, str, str], str] | None:
    """((group, version, kind), name) of the pod's controller owner reference; ``None`` if it has none or
    its apiVersion does not parse (metav1.GetControllerOfNoCopy, schema.ParseGroupVersion)."""
    refs = (pod.raw.get("metadata") or {}).get("ownerReferences") or ()
    for ref in refs:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            parts = str(ref.get("apiVersion") or "").split("/")
            if len(parts) > 2:
                return None
            group, version = (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])
            return (group, version, str(ref.get("kind") or "")), str(ref.get("name") or "")
    return None


def default_selector(pod: Pod, workloads: Workloads) -> LabelSelector:
    """helper.DefaultSelector: the union of the selectors of the Services selecting the pod, plus the
    selector of its controlling ReplicationController, ReplicaSet or StatefulSet."""
    label_set: dict[str, str] = {}
    for sel in workloads.service_selectors(pod.namespace):
        if all(pod.labels.get(k) == v for k, v in sel.items()):
            label_set.update(sel)
    reqs = _set_requirements(label_set)
    owner = _controller(pod)
    if owner is None:
        return LabelSelector(reqs)
    gvk, name = owner
    if gvk == _RC:
        rc = workloads.replication_controller_selector(pod.namespace, name)
        if rc is not None:
            label_set.update(rc)
            reqs = _set_requirements(label_set)
    elif gvk == _RS:
        rs = workloads.replica_set_selector(pod.namespace, name)
        if rs is not None and not rs.nothing:
            reqs += rs.requirements
    elif gvk == _SS:
        ss = workloads.stateful_set_selector(pod.namespace, name)
        if ss is not None and not ss.nothing:
            reqs += ss.requirements
    return LabelSelector(reqs)


def compile_defaults(manifests: Sequence[Mapping[str, Any]]) -> tuple[tuple[str, Constraint], ...]:
    """The plugin's default constraints as (action, constraint); their selectors are set per pod."""
    specs = parse_specs("PodTopologySpreadArgs", "defaultConstraints", list(manifests))
    return tuple((s.action, s.constraint) for s in specs)


def default_constraints(
    pod: Pod, defaults: Sequence[tuple[str, Constraint]], action: str, workloads: Workloads | None
) -> tuple[Constraint, ...]:
    """buildDefaultConstraints: the defaults for ``action`` with the pod's deduced selector; none when the
    pod's workloads give no selector (or there is no workloads service)."""
    chosen = [c for a, c in defaults if a == action]
    if not chosen or workloads is None:
        return ()
    selector = default_selector(pod, workloads)
    if not selector.requirements:
        return ()
    return tuple(replace(c, selector=selector) for c in chosen)


def node_labels_have_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


class NodeInclusion:
    """Per-pod masks for node inclusion policies over all slots, computed only when a constraint needs them."""

    def __init__(self, snap: Snapshot, pod: Pod) -> None:
        self._snap = snap
        self._pod = pod
        self._affinity: np.ndarray | None = None
        self._tolerated: np.ndarray | None = None

    @property
    def affinity(self) -> np.ndarray:
        if self._affinity is None:
            self._affinity = required_affinity_mask(self._snap, self._pod)
        return self._affinity

    @property
    def tolerated(self) -> np.ndarray:
        if self._tolerated is None:
            self._tolerated = ~untolerated_mask(self._snap, self._pod.tolerations, DO_NOT_SCHEDULE_EFFECTS)
        return self._tolerated

    def restrict(self, slots: np.ndarray, c: Constraint) -> np.ndarray:
        """The slots of ``slots`` that constraint ``c``'s inclusion policies keep."""
        keep = np.ones(len(slots), dtype=bool)
        pod = self._pod
        if c.honors_affinity and (pod.node_selector or pod.required_affinity is not None):
            keep &= self.affinity[slots]
        if c.honors_taints:
            keep &= self.tolerated[slots]
        return slots[keep] if not keep.all() else slots


def node_included(pod: Pod, node: Node, c: Constraint) -> bool:
    """matchNodeInclusionPolicies for one node (AddPod/RemovePod)."""
    if c.honors_affinity:
        if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
            return False
        if pod.required_affinity is not None and not pod.required_affinity.matches(node.labels, node.name):
            return False
    if c.honors_taints:
        for t in node.taints:
            if t.effect in DO_NOT_SCHEDULE_EFFECTS and not tolerated(pod.tolerations, t):
                return False
    return True


def per_slot_counts(snap: Snapshot, pod: Pod, c: Constraint) -> np.ndarray | None:
    """Matching pods per slot for ``c`` (pods in the pod's namespace, not terminating); ``None`` when the
    selector counts nothing."""
    if not c.counts_pods:
        return None
    return PodCounts.of(snap).counts(PodMatch(frozenset((pod.namespace,)), c.selector))
