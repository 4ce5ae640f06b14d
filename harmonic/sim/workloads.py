"""Workload controllers: Pods, Deployments, ReplicaSets, StatefulSets, Jobs and DaemonSets expanded
into pods the way kube-controller-manager's controllers do.

What each reproduces (names, labels, ownerReferences, and when pods are made or removed):

- ReplicaSet: pods ``<rs>-<5 random chars>`` (generateName alphabet), template labels, a controller
  ownerReference; keeps ``replicas`` pods, replacing lost ones; scale-down removes pods in
  ``getPodsToDelete`` order (unscheduled first, then those on the nodes with most replicas, newest first).
- Deployment: one ReplicaSet ``<deployment>-<pod-template-hash>`` whose pods carry the
  ``pod-template-hash`` label (the hash is FNV-1a over the template in canonical JSON, encoded with
  upstream's safe alphabet; upstream hashes Go's printed struct, so the value differs, not the form).
- StatefulSet: pods ``<sts>-<ordinal>`` with ``statefulset.kubernetes.io/pod-name``,
  ``apps.kubernetes.io/pod-index`` and ``controller-revision-hash`` labels, ``hostname``/``subdomain``;
  OrderedReady makes ordinal N+1 only once N runs, Parallel makes all; lost pods return with the same
  name; scale-down removes the highest ordinals.
- Job: ``parallelism`` pods at a time until ``completions`` succeed (work-queue mode when completions is
  unset), Indexed pods ``<job>-<index>-<random>`` with the completion-index label and annotation, the
  ``batch.kubernetes.io/controller-uid``/``job-name`` labels, pod failures (a pod lost before it
  succeeded) backed off 10 s x 2^(failures-1) up to 10 min, ``backoffLimit``, ``activeDeadlineSeconds``,
  ``suspend``.
- DaemonSet: one pod per node that should run it (NodeShouldRunDaemonPod: node name, node selector and
  required node affinity, NoSchedule/NoExecute taints), with the daemon tolerations and the required
  node affinity replaced by ``matchFields metadata.name In [<node>]`` (ReplaceDaemonSetPodNodeNameNodeAffinity),
  so the scheduler places it; pods leave nodes that no longer qualify.
- Pod: created once; nothing recreates it.

Random suffixes come from a generator seeded by the scenario seed and the controller, so every profile's
cluster copy gets the same names for the same sequence of controller actions.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from harmonic.api.node import Node
from harmonic.api.pod import parse_pod
from harmonic.api.taints import NO_EXECUTE, NO_SCHEDULE, Toleration, tolerated
from harmonic.sim.objects import WorkloadObject
from harmonic.sim.scenario import Distribution

Obj = dict[str, Any]
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
JOB_BACKOFF = 10.0
JOB_MAX_BACKOFF = 600.0

REASON_SUCCEEDED = "succeeded"
REASON_SCALED_DOWN = "scaled down"
REASON_OWNER_DELETED = "owner deleted"
REASON_JOB_FAILED = "job failed"
REASON_NOT_ELIGIBLE = "node no longer runs the DaemonSet"


class Host(Protocol):
    """What controllers need from the world they run in (the engine's per-profile cluster copy)."""

    seed: int

    def now(self) -> float: ...

    def create_pod(self, manifest: Obj, owner: Controller, run_for: float | None) -> str | None:
        """Create a pod; its key, or None if the name is taken."""
        ...

    def delete_pod(self, key: str, reason: str) -> None: ...

    def pod_node(self, key: str) -> str | None:
        """The node the pod is bound to, None while it is pending."""
        ...

    def pod_order(self, key: str) -> tuple[float, int]:
        """(bound at, creation sequence), for ReplicaSet scale-down ranking."""
        ...

    def after(self, delay: float, fn: Callable[[], None]) -> int: ...

    def nodes(self) -> Mapping[str, Node]: ...

    def publish(self, kind: str, namespace: str, name: str, template: Mapping[str, Any]) -> None:
        """Make a ReplicaSet or StatefulSet's selector (its template's labels) known to the scheduler."""
        ...

    def unpublish(self, kind: str, namespace: str, name: str) -> None: ...


def object_uid(key: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"harmonic-sim:{key}"))


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def template_hash(template: Mapping[str, Any]) -> str:
    """ComputeHash's shape: FNV-1a 32 of the template, its decimal digits mapped by SafeEncodeString."""
    h = fnv32a(json.dumps(template, sort_keys=True, separators=(",", ":")).encode())
    return "".join(_ALPHANUMS[ord(c) % len(_ALPHANUMS)] for c in str(h))


