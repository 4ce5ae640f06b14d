"""Kubernetes objects in a scenario: reading manifest files, checking what the simulator can honour,
and the API server's admission on pod templates (PriorityClass resolution, default tolerations).

Workload kinds: Pod, Deployment, ReplicaSet, StatefulSet, Job, DaemonSet. PriorityClass objects are
resolved into pods' ``spec.priority`` as the Priority admission plugin does. Services are kept for
the scheduler (default topology spreading reads their selectors). Namespace, ServiceAccount,
ConfigMap and Secret are accepted and counted but do not change placement in this build (see docs/simulator.md). Anything else, and any field of a workload the simulator cannot
honour (persistent volumes, Job pod failure policies, ...), is an error naming the file and path.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harmonic import safeyaml
from harmonic.api.batch import parse_elastic_quota, parse_pod_group
from harmonic.api.errors import ObjectError
from harmonic.api.pod import DEFAULT_SCHEDULER_NAME, parse_pod
from harmonic.api.selectors import label_selector
from harmonic.sim.errors import ScenarioError
from harmonic.sim.scenario import Distribution

Obj = dict[str, Any]

WORKLOAD_KINDS = {
    "Pod": "v1",
    "Deployment": "apps/v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Job": "batch/v1",
}
#: Accepted, counted, without effect on placement here.
INERT_KINDS = {
    "Namespace": "v1",
    "ServiceAccount": "v1",
    "ConfigMap": "v1",
    "Secret": "v1",
}
PRIORITY_CLASS_API = "scheduling.k8s.io/v1"
#: scheduler-plugins' CRDs: handed to the scheduler's ``"batch"`` store when created (harmonic.sim.batch).
BATCH_KINDS = {"PodGroup": "scheduling.x-k8s.io/v1alpha1", "ElasticQuota": "scheduling.x-k8s.io/v1alpha1"}

#: Spec fields each controller honours (or that have no bearing on placement).
SPEC_FIELDS: dict[str, frozenset[str]] = {
    "Deployment": frozenset(
        {
            "replicas",
            "selector",
            "template",
            "strategy",
            "minReadySeconds",
            "revisionHistoryLimit",
            "progressDeadlineSeconds",
            "paused",
        }
    ),
    "ReplicaSet": frozenset({"replicas", "selector", "template", "minReadySeconds"}),
    "StatefulSet": frozenset(
        {
            "replicas",
            "selector",
            "template",
            "serviceName",
            "podManagementPolicy",
            "updateStrategy",
            "revisionHistoryLimit",
            "minReadySeconds",
            "ordinals",
            "persistentVolumeClaimRetentionPolicy",
        }
    ),
    "DaemonSet": frozenset(
        {"selector", "template", "updateStrategy", "minReadySeconds", "revisionHistoryLimit"}
    ),
    "Job": frozenset(
        {
            "parallelism",
            "completions",
            "completionMode",
            "backoffLimit",
            "activeDeadlineSeconds",
            "ttlSecondsAfterFinished",
            "suspend",
            "template",
            "selector",
            "manualSelector",
            "podReplacementPolicy",
        }
    ),
}
_WHY_NOT: dict[str, str] = {
    "volumeClaimTemplates": "persistent volumes are not simulated (no VolumeBinding); remove it",
    "podFailurePolicy": "Job pods never fail by exit code in the simulator; remove it",
    "successPolicy": "only completions/parallelism decide when a simulated Job succeeds; remove it",
    "backoffLimitPerIndex": "per-index backoff is not simulated; use backoffLimit",
    "maxFailedIndexes": "per-index backoff is not simulated; use backoffLimit",
    "managedBy": "the simulator's own Job controller runs every Job; remove it",
}

#: Built-in PriorityClasses (scheduling/v1 SystemPriorityClasses).
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
#: DefaultTolerationSeconds admission plugin's default.
DEFAULT_TOLERATION_SECONDS = 300
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


@dataclass(frozen=True)
class WorkloadObject:
    """One workload object, checked, with admission applied to its pod template."""

    kind: str
    namespace: str
    name: str
    manifest: Obj
    #: Where it came from, for errors: ``web.yaml: document 2`` or ``scenario.yaml: workloads[1].objects[0]``.
    source: str
    #: How long each of its pods runs before succeeding (Pod, Job); None: until deleted.
    duration: Distribution | None = None
    #: The nodes its first pods are created bound to (a scenario's ``placement``); None: pending.
    placement: tuple[str | None, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.manifest.get("spec") or {}

    @property
    def template(self) -> Mapping[str, Any]:
        """The pod template (for a Pod, the Pod itself)."""
        if self.kind == "Pod":
            return self.manifest
        return self.spec.get("template") or {}


@dataclass
class PriorityClasses:
    values: dict[str, tuple[int, str]] = field(
        default_factory=lambda: {k: (v, "PreemptLowerPriority") for k, v in SYSTEM_PRIORITY_CLASSES.items()}
    )
    global_default: tuple[int, str] | None = None

    def add(self, obj: Mapping[str, Any], source: str) -> None:
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        if not isinstance(name, str) or not name:
            raise ScenarioError(source, "metadata.name", "is required")
        value = obj.get("value")
        if not isinstance(value, int) or isinstance(value, bool) or value > 1_000_000_000:
            raise ScenarioError(source, "value", "must be an integer <= 1000000000 for user classes")
        policy = str(obj.get("preemptionPolicy") or "PreemptLowerPriority")
        if policy not in ("PreemptLowerPriority", "Never"):
            raise ScenarioError(
                source, "preemptionPolicy", f"{policy!r} is not PreemptLowerPriority or Never"
            )
        if name in self.values:
            raise ScenarioError(source, "metadata.name", f"PriorityClass {name!r} is defined twice")
        self.values[name] = (value, policy)
        if obj.get("globalDefault"):
            if self.global_default is not None:
                raise ScenarioError(
                    source, "globalDefault", "only one PriorityClass may be the global default"
                )
            self.global_default = (value, policy)


# --------------------------------------------------------------------------- reading files
def read_documents(path: Path) -> Iterator[tuple[str, Any]]:
    """(source label, object) for every object in a YAML/JSON file; ``kind: List`` is flattened."""
    try:
        text = path.read_text()
    except OSError as e:
        raise ScenarioError(str(path), "", f"cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ScenarioError(str(path), "", f"cannot read: not UTF-8 text (byte {e.start})") from None
    try:
        docs = [safeyaml.load_json(text)] if path.suffix == ".json" else safeyaml.load_all(text)
    except (yaml.YAMLError, ValueError) as e:
        why = safeyaml.problem(e) if isinstance(e, yaml.YAMLError) else str(e)
        raise ScenarioError(
            str(path), "", f"not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {why}"
        ) from None
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        label = f"{path}: document {i + 1}" if len(docs) > 1 else str(path)
        if isinstance(doc, Mapping) and doc.get("kind") == "List":
            for j, item in enumerate(doc.get("items") or ()):
                yield f"{label}: items[{j}]", item
        else:
            yield label, doc


# --------------------------------------------------------------------------- checking
def _describe(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}"


def _err(source: str, obj: str, path: str, message: str) -> ScenarioError:
    return ScenarioError(f"{source} ({obj})", path, message)


def _int_field(spec: Mapping[str, Any], key: str, default: int | None, source: str, obj: str) -> int | None:
    v = spec.get(key, default)
    if v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise _err(source, obj, f"spec.{key}", f"{v!r} must be a non-negative integer")
    return v


def check_batch_object(raw: Mapping[str, Any], source: str, namespace: str) -> WorkloadObject:
    """A PodGroup or ElasticQuota, validated as the scheduler reads it (minMember >= 1, min <= max)."""
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str):
        raise ScenarioError(source, "metadata.name", "is required")
    ns = str(meta.get("namespace") or namespace)
    manifest: Obj = {**raw, "metadata": {**meta, "namespace": ns}}
    try:
        (parse_pod_group if raw["kind"] == "PodGroup" else parse_elastic_quota)(manifest)
    except ObjectError as e:
        raise ScenarioError(source, e.field, e.message) from None
    return WorkloadObject(str(raw["kind"]), ns, str(meta["name"]), manifest, source)


def check_object(
    raw: Any,
    source: str,
    namespace: str,
    priorities: PriorityClasses,
    duration: Distribution | None,
    inert: Counter[str],
) -> WorkloadObject | None:
    """Check one object. Returns the workload, or None for PriorityClass and inert kinds."""
    if not isinstance(raw, Mapping):
        raise ScenarioError(source, "", "expected a Kubernetes object")
    kind = raw.get("kind")
    api = raw.get("apiVersion")
    if not isinstance(kind, str):
        raise ScenarioError(source, "kind", f"must be a string, not {type(kind).__name__}")
    if kind == "PriorityClass" and api == PRIORITY_CLASS_API:
        return None  # collected beforehand by collect_priority_classes
    if kind in INERT_KINDS and api == INERT_KINDS[kind]:
        inert[str(kind)] += 1
        return None
    if kind in BATCH_KINDS and api == BATCH_KINDS[kind]:
        return check_batch_object(raw, source, namespace)
    if kind not in WORKLOAD_KINDS:
        supported = ", ".join([*WORKLOAD_KINDS, "PriorityClass", *INERT_KINDS, *BATCH_KINDS])
        raise ScenarioError(source, "kind", f"{kind!r} is not simulated; supported kinds: {supported}")
    if api != WORKLOAD_KINDS[kind]:
        raise ScenarioError(source, "apiVersion", f"{kind} must be {WORKLOAD_KINDS[kind]}, not {api!r}")
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping):
        raise ScenarioError(source, "metadata", "is required")
    name = meta.get("name")
    if not name and meta.get("generateName"):
        raise ScenarioError(source, "metadata.name", "is required (generateName is not supported here)")
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > 253:
        raise ScenarioError(source, "metadata.name", f"{name!r} is not a valid object name")
    ns = meta.get("namespace") or namespace
    if not isinstance(ns, str) or not _NAME.match(ns):
        raise ScenarioError(source, "metadata.namespace", f"{ns!r} is not a valid namespace")
    obj = _describe(kind, ns, name)
    if meta.get("ownerReferences"):
        raise _err(
            source,
            obj,
            "metadata.ownerReferences",
            "objects made by a controller are made by the simulator's controllers; give the owner "
            "(Deployment, ReplicaSet, ...) instead, or remove ownerReferences",
        )
    manifest: Obj = {**raw, "metadata": {**meta, "namespace": ns}}
    if kind == "Pod":
        spec = _admit_pod_spec(raw.get("spec"), source, obj, "spec", priorities)
        manifest["spec"] = spec
        manifest.pop("status", None)
        _parse_template(manifest, source, obj, "")
    else:
        cspec = raw.get("spec")
        if not isinstance(cspec, Mapping):
            raise _err(source, obj, "spec", "is required")
        for k in cspec:
            if k not in SPEC_FIELDS[kind]:
                why = _WHY_NOT.get(str(k), "the simulator cannot honour it")
                raise _err(source, obj, f"spec.{k}", f"not supported for {kind}: {why}")
        manifest["spec"] = _check_controller_spec(kind, cspec, source, obj, priorities)
        manifest.pop("status", None)
    if duration is not None and kind not in ("Pod", "Job"):
        raise _err(
            source,
            obj,
            "",
            f"duration: pods of a {kind} restart and never finish; use lifetime to delete the {kind}",
        )
    if kind == "Job" and duration is None and not (manifest["spec"].get("suspend")):
        raise _err(
            source,
            obj,
            "",
            "a Job's pods need a duration to finish: set duration on its workloads entry",
        )
    return WorkloadObject(kind, ns, name, manifest, source, duration)


def _check_controller_spec(
    kind: str, spec: Mapping[str, Any], source: str, obj: str, priorities: PriorityClasses
) -> Obj:
    out: Obj = dict(spec)
    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise _err(source, obj, "spec.template", "is required")
    tmeta = template.get("metadata") or {}
    if not isinstance(tmeta, Mapping):
        raise _err(source, obj, "spec.template.metadata", "must be an object")
    labels = tmeta.get("labels") or {}
    if not isinstance(labels, Mapping):
        raise _err(source, obj, "spec.template.metadata.labels", "must be a map of labels")
    tspec = _admit_pod_spec(template.get("spec"), source, obj, "spec.template.spec", priorities)
    if kind == "Job":
        policy = tspec.get("restartPolicy")
        if policy not in ("Never", "OnFailure"):
            raise _err(
                source,
                obj,
                "spec.template.spec.restartPolicy",
                f'Unsupported value: "{policy or "Always"}": supported values: "OnFailure", "Never"',
            )
    elif tspec.get("restartPolicy", "Always") != "Always":
        raise _err(
            source,
            obj,
            "spec.template.spec.restartPolicy",
            f'Unsupported value: "{tspec["restartPolicy"]}": supported values: "Always"',
        )
    out["template"] = {**template, "metadata": dict(tmeta), "spec": tspec}
    selector = spec.get("selector")
    if kind == "Job" and not spec.get("manualSelector"):
        if selector is not None:
            raise _err(
                source,
                obj,
                "spec.selector",
                "is generated by the Job controller unless manualSelector is true",
            )
    else:
        if selector is None:
            raise _err(source, obj, "spec.selector", "is required")
        try:
            sel = label_selector(obj, "spec.selector", selector)
        except ObjectError as e:
            raise _err(source, obj, e.field, e.message) from None
        if sel.everything or not sel.matches({str(k): str(v) for k, v in labels.items()}):
            raise _err(
                source, obj, "spec.template.metadata.labels", "`selector` does not match template `labels`"
            )
    for key, default in (("replicas", 1), ("parallelism", 1), ("backoffLimit", 6)):
        if key in SPEC_FIELDS[kind]:
            _int_field(spec, key, default, source, obj)
    if kind == "Job":
        completions = _int_field(spec, "completions", None, source, obj)
        mode = spec.get("completionMode", "NonIndexed")
        if mode not in ("NonIndexed", "Indexed"):
            raise _err(source, obj, "spec.completionMode", f"{mode!r} is not NonIndexed or Indexed")
        if mode == "Indexed" and completions is None:
            raise _err(source, obj, "spec.completions", "is required when completionMode is Indexed")
        deadline = spec.get("activeDeadlineSeconds")
        if deadline is not None and (not isinstance(deadline, int) or deadline <= 0):
            raise _err(source, obj, "spec.activeDeadlineSeconds", "must be a positive integer")
    if kind == "StatefulSet":
        policy = spec.get("podManagementPolicy", "OrderedReady")
        if policy not in ("OrderedReady", "Parallel"):
            raise _err(source, obj, "spec.podManagementPolicy", f"{policy!r} is not OrderedReady or Parallel")
        ordinals = spec.get("ordinals") or {}
        start = ordinals.get("start", 0) if isinstance(ordinals, Mapping) else None
        if not isinstance(start, int) or start < 0:
            raise _err(source, obj, "spec.ordinals.start", "must be a non-negative integer")
    _parse_template(
        {"metadata": {"name": "template", "namespace": "default", **tmeta}, "spec": tspec},
        source,
        obj,
        "spec.template.",
    )
    return out


def _admit_pod_spec(raw: Any, source: str, obj: str, path: str, priorities: PriorityClasses) -> Obj:
    """Checks the simulator needs, then Priority and DefaultTolerationSeconds admission."""
    if not isinstance(raw, Mapping):
        raise _err(source, obj, path, "is required")
    spec: Obj = dict(raw)
    for key in ("volumes", "tolerations"):  # read here, before the pod parser checks the rest
        if not isinstance(spec.get(key) or [], list):
            raise _err(source, obj, f"{path}.{key}", f"must be a list, not {type(spec[key]).__name__}")
    sched = spec.get("schedulerName")
    if sched not in (None, "", DEFAULT_SCHEDULER_NAME):
        raise _err(
            source,
            obj,
            f"{path}.schedulerName",
            f"{sched!r}: the simulator runs every pod under each profile in turn; leave schedulerName unset",
        )
    for i, vol in enumerate(spec.get("volumes") or ()):
        if isinstance(vol, Mapping):
            for kind in ("persistentVolumeClaim", "ephemeral"):
                if kind in vol:
                    raise _err(
                        source,
                        obj,
                        f"{path}.volumes[{i}].{kind}",
                        "persistent volumes are not simulated (no VolumeBinding); remove the volume",
                    )
    if spec.get("resourceClaims"):
        raise _err(source, obj, f"{path}.resourceClaims", "dynamic resource allocation is not simulated")
    cls = spec.get("priorityClassName")
    if cls:
        if not isinstance(cls, str) or cls not in priorities.values:
            raise _err(
                source, obj, f"{path}.priorityClassName", f"no PriorityClass with name {cls} was found"
            )
        value, policy = priorities.values[cls]
        if spec.get("priority") not in (None, value):
            raise _err(
                source, obj, f"{path}.priority", "must not be set, or must equal its PriorityClass's value"
            )
        spec["priority"] = value
        spec.setdefault("preemptionPolicy", policy)
    elif "priority" not in spec and priorities.global_default is not None:
        spec["priority"], policy = priorities.global_default
        spec.setdefault("preemptionPolicy", policy)
    spec["tolerations"] = with_default_tolerations(spec.get("tolerations"))
    return spec


def with_default_tolerations(raw: Any) -> list[Any]:
    """DefaultTolerationSeconds: tolerate not-ready and unreachable NoExecute for 300 s unless the pod
    already tolerates them."""
    tolerations = list(raw or ())
    for key in (NOT_READY_TAINT, UNREACHABLE_TAINT):
        covered = any(
            isinstance(t, Mapping)
            and t.get("key") in (key, None, "")
            and t.get("effect") in (None, "", "NoExecute")
            for t in tolerations
        )
        if not covered:
            tolerations.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )
    return tolerations


def _parse_template(manifest: Mapping[str, Any], source: str, obj: str, prefix: str) -> None:
    """Compile the pod the way the scheduler will, so a bad field fails now and names its path."""
    try:
        parse_pod(manifest)
    except ObjectError as e:
        raise _err(source, obj, f"{prefix}{e.field}", e.message) from None


def collect_priority_classes(objects: list[tuple[str, Any]], into: PriorityClasses) -> None:
    for source, raw in objects:
        if isinstance(raw, Mapping) and raw.get("kind") == "PriorityClass":
            if raw.get("apiVersion") != PRIORITY_CLASS_API:
                raise ScenarioError(source, "apiVersion", f"PriorityClass must be {PRIORITY_CLASS_API}")
            into.add(raw, source)
