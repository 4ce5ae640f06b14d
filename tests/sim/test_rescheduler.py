"""The rescheduler inside the simulator: the ``rescheduler:`` key, PodDisruptionBudget manifests kept
current by the disruption controller, and the ``rescheduler`` metrics."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harmonic.plugins.registry import default_registry
from harmonic.sim.errors import ScenarioError
from harmonic.sim.metrics import summarize
from harmonic.sim.run import prepare, simulate
from tests.sim.helpers import deployment, objects, plan_of, run, scenario

EXAMPLES = Path(__file__).parents[2] / "examples" / "scenarios"
MAKE_ROOM = {
    "apiVersion": "descheduler/v1alpha2",
    "kind": "DeschedulerPolicy",
    "profiles": [
        {
            "name": "p",
            "pluginConfig": [
                {"name": "MakeRoomForPending", "args": {"pendingThreshold": "1m", "maxPlansInFlight": 4}}
            ],
            "plugins": {"balance": {"enabled": ["MakeRoomForPending"]}},
        }
    ],
}


def pdb(name: str, **spec) -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}}, **spec},
    }


def fragmented(tmp_path: Path, budget: dict | None = None) -> dict:
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(MAKE_ROOM))
    fill = [deployment(n, 4, cpu="1") for n in ("a", "b", "c")]
    extra = [budget] if budget else []
    return scenario(
        [objects(*fill, *extra), objects(deployment("big", 2, cpu="2"), at=300)],
        nodes=4,
        duration=1800,
        rescheduler={"policy": "policy.yaml", "interval": 120},
    )


def test_make_room_resolves_pending_pods_inside_budgets(tmp_path):
    world = run(fragmented(tmp_path, pdb("a", maxUnavailable=1)), tmp_path)
    m = summarize(world)
    assert m["pods_pending"] == 0
    r = m["rescheduler"]
    assert r["pending_resolved"] == 2 and r["evictions"] == 2 and r["budget_violations"] == 0
    assert r["moves_per_resolved_pod"] == 1.0 and r["plans_aborted"] == 0


def test_without_budget_room_nothing_is_evicted(tmp_path):
    budgets = [pdb(n, maxUnavailable=0) for n in ("a", "b", "c")]
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(MAKE_ROOM))
    sc = scenario(
        [
            objects(*[deployment(n, 4, cpu="1") for n in ("a", "b", "c")], *budgets),
            objects(deployment("big", 2, cpu="2"), at=300),
        ],
        nodes=4,
        duration=1800,
        rescheduler={"policy": "policy.yaml", "interval": 120},
    )
    m = summarize(run(sc, tmp_path))
    assert m["rescheduler"]["evictions"] == 0 and m["pods_pending"] == 2


def test_disruption_controller_keeps_pdb_status_for_drains(tmp_path):
    sc = scenario(
        [objects(deployment("a", 3, cpu="1"), pdb("a", minAvailable=3))],
        events=[{"type": "nodeDrained", "at": 60, "node": "n-0", "timeout": 120}],
        nodes=3,
        duration=600,
    )
    world = run(sc, tmp_path)
    (_, view) = world.cluster.pdbs["default/a"]
    assert view.disruptions_allowed == 0 and view.current_healthy == 3
    assert world.stats["pods_evicted"] == 0 and world.stats["evictions_given_up"] >= 1


def test_bad_rescheduler_key_and_pdb_name_the_field(tmp_path):
    sc = scenario([], rescheduler={"policy": "missing.yaml"})
    with pytest.raises(ScenarioError, match=r"rescheduler\.policy"):
        plan_of(sc, tmp_path)
    (tmp_path / "bad.yaml").write_text(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles: [{name: p, plugins: {balance: {enabled: [Nope]}}}]\n"
    )
    with pytest.raises(ScenarioError, match=r"rescheduler\.policy.*'Nope' is not registered"):
        plan_of(scenario([], rescheduler={"policy": "bad.yaml"}), tmp_path)
    with pytest.raises(ScenarioError, match="minAvailable and maxUnavailable"):
        plan_of(scenario([objects(pdb("a"))]), tmp_path)


def test_fragmentation_example(tmp_path):
    registry = default_registry()
    plan, runs = prepare(EXAMPLES / "fragmentation.yaml", [], registry)
    out = simulate(plan, runs[:1], registry)
    m = out.metrics["profiles"][runs[0].name]
    assert m["pods_pending"] == 0 and m["rescheduler"]["pending_resolved"] == 4
    assert m["rescheduler"]["budget_violations"] == 0