def owner_ref(kind: str, api_version: str, name: str, uid: str) -> Obj:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_from_template(
    template: Mapping[str, Any],
    namespace: str,
    name: str,
    owner: Obj | None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    spec_updates: Mapping[str, Any] | None = None,
) -> Obj:
    """GetPodFromTemplate: the template's labels, annotations and spec; the spec is shared, not copied
    (manifests are never mutated)."""
    tmeta = template.get("metadata") or {}
    meta: Obj = {"name": name, "namespace": namespace}
    lbl = {**(tmeta.get("labels") or {}), **(labels or {})}
    if lbl:
        meta["labels"] = lbl
    ann = {**(tmeta.get("annotations") or {}), **(annotations or {})}
    if ann:
        meta["annotations"] = ann
    if owner is not None:
        meta["ownerReferences"] = [owner]
    spec = template.get("spec") or {}
    if spec_updates:
        spec = {**spec, **spec_updates}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


class Controller:
    """Base: one object's controller in one world. Pods it owns are tracked by key."""

    kind = ""
    api_version = ""

    def __init__(self, host: Host, namespace: str, name: str, workload: str | None = None) -> None:
        self.host = host
        self.namespace = namespace
        self.name = name
        self.uid = object_uid(self.key)
        #: The top-level workload these pods belong to (a Deployment for its ReplicaSet's pods).
        self.workload = workload or self.key
        self.rng = random.Random(f"{host.seed}:{self.key}")
        self.stopped = False
        self._queued = False
        #: Nodes the first pods it creates are bound to: the pods already running when a snapshot
        #: of a live cluster was taken (None: that pod was pending). Consumed in creation order.
        self.placement: list[str | None] = []

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    @property
    def ref(self) -> Obj:
        return owner_ref(self.kind, self.api_version, self.name, self.uid)

    def placed(self, updates: Obj | None = None) -> Obj:
        """``updates`` plus ``nodeName`` if the next pod was already running on a node."""
        out = dict(updates or {})
        node = self.placement.pop(0) if self.placement else None
        if node is not None:
            out["nodeName"] = node
        return out

    def suffix(self) -> str:
        return "".join(self.rng.choice(_ALPHANUMS) for _ in range(5))

    def soon(self) -> None:
        """Reconcile after the current event, as a controller's work queue would."""
        if not self._queued and not self.stopped:
            self._queued = True
            self.host.after(0.0, self._run_queued)

    def _run_queued(self) -> None:
        self._queued = False
        if not self.stopped:
            self.reconcile()

    # ------------------------------------------------------------------ hooks
    def start(self) -> None:
        self.reconcile()

    def reconcile(self) -> None:
        return None

    def owned(self) -> Iterable[str]:
        return ()

    def stop(self) -> None:
        """The object was deleted: garbage-collect its pods."""
        self.stopped = True
        for key in list(self.owned()):
            self.host.delete_pod(key, REASON_OWNER_DELETED)

    def pod_bound(self, key: str) -> None:
        return None

    def pod_gone(self, key: str, reason: str) -> None:
        return None

    def scale(self, replicas: int) -> None:
        raise ValueError(f"{self.kind} cannot be scaled")

    def nodes_changed(self) -> None:
        return None

    def child_controllers(self) -> list[Controller]:
        return []


