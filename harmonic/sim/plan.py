"""From a scenario to a plan: the initial nodes and a timeline of external actions, identical for every
profile. Everything random in the scenario (arrival times, which pods a deletion picks is decided at
run time) is drawn here from the scenario seed, so each profile's cluster copy is fed the same events.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from harmonic.api.errors import ObjectError
from harmonic.api.node import REGION_LABEL, ZONE_LABEL, parse_node
from harmonic.api.selectors import LabelSelector, label_selector
from harmonic.plugins.nodebandwidth import NETWORK_BANDWIDTH
from harmonic.sim import trace as tr
from harmonic.sim.errors import ScenarioError
from harmonic.sim.limits import Budget
from harmonic.sim.objects import (
    PriorityClasses,
    WorkloadObject,
    check_object,
    collect_priority_classes,
    read_documents,
)
from harmonic.sim.scenario import (
    AlibabaTraceWorkload,
    ArrivalsWorkload,
    DeploymentScaled,
    Distribution,
    ManifestsWorkload,
    MeshTelemetry,
    NetworkModel,
    NodeAdded,
    NodeDrained,
    NodeFailed,
    NodePool,
    PodsDeleted,
    Scenario,
    TopologyWorkload,
    ZoneFailed,
    ZoneRestored,
)
from harmonic.sim.topology import TopologyInstance, deployments, instance, load_topology
from harmonic.sim.truth.config import GroundTruth
from harmonic.sim.truth.interference import workload_matches

#: The most network bandwidth a simulated service may declare (1 PB/s): node and pod bandwidth is
#: summed in int64 bytes/s, and this leaves room for thousands of such pods before that overflows.
MAX_DECLARED_BYTES_PER_SECOND = 1e15

Obj = dict[str, Any]
POOL_LABEL = "harmonic.dev/node-pool"


# --------------------------------------------------------------------------- actions
@dataclass(frozen=True)
class CreateObject:
    obj: WorkloadObject


@dataclass(frozen=True)
class DeleteObject:
    key: str


@dataclass(frozen=True)
class AddNodes:
    nodes: tuple[Obj, ...]


@dataclass(frozen=True)
class DrainNode:
    node: str
    timeout: float
    force: bool


@dataclass(frozen=True)
class FailNode:
    node: str


@dataclass(frozen=True)
class FailZone:
    zone: str


@dataclass(frozen=True)
class RestoreZone:
    zone: str


@dataclass(frozen=True)
class Scale:
    key: str
    replicas: int


@dataclass(frozen=True)
class DeletePods:
    namespace: str
    names: tuple[str, ...]
    selector: LabelSelector | None
    count: int | None


Action = (
    CreateObject
    | DeleteObject
    | AddNodes
    | DrainNode
    | FailNode
    | FailZone
    | RestoreZone
    | Scale
    | DeletePods
)


@dataclass(frozen=True)
class Timed:
    time: float
    seq: int
    action: Action
    #: Where it came from in the scenario (``events[3]``, ``workloads[1]``).
    origin: str


@dataclass
class Plan:
    name: str
    source: str
    seed: int
    duration: float | None
    sample_interval: float
    network: NetworkModel
    nodes: list[Obj]
    timeline: list[Timed]
    topologies: list[TopologyInstance]
    #: Service manifests, known to the scheduler from the start.
    services: list[Obj] = field(default_factory=list)
    #: Objects accepted without effect on placement, by kind.
    inert: dict[str, int] = field(default_factory=dict)
    #: Trace rows left out, by reason.
    trace_skipped: dict[str, int] = field(default_factory=dict)
    ground_truth: GroundTruth = field(default_factory=GroundTruth)
    mesh: MeshTelemetry = field(default_factory=MeshTelemetry)
    #: PodDisruptionBudget manifests, present from the start (status kept by a disruption controller).
    pdbs: list[Obj] = field(default_factory=list)
    #: The ``rescheduler:`` key resolved (``harmonic.sim.rescheduler.SimReschedulerSpec``), or None.
    rescheduler: Any = None
    #: The ``feedback:`` key (``harmonic.sim.scenario.FeedbackSpec``), or None.
    feedback: Any = None
    #: The ``usage:`` key (``UsageSpec``), or None: the world has no usage.
    usage: Any = None
    #: Workload -> usage from trace files (``harmonic.sim.usage.alibaba.trace_usage``).
    trace_usage: dict[str, Any] = field(default_factory=dict)

    @property
    def has_zone_outage(self) -> bool:
        return any(isinstance(t.action, FailZone) for t in self.timeline)


# --------------------------------------------------------------------------- nodes
def pool_node(pool: NodePool, index: int) -> Obj:
    labels = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", POOL_LABEL: pool.name}
    if pool.zones:
        labels[ZONE_LABEL] = pool.zones[index % len(pool.zones)]
    if pool.region:
        labels[REGION_LABEL] = pool.region
    labels.update(pool.labels)
    node: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"{pool.name}-{index}", "labels": labels},
        "status": {
            "allocatable": {k: str(v) for k, v in pool.allocatable.items()},
            "capacity": {k: str(v) for k, v in pool.allocatable.items()},
        },
    }
    if pool.taints:
        node["spec"] = {"taints": [t.model_dump(exclude_defaults=False) for t in pool.taints]}
    return node


def _check_node(raw: Any, source: str, path: str) -> Obj:
    if not isinstance(raw, Mapping) or raw.get("kind", "Node") != "Node":
        raise ScenarioError(source, f"{path}.kind" if isinstance(raw, Mapping) else path, "expected a Node")
    try:
        parse_node(raw)
    except ObjectError as e:
        raise ScenarioError(source, f"{path}.{e.field}" if path else e.field, e.message) from None
    return {**raw, "apiVersion": "v1", "kind": "Node"}


class _Builder:
    def __init__(self, sc: Scenario, source: str, base_dir: Path) -> None:
        self.sc = sc
        self.source = source
        self.base = base_dir
        self.timeline: list[Timed] = []
        self.topologies: list[TopologyInstance] = []
        self.inert: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.trace_usage: dict[str, Any] = {}
        self.priorities = PriorityClasses()
        self.services: list[Obj] = []
        self.pdbs: list[Obj] = []
        #: object key -> (created at, deleted at), to refuse clashes and check events' targets.
        self.lifetimes: dict[str, tuple[float, float]] = {}
        self.pool_next: dict[str, int] = {}
        self.pools: dict[str, NodePool] = {}
        self.node_names: dict[str, float] = {}
        #: zone -> when its first node exists.
        self.zones: dict[str, float] = {}
        self.budget = Budget(sc.limits, source)

    def add(self, time: float, action: Action, origin: str) -> None:
        if isinstance(action, CreateObject):
            self.budget.created(action.obj.key, action.obj.kind, action.obj.spec)
        elif isinstance(action, Scale):
            self.budget.scaled(action.key, action.replicas)
        self.timeline.append(Timed(time, len(self.timeline), action, origin))

    def create(self, obj: WorkloadObject, at: float, lifetime: float | None, origin: str) -> None:
        prev = self.lifetimes.get(obj.key)
        end = at + lifetime if lifetime is not None else math.inf
        if prev is not None and prev[0] < end and at < prev[1]:
            raise ScenarioError(
                obj.source, "metadata.name", f"{obj.kind} {obj.namespace}/{obj.name} already exists"
            )
        self.lifetimes[obj.key] = (at, end)
        self.add(at, CreateObject(obj), origin)
        if lifetime is not None:
            self.add(end, DeleteObject(obj.key), origin)

    # ------------------------------------------------------------------ cluster
    def cluster(self) -> list[Obj]:
        nodes: list[Obj] = []
        c = self.sc.cluster
        for i, pool in enumerate(c.node_pools):
            self.budget.add_nodes(pool.count, f"cluster.nodePools[{i}].count")
        self.budget.add_nodes(len(c.nodes), "cluster.nodes")
        for i, pool in enumerate(c.node_pools):
            if pool.name in self.pools:
                raise ScenarioError(
                    self.source, f"cluster.nodePools[{i}].name", f"duplicate pool {pool.name!r}"
                )
            self.pools[pool.name] = pool
            self.pool_next[pool.name] = pool.count
            for j in range(pool.count):
                nodes.append(_check_node(pool_node(pool, j), self.source, f"cluster.nodePools[{i}]"))
        for i, raw in enumerate(c.nodes):
            nodes.append(_check_node(raw, self.source, f"cluster.nodes[{i}]"))
        for i, f in enumerate(c.node_files):
            path = self.base / f
            if not path.exists():
                raise ScenarioError(self.source, f"cluster.nodeFiles[{i}]", f"{f}: no such file")
            docs = list(read_documents(path))
            self.budget.add_nodes(len(docs), f"cluster.nodeFiles[{i}]")
            for label, raw in docs:
                nodes.append(_check_node(raw, label, ""))
        for n in nodes:
            name = n["metadata"]["name"]
            if name in self.node_names:
                raise ScenarioError(self.source, "cluster", f"node {name!r} is defined twice")
            self.node_names[name] = 0.0
            self._zone_seen(n, 0.0)
        return nodes

    def _zone_seen(self, node: Obj, at: float) -> None:
        zone = ((node.get("metadata") or {}).get("labels") or {}).get(ZONE_LABEL)
        if zone and at < self.zones.get(zone, math.inf):
            self.zones[zone] = at

    # ------------------------------------------------------------------ workloads
    def workloads(self, extra: Sequence[TopologyWorkload]) -> None:
        entries = list(self.sc.workloads) + list(extra)
        docs: dict[int, list[tuple[str, Any]]] = {}
        for i, w in enumerate(entries):
            if isinstance(w, ManifestsWorkload):
                docs[i] = self._documents(i, w)
                collect_priority_classes(docs[i], self.priorities)
        for i, w in enumerate(entries):
            origin = f"workloads[{i}]"
            if isinstance(w, ManifestsWorkload):
                dist = w.duration
                placed: set[str] = set()
                for label, raw in docs[i]:
                    if (
                        isinstance(raw, Mapping)
                        and raw.get("kind") == "Service"
                        and raw.get("apiVersion") == "v1"
                    ):
                        self.services.append(_service(raw, label, w.namespace))
                        continue
                    if isinstance(raw, Mapping) and raw.get("kind") == "PodDisruptionBudget":
                        from harmonic.sim.rescheduler import check_pdb

                        self.pdbs.append(check_pdb(raw, label, w.namespace))
                        continue
                    obj = check_object(raw, label, w.namespace, self.priorities, dist, self.inert)
                    if obj is not None:
                        self.create(_placed(obj, w, placed), w.at, w.lifetime, origin)
                unused = sorted(set(w.placement) - placed)
                if unused:
                    raise ScenarioError(
                        self.source,
                        f"{origin}.placement",
                        f"{unused[0]!r} names no Deployment, ReplicaSet, StatefulSet or Job of this entry",
                    )
            elif isinstance(w, TopologyWorkload):
                self._topology(i, w)
            elif isinstance(w, ArrivalsWorkload):
                self._arrivals(i, w)
            else:
                self._alibaba(i, w)

    def _documents(self, i: int, w: ManifestsWorkload) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        for j, f in enumerate(w.files):
            path = self.base / f
            if not path.exists():
                raise ScenarioError(self.source, f"workloads[{i}].files[{j}]", f"{f}: no such file")
            out.extend(read_documents(path))
        out.extend((f"{self.source}: workloads[{i}].objects[{j}]", o) for j, o in enumerate(w.objects))
        if not out:
            raise ScenarioError(self.source, f"workloads[{i}]", "give files and/or objects")
        return out

    def _topology(self, i: int, w: TopologyWorkload) -> None:
        data, file = load_topology(w.topology, self.base, self.source, f"workloads[{i}].topology")
        ns = w.namespace or _namespace_of(str(data.get("name") or "topology"))
        topo = instance(data, ns, w.user_rate, w.routing or self.sc.routing)
        annotations = None
        usage = self.sc.usage
        if usage is not None and usage.bandwidth.declare:
            # Each replica declares its share of the service's traffic at the top of its swing, every
            # call counted as leaving the node (the scheduler cannot know where the peers will land).
            annotations = {}
            for svc in data["services"]:
                name = str(svc["name"])
                peak = 1 + usage.profile_for(topo.workload(name)).amplitude
                total = topo.traffic_bytes_per_second(name, usage.bandwidth.bytes_per_call) * peak
                if not total <= MAX_DECLARED_BYTES_PER_SECOND:
                    raise ScenarioError(
                        self.source,
                        f"workloads[{i}].userRate",
                        f"{w.user_rate:g} user actions/s make {name} declare {total:.3g} bytes/s, more than "
                        f"{MAX_DECLARED_BYTES_PER_SECOND:.0e}; lower userRate, the topology's weights or bytes, "
                        "or usage.bandwidth.bytesPerCall",
                    )
                replicas = max(1, w.replicas or int(svc.get("replicas", 1)))
                annotations[name] = {NETWORK_BANDWIDTH: str(math.ceil(total / replicas))}
        for raw in deployments(data, ns, w.replicas, annotations):
            label = f"{file}: services[{raw['metadata']['name']}]"
            obj = check_object(raw, label, ns, self.priorities, None, self.inert)
            assert obj is not None
            self.create(obj, w.at, None, f"workloads[{i}]")
        self.topologies.append(topo)

    def _arrivals(self, i: int, w: ArrivalsWorkload) -> None:
        where = f"{self.source}: workloads[{i}].template"
        kind = w.template.get("kind") if isinstance(w.template, Mapping) else None
        if kind not in ("Pod", "Job", "Deployment", "ReplicaSet", "StatefulSet"):
            raise ScenarioError(
                where, "kind", f"{kind!r}: arrivals make Pods, Jobs, Deployments, ReplicaSets or StatefulSets"
            )
        dist = w.duration
        raw_meta = w.template.get("metadata") or {}
        if not isinstance(raw_meta, Mapping):
            raise ScenarioError(where, "metadata", "must be an object")
        meta = dict(raw_meta)
        meta["name"] = f"{w.name}-0"
        proto = check_object(
            {**w.template, "metadata": meta}, where, w.namespace, self.priorities, dist, self.inert
        )
        assert proto is not None
        rng = random.Random(f"{self.sc.seed}:arrivals:{w.name}")
        times: list[tuple[float, tr.Arrival | None]] = []
        if w.process == "poisson":
            assert w.rate is not None
            expected = math.inf if w.end is None else w.rate * max(w.end - w.start, 0.0)
            if w.count is not None:
                expected = min(w.count, expected)
            self.budget.expect_pods(expected, f"workloads[{i}]")
            t = w.start
            while w.count is None or len(times) < w.count:
                t += rng.expovariate(w.rate)
                if w.end is not None and t >= w.end:
                    break
                times.append((t, None))
        else:
            assert w.trace is not None
            path = self.base / w.trace
            if not path.exists():
                raise ScenarioError(self.source, f"workloads[{i}].trace", f"{w.trace}: no such file")
            for row in tr.read_arrivals(path):
                t = w.start + row.time
                if (w.end is not None and t >= w.end) or (w.count is not None and len(times) >= w.count):
                    break
                times.append((t, row))
        for k, (t, arrival) in enumerate(times):
            obj = _stamp(proto, f"{w.name}-{k}", arrival)
            self.create(obj, t, w.lifetime, f"workloads[{i}]")

    def _alibaba(self, i: int, w: AlibabaTraceWorkload) -> None:
        """Alibaba cluster-trace-v2018: batch_task rows become Jobs, container_meta rows ReplicaSets
        scaled as containers of the same shape appear."""
        mem100 = tr.memory_quantity(w.memory_at100, self.source, f"workloads[{i}].memoryAt100")
        tasks, containers = self._read_alibaba(i, w, mem100)
        times = [t.start for t in tasks] + [c.time for c in containers]
        if not times:
            return
        t0 = w.trace_start if w.trace_start is not None else min(times)
        t_end = w.trace_end if w.trace_end is not None else math.inf
        origin = f"workloads[{i}]"
        jobs = self._alibaba_tasks(w, tasks, t0, t_end, origin)
        replica_sets = self._alibaba_containers(w, containers, t0, t_end, origin)
        if w.container_usage is not None or w.batch_instance is not None:
            from harmonic.sim.usage.alibaba import trace_usage

            self.trace_usage.update(
                trace_usage(w, self.base, self.source, origin, t0, replica_sets, jobs, mem100, self.skipped)
            )

    def _read_alibaba(
        self, i: int, w: AlibabaTraceWorkload, mem100: Fraction
    ) -> tuple[list[tr.BatchTask], list[tr.Container]]:
        tasks: list[tr.BatchTask] = []
        containers: list[tr.Container] = []
        for attr, reader in (("batch_task", tr.read_batch_tasks), ("container_meta", tr.read_containers)):
            f = getattr(w, attr)
            if f is None:
                continue
            path = self.base / f
            if not path.exists():
                raise ScenarioError(self.source, f"workloads[{i}].{_camel(attr)}", f"{f}: no such file")
            rows = reader(path, mem100, self.skipped)
            if attr == "batch_task":
                tasks = rows  # type: ignore[assignment]
            else:
                containers = rows  # type: ignore[assignment]
        return tasks, containers

    def _alibaba_tasks(
        self, w: AlibabaTraceWorkload, tasks: list[tr.BatchTask], t0: float, t_end: float, origin: str
    ) -> dict[tuple[str, str], tuple[str, int, int]]:
        """Each batch task in the window: a Job of ``instances`` pods running for the task's duration.
        Returns (job, task) -> (Job name, CPU milli, memory bytes), for the trace's usage files."""
        jobs: dict[tuple[str, str], tuple[str, int, int]] = {}
        for task in tasks:
            if task.start < t0 or task.start >= t_end:
                self.skipped["batch_task: outside traceStart..traceEnd"] += 1
                continue
            name = tr.dns_name(f"{task.job}-{task.task}")
            raw = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "namespace": w.namespace},
                "spec": {
                    "parallelism": task.instances,
                    "completions": task.instances,
                    "template": {
                        "metadata": {"labels": {"alibaba.trace/job": tr.dns_name(task.job)}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "task",
                                    "image": "batch",
                                    "resources": {"requests": tr.requests(task.cpu_milli, task.memory_bytes)},
                                }
                            ],
                        },
                    },
                },
            }
            dist = Distribution(distribution="fixed", value=task.end - task.start)
            obj = check_object(
                raw,
                f"{w.batch_task}: task {task.job}/{task.task}",
                w.namespace,
                self.priorities,
                dist,
                self.inert,
            )
            assert obj is not None
            self.create(obj, task.start - t0, None, origin)
            jobs[(task.job, task.task)] = (name, task.cpu_milli, task.memory_bytes)
        return jobs

    def _alibaba_containers(
        self, w: AlibabaTraceWorkload, containers: list[tr.Container], t0: float, t_end: float, origin: str
    ) -> dict[str, list[str]]:
        """Online containers in the window: one ReplicaSet per (app_du, shape), scaled up by each further
        container of that shape. Returns app_du -> its ReplicaSets' names, for the trace's usage files."""
        replica_sets: dict[str, list[str]] = {}
        groups: dict[tuple[str, int, int], int] = {}
        names: dict[tuple[str, int, int], str] = {}
        per_app: Counter[str] = Counter()
        for c in containers:
            if c.time < t0 or c.time >= t_end:
                self.skipped["container_meta: outside traceStart..traceEnd"] += 1
                continue
            shape = (c.app_du, c.cpu_milli, c.memory_bytes)
            t = c.time - t0
            if shape not in groups:
                per_app[c.app_du] += 1
                base = tr.dns_name(c.app_du)
                name = base if per_app[c.app_du] == 1 else f"{base}-{per_app[c.app_du]}"
                names[shape] = name
                replica_sets.setdefault(c.app_du, []).append(name)
                groups[shape] = 1
                labels = {"app": base}
                raw = {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {"name": name, "namespace": w.namespace},
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": {"app": base, "alibaba.trace/shape": name}},
                        "template": {
                            "metadata": {"labels": {**labels, "alibaba.trace/shape": name}},
                            "spec": {
                                "containers": [
                                    {
                                        "name": "app",
                                        "image": "online",
                                        "resources": {"requests": tr.requests(c.cpu_milli, c.memory_bytes)},
                                    }
                                ]
                            },
                        },
                    },
                }
                obj = check_object(
                    raw,
                    f"{w.container_meta}: app_du {c.app_du}",
                    w.namespace,
                    self.priorities,
                    None,
                    self.inert,
                )
                assert obj is not None
                self.create(obj, t, None, origin)
            else:
                groups[shape] += 1
                self.add(t, Scale(f"ReplicaSet/{w.namespace}/{names[shape]}", groups[shape]), origin)
        return replica_sets

    # ------------------------------------------------------------------ events
    def events(self) -> None:
        order = sorted(range(len(self.sc.events)), key=lambda k: (self.sc.events[k].at, k))
        for k in order:
            ev = self.sc.events[k]
            where = f"events[{k}]"
            if isinstance(ev, NodeAdded):
                self.add(ev.at, AddNodes(tuple(self._new_nodes(ev, where))), where)
            elif isinstance(ev, NodeDrained | NodeFailed):
                if self.node_names.get(ev.node, math.inf) > ev.at:
                    raise ScenarioError(
                        self.source, f"{where}.node", f"no node {ev.node!r} exists at {ev.at:g}s"
                    )
                if isinstance(ev, NodeDrained):
                    self.add(ev.at, DrainNode(ev.node, ev.timeout, ev.force), where)
                else:
                    self.add(ev.at, FailNode(ev.node), where)
            elif isinstance(ev, DeploymentScaled):
                key = f"{ev.kind}/{ev.namespace}/{ev.name}"
                life = self.lifetimes.get(key)
                if life is None or not life[0] <= ev.at < life[1]:
                    raise ScenarioError(
                        self.source,
                        f"{where}.name",
                        f"no {ev.kind} {ev.namespace}/{ev.name} exists at {ev.at:g}s",
                    )
                self.add(ev.at, Scale(key, ev.replicas), where)
            elif isinstance(ev, PodsDeleted):
                sel = None
                if ev.selector is not None:
                    try:
                        sel = label_selector("podsDeleted", "selector", ev.selector)
                    except ObjectError as e:
                        raise ScenarioError(self.source, f"{where}.{e.field}", e.message) from None
                self.add(ev.at, DeletePods(ev.namespace, tuple(ev.names), sel, ev.count), where)
            elif isinstance(ev, ZoneFailed | ZoneRestored):
                if self.zones.get(ev.zone, math.inf) > ev.at:
                    known = ", ".join(sorted(self.zones)) or "none"
                    raise ScenarioError(
                        self.source,
                        f"{where}.zone",
                        f"no node in zone {ev.zone!r} at {ev.at:g}s (zones: {known})",
                    )
                self.add(
                    ev.at, FailZone(ev.zone) if isinstance(ev, ZoneFailed) else RestoreZone(ev.zone), where
                )

    def check_ground_truth(self) -> None:
        """Every ``groundTruth.workloads`` entry must name a workload of the scenario."""
        keys = [t.action.obj.key for t in self.timeline if isinstance(t.action, CreateObject)]
        for i, entry in enumerate(self.sc.ground_truth.workloads):
            if not any(workload_matches(entry.workload, k) for k in keys):
                raise ScenarioError(
                    self.source,
                    f"groundTruth.workloads[{i}].workload",
                    f"{entry.workload!r} matches no workload of the scenario",
                )

    def _new_nodes(self, ev: NodeAdded, where: str) -> list[Obj]:
        out: list[Obj] = []
        self.budget.add_nodes((ev.count if ev.pool is not None else 0) + len(ev.nodes), f"{where}.count")
        if ev.pool is not None:
            pool = self.pools.get(ev.pool)
            if pool is None:
                raise ScenarioError(
                    self.source, f"{where}.pool", f"no node pool {ev.pool!r} in cluster.nodePools"
                )
            for _ in range(ev.count):
                out.append(pool_node(pool, self.pool_next[ev.pool]))
                self.pool_next[ev.pool] += 1
        for j, raw in enumerate(ev.nodes):
            out.append(_check_node(raw, self.source, f"{where}.nodes[{j}]"))
        for n in out:
            name = n["metadata"]["name"]
            if name in self.node_names:
                raise ScenarioError(self.source, where, f"node {name!r} already exists")
            self.node_names[name] = ev.at
            self._zone_seen(n, ev.at)
        return out


