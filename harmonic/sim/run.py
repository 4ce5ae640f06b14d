"""What ``harmonic simulate`` does, callable from Python: pick the scenario (the bundled one by default),
add topologies, pick the profiles, run, write the report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harmonic.framework.registry import Registry
from harmonic.sim.engine import Simulation, World
from harmonic.sim.explore import Exploration
from harmonic.sim.plan import Plan, build_plan
from harmonic.sim.profiles import ProfileRun, profile_runs
from harmonic.sim.report import metrics_document, write_report
from harmonic.sim.scenario import Scenario, TopologyWorkload, load_scenario_file

BUNDLED_SCENARIO = Path(__file__).resolve().parent.parent / "data" / "scenarios" / "default.yaml"


@dataclass
class Outcome:
    plan: Plan
    runs: list[ProfileRun]
    worlds: dict[str, World]
    metrics: dict[str, Any]
    exploration: Exploration | None = None


def prepare(
    scenario: str | Path | None,
    configs: Sequence[str | Path],
    registry: Registry,
    topologies: Sequence[str] = (),
    user_rate: float = 10.0,
    seed: int | None = None,
) -> tuple[Plan, list[ProfileRun]]:
    """The plan and the profile runs. ``topologies`` are added to the scenario; with no scenario they
    go onto the bundled cluster alone (the bundled scenario's workloads and events are left out).
    Raises ``ScenarioError`` / ``ConfigError``."""
    path = Path(scenario) if scenario is not None else BUNDLED_SCENARIO
    sc: Scenario = load_scenario_file(path)
    if scenario is None and topologies:
        sc = sc.model_copy(update={"workloads": [], "events": []})
    if seed is not None:
        sc = sc.model_copy(update={"seed": seed})
    extra = [
        TopologyWorkload(
            type="topology", topology=str(Path(t).resolve()) if Path(t).exists() else t, user_rate=user_rate
        )
        for t in topologies
    ]
    plan = build_plan(sc, str(path), path.parent, extra)
    return plan, profile_runs(configs, registry)


def simulate(
    plan: Plan,
    runs: list[ProfileRun],
    registry: Registry,
    out_dir: str | Path | None = None,
    progress: Callable[[str, int], None] | None = None,
    record_decisions: int | None = None,
) -> Outcome:
    """``record_decisions``: keep the latest decision of up to that many pods per profile and write them,
    with the placement timeline, beside the report (``harmonic.sim.explore``)."""
    exploration = Exploration(plan, record_decisions) if record_decisions else None
    worlds = Simulation(plan, runs, registry, exploration.attach if exploration else None).run(progress)
    outcome = Outcome(plan, runs, worlds, metrics_document(plan, worlds), exploration)
    if out_dir is not None:
        write(out_dir, outcome)
    return outcome


def write(out_dir: str | Path, outcome: Outcome) -> None:
    """The report (metrics.json, report.html) and, when decisions were recorded, the exploration files.
    Raises OSError."""
    write_report(out_dir, outcome.plan, outcome.worlds)
    if outcome.exploration is not None:
        outcome.exploration.write(out_dir)