class BarePod(Controller):
    kind = "Pod"
    api_version = "v1"

    def __init__(self, host: Host, obj: WorkloadObject) -> None:
        super().__init__(host, obj.namespace, obj.name)
        self.obj = obj
        self.pod: str | None = None

    def start(self) -> None:
        run_for = self.obj.duration.sample(self.rng) if self.obj.duration is not None else None
        manifest = dict(self.obj.manifest)
        self.pod = self.host.create_pod(manifest, self, run_for)
        if self.pod is None:
            raise ValueError(f"pod {self.namespace}/{self.name} already exists")

    def owned(self) -> Iterable[str]:
        return [self.pod] if self.pod is not None else []

    def pod_gone(self, key: str, reason: str) -> None:
        self.pod = None


class ReplicaSetController(Controller):
    kind = "ReplicaSet"
    api_version = "apps/v1"

    def __init__(
        self,
        host: Host,
        namespace: str,
        name: str,
        replicas: int,
        template: Mapping[str, Any],
        workload: str | None = None,
    ) -> None:
        super().__init__(host, namespace, name, workload)
        self.replicas = replicas
        self.template = template
        self.pods: dict[str, None] = {}

    @classmethod
    def from_object(cls, host: Host, obj: WorkloadObject) -> ReplicaSetController:
        rs = cls(host, obj.namespace, obj.name, int(obj.spec.get("replicas", 1)), obj.spec["template"])
        rs.placement = list(obj.placement)
        return rs

    def owned(self) -> Iterable[str]:
        return self.pods

    def start(self) -> None:
        self.host.publish(self.kind, self.namespace, self.name, self.template)
        self.reconcile()

    def stop(self) -> None:
        super().stop()
        self.host.unpublish(self.kind, self.namespace, self.name)

    def reconcile(self) -> None:
        if self.stopped:
            return
        diff = self.replicas - len(self.pods)
        for _ in range(diff):
            self._create()
        if diff < 0:
            for key in self._victims(-diff):
                self.host.delete_pod(key, REASON_SCALED_DOWN)

    def _create(self) -> None:
        updates = self.placed()
        while True:
            manifest = pod_from_template(
                self.template, self.namespace, f"{self.name}-{self.suffix()}", self.ref, spec_updates=updates
            )
            key = self.host.create_pod(manifest, self, None)
            if key is not None:
                self.pods[key] = None
                return

    def _victims(self, n: int) -> list[str]:
        """getPodsToDelete with ActivePodsWithRanks: unscheduled first, then pods on nodes with more of
        this ReplicaSet's pods, then the most recently started, then the newest."""
        per_node: dict[str | None, int] = {}
        nodes = {k: self.host.pod_node(k) for k in self.pods}
        for node in nodes.values():
            if node is not None:
                per_node[node] = per_node.get(node, 0) + 1

        def rank(k: str) -> tuple[int, int, float, int]:
            node = nodes[k]
            bound_at, seq = self.host.pod_order(k)
            return (node is not None, -per_node.get(node, 0) if node else 0, -bound_at, -seq)

        return sorted(self.pods, key=rank)[:n]

    def pod_gone(self, key: str, reason: str) -> None:
        if key in self.pods:
            del self.pods[key]
            self.soon()

    def scale(self, replicas: int) -> None:
        self.replicas = replicas
        self.reconcile()


class DeploymentController(Controller):
    kind = "Deployment"
    api_version = "apps/v1"

    def __init__(self, host: Host, obj: WorkloadObject) -> None:
        super().__init__(host, obj.namespace, obj.name)
        template = obj.spec["template"]
        self.obj_template = template
        h = template_hash(template)
        tmeta = template.get("metadata") or {}
        labelled = {
            **template,
            "metadata": {**tmeta, "labels": {**(tmeta.get("labels") or {}), "pod-template-hash": h}},
        }
        self.rs = ReplicaSetController(
            host, obj.namespace, f"{obj.name}-{h}", int(obj.spec.get("replicas", 1)), labelled, self.key
        )
        self.rs.placement = list(obj.placement)

    def start(self) -> None:
        self.rs.start()

    def stop(self) -> None:
        self.stopped = True
        self.rs.stop()

    def scale(self, replicas: int) -> None:
        self.rs.scale(replicas)

    def child_controllers(self) -> list[Controller]:
        return [self.rs]