#: Kinds whose pods a scenario's ``placement`` may bind (a DaemonSet's are pinned to nodes already).
PLACEABLE_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "Job")


def _placed(obj: WorkloadObject, w: ManifestsWorkload, seen: set[str]) -> WorkloadObject:
    """``obj`` with the nodes ``w.placement`` gives its first pods (recorded in ``seen``)."""
    nodes = w.placement.get(obj.key)
    if nodes is None or obj.kind not in PLACEABLE_KINDS:
        return obj
    seen.add(obj.key)
    return dataclasses.replace(obj, placement=tuple(nodes))


def _service(raw: Mapping[str, Any], source: str, namespace: str) -> Obj:
    meta = raw.get("metadata") or {}
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        raise ScenarioError(source, "metadata.name", "is required")
    spec = raw.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise ScenarioError(source, "spec", "must be an object")
    selector = spec.get("selector")
    if selector is not None and not isinstance(selector, Mapping):
        raise ScenarioError(source, "spec.selector", "must be a map of labels")
    return {**raw, "metadata": {**meta, "namespace": meta.get("namespace") or namespace}}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _namespace_of(name: str) -> str:
    return tr.dns_name(name)[:63]


def _stamp(proto: WorkloadObject, name: str, arrival: tr.Arrival | None) -> WorkloadObject:
    """A copy of the arrivals template object under a new name (and trace overrides)."""
    manifest: Obj = {**proto.manifest, "metadata": {**proto.manifest["metadata"], "name": name}}
    duration = proto.duration
    if arrival is not None:
        if arrival.duration is not None:
            duration = Distribution(distribution="fixed", value=arrival.duration)
        if arrival.cpu is not None or arrival.memory is not None:
            manifest = _with_requests(manifest, proto.kind, arrival.cpu, arrival.memory)
    return dataclasses.replace(proto, name=name, manifest=manifest, duration=duration)


