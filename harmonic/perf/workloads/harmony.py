"""SchedulingBasic with workload identities and an affinity graph, to price Harmonic's plugins.

- ``SchedulingBasicGraph``: upstream's SchedulingBasic as it is (pods without workload labels) under
  the bundled ``harmonic`` profile (the default plugins plus CommunicationAffinity and Dissonance,
  with their weights and args), with a graph of ``workloads``
  workloads and ``edges`` random edges (seeded) loaded: the price of the plugins and the graph when
  pods are not in it; compare with ``SchedulingBasic``.
- ``SchedulingBasicLabelled`` / ``SchedulingBasicHarmony``: the same pods labelled ``app: w<k>`` for
  the graph's workloads (round-robin), so every pod has ~40 peers to weigh; under kube-scheduler's
  default profile and under the harmonic one. The stress case.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import yaml

from harmonic.perf.runner import Workload
from harmonic.perf.templates import named, node_template, pod_template
from harmonic.perf.workloads.basic import nodes_from
from harmonic.signals.graph import AffinityGraph
from harmonic.signals.identity import WorkloadKey
from harmonic.signals.service import GraphService
from harmonic.signals.telemetry import TrafficSample
from harmonic.sim.profiles import BUNDLED_PROFILES_DIR

NAMESPACE = "sched-0"


def _harmony_config() -> dict[str, Any]:
    """The bundled ``harmonic`` profile (plugins, weights and args) as the benchmark's only profile,
    under the name the workload's pods ask for."""
    doc = yaml.safe_load((BUNDLED_PROFILES_DIR / "harmonic.yaml").read_text())
    profile = next(p for p in doc["profiles"] if p["schedulerName"] == "harmonic")
    return {**doc, "profiles": [{**profile, "schedulerName": "default-scheduler"}]}


def _pods(
    n: int, prefix: str, workloads: int, labelled: bool = True
) -> Callable[[], Iterator[dict[str, Any]]]:
    def gen() -> Iterator[dict[str, Any]]:
        t = pod_template()
        for i in range(n):
            p = named(t, f"{prefix}-{i}", NAMESPACE)
            if labelled:
                p["metadata"]["labels"] = {"app": f"w{i % workloads}"}
            yield p

    return gen


def graph_service(workloads: int, edges: int, seed: int = 1) -> GraphService:
    rng = random.Random(seed)
    samples: list[TrafficSample] = []
    seen: set[tuple[int, int]] = set()
    while len(samples) < edges:
        a, b = rng.randrange(workloads), rng.randrange(workloads)
        if a == b or (a, b) in seen:
            continue
        seen.add((a, b))
        samples.append(
            TrafficSample(
                WorkloadKey(NAMESPACE, f"w{a}"), WorkloadKey(NAMESPACE, f"w{b}"), rng.uniform(0.1, 100)
            )
        )
    graph = AffinityGraph()
    graph.observe(samples, now=0.0)
    return GraphService(graph, [])


def _workload(
    name: str,
    nodes: int,
    init_pods: int,
    pods: int,
    harmony: bool,
    workloads: int,
    edges: int,
    labelled: bool = True,
) -> Workload:
    return Workload(
        name=name,
        nodes=nodes_from(nodes, node_template()),
        init_pods=_pods(init_pods, "init-pod", workloads, labelled),
        measured_pods=_pods(pods, "pod", workloads, labelled),
        num_measured=pods,
        config=_harmony_config() if harmony else None,
        params={
            "nodes": nodes,
            "init_pods": init_pods,
            "pods": pods,
            "workloads": workloads,
            "graph_edges": edges,
        },
        services=(lambda: {"affinity_graph": graph_service(workloads, edges)}) if harmony else None,
    )


def labelled(nodes: int, init_pods: int, pods: int) -> Workload:
    return _workload("SchedulingBasicLabelled", nodes, init_pods, pods, False, 1000, 20000)


def harmony(nodes: int, init_pods: int, pods: int) -> Workload:
    return _workload("SchedulingBasicHarmony", nodes, init_pods, pods, True, 1000, 20000)


def with_graph(nodes: int, init_pods: int, pods: int) -> Workload:
    return _workload("SchedulingBasicGraph", nodes, init_pods, pods, True, 1000, 20000, labelled=False)


WORKLOADS = {
    "SchedulingBasicGraph": (with_graph, (5000, 1000, 10000)),
    "SchedulingBasicLabelled": (labelled, (5000, 1000, 10000)),
    "SchedulingBasicHarmony": (harmony, (5000, 1000, 10000)),
}