class StatefulSetController(Controller):
    kind = "StatefulSet"
    api_version = "apps/v1"

    def __init__(self, host: Host, obj: WorkloadObject) -> None:
        super().__init__(host, obj.namespace, obj.name)
        spec = obj.spec
        self.replicas = int(spec.get("replicas", 1))
        self.start_ordinal = int((spec.get("ordinals") or {}).get("start", 0))
        self.ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
        self.service = spec.get("serviceName") or ""
        self.template = spec["template"]
        self.revision = f"{obj.name}-{template_hash(self.template)}"
        self.pods: dict[int, str] = {}
        self.placement = list(obj.placement)

    def owned(self) -> Iterable[str]:
        return list(self.pods.values())

    def start(self) -> None:
        self.host.publish(self.kind, self.namespace, self.name, self.template)
        self.reconcile()

    def stop(self) -> None:
        super().stop()
        self.host.unpublish(self.kind, self.namespace, self.name)

    def reconcile(self) -> None:
        if self.stopped:
            return
        want = range(self.start_ordinal, self.start_ordinal + self.replicas)
        for ordinal in sorted(self.pods, reverse=True):
            if ordinal not in want:
                self.host.delete_pod(self.pods[ordinal], REASON_SCALED_DOWN)
        for ordinal in want:
            key = self.pods.get(ordinal)
            if key is None:
                key = self._create(ordinal)
                if key is None or self.ordered:
                    return
            elif self.ordered and self.host.pod_node(key) is None:
                return

    def _create(self, ordinal: int) -> str | None:
        name = f"{self.name}-{ordinal}"
        updates: Obj = {"hostname": name}
        if self.service:
            updates["subdomain"] = self.service
        # Ordinals are created in order the first time round, so the placement list lines up with them.
        updates = self.placed(updates)
        manifest = pod_from_template(
            self.template,
            self.namespace,
            name,
            self.ref,
            labels={
                "controller-revision-hash": self.revision,
                "statefulset.kubernetes.io/pod-name": name,
                "apps.kubernetes.io/pod-index": str(ordinal),
            },
            spec_updates=updates,
        )
        key = self.host.create_pod(manifest, self, None)
        if key is not None:
            self.pods[ordinal] = key
        return key

    def pod_bound(self, key: str) -> None:
        if self.ordered:
            self.soon()

    def pod_gone(self, key: str, reason: str) -> None:
        for ordinal, k in list(self.pods.items()):
            if k == key:
                del self.pods[ordinal]
        self.soon()

    def scale(self, replicas: int) -> None:
        self.replicas = replicas
        self.reconcile()


