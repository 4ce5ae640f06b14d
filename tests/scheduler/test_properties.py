"""Invariants of the scheduler over random clusters and pods (DESIGN.md §6), checked by code that
shares nothing with the plugins: requests, labels, taints and ports are the generator's own integers
and strings, not parsed manifests.

Each invariant holds for the plugins that are registered: a constraint is checked only when the
plugin that enforces it is in the registry (NodeAffinity, NodePorts, ... may come from elsewhere),
so the properties cover more as plugins land.

1. No node is committed beyond its allocatable for any resource, counting assumed pods, at any time.
2. Every pod the scheduler bound satisfies its node selector and required node affinity, tolerates
   the node's NoSchedule/NoExecute taints, does not share a host port, does not land on an
   unschedulable node; pods created with ``nodeName`` stay where they were put.
3. No pod is lost: each is bound, or pending with a FailedScheduling event and condition and held by
   the queue, or deleted or preempted (and then gone from the queue and the cache).
4. Same inputs and seed, same decisions and events.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmonic.plugins.registry import default_registry
from harmonic.testing import node, pod
from harmonic.testing.harness import DeferredBinder, Harness

GPU = "example.com/gpu"
LABEL_KEYS = ("zone", "disk")
LABEL_VALUES = ("a", "b", "c")
TAINTS = (("dedicated", "gpu", "NoSchedule"), ("maint", "", "NoExecute"), ("soft", "x", "PreferNoSchedule"))
UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")
NODE_NAMES = tuple(f"n{i}" for i in range(8))


@dataclass(frozen=True)
class NodeSpec:
    name: str
    cpu: int  # millicores
    mem: int  # MiB
    pods: int
    gpu: int
    labels: tuple[tuple[str, str], ...]
    taints: tuple[tuple[str, str, str], ...]
    unschedulable: bool

    def manifest(self) -> dict[str, Any]:
        b = node(self.name).only(
            cpu=f"{self.cpu}m", memory=f"{self.mem}Mi", pods=self.pods, **{GPU: self.gpu}
        )
        for k, v in self.labels:
            b.label(k, v)
        for key, value, effect in self.taints:
            b.taint(key, value, effect)
        if self.unschedulable:
            b.unschedulable()
        return b.obj()

    def allocatable(self) -> dict[str, int]:
        return {"cpu": self.cpu, "mem": self.mem, "gpu": self.gpu, "pods": self.pods}


Term = tuple[tuple[str, str, tuple[str, ...]], ...]
Toleration = tuple[str, str, str, str]  # key, operator, value, effect


@dataclass(frozen=True)
class PodSpec:
    name: str
    cpu: int
    mem: int
    gpu: int
    selector: tuple[tuple[str, str], ...]
    terms: tuple[Term, ...]
    tolerations: tuple[Toleration, ...]
    ports: tuple[int, ...]
    node_name: str
    priority: int

    def manifest(self) -> dict[str, Any]:
        req: dict[str, Any] = {}
        if self.cpu:
            req["cpu"] = f"{self.cpu}m"
        if self.mem:
            req["memory"] = f"{self.mem}Mi"
        if self.gpu:
            req[GPU] = self.gpu
        b = pod(self.name).req(**req).priority(self.priority)
        if self.selector:
            b.node_selector(dict(self.selector))
        for term in self.terms:
            b.required_term(*((k, op, list(vs)) for k, op, vs in term))
        for key, op, value, effect in self.tolerations:
            b.tolerate(key, value, effect, operator=op)
        for port in self.ports:
            b.host_port(port)
        if self.node_name:
            b.node(self.node_name)
        return b.obj()

    def requests(self) -> dict[str, int]:
        return {"cpu": self.cpu, "mem": self.mem, "gpu": self.gpu, "pods": 1}


label = st.tuples(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES))


@st.composite
def node_specs(draw: st.DrawFn) -> list[NodeSpec]:
    names = draw(st.lists(st.sampled_from(NODE_NAMES), min_size=1, max_size=6, unique=True))
    return [
        NodeSpec(
            name=n,
            cpu=draw(st.sampled_from([500, 1000, 2000, 4000])),
            mem=draw(st.sampled_from([512, 1024, 4096])),
            pods=draw(st.integers(1, 6)),
            gpu=draw(st.integers(0, 2)),
            labels=tuple(sorted(dict(draw(st.lists(label, max_size=2))).items())),
            taints=tuple(draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique=True))),
            unschedulable=draw(st.integers(0, 3)) == 0,
        )
        for n in names
    ]


expression = st.one_of(
    st.tuples(
        st.sampled_from(LABEL_KEYS),
        st.sampled_from(["In", "NotIn"]),
        st.lists(st.sampled_from(LABEL_VALUES), min_size=1, max_size=2, unique=True).map(tuple),
    ),
    st.tuples(st.sampled_from(LABEL_KEYS), st.sampled_from(["Exists", "DoesNotExist"]), st.just(())),
)
toleration = st.one_of(
    st.sampled_from(TAINTS).map(lambda t: (t[0], "Equal" if t[1] else "Exists", t[1], t[2])),
    st.sampled_from(TAINTS).map(lambda t: (t[0], "Exists", "", "")),
    st.just(("", "Exists", "", "")),
    st.just((UNSCHEDULABLE_TAINT[0], "Exists", "", "NoSchedule")),
)


@st.composite
def pod_specs(draw: st.DrawFn) -> list[PodSpec]:
    count = draw(st.integers(0, 18))
    out = []
    for i in range(count):
        out.append(
            PodSpec(
                name=f"p{i}",
                cpu=draw(st.sampled_from([0, 100, 300, 500, 1000, 1500])),
                mem=draw(st.sampled_from([0, 128, 512, 1024])),
                gpu=draw(st.sampled_from([0, 0, 0, 1])),
                selector=tuple(sorted(dict(draw(st.lists(label, max_size=1))).items())),
                terms=tuple(
                    draw(st.lists(st.lists(expression, min_size=1, max_size=2).map(tuple), max_size=2))
                ),
                tolerations=tuple(draw(st.lists(toleration, max_size=2))),
                ports=tuple(draw(st.lists(st.sampled_from([8080, 9090]), max_size=1))),
                node_name=draw(st.sampled_from(["", "", "", "", "", "", "n0", "n5", "gone"])),
                priority=draw(st.sampled_from([0, 0, 10])),
            )
        )
    return out


# ---------------------------------------------------------------------- independent checks
def matches_term(labels: dict[str, str], term: Term) -> bool:
    for key, op, values in term:
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def tolerates(tolerations: tuple[Toleration, ...], taint: tuple[str, str, str]) -> bool:
    key, value, effect = taint
    for t_key, op, t_value, t_effect in tolerations:
        if t_effect and t_effect != effect:
            continue
        if t_key and t_key != key:
            continue
        if not t_key and op != "Exists":
            continue
        if op == "Exists" or t_value == value:
            return True
    return False


@dataclass
class Outcome:
    placement: dict[str, str]
    events: list[tuple[str, str, str]]


def run(
    nodes: list[NodeSpec],
    pods: list[PodSpec],
    seed: int,
    bind_every: int,
    deletions: list[tuple[int, int]],
    config: dict[str, Any] | None = None,
    services: dict[str, Any] | None = None,
    manifest: Callable[[int, PodSpec], dict[str, Any]] = lambda _i, p: p.manifest(),
) -> Outcome:
    """Create the pre-bound pods and the nodes, then the pending pods; schedule, holding bindings back
    so pods stay assumed for ``bind_every`` cycles, deleting ``(step, pod index)`` along the way; check
    the capacity invariant after every placement. ``config``, ``services`` and ``manifest`` (pod
    index, spec -> manifest) let other profiles run through the same checks."""
    registry = default_registry()
    binder = DeferredBinder()
    h = Harness(config=config, seed=seed, binder=binder, registry=registry, services=services)
    by_name = {p.name: p for p in pods}
    node_by_name = {n.name: n for n in nodes}
    check_capacity = "NodeResourcesFit" in registry

    def committed() -> dict[str, list[str]]:
        on: dict[str, list[str]] = defaultdict(list)
        for key, n in h.cluster.placement().items():
            on[n].append(key.split("/", 1)[1])
        for p, n in h.scheduler.cache.assumed_pods():
            on[n].append(p.name)
        return on

    def capacity_holds() -> None:
        if not check_capacity:
            return
        for node_name, names in committed().items():
            spec = node_by_name.get(node_name)
            if spec is None:
                continue
            placed = [by_name[n] for n in names if not by_name[n].node_name]
            if not placed:
                continue
            alloc = spec.allocatable()
            for r in alloc:
                if any(p.requests()[r] > 0 for p in placed):
                    total = sum(by_name[n].requests()[r] for n in names)
                    assert total <= alloc[r], (node_name, r, total, alloc[r], sorted(names))

    h.scheduler.results = lambda r: capacity_holds() if r.node is not None else None
    h.add_pods(manifest(i, p) for i, p in enumerate(pods) if p.node_name)
    h.add_nodes(n.manifest() for n in nodes)
    h.add_pods(manifest(i, p) for i, p in enumerate(pods) if not p.node_name)

    deleted: set[str] = set()
    step = 0
    pending_deletions = sorted(deletions)
    while True:
        while pending_deletions and pending_deletions[0][0] <= step:
            _, i = pending_deletions.pop(0)
            if i < len(pods) and pods[i].name not in deleted:
                deleted.add(pods[i].name)
                h.cluster.delete_pod("default", pods[i].name)
        result = h.scheduler.schedule_one()
        step += 1
        if step % bind_every == 0 or result is None:
            binder.run()
        if result is None and not binder.pending and not h.scheduler.drain():
            if not pending_deletions:
                break
            step = pending_deletions[0][0]
    check_final(h, nodes, pods, deleted)
    return Outcome(h.cluster.placement(), [(e.name, e.reason, e.message) for e in h.cluster.events])


def check_final(h: Harness, nodes: list[NodeSpec], pods: list[PodSpec], deleted: set[str]) -> None:
    registry = h.registry
    placement = h.cluster.placement()
    node_by_name = {n.name: n for n in nodes}
    scheduled_events = {e.name for e in h.cluster.events if e.reason == "Scheduled"}
    gone = deleted | {e.name for e in h.cluster.events if e.reason == "Preempted"}
    on_node: dict[str, list[PodSpec]] = defaultdict(list)
    for key, n in placement.items():
        on_node[n].append(next(p for p in pods if p.name == key.split("/", 1)[1]))

    for p in pods:
        key = f"default/{p.name}"
        if p.name in gone:
            assert key not in h.cluster.pods
            assert not h.scheduler.queue.has(f"uid-{p.name}")
            assert h.scheduler.cache.pod(f"uid-{p.name}") is None
            continue
        if p.node_name:
            # Created bound: the scheduler leaves it where it was put.
            assert placement.get(key) == p.node_name
            assert p.name not in scheduled_events
            continue
        if key in placement:
            assert p.name in scheduled_events
            spec = node_by_name[placement[key]]
            labels = dict(spec.labels) | {"kubernetes.io/hostname": spec.name}
            if "NodeAffinity" in registry:
                assert all(labels.get(k) == v for k, v in p.selector), (p, spec)
                assert not p.terms or any(matches_term(labels, t) for t in p.terms), (p, spec)
            if "TaintToleration" in registry:
                for taint in spec.taints:
                    if taint[2] in ("NoSchedule", "NoExecute"):
                        assert tolerates(p.tolerations, taint), (p, spec)
            if "NodeUnschedulable" in registry and spec.unschedulable:
                assert tolerates(p.tolerations, UNSCHEDULABLE_TAINT), (p, spec)
            if "NodePorts" in registry:
                for other in on_node[spec.name]:
                    if other.name != p.name:
                        assert not set(p.ports) & set(other.ports), (p, other)
            continue
        # Pending: it says why, and the queue still has it.
        assert h.failure(p.name) is not None, p
        cond = h.condition(p.name)
        assert cond is not None and cond["status"] == "False" and cond["reason"] == "Unschedulable", cond
        assert h.scheduler.queue.has(f"uid-{p.name}"), p
    assert h.scheduler.waiting_pods == {}
    assert h.scheduler.cache.assumed_pods() == []


SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@SETTINGS
@given(
    nodes=node_specs(),
    pods=pod_specs(),
    seed=st.integers(0, 3),
    bind_every=st.integers(1, 4),
    deletions=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 17)), max_size=3),
)
def test_invariants_hold_on_random_clusters(nodes, pods, seed, bind_every, deletions):
    run(nodes, pods, seed, bind_every, deletions)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=node_specs(), pods=pod_specs(), seed=st.integers(0, 1000), bind_every=st.integers(1, 3))
def test_same_inputs_and_seed_same_decisions(nodes, pods, seed, bind_every):
    first = run(nodes, pods, seed, bind_every, [])
    second = run(nodes, pods, seed, bind_every, [])
    assert first == second
