"""Turn a live cluster's objects (``harmonic.cluster.listing``) into a scenario that replays it.

Nodes keep their labels, taints, cordon and capacity. Workloads (Deployments, standalone
ReplicaSets, StatefulSets, DaemonSets, unfinished Jobs) are written as the manifests a scenario
takes; their pods come from the simulator's controllers, and the ones running now are created bound
to the node they run on (the scenario's ``placement``), so each profile starts from today's placement
and schedules only what is pending. Bare pods keep ``spec.nodeName`` when bound. PodDisruptionBudgets,
PriorityClasses, Services, PodGroups and ElasticQuotas are copied. Server-set fields are stripped.

Nothing is dropped silently: every object or field left out is counted under a reason, and each
reason becomes one warning line in the file's header (and on stderr).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from harmonic.cluster.listing import Listing
from harmonic.sim.objects import SPEC_FIELDS, SYSTEM_PRIORITY_CLASSES
from harmonic.sim.plan import PLACEABLE_KINDS

Obj = dict[str, Any]

#: Metadata the API server sets (or that only makes sense for the stored object).
_SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    "ownerReferences",
    "finalizers",
    "generateName",
)
#: Annotations that are bookkeeping of a client or a controller, not part of the workload.
_BOOKKEEPING_ANNOTATIONS = (
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/revision",
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
)
#: Labels the Job controller adds to its pod template; the simulator's Job controller adds its own.
_JOB_LABELS = (
    "batch.kubernetes.io/controller-uid",
    "batch.kubernetes.io/job-name",
    "controller-uid",
    "job-name",
)


@dataclass
class Snapshot:
    scenario: Obj
    #: Reason -> count of what was left out, in the order first met.
    left_out: Counter[str] = field(default_factory=Counter)
    bound: int = 0
    pending: int = 0

    def warnings(self) -> list[str]:
        return [f"{count} {reason}" for reason, count in self.left_out.items()]


def _metadata(meta: Mapping[str, Any], keep_annotations: bool = True) -> Obj:
    out = {k: v for k, v in meta.items() if k not in _SERVER_METADATA}
    ann = {k: v for k, v in (out.get("annotations") or {}).items() if k not in _BOOKKEEPING_ANNOTATIONS}
    if ann and keep_annotations:
        out["annotations"] = ann
    else:
        out.pop("annotations", None)
    if not out.get("labels"):
        out.pop("labels", None)
    return out


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{obj['kind']}/{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _controller(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), None)


class _Converter:
    def __init__(self, listing: Listing) -> None:
        self.listing = listing
        self.left_out: Counter[str] = Counter()
        self.placement: dict[str, dict[int, str | None]] = defaultdict(dict)
        #: Keys of the workloads written, whose controllers make their pods.
        self.present: set[str] = set()
        self.bound = 0
        self.pending = 0
        self.replica_sets = {_key(o): o for o in listing.of("ReplicaSet")}
        #: PriorityClass name -> value: the cluster's and the built-in ones.
        self.classes: dict[str, int] = dict(SYSTEM_PRIORITY_CLASSES)
        for pc in listing.of("PriorityClass"):
            self.classes[str((pc.get("metadata") or {}).get("name"))] = int(pc.get("value") or 0)

    def drop(self, reason: str, n: int = 1) -> None:
        self.left_out[reason] += n

    # ------------------------------------------------------------------ pod specs
    def pod_spec(self, spec: Mapping[str, Any], what: str) -> Obj:
        """A pod (template) spec the simulator accepts: storage and claims are left out (no
        VolumeBinding, no DRA), schedulerName removed (every profile schedules every pod)."""
        out = {k: v for k, v in spec.items() if k not in ("schedulerName", "nodeName", "resourceClaims")}
        if spec.get("resourceClaims"):
            self.drop(f"{what}(s) lost their resourceClaims (dynamic resource allocation is not simulated)")
        cls = out.get("priorityClassName")
        if cls and cls not in self.classes:
            out.pop("priorityClassName")
            self.drop(f"{what}(s) name a PriorityClass that no longer exists: name removed, priority kept")
        elif cls and out.get("priority") not in (None, self.classes[cls]):
            # The class's value changed after the pod was admitted; scenarios admit pods as the API
            # server does now, so the replay gives it the class's current value.
            out.pop("priority")
            self.drop(f"{what}(s) replayed with their PriorityClass's current value, not the one admitted")
        volumes = out.get("volumes") or []
        kept = [v for v in volumes if not ({"persistentVolumeClaim", "ephemeral"} & set(v))]
        if len(kept) != len(volumes):
            self.drop(
                f"persistentVolumeClaim/ephemeral volume(s) of {what}s left out (persistent volumes are not "
                "simulated: no VolumeBinding)",
                len(volumes) - len(kept),
            )
            out["volumes"] = kept
        return out

    def template(self, template: Mapping[str, Any], kind: str, drop_labels: tuple[str, ...] = ()) -> Obj:
        meta = _metadata(template.get("metadata") or {})
        if drop_labels and meta.get("labels"):
            meta["labels"] = {k: v for k, v in meta["labels"].items() if k not in drop_labels}
        return {"metadata": meta, "spec": self.pod_spec(template.get("spec") or {}, f"{kind} pod template")}

    # ------------------------------------------------------------------ objects
    def node(self, node: Mapping[str, Any]) -> Obj:
        spec = {k: v for k, v in (node.get("spec") or {}).items() if k in ("unschedulable", "taints")}
        status = node.get("status") or {}
        conditions = [
            {"type": c["type"], "status": c["status"]}
            for c in status.get("conditions") or []
            if c.get("type") and c.get("status")
        ]
        kept_status: Obj = {k: status[k] for k in ("capacity", "allocatable") if status.get(k) is not None}
        if conditions:
            kept_status["conditions"] = conditions
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": _metadata(node.get("metadata") or {}, keep_annotations=False),
            "spec": spec,
            "status": kept_status,
        }

    def workload(self, obj: Mapping[str, Any]) -> Obj | None:
        kind = str(obj["kind"])
        spec: Obj = {}
        for k, v in (obj.get("spec") or {}).items():
            if k in SPEC_FIELDS[kind]:
                spec[k] = v
            else:
                self.drop(f"{kind} spec.{k} field(s) left out (the simulator cannot honour them)")
        drop_labels: tuple[str, ...] = ()
        if kind == "Job":
            status = obj.get("status") or {}
            finished = any(
                c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                for c in status.get("conditions") or []
            )
            if finished:
                self.drop("finished Job(s) left out (Complete or Failed: nothing left to run)")
                return None
            if not spec.get("manualSelector"):
                spec.pop("selector", None)  # generated; the simulator's Job controller makes its own
                drop_labels = _JOB_LABELS
            completions = spec.get("completions")
            if spec.get("completionMode", "NonIndexed") == "NonIndexed" and completions is not None:
                # Only the completions still owed are replayed; succeeded pods are gone.
                spec["completions"] = max(int(completions) - int(status.get("succeeded") or 0), 1)
        spec["template"] = self.template(spec.get("template") or {}, kind, drop_labels)
        meta = _metadata(obj.get("metadata") or {})
        if drop_labels and meta.get("labels"):
            meta["labels"] = {k: v for k, v in meta["labels"].items() if k not in drop_labels}
        return {"apiVersion": obj["apiVersion"], "kind": kind, "metadata": meta, "spec": spec}

    def owner_workload(self, pod: Mapping[str, Any]) -> str | None:
        """``Kind/namespace/name`` of the workload the simulator's controllers make this pod for, or
        None for a pod kept bare."""
        ref = _controller(pod)
        if ref is None:
            return None
        ns = (pod.get("metadata") or {}).get("namespace") or "default"
        key = f"{ref.get('kind')}/{ns}/{ref.get('name')}"
        if ref.get("kind") == "ReplicaSet":
            rs = self.replica_sets.get(key)
            parent = _controller(rs) if rs is not None else None
            if parent is not None and parent.get("kind") == "Deployment":
                key = f"Deployment/{ns}/{parent.get('name')}"
        return key if key in self.present else None

    def pod(self, pod: Mapping[str, Any]) -> Obj | None:
        """The bare Pod to write, or None when its workload makes it (its node then recorded)."""
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            self.drop("finished Pod(s) left out (Succeeded or Failed: they hold no resources)")
            return None
        if meta.get("deletionTimestamp"):
            self.drop("terminating Pod(s) left out (being deleted)")
            return None
        node = spec.get("nodeName") or None
        if node is None:
            self.pending += 1
        else:
            self.bound += 1
        workload = self.owner_workload(pod)
        if workload is not None:
            kind = workload.split("/", 1)[0]
            if kind in PLACEABLE_KINDS and node is not None:
                slots = self.placement[workload]
                index = len(slots)
                if kind == "StatefulSet":
                    labels = meta.get("labels") or {}
                    ordinal = (
                        labels.get("apps.kubernetes.io/pod-index")
                        or str(meta.get("name", "")).rsplit("-", 1)[-1]
                    )
                    index = int(ordinal) if str(ordinal).isdigit() else index
                slots[index] = str(node)
            return None
        ref = _controller(pod)
        if ref is not None:
            self.drop(
                f"Pod(s) owned by a {ref.get('kind')} the scenario does not model kept as bare pods "
                "(nothing recreates them)"
            )
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": _metadata(meta),
            "spec": {**self.pod_spec(spec, "Pod"), **({"nodeName": node} if node else {})},
        }


def _placement_lists(conv: _Converter, objects: list[Obj]) -> dict[str, list[str | None]]:
    """Each workload's nodes in the order its controller creates pods (a StatefulSet's from its first
    ordinal), cut to its replicas (the surplus of a rollout or a scale-down is counted as left out)."""
    out: dict[str, list[str | None]] = {}
    for obj in objects:
        key = _key(obj)
        slots = conv.placement.get(key)
        if not slots:
            continue
        spec = obj["spec"]
        if obj["kind"] == "StatefulSet":
            start = int((spec.get("ordinals") or {}).get("start", 0))
            size = int(spec.get("replicas", 1))
            nodes = [slots.get(start + i) for i in range(size)]
            surplus = sum(1 for i in slots if not start <= i < start + size)
        else:
            size = int(spec.get("parallelism", 1) if obj["kind"] == "Job" else spec.get("replicas", 1))
            ordered = [slots[i] for i in sorted(slots)]
            nodes, surplus = ordered[:size], max(len(ordered) - size, 0)
        if surplus:
            conv.drop(
                "running Pod(s) beyond their workload's replicas left out (a rollout or scale-down)", surplus
            )
        while nodes and nodes[-1] is None:
            nodes.pop()
        if nodes:
            out[key] = nodes
    return out


def build(listing: Listing, *, name: str, description: str, job_duration: str) -> Snapshot:
    """The scenario replaying ``listing``; ``job_duration``: how long each Job pod runs (a snapshot
    cannot know)."""
    conv = _Converter(listing)
    nodes = [conv.node(n) for n in listing.of("Node")]
    first: list[Obj] = []
    for pc in listing.of("PriorityClass"):
        meta = pc.get("metadata") or {}
        if meta.get("name") in SYSTEM_PRIORITY_CLASSES:
            conv.drop("built-in PriorityClass(es) not copied (the simulator has them built in)")
            continue
        first.append({k: v for k, v in pc.items() if k != "metadata"} | {"metadata": _metadata(meta)})
    for svc in listing.of("Service"):
        selector = (svc.get("spec") or {}).get("selector")
        if not selector:
            conv.drop("Service(s) without a selector left out (they select no pods to spread)")
            continue
        meta = _metadata(svc.get("metadata") or {})
        first.append(
            {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"selector": selector}}
        )
    for pdb in listing.of("PodDisruptionBudget"):
        first.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": _metadata(pdb.get("metadata") or {}),
                "spec": pdb.get("spec") or {},
            }
        )
    for kind in ("PodGroup", "ElasticQuota"):
        for o in listing.of(kind):
            first.append(
                {
                    "apiVersion": o["apiVersion"],
                    "kind": kind,
                    "metadata": _metadata(o.get("metadata") or {}),
                    "spec": o.get("spec") or {},
                }
            )
    workloads: list[Obj] = []
    jobs: list[Obj] = []
    for kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job"):
        for o in listing.of(kind):
            parent = _controller(o)
            if kind == "ReplicaSet" and parent is not None and parent.get("kind") == "Deployment":
                continue  # its Deployment's controller makes it
            if parent is not None:
                conv.drop(f"{kind}(s) owned by a {parent.get('kind')} copied as standalone {kind}s")
            w = conv.workload(o)
            if w is not None:
                (jobs if kind == "Job" else workloads).append(w)
    conv.present = {_key(w) for w in workloads + jobs}
    pods = [p for p in (conv.pod(p) for p in listing.of("Pod")) if p is not None]
    entries: list[Obj] = [
        {
            "type": "manifests",
            "objects": first + workloads + pods,
            **({"placement": p} if (p := _placement_lists(conv, workloads)) else {}),
        }
    ]
    if jobs:
        entries.append(
            {
                "type": "manifests",
                "duration": job_duration,
                "objects": jobs,
                **({"placement": p} if (p := _placement_lists(conv, jobs)) else {}),
            }
        )
    scenario: Obj = {
        "apiVersion": "harmonic.dev/v1alpha1",
        "kind": "Scenario",
        "name": name,
        "description": description,
        "cluster": {"nodes": nodes},
        "workloads": [e for e in entries if e["objects"]],
    }
    return Snapshot(scenario, conv.left_out, conv.bound, conv.pending)


def render(snap: Snapshot, header: list[str]) -> str:
    """The scenario as YAML under a comment header: ``header`` lines, then one warning per reason."""
    lines = [f"# {h}" for h in header]
    lines += [f"# warning: {w}" for w in snap.warnings()] or ["# nothing was left out"]
    # libyaml's emitter: the pure-Python one spends ~90% of a 5,000-pod snapshot's time here.
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    body = yaml.dump(snap.scenario, Dumper=dumper, sort_keys=False, default_flow_style=False)
    return "\n".join(lines) + "\n" + body
