"""DefaultEvictor — the ``filter`` and ``preEvictionFilter`` extension points of descheduler's evictor.

Args (``DefaultEvictorArgs``, descheduler's defaults): ``nodeSelector`` (string selector of the nodes
``nodeFit`` considers), ``labelSelector``, ``namespaceLabelSelector``, ``priorityThreshold`` (``value``
or ``name``), ``nodeFit`` (false), ``minReplicas`` (0), ``minPodAge``, ``noEvictionPolicy``
(``Preferred``/``Mandatory``), ``podProtections`` (``defaultDisabled`` of PodsWithLocalStorage,
DaemonSetPods, SystemCriticalPods, FailedBarePods; ``extraEnabled`` of PodsWithPVC, PodsWithoutPDB,
PodsWithResourceClaims; ``config.PodsWithPVC.protectedStorageClasses``) and the deprecated booleans
(``evictLocalStoragePods``, ``evictDaemonSetPods``, ``evictSystemCriticalPods``, ``ignorePvcPods``,
``ignorePodsWithoutPDB``, ``evictFailedBarePods``), which may not be mixed with ``podProtections``.

``nodeFit`` differs from descheduler on purpose: instead of re-implementing a few predicates, the pod's
replacement must pass the scheduler profile's own PreFilter/Filter plugins on another ready node
matching ``nodeSelector``, so the rescheduler never evicts a pod the scheduler could not place.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from harmonic.api.pod import Pod
from harmonic.api.selectors import LabelSelector
from harmonic.framework.args import PluginArgs
from harmonic.rescheduler.args import check_selector, compile_selector, parse_duration
from harmonic.rescheduler.selectors import parse_label_selector
from harmonic.rescheduler.state import ClusterState, started_at, volumes

NAME = "DefaultEvictor"
EVICT_ANNOTATION = "descheduler.alpha.kubernetes.io/evict"
NO_EVICTION_ANNOTATION = "descheduler.alpha.kubernetes.io/prefer-no-eviction"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
SOURCE_ANNOTATION = "kubernetes.io/config.source"
SYSTEM_CRITICAL_PRIORITY = 2 * 1_000_000_000

DEFAULT_PROTECTIONS = ("PodsWithLocalStorage", "SystemCriticalPods", "FailedBarePods", "DaemonSetPods")
EXTRA_PROTECTIONS = ("PodsWithPVC", "PodsWithoutPDB", "PodsWithResourceClaims")


class PriorityThreshold(PluginArgs):
    value: int | None = None
    name: str = ""


class ProtectedStorageClass(PluginArgs):
    name: str


class PodsWithPVCConfig(PluginArgs):
    protected_storage_classes: tuple[ProtectedStorageClass, ...] = ()

    @field_validator("protected_storage_classes")
    @classmethod
    def _names(cls, v: tuple[ProtectedStorageClass, ...]) -> tuple[ProtectedStorageClass, ...]:
        for i, sc in enumerate(v):
            if not sc.name:
                raise ValueError(f"protectedStorageClasses[{i}] name cannot be empty")
        return v


class PodProtectionsConfig(PluginArgs):
    pods_with_pvc: PodsWithPVCConfig | None = Field(default=None, alias="PodsWithPVC")


class PodProtections(PluginArgs):
    extra_enabled: tuple[str, ...] = ()
    default_disabled: tuple[str, ...] = ()
    config: PodProtectionsConfig | None = None

    @model_validator(mode="after")
    def _valid(self) -> PodProtections:
        for p in self.extra_enabled:
            if p not in EXTRA_PROTECTIONS:
                raise ValueError(
                    f"extraEnabled: invalid pod protection policy {p!r}, valid: {EXTRA_PROTECTIONS}"
                )
        for p in self.default_disabled:
            if p not in DEFAULT_PROTECTIONS:
                raise ValueError(
                    f"defaultDisabled: invalid pod protection policy {p!r}, valid: {DEFAULT_PROTECTIONS}"
                )
        if len(set(self.extra_enabled)) != len(self.extra_enabled):
            raise ValueError("extraEnabled contains duplicate entries")
        if len(set(self.default_disabled)) != len(self.default_disabled):
            raise ValueError("defaultDisabled contains duplicate entries")
        return self


class DefaultEvictorArgs(PluginArgs):
    node_selector: str = ""
    label_selector: dict[str, Any] | None = None
    namespace_label_selector: dict[str, Any] | None = None
    priority_threshold: PriorityThreshold | None = None
    node_fit: bool = False
    min_replicas: int = Field(default=0, ge=0)
    min_pod_age: str | None = None
    no_eviction_policy: Literal["", "Preferred", "Mandatory"] = ""
    pod_protections: PodProtections = PodProtections()
    evict_local_storage_pods: bool = False
    evict_daemon_set_pods: bool = False
    evict_system_critical_pods: bool = False
    ignore_pvc_pods: bool = False
    # descheduler spells it ``ignorePodsWithoutPDB``, not the generated ``ignorePodsWithoutPdb``.
    ignore_pods_without_pdb: bool = Field(default=False, alias="ignorePodsWithoutPDB")
    evict_failed_bare_pods: bool = False

    @field_validator("label_selector", "namespace_label_selector")
    @classmethod
    def _selector(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        return check_selector(v)

    @field_validator("node_selector")
    @classmethod
    def _node_selector(cls, v: str) -> str:
        parse_label_selector(NAME, "nodeSelector", v)
        return v

    @field_validator("min_pod_age")
    @classmethod
    def _age(cls, v: str | None) -> str | None:
        if v is not None:
            parse_duration(v)
        return v

    @model_validator(mode="after")
    def _valid(self) -> DefaultEvictorArgs:
        pt = self.priority_threshold
        if pt is not None and pt.value is not None and pt.name:
            raise ValueError("priorityThreshold: only one of value and name can be set")
        deprecated = (
            self.evict_local_storage_pods
            or self.evict_daemon_set_pods
            or self.evict_system_critical_pods
            or self.ignore_pvc_pods
            or self.ignore_pods_without_pdb
            or self.evict_failed_bare_pods
        )
        if deprecated and (self.pod_protections.extra_enabled or self.pod_protections.default_disabled):
            raise ValueError(
                "cannot use deprecated fields alongside podProtections.extraEnabled or podProtections.defaultDisabled"
            )
        return self

    def protections(self) -> set[str]:
        """getEffectivePodProtections: podProtections when set, else the deprecated booleans."""
        pp = self.pod_protections
        if pp.extra_enabled or pp.default_disabled:
            return {p for p in DEFAULT_PROTECTIONS if p not in pp.default_disabled} | set(pp.extra_enabled)
        out = set()
        if not self.evict_local_storage_pods:
            out.add("PodsWithLocalStorage")
        if not self.evict_daemon_set_pods:
            out.add("DaemonSetPods")
        if not self.evict_system_critical_pods:
            out.add("SystemCriticalPods")
        if not self.evict_failed_bare_pods:
            out.add("FailedBarePods")
        if self.ignore_pvc_pods:
            out.add("PodsWithPVC")
        if self.ignore_pods_without_pdb:
            out.add("PodsWithoutPDB")
        return out


Constraint = Callable[[Pod], str | None]


def is_static(pod: Pod) -> bool:
    src = pod.annotations.get(SOURCE_ANNOTATION)
    return src is not None and src != "api"


def has_local_storage(pod: Pod) -> bool:
    return any("hostPath" in v or "emptyDir" in v for v in volumes(pod))


def pvc_claims(pod: Pod) -> list[str]:
    return [
        str(v["persistentVolumeClaim"].get("claimName", ""))
        for v in volumes(pod)
        if v.get("persistentVolumeClaim")
    ]


class DefaultEvictor:
    """``filter(pod)`` and ``pre_eviction_filter(pod)`` over one cluster state.

    ``fits_elsewhere(pod, node_names)`` answers nodeFit; the runner wires it to the scheduler's plugins.
    """

    def __init__(
        self,
        args: DefaultEvictorArgs,
        state: ClusterState,
        fits_elsewhere: Callable[[Pod, list[str]], bool] | None = None,
    ) -> None:
        self.args = args
        self.state = state
        self.fits_elsewhere = fits_elsewhere
        self.constraints: list[Constraint] = []
        self._node_selector = parse_label_selector(NAME, "nodeSelector", args.node_selector)
        self._ns_selector: LabelSelector | None = None
        ns = args.namespace_label_selector
        if ns and (ns.get("matchLabels") or ns.get("matchExpressions")):
            self._ns_selector = compile_selector(ns)
        self._build()

    # ------------------------------------------------------------------ constraints
    def _build(self) -> None:
        a, add = self.args, self.constraints.append
        prot = a.protections()
        if "SystemCriticalPods" in prot:
            add(
                lambda p: (
                    "pod has system critical priority" if p.priority >= SYSTEM_CRITICAL_PRIORITY else None
                )
            )
            threshold = self._threshold()
            if threshold is not None:
                add(
                    lambda p: (
                        "pod has higher priority than the priority threshold"
                        if "priority" in p.spec and p.priority >= threshold
                        else None
                    )
                )
        if "FailedBarePods" in prot:
            add(lambda p: "pod does not have any ownerRefs" if not p.owners else None)
        else:
            add(
                lambda p: (
                    "pod does not have any ownerRefs and is not failed"
                    if not p.owners and p.phase != "Failed"
                    else None
                )
            )
        if "PodsWithLocalStorage" in prot:
            add(lambda p: "pod has local storage" if has_local_storage(p) else None)
        if "DaemonSetPods" in prot:
            add(
                lambda p: (
                    "daemonset pods are protected" if any(o.kind == "DaemonSet" for o in p.owners) else None
                )
            )
        if "PodsWithPVC" in prot:
            add(self._pvc_constraint())
        if "PodsWithoutPDB" in prot:
            add(
                lambda p: (
                    None if any(b.covers(p) for b in self.state.pdbs) else "pod has no PodDisruptionBudget"
                )
            )
        if "PodsWithResourceClaims" in prot:
            add(lambda p: "pod has ResourceClaims" if p.spec.get("resourceClaims") else None)
        if a.label_selector is not None:
            sel = compile_selector(a.label_selector)
            if not sel.everything:
                add(lambda p: None if sel.matches(p.labels) else "pod labels do not match the labelSelector")
        if a.min_replicas > 1:
            owners = Counter(o.uid for p in self.state.pods for o in p.owners)
            need = a.min_replicas

            def min_replicas(p: Pod) -> str | None:
                if len(p.owners) != 1:
                    return None
                n = owners[p.owners[0].uid]
                return f"owner has {n} replicas, less than minReplicas {need}" if n < need else None

            add(min_replicas)
        if a.min_pod_age is not None:
            age = parse_duration(a.min_pod_age)

            def old_enough(p: Pod) -> str | None:
                start = started_at(p)
                if start is None or self.state.now - start < age:
                    return f"pod is younger than minPodAge {a.min_pod_age}"
                return None

            add(old_enough)

    def _threshold(self) -> int | None:
        pt = self.args.priority_threshold
        if pt is None:
            return None
        if pt.value is not None:
            return pt.value
        if pt.name:
            if pt.name not in self.state.priority_classes:
                raise ValueError(
                    f"{NAME}: priorityThreshold.name: no PriorityClass {pt.name!r} in the cluster"
                )
            return self.state.priority_classes[pt.name]
        return None

    def _pvc_constraint(self) -> Constraint:
        cfg = self.args.pod_protections.config
        protected = {
            sc.name
            for sc in (cfg.pods_with_pvc.protected_storage_classes if cfg and cfg.pods_with_pvc else ())
        }
        if not protected:
            return lambda p: "pod with PVC is protected" if pvc_claims(p) else None

        def by_class(p: Pod) -> str | None:
            for claim in pvc_claims(p):
                sc = self.state.claim_classes.get(f"{p.namespace}/{claim}")
                if not sc:
                    return f"cannot resolve the storage class of claim {claim}"
                if sc in protected:
                    return f"pod uses protected storage class {sc}"
            return None

        return by_class

    # ------------------------------------------------------------------ extension points
    def why_not(self, pod: Pod) -> list[str]:
        """Filter's reasons for refusing ``pod`` (empty: evictable)."""
        if EVICT_ANNOTATION in pod.annotations:
            return []
        if self.args.no_eviction_policy == "Mandatory" and NO_EVICTION_ANNOTATION in pod.annotations:
            return ["pod has the no-eviction annotation"]
        out = []
        if MIRROR_ANNOTATION in pod.annotations:
            out.append("pod is a mirror pod")
        if is_static(pod):
            out.append("pod is a static pod")
        if pod.deleting:
            out.append("pod is terminating")
        for c in self.constraints:
            r = c(pod)
            if r:
                out.append(r)
        return out

    def filter(self, pod: Pod) -> bool:
        return not self.why_not(pod)

    def pre_eviction_filter(self, pod: Pod) -> bool:
        if self.args.node_fit:
            others = [n.name for n in self.ready_nodes() if n.name != pod.node_name]
            if self.fits_elsewhere is None or not self.fits_elsewhere(pod, others):
                return False
        if self._ns_selector is None:
            return True
        return self._ns_selector.matches(self.state.namespaces.get(pod.namespace, {})) and (
            pod.namespace in self.state.namespaces
        )

    def ready_nodes(self) -> list[Any]:
        return [n for n in self.state.nodes if is_ready(n.raw) and self._node_selector.matches(n.labels)]


def is_ready(raw: Any) -> bool:
    for c in (raw.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready" and c.get("status") != "True":
            return False
    return True
