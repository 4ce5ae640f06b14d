"""Every bind a simulation makes, in order: the record that proves a change left decisions alone.

``record_placements`` runs a scenario document under each bundled profile and returns, per profile, the
list of ``[virtual seconds, pod key, node]`` in the order the binds happened. Two runs that agree on it
placed the same pods on the same nodes at the same instants in the same order.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harmonic.framework.registry import Registry
from harmonic.sim.engine import Simulation, World
from harmonic.sim.plan import build_plan
from harmonic.sim.profiles import profile_runs
from harmonic.sim.scenario import parse_scenario

Placement = tuple[float, str, str]


def watch_binds(world: World, out: list[Placement]) -> None:
    """Append ``(time, pod key, node)`` to ``out`` whenever a pod of ``world`` gets a node."""

    def on_pod(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        if new is None:
            return
        node = (new.get("spec") or {}).get("nodeName")
        if node and not (old is not None and (old.get("spec") or {}).get("nodeName")):
            meta = new.get("metadata") or {}
            out.append((world.clock.now(), f"{meta.get('namespace') or 'default'}/{meta.get('name')}", node))

    world.cluster.subscribe(lambda old, new: None, on_pod, replay=False)


def record_placements(
    doc: Mapping[str, Any],
    registry: Registry,
    base: Path = Path("."),
    replayed: dict[str, int] | None = None,
) -> dict[str, list[list[Any]]]:
    """Run ``doc`` (a Scenario document) under the bundled profiles; profile -> binds in order.
    ``replayed`` receives, per profile, how many failed attempts were replayed rather than re-run."""
    sc = parse_scenario(dict(doc), "<placements>")
    plan = build_plan(sc, "<placements>", base)
    binds: dict[str, list[Placement]] = {}

    def attach(world: World) -> None:
        watch_binds(world, binds.setdefault(world.profile, []))

    worlds = Simulation(plan, profile_runs([], registry), registry, attach).run()
    if replayed is not None:
        for name, w in worlds.items():
            repeats = w.scheduler.repeats
            replayed[name] = repeats.replayed if repeats is not None else 0
    return {p: [[round(t, 6), k, n] for t, k, n in v] for p, v in binds.items()}
