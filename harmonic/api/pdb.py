"""The scheduler's view of a PodDisruptionBudget (policy/v1), compiled once from its manifest.

Only what preemption and eviction read: the namespace, the pod selector, and the status the
disruption controller maintains (``disruptionsAllowed``, ``disruptedPods``, healthy counts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harmonic.api.errors import ObjectError
from harmonic.api.pod import Pod
from harmonic.api.selectors import LabelSelector, label_selector


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    raw: Mapping[str, Any]
    name: str
    namespace: str
    selector: LabelSelector
    disruptions_allowed: int
    #: Pods whose eviction the API server accepted but the controller has not yet seen deleted.
    disrupted_pods: frozenset[str]
    desired_healthy: int
    current_healthy: int

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def covers(self, pod: Pod) -> bool:
        """Whether the Eviction API counts ``pod`` against this budget (policy/v1: an empty selector
        selects every pod of the namespace, a missing one none)."""
        return pod.namespace == self.namespace and self.selector.matches(pod.labels)

    def guards_against_preemption(self, pod: Pod) -> bool:
        """Whether preemption counts ``pod`` against this budget: as ``covers``, except that kube-scheduler
        lets a nil or empty selector match nothing, and a pod without labels match no budget."""
        if not pod.labels or self.selector.nothing or self.selector.everything:
            return False
        return pod.namespace == self.namespace and self.selector.matches(pod.labels)


def _int(obj: str, field: str, raw: Any) -> int:
    if raw is None:
        return 0
    if not isinstance(raw, int) or isinstance(raw, bool):
        raise ObjectError(obj, field, f"{raw!r} is not an integer")
    return raw


def parse_pdb(raw: Mapping[str, Any]) -> PodDisruptionBudget:
    """Compile a PodDisruptionBudget manifest; ``ObjectError`` names the object and field when malformed."""
    if not isinstance(raw, Mapping):
        raise ObjectError("PodDisruptionBudget", "", "must be an object")
    meta = raw.get("metadata") or {}
    if not isinstance(meta, Mapping):
        raise ObjectError("PodDisruptionBudget", "metadata", "must be an object")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ObjectError("PodDisruptionBudget", "metadata.name", "is required")
    namespace = str(meta.get("namespace") or "default")
    obj = f"PodDisruptionBudget {namespace}/{name}"
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    if not isinstance(spec, Mapping):
        raise ObjectError(obj, "spec", "must be an object")
    if not isinstance(status, Mapping):
        raise ObjectError(obj, "status", "must be an object")
    disrupted = status.get("disruptedPods") or {}
    if not isinstance(disrupted, Mapping):
        raise ObjectError(obj, "status.disruptedPods", "must be a map of pod names to times")
    return PodDisruptionBudget(
        raw=raw,
        name=name,
        namespace=namespace,
        selector=label_selector(obj, "spec.selector", spec.get("selector")),
        disruptions_allowed=_int(obj, "status.disruptionsAllowed", status.get("disruptionsAllowed")),
        disrupted_pods=frozenset(str(k) for k in disrupted),
        desired_healthy=_int(obj, "status.desiredHealthy", status.get("desiredHealthy")),
        current_healthy=_int(obj, "status.currentHealthy", status.get("currentHealthy")),
    )