class JobController(Controller):
    kind = "Job"
    api_version = "batch/v1"

    def __init__(self, host: Host, obj: WorkloadObject) -> None:
        super().__init__(host, obj.namespace, obj.name)
        spec = obj.spec
        parallelism = spec.get("parallelism")
        completions = spec.get("completions")
        if parallelism is None and completions is None:
            parallelism, completions = 1, 1
        self.parallelism = 1 if parallelism is None else int(parallelism)
        self.completions: int | None = None if completions is None else int(completions)
        self.indexed = spec.get("completionMode") == "Indexed"
        self.backoff_limit = int(spec.get("backoffLimit", 6))
        self.deadline: float | None = spec.get("activeDeadlineSeconds")
        self.suspended = bool(spec.get("suspend"))
        self.duration: Distribution | None = obj.duration
        tmeta = spec["template"].get("metadata") or {}
        job_labels = {
            "batch.kubernetes.io/controller-uid": self.uid,
            "batch.kubernetes.io/job-name": self.name,
            "controller-uid": self.uid,
            "job-name": self.name,
        }
        self.template = {
            **spec["template"],
            "metadata": {**tmeta, "labels": {**(tmeta.get("labels") or {}), **job_labels}},
        }
        self.placement = list(obj.placement)
        self.active: dict[str, int | None] = {}
        self.succeeded = 0
        self.succeeded_indexes: set[int] = set()
        self.failed = 0
        self.last_failure = 0.0
        self.finished = ""  # "", "Complete" or "Failed"
        self._waiting_backoff = False

    def owned(self) -> Iterable[str]:
        return list(self.active)

    def start(self) -> None:
        if self.suspended:
            return
        if self.deadline:
            self.host.after(float(self.deadline), self._deadline_exceeded)
        self.reconcile()

    def _deadline_exceeded(self) -> None:
        if not self.finished and not self.stopped:
            self._fail()

    def _fail(self) -> None:
        self.finished = "Failed"
        for key in list(self.active):
            self.host.delete_pod(key, REASON_JOB_FAILED)

    def reconcile(self) -> None:
        if self.finished or self.stopped or self.suspended:
            return
        done = self.succeeded_indexes if self.indexed else None
        if self.completions is not None:
            count = len(done) if done is not None else self.succeeded
            if count >= self.completions:
                self.finished = "Complete"
                return
            want = min(self.parallelism, self.completions - count)
        else:
            if self.succeeded and not self.active:
                self.finished = "Complete"
                return
            want = 0 if self.succeeded else self.parallelism
        if self.failed > self.backoff_limit:
            self._fail()
            return
        need = want - len(self.active)
        if need <= 0:
            return
        if self.failed:
            ready_at = self.last_failure + min(JOB_BACKOFF * 2 ** (self.failed - 1), JOB_MAX_BACKOFF)
            wait = ready_at - self.host.now()
            if wait > 0:
                if not self._waiting_backoff:
                    self._waiting_backoff = True
                    self.host.after(wait, self._backoff_over)
                return
        for _ in range(need):
            self._create()

    def _backoff_over(self) -> None:
        self._waiting_backoff = False
        self.reconcile()

    def _create(self) -> None:
        index: int | None = None
        labels: dict[str, str] = {}
        annotations: dict[str, str] = {}
        updates: Obj = {}
        prefix = self.name
        if self.indexed:
            assert self.completions is not None
            busy = set(self.active.values()) | self.succeeded_indexes
            index = next(i for i in range(self.completions) if i not in busy)
            labels["batch.kubernetes.io/job-completion-index"] = str(index)
            annotations["batch.kubernetes.io/job-completion-index"] = str(index)
            updates["hostname"] = f"{self.name}-{index}"
            prefix = f"{self.name}-{index}"
        run_for = self.duration.sample(self.rng) if self.duration is not None else None
        updates = self.placed(updates)
        while True:
            manifest = pod_from_template(
                self.template,
                self.namespace,
                f"{prefix}-{self.suffix()}",
                self.ref,
                labels=labels,
                annotations=annotations,
                spec_updates=updates,
            )
            key = self.host.create_pod(manifest, self, run_for)
            if key is not None:
                self.active[key] = index
                return

    def pod_gone(self, key: str, reason: str) -> None:
        if key not in self.active:
            return
        index = self.active.pop(key)
        if reason == REASON_SUCCEEDED:
            self.succeeded += 1
            if index is not None:
                self.succeeded_indexes.add(index)
        elif reason != REASON_JOB_FAILED:
            self.failed += 1
            self.last_failure = self.host.now()
        self.soon()


