"""``simulate --record-decisions``: each pod's latest decision, the pending pods and the affinity graph
over time, written beside the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from harmonic.framework.decisions import document
from harmonic.plugins.registry import default_registry
from harmonic.sim.explore import read_records
from harmonic.sim.profiles import profile_runs
from harmonic.sim.run import simulate

from .helpers import deployment, objects, plan_of, scenario

BOUTIQUE = Path(__file__).resolve().parents[2] / "harmonic" / "data" / "topologies" / "online-boutique.json"


def explore_scenario() -> dict[str, Any]:
    return scenario(
        [
            {"type": "topology", "topology": "online-boutique", "userRate": 5},
            objects(deployment("web", 2)),
            # Asks for more CPU than any node has: pending for good.
            objects(deployment("huge", 1, cpu="64")),
        ],
        duration=600,
    )


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    registry = default_registry()
    runs = [r for r in profile_runs((), registry) if r.name in ("default-scheduler", "bin-packing")]
    folder = tmp_path_factory.mktemp("explore")
    outcome = simulate(plan_of(explore_scenario()), runs, registry, folder, record_decisions=1000)
    assert outcome.exploration is not None
    return folder


def _lines(out: Path) -> list[dict[str, Any]]:
    return [document(msgspec.msgpack.decode(p)) for _, p in read_records(out / "decisions.msgpack")]


def test_latest_decision_of_every_pod_per_profile(out: Path):
    docs = _lines(out)
    profiles = {d["profile"] for d in docs}
    assert profiles == {"default-scheduler", "bin-packing"}
    for profile in profiles:
        mine = [d for d in docs if d["profile"] == profile]
        uids = [d["uid"] for d in mine]
        assert len(uids) == len(set(uids)), "one decision per pod"
        pods = {d["pod"].split("/")[1].rsplit("-", 2)[0] for d in mine}
        assert {"web", "huge", "frontend", "cartservice"} <= pods
    huge = [d for d in docs if d["pod"].startswith("default/huge-")]
    assert [d["result"] for d in huge] == ["Unschedulable", "Unschedulable"]
    assert all(len(d["filter"]) == 3 and d["scores"] is None for d in huge)
    assert {r["reasons"][0] for d in huge for r in d["filter"]} == {"Insufficient cpu"}
    web = [d for d in docs if d["pod"].startswith("default/web-")]
    assert all(d["result"] == "Scheduled" and d["choice"]["node"] == d["node"] for d in web)


def test_pending_pods_at_the_end(out: Path):
    pending = json.loads((out / "pending.json").read_text())
    assert set(pending) == {"default-scheduler", "bin-packing"}
    for keys in pending.values():
        assert len(keys) == 1 and keys[0].startswith("default/huge-")


def test_graph_has_the_topology_edges_and_the_placement_over_time(out: Path):
    graph = json.loads((out / "graph.json").read_text())
    topo = json.loads(BOUTIQUE.read_text())
    services = {s["name"] for s in topo["services"]}
    assert {w["id"] for w in graph["workloads"]} == {f"Deployment/online-boutique/{s}" for s in services}
    expected = {
        (f"Deployment/online-boutique/{e['src']}", f"Deployment/online-boutique/{e['dst']}"): e["weight"] * 5
        for e in topo["edges"]
        if e["src"] != e["dst"]
    }
    got = {(e["src"], e["dst"]): e["requestsPerSecond"] for e in graph["edges"]}
    assert got == pytest.approx(expected)
    assert graph["zones"] == {"n-0": "a", "n-1": "b", "n-2": "c"}
    metrics = json.loads((out / "metrics.json").read_text())
    for samples in graph["profiles"].values():
        last = samples[-1]
        assert last["time"] == 600
        replicas = sum(n for on in last["placement"].values() for n in on.values())
        # Every boutique service has one replica (the topology's own counts).
        assert replicas == sum(s["replicas"] for s in topo["services"])
        # One placement per metrics sample: every sampleInterval from 0, and the end.
        step = metrics["scenario"]["sample_interval_seconds"]
        assert [s["time"] for s in samples] == [*range(0, 600, int(step)), 600]


def test_simulate_command_records_decisions(tmp_path: Path):
    from click.testing import CliRunner

    from harmonic.cli import main

    sc = scenario([objects(deployment("web", 3)), objects(deployment("huge", 1, cpu="64"))], duration=60)
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(sc))
    out = tmp_path / "out"
    args = ["simulate", str(path), "--out", str(out), "--record-decisions", "--no-progress"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert f"explore them: harmonic ui --report {out}" in r.output
    docs = _lines(out)
    profiles = len(profile_runs((), default_registry()))  # default and the bundled ones
    assert len(docs) == 4 * profiles
    r = CliRunner().invoke(main, [*args[:-2], "--record-decisions=2", "--no-progress"])
    assert r.exit_code == 0, r.output
    assert len(_lines(out)) == 2 * profiles
    assert not (tmp_path / "plain").exists()
    r = CliRunner().invoke(main, [*args[:3], str(tmp_path / "plain"), "--no-progress"])
    assert r.exit_code == 0 and not (tmp_path / "plain" / "decisions.msgpack").exists()
