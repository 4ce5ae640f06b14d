"""An in-memory cluster: the adapter tests, benchmarks and the simulator run the scheduler against.

It holds nodes and pods as manifests, applies API-server defaulting on create, binds by setting
``spec.nodeName``, records Events and pod conditions as kube-scheduler writes them, and tells
subscribers (schedulers) about every change. Objects are treated as immutable: changes replace them.

PodDisruptionBudgets are held too: ``evict`` behaves as the Eviction API does with them, and
``list_pdbs`` is the scheduler's ``"pdbs"`` service. There is no disruption controller: a budget's
status changes only through evictions (which use it up) and ``update_pdb``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harmonic.api.batch import SERVICE_NAME as BATCH_SERVICE
from harmonic.api.batch import BatchObjects
from harmonic.api.pdb import PodDisruptionBudget, parse_pdb
from harmonic.api.pod import Pod, parse_pod
from harmonic.api.workloads import SERVICE_NAME, WorkloadIndex
from harmonic.cluster.defaults import default_node, default_pod
from harmonic.cluster.services import ManifestStore, NamespaceLabels
from harmonic.cluster.storage import InMemoryStorage
from harmonic.framework.services import NAMESPACES, PDBS
from harmonic.framework.status import Code, Status
from harmonic.framework.volumes import VOLUMES_SERVICE
from harmonic.scheduler.client import scheduled_note, truncate_event_message

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]
Listener = Callable[[Obj | None, Obj | None], None]


@dataclass(frozen=True, slots=True)
class Event:
    """A core/v1 Event as kube-scheduler records it."""

    type: str  # Normal | Warning
    reason: str  # Scheduled | FailedScheduling | Preempted ...
    message: str
    namespace: str
    name: str


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


class InMemoryCluster:
    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self.nodes: dict[str, Obj] = {}
        self.pods: dict[str, Obj] = {}
        self.events: list[Event] = []
        self._node_listeners: list[Listener] = []
        self._pod_listeners: list[Listener] = []
        self._uids = itertools.count(1)
        self._clock = clock or (lambda: 0.0)
        #: Bind calls refused by a test hook: node -> reason (to exercise binding failures).
        self.refuse_binding: dict[str, str] = {}
        self.binds = 0
        #: PodDisruptionBudgets by namespace/name: (manifest, compiled view).
        self.pdbs: dict[str, tuple[Obj, PodDisruptionBudget]] = {}
        #: Selectors of Services, ReplicationControllers, ReplicaSets and StatefulSets.
        self.workloads = WorkloadIndex()
        #: PVCs, PVs, StorageClasses and CSI objects: the ``"volumes"`` service (``cluster/storage.py``).
        self.storage = InMemoryStorage()
        #: PodGroups and ElasticQuotas (scheduling.x-k8s.io): the ``"batch"`` service.
        self.batch = BatchObjects(self._clock)
        #: Namespaces, for their labels (the ``"namespaces"`` service: namespaceSelector).
        self.namespaces = ManifestStore()

    # ------------------------------------------------------------------ subscriptions
    def subscribe(self, on_node: Listener, on_pod: Listener, replay: bool = True) -> None:
        """Register a scheduler's handlers; with ``replay`` it first receives every existing object."""
        self._node_listeners.append(on_node)
        self._pod_listeners.append(on_pod)
        if replay:
            for n in self.nodes.values():
                on_node(None, n)
            for p in self.pods.values():
                on_pod(None, p)

    def connect(self, scheduler: Any) -> None:
        """Wire a ``Scheduler`` to this cluster: it receives events, and binds through this adapter."""
        self.subscribe(scheduler.on_node, scheduler.on_pod)
        self.storage.subscribe(scheduler.on_cluster_event)

    def _emit_node(self, old: Obj | None, new: Obj | None) -> None:
        for fn in self._node_listeners:
            fn(old, new)

    def _emit_pod(self, old: Obj | None, new: Obj | None) -> None:
        for fn in self._pod_listeners:
            fn(old, new)

    def _created(self) -> str:
        return f"t={self._clock():.6f}"

    # ------------------------------------------------------------------ nodes
    def add_node(self, raw: Obj) -> Obj:
        name = (raw.get("metadata") or {}).get("name")
        if not name:
            raise ValueError("node needs metadata.name")
        if name in self.nodes:
            raise ValueError(f"node {name} already exists")
        node = default_node(raw, f"node-{next(self._uids)}", self._created())
        self.nodes[name] = node
        self._emit_node(None, node)
        return node

    def update_node(self, raw: Obj) -> Obj:
        name = (raw.get("metadata") or {}).get("name")
        old = self.nodes.get(str(name))
        if old is None:
            raise KeyError(f"node {name} not found")
        meta = {**(raw.get("metadata") or {}), "uid": old["metadata"]["uid"]}
        new = {**raw, "metadata": meta}
        self.nodes[str(name)] = new
        self._emit_node(old, new)
        return new

    def delete_node(self, name: str) -> None:
        old = self.nodes.pop(name, None)
        if old is not None:
            self._emit_node(old, None)

    # ------------------------------------------------------------------ pods
    def create_pod(self, raw: Obj) -> Obj:
        key = _key(raw)
        if key in self.pods:
            raise ValueError(f"pod {key} already exists")
        pod = default_pod(raw, f"pod-{next(self._uids)}", self._created())
        self.pods[_key(pod)] = pod
        self._emit_pod(None, pod)
        return pod

    def update_pod(self, raw: Obj) -> Obj:
        key = _key(raw)
        old = self.pods.get(key)
        if old is None:
            raise KeyError(f"pod {key} not found")
        self.pods[key] = raw
        self._emit_pod(old, raw)
        return raw

    def delete_pod(self, namespace: str, name: str) -> Obj | None:
        old = self.pods.pop(f"{namespace}/{name}", None)
        if old is not None:
            self._emit_pod(old, None)
        return old

    def pods_on(self, node: str) -> list[Obj]:
        return [p for p in self.pods.values() if (p.get("spec") or {}).get("nodeName") == node]

    def pending_pods(self) -> list[Obj]:
        return [p for p in self.pods.values() if not (p.get("spec") or {}).get("nodeName")]

    # ------------------------------------------------------------------ workload objects
    def apply_workload(self, raw: Obj) -> None:
        """Create or replace a Service, ReplicationController, ReplicaSet or StatefulSet. Only their
        selectors are kept: plugins read them through the ``workloads`` handle service."""
        self.workloads.apply(raw)

    def delete_workload(self, kind: str, namespace: str, name: str) -> None:
        self.workloads.delete(kind, namespace, name)

    def apply_namespace(self, raw: Obj) -> None:
        """Create or replace a Namespace (pod affinity's namespaceSelector reads its labels)."""
        self.namespaces.apply(raw)

    def apply_batch(self, raw: Obj) -> None:
        """Create or replace a PodGroup or ElasticQuota (``scheduling.x-k8s.io/v1alpha1``)."""
        self.batch.apply(raw)

    def delete_batch(self, kind: str, namespace: str, name: str) -> None:
        self.batch.delete(kind, namespace, name)

    def scheduler_services(self) -> dict[str, Any]:
        """The handle services this cluster offers a scheduler's plugins."""
        return {
            SERVICE_NAME: self.workloads,
            PDBS.name: self.list_pdbs,
            NAMESPACES.name: NamespaceLabels(self.namespaces),
            VOLUMES_SERVICE: self.storage,
            BATCH_SERVICE: self.batch,
        }

    # ------------------------------------------------------------------ VolumeBindingClient
    def update_persistent_volume(self, raw: Obj) -> Obj | Status:
        return self.storage.update_persistent_volume(raw)

    def update_persistent_volume_claim(self, raw: Obj) -> Obj | Status:
        return self.storage.update_persistent_volume_claim(raw)

    # ------------------------------------------------------------------ SchedulerClient
    def bind(self, pod: Pod, node_name: str) -> Status | None:
        old = self.pods.get(pod.key)
        if old is None:
            return Status(Code.ERROR, f'pods "{pod.name}" not found')
        if (old.get("spec") or {}).get("nodeName"):
            return Status(
                Code.ERROR, f'pod {pod.key} is already assigned to node "{old["spec"]["nodeName"]}"'
            )
        if node_name not in self.nodes:
            return Status(Code.ERROR, f'nodes "{node_name}" not found')
        refused = self.refuse_binding.get(node_name)
        if refused:
            return Status(Code.ERROR, refused)
        new = {**old, "spec": {**old["spec"], "nodeName": node_name}}
        status = dict(new.get("status") or {})
        conditions = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True"})
        status["conditions"] = conditions
        new["status"] = status
        self.pods[pod.key] = new
        self.binds += 1
        self._emit_pod(old, new)
        return None

    def evict(self, pod: Pod, reason: str) -> Status | None:
        stored = self.pods.get(pod.key)
        if stored is None:
            return Status(Code.ERROR, f"pod {pod.key} not found")
        refused = self._use_disruption_budget(parse_pod(stored))
        if refused is not None:
            return refused
        self.delete_pod(pod.namespace, pod.name)
        self.events.append(Event("Normal", "Preempted", reason, pod.namespace, pod.name))
        return None

    def set_nominated_node(self, pod: Pod, node_name: str) -> Status | None:
        old = self.pods.get(pod.key)
        if old is None:
            return Status(Code.ERROR, f"pod {pod.key} not found")
        status = {**(old.get("status") or {}), "nominatedNodeName": node_name}
        if not node_name:
            status.pop("nominatedNodeName")
        self.update_pod({**old, "status": status})
        return None

    def report_scheduled(self, pod: Pod, node_name: str, verdict: str = "") -> None:
        self.events.append(
            Event(
                "Normal",
                "Scheduled",
                scheduled_note(pod.key, node_name, verdict),
                pod.namespace,
                pod.name,
            )
        )

    def report_failure(self, pod: Pod, reason: str, message: str) -> None:
        self.events.append(
            Event("Warning", "FailedScheduling", truncate_event_message(message), pod.namespace, pod.name)
        )
        old = self.pods.get(pod.key)
        if old is None:
            return
        cond = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}
        if cond in ((old.get("status") or {}).get("conditions") or ()):
            return  # the same failure again (a pod retried in vain): nothing to store
        status = dict(old.get("status") or {})
        conditions = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
        conditions.append(cond)
        status["conditions"] = conditions
        # A status-only change: stored without a pod event, as kube-scheduler's own status patch
        # does not requeue the pod it describes.
        self.pods[pod.key] = {**old, "status": status}

    # ------------------------------------------------------------------ PodDisruptionBudgets
    def add_pdb(self, raw: Obj) -> PodDisruptionBudget:
        """Store a budget (replacing one of the same name). Raises ``ObjectError`` when malformed."""
        view = parse_pdb(raw)
        self.pdbs[view.key] = (raw, view)
        return view

    update_pdb = add_pdb

    def delete_pdb(self, namespace: str, name: str) -> None:
        self.pdbs.pop(f"{namespace}/{name}", None)

    def list_pdbs(self) -> list[PodDisruptionBudget]:
        """The current budgets (the scheduler's ``"pdbs"`` service)."""
        return [view for _, view in self.pdbs.values()]

    def _use_disruption_budget(self, pod: Pod) -> Status | None:
        """The Eviction API's budget check: refuse (429) when the pod's budget allows no disruption,
        otherwise use one up and record the pod in ``disruptedPods``. Pods that are not running (not
        bound here, as there is no kubelet), finished or already terminating are not guarded."""
        if not pod.node_name or pod.is_terminal or pod.deleting:
            return None
        matching = [view for _, view in self.pdbs.values() if view.covers(pod)]
        if not matching:
            return None
        if len(matching) > 1:
            return Status(
                Code.ERROR,
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            )
        pdb = matching[0]
        if pdb.disruptions_allowed < 0:
            return Status(
                Code.ERROR,
                f'poddisruptionbudgets.policy "{pdb.name}" is forbidden: pdb disruptions allowed is negative',
            )
        if pdb.disruptions_allowed == 0:
            return Status(
                Code.ERROR,
                "429 TooManyRequests: Cannot evict pod as it would violate the pod's disruption budget. "
                f"The disruption budget {pdb.name} needs {pdb.desired_healthy} healthy pods "
                f"and has {pdb.current_healthy} currently",
            )
        raw = pdb.raw
        status = dict(raw.get("status") or {})
        status["disruptionsAllowed"] = pdb.disruptions_allowed - 1
        status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod.name: self._created()}
        self.add_pdb({**raw, "status": status})
        return None

    # ------------------------------------------------------------------ inspection
    def placement(self) -> dict[str, str]:
        """pod key -> node name for every bound pod."""
        return {
            k: p["spec"]["nodeName"] for k, p in self.pods.items() if (p.get("spec") or {}).get("nodeName")
        }

    def last_failure(self, namespace: str, name: str) -> str | None:
        for e in reversed(self.events):
            if e.reason == "FailedScheduling" and e.namespace == namespace and e.name == name:
                return e.message
        return None