class DaemonSetController(Controller):
    kind = "DaemonSet"
    api_version = "apps/v1"

    def __init__(self, host: Host, obj: WorkloadObject) -> None:
        super().__init__(host, obj.namespace, obj.name)
        template = obj.spec["template"]
        spec = dict(template.get("spec") or {})
        spec["tolerations"] = daemon_tolerations(spec.get("tolerations"), bool(spec.get("hostNetwork")))
        tmeta = template.get("metadata") or {}
        h = template_hash(template)
        labels = {
            **(tmeta.get("labels") or {}),
            "controller-revision-hash": h,
            "pod-template-generation": "1",
        }
        self.template: Obj = {**template, "metadata": {**tmeta, "labels": labels}, "spec": spec}
        probe = parse_pod({"metadata": {"name": "probe", "namespace": obj.namespace}, "spec": spec})
        self._node_name = str(spec.get("nodeName") or "")
        self._selector = probe.node_selector
        self._affinity = probe.required_affinity
        self._tolerations: tuple[Toleration, ...] = probe.tolerations
        self.pods: dict[str, str] = {}  # node -> pod key

    def owned(self) -> Iterable[str]:
        return list(self.pods.values())

    def should_run(self, node: Node) -> tuple[bool, bool]:
        """NodeShouldRunDaemonPod: (should run, should continue running)."""
        if self._node_name and self._node_name != node.name:
            return False, False
        if any(node.labels.get(k) != v for k, v in self._selector.items()):
            return False, False
        if self._affinity is not None and not self._affinity.matches(node.labels, node.name):
            return False, False
        untolerated = [
            t
            for t in node.taints
            if t.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerated(self._tolerations, t)
        ]
        if untolerated:
            return False, not any(t.effect == NO_EXECUTE for t in untolerated)
        return True, True

    def reconcile(self) -> None:
        if self.stopped:
            return
        nodes = self.host.nodes()
        for node_name, key in list(self.pods.items()):
            node = nodes.get(node_name)
            if node is None or not self.should_run(node)[1]:
                self.host.delete_pod(key, REASON_NOT_ELIGIBLE)
        for name in sorted(nodes):
            if name not in self.pods and self.should_run(nodes[name])[0]:
                self._create(name)

    def _create(self, node: str) -> None:
        affinity = dict(self.template["spec"].get("affinity") or {})
        node_aff = dict(affinity.get("nodeAffinity") or {})
        node_aff["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            ]
        }
        affinity["nodeAffinity"] = node_aff
        while True:
            manifest = pod_from_template(
                self.template,
                self.namespace,
                f"{self.name}-{self.suffix()}",
                self.ref,
                spec_updates={"affinity": affinity},
            )
            key = self.host.create_pod(manifest, self, None)
            if key is not None:
                self.pods[node] = key
                return

    def pod_gone(self, key: str, reason: str) -> None:
        for node, k in list(self.pods.items()):
            if k == key:
                del self.pods[node]
        self.soon()

    def nodes_changed(self) -> None:
        self.soon()


def daemon_tolerations(raw: Any, host_network: bool) -> list[Any]:
    """AddOrUpdateDaemonPodTolerations: the node-problem taints every daemon pod tolerates."""
    wanted = [
        ("node.kubernetes.io/not-ready", NO_EXECUTE),
        ("node.kubernetes.io/unreachable", NO_EXECUTE),
        ("node.kubernetes.io/disk-pressure", NO_SCHEDULE),
        ("node.kubernetes.io/memory-pressure", NO_SCHEDULE),
        ("node.kubernetes.io/pid-pressure", NO_SCHEDULE),
        ("node.kubernetes.io/unschedulable", NO_SCHEDULE),
    ]
    if host_network:
        wanted.append(("node.kubernetes.io/network-unavailable", NO_SCHEDULE))
    out = list(raw or ())
    for key, effect in wanted:
        wanted_t = {"key": key, "operator": "Exists", "effect": effect}
        # AddOrUpdateTolerationInPodSpec replaces a toleration equal in key, operator, value and effect.
        out = [
            t
            for t in out
            if not (
                isinstance(t, Mapping)
                and t.get("key") == key
                and t.get("operator") == "Exists"
                and not t.get("value")
                and t.get("effect") == effect
            )
        ]
        out.append(wanted_t)
    return out


def make_controller(host: Host, obj: WorkloadObject) -> Controller:
    if obj.kind == "Pod":
        return BarePod(host, obj)
    if obj.kind == "Deployment":
        return DeploymentController(host, obj)
    if obj.kind == "ReplicaSet":
        return ReplicaSetController.from_object(host, obj)
    if obj.kind == "StatefulSet":
        return StatefulSetController(host, obj)
    if obj.kind == "Job":
        return JobController(host, obj)
    if obj.kind == "DaemonSet":
        return DaemonSetController(host, obj)
    raise ValueError(f"no controller for {obj.kind}")