def _with_requests(manifest: Obj, kind: str, cpu: str | None, memory: str | None) -> Obj:
    def patch_spec(spec: Mapping[str, Any]) -> Obj:
        containers = list(spec.get("containers") or ())
        c0 = dict(containers[0])
        res = dict(c0.get("resources") or {})
        req = dict(res.get("requests") or {})
        if cpu is not None:
            req["cpu"] = cpu
        if memory is not None:
            req["memory"] = memory
        res["requests"] = req
        c0["resources"] = res
        containers[0] = c0
        return {**spec, "containers": containers}

    if kind == "Pod":
        return {**manifest, "spec": patch_spec(manifest["spec"])}
    spec = manifest["spec"]
    template = spec["template"]
    return {**manifest, "spec": {**spec, "template": {**template, "spec": patch_spec(template["spec"])}}}


def build_plan(
    sc: Scenario, source: str, base_dir: Path, extra_topologies: Sequence[TopologyWorkload] = ()
) -> Plan:
    b = _Builder(sc, source, base_dir)
    nodes = b.cluster()
    b.workloads(extra_topologies)
    b.events()
    b.check_ground_truth()
    b.budget.check_pods("workloads")
    timeline = sorted(b.timeline, key=lambda t: (t.time, t.seq))
    if sc.duration is None and timeline:
        b.budget.check_samples(timeline[-1].time, sc.sample_interval, "sampleInterval")
    return Plan(
        name=sc.name,
        source=source,
        seed=sc.seed,
        duration=sc.duration,
        sample_interval=sc.sample_interval,
        network=sc.network,
        nodes=nodes,
        timeline=timeline,
        topologies=b.topologies,
        services=b.services,
        inert=dict(sorted(b.inert.items())),
        trace_skipped=dict(sorted(b.skipped.items())),
        ground_truth=sc.ground_truth,
        mesh=sc.mesh,
        pdbs=b.pdbs,
        rescheduler=_rescheduler(sc, source, base_dir),
        feedback=sc.feedback,
        usage=sc.usage,
        trace_usage=b.trace_usage,
    )


def _rescheduler(sc: Scenario, source: str, base_dir: Path) -> Any:
    if sc.rescheduler is None:
        return None
    from harmonic.sim.rescheduler import resolve_spec

    return resolve_spec(sc.rescheduler, source, base_dir)
